package worker_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/worker"
	"github.com/stela-dev/stela/worker/workertest"
)

const slowFFQN = "demo:test/activity.slow"

// blockingActivity starts, signals started, and returns once released or
// when its context ends (with the context's cause).
type blockingActivity struct {
	started chan core.ExecutionId
	release chan struct{}
	calls   atomic.Int32
}

func newBlocking() *blockingActivity {
	return &blockingActivity{started: make(chan core.ExecutionId, 16), release: make(chan struct{})}
}

func (b *blockingActivity) fn(ctx context.Context, s string) (string, error) {
	b.calls.Add(1)
	b.started <- core.ExecutionId{}
	select {
	case <-b.release:
		return "done " + s, nil
	case <-ctx.Done():
		return "", context.Cause(ctx)
	}
}

func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// TestKilledWorkerWorkIsCompletedOnceByAnother: worker A locks an activity
// and dies mid-run (its connection is cut, nothing is released). The lease
// expires (a clock advance), the timers retry the execution, worker B
// completes it; when A comes back, its late result is fenced off: exactly
// one Finished.
func TestKilledWorkerWorkIsCompletedOnceByAnother(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	connA := &cutConn{Service: env.Store}
	a := env.NewWorker(connA, worker.Options{LockExpiry: 10 * time.Second})
	blockA := newBlocking()
	worker.Activity(a, slowFFQN, blockA.fn)
	b := env.NewWorker(nil, worker.Options{})
	worker.Activity(b, slowFFQN, func(_ context.Context, s string) (string, error) { return "B did " + s, nil })

	id := env.Submit(slowFFQN, "it")
	aDone := make(chan error, 1)
	go func() { aDone <- a.RunUntilIdle(context.Background()) }()
	waitFor(t, blockA.started, "A to start the activity")
	connA.cut.Store(true) // A is dead: it never reaches the store again

	env.Clock.Advance(11 * time.Second) // A's lease expired
	env.Sweep()                         // the timers record TemporarilyTimedOut
	if st := env.Status(id); st.State != core.StatePendingAt {
		t.Fatalf("after the expired lease the execution must be pending again, got %s", st)
	}
	env.Clock.Advance(time.Second) // past the retry backoff
	if err := b.RunUntilIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, err := workertest.Result[string](env, id)
	if err != nil || got != "B did it" {
		t.Fatalf("got %q, %v", got, err)
	}

	connA.cut.Store(false) // A comes back and tries to record its result
	close(blockA.release)
	// A's pass may have sent its next lock request while the connection
	// was cut (a dead worker's pass fails so); its late result is written
	// or fenced either way.
	if err := waitFor(t, aDone, "A to stop"); err != nil && !errors.Is(err, errCut) {
		t.Fatal(err)
	}
	log := env.Log(id)
	if n := countFinished(log); n != 1 {
		t.Fatalf("want exactly one Finished, got %d", n)
	}
	if got, _ := workertest.Result[string](env, id); got != "B did it" {
		t.Fatalf("A's late result replaced B's: %q", got)
	}
}

// shutDownMidActivity runs a worker with the given grace until its
// activity started, stops it (finishing the activity first when finish is
// set) and returns once Run returned.
func shutDownMidActivity(t *testing.T, env *workertest.Env, grace time.Duration, finish bool) core.ExecutionId {
	t.Helper()
	a := env.NewWorker(nil, worker.Options{ShutdownGrace: grace, PollWait: 50 * time.Millisecond})
	blockA := newBlocking()
	worker.Activity(a, slowFFQN, blockA.fn)
	id := env.Submit(slowFFQN, "it")
	ctx, stop := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- a.Run(ctx) }()
	waitFor(t, blockA.started, "the activity to start")
	stop()
	if finish {
		close(blockA.release)
	}
	if err := waitFor(t, runDone, "Run to return"); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestShutdownReleasesWorkInFlight: Run stops while an activity runs; after
// the grace period its context is cancelled and the execution released
// (Unlocked "executor closing"), so another worker completes it at once.
func TestShutdownReleasesWorkInFlight(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	id := shutDownMidActivity(t, env, 20*time.Millisecond, false)
	log := env.Log(id)
	last, ok := log.LastEvent().Event.(*core.Unlocked)
	if !ok || last.Reason != "executor closing" {
		t.Fatalf("want Unlocked(executor closing) last, got %#v", log.LastEvent().Event)
	}
	worker.Activity(env.Worker, slowFFQN, func(_ context.Context, s string) (string, error) { return "again " + s, nil })
	env.Run() // pending again at once: no clock advance needed
	if got, err := workertest.Result[string](env, id); err != nil || got != "again it" {
		t.Fatalf("got %q, %v", got, err)
	}
}

