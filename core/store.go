package core

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
)

// Clock tells the time. Stores and sweeps take it by injection so tests can
// use a simulated clock; core itself never reads the wall clock.
type Clock interface {
	Now() Timestamp
}

// --- read models --------------------------------------------------------------

// ExecutionLog is a read-consistent snapshot of one execution (docs/spec/semantics.md §4.3.1).
type ExecutionLog struct {
	ExecutionID ExecutionId
	// Events are all events in version order (BacktraceID nil).
	Events []ExecutionEvent
	// Responses are all responses in cursor order.
	Responses []ResponseWithCursor
	// NextVersion is not advanced once finished.
	NextVersion     Version
	PendingState    PendingState
	ComponentDigest ComponentDigest
	ComponentType   ComponentType
	DeploymentID    DeploymentId
}

// Created returns version 0.
func (l *ExecutionLog) Created() *Created {
	if len(l.Events) == 0 {
		return nil
	}
	c, _ := l.Events[0].Event.(*Created)
	return c
}

// LastEvent returns the last event.
func (l *ExecutionLog) LastEvent() ExecutionEvent { return l.Events[len(l.Events)-1] }

// FinishedResult returns the return value if the last event is Finished.
func (l *ExecutionLog) FinishedResult() (ReturnValue, bool) {
	if len(l.Events) == 0 {
		return ReturnValue{}, false
	}
	if f, ok := l.LastEvent().Event.(*Finished); ok {
		return f.Retval, true
	}
	return ReturnValue{}, false
}

// HistoryEventWithVersion is a history event and the version it was appended at.
type HistoryEventWithVersion struct {
	Event   HistoryEvent
	Version Version
}

// EventHistory returns the history events with their versions.
func (l *ExecutionLog) EventHistory() []HistoryEventWithVersion {
	return EventHistoryOf(l.Events)
}

// EventHistoryOf extracts the history events of a log.
func EventHistoryOf(events []ExecutionEvent) []HistoryEventWithVersion {
	var out []HistoryEventWithVersion
	for _, e := range events {
		if h, ok := e.Event.(*HistoryEventRequest); ok {
			out = append(out, HistoryEventWithVersion{Event: h.Event, Version: e.Version})
		}
	}
	return out
}

// ExecutionWithState is the summary of an execution (get_pending_state, list_executions).
type ExecutionWithState struct {
	ExecutionID      ExecutionId     `json:"execution_id"`
	FFQN             FunctionFqn     `json:"ffqn"`
	PendingState     PendingState    `json:"pending_state"`
	CreatedAt        Timestamp       `json:"created_at"`
	FirstScheduledAt Timestamp       `json:"first_scheduled_at"`
	ComponentDigest  ComponentDigest `json:"component_digest"`
	ComponentType    ComponentType   `json:"component_type"`
	DeploymentID     DeploymentId    `json:"deployment_id"`
}

// WithState summarises s.
func (s *ExecutionState) WithState() ExecutionWithState {
	return ExecutionWithState{
		ExecutionID: s.ExecutionID, FFQN: s.FFQN, PendingState: s.PendingState(), CreatedAt: s.CreatedAt,
		FirstScheduledAt: s.FirstScheduledAt, ComponentDigest: s.ComponentDigest,
		ComponentType: s.ComponentType, DeploymentID: s.DeploymentID,
	}
}

// LockedExecution is what a successful lock hands to a worker (docs/spec/semantics.md §3.5 step 6).
type LockedExecution struct {
	ExecutionID ExecutionId
	// NextVersion is the version to append at next.
	NextVersion Version
	Metadata    ExecutionMetadata
	// ComponentDigest is the lock's digest, or for auto-locking the execution's current digest.
	ComponentDigest        ComponentDigest
	LockedEvent            Locked
	FFQN                   FunctionFqn
	Params                 Params
	EventHistory           []HistoryEventWithVersion
	Responses              []ResponseWithCursor
	Parent                 *Parent
	IntermittentEventCount uint32
}

