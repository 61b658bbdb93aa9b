package worker

import (
	"context"
	"errors"
	"fmt"

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
	c, err := w.resolveCallee(ctx, target)
	if err != nil {
		return core.ExecutionId{}, err
	}
	now := w.clock.Now()
	id, err := core.NewExecutionId(uint64(now.UnixMilli()), w.entropy)
	if err != nil {
		return core.ExecutionId{}, fmt.Errorf("worker: execution id: %w", err)
	}
	_, err = w.conn.Create(ctx, core.CreateRequest{CreatedAt: now, ExecutionID: id, FFQN: target, Params: ps,
		ScheduledAt: now, ComponentID: c.component, DeploymentID: c.deployment, Metadata: core.ExecutionMetadata{}})
	if err != nil {
		return core.ExecutionId{}, fmt.Errorf("worker: submit %s: %w", ffqn, err)
	}
	return id, nil
}

// Await waits until execution id finishes and decodes its Ok value into R;
// an execution that finished with an error or failed yields a *ResultError.
// It waits until ctx is done (then the error wraps core.ErrTimeout or ctx's).
func Await[R any](ctx context.Context, w *Worker, id core.ExecutionId) (R, error) {
	var zero R
	for {
		rv, err := w.conn.WaitForFinishedResult(ctx, id)
		if errors.Is(err, core.ErrTimeout) && ctx.Err() == nil {
			continue // a bounded long poll ended; wait again
		}
		if err != nil {
			return zero, err
		}
		return Result[R](Response{ChildID: id, Result: rv})
	}
}
