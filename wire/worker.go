package wire

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/stela-dev/stela/core"
)

// The worker routes (/v1/worker/…) expose the executor side of the store
// (core.DbConnection) to out-of-process workers. Every body is strict JSON
// (the server rejects unknown fields and checks the fields tagged
// required); the request and answer types below are their contract.

// LockParams are the fields shared by every lock body: core.LockRequest in
// snake_case, minus the pending bound and batch size.
type LockParams struct {
	// CreatedAt is the Locked event's time; default: the server clock.
	CreatedAt     *core.Timestamp           `json:"created_at,omitempty"`
	ComponentID   core.ComponentId          `json:"component_id" required:"true"`
	DeploymentID  core.DeploymentId         `json:"deployment_id" required:"true"`
	ExecutorID    core.ExecutorId           `json:"executor_id" required:"true"`
	RunID         core.RunId                `json:"run_id" required:"true"`
	LockExpiresAt core.Timestamp            `json:"lock_expires_at" required:"true"`
	RetryConfig   core.ComponentRetryConfig `json:"retry_config" required:"true"`
	// SkipHistory leaves event_history and responses of the answer empty
	// (core.LockRequest.SkipHistory); read them with the history route.
	SkipHistory bool `json:"skip_history,omitempty"`
}

// LockPendingBody is the body of POST /v1/worker/lock/pending-by-ffqns,
// …/pending-by-ffqns-auto (with FFQNs) and …/pending-by-component-digest
// (FFQNs must be absent; the digest is component_id.component_digest).
type LockPendingBody struct {
	LockParams
	BatchSize uint32 `json:"batch_size" required:"true"`
	// PendingAtOrSooner bounds scheduled_at (inclusive); default: created_at.
	PendingAtOrSooner *core.Timestamp    `json:"pending_at_or_sooner,omitempty"`
	FFQNs             []core.FunctionFqn `json:"ffqns,omitempty"`
	// WaitMs, when nothing is pending, waits up to this long (clamped to the
	// server's follow bound) for a pending execution, then tries once more.
	WaitMs uint64 `json:"wait_ms,omitempty"`
}

// LockOneBody is the body of POST /v1/worker/lock/one.
type LockOneBody struct {
	LockParams
	ExecutionID core.ExecutionId `json:"execution_id" required:"true"`
	Version     core.Version     `json:"version" required:"true"`
}

// Request is the lock request p stands for, at the server's time now for
// an absent created_at (and pending_at_or_sooner: created_at when absent).
func (p LockParams) Request(now core.Timestamp, batch uint32, pendingAtOrSooner *core.Timestamp) core.LockRequest {
	created := now
	if p.CreatedAt != nil {
		created = *p.CreatedAt
	}
	pending := created
	if pendingAtOrSooner != nil {
		pending = *pendingAtOrSooner
	}
	return core.LockRequest{BatchSize: batch, PendingAtOrSooner: pending, CreatedAt: created,
		ComponentID: p.ComponentID, DeploymentID: p.DeploymentID, ExecutorID: p.ExecutorID, RunID: p.RunID,
		LockExpiresAt: p.LockExpiresAt, RetryConfig: p.RetryConfig, SkipHistory: p.SkipHistory}
}

// HistoryEventJSON is a history event with its version: {"event":…,"version":n}.
type HistoryEventJSON struct {
	Event   core.HistoryEvent
	Version core.Version
}

type historyEventWire struct {
	Event   json.RawMessage `json:"event"`
	Version core.Version    `json:"version"`
}

// MarshalJSON encodes {"event": <HistoryEvent>, "version": n}.
func (h HistoryEventJSON) MarshalJSON() ([]byte, error) {
	ev, err := core.EncodeHistoryEvent(h.Event)
	if err != nil {
		return nil, err
	}
	return core.MarshalJSON(historyEventWire{ev, h.Version})
}

