package worker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/worker"
	"github.com/stela-dev/stela/worker/workertest"
)

const (
	holdFFQN  = "demo:flag/inventory.hold"
	orderName = "demo:flag/workflow.order"
)

var (
	holdFn       = worker.DefineActivity[worker.Unit, string](holdFFQN)
	orderPlain   = worker.DefineWorkflow[worker.Unit, string](orderName)
	orderHandle  = orderPlain.Cancellable()
	orderByFlagF = orderName + core.SuffixFnCancellable
)

// startWaiting registers, on a worker of env that waits in memory, a
// workflow that calls holdFFQN (declared, served by nobody: the call waits
// until the child is cancelled) and reports the call's error; register
// does the registration. It returns the submitted execution and the
// channel of the interrupted call's error.
func startWaiting(t *testing.T, env *workertest.Env, ffqn string, register func(w *worker.Worker, fn func(*worker.Context, worker.Unit) (string, error))) (core.ExecutionId, <-chan error) {
	t.Helper()
	w := env.NewWorker(nil, worker.Options{LockExpiry: time.Hour, AwaitWindow: time.Hour, PollWait: 50 * time.Millisecond})
	holdFn.Declare(w)
	interrupted := make(chan error, 1)
	register(w, func(wf *worker.Context, _ worker.Unit) (string, error) {
		_, err := holdFn.Call(wf, worker.Unit{})
		interrupted <- err
		return "", err
	})
	awaiting, onAwaiting := signal()
	w.OnAwaiting(onAwaiting)
	id, err := w.Submit(context.Background(), ffqn, nil)
	if err != nil {
		t.Fatal(err)
	}
	runFor(t, w)
	waitFor(t, awaiting, "the workflow to wait for its child")
	return id, interrupted
}

// TestCancellableOption: a workflow registered with worker.Cancellable (the
// option, or a handle's Cancellable method) is served and started under its
// name plus "-cancellable", so the store accepts its cancellation: the
// driver cancels the awaited child and the workflow's wait returns an
// error matching ErrCancelled; the execution finishes as cancelled. The
// same workflow registered without the flag is refused by the store
// (*core.IllegalStateError), keeps running and is not cancelled.
func TestCancellableOption(t *testing.T) {
	if got := orderHandle.FFQN().String(); got != orderByFlagF {
		t.Fatalf("the handle's ffqn is %s, want %s", got, orderByFlagF)
	}
	cases := map[string]struct {
		ffqn     string
		register func(w *worker.Worker, fn func(*worker.Context, worker.Unit) (string, error))
	}{
		"option": {orderByFlagF, func(w *worker.Worker, fn func(*worker.Context, worker.Unit) (string, error)) {
			worker.Workflow(w, orderName, fn, worker.Cancellable())
		}},
		"handle": {orderByFlagF, func(w *worker.Worker, fn func(*worker.Context, worker.Unit) (string, error)) {
			orderHandle.Register(w, fn)
		}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			env := workertest.New(t, worker.Options{})
			id, interrupted := startWaiting(t, env, c.ffqn, c.register)
			if k, ok := env.Worker.ComponentType(c.ffqn); ok {
				t.Fatalf("the env's own worker serves %s (%s); the test's worker should", c.ffqn, k)
			}
			if _, err := env.Store.CancelWorkflow(context.Background(), id, env.Clock.Now()); err != nil {
				t.Fatalf("the store refused to cancel %s: %v", c.ffqn, err)
			}
			env.Sweep() // the driver asks the child to cancel
			env.Sweep() // and finishes it: the workflow's wait is interrupted
			if err := waitFor(t, interrupted, "the wait to be interrupted"); !errors.Is(err, worker.ErrCancelled) {
				t.Fatalf("the interrupted call returned %v, want an error matching ErrCancelled", err)
			}
			env.Sweep() // everything answered: the driver finishes the workflow
			if rv := env.ReturnValue(id); rv.Kind != core.ReturnExecutionFailure || rv.Failure.Kind != core.FailureCancelled {
				t.Fatalf("want Finished(cancelled), got %+v", rv)
			}
		})
	}
	t.Run("without the flag", func(t *testing.T) {
		env := workertest.New(t, worker.Options{})
		id, interrupted := startWaiting(t, env, orderName, func(w *worker.Worker, fn func(*worker.Context, worker.Unit) (string, error)) {
			orderPlain.Register(w, fn)
		})
		_, err := env.Store.CancelWorkflow(context.Background(), id, env.Clock.Now())
		var ise *core.IllegalStateError
		if !errors.As(err, &ise) {
			t.Fatalf("cancelling a workflow registered without the flag: %v, want an *IllegalStateError", err)
		}
		env.Sweep()
		env.Sweep()
		select {
		case err := <-interrupted:
			t.Fatalf("the refused cancellation interrupted the wait: %v", err)
		default:
		}
		if st := env.Status(id); st.Lifecycle == core.LifecycleCancelling {
			t.Fatal("the execution is cancelling although the store refused the request")
		}
	})
}

// TestCancellableOptionRejectsConflicts: the flag on a name that already
// carries the suffix, on an activity, or on a handle's Register panics with
// a message naming the problem; so does a handle's Cancellable twice.
func TestCancellableOptionRejectsConflicts(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	wf := func(*worker.Context, worker.Unit) (string, error) { return "", nil }
	cases := map[string]struct {
		run  func()
		want string
	}{
		"suffix twice": {func() { worker.Workflow(env.Worker, orderByFlagF, wf, worker.Cancellable()) }, "already ending in"},
		"activity": {func() {
			worker.Activity(env.Worker, holdFFQN, func(context.Context, worker.Unit) (string, error) { return "", nil }, worker.Cancellable())
		}, "workflows only"},
		"handle option": {func() { orderPlain.Register(env.Worker, wf, worker.Cancellable()) }, "handle's Cancellable method"},
		"handle twice":  {func() { _ = orderHandle.Cancellable() }, "already ending in"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			defer func() {
				r := recover()
				if s, _ := r.(string); !strings.Contains(s, c.want) {
					t.Fatalf("panic %v, want one containing %q", r, c.want)
				}
			}()
			c.run()
		})
	}
	if _, ok := env.Worker.ComponentType(orderByFlagF); ok {
		t.Fatal("a rejected registration was kept")
	}
}
