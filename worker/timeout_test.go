package worker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/worker"
	"github.com/stela-dev/stela/worker/workertest"
)

const slowOnceFFQN = "demo:timeout/activity.slow"

// slowOnce blocks its first run until its ctx is cancelled, reporting the
// cause on causes; later runs return at once.
func slowOnce(started chan<- worker.ActivityInfo, causes chan<- error) func(ctx context.Context, _ worker.Unit) (string, error) {
	return func(ctx context.Context, _ worker.Unit) (string, error) {
		info, _ := worker.ActivityInfoFrom(ctx)
		if info.Attempt > 1 {
			return "done", nil
		}
		started <- info
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return "", context.Cause(ctx)
	}
}

func history(env *workertest.Env, id core.ExecutionId) []string {
	var out []string
	for _, e := range env.Log(id).Events {
		out = append(out, e.Event.Variant())
	}
	return out
}

// TestStartToCloseTimeout: a run exceeding its registration's start-to-close
// timeout has its ctx cancelled (cause ErrStartToCloseTimeout) when the
// simulated clock reaches the deadline; the worker writes nothing, the
// store's timers record TemporarilyTimedOut for the expired lock, and the
// retry (after the policy's backoff) finishes. With no retry left the
// store finishes the execution with a timed_out failure.
func TestStartToCloseTimeout(t *testing.T) {
	for _, retries := range []uint32{1, 0} {
		env := workertest.New(t, worker.Options{})
		started, causes := make(chan worker.ActivityInfo, 1), make(chan error, 1)
		worker.Activity(env.Worker, slowOnceFFQN, slowOnce(started, causes),
			worker.StartToClose(5*time.Second), worker.RetryPolicy(retries, time.Second))
		id := env.Submit(slowOnceFFQN, nil)
		ran := make(chan error, 1)
		go func() { ran <- env.Worker.RunUntilIdle(testCtx(t)) }()
		info := waitFor(t, started, "the first run")
		if want := workertest.Start.Add(5 * time.Second); !info.Deadline.Equal(want.Time) {
			t.Fatalf("deadline %v, want %v", info.Deadline, want)
		}
		if h := history(env, id); len(h) != 2 {
			t.Fatalf("events before the deadline: %v", h)
		}
		env.Clock.Advance(4 * time.Second)
		select {
		case err := <-causes:
			t.Fatalf("cancelled before the deadline: %v", err)
		default:
		}
		env.Clock.Advance(time.Second)
		if err := waitFor(t, causes, "the timeout's cancellation"); !errors.Is(err, worker.ErrStartToCloseTimeout) {
			t.Fatalf("cause %v", err)
		}
		if err := waitFor(t, ran, "the run to end"); err != nil {
			t.Fatal(err)
		}
		env.Sweep() // the store's timers find the expired lock
		if retries == 0 {
			rv := env.ReturnValue(id)
			if rv.Kind != core.ReturnExecutionFailure || rv.Failure.Kind != core.FailureTimedOut {
				t.Fatalf("no retry left: %+v, history %v", rv, history(env, id))
			}
			continue
		}
		if h := history(env, id); len(h) != 3 || h[2] != "temporarily_timed_out" {
			t.Fatalf("history after the deadline: %v", h)
		}
		env.Advance(time.Second) // the backoff
		if got, err := workertest.Result[string](env, id); err != nil || got != "done" {
			t.Fatalf("retry: %q, %v (history %v)", got, err, history(env, id))
		}
	}
}

// TestActivityCancelledPromptly: a running activity's ctx is cancelled with
// ErrCancelled within a second of its execution's cancellation (the watch
// of Options.CancelCheck), although its lease is nowhere near due (the
// simulated clock stands still: the lease extension alone would never
// notice). With the watch disabled it is not cancelled.
func TestActivityCancelledPromptly(t *testing.T) {
	for _, check := range []time.Duration{0, -1} {
		env := workertest.New(t, worker.Options{CancelCheck: check, ShutdownGrace: 100 * time.Millisecond})
		started, causes := make(chan worker.ActivityInfo, 1), make(chan error, 1)
		worker.Activity(env.Worker, slowOnceFFQN, slowOnce(started, causes))
		id := env.Submit(slowOnceFFQN, nil)
		ctx, stop := context.WithCancel(testCtx(t))
		ran := make(chan error, 1)
		go func() { ran <- env.Worker.RunUntilIdle(ctx) }()
		waitFor(t, started, "the run")
		if _, err := env.Store.Cancel(testCtx(t), id); err != nil {
			t.Fatal(err)
		}
		cancelled := time.Now()
		select {
		case err := <-causes:
			if check < 0 {
				t.Fatalf("cancelled without the watch: %v", err)
			}
			if !errors.Is(err, worker.ErrCancelled) || time.Since(cancelled) > time.Second {
				t.Fatalf("cause %v after %v", err, time.Since(cancelled))
			}
			if err := waitFor(t, ran, "the run to end"); err != nil {
				t.Fatal(err)
			}
			if rv := env.ReturnValue(id); rv.Kind != core.ReturnExecutionFailure || rv.Failure.Kind != core.FailureCancelled {
				t.Fatalf("want Finished(cancelled), got %+v", rv)
			}
		case <-time.After(1500 * time.Millisecond):
			if check >= 0 {
				t.Fatal("the activity's ctx was not cancelled within 1.5 s of the cancellation")
			}
			stop() // shutdown: the grace period ends the run
			<-causes
			<-ran
		}
		stop()
	}
}

