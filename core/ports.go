package core

import (
	"context"
	"errors"
	"fmt"
)

// DbExecutor is what executors need: locking, appending, cancellation
// (seed trait DbExecutor). Implementations are safe for concurrent use. Every
// method is one all-or-nothing transaction unless stated otherwise. Errors wrap
// the sentinels of errors.go.
type DbExecutor interface {
	// LockPendingByFFQNs locks up to req.BatchSize executions that are PendingAt,
	// active, with scheduled_at <= req.PendingAtOrSooner, iterating ffqns in
	// order and each by scheduled_at ascending. Executions lost to a concurrent
	// locker are skipped; only successfully locked executions are returned, in
	// selection order. Nothing pending → empty slice, no error. A request
	// failing req.ValidateExpiry is rejected first, whether or not anything
	// is pending (the other LockPending methods too).
	LockPendingByFFQNs(ctx context.Context, req LockRequest, ffqns []FunctionFqn) ([]LockedExecution, error)
	// LockPendingByFFQNsAuto is LockPendingByFFQNs for auto-upgrading workflows:
	// it skips executions whose incompatible digest is req's digest and does not
	// move the execution to req's component/deployment (docs/spec/semantics.md §4.2.2).
	LockPendingByFFQNsAuto(ctx context.Context, req LockRequest, ffqns []FunctionFqn) ([]LockedExecution, error)
	// LockPendingByComponentDigest locks pending executions whose current digest
	// is req.ComponentID.ComponentDigest (docs/spec/semantics.md §4.2.3).
	LockPendingByComponentDigest(ctx context.Context, req LockRequest) ([]LockedExecution, error)
	// LockOne locks one execution at version (lock path §3.5). Errors:
	// ErrNotFound, *ValidationError ("invalid expiry date", "cannot lock, not yet
	// pending"), *IllegalStateError, *VersionConflictError.
	LockOne(ctx context.Context, req LockRequest, id ExecutionId, version Version) (LockedExecution, error)
	// Append appends one event at version and returns the next version (the
	// Finished event's own version for Finished). Errors: ErrNotFound,
	// ErrAlreadyFinished, *VersionConflictError, *IllegalStateError,
	// *ValidationError, *UnlockedCannotBeAppendedError, ErrConflict.
	Append(ctx context.Context, id ExecutionId, version Version, req AppendRequest) (Version, error)
	// AppendBatchRespondToParent appends a batch to a child and, atomically, the
	// ChildExecutionFinished response to its parent (which may unblock it).
	// Errors: those of Append, plus ErrConflict if the parent already has a
	// response for this child.
	AppendBatchRespondToParent(ctx context.Context, events AppendEventsToExecution, resp AppendResponseToExecution, currentTime Timestamp) (Version, error)
	// WaitForPendingByFFQN returns as soon as an execution of ffqns is pending at
	// pendingAtOrSooner (honouring the auto filter when currentDigest is set), a
	// pending notification arrives, or ctx is done. Best effort, no error.
	WaitForPendingByFFQN(ctx context.Context, pendingAtOrSooner Timestamp, ffqns []FunctionFqn, currentDigest *ComponentDigest)
	// WaitForPendingByComponentDigest is WaitForPendingByFFQN by current digest.
	WaitForPendingByComponentDigest(ctx context.Context, pendingAtOrSooner Timestamp, digest ComponentDigest)
	// CancelWorkflow requests cancellation of a `-cancellable` workflow
	// (docs/spec/semantics.md §4.2.8). Errors: ErrNotFound, *IllegalStateError, *VersionConflictError.
	CancelWorkflow(ctx context.Context, id ExecutionId, cancelledAt Timestamp) (CancelOutcome, error)
	// AppendActivityCancellationRequested requests cancellation of an activity.
	AppendActivityCancellationRequested(ctx context.Context, id ExecutionId, cancelledAt Timestamp) (CancelOutcome, error)
	// GetLastExecutionEvent returns the highest-version event; ErrNotFound.
	GetLastExecutionEvent(ctx context.Context, id ExecutionId) (ExecutionEvent, error)
}