// UnmarshalJSON decodes {"event": <HistoryEvent>, "version": n}.
func (h *HistoryEventJSON) UnmarshalJSON(b []byte) error {
	var w historyEventWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	if w.Event == nil {
		return errors.New("missing field `event`")
	}
	ev, err := core.DecodeHistoryEvent(w.Event)
	if err != nil {
		return err
	}
	*h = HistoryEventJSON{Event: ev, Version: w.Version}
	return nil
}

// LockedExecutionJSON is core.LockedExecution on the wire.
type LockedExecutionJSON struct {
	ExecutionID            core.ExecutionId          `json:"execution_id"`
	NextVersion            core.Version              `json:"next_version"`
	Metadata               core.ExecutionMetadata    `json:"metadata"`
	ComponentDigest        core.ComponentDigest      `json:"component_digest"`
	LockedEvent            core.Locked               `json:"locked_event"`
	FFQN                   core.FunctionFqn          `json:"ffqn"`
	Params                 core.Params               `json:"params"`
	EventHistory           []HistoryEventJSON        `json:"event_history"`
	Responses              []core.ResponseWithCursor `json:"responses"`
	Parent                 *core.Parent              `json:"parent"`
	IntermittentEventCount uint32                    `json:"intermittent_event_count"`
	// ComponentType is the type the execution was created with (a Stela
	// extension, docs/http-api.md; absent from older servers).
	ComponentType core.ComponentType `json:"component_type,omitempty"`
}

// NewLockedExecutionJSON converts a locked execution to its wire form.
func NewLockedExecutionJSON(l core.LockedExecution) LockedExecutionJSON {
	hist := make([]HistoryEventJSON, 0, len(l.EventHistory))
	for _, h := range l.EventHistory {
		hist = append(hist, HistoryEventJSON(h))
	}
	return LockedExecutionJSON{
		ExecutionID: l.ExecutionID, NextVersion: l.NextVersion, Metadata: l.Metadata, ComponentDigest: l.ComponentDigest,
		LockedEvent: l.LockedEvent, FFQN: l.FFQN, Params: l.Params, EventHistory: hist,
		Responses: nonNil(l.Responses), Parent: l.Parent, IntermittentEventCount: l.IntermittentEventCount,
		ComponentType: l.ComponentType,
	}
}

// Core converts the wire form back to core.LockedExecution.
func (j LockedExecutionJSON) Core() core.LockedExecution {
	hist := make([]core.HistoryEventWithVersion, 0, len(j.EventHistory))
	for _, h := range j.EventHistory {
		hist = append(hist, core.HistoryEventWithVersion(h))
	}
	return core.LockedExecution{
		ExecutionID: j.ExecutionID, NextVersion: j.NextVersion, Metadata: j.Metadata, ComponentDigest: j.ComponentDigest,
		LockedEvent: j.LockedEvent, FFQN: j.FFQN, Params: j.Params, EventHistory: hist,
		Responses: j.Responses, Parent: j.Parent, IntermittentEventCount: j.IntermittentEventCount,
		ComponentType: j.ComponentType,
	}
}

// AppendBody is the body of POST /v1/worker/append.
type AppendBody struct {
	ExecutionID core.ExecutionId   `json:"execution_id" required:"true"`
	Version     core.Version       `json:"version" required:"true"`
	Req         core.AppendRequest `json:"req" required:"true"`
}

// AppendBatchBody is the body of POST /v1/worker/append-batch.
type AppendBatchBody struct {
	// CurrentTime defaults to the server clock.
	CurrentTime *core.Timestamp      `json:"current_time,omitempty"`
	Batch       []core.AppendRequest `json:"batch" required:"true"`
	ExecutionID core.ExecutionId     `json:"execution_id" required:"true"`
	Version     core.Version         `json:"version" required:"true"`
}

// CreateChildrenBody is the body of POST /v1/worker/append-batch/create-children.
type CreateChildrenBody struct {
	AppendBatchBody
	Children   []core.CreateRequest `json:"children" required:"true"`
	Backtraces []core.BacktraceInfo `json:"backtraces,omitempty"`
	// Lock asks for some of the children to be created locked to the
	// caller (eager dispatch, core.EagerLock); they are answered in
	// CreateChildrenAnswer.Locked. A server that predates the field
	// rejects it (422 "unknown field `lock`"): the caller then sends the
	// request again without it.
	Lock []EagerLockJSON `json:"lock,omitempty"`
}