// HistoryDelta is the part of an execution's history a worker lacks:
// what ReadHistory(id, fromVersion, afterCursor) returns, read consistently.
type HistoryDelta struct {
	// Events are the history events with version >= fromVersion, ascending.
	Events []HistoryEventWithVersion
	// Responses are the responses with cursor > afterCursor, ascending.
	Responses []ResponseWithCursor
	// NextVersion is the execution's next version (not advanced once finished).
	NextVersion Version
}

// LockRequest carries the parameters shared by every lock method.
type LockRequest struct {
	// BatchSize bounds the number of executions locked (lock_pending_* only).
	BatchSize uint32
	// PendingAtOrSooner selects executions scheduled at or before it (inclusive).
	PendingAtOrSooner Timestamp
	CreatedAt         Timestamp
	ComponentID       ComponentId
	DeploymentID      DeploymentId
	ExecutorID        ExecutorId
	RunID             RunId
	LockExpiresAt     Timestamp
	RetryConfig       ComponentRetryConfig
	// SkipHistory, when true, leaves LockedExecution.EventHistory and
	// Responses empty; everything else is filled. A worker that keeps the
	// history it has seen asks for what it lacks with ReadHistory instead of
	// receiving the whole history with every lock.
	SkipHistory bool
}

// ValidateExpiry rejects a request whose lock would expire at or before its
// own created_at: ValidationError "invalid expiry date", the first check of
// the lock path (docs/spec/semantics.md §3.5). Every lock method makes it before reading
// candidates, so a worker whose clock lags gets the error rather than an
// empty batch while executions stay pending.
func (r *LockRequest) ValidateExpiry() error {
	return checkLockExpiry(r.CreatedAt, r.LockExpiresAt)
}

// LockedEvent returns the Locked event the request appends.
func (r *LockRequest) LockedEvent() *Locked {
	return &Locked{ComponentID: r.ComponentID, ExecutorID: r.ExecutorID, DeploymentID: r.DeploymentID,
		RunID: r.RunID, LockExpiresAt: r.LockExpiresAt, RetryConfig: r.RetryConfig}
}

// --- pagination -----------------------------------------------------------------

// Direction of a page.
type Direction uint8

// Directions.
const (
	// NewerThan selects keys > cursor (>= if inclusive), scanned ascending.
	NewerThan Direction = iota + 1
	// OlderThan selects keys < cursor (<= if inclusive), scanned descending.
	OlderThan
)

// Pagination is the seed's Pagination<T>. Length must be non-zero.
type Pagination[T any] struct {
	Direction       Direction
	Length          uint16
	Cursor          T
	IncludingCursor bool
}

// Validate rejects a zero length or an unknown direction.
func (p Pagination[T]) Validate() error {
	if p.Length == 0 {
		return invalid("pagination length must be non-zero")
	}
	if p.Direction != NewerThan && p.Direction != OlderThan {
		return invalid("invalid pagination direction")
	}
	return nil
}

// IsDesc reports whether the scan is descending (OlderThan).
func (p Pagination[T]) IsDesc() bool { return p.Direction == OlderThan }

// Invert flips the direction and negates IncludingCursor.
func (p Pagination[T]) Invert() Pagination[T] {
	q := p
	if p.Direction == NewerThan {
		q.Direction = OlderThan
	} else {
		q.Direction = NewerThan
	}
	q.IncludingCursor = !p.IncludingCursor
	return q
}

// Rel returns the SQL relation: >, >=, < or <=.
func (p Pagination[T]) Rel() string {
	switch {
	case p.Direction == NewerThan && !p.IncludingCursor:
		return ">"
	case p.Direction == NewerThan:
		return ">="
	case !p.IncludingCursor:
		return "<"
	}
	return "<="
}