// DbConnection extends DbExecutor with reads, creation, responses and waits
// (seed trait DbConnection).
type DbConnection interface {
	DbExecutor
	// Get returns the whole log; ErrNotFound.
	Get(ctx context.Context, id ExecutionId) (*ExecutionLog, error)
	// GetCancelling returns up to batchSize cancelling executions, oldest first.
	GetCancelling(ctx context.Context, batchSize uint32) ([]ExecutionId, error)
	// AppendDelayResponse records DelayFinished (success = fired, else
	// cancelled); a second response for the same delay yields AlreadyFinished /
	// AlreadyCancelled per the stored one. ErrNotFound for an unknown execution.
	AppendDelayResponse(ctx context.Context, createdAt Timestamp, id ExecutionId, js JoinSetId, delay DelayId, success bool) (AppendDelayResponseOutcome, error)
	// AppendBatch appends a non-empty batch; errors as Append.
	AppendBatch(ctx context.Context, currentTime Timestamp, batch []AppendRequest, id ExecutionId, version Version) (Version, error)
	// AppendBatchWithDelayResponse appends a batch and the already-due delay's
	// DelayFinished(Ok) response (created_at = currentTime) atomically.
	AppendBatchWithDelayResponse(ctx context.Context, currentTime Timestamp, batch []AppendRequest, id ExecutionId, version Version, js JoinSetId, delay DelayId) (Version, error)
	// AppendBatchCreateNewExecution appends a batch and creates children
	// atomically (ErrConflict if a child exists); backtraces are then written
	// best-effort.
	AppendBatchCreateNewExecution(ctx context.Context, currentTime Timestamp, batch []AppendRequest, id ExecutionId, version Version, children []CreateRequest, backtraces []BacktraceInfo) (Version, error)
	// GetExecutionEvent returns the event at version; ErrNotFound.
	GetExecutionEvent(ctx context.Context, id ExecutionId, version Version) (ExecutionEvent, error)
	// UpsertStubResponse finishes a stub child at version and responds to its
	// parent, idempotently: an equal return value already stored succeeds
	// without writing; a different one is ErrStubConflict.
	UpsertStubResponse(ctx context.Context, id ExecutionIdDerived, version Version, req AppendRequest, resp AppendResponseToExecution, currentTime Timestamp) error
	// GetCreateRequest rebuilds the CreateRequest from version 0 (Paused false).
	GetCreateRequest(ctx context.Context, id ExecutionId) (CreateRequest, error)
	// GetPendingState returns the summary; ErrNotFound.
	GetPendingState(ctx context.Context, id ExecutionId) (ExecutionWithState, error)
	// GetExpiredTimers returns due unpaused delays, then expired active locks.
	GetExpiredTimers(ctx context.Context, at Timestamp) ([]ExpiredTimer, error)
	// Create creates an execution and returns the next version (1, or 2 when
	// paused). ErrConflict if the id exists.
	Create(ctx context.Context, req CreateRequest) (Version, error)
	// SubscribeToNextResponses returns the responses after lastResponse, waiting
	// until one arrives or ctx is done (then an error wrapping ErrTimeout).
	// An unknown execution is not an error: it waits.
	SubscribeToNextResponses(ctx context.Context, id ExecutionId, lastResponse ResponseCursor) ([]ResponseWithCursor, error)
	// WaitForFinishedResult returns the return value once finished; ErrNotFound
	// for an unknown execution; an error wrapping ErrTimeout when ctx is done.
	WaitForFinishedResult(ctx context.Context, id ExecutionId) (ReturnValue, error)
	// AppendBacktrace stores a backtrace; fire-and-forget (always nil).
	AppendBacktrace(ctx context.Context, bt BacktraceInfo) error
	// AppendBacktraceBatch stores backtraces and returns how many mappings were new.
	AppendBacktraceBatch(ctx context.Context, batch []BacktraceInfo) (int, error)
	// AppendLog stores a log row; fire-and-forget.
	AppendLog(ctx context.Context, row LogInfoAppendRow) error
	// AppendLogBatch stores log rows; fire-and-forget.
	AppendLogBatch(ctx context.Context, rows []LogInfoAppendRow) error
	// ReadHistory (a Stela extension) returns, in one consistent read, the
	// history events with version >= fromVersion, the responses with cursor >
	// afterCursor and the next version; ErrNotFound. Workers that lock with
	// LockRequest.SkipHistory read only what they lack with it.
	ReadHistory(ctx context.Context, id ExecutionId, fromVersion Version, afterCursor ResponseCursor) (HistoryDelta, error)
}