// EagerLockJSON is core.EagerLock on the wire: the lock's parameters, at
// most batch_size children of ffqns and, for a pinned worker,
// by_component_digest (only children of component_id's digest).
type EagerLockJSON struct {
	LockParams
	BatchSize         uint32             `json:"batch_size" required:"true"`
	FFQNs             []core.FunctionFqn `json:"ffqns" required:"true"`
	ByComponentDigest bool               `json:"by_component_digest,omitempty"`
}

// CreateChildrenAnswer answers POST /v1/worker/append-batch/create-children:
// the next version and, when the body asked for eager locks, the children
// created locked (absent otherwise, and from a server that predates them).
type CreateChildrenAnswer struct {
	NextVersion core.Version          `json:"next_version"`
	Locked      []LockedExecutionJSON `json:"locked,omitempty"`
}

// CreateLockedBody is the body of POST /v1/worker/create-locked (eager
// start): the create request and the lock to take it with, when the lock
// takes it (core.EagerLock.Takes). Answered with a CreateChildrenAnswer
// whose locked holds the execution, or nothing when it was created
// pending. With Requests instead of Request (a batch, lock.batch_size its
// length, at most MaxCreateLocked), each is created in its own commit
// under the one lock and answered on its own: CreateLockedManyAnswer.
type CreateLockedBody struct {
	Request  *core.CreateRequest  `json:"request,omitempty"`
	Requests []core.CreateRequest `json:"requests,omitempty"`
	Lock     EagerLockJSON        `json:"lock" required:"true"`
}

// CreateLockedManyAnswer answers POST /v1/worker/create-locked with
// `requests`: one result per request, in the requests' order.
type CreateLockedManyAnswer struct {
	Results []CreateLockedResultJSON `json:"results"`
}

// CreateLockedResultJSON is one request's outcome: next_version, with
// locked when it was created locked to the caller (absent: created
// pending), or the status and message the single request would have
// answered.
type CreateLockedResultJSON struct {
	NextVersion *core.Version        `json:"next_version,omitempty"`
	Locked      *LockedExecutionJSON `json:"locked,omitempty"`
	Status      int                  `json:"status,omitempty"`
	Err         string               `json:"err,omitempty"`
}

// FireDelayAnswer answers POST /v1/worker/delays/{delay_id}/fire
// (core.DelayFirer): outcome is "fired", "answered" (the delay had its
// response already) or "not_due" (not due at the store's time, or paused).
type FireDelayAnswer struct {
	Outcome string `json:"outcome"`
	// FiredAt and ResponseCursor tell, when outcome is "fired", the
	// DelayFinished response recorded: its created_at (the store's time)
	// and its cursor among the owner's responses. Omitted otherwise (and
	// by servers that do not tell).
	FiredAt        *core.Timestamp      `json:"fired_at,omitempty"`
	ResponseCursor *core.ResponseCursor `json:"response_cursor,omitempty"`
}

// DelayResponseBody is the body of POST /v1/worker/append-batch/delay-response.
type DelayResponseBody struct {
	AppendBatchBody
	JoinSetID core.JoinSetId `json:"join_set_id" required:"true"`
	DelayID   core.DelayId   `json:"delay_id" required:"true"`
}

// FireAppendBody is the body of POST /v1/worker/append-batch/fire-delay
// (core.DelayFireAppender): the batch is appended only together with the
// fire of delay_id, a delay of execution_id.
type FireAppendBody struct {
	AppendBatchBody
	DelayID core.DelayId `json:"delay_id" required:"true"`
}