// Accepts reports whether key passes the cursor condition, given cmp(key, cursor).
func (p Pagination[T]) Accepts(cmp int) bool {
	switch p.Rel() {
	case ">":
		return cmp > 0
	case ">=":
		return cmp >= 0
	case "<":
		return cmp < 0
	}
	return cmp <= 0
}

// ExecutionListPagination pages list_executions by created_at or by execution id.
// Exactly one of CreatedBy and ExecutionID is set. listing.go defines the
// order and the cursor condition of each kind (Compare, Accepts).
type ExecutionListPagination struct {
	CreatedBy *Pagination[*Timestamp]
	// CreatedByID (Stela extension) makes a CreatedBy cursor tie-safe: the
	// cursor becomes the position (*CreatedBy.Cursor, *CreatedByID) in the
	// (created_at, execution_id) order instead of a bare instant. It requires
	// a CreatedBy cursor.
	CreatedByID *ExecutionId
	ExecutionID *Pagination[*ExecutionId]
}

// DefaultExecutionListPagination is OlderThan{20, no cursor} by created_at.
func DefaultExecutionListPagination() ExecutionListPagination {
	return ExecutionListPagination{CreatedBy: &Pagination[*Timestamp]{Direction: OlderThan, Length: 20}}
}

// ListExecutionEventsResponse is a page of events.
type ListExecutionEventsResponse struct {
	Events     []ExecutionEvent `json:"events"`
	MaxVersion Version          `json:"max_version"`
}

// ListResponsesResponse is a page of responses.
type ListResponsesResponse struct {
	Responses  []ResponseWithCursor `json:"responses"`
	MaxCursor  ResponseCursor       `json:"max_cursor"`
	ScanCursor ResponseCursor       `json:"scan_cursor"`
}

// ListResponsesFromPage builds the response with the seed's scan_cursor rule:
// NewerThan → the last response's cursor if the page is full, else maxCursor;
// OlderThan → the first response's cursor, else 0. Apply it to the unfiltered
// window, then filter by join set.
func ListResponsesFromPage(window []ResponseWithCursor, maxCursor ResponseCursor, p Pagination[ResponseCursor]) ListResponsesResponse {
	var scan ResponseCursor
	if p.Direction == NewerThan {
		scan = maxCursor
		if len(window) > 0 && len(window) >= int(p.Length) {
			scan = window[len(window)-1].Cursor
		}
	} else if len(window) > 0 {
		scan = window[0].Cursor
	}
	return ListResponsesResponse{Responses: window, MaxCursor: maxCursor, ScanCursor: scan}
}

// ExecutionWithStateRequestsResponses is list_execution_events_responses' result.
type ExecutionWithStateRequestsResponses struct {
	ExecutionWithState ExecutionWithState
	Events             []ExecutionEvent
	Responses          []ResponseWithCursor
	MaxVersion         Version
	MaxCursor          ResponseCursor
}

// --- filters ---------------------------------------------------------------------

// StateFilter is a list_executions state bucket (docs/spec/semantics.md §4.8.1).
type StateFilter uint8

// State filter buckets.
const (
	FilterLocked StateFilter = iota + 1
	FilterPending
	FilterScheduled
	FilterBlocked
	FilterPaused
	FilterCancelling
	FilterFinished
	FilterFinishedOk
	FilterFinishedError
	FilterFinishedExecutionFailure
)

// Matches reports whether s is in bucket f, with `now` for Pending/Scheduled.
func (f StateFilter) Matches(s *ExecutionState, now Timestamp) bool {
	active := s.Lifecycle == LifecycleActive
	switch f {
	case FilterLocked:
		return s.State == StateLocked && active
	case FilterPending:
		return s.State == StatePendingAt && active && !s.At.After(now)
	case FilterScheduled:
		return s.State == StatePendingAt && active && s.At.After(now)
	case FilterBlocked:
		return s.State == StateBlockedByJoinSet && active
	case FilterPaused:
		return s.Lifecycle == LifecyclePaused
	case FilterCancelling:
		return s.Lifecycle == LifecycleCancelling
	case FilterFinished:
		return s.State == StateFinished
	case FilterFinishedOk:
		return s.State == StateFinished && s.ResultKind != nil && !s.ResultKind.IsErr
	case FilterFinishedError:
		return s.State == StateFinished && s.ResultKind != nil && s.ResultKind.IsErr && s.ResultKind.Failure == ""
	case FilterFinishedExecutionFailure:
		return s.State == StateFinished && s.ResultKind != nil && s.ResultKind.Failure != ""
	}
	return false
}