// DeploymentStore holds deployments and component metadata (part of DbExternalApi).
type DeploymentStore interface {
	UpsertComponentMetadata(ctx context.Context, records []ComponentMetadataRecord) error
	InsertDeploymentComponents(ctx context.Context, dep DeploymentId, records []DeploymentComponentRecord) error
	ListDeploymentComponents(ctx context.Context, dep DeploymentId) ([]DeploymentComponentDetail, error)
	// GetDeploymentComponentWit returns ErrNotFound when absent.
	GetDeploymentComponentWit(ctx context.Context, dep DeploymentId, digest ComponentDigest) (string, error)
	ListDeploymentStates(ctx context.Context, currentTime Timestamp, p Pagination[*DeploymentId], includeToml bool, counts DeploymentExecutionCounts) ([]DeploymentState, error)
	InsertDeploymentWithComponents(ctx context.Context, record DeploymentRecord, metadata []ComponentMetadataRecord, components []DeploymentComponentRecord, files []DeploymentComponentFileRecord) error
	MissingDigests(ctx context.Context, dep DeploymentId) ([]ContentDigest, error)
	ListDeploymentFiles(ctx context.Context, dep DeploymentId) ([]DeploymentFileRecord, error)
	GCOrphanFiles(ctx context.Context) (uint64, error)
	ActivateDeployment(ctx context.Context, dep DeploymentId, now Timestamp) error
	EnqueueDeployment(ctx context.Context, dep DeploymentId) (EnqueueOutcome, error)
	// GetDeployment returns ErrNotFound when absent.
	GetDeployment(ctx context.Context, dep DeploymentId) (DeploymentRecord, error)
	// GetActiveDeployment returns ErrNotFound when none is active.
	GetActiveDeployment(ctx context.Context) (DeploymentRecord, error)
	// GetCurrentDeployment returns the enqueued one, else the active one, else ErrNotFound.
	GetCurrentDeployment(ctx context.Context) (DeploymentRecord, error)
	ListDeployments(ctx context.Context, p Pagination[*DeploymentId]) ([]DeploymentRecord, error)
	// UpsertSourceMapping maps a backtrace source file to a CAS blob (replace semantics).
	UpsertSourceMapping(ctx context.Context, component ComponentDigest, frameKey string, isSuffix bool, digest ContentDigest) error
	// ResolveSourceDigest returns ErrNotFound when no mapping or more than one matches.
	ResolveSourceDigest(ctx context.Context, component ComponentDigest, file string) (ContentDigest, error)
}

// DbExternalApi is everything the public API needs (seed trait DbExternalApi).
type DbExternalApi interface {
	DbConnection
	DeploymentStore
	// GetBacktrace returns ErrNotFound when none matches.
	GetBacktrace(ctx context.Context, id ExecutionId, filter BacktraceFilter) (BacktraceInfo, error)
	// ListExecutions returns a page of executions, newest first in the
	// pagination's order (ExecutionListPagination.Compare).
	ListExecutions(ctx context.Context, filter ListExecutionsFilter, p ExecutionListPagination) ([]ExecutionWithState, error)
	// ListExecutionEvents returns a page of events, always ascending; ErrNotFound.
	ListExecutionEvents(ctx context.Context, id ExecutionId, p Pagination[Version], includeBacktraceID bool) (ListExecutionEventsResponse, error)
	// ListResponses returns a page of responses, always ascending, optionally
	// filtered by join set after the window is cut; unknown executions yield an empty page.
	ListResponses(ctx context.Context, id ExecutionId, p Pagination[ResponseCursor], js *JoinSetId) (ListResponsesResponse, error)
	// ListExecutionEventsResponses reads state, events and responses consistently; ErrNotFound.
	ListExecutionEventsResponses(ctx context.Context, id ExecutionId, since Version, maxLength uint16, includeBacktraceID bool, respPagination Pagination[ResponseCursor]) (ExecutionWithStateRequestsResponses, error)
	// UpgradeExecutionComponent appends ComponentUpgradeFinished (docs/spec/semantics.md §6.4).
	UpgradeExecutionComponent(ctx context.Context, id ExecutionId, old, new ComponentDigest, reason ComponentUpgradeReason) error
	// ListLogs returns a page of logs in scan order.
	ListLogs(ctx context.Context, id ExecutionId, showDerived bool, filter LogFilter, p Pagination[LogCursor]) (ListLogsResponse, error)
	// PauseExecution pauses (docs/spec/semantics.md §6.1) and returns the next version.
	PauseExecution(ctx context.Context, id ExecutionId, pausedAt Timestamp) (Version, error)
	// UnpauseExecution unpauses and returns the next version.
	UnpauseExecution(ctx context.Context, id ExecutionId, unpausedAt Timestamp) (Version, error)
	// PauseDelay pauses a timer; ErrNotFound if it already fired or was cancelled.
	PauseDelay(ctx context.Context, delay DelayId) error
	// UnpauseDelay unpauses a timer; ErrNotFound if it already fired or was cancelled.
	UnpauseDelay(ctx context.Context, delay DelayId) error
}

