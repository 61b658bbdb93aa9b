package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stela-dev/stela/core"
)

// Submit creates a top-level execution of ffqn with params (see Args) and
// returns its id. The execution's component type is the registered
// function's, else the declared one (Declare), else the one of the store's
// current deployment; an error wrapping ErrUnknownFunction when none is
// known.
func (w *Worker) Submit(ctx context.Context, ffqn string, params any) (core.ExecutionId, error) {
	target, ps, err := parseTarget(ffqn, params)
	if err != nil {
		return core.ExecutionId{}, err
	}
	return w.submitTarget(ctx, target, ps, "")
}

// submitTarget is Submit of target with encoded params; hint is a typed
// handle's component type ("" for none).
func (w *Worker) submitTarget(ctx context.Context, target core.FunctionFqn, ps core.Params, hint core.ComponentType) (core.ExecutionId, error) {
	ffqn := target.String()
	c, err := w.calleeWithHint(ctx, target, hint)
	if err != nil {
		return core.ExecutionId{}, err
	}
	now := w.clock.Now()
	id, err := core.NewExecutionId(uint64(now.UnixMilli()), w.entropy)
	if err != nil {
		return core.ExecutionId{}, fmt.Errorf("worker: execution id: %w", err)
	}
	req := core.CreateRequest{CreatedAt: now, ExecutionID: id, FFQN: target, Params: ps,
		ScheduledAt: now, ComponentID: c.component, DeploymentID: c.deployment, Metadata: core.ExecutionMetadata{}}
	if p := w.planEagerStart(ctx, &req); p != nil {
		if err := w.submitLocked(ctx, p, req); err != nil {
			return core.ExecutionId{}, fmt.Errorf("worker: submit %s: %w", ffqn, err)
		}
		return id, nil
	}
	if _, err = w.conn.Create(ctx, req); err != nil {
		return core.ExecutionId{}, fmt.Errorf("worker: submit %s: %w", ffqn, err)
	}
	return id, nil
}

// Await waits until execution id finishes and decodes its Ok value into R;
// an execution that finished with an error or failed yields a *ResultError.
// It waits until ctx is done (then the error wraps core.ErrTimeout or ctx's).
// AwaitFinished also tells when it finished.
func Await[R any](ctx context.Context, w *Worker, id core.ExecutionId) (R, error) {
	rv, err := w.waitFinished(ctx, id)
	if err != nil {
		var zero R
		return zero, err
	}
	return Decode[R](id, rv)
}

// Finished is a finished execution as AwaitFinished reports it.
type Finished[R any] struct {
	// ID is the execution.
	ID core.ExecutionId
	// Value is the Ok value decoded into R (R's zero value otherwise).
	Value R
	// FinishedAt is when the execution finished: its Finished event's time.
	FinishedAt time.Time
	// Result is the stored return value.
	Result core.ReturnValue
}

// AwaitFinished waits like Await and also returns when the execution
// finished (one more read once it has). The error is Await's: a
// *ResultError for an execution that finished with an error or failed (the
// Finished value is then filled too), or the wait's.
func AwaitFinished[R any](ctx context.Context, w *Worker, id core.ExecutionId) (Finished[R], error) {
	rv, err := w.waitFinished(ctx, id)
	if err != nil {
		return Finished[R]{ID: id}, err
	}
	f := Finished[R]{ID: id, Result: rv}
	st, err := w.conn.GetPendingState(ctx, id)
	if err != nil {
		return f, err
	}
	if st.PendingState.Finished != nil {
		f.FinishedAt = st.PendingState.Finished.FinishedAt.Time
	}
	f.Value, err = Decode[R](id, rv)
	return f, err
}

// waitFinished waits for id's return value, through bounded long polls.
func (w *Worker) waitFinished(ctx context.Context, id core.ExecutionId) (core.ReturnValue, error) {
	for {
		rv, err := w.conn.WaitForFinishedResult(ctx, id)
		if errors.Is(err, core.ErrTimeout) && ctx.Err() == nil {
			continue // a bounded long poll ended; wait again
		}
		return rv, err
	}
}

// Decode decodes the return value of finished execution id — the one
// Options.OnFinished reports, or any stored one — like Await: its Ok value
// into R ({"ok": null} gives R's zero value), a *ResultError for an error
// or an execution failure.
//
//	worker.Options{OnFinished: func(id core.ExecutionId, rv core.ReturnValue) {
//		receipt, err := worker.Decode[Receipt](id, rv)
//		…
//	}}
func Decode[R any](id core.ExecutionId, rv core.ReturnValue) (R, error) {
	return Result[R](Response{ChildID: id, Result: rv})
}