// FunctionNameFilter filters by function name: a package, interface or function prefix.
type FunctionNameFilter struct {
	// Kind is "package", "interface" or "function".
	Kind  string
	Value string
}

// Matches applies the seed's like_pattern: interface/function → prefix match;
// a versioned package `ns:pkg@ver` matches `ns:pkg/<any>@ver.<any>`; other
// packages → prefix match. Matching is case-sensitive (Postgres semantics).
func (f FunctionNameFilter) Matches(ffqn string) bool {
	if f.Kind == "package" {
		if i := strings.LastIndexByte(f.Value, '@'); i >= 0 && i < len(f.Value)-1 && strings.Contains(f.Value[:i], ":") {
			pkg, ver := f.Value[:i], f.Value[i+1:]
			if !strings.HasPrefix(ffqn, pkg+"/") {
				return false
			}
			return strings.Contains(ffqn[len(pkg)+1:], "@"+ver+".")
		}
	}
	return strings.HasPrefix(ffqn, f.Value)
}

// ListExecutionsFilter filters list_executions; zero value = top-level executions, any state.
type ListExecutionsFilter struct {
	FunctionName      *FunctionNameFilter
	ShowDerived       bool
	HideFinished      bool
	ExecutionIDPrefix string
	ComponentDigest   *ComponentDigest
	DeploymentID      *DeploymentId
	StateFilters      []StateFilter
	StateFiltersNow   Timestamp
}

// Matches applies every filter to s (AND), state filters OR-ed.
func (f *ListExecutionsFilter) Matches(s *ExecutionState) bool {
	if !f.ShowDerived && !s.IsTopLevel() {
		return false
	}
	if f.FunctionName != nil && !f.FunctionName.Matches(s.FFQN.String()) {
		return false
	}
	if f.HideFinished && s.IsFinished() {
		return false
	}
	if f.ExecutionIDPrefix != "" && !strings.HasPrefix(s.ExecutionID.String(), f.ExecutionIDPrefix) {
		return false
	}
	if f.ComponentDigest != nil && s.ComponentDigest != *f.ComponentDigest {
		return false
	}
	if f.DeploymentID != nil && s.DeploymentID != *f.DeploymentID {
		return false
	}
	if len(f.StateFilters) > 0 {
		for _, sf := range f.StateFilters {
			if sf.Matches(s, f.StateFiltersNow) {
				return true
			}
		}
		return false
	}
	return true
}

// --- logs ---------------------------------------------------------------------------

// LogLevel is 1 trace … 5 error.
type LogLevel uint8

// Log levels.
const (
	LogTrace LogLevel = iota + 1
	LogDebug
	LogInfo
	LogWarn
	LogError
)

// LogStreamType is 1 stdout, 2 stderr.
type LogStreamType uint8

// Stream types.
const (
	StreamStdout LogStreamType = iota + 1
	StreamStderr
)

// LogEntry is a log line (Level set) or a stream chunk (StreamType set).
type LogEntry struct {
	CreatedAt  Timestamp
	Level      LogLevel
	Message    string
	StreamType LogStreamType
	Payload    []byte
}

// IsStream reports whether the entry is a stream chunk.
func (e LogEntry) IsStream() bool { return e.StreamType != 0 }

// LogInfoAppendRow is a log to append.
type LogInfoAppendRow struct {
	ExecutionID ExecutionId
	RunID       RunId
	Entry       LogEntry
}