// FireAppendAnswer answers POST /v1/worker/append-batch/fire-delay: outcome
// is "fired" (the delay's response and the batch were recorded),
// "answered" (the delay had fired already: the batch alone), "not_due" or
// "cancelled" (nothing written).
type FireAppendAnswer struct {
	Outcome string `json:"outcome"`
	// NextVersion is the version after the batch, when it was appended.
	NextVersion *core.Version `json:"next_version,omitempty"`
	// FiredAt and ResponseCursor tell, when outcome is "fired", the
	// DelayFinished response recorded (as in FireDelayAnswer).
	FiredAt        *core.Timestamp      `json:"fired_at,omitempty"`
	ResponseCursor *core.ResponseCursor `json:"response_cursor,omitempty"`
}

// RespondToParentBody is the body of POST /v1/worker/append-batch/respond-to-parent.
type RespondToParentBody struct {
	Events   core.AppendEventsToExecution   `json:"events" required:"true"`
	Response core.AppendResponseToExecution `json:"response" required:"true"`
	// CurrentTime defaults to the server clock.
	CurrentTime *core.Timestamp `json:"current_time,omitempty"`
}

// AppendManyBody is the body of POST /v1/worker/append-batch/many: writes
// to different executions in one request, each atomic on its own and
// answered on its own (docs/http-api.md §4.2). A worker finishing many
// executions at once pays one request instead of one per execution.
type AppendManyBody struct {
	Items []AppendManyItem `json:"items" required:"true"`
}

// AppendManyItem is one write of AppendManyBody: exactly one of its
// fields, the body of the single route it stands for
// (/v1/worker/append-batch or /v1/worker/append-batch/respond-to-parent).
type AppendManyItem struct {
	Append          *AppendBatchBody     `json:"append,omitempty"`
	RespondToParent *RespondToParentBody `json:"respond_to_parent,omitempty"`
}

// AppendManyJSON answers POST /v1/worker/append-batch/many: one result per
// item, in the items' order.
type AppendManyJSON struct {
	Results []AppendManyResult `json:"results"`
}

// AppendManyResult is one item's outcome: next_version, or the status and
// message its single route would have answered.
type AppendManyResult struct {
	NextVersion *core.Version `json:"next_version,omitempty"`
	// ResponseCursor is, for a respond_to_parent item, its
	// RespondToParentJSON.ResponseCursor.
	ResponseCursor *core.ResponseCursor `json:"response_cursor,omitempty"`
	Status         int                  `json:"status,omitempty"`
	Err            string               `json:"err,omitempty"`
}

// StubResponseBody is the body of POST /v1/worker/stub-response.
type StubResponseBody struct {
	ExecutionID core.ExecutionIdDerived        `json:"execution_id" required:"true"`
	Version     core.Version                   `json:"version" required:"true"`
	Req         core.AppendRequest             `json:"req" required:"true"`
	Response    core.AppendResponseToExecution `json:"response" required:"true"`
	// CurrentTime defaults to the server clock.
	CurrentTime *core.Timestamp `json:"current_time,omitempty"`
}

// RespondToParentJSON answers POST
// /v1/worker/append-batch/respond-to-parent: the child's next version and
// the cursor its response got among the parent's responses (omitted when
// the store deferred the response: it is numbered when the parent's lock
// ends; core.ResponseCursorReporter).
type RespondToParentJSON struct {
	NextVersion    core.Version         `json:"next_version"`
	ResponseCursor *core.ResponseCursor `json:"response_cursor,omitempty"`
}

// CursorOrNil is c as an optional wire field: nil for 0 (not known).
func CursorOrNil(c core.ResponseCursor) *core.ResponseCursor {
	if c == 0 {
		return nil
	}
	return &c
}

// NextVersionJSON answers the append routes.
type NextVersionJSON struct {
	NextVersion core.Version `json:"next_version"`
}

// ExecutionLogJSON is core.ExecutionLog on the wire.
type ExecutionLogJSON struct {
	ExecutionID     core.ExecutionId          `json:"execution_id"`
	Events          []core.ExecutionEvent     `json:"events"`
	Responses       []core.ResponseWithCursor `json:"responses"`
	NextVersion     core.Version              `json:"next_version"`
	PendingState    core.PendingState         `json:"pending_state"`
	ComponentDigest core.ComponentDigest      `json:"component_digest"`
	ComponentType   core.ComponentType        `json:"component_type"`
	DeploymentID    core.DeploymentId         `json:"deployment_id"`
}

