package core

import (
	"context"
	"time"
)

// WorkerConn is what a worker needs of Stela: the one executor contract of
// the SDK. Both transports implement all of it, with the same semantics and
// core's errors (ErrNotFound, *VersionConflictError, ErrAlreadyFinished,
// …): *store.Service in-process (over the embedded store, DynamoDB or
// store/mem) and *client.Client over HTTP (against `stela dev` or API
// Gateway). It is defined here, beside the store's ports, because both
// implementations stand below the worker (the store imports no SDK, the
// client no worker) and name it to check themselves against it; package
// worker takes it as worker.Conn.
//
// The methods that share a name with DbConnection's have its semantics.
// The others are the worker's own needs, which each transport serves its
// way (a long poll, the cancel routes, the deployment's components).
type WorkerConn interface {
	// LockPending locks up to req.BatchSize pending executions of ffqns,
	// as LockPendingByFFQNs does with req; when none is pending it waits up
	// to wait (0: not at all) for one to become pending or due, and locks
	// again with req stamped at that moment (created_at and
	// pending_at_or_sooner then, lock_expires_at as far after it as req
	// asked). An empty result is not an error.
	//
	// ctx ends the wait, never a lock: a request that may lock is let
	// finish (bounded by the lease) and what it locked is returned, even
	// when ctx ended meanwhile, so that the caller runs or releases it.
	LockPending(ctx context.Context, req LockRequest, ffqns []FunctionFqn, wait time.Duration) ([]LockedExecution, error)
	Append(ctx context.Context, id ExecutionId, version Version, req AppendRequest) (Version, error)
	AppendBatch(ctx context.Context, currentTime Timestamp, batch []AppendRequest, id ExecutionId, version Version) (Version, error)
	AppendBatchCreateNewExecution(ctx context.Context, currentTime Timestamp, batch []AppendRequest, id ExecutionId, version Version, children []CreateRequest, backtraces []BacktraceInfo) (Version, error)
	AppendBatchRespondToParent(ctx context.Context, events AppendEventsToExecution, resp AppendResponseToExecution, currentTime Timestamp) (Version, error)
	AppendBatchWithDelayResponse(ctx context.Context, currentTime Timestamp, batch []AppendRequest, id ExecutionId, version Version, js JoinSetId, delay DelayId) (Version, error)
	Create(ctx context.Context, req CreateRequest) (Version, error)
	Get(ctx context.Context, id ExecutionId) (*ExecutionLog, error)
	GetPendingState(ctx context.Context, id ExecutionId) (ExecutionWithState, error)
	ReadHistory(ctx context.Context, id ExecutionId, fromVersion Version, afterCursor ResponseCursor) (HistoryDelta, error)
	SubscribeToNextResponses(ctx context.Context, id ExecutionId, lastResponse ResponseCursor) ([]ResponseWithCursor, error)
	WaitForFinishedResult(ctx context.Context, id ExecutionId) (ReturnValue, error)
	// Cancel requests cancellation of an activity or a `-cancellable`
	// workflow, by its stored type, at the store's time (CancelExecution):
	// CancelRequested, or CancelAlreadyFinished / CancelAlreadyCancelling
	// (not errors). Another type is an *IllegalStateError.
	Cancel(ctx context.Context, id ExecutionId) (CancelOutcome, error)
	// CancelDelay records a delay's cancellation at the store's time
	// (CancelDelay), idempotently: DelayCancelled, or DelayAlreadyFinished
	// when it already fired.
	CancelDelay(ctx context.Context, delay DelayId) (DelayCancelOutcome, error)
	// FunctionComponent returns the component of the current deployment
	// that exports ffqn (not as an extension function) and that deployment;
	// ErrNotFound when there is no deployment or none exports it.
	FunctionComponent(ctx context.Context, ffqn FunctionFqn) (ComponentId, DeploymentId, error)
	// AppendLogBatch stores execution log rows (the SDK's execution
	// logger, worker.Logger); fire-and-forget.
	AppendLogBatch(ctx context.Context, rows []LogInfoAppendRow) error
	// RegisterDeployment records the worker's components as a deployment,
	// idempotently, at the store's time (RegisterWorkerDeployment), and
	// returns the deployment the worker belongs to.
	RegisterDeployment(ctx context.Context, wd WorkerDeployment) (DeploymentId, error)
}

// CancelExecution requests cancellation of id at at, by its stored type:
// an activity (CancelActivityWithRetries) or a workflow
// (CancelWorkflowWithRetries, which refuses one that is not
// `-cancellable`); another type is an *IllegalStateError.
func CancelExecution(ctx context.Context, db DbConnection, id ExecutionId, at Timestamp) (CancelOutcome, error) {
	cr, err := db.GetCreateRequest(ctx, id)
	if err != nil {
		return 0, err
	}
	switch t := cr.ComponentID.ComponentType; {
	case t.IsActivity():
		return CancelActivityWithRetries(ctx, db, id, at)
	case t == ComponentTypeWorkflow:
		return CancelWorkflowWithRetries(ctx, db, id, at)
	}
	return 0, &IllegalStateError{Reason: "cancelled execution must be an activity or cancellable workflow"}
}