// LogCursor is the global, monotonically increasing id of a log row.
type LogCursor int64

// Open-ended log cursors.
const (
	LogCursorMin LogCursor = math.MinInt64
	LogCursorMax LogCursor = math.MaxInt64
)

// LogEntryRow is a stored log.
type LogEntryRow struct {
	Cursor      LogCursor
	RunID       RunId
	Entry       LogEntry
	ExecutionID ExecutionId
}

// LogFilter selects logs and/or streams (seed LogFilter).
type LogFilter struct {
	ShowLogs    bool
	ShowStreams bool
	// Levels applies when ShowLogs; empty = all.
	Levels []LogLevel
	// StreamTypes applies when ShowStreams; empty = both.
	StreamTypes []LogStreamType
	// CreatedAfter / CreatedBefore are exclusive bounds.
	CreatedAfter  *Timestamp
	CreatedBefore *Timestamp
}

// Matches applies the filter to an entry.
func (f *LogFilter) Matches(e *LogEntry) bool {
	if f.CreatedAfter != nil && !e.CreatedAt.After(*f.CreatedAfter) {
		return false
	}
	if f.CreatedBefore != nil && !e.CreatedAt.Before(*f.CreatedBefore) {
		return false
	}
	if e.IsStream() {
		if !f.ShowStreams {
			return false
		}
		if len(f.StreamTypes) == 0 {
			return true
		}
		for _, t := range f.StreamTypes {
			if t == e.StreamType {
				return true
			}
		}
		return false
	}
	if !f.ShowLogs {
		return false
	}
	if len(f.Levels) == 0 {
		return true
	}
	for _, l := range f.Levels {
		if l == e.Level {
			return true
		}
	}
	return false
}

// ListLogsResponse is a page of logs in scan order with the derived cursors.
type ListLogsResponse struct {
	Items    []LogEntryRow
	NextPage Pagination[LogCursor]
	PrevPage *Pagination[LogCursor]
}

// ListLogsFromPage derives next/prev pages as the seed does (docs/spec/semantics.md §6.8).
func ListLogsFromPage(items []LogEntryRow, req Pagination[LogCursor]) ListLogsResponse {
	out := ListLogsResponse{Items: items}
	if len(items) > 0 {
		out.NextPage = Pagination[LogCursor]{Direction: NewerThan, Length: req.Length, Cursor: items[len(items)-1].Cursor}
		out.PrevPage = &Pagination[LogCursor]{Direction: OlderThan, Length: req.Length, Cursor: items[0].Cursor}
		return out
	}
	if req.Direction == NewerThan {
		out.NextPage = req
		if req.Cursor != LogCursorMin {
			inv := req.Invert()
			out.PrevPage = &inv
		}
		return out
	}
	out.NextPage = Pagination[LogCursor]{Direction: NewerThan, Length: req.Length, Cursor: LogCursorMin}
	return out
}

// BacktraceFilter selects a backtrace: First, Last, or the one containing Specific.
type BacktraceFilter struct {
	// Kind is "first", "last" or "specific".
	Kind     string
	Specific Version
}

// --- deployments ---------------------------------------------------------------------

// DeploymentStatus is inactive, enqueued or active.
type DeploymentStatus string

// Deployment statuses.
const (
	DeploymentInactive DeploymentStatus = "inactive"
	DeploymentEnqueued DeploymentStatus = "enqueued"
	DeploymentActive   DeploymentStatus = "active"
)

// DeploymentFileRecord is a file of a deployment; Size comes from the CAS (0 if absent).
type DeploymentFileRecord struct {
	Path   string        `json:"path"`
	Digest ContentDigest `json:"digest"`
	Size   uint64        `json:"size"`
}

// DeploymentRecord is a stored deployment.
type DeploymentRecord struct {
	DeploymentID   DeploymentId
	Description    *string
	Digest         ContentDigest
	CreatedAt      Timestamp
	LastActiveAt   *Timestamp
	Status         DeploymentStatus
	DeploymentToml string
	ObeliskVersion string
	CreatedBy      *string
	Files          []DeploymentFileRecord
}

