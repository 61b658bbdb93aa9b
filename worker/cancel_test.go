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

const (
	reserveFFQN = "demo:s/inventory.reserve"
	releaseFFQN = "demo:s/inventory.release"
	orderFFQN   = "demo:s/workflow.order-cancellable"
)

// TestWriteAfterCancellationIsAnError: a workflow waiting in memory for its
// child is cancelled through the API; the store's cancellation driver
// cancels the child, the workflow sees the cancelled result and runs its
// compensation, which calls another activity. That call must not vanish:
// it used to be dropped silently (its write fenced by the cancellation, the
// workflow unwound mid-call); it now returns an error wrapping
// ErrCancelled, and nothing is created.
func TestWriteAfterCancellationIsAnError(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	w := env.NewWorker(nil, worker.Options{LockExpiry: time.Hour, AwaitWindow: time.Hour, PollWait: 50 * time.Millisecond})
	w.Declare(reserveFFQN, core.ComponentTypeActivity)
	w.Declare(releaseFFQN, core.ComponentTypeActivity)
	compensating := make(chan struct{})
	resume := make(chan struct{})
	compensation := make(chan error, 1)
	interrupted := make(chan error, 1)
	worker.Workflow(w, orderFFQN, func(wf *worker.Context, _ worker.Unit) (string, error) {
		_, err := worker.Call[string](wf, reserveFFQN, nil)
		if err == nil {
			return "reserved", nil
		}
		interrupted <- err
		close(compensating)
		<-resume
		_, err = worker.Call[worker.Unit](wf, releaseFFQN, nil) // compensate
		compensation <- err
		return "", err
	})
	awaiting, onAwaiting := signal()
	w.OnAwaiting(onAwaiting)
	id, err := w.Submit(context.Background(), orderFFQN, nil)
	if err != nil {
		t.Fatal(err)
	}
	runFor(t, w)
	waitFor(t, awaiting, "the workflow to wait for its child")
	if _, err := env.Store.CancelWorkflow(context.Background(), id, env.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	env.Sweep() // the driver asks the child to cancel
	env.Sweep() // and finishes it: the workflow gets the cancelled result
	waitFor(t, compensating, "the workflow to see its child cancelled")
	// The interrupted wait's error is typed: the child's cancelled result,
	// matching ErrCancelled like every later call.
	var re *worker.ResultError
	if err := <-interrupted; !errors.Is(err, worker.ErrCancelled) || !errors.As(err, &re) || re.FailureKind() != core.FailureCancelled {
		t.Errorf("the interrupted call returned %v, want a cancelled *ResultError matching ErrCancelled", err) // not Fatal: the workflow waits for resume
	}
	env.Sweep() // everything answered: the driver finishes the workflow as cancelled
	close(resume)
	err = waitFor(t, compensation, "the compensating call to return (it must not vanish)")
	if !errors.Is(err, worker.ErrCancelled) {
		t.Fatalf("the compensating call returned %v, want an error wrapping ErrCancelled", err)
	}
	rv := env.ReturnValue(id)
	if rv.Kind != core.ReturnExecutionFailure || rv.Failure.Kind != core.FailureCancelled {
		t.Fatalf("want Finished(cancelled), got %+v", rv)
	}
	for _, h := range env.Log(id).EventHistory() {
		if r, ok := h.Event.(*core.JoinSetRequestEvent); ok {
			if c, ok := r.Request.(*core.ChildExecutionRequest); ok && c.TargetFFQN.String() == releaseFFQN {
				t.Fatalf("a child was recorded after the cancellation: %s", c.ChildExecutionID)
			}
		}
	}
}
