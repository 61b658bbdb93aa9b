package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/stela-dev/stela/core"
)

// Worker routes (/v1/worker/…) expose the executor side of the store
// (core.DbConnection) to out-of-process workers. Every body is strict JSON
// (unknown fields rejected, required fields checked); the request and
// response types below are the wire contract and are exported so that
// clients can share them.

// WorkerLockRoutes and WorkerWriteRoutes are the path prefixes of the
// worker routes a deployment serves from functions of their own (lock and
// append: functions.LockRoutes, functions.AppendRoutes), which clients may
// also reach through those functions' URLs (client.WithFunctionURLs).
var (
	WorkerLockRoutes  = []string{"/v1/worker/lock/"}
	WorkerWriteRoutes = []string{"/v1/worker/append", "/v1/worker/stub-response", "/v1/worker/logs", "/v1/worker/backtraces"}
)

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

func (p LockParams) request(now core.Timestamp, batch uint32, pendingAtOrSooner *core.Timestamp) core.LockRequest {
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
}

// DelayResponseBody is the body of POST /v1/worker/append-batch/delay-response.
type DelayResponseBody struct {
	AppendBatchBody
	JoinSetID core.JoinSetId `json:"join_set_id" required:"true"`
	DelayID   core.DelayId   `json:"delay_id" required:"true"`
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
	Status      int           `json:"status,omitempty"`
	Err         string        `json:"err,omitempty"`
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
	return nil, errors.New("httpapi: empty expired timer")
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

// --- handlers ----------------------------------------------------------------------

func checkBatch(name string, n, lo, hi int) error {
	if n < lo || n > hi {
		return badRequest("`%s` must have between %d and %d entries, got %d", name, lo, hi, n)
	}
	return nil
}

func lockedJSON(locked []core.LockedExecution) []LockedExecutionJSON {
	out := make([]LockedExecutionJSON, 0, len(locked))
	for _, l := range locked {
		out = append(out, NewLockedExecutionJSON(l))
	}
	return out
}

// lockKind selects the store method behind a lock-pending route.
type lockKind uint8

const (
	lockByFFQNs lockKind = iota + 1
	lockByFFQNsAuto
	lockByDigest
)

func (s *server) lockPendingByFFQNs(c *call) error     { return s.lockPending(c, lockByFFQNs) }
func (s *server) lockPendingByFFQNsAuto(c *call) error { return s.lockPending(c, lockByFFQNsAuto) }
func (s *server) lockPendingByDigest(c *call) error    { return s.lockPending(c, lockByDigest) }

// POST /v1/worker/lock/pending-by-*
func (s *server) lockPending(c *call, kind lockKind) error {
	var b LockPendingBody
	if err := c.decodeBody(&b); err != nil {
		return err
	}
	if err := s.timeBound().lock(&b.LockParams); err != nil {
		return err
	}
	if b.BatchSize < 1 || b.BatchSize > MaxLockBatch {
		return badRequest("`batch_size` must be between 1 and %d", MaxLockBatch)
	}
	if kind == lockByDigest {
		if b.FFQNs != nil {
			return unprocessable(errors.New("unknown field `ffqns`"))
		}
	} else if err := checkBatch("ffqns", len(b.FFQNs), 1, MaxAppendBatch); err != nil {
		return err
	}
	lock := func() ([]core.LockedExecution, core.LockRequest, error) {
		req := b.request(s.now(), b.BatchSize, b.PendingAtOrSooner)
		var locked []core.LockedExecution
		var err error
		switch kind {
		case lockByFFQNs:
			locked, err = s.db.LockPendingByFFQNs(c.ctx(), req, b.FFQNs)
		case lockByFFQNsAuto:
			locked, err = s.db.LockPendingByFFQNsAuto(c.ctx(), req, b.FFQNs)
		default:
			locked, err = s.db.LockPendingByComponentDigest(c.ctx(), req)
		}
		return locked, req, err
	}
	locked, req, err := lock()
	if err != nil {
		return err
	}
	// Bounded long poll: wait in short slices, each re-evaluating "now" (unless
	// the client pinned pending_at_or_sooner), so executions that become due
	// during the wait — by time or by a notification — are locked promptly.
	deadline := time.Now().Add(time.Duration(s.clampWait(b.WaitMs)) * time.Millisecond)
	for len(locked) == 0 && b.WaitMs > 0 {
		remaining := time.Until(deadline)
		if remaining <= 0 {
			break
		}
		wctx, cancel := context.WithTimeout(c.ctx(), min(remaining, lockWaitSlice))
		at := req.PendingAtOrSooner
		if b.PendingAtOrSooner == nil {
			at = s.now()
		}
		switch kind {
		case lockByFFQNs:
			s.db.WaitForPendingByFFQN(wctx, at, b.FFQNs, nil)
		case lockByFFQNsAuto:
			d := req.ComponentID.ComponentDigest
			s.db.WaitForPendingByFFQN(wctx, at, b.FFQNs, &d)
		default:
			s.db.WaitForPendingByComponentDigest(wctx, at, req.ComponentID.ComponentDigest)
		}
		cancel()
		if err := c.ctx().Err(); err != nil {
			return err
		}
		if locked, _, err = lock(); err != nil {
			return err
		}
	}
	return c.json(http.StatusOK, lockedJSON(locked))
}

// lockWaitSlice bounds one slice of a lock long poll.
const lockWaitSlice = 250 * time.Millisecond

// POST /v1/worker/lock/one
func (s *server) lockOne(c *call) error {
	var b LockOneBody
	if err := c.decodeBody(&b); err != nil {
		return err
	}
	if err := s.timeBound().lock(&b.LockParams); err != nil {
		return err
	}
	setExecutionID(c.r, b.ExecutionID)
	locked, err := s.db.LockOne(c.ctx(), b.request(s.now(), 1, nil), b.ExecutionID, b.Version)
	if err != nil {
		return err
	}
	return c.json(http.StatusOK, NewLockedExecutionJSON(locked))
}

func (s *server) timeOr(t *core.Timestamp) core.Timestamp {
	if t != nil {
		return *t
	}
	return s.now()
}

// POST /v1/worker/append
func (s *server) workerAppend(c *call) error {
	var b AppendBody
	if err := c.decodeBody(&b); err != nil {
		return err
	}
	if err := s.timeBound().check("req.created_at", b.Req.CreatedAt); err != nil {
		return err
	}
	setExecutionID(c.r, b.ExecutionID)
	next, err := s.db.Append(c.ctx(), b.ExecutionID, b.Version, b.Req)
	if err != nil {
		return err
	}
	return c.json(http.StatusOK, NextVersionJSON{next})
}

// POST /v1/worker/append-batch
func (s *server) workerAppendBatch(c *call) error {
	var b AppendBatchBody
	if err := c.decodeBody(&b); err != nil {
		return err
	}
	if err := s.timeBound().appendBatch("", &b); err != nil {
		return err
	}
	setExecutionID(c.r, b.ExecutionID)
	next, err := s.appendBatchOf(c.ctx(), &b)
	if err != nil {
		return err
	}
	return c.json(http.StatusOK, NextVersionJSON{next})
}

// appendBatchOf checks and commits an append-batch body (the route and an
// append-batch/many item).
func (s *server) appendBatchOf(ctx context.Context, b *AppendBatchBody) (core.Version, error) {
	if err := checkBatch("batch", len(b.Batch), 1, MaxAppendBatch); err != nil {
		return 0, err
	}
	return s.db.AppendBatch(ctx, s.timeOr(b.CurrentTime), b.Batch, b.ExecutionID, b.Version)
}

// POST /v1/worker/append-batch/create-children
func (s *server) workerCreateChildren(c *call) error {
	var b CreateChildrenBody
	if err := c.decodeBody(&b); err != nil {
		return err
	}
	tb := s.timeBound()
	if err := tb.appendBatch("", &b.AppendBatchBody); err != nil {
		return err
	}
	if err := tb.creates("children", b.Children); err != nil {
		return err
	}
	setExecutionID(c.r, b.ExecutionID)
	if err := checkBatch("batch", len(b.Batch), 1, MaxAppendBatch); err != nil {
		return err
	}
	if err := checkBatch("batch` + `children", len(b.Batch)+len(b.Children), 1, MaxAppendBatch); err != nil {
		return err
	}
	if err := checkBatch("backtraces", len(b.Backtraces), 0, MaxBacktraceBatch); err != nil {
		return err
	}
	// Checked against the parent's log in the same write (docs/http-api.md §4.1).
	checked, ok := s.db.(core.ChildWriteChecker)
	if !ok {
		return core.ErrNotImplemented
	}
	next, err := checked.AppendBatchCreateNewExecutionChecked(c.ctx(), s.timeOr(b.CurrentTime), b.Batch, b.ExecutionID, b.Version, b.Children, b.Backtraces)
	if err != nil {
		return err
	}
	return c.json(http.StatusOK, NextVersionJSON{next})
}

// POST /v1/worker/append-batch/delay-response
func (s *server) workerDelayResponse(c *call) error {
	var b DelayResponseBody
	if err := c.decodeBody(&b); err != nil {
		return err
	}
	if err := s.timeBound().appendBatch("", &b.AppendBatchBody); err != nil {
		return err
	}
	setExecutionID(c.r, b.ExecutionID)
	if err := checkBatch("batch", len(b.Batch), 1, MaxAppendBatch); err != nil {
		return err
	}
	next, err := s.db.AppendBatchWithDelayResponse(c.ctx(), s.timeOr(b.CurrentTime), b.Batch, b.ExecutionID, b.Version, b.JoinSetID, b.DelayID)
	if err != nil {
		return err
	}
	return c.json(http.StatusOK, NextVersionJSON{next})
}

// POST /v1/worker/append-batch/respond-to-parent
func (s *server) workerRespondToParent(c *call) error {
	var b RespondToParentBody
	if err := c.decodeBody(&b); err != nil {
		return err
	}
	if err := s.timeBound().respondToParent("", &b); err != nil {
		return err
	}
	setExecutionID(c.r, b.Events.ExecutionID)
	next, err := s.respondToParentOf(c.ctx(), &b)
	if err != nil {
		return err
	}
	return c.json(http.StatusOK, NextVersionJSON{next})
}

// respondToParentOf checks and commits a respond-to-parent body (the route
// and an append-batch/many item).
func (s *server) respondToParentOf(ctx context.Context, b *RespondToParentBody) (core.Version, error) {
	if err := checkBatch("events.batch", len(b.Events.Batch), 1, MaxAppendBatch); err != nil {
		return 0, err
	}
	// Checked against the child's batch and the parent's log in the same write (docs/http-api.md §4.1).
	checked, ok := s.db.(core.ChildWriteChecker)
	if !ok {
		return 0, core.ErrNotImplemented
	}
	return checked.AppendBatchRespondToParentChecked(ctx, b.Events, b.Response, s.timeOr(b.CurrentTime))
}

// appendManyParallelism bounds the items of one many-write in flight.
const appendManyParallelism = 8

// POST /v1/worker/append-batch/many
func (s *server) workerAppendMany(c *call) error {
	var b AppendManyBody
	if err := c.decodeBody(&b); err != nil {
		return err
	}
	if err := s.timeBound().many(&b); err != nil {
		return err
	}
	if err := checkBatch("items", len(b.Items), 1, MaxAppendMany); err != nil {
		return err
	}
	results := make([]AppendManyResult, len(b.Items))
	var g errgroup.Group
	g.SetLimit(appendManyParallelism)
	for i := range b.Items {
		g.Go(func() error {
			next, err := s.appendItem(c.ctx(), &b.Items[i])
			if err == nil {
				results[i] = AppendManyResult{NextVersion: &next}
				return nil
			}
			status, msg := errorStatus(err)
			if status >= 500 && status != http.StatusNotImplemented && status != http.StatusServiceUnavailable {
				s.log.ErrorContext(c.ctx(), "append-many item failed", slog.Int("item", i), slog.Int(logKeyStatus, status),
					slog.String(logKeyErr, err.Error()))
			}
			results[i] = AppendManyResult{Status: status, Err: msg}
			return nil
		})
	}
	_ = g.Wait()
	return c.json(http.StatusOK, AppendManyJSON{Results: results})
}

// appendItem runs one item of a many-write as its single route would.
func (s *server) appendItem(ctx context.Context, it *AppendManyItem) (core.Version, error) {
	switch {
	case it.Append != nil && it.RespondToParent == nil:
		return s.appendBatchOf(ctx, it.Append)
	case it.RespondToParent != nil && it.Append == nil:
		return s.respondToParentOf(ctx, it.RespondToParent)
	}
	return 0, badRequest("an item must have exactly one of `append` and `respond_to_parent`")
}

// POST /v1/worker/stub-response
func (s *server) workerStubResponse(c *call) error {
	var b StubResponseBody
	if err := c.decodeBody(&b); err != nil {
		return err
	}
	if err := s.timeBound().stub(&b); err != nil {
		return err
	}
	setExecutionID(c.r, b.ExecutionID)
	if err := s.db.UpsertStubResponse(c.ctx(), b.ExecutionID, b.Version, b.Req, b.Response, s.timeOr(b.CurrentTime)); err != nil {
		return err
	}
	c.w.WriteHeader(http.StatusNoContent)
	return nil
}

// GET /v1/worker/executions/{execution_id}/log
func (s *server) workerGetLog(c *call) error {
	id, err := pathExecutionID(c.r)
	if err != nil {
		return err
	}
	l, err := s.db.Get(c.ctx(), id)
	if err != nil {
		return err
	}
	out := ExecutionLogJSON(*l)
	out.Events, out.Responses = nonNil(out.Events), nonNil(out.Responses)
	return c.json(http.StatusOK, out)
}

// GET /v1/worker/executions/{execution_id}/next-responses
func (s *server) workerNextResponses(c *call) error {
	id, err := pathExecutionID(c.r)
	if err != nil {
		return err
	}
	q, err := c.query()
	if err != nil {
		return err
	}
	last, err := q.optUint("last_response", 32)
	if err != nil {
		return err
	}
	wait, err := q.optUint("wait_ms", 64)
	if err != nil {
		return err
	}
	var cursor core.ResponseCursor
	if last != nil {
		cursor = core.ResponseCursor(*last)
	}
	var rs []core.ResponseWithCursor
	if wait == nil || *wait == 0 {
		page, err := s.db.ListResponses(c.ctx(), id, core.Pagination[core.ResponseCursor]{
			Direction: core.NewerThan, Length: math.MaxUint16, Cursor: cursor}, nil)
		if err != nil {
			return err
		}
		rs = page.Responses
	} else {
		wctx, cancel := context.WithTimeout(c.ctx(), time.Duration(s.clampWait(*wait))*time.Millisecond)
		defer cancel()
		rs, err = s.db.SubscribeToNextResponses(wctx, id, cursor)
		if err != nil && (c.ctx().Err() != nil || !(errors.Is(err, core.ErrTimeout) || errors.Is(err, context.DeadlineExceeded))) {
			return err
		}
	}
	return c.json(http.StatusOK, ResponsesJSON{nonNil(rs)})
}

// POST /v1/worker/logs
func (s *server) workerAppendLogs(c *call) error {
	var b AppendLogsBody
	if err := c.decodeBody(&b); err != nil {
		return err
	}
	if err := s.timeBound().logs(&b); err != nil {
		return err
	}
	if err := checkBatch("logs", len(b.Logs), 1, MaxLogBatch); err != nil {
		return err
	}
	rows := make([]core.LogInfoAppendRow, 0, len(b.Logs))
	for i, l := range b.Logs {
		if l.Message != nil {
			if err := core.CheckLength("log message", []byte(*l.Message), core.MaxLogMessageBytes); err != nil {
				return core.AtPath(err, fmt.Sprintf("logs[%d].message", i))
			}
		}
		if err := core.CheckLength("log payload", l.Payload, core.MaxLogPayloadBytes); err != nil {
			return core.AtPath(err, fmt.Sprintf("logs[%d].payload", i))
		}
		row, err := l.Core()
		if err != nil {
			return unprocessable(fmt.Errorf("logs[%d]: %w", i, err))
		}
		rows = append(rows, row)
	}
	if err := s.db.AppendLogBatch(c.ctx(), rows); err != nil {
		return err
	}
	c.w.WriteHeader(http.StatusNoContent)
	return nil
}

// POST /v1/worker/backtraces
func (s *server) workerAppendBacktraces(c *call) error {
	var b AppendBacktracesBody
	if err := c.decodeBody(&b); err != nil {
		return err
	}
	if err := checkBatch("backtraces", len(b.Backtraces), 1, MaxBacktraceBatch); err != nil {
		return err
	}
	n, err := s.db.AppendBacktraceBatch(c.ctx(), b.Backtraces)
	if err != nil {
		return err
	}
	return c.json(http.StatusOK, InsertedJSON{n})
}

// GET /v1/worker/expired-timers
func (s *server) workerExpiredTimers(c *call) error {
	q, err := c.query()
	if err != nil {
		return err
	}
	at, err := q.optTimestamp("at")
	if err != nil {
		return err
	}
	timers, err := s.db.GetExpiredTimers(c.ctx(), s.timeOr(at))
	if err != nil {
		return err
	}
	out := make([]ExpiredTimerJSON, 0, len(timers))
	for _, t := range timers {
		out = append(out, ExpiredTimerJSON(t))
	}
	return c.json(http.StatusOK, out)
}

// GET /v1/worker/cancelling
func (s *server) workerCancelling(c *call) error {
	q, err := c.query()
	if err != nil {
		return err
	}
	n, err := q.optUint("batch_size", 32)
	if err != nil {
		return err
	}
	batch := uint64(10)
	if n != nil {
		if *n < 1 || *n > MaxCancellingBatch {
			return queryErr("batch_size", fmt.Sprintf("must be between 1 and %d", MaxCancellingBatch))
		}
		batch = *n
	}
	ids, err := s.db.GetCancelling(c.ctx(), uint32(batch))
	if err != nil {
		return err
	}
	return c.json(http.StatusOK, nonNil(ids))
}

// POST /v1/worker/sweep
func (s *server) workerSweep(c *call) error {
	var b SweepBody
	if c.r.Body != nil {
		if err := c.decodeOptionalBody(&b); err != nil {
			return err
		}
	}
	if s.sweep == nil {
		return core.ErrNotImplemented
	}
	// A sweep runs at the server's time: an `at` ahead of it would expire
	// live locks before their lease ends. An earlier `at` is harmless (it
	// expires less) and kept.
	now := s.now()
	at := now
	if b.At != nil {
		if s.maxSkew >= 0 && b.At.After(now.Add(s.maxSkew)) {
			return badRequest("`at` %s is ahead of the server's clock (%s) by more than %s: a sweep runs at the server's time",
				*b.At, now, s.maxSkew)
		}
		if b.At.Before(now) {
			at = *b.At
		}
	}
	res, err := s.sweep(c.ctx(), at)
	if err != nil {
		return err
	}
	return c.json(http.StatusOK, res)
}
