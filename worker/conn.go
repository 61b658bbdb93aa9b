package worker

import (
	"context"
	"time"

	"github.com/stela-dev/stela/core"
)

// Conn is what a Worker needs from Stela: the executor half of the store
// contract (core.DbConnection's worker methods, same names and signatures).
// Both transports satisfy it without an adapter: *store.Service (in-process,
// over the embedded store, DynamoDB or store/mem) and *client.Client (HTTP,
// against `stela dev` or API Gateway). Errors are core's (core.ErrNotFound,
// *core.VersionConflictError, core.ErrAlreadyFinished, …).
type Conn interface {
	LockPendingByFFQNs(ctx context.Context, req core.LockRequest, ffqns []core.FunctionFqn) ([]core.LockedExecution, error)
	Append(ctx context.Context, id core.ExecutionId, version core.Version, req core.AppendRequest) (core.Version, error)
	AppendBatch(ctx context.Context, currentTime core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, version core.Version) (core.Version, error)
	AppendBatchCreateNewExecution(ctx context.Context, currentTime core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, version core.Version, children []core.CreateRequest, backtraces []core.BacktraceInfo) (core.Version, error)
	AppendBatchRespondToParent(ctx context.Context, events core.AppendEventsToExecution, resp core.AppendResponseToExecution, currentTime core.Timestamp) (core.Version, error)
	AppendBatchWithDelayResponse(ctx context.Context, currentTime core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, version core.Version, js core.JoinSetId, delay core.DelayId) (core.Version, error)
	AppendDelayResponse(ctx context.Context, createdAt core.Timestamp, id core.ExecutionId, js core.JoinSetId, delay core.DelayId, success bool) (core.AppendDelayResponseOutcome, error)
	AppendActivityCancellationRequested(ctx context.Context, id core.ExecutionId, cancelledAt core.Timestamp) (core.CancelOutcome, error)
	CancelWorkflow(ctx context.Context, id core.ExecutionId, cancelledAt core.Timestamp) (core.CancelOutcome, error)
	Get(ctx context.Context, id core.ExecutionId) (*core.ExecutionLog, error)
	GetPendingState(ctx context.Context, id core.ExecutionId) (core.ExecutionWithState, error)
	SubscribeToNextResponses(ctx context.Context, id core.ExecutionId, lastResponse core.ResponseCursor) ([]core.ResponseWithCursor, error)
	Create(ctx context.Context, req core.CreateRequest) (core.Version, error)
	WaitForFinishedResult(ctx context.Context, id core.ExecutionId) (core.ReturnValue, error)
}

// pendingWaiter is the in-process long-poll capability (core.DbExecutor's
// WaitForPendingByFFQN): the worker locks, and when nothing was pending
// waits for a notification before locking again.
type pendingWaiter interface {
	WaitForPendingByFFQN(ctx context.Context, pendingAtOrSooner core.Timestamp, ffqns []core.FunctionFqn, currentDigest *core.ComponentDigest)
}

// lockWaitSlice bounds one wait of the in-process long poll, so that
// executions that become due by time (a retry's backoff) are found even
// without a notification.
const lockWaitSlice = 250 * time.Millisecond

// lockPending locks up to req.BatchSize executions of ffqns; when none is
// pending it long-polls for up to wait (the request's times are refreshed
// from clock on every attempt, so a lock taken late still gets its full
// lease).
func lockPending(ctx context.Context, conn Conn, clock core.Clock, req func(now core.Timestamp) core.LockRequest, ffqns []core.FunctionFqn, wait time.Duration) ([]core.LockedExecution, error) {
	start := time.Now()
	for {
		locked, err := conn.LockPendingByFFQNs(ctx, req(clock.Now()), ffqns)
		if err != nil || len(locked) > 0 || wait <= 0 {
			return locked, err
		}
		remaining := wait - time.Since(start)
		if remaining <= 0 {
			return locked, nil
		}
		w, ok := conn.(pendingWaiter)
		if !ok {
			// A transport without a wait: poll.
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(min(remaining, lockWaitSlice)):
			}
			continue
		}
		wctx, cancel := context.WithTimeout(ctx, min(remaining, lockWaitSlice))
		w.WaitForPendingByFFQN(wctx, clock.Now(), ffqns, nil)
		cancel()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}
