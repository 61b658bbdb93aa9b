package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/store/mem"
	"github.com/stela-dev/stela/store/storetest"
)

// lockPendingSetup is a store on a simulated clock and a lock request for
// one function, stamped at the clock's start with a 10 s lease.
func lockPendingSetup(t *testing.T) (*store.Service, *storetest.SimClock, core.LockRequest, core.FunctionFqn) {
	t.Helper()
	clock := storetest.NewSimClock(core.UnixEpoch.Add(time.Hour))
	svc := store.New(mem.New(), store.Options{Clock: clock, PollInterval: 10 * time.Millisecond})
	t.Cleanup(func() { _ = svc.Close() })
	ffqn := mustParse(t, core.ParseFunctionFqn, "ns:pkg/ifc.fn")
	now := clock.Now()
	req := core.LockRequest{BatchSize: 1, PendingAtOrSooner: now, CreatedAt: now,
		ComponentID:   core.ComponentId{ComponentType: core.ComponentTypeActivity},
		ExecutorID:    mustParse(t, core.ParseExecutorId, "Exr_01KBNJ2T3D8W7H3X6Q4M9R5V1A"),
		RunID:         mustParse(t, core.ParseRunId, "Run_01KBNJ2V0P6C4Y8N2B7K3T5W9E"),
		LockExpiresAt: now.Add(10 * time.Second), RetryConfig: core.RetryConfigZero()}
	return svc, clock, req, ffqn
}

// TestLockPendingLocksWhatBecomesPendingDuringTheWait: the in-process long
// poll of core.WorkerConn wakes when an execution is created and locks it
// stamped at the store's time then, with the lease the request asked for.
func TestLockPendingLocksWhatBecomesPendingDuringTheWait(t *testing.T) {
	svc, clock, req, ffqn := lockPendingSetup(t)
	ctx := context.Background()
	got := make(chan []core.LockedExecution, 1)
	go func() {
		locked, err := svc.LockPending(ctx, req, []core.FunctionFqn{ffqn}, time.Minute)
		if err != nil {
			t.Error(err)
		}
		got <- locked
	}()
	later := clock.Advance(3 * time.Second)
	id := mustParse(t, core.ParseExecutionId, "E_01KBNHM5FQW81KP5Y3XMNX31K4")
	if _, err := svc.Create(ctx, core.CreateRequest{CreatedAt: later, ExecutionID: id, FFQN: ffqn, Params: core.Params{},
		ScheduledAt: later, ComponentID: req.ComponentID}); err != nil {
		t.Fatal(err)
	}
	select {
	case locked := <-got:
		if len(locked) != 1 || locked[0].ExecutionID != id {
			t.Fatalf("locked %+v, want %s", locked, id)
		}
		if l := locked[0].LockedEvent; !l.LockExpiresAt.Equal(later.Add(10 * time.Second)) {
			t.Errorf("lock expires at %s, want %s (the lease from the lock's time)", l.LockExpiresAt, later.Add(10*time.Second))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the long poll did not lock the execution created during its wait")
	}
}

// TestLockPendingEndsTheWaitWithItsContext: ctx ends the wait at once (no
// error, nothing locked), not after wait.
func TestLockPendingEndsTheWaitWithItsContext(t *testing.T) {
	svc, _, req, ffqn := lockPendingSetup(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		locked, err := svc.LockPending(ctx, req, []core.FunctionFqn{ffqn}, time.Hour)
		if len(locked) != 0 {
			t.Errorf("locked %+v with nothing pending", locked)
		}
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("got %v, want no error", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the wait outlived its context")
	}
}