// ResponseAppender is the test back door DbConnectionTest::append_response:
// it appends a raw response (docs/spec/semantics.md §3.12).
type ResponseAppender interface {
	AppendResponse(ctx context.Context, createdAt Timestamp, id ExecutionId, resp JoinSetResponseEvent) error
}

// Cas is the content-addressed blob store (docs/spec/semantics.md §4.5).
type Cas interface {
	// WriteBlob stores data if absent and returns its digest (idempotent).
	WriteBlob(ctx context.Context, data []byte) (ContentDigest, error)
	// ReadBlob returns the bytes; ErrNotFound when absent. The digest is verified.
	ReadBlob(ctx context.Context, digest ContentDigest) ([]byte, error)
	// ContainsBlob reports whether the blob exists.
	ContainsBlob(ctx context.Context, digest ContentDigest) (bool, error)
}

const cancelRetries = 5

// CancelActivityWithRetries retries AppendActivityCancellationRequested up to
// 5 extra times on a version conflict.
func CancelActivityWithRetries(ctx context.Context, db DbExecutor, id ExecutionId, at Timestamp) (CancelOutcome, error) {
	for i := 0; ; i++ {
		out, err := db.AppendActivityCancellationRequested(ctx, id, at)
		if err != nil && i < cancelRetries && isVersionConflict(err) {
			continue
		}
		return out, err
	}
}

// CancelWorkflowWithRetries retries CancelWorkflow up to 5 extra times on a version conflict.
func CancelWorkflowWithRetries(ctx context.Context, db DbExecutor, id ExecutionId, at Timestamp) (CancelOutcome, error) {
	for i := 0; ; i++ {
		out, err := db.CancelWorkflow(ctx, id, at)
		if err != nil && i < cancelRetries && isVersionConflict(err) {
			continue
		}
		return out, err
	}
}

func isVersionConflict(err error) bool {
	var vc *VersionConflictError
	return asErr(err, &vc)
}

// CancelDelay records a cancelled delay's response (seed cancel_delay);
// idempotent: a second cancel reports Cancelled, a fired delay AlreadyFinished.
func CancelDelay(ctx context.Context, db DbConnection, delay DelayId, at Timestamp) (DelayCancelOutcome, error) {
	owner, js := delay.SplitToParts()
	out, err := db.AppendDelayResponse(ctx, at, owner, js, delay, false)
	if err != nil {
		return 0, err
	}
	if out == DelayResponseAlreadyFinished {
		return DelayAlreadyFinished, nil
	}
	return DelayCancelled, nil
}

// StubExecution gives a stub child its return value (seed stub_execution):
// Finished at version 1 plus the parent's response; ErrStubConflict maps to ErrConflict.
func StubExecution(ctx context.Context, db DbConnection, id ExecutionIdDerived, parent ExecutionId, js JoinSetId, at Timestamp, retval ReturnValue) error {
	err := db.UpsertStubResponse(ctx, id, 1,
		AppendRequest{CreatedAt: at, Event: &Finished{Retval: retval}},
		AppendResponseToExecution{ParentExecutionID: parent, CreatedAt: at, JoinSetID: js,
			ChildExecutionID: id, FinishedVersion: 1, Result: retval}, at)
	if errors.Is(err, ErrStubConflict) {
		return fmt.Errorf("%w: %w", ErrConflict, err)
	}
	return err
}