// Core converts the wire form back to core.ExecutionLog.
func (j ExecutionLogJSON) Core() core.ExecutionLog {
	return core.ExecutionLog(j)
}

// ResponsesJSON answers GET /v1/worker/executions/{id}/next-responses.
type ResponsesJSON struct {
	Responses []core.ResponseWithCursor `json:"responses"`
}

// LogRowJSON is one log row of POST /v1/worker/logs: a log line
// ("type":"log" with level and message) or a stream chunk ("type":"stream"
// with stream_type and base64 payload).
type LogRowJSON struct {
	ExecutionID core.ExecutionId `json:"execution_id"`
	RunID       core.RunId       `json:"run_id"`
	CreatedAt   core.Timestamp   `json:"created_at"`
	Type        string           `json:"type"`
	Level       *string          `json:"level,omitempty"`
	Message     *string          `json:"message,omitempty"`
	StreamType  *string          `json:"stream_type,omitempty"`
	Payload     []byte           `json:"payload,omitempty"`
}

// Core validates the row and converts it.
func (r LogRowJSON) Core() (core.LogInfoAppendRow, error) {
	row := core.LogInfoAppendRow{ExecutionID: r.ExecutionID, RunID: r.RunID, Entry: core.LogEntry{CreatedAt: r.CreatedAt}}
	switch r.Type {
	case "log":
		if r.Level == nil || r.Message == nil || r.StreamType != nil || r.Payload != nil {
			return row, errors.New("a log row needs `level` and `message` only")
		}
		lv, ok := logLevelByName[*r.Level]
		if !ok {
			return row, fmt.Errorf("unknown level %q", *r.Level)
		}
		row.Entry.Level, row.Entry.Message = lv, *r.Message
	case "stream":
		if r.StreamType == nil || r.Payload == nil || r.Level != nil || r.Message != nil {
			return row, errors.New("a stream row needs `stream_type` and `payload` only")
		}
		st, ok := streamByName[*r.StreamType]
		if !ok {
			return row, fmt.Errorf("unknown stream_type %q", *r.StreamType)
		}
		row.Entry.StreamType, row.Entry.Payload = st, r.Payload
	default:
		return row, fmt.Errorf("unknown row type %q, expected `log` or `stream`", r.Type)
	}
	return row, nil
}

// AppendLogsBody is the body of POST /v1/worker/logs.
type AppendLogsBody struct {
	Logs []LogRowJSON `json:"logs" required:"true"`
}

// AppendBacktracesBody is the body of POST /v1/worker/backtraces.
type AppendBacktracesBody struct {
	Backtraces []core.BacktraceInfo `json:"backtraces" required:"true"`
}

// InsertedJSON answers POST /v1/worker/backtraces.
type InsertedJSON struct {
	Inserted int `json:"inserted"`
}

// SweepBody is the optional body of POST /v1/worker/sweep.
type SweepBody struct {
	// At is the sweep time; default: the server clock.
	At *core.Timestamp `json:"at,omitempty"`
}

// ExpiredTimerJSON is core.ExpiredTimer on the wire:
// {"type":"lock", execution_id, locked_at_version, next_version,
// intermittent_event_count, max_retries, retry_exp_backoff, locked_by,
// lock_expires_at} or {"type":"delay", execution_id, join_set_id, delay_id,
// expires_at}.
type ExpiredTimerJSON struct {
	Lock  *core.ExpiredLock
	Delay *core.ExpiredDelay
}

type expiredLockWire struct {
	Type                   string           `json:"type"`
	ExecutionID            core.ExecutionId `json:"execution_id"`
	LockedAtVersion        core.Version     `json:"locked_at_version"`
	NextVersion            core.Version     `json:"next_version"`
	IntermittentEventCount uint32           `json:"intermittent_event_count"`
	MaxRetries             *uint32          `json:"max_retries"`
	RetryExpBackoff        core.Duration    `json:"retry_exp_backoff"`
	LockedBy               core.LockedBy    `json:"locked_by"`
	LockExpiresAt          core.Timestamp   `json:"lock_expires_at"`
}