// ComponentFileRole is the role of a component file.
type ComponentFileRole string

// Component file roles.
const (
	RoleWasmComponent   ComponentFileRole = "wasm_component"
	RoleExecProgram     ComponentFileRole = "exec_program"
	RoleJsEntrypoint    ComponentFileRole = "js_entrypoint"
	RoleJsModule        ComponentFileRole = "js_module"
	RoleBacktraceSource ComponentFileRole = "backtrace_source"
	RoleWitSource       ComponentFileRole = "wit_source"
)

// DeploymentComponentFileRecord binds a deployment file to a component.
type DeploymentComponentFileRecord struct {
	ComponentName string
	Path          string
	Role          ComponentFileRole
}

// DeploymentComponentFileDetail is a component file with its record.
type DeploymentComponentFileDetail struct {
	File DeploymentFileRecord `json:"file"`
	Role ComponentFileRole    `json:"role"`
}

// WitOrigin is 1 wasm, 2 synthesized, 3 authored.
type WitOrigin uint8

// WIT origins.
const (
	WitOriginWasm WitOrigin = iota + 1
	WitOriginSynthesized
	WitOriginAuthored
)

// ComponentMetadataRecord is shared, per-digest component metadata.
type ComponentMetadataRecord struct {
	ComponentDigest ComponentDigest
	Imports         []PersistedFunctionMetadata
	Exports         []PersistedFunctionMetadata
	Wit             string
	WitOrigin       WitOrigin
}

// DeploymentComponentRecord binds a component to a deployment.
type DeploymentComponentRecord struct {
	DeploymentID    DeploymentId
	ComponentName   string
	ComponentDigest ComponentDigest
	ComponentType   ComponentType
}

// DeploymentComponentDetail is a component of a deployment with its metadata.
type DeploymentComponentDetail struct {
	ComponentID ComponentId
	Imports     []PersistedFunctionMetadata
	Exports     []PersistedFunctionMetadata
	Wit         string
	Files       []DeploymentComponentFileDetail
}

// DeploymentExecutionCounts chooses whether list_deployment_states counts executions.
type DeploymentExecutionCounts struct {
	Skip           bool
	IncludeDerived bool
}

// DeploymentState is a deployment with per-bucket execution counts.
type DeploymentState struct {
	DeploymentID             DeploymentId
	Description              *string
	Digest                   ContentDigest
	Locked                   uint32
	Pending                  uint32
	Scheduled                uint32
	Blocked                  uint32
	Paused                   uint32
	Cancelling               uint32
	FinishedOk               uint32
	FinishedError            uint32
	FinishedExecutionFailure uint32
	DeploymentToml           *string
	CreatedAt                Timestamp
	LastActiveAt             *Timestamp
	Status                   DeploymentStatus
}

// EnqueueOutcome is the result of enqueue_deployment.
type EnqueueOutcome uint8

// Enqueue outcomes.
const (
	Enqueued EnqueueOutcome = iota + 1
	EnqueueAlreadyActive
)

// --- the store interfaces ----------------------------------------------------------

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

// --- free functions of the seed ---------------------------------------------------

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

// Valid reports whether r is one of the six component file roles.
func (r ComponentFileRole) Valid() bool {
	switch r {
	case RoleWasmComponent, RoleExecProgram, RoleJsEntrypoint, RoleJsModule, RoleBacktraceSource, RoleWitSource:
		return true
	}
	return false
}

// Validate rejects an unknown WIT origin.
func (r ComponentMetadataRecord) Validate() error {
	if r.WitOrigin < WitOriginWasm || r.WitOrigin > WitOriginAuthored {
		return invalid(fmt.Sprintf("component metadata %s: invalid wit_origin %d", r.ComponentDigest, r.WitOrigin))
	}
	return nil
}
