package worker_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/worker"
	"github.com/stela-dev/stela/worker/workertest"
)

const (
	answerFFQN = "demo:a/oracle.answer"
	askFFQN    = "demo:b/workflow.ask"
)

// pauseRaceConn holds the workflow's parking write (its child's creation
// with the JoinNext that lets the execution be locked again once the child
// answers) after the store took it, until the worker has started its next
// run of the execution: the lock that comes back before the parked run is
// in the cache, as when the response arrives at once.
type pauseRaceConn struct {
	*store.Service
	held atomic.Bool
	next chan struct{} // closed once the next run started
	once sync.Once
}

func (c *pauseRaceConn) nextRunStarted() { c.once.Do(func() { close(c.next) }) }

func (c *pauseRaceConn) AppendBatchCreateNewExecution(ctx context.Context, now core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, v core.Version, children []core.CreateRequest, bts []core.BacktraceInfo) (core.Version, error) {
	next, err := c.Service.AppendBatchCreateNewExecution(ctx, now, batch, id, v, children, bts)
	if err == nil && len(children) > 0 && c.held.CompareAndSwap(false, true) {
		select {
		case <-c.next:
		case <-ctx.Done(): // never started: the test fails below
		}
	}
	return next, err
}

// AppendBatchCreateNewExecutionLocked declines eager dispatch (no locks):
// the promoted *store.Service method would bypass the override above.
func (c *pauseRaceConn) AppendBatchCreateNewExecutionLocked(ctx context.Context, now core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, v core.Version, children []core.CreateRequest, bts []core.BacktraceInfo, _ []core.EagerLock) (core.Version, []core.LockedExecution, error) {
	next, err := c.AppendBatchCreateNewExecution(ctx, now, batch, id, v, children, bts)
	return next, nil, err
}