// TestTimeoutAndCancellationOverHTTP: over the HTTP transport with the
// server's timers running, a run exceeding its start-to-close timeout is
// cancelled, recorded as TemporarilyTimedOut by the store and retried to
// success; a running activity's ctx is cancelled within a second of a
// cancellation requested through the client.
func TestTimeoutAndCancellationOverHTTP(t *testing.T) {
	conn := httpConn(t)
	w := worker.New(conn, worker.Options{Name: "timeout-http", PollWait: 200 * time.Millisecond})
	started, causes := make(chan worker.ActivityInfo, 2), make(chan error, 2)
	worker.Activity(w, slowOnceFFQN, slowOnce(started, causes),
		worker.StartToClose(300*time.Millisecond), worker.RetryPolicy(1, 10*time.Millisecond))
	const blockFFQN = "demo:timeout/activity.block"
	worker.Activity(w, blockFFQN, func(ctx context.Context, _ worker.Unit) (worker.Unit, error) {
		started <- worker.ActivityInfo{}
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return worker.Unit{}, context.Cause(ctx)
	})
	runFor(t, w)
	ctx := testCtx(t)

	id, err := w.Submit(ctx, slowOnceFFQN, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, started, "the first run")
	if err := waitFor(t, causes, "the timeout"); !errors.Is(err, worker.ErrStartToCloseTimeout) {
		t.Fatalf("cause %v", err)
	}
	if got, err := worker.Await[string](ctx, w, id); err != nil || got != "done" {
		t.Fatalf("retry: %q, %v", got, err)
	}
	log, err := conn.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var timedOut bool
	for _, e := range log.Events {
		_, ok := e.Event.(*core.TemporarilyTimedOut)
		timedOut = timedOut || ok
	}
	if !timedOut {
		t.Fatal("no TemporarilyTimedOut recorded")
	}

	id, err = w.Submit(ctx, blockFFQN, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, started, "the blocking run")
	if _, err := conn.Cancel(ctx, id); err != nil {
		t.Fatal(err)
	}
	asked := time.Now()
	if err := waitFor(t, causes, "the cancellation"); !errors.Is(err, worker.ErrCancelled) || time.Since(asked) > time.Second {
		t.Fatalf("cause %v after %v", err, time.Since(asked))
	}
	rv, err := conn.WaitForFinishedResult(ctx, id)
	if err != nil || rv.Kind != core.ReturnExecutionFailure || rv.Failure.Kind != core.FailureCancelled {
		t.Fatalf("want Finished(cancelled), got %+v, %v", rv, err)
	}
}

const callStartToCloseFFQN = "demo:timeout/workflow.call-slow"

// TestCallStartToClose: a call made with CallStartToClose records the
// timeout in the child's Created metadata, and the worker running the
// child (registered without StartToClose, with the default hour-long
// lock) caps its lock at the call's deadline: the activity's ctx is
// cancelled with cause ErrStartToCloseTimeout at the deadline and not
// before, the store's timers record TemporarilyTimedOut, and the retry
// answers the workflow.
func TestCallStartToClose(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	started, causes := make(chan worker.ActivityInfo, 1), make(chan error, 1)
	worker.Activity(env.Worker, slowOnceFFQN, slowOnce(started, causes), worker.RetryPolicy(1, time.Second))
	worker.Workflow(env.Worker, callStartToCloseFFQN, func(wf *worker.Context, _ worker.Unit) (string, error) {
		return worker.Call[string](wf, slowOnceFFQN, nil, worker.CallStartToClose(5*time.Second))
	})
	id := env.Submit(callStartToCloseFFQN, nil)
	ran := make(chan error, 1)
	go func() { ran <- env.Worker.RunUntilIdle(testCtx(t)) }()
	info := waitFor(t, started, "the child's first run")
	if want := workertest.Start.Add(5 * time.Second); !info.Deadline.Equal(want.Time) {
		t.Fatalf("deadline %v, want %v", info.Deadline, want)
	}
	child := info.ExecutionID
	if md := env.Log(child).Created().Metadata; md["stela:start_to_close_ms"] != "5000" {
		t.Fatalf("the child's metadata %v lacks stela:start_to_close_ms=5000", md)
	}
	env.Clock.Advance(4 * time.Second)
	select {
	case err := <-causes:
		t.Fatalf("cancelled before the deadline: %v", err)
	default:
	}
	env.Clock.Advance(time.Second)
	if err := waitFor(t, causes, "the timeout's cancellation"); !errors.Is(err, worker.ErrStartToCloseTimeout) {
		t.Fatalf("cause %v", err)
	}
	if err := waitFor(t, ran, "the run to end"); err != nil {
		t.Fatal(err)
	}
	env.Sweep() // the store's timers find the lock expired at the deadline
	if h := history(env, child); len(h) == 0 || h[len(h)-1] != "temporarily_timed_out" {
		t.Fatalf("the child's history after the deadline: %v", h)
	}
	env.Advance(time.Second) // the backoff: the retry answers the workflow
	if got, err := workertest.Result[string](env, id); err != nil || got != "done" {
		t.Fatalf("workflow: %q, %v (child history %v)", got, err, history(env, child))
	}
}