type expiredDelayWire struct {
	Type        string           `json:"type"`
	ExecutionID core.ExecutionId `json:"execution_id"`
	JoinSetID   core.JoinSetId   `json:"join_set_id"`
	DelayID     core.DelayId     `json:"delay_id"`
	ExpiresAt   core.Timestamp   `json:"expires_at"`
}

// MarshalJSON encodes the timer with its "type" tag first.
func (t ExpiredTimerJSON) MarshalJSON() ([]byte, error) {
	switch {
	case t.Lock != nil:
		l := t.Lock
		return core.MarshalJSON(expiredLockWire{"lock", l.ExecutionID, l.LockedAtVersion, l.NextVersion,
			l.IntermittentEventCount, l.MaxRetries, l.RetryExpBackoff, l.LockedBy, l.LockExpiresAt})
	case t.Delay != nil:
		d := t.Delay
		return core.MarshalJSON(expiredDelayWire{"delay", d.ExecutionID, d.JoinSetID, d.DelayID, d.ExpiresAt})
	}
	return nil, errors.New("wire: empty expired timer")
}

// UnmarshalJSON decodes either variant.
func (t *ExpiredTimerJSON) UnmarshalJSON(b []byte) error {
	var tag struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(b, &tag); err != nil {
		return err
	}
	switch tag.Type {
	case "lock":
		var w expiredLockWire
		if err := json.Unmarshal(b, &w); err != nil {
			return err
		}
		*t = ExpiredTimerJSON{Lock: &core.ExpiredLock{ExecutionID: w.ExecutionID, LockedAtVersion: w.LockedAtVersion,
			NextVersion: w.NextVersion, IntermittentEventCount: w.IntermittentEventCount, MaxRetries: w.MaxRetries,
			RetryExpBackoff: w.RetryExpBackoff, LockedBy: w.LockedBy, LockExpiresAt: w.LockExpiresAt}}
	case "delay":
		var w expiredDelayWire
		if err := json.Unmarshal(b, &w); err != nil {
			return err
		}
		*t = ExpiredTimerJSON{Delay: &core.ExpiredDelay{ExecutionID: w.ExecutionID, JoinSetID: w.JoinSetID, DelayID: w.DelayID,
			ExpiresAt: w.ExpiresAt}}
	default:
		return fmt.Errorf("unknown expired timer type %q", tag.Type)
	}
	return nil
}

// HistoryDeltaJSON is core.HistoryDelta on the wire: the answer of
// GET /v1/worker/executions/{execution_id}/history.
type HistoryDeltaJSON struct {
	Events      []HistoryEventJSON        `json:"events"`
	Responses   []core.ResponseWithCursor `json:"responses"`
	NextVersion core.Version              `json:"next_version"`
}

// NewHistoryDeltaJSON converts a delta to its wire form.
func NewHistoryDeltaJSON(d core.HistoryDelta) HistoryDeltaJSON {
	ev := make([]HistoryEventJSON, 0, len(d.Events))
	for _, h := range d.Events {
		ev = append(ev, HistoryEventJSON(h))
	}
	return HistoryDeltaJSON{Events: ev, Responses: nonNil(d.Responses), NextVersion: d.NextVersion}
}

// Core converts the wire form back to core.HistoryDelta.
func (j HistoryDeltaJSON) Core() core.HistoryDelta {
	ev := make([]core.HistoryEventWithVersion, 0, len(j.Events))
	for _, h := range j.Events {
		ev = append(ev, core.HistoryEventWithVersion(h))
	}
	return core.HistoryDelta{Events: ev, Responses: nonNil(j.Responses), NextVersion: j.NextVersion}
}

// nonNil returns s, or an empty slice for nil (JSON [] rather than null).
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