// TestShutdownLetsWorkFinishWithinGrace: an activity that completes within
// the grace period records its result.
func TestShutdownLetsWorkFinishWithinGrace(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	id := shutDownMidActivity(t, env, 30*time.Second, true)
	if got, err := workertest.Result[string](env, id); err != nil || got != "done it" {
		t.Fatalf("got %q, %v", got, err)
	}
}

// TestLeaseIsExtendedWhileRunning: an activity outliving half its lease
// gets a Locked event by the same run, and its result is still recorded.
func TestLeaseIsExtendedWhileRunning(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	conn := &cutConn{Service: env.Store}
	extended := make(chan struct{}, 4)
	conn.setObserver(func(_ core.ExecutionId, batch []core.AppendRequest, _ int) {
		if _, ok := batch[len(batch)-1].Event.(*core.Locked); ok {
			extended <- struct{}{}
		}
	})
	w := env.NewWorker(conn, worker.Options{LockExpiry: 80 * time.Millisecond})
	blk := newBlocking()
	worker.Activity(w, slowFFQN, blk.fn)
	id := env.Submit(slowFFQN, "it")
	done := make(chan error, 1)
	go func() { done <- w.RunUntilIdle(context.Background()) }()
	waitFor(t, blk.started, "the activity to start")
	env.Clock.Advance(50 * time.Millisecond) // more than half of the lease is gone
	waitFor(t, extended, "the lease extension")
	close(blk.release)
	if err := waitFor(t, done, "the run"); err != nil {
		t.Fatal(err)
	}
	log := env.Log(id)
	var locks []*core.Locked
	for _, e := range log.Events {
		if l, ok := e.Event.(*core.Locked); ok {
			locks = append(locks, l)
		}
	}
	if len(locks) != 2 || locks[0].RunID != locks[1].RunID || !locks[1].LockExpiresAt.After(locks[0].LockExpiresAt) {
		t.Fatalf("want the lock extended by the same run, got %+v", locks)
	}
	if got, err := workertest.Result[string](env, id); err != nil || got != "done it" {
		t.Fatalf("got %q, %v", got, err)
	}
}

