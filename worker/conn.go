package worker

import (
	"context"
	"errors"
	"time"

	"github.com/stela-dev/stela/client"
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
	Get(ctx context.Context, id core.ExecutionId) (*core.ExecutionLog, error)
	GetPendingState(ctx context.Context, id core.ExecutionId) (core.ExecutionWithState, error)
	SubscribeToNextResponses(ctx context.Context, id core.ExecutionId, lastResponse core.ResponseCursor) ([]core.ResponseWithCursor, error)
	Create(ctx context.Context, req core.CreateRequest) (core.Version, error)
	WaitForFinishedResult(ctx context.Context, id core.ExecutionId) (core.ReturnValue, error)
}

// storeCanceller is the in-process way to cancel a join set's members
// (core.DbConnection's methods; what the cancellation driver uses).
type storeCanceller interface {
	AppendDelayResponse(ctx context.Context, createdAt core.Timestamp, id core.ExecutionId, js core.JoinSetId, delay core.DelayId, success bool) (core.AppendDelayResponseOutcome, error)
	AppendActivityCancellationRequested(ctx context.Context, id core.ExecutionId, cancelledAt core.Timestamp) (core.CancelOutcome, error)
	CancelWorkflow(ctx context.Context, id core.ExecutionId, cancelledAt core.Timestamp) (core.CancelOutcome, error)
}

// apiCanceller is the HTTP way: the public cancel routes (the server picks
// the activity or workflow cancellation by the execution's type).
type apiCanceller interface {
	Cancel(ctx context.Context, id core.ExecutionId) (core.CancelOutcome, error)
	CancelDelay(ctx context.Context, delay core.DelayId) (core.DelayCancelOutcome, error)
}

// cancelChild asks a child execution to cancel (an activity, or a
// `-cancellable` workflow), retrying on version conflicts as core's
// cancel_*_with_retries do.
func cancelChild(ctx context.Context, conn Conn, id core.ExecutionId, activity bool, now core.Timestamp) error {
	var err error
	for i := 0; i <= 5; i++ {
		switch c := conn.(type) {
		case storeCanceller:
			if activity {
				_, err = c.AppendActivityCancellationRequested(ctx, id, now)
			} else {
				_, err = c.CancelWorkflow(ctx, id, now)
			}
		case apiCanceller:
			_, err = c.Cancel(ctx, id)
		default:
			return nil // the transport cannot cancel: the member is awaited
		}
		if !errors.Is(err, core.ErrVersionConflict) {
			return err
		}
	}
	return err
}

// cancelDelay records a delay's cancellation (DelayFinished with Err).
func cancelDelay(ctx context.Context, conn Conn, owner core.ExecutionId, js core.JoinSetId, delay core.DelayId, now core.Timestamp) error {
	switch c := conn.(type) {
	case storeCanceller:
		_, err := c.AppendDelayResponse(ctx, now, owner, js, delay, false)
		return err
	case apiCanceller:
		_, err := c.CancelDelay(ctx, delay)
		return err
	}
	return nil
}

// historyReader reads the part of a history a worker lacks (a Stela
// extension of the store contract). With it, locks skip the history
// (core.LockRequest.SkipHistory) and workflows read only their delta.
type historyReader interface {
	ReadHistory(ctx context.Context, id core.ExecutionId, fromVersion core.Version, afterCursor core.ResponseCursor) (core.HistoryDelta, error)
}

// longPoller is the HTTP long-poll capability: the server waits for
// pending executions and locks them (client.Client.LockPendingWait).
type longPoller interface {
	LockPendingWait(ctx context.Context, req core.LockRequest, sel client.LockSelector, wait time.Duration) ([]core.LockedExecution, error)
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
//
// A lock the store granted must be run or released, never dropped: the
// lock calls therefore run under a context of their own, bounded by the
// lease they ask for (wait + lease), not under stop. stop only ends the
// waits between calls: in-process the worker stops waiting at once; over
// HTTP the long poll is one request (the server waits and locks), so it is
// let return, and the caller releases what it locked if it is stopping.
func lockPending(stop context.Context, conn Conn, clock core.Clock, req func(now core.Timestamp) core.LockRequest, ffqns []core.FunctionFqn, wait, lease time.Duration) ([]core.LockedExecution, error) {
	ctx, cancel := context.WithTimeout(context.Background(), wait+lease)
	defer cancel()
	if lp, ok := conn.(longPoller); ok && wait > 0 {
		// The server stamps the lock and selects what is due when it locks
		// (zero times); the lease covers the wait.
		r := req(clock.Now())
		r.CreatedAt, r.PendingAtOrSooner = core.Timestamp{}, core.Timestamp{}
		r.LockExpiresAt = r.LockExpiresAt.Add(wait)
		return lp.LockPendingWait(ctx, r, client.ByFFQNs(ffqns...), wait)
	}
	start := time.Now()
	for {
		locked, err := conn.LockPendingByFFQNs(ctx, req(clock.Now()), ffqns)
		if err != nil || len(locked) > 0 || wait <= 0 {
			return locked, err
		}
		remaining := wait - time.Since(start)
		if remaining <= 0 || stop.Err() != nil {
			return locked, nil
		}
		w, ok := conn.(pendingWaiter)
		if !ok {
			// A transport without a wait: poll.
			select {
			case <-stop.Done():
				return nil, nil
			case <-time.After(min(remaining, lockWaitSlice)):
			}
			continue
		}
		wctx, cancel := context.WithTimeout(stop, min(remaining, lockWaitSlice))
		w.WaitForPendingByFFQN(wctx, clock.Now(), ffqns, nil)
		cancel()
		if stop.Err() != nil {
			return nil, nil
		}
	}
}
