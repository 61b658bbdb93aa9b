package client_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
)

// gatedLocks holds the first lock request that reaches the store until the
// test opens the gate, then commits it whatever became of the request.
type gatedLocks struct {
	core.DbExternalApi
	armed  atomic.Bool
	inside chan struct{}
	gate   chan struct{}
}

func (g *gatedLocks) LockPendingByFFQNs(ctx context.Context, req core.LockRequest, ffqns []core.FunctionFqn) ([]core.LockedExecution, error) {
	if g.armed.CompareAndSwap(false, true) {
		close(g.inside)
		<-g.gate
		ctx = context.Background()
	}
	return g.DbExternalApi.LockPendingByFFQNs(ctx, req, ffqns)
}

// TestLockPendingReturnsTheLocksOfARequestItsContextOutlived: core.WorkerConn
// wants a lock the store granted returned even when the caller's context
// ended meanwhile (a worker stopping): the client lets the request finish
// instead of cancelling it, which would lose its answer and leave the
// execution locked until its lease ends. Without a wait (one lock) and
// with one (the long poll).
func TestLockPendingReturnsTheLocksOfARequestItsContextOutlived(t *testing.T) {
	for _, wait := range []time.Duration{0, time.Second} {
		svc := newService(t)
		db := &gatedLocks{DbExternalApi: svc, inside: make(chan struct{}), gate: make(chan struct{})}
		c := newClient(t, serve(t, db))
		now := core.TS(time.Now())
		id := newID(t)
		if _, err := svc.Create(context.Background(), createReq(now, id, ffqnActivity, core.ComponentTypeActivity, nil)); err != nil {
			t.Fatal(err)
		}
		exr, _ := core.NewExecutorId(uint64(now.UnixMilli()), nil)
		run, _ := core.NewRunId(uint64(now.UnixMilli()), nil)
		req := core.LockRequest{BatchSize: 1, PendingAtOrSooner: now, CreatedAt: now,
			ComponentID: core.ComponentId{ComponentType: core.ComponentTypeActivity, Name: "c", ComponentDigest: testDigest},
			ExecutorID:  exr, RunID: run, LockExpiresAt: now.Add(time.Minute), RetryConfig: core.RetryConfigZero()}
		ctx, cancel := context.WithCancel(context.Background())
		got := make(chan []core.LockedExecution, 1)
		go func() {
			locked, err := c.LockPending(ctx, req, []core.FunctionFqn{ffqnActivity}, wait)
			if err != nil {
				t.Errorf("wait %s: %v", wait, err)
			}
			got <- locked
		}()
		<-db.inside
		cancel() // the worker stops while the lock is in the store
		close(db.gate)
		if locked := <-got; len(locked) != 1 || locked[0].ExecutionID != id {
			t.Fatalf("wait %s: got %+v, want the lock of %s the store granted", wait, locked, id)
		}
	}
}
