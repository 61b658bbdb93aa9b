package worker

import (
	"context"
	"errors"

	"github.com/stela-dev/stela/core"
)

// Conn is what a Worker needs from Stela: core.WorkerConn, the SDK's one
// executor contract. Both transports implement it whole: *store.Service
// (in-process, over the embedded store, DynamoDB or store/mem) and
// *client.Client (HTTP, against `stela dev` or API Gateway). Errors are
// core's (core.ErrNotFound, *core.VersionConflictError,
// core.ErrAlreadyFinished, …).
//
// Both also implement core.EagerChildCreator, which eager dispatch uses
// (Options.NoEagerDispatch). A Conn that wraps *store.Service by embedding
// it and overrides AppendBatchCreateNewExecution must override
// AppendBatchCreateNewExecutionLocked too (or the worker set
// NoEagerDispatch): the embedded store's would be called instead.
type Conn = core.WorkerConn

// cancelChild asks a child execution to cancel (an activity, or a
// `-cancellable` workflow), retrying on version conflicts as core's
// cancel_*_with_retries do.
func cancelChild(ctx context.Context, conn Conn, id core.ExecutionId) error {
	var err error
	for i := 0; i <= 5; i++ {
		_, err = conn.Cancel(ctx, id)
		if !errors.Is(err, core.ErrVersionConflict) {
			return err
		}
	}
	return err
}