// TestLockDuringPauseResumesTheParkedRun: the worker locks a workflow again
// while its run is still on its way into the cache (the wait is written,
// the child answered and the execution became pending at once). The new
// run must resume the parked one, not replay the function from scratch and
// leave the parked copy cached (a stale entry and an idle goroutine).
func TestLockDuringPauseResumesTheParkedRun(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	conn := &pauseRaceConn{Service: env.Store, next: make(chan struct{})}
	w := env.NewWorker(conn, worker.Options{AwaitWindow: -1, PollWait: 100 * time.Millisecond})
	var entries, waited atomic.Int32
	w.OnLockWaitsForPause(func(core.ExecutionId) {
		waited.Add(1)
		conn.nextRunStarted()
	})
	worker.Activity(w, answerFFQN, func(context.Context, worker.Unit) (int, error) { return 42, nil })
	worker.Workflow(w, askFFQN, func(wf *worker.Context, _ worker.Unit) (int, error) {
		if entries.Add(1) > 1 {
			conn.nextRunStarted() // a replay: the parked run was missed
		}
		return worker.Call[int](wf, answerFFQN, nil)
	})
	id := env.Submit(askFFQN, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	actx, acancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer acancel()
	got, err := worker.Await[int](actx, w, id)
	w.WaitRuns() // nothing is pending any more: the runs end
	st := w.Stats()
	pausing := w.Pausing()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err != nil || got != 42 {
		t.Fatalf("got %d, %v", got, err)
	}
	if !conn.held.Load() {
		t.Fatal("the parking write was never seen: the test did not interleave as intended")
	}
	if n := entries.Load(); n != 1 {
		t.Errorf("the workflow function ran %d times, want once (the second lock must resume the parked run)", n)
	}
	if waited.Load() == 0 {
		t.Error("the second lock did not wait for the pausing run")
	}
	if st.Workflows != 2 || st.Cached != 0 || pausing != 0 {
		t.Errorf("stats %+v, %d pausing: want 2 workflow runs and nothing left in the cache", st, pausing)
	}
}

// fencingConn fails the workflow's first parking write as a lost lease
// would (a version conflict), without writing it.
type fencingConn struct {
	*store.Service
	fenced atomic.Bool
}

func (c *fencingConn) AppendBatchCreateNewExecution(ctx context.Context, now core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, v core.Version, children []core.CreateRequest, bts []core.BacktraceInfo) (core.Version, error) {
	if c.fenced.CompareAndSwap(false, true) {
		return 0, &core.VersionConflictError{Expected: v + 1, Requested: v}
	}
	return c.Service.AppendBatchCreateNewExecution(ctx, now, batch, id, v, children, bts)
}

// AppendBatchCreateNewExecutionLocked declines eager dispatch (no locks):
// the promoted *store.Service method would bypass the override above.
func (c *fencingConn) AppendBatchCreateNewExecutionLocked(ctx context.Context, now core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, v core.Version, children []core.CreateRequest, bts []core.BacktraceInfo, _ []core.EagerLock) (core.Version, []core.LockedExecution, error) {
	next, err := c.AppendBatchCreateNewExecution(ctx, now, batch, id, v, children, bts)
	return next, nil, err
}

// TestFailedPauseLeavesNoMark: a run whose parking write fails (its lease
// was lost) ends without parking; its pausing mark must go with it, or the
// next lock of the execution would wait forever for a run that never comes.
func TestFailedPauseLeavesNoMark(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	conn := &fencingConn{Service: env.Store}
	w := env.NewWorker(conn, worker.Options{LockExpiry: 10 * time.Second})
	var entries atomic.Int32
	worker.Activity(w, answerFFQN, func(context.Context, worker.Unit) (int, error) { return 42, nil })
	worker.Workflow(w, askFFQN, func(wf *worker.Context, _ worker.Unit) (int, error) {
		entries.Add(1)
		return worker.Call[int](wf, answerFFQN, nil)
	})
	id := env.Submit(askFFQN, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.RunUntilIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if !conn.fenced.Load() || w.Pausing() != 0 || w.Stats().Cached != 0 {
		t.Fatalf("after the failed write: %d pausing, stats %+v", w.Pausing(), w.Stats())
	}
	env.Clock.Advance(11 * time.Second) // the abandoned lock expires
	env.Sweep()
	env.Clock.Advance(time.Second)
	if err := w.RunUntilIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("the next lock waited for the failed run")
	}
	if got, err := workertest.Result[int](env, id); err != nil || got != 42 || entries.Load() != 2 {
		t.Fatalf("got %d, %v after %d runs of the function", got, err, entries.Load())
	}
}

const (
	firstFFQN  = "demo:a/steps.first"
	secondFFQN = "demo:a/steps.second"
	stepsFFQN  = "demo:b/workflow.steps"
)

// steps calls the first activity, then the second.
func steps(wf *worker.Context, _ worker.Unit) (string, error) {
	a, err := worker.Call[string](wf, firstFFQN, nil)
	if err != nil {
		return "", err
	}
	b, err := worker.Call[string](wf, secondFFQN, nil)
	return a + "+" + b, err
}

// TestCachedRunBehindTheHistoryReplays: worker A keeps a workflow parked
// at its first call; worker B (without A's copy) runs the first activity,
// replays the workflow and parks it at the second call. When A locks it
// again (after running the second activity), its cached copy is behind the
// history: A must replay, not resume the stale copy, and finish with one
// Finished and the history a single run would write.
func TestCachedRunBehindTheHistoryReplays(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	a := env.NewWorker(nil, worker.Options{Entropy: newEntropy(3)})
	var entries atomic.Int32
	counted := func(wf *worker.Context, u worker.Unit) (string, error) {
		entries.Add(1)
		return steps(wf, u)
	}
	worker.Workflow(a, stepsFFQN, counted)
	worker.Activity(a, secondFFQN, func(context.Context, worker.Unit) (string, error) { return "two", nil })
	b := env.NewWorker(nil, worker.Options{})
	worker.Workflow(b, stepsFFQN, counted)
	worker.Activity(b, firstFFQN, func(context.Context, worker.Unit) (string, error) { return "one", nil })
	a.Declare(firstFFQN, core.ComponentTypeActivity) // each serves one of the workflow's activities
	b.Declare(secondFFQN, core.ComponentTypeActivity)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id, err := a.Submit(ctx, stepsFFQN, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range []*worker.Worker{a, b, a} {
		if err := w.RunUntilIdle(ctx); err != nil {
			t.Fatalf("pass %d: %v", i, err)
		}
		if i == 0 && a.Stats().Cached != 1 {
			t.Fatalf("A must keep the parked run, stats %+v", a.Stats())
		}
	}
	if got, err := workertest.Result[string](env, id); err != nil || got != "one+two" {
		t.Fatalf("got %q, %v", got, err)
	}
	log := env.Log(id)
	if n := countFinished(log); n != 1 {
		t.Fatalf("%d Finished events", n)
	}
	if n := entries.Load(); n != 3 {
		t.Errorf("the function ran %d times, want 3 (A, B's replay, A's replay)", n)
	}
	if a.Stats().Cached != 0 || a.Pausing() != 0 || b.Stats().Cached != 1 {
		t.Errorf("A: %+v, %d pausing; B: %+v (B keeps its now stale copy until evicted)", a.Stats(), a.Pausing(), b.Stats())
	}

	// The same program run by one worker writes the same history.
	ref := workertest.New(t, worker.Options{Entropy: newEntropy(3)})
	worker.Workflow(ref.Worker, stepsFFQN, steps)
	worker.Activity(ref.Worker, firstFFQN, func(context.Context, worker.Unit) (string, error) { return "one", nil })
	worker.Activity(ref.Worker, secondFFQN, func(context.Context, worker.Unit) (string, error) { return "two", nil })
	rid := ref.Submit(stepsFFQN, nil) // the same id as A's: the same entropy
	ref.Run()
	if got, want := historyOf(t, log), historyOf(t, ref.Log(rid)); !slices.Equal(got, want) {
		t.Errorf("history\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
