package worker_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/worker"
	"github.com/stela-dev/stela/worker/workertest"
)

// Names sorted so that the activity's lock group comes first in a round of
// RunUntilIdle and the workflow's last.
const (
	gatedFFQN  = "demo:a/gate.open"
	callerFFQN = "demo:b/workflow.call-gate"
)

// lateEndConn lets one activity run end between the last lock of a
// RunUntilIdle round and the round's idle check: on the first round that
// starts while the activity runs (it was locked in an earlier round), the
// workflow lock, once it found nothing, opens the activity's gate and waits
// until the run has ended (its response unblocked the workflow) before
// answering "nothing pending".
type lateEndConn struct {
	*store.Service
	w      *worker.Worker
	gate   chan struct{}
	mu     sync.Mutex
	locked bool // the activity was locked by an earlier call
	armed  bool // this round started while the activity ran
	fired  bool
}

func (c *lateEndConn) LockPending(ctx context.Context, req core.LockRequest, ffqns []core.FunctionFqn, wait time.Duration) ([]core.LockedExecution, error) {
	activity := slices.ContainsFunc(ffqns, func(f core.FunctionFqn) bool { return f.String() == gatedFFQN })
	c.mu.Lock()
	if activity && c.locked {
		c.armed = true
	}
	c.mu.Unlock()
	locked, err := c.Service.LockPending(ctx, req, ffqns, wait)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case activity && len(locked) > 0:
		c.locked = true
	case !activity && c.armed && !c.fired && err == nil && len(locked) == 0:
		c.fired = true
		close(c.gate)
		c.w.WaitRuns()
	}
	return locked, err
}

// TestRunUntilIdleRunsWhatARunEndingLateMadePending: a run that ends while
// a round of RunUntilIdle is locking (here the child activity whose
// response unblocks its parent workflow) may leave work pending that the
// round did not see; RunUntilIdle must not report idle then, but lock
// again. (It used to return with the workflow pending: a worker pass that
// said idle while work was left, and a test awaiting the workflow hung.)
func TestRunUntilIdleRunsWhatARunEndingLateMadePending(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	conn := &lateEndConn{Service: env.Store, gate: make(chan struct{})}
	// The interleaving needs the child activity locked by a poll, not
	// eagerly by its parent's write.
	w := env.NewWorker(conn, worker.Options{NoEagerDispatch: true})
	conn.w = w
	worker.Activity(w, gatedFFQN, func(ctx context.Context, _ worker.Unit) (string, error) {
		select {
		case <-conn.gate:
			return "open", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	worker.Workflow(w, callerFFQN, func(wf *worker.Context, _ worker.Unit) (string, error) {
		return worker.Call[string](wf, gatedFFQN, nil)
	})
	id := env.Submit(callerFFQN, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.RunUntilIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("RunUntilIdle did not end")
	}
	if !conn.fired {
		t.Fatal("the activity never ended during a round: the test did not interleave as intended")
	}
	if st := env.Status(id); st.State != core.StateFinished {
		t.Fatalf("RunUntilIdle returned with the workflow %s", st)
	}
	if got, err := workertest.Result[string](env, id); err != nil || got != "open" {
		t.Fatalf("got %q, %v", got, err)
	}
}