// TestActivityCancellation: cancelling a running activity cancels its
// context with ErrCancelled and the worker records Finished(cancelled).
func TestActivityCancellation(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	w := env.NewWorker(nil, worker.Options{LockExpiry: 80 * time.Millisecond})
	var cause atomic.Value
	started := make(chan struct{}, 1)
	worker.Activity(w, slowFFQN, func(ctx context.Context, _ string) (string, error) {
		started <- struct{}{}
		<-ctx.Done()
		cause.Store(context.Cause(ctx))
		return "", ctx.Err()
	})
	id := env.Submit(slowFFQN, "it")
	done := make(chan error, 1)
	go func() { done <- w.RunUntilIdle(context.Background()) }()
	waitFor(t, started, "the activity to start")
	if _, err := env.Store.AppendActivityCancellationRequested(context.Background(), id, env.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	env.Clock.Advance(50 * time.Millisecond) // the next extension finds the request
	if err := waitFor(t, done, "the run"); err != nil {
		t.Fatal(err)
	}
	if c, _ := cause.Load().(error); !errors.Is(c, worker.ErrCancelled) {
		t.Fatalf("context cause %v", c)
	}
	rv := env.ReturnValue(id)
	if rv.Kind != core.ReturnExecutionFailure || rv.Failure.Kind != core.FailureCancelled {
		t.Fatalf("want Finished(cancelled), got %+v", rv)
	}
}

// TestPanicIsRetriedThenRecorded: a panicking activity is retried like an
// error and finally recorded as an execution failure with the message.
func TestPanicIsRetriedThenRecorded(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	worker.Activity(env.Worker, "demo:x/y.panic", func(_ context.Context, _ worker.Unit) (worker.Unit, error) {
		panic("kaboom")
	}, worker.RetryPolicy(1, time.Second))
	id := env.Submit("demo:x/y.panic", nil)
	env.Run()
	if st := env.Status(id); st.State != core.StatePendingAt {
		t.Fatalf("the first panic must be retried, got %s", st)
	}
	env.Advance(time.Second)
	rv := env.ReturnValue(id)
	if rv.Kind != core.ReturnExecutionFailure || rv.Failure.Reason == nil || *rv.Failure.Reason != "activity panicked: kaboom" {
		t.Fatalf("got %+v", rv)
	}
}

// TestPermanentErrorIsNotRetried: Permanent(err) finishes with the error at once.
func TestPermanentErrorIsNotRetried(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	worker.Activity(env.Worker, "demo:x/y.perm", func(_ context.Context, _ worker.Unit) (int, error) {
		return 0, worker.Permanent(errors.New("no such order"))
	})
	id := env.Submit("demo:x/y.perm", nil)
	env.Run()
	_, err := workertest.Result[int](env, id)
	var re *worker.ResultError
	if !errors.As(err, &re) || re.Result.Kind != core.ReturnErr || string(re.Result.Value.Value) != `"no such order"` {
		t.Fatalf("got %v", err)
	}
}

// TestFanOutRespectsTheAppendLimit: 50 children (100 items) in one join set are
// created in appends of at most MaxAppendItems items (a child counts
// twice), and the workflow joins them all.
func TestFanOutRespectsTheAppendLimit(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	conn := &cutConn{Service: env.Store}
	var mu sync.Mutex
	maxItems := 0
	conn.setObserver(func(_ core.ExecutionId, batch []core.AppendRequest, children int) {
		mu.Lock()
		maxItems = max(maxItems, len(batch)+children)
		mu.Unlock()
	})
	w := env.NewWorker(conn, worker.Options{})
	worker.Activity(w, greetFFQN, greet)
	worker.Workflow(w, "demo:test/workflow.fan", greetAll)
	id, err := w.Submit(context.Background(), "demo:test/workflow.fan", 50)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.RunUntilIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, err := workertest.Result[int](env, id)
	if err != nil || got != 10*len("Hello, 0!")+40*len("Hello, 10!") {
		t.Fatalf("got %d, %v", got, err)
	}
	if maxItems > worker.MaxAppendItems || maxItems < worker.MaxAppendItems-2 {
		t.Fatalf("largest append %d items, want close to and at most %d", maxItems, worker.MaxAppendItems)
	}
}

// TestJoinSetClosedOnReturnCancelsMembers: members left unawaited are
// cancelled (activities, delays) and awaited with closing JoinNexts.
func TestJoinSetClosedOnReturnCancelsMembers(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	env.Worker.Declare("demo:test/never.served", core.ComponentTypeActivity)
	worker.Workflow(env.Worker, "demo:test/workflow.leave", func(wf *worker.Context, _ worker.Unit) (string, error) {
		js := wf.NewJoinSet()
		if _, err := js.Submit("demo:test/never.served", nil); err != nil {
			return "", err
		}
		if _, err := js.SubmitDelay(time.Hour); err != nil {
			return "", err
		}
		return "left", nil
	})
	id := env.Submit("demo:test/workflow.leave", nil)
	env.Run()
	env.Advance(0) // the cancellation driver finishes the cancelled activity
	if got, err := workertest.Result[string](env, id); err != nil || got != "left" {
		t.Fatalf("got %q, %v (%s)", got, err, env.Status(id))
	}
	log := env.Log(id)
	closing := 0
	for _, h := range log.EventHistory() {
		if j, ok := h.Event.(*core.JoinNext); ok && j.Closing {
			closing++
		}
	}
	if closing != 2 {
		t.Fatalf("want 2 closing JoinNexts, got %d", closing)
	}
	child := id.NextLevel(core.JoinSetId{Kind: core.JoinSetKindGenerated, Name: "1"})
	rv := env.ReturnValue(child)
	if rv.Kind != core.ReturnExecutionFailure || rv.Failure.Kind != core.FailureCancelled {
		t.Fatalf("the unawaited child must be cancelled, got %+v", rv)
	}
}

// TestWorkflowCancellation: cancelling a `-cancellable` workflow that waits
// for a sleep and a child fences the run; the cancellation driver cancels
// the open members and finishes the workflow as cancelled, and the worker
// never runs it again.
func TestWorkflowCancellation(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	const ffqn = "demo:test/workflow.nap-cancellable"
	env.Worker.Declare("demo:test/never.served", core.ComponentTypeActivity)
	runs := 0
	worker.Workflow(env.Worker, ffqn, func(wf *worker.Context, _ worker.Unit) (worker.Unit, error) {
		runs++
		js := wf.NewJoinSet()
		if _, err := js.Submit("demo:test/never.served", nil); err != nil {
			return worker.Unit{}, err
		}
		return worker.Unit{}, wf.Sleep(time.Hour)
	})
	id := env.Submit(ffqn, nil)
	env.Run()
	if _, err := env.Store.CancelWorkflow(context.Background(), id, env.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	// The driver cancels the child and the sleep, finishes the cancelled
	// child, then (all answered) the workflow: a few passes.
	for i := 0; i < 5 && env.Status(id).State != core.StateFinished; i++ {
		env.Advance(0)
	}
	rv := env.ReturnValue(id)
	if rv.Kind != core.ReturnExecutionFailure || rv.Failure.Kind != core.FailureCancelled {
		t.Fatalf("want Finished(cancelled), got %+v", rv)
	}
	env.Advance(time.Hour)
	if runs != 1 {
		t.Fatalf("the workflow ran %d times, want once", runs)
	}
}