// FunctionComponent finds the component of the current deployment of ds
// that exports ffqn, not as an extension function (WorkerConn's method).
func FunctionComponent(ctx context.Context, ds DeploymentStore, ffqn FunctionFqn) (ComponentId, DeploymentId, error) {
	dep, err := ds.GetCurrentDeployment(ctx)
	if err != nil {
		return ComponentId{}, DeploymentId{}, err
	}
	comps, err := ds.ListDeploymentComponents(ctx, dep.DeploymentID)
	if err != nil {
		return ComponentId{}, DeploymentId{}, err
	}
	for _, comp := range comps {
		for _, e := range comp.Exports {
			if e.FFQN == ffqn && e.Extension == nil {
				return comp.ComponentID, dep.DeploymentID, nil
			}
		}
	}
	return ComponentId{}, DeploymentId{}, ErrNotFound
}

// DelayFireOutcome is what DelayFirer.FireDelay did.
type DelayFireOutcome uint8

// Delay fire outcomes.
const (
	// DelayFired: the delay was due and unpaused at the store's time, and
	// its DelayFinished(Ok) response is now recorded (as the timers sweep
	// records it).
	DelayFired DelayFireOutcome = iota + 1
	// DelayFireAnswered: the delay already had its response (fired by a
	// sweep or an earlier call, or cancelled); nothing was written.
	DelayFireAnswered
	// DelayFireNotDue: the delay's expiry is after the store's time, or the
	// delay is paused; nothing was written, the sweep fires it when due.
	DelayFireNotDue
	// DelayFireCancelled (DelayFireAppender only): the delay's response is
	// a cancellation (DelayFinished(Err)); nothing was written.
	DelayFireCancelled
)

// String is the outcome's wire name: "fired", "answered", "not_due",
// "cancelled".
func (o DelayFireOutcome) String() string {
	switch o {
	case DelayFired:
		return "fired"
	case DelayFireAnswered:
		return "answered"
	case DelayFireNotDue:
		return "not_due"
	case DelayFireCancelled:
		return "cancelled"
	}
	return "unknown"
}

// ParseDelayFireOutcome is the inverse of DelayFireOutcome.String.
func ParseDelayFireOutcome(s string) (DelayFireOutcome, bool) {
	for _, o := range []DelayFireOutcome{DelayFired, DelayFireAnswered, DelayFireNotDue, DelayFireCancelled} {
		if o.String() == s {
			return o, true
		}
	}
	return 0, false
}

// DelayFirer is implemented by connections that fire a due delay on
// request (store.Service; client.Client against a server that knows POST
// /v1/worker/delays/{delay_id}/fire). A worker awaiting a sleep in memory
// calls it at the delay's expiry instead of waiting for the timers sweep,
// so the sleep ends at its deadline whatever the sweep's period (on AWS a
// scheduled sweep runs once a minute). The store decides with its own
// clock: a delay not yet due there, or paused, is left to the sweep.
type DelayFirer interface {
	// FireDelay records delay's DelayFinished(Ok) response at the store's
	// time when its timer is due and unpaused, in one commit, exactly as
	// the sweep's AppendDelayResponse would; ErrNotFound when neither the
	// delay's timer nor its response exists.
	FireDelay(ctx context.Context, delay DelayId) (DelayFireAnswer, error)
}

// DelayFireAnswer is what DelayFirer.FireDelay did: its outcome and, when
// it fired the delay, the DelayFinished response it recorded — its time
// (the store's clock) and its cursor among the owner's responses, 0 when
// the store does not tell. With both, the response is known in full
// (DelayFinished{DelayID, Ok} in the delay's join set, created at FiredAt),
// and the worker awaiting it needs no request to read it.
type DelayFireAnswer struct {
	Outcome DelayFireOutcome
	FiredAt Timestamp
	Cursor  ResponseCursor
}

// DelayFireAppender is implemented by connections that fire a due delay and
// append the events that follow its response in one commit (store.Service;
// client.Client against a server that knows POST
// /v1/worker/append-batch/fire-delay). A run that awaited a sleep in memory
// goes on at the expiry as if the delay had fired, and its next write
// carries the fire: one commit instead of the fire's and then the next
// write's (fire-and-continue).
type DelayFireAppender interface {
	// AppendBatchFiringDelay fires delay, a delay of id, as
	// DelayFirer.FireDelay does (at the store's time, when due and
	// unpaused), and appends batch at version in the same commit. The
	// outcome tells what was written:
	//   - DelayFired: the DelayFinished(Ok) response (FiredAt, Cursor) and
	//     the batch (NextVersion);
	//   - DelayFireAnswered: the delay had fired already (a sweep, or the
	//     first attempt of a retried call); the batch alone;
	//   - DelayFireNotDue: nothing (not due at the store's time, or paused);
	//   - DelayFireCancelled: nothing (the delay was cancelled: the run's
	//     assumption that it fired is wrong).
	// A batch the store refuses (a version conflict, an illegal event) is
	// the error AppendBatch would return, and nothing is written either;
	// ErrNotFound when neither the delay's timer nor its response exists.
	// The batch may not hold a JoinNext of the delay's join set (the
	// JoinNext awaiting the delay is written before it fires): a
	// ValidationError.
	AppendBatchFiringDelay(ctx context.Context, currentTime Timestamp, batch []AppendRequest, id ExecutionId, version Version, delay DelayId) (FireAppendAnswer, error)
}

// FireAppendAnswer is what DelayFireAppender.AppendBatchFiringDelay did:
// the fire's outcome and, when the batch was appended (DelayFired,
// DelayFireAnswered), the version after it.
type FireAppendAnswer struct {
	DelayFireAnswer
	NextVersion Version
}
