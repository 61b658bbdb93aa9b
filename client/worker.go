package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/wire"
)

// Client is a whole core.WorkerConn over HTTP: workers run on it
// (worker.New(c, …)) as on the in-process store.
var _ core.WorkerConn = (*Client)(nil)
var _ core.EagerChildCreator = (*Client)(nil)

// --- locks ----------------------------------------------------------------------------------

// LockSelector chooses which pending executions LockPendingWait locks.
type LockSelector struct {
	path  string
	ffqns []core.FunctionFqn
}

// ByFFQNs selects executions of ffqns (LockPendingByFFQNs).
func ByFFQNs(ffqns ...core.FunctionFqn) LockSelector {
	return LockSelector{path: wire.PathWorkerLockPendingByFFQNs, ffqns: ffqns}
}

// ByFFQNsAuto selects executions of ffqns for an auto-upgrading workflow
// component (LockPendingByFFQNsAuto).
func ByFFQNsAuto(ffqns ...core.FunctionFqn) LockSelector {
	return LockSelector{path: wire.PathWorkerLockPendingByFFQNsAuto, ffqns: ffqns}
}

// ByComponentDigest selects executions whose current digest is the lock
// request's req.ComponentID.ComponentDigest (LockPendingByComponentDigest).
func ByComponentDigest() LockSelector {
	return LockSelector{path: wire.PathWorkerLockPendingByComponentDigest}
}

func lockParams(req core.LockRequest) wire.LockParams {
	p := wire.LockParams{ComponentID: req.ComponentID, DeploymentID: req.DeploymentID, ExecutorID: req.ExecutorID,
		RunID: req.RunID, LockExpiresAt: req.LockExpiresAt, RetryConfig: req.RetryConfig, SkipHistory: req.SkipHistory}
	p.CreatedAt = timePtr(req.CreatedAt)
	return p
}

// timePtr returns &t, or nil for the zero time (the server's clock).
func timePtr(t core.Timestamp) *core.Timestamp {
	if t.IsZero() {
		return nil
	}
	return &t
}

func lockedOf(js []wire.LockedExecutionJSON) []core.LockedExecution {
	out := make([]core.LockedExecution, len(js))
	for i, l := range js {
		out[i] = l.Core()
	}
	return out
}

// lockPending sends one lock-pending request that waits up to wait.
func (c *Client) lockPending(ctx context.Context, req core.LockRequest, sel LockSelector, wait time.Duration) ([]core.LockedExecution, error) {
	if req.BatchSize == 0 || (sel.ffqns != nil && len(sel.ffqns) == 0) {
		return []core.LockedExecution{}, nil // as in-process: nothing to lock
	}
	b := wire.LockPendingBody{LockParams: lockParams(req), BatchSize: min(req.BatchSize, wire.MaxLockBatch),
		PendingAtOrSooner: timePtr(req.PendingAtOrSooner), FFQNs: sel.ffqns, WaitMs: uint64(wait.Milliseconds())}
	var out []wire.LockedExecutionJSON
	if _, err := c.post(ctx, http.MethodPost, sel.path, b, unsafe, &out); err != nil {
		return []core.LockedExecution{}, err
	}
	return lockedOf(out), nil
}

// LockPendingByFFQNs implements core.DbExecutor. A zero req.CreatedAt or
// req.PendingAtOrSooner means "now" on the server's clock; BatchSize is
// capped at wire.MaxLockBatch (fewer locked is allowed by the contract).
func (c *Client) LockPendingByFFQNs(ctx context.Context, req core.LockRequest, ffqns []core.FunctionFqn) ([]core.LockedExecution, error) {
	return c.lockPending(ctx, req, ByFFQNs(ffqns...), 0)
}

// LockPendingByFFQNsAuto implements core.DbExecutor (see LockPendingByFFQNs).
func (c *Client) LockPendingByFFQNsAuto(ctx context.Context, req core.LockRequest, ffqns []core.FunctionFqn) ([]core.LockedExecution, error) {
	return c.lockPending(ctx, req, ByFFQNsAuto(ffqns...), 0)
}

// LockPendingByComponentDigest implements core.DbExecutor (see LockPendingByFFQNs).
func (c *Client) LockPendingByComponentDigest(ctx context.Context, req core.LockRequest) ([]core.LockedExecution, error) {
	return c.lockPending(ctx, req, ByComponentDigest(), 0)
}

// LockPendingWait locks what sel selects, and when nothing is pending waits
// up to wait (bounded by ctx) for an execution to become pending and locks
// it: the server long-polls (WaitForPending… then lock again), so a worker
// is woken as soon as work arrives. Leave req.CreatedAt and
// req.PendingAtOrSooner zero to have the server stamp the lock and select
// due executions at the moment it locks (not when the call started); choose
// req.LockExpiresAt with the wait in mind. An empty result after wait is not
// an error.
func (c *Client) LockPendingWait(ctx context.Context, req core.LockRequest, sel LockSelector, wait time.Duration) ([]core.LockedExecution, error) {
	return c.lockPendingWait(ctx, ctx, req, sel, wait)
}

// lockPendingWait is LockPendingWait whose requests run under ctx; no new
// request is sent once stop is done.
func (c *Client) lockPendingWait(ctx, stop context.Context, req core.LockRequest, sel LockSelector, wait time.Duration) ([]core.LockedExecution, error) {
	end := time.Now().Add(wait)
	for {
		slice, ok := waitSlice(ctx, min(time.Until(end), c.maxWait))
		if !ok {
			slice = 0
		}
		locked, err := c.lockPending(ctx, req, sel, slice)
		if err != nil || len(locked) > 0 || time.Until(end) <= time.Millisecond || slice == 0 || stop.Err() != nil {
			return locked, err
		}
	}
}

// LockPending implements core.WorkerConn. With a wait, the server long-polls
// (LockPendingWait) and stamps the lock when it takes it: req's created_at
// and pending_at_or_sooner are left to its clock, and lock_expires_at is
// moved by the wait so that a lock taken late still gets its lease. The
// requests are not cancelled with ctx (an answer lost would leave its
// executions locked until their lease ends): they run to their end,
// bounded by the wait and the lease, and ctx only stops further requests.
func (c *Client) LockPending(ctx context.Context, req core.LockRequest, ffqns []core.FunctionFqn, wait time.Duration) ([]core.LockedExecution, error) {
	lease := req.LockExpiresAt.Sub(req.CreatedAt.Time)
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), max(wait, 0)+lease)
	defer cancel()
	sel := ByFFQNs(ffqns...)
	if req.ByComponentDigest {
		sel = ByComponentDigest()
	}
	if wait <= 0 {
		return c.lockPending(lctx, req, sel, 0)
	}
	req.CreatedAt, req.PendingAtOrSooner = core.Timestamp{}, core.Timestamp{}
	req.LockExpiresAt = req.LockExpiresAt.Add(wait)
	return c.lockPendingWait(lctx, ctx, req, sel, wait)
}

// LockOne implements core.DbExecutor (a zero req.CreatedAt is the server's clock).
func (c *Client) LockOne(ctx context.Context, req core.LockRequest, id core.ExecutionId, version core.Version) (core.LockedExecution, error) {
	var out wire.LockedExecutionJSON
	if _, err := c.post(ctx, http.MethodPost, wire.PathWorkerLockOne,
		wire.LockOneBody{LockParams: lockParams(req), ExecutionID: id, Version: version}, unsafe, &out); err != nil {
		return core.LockedExecution{}, err
	}
	return out.Core(), nil
}

// --- version-guarded writes ----------------------------------------------------------------

// appendCall posts a version-guarded write of batch to id at version and
// returns the next version. A 409 answering a retry after an ambiguous
// failure is resolved by reading the events back (see the package
// documentation).
func (c *Client) appendCall(ctx context.Context, path string, body any, id core.ExecutionId, version core.Version, batch []core.AppendRequest) (core.Version, error) {
	next, _, err := c.appendCallLocked(ctx, path, body, id, version, batch)
	return next, err
}

// appendCallLocked is appendCall that also returns the answer's `locked`
// (create-children with eager locks; absent from the other routes). A 409
// resolved by reading the events back answers no locks.
func (c *Client) appendCallLocked(ctx context.Context, path string, body any, id core.ExecutionId, version core.Version, batch []core.AppendRequest) (core.Version, []wire.LockedExecutionJSON, error) {
	a, err := c.appendCallAnswer(ctx, path, body, id, version, batch)
	return a.NextVersion, a.Locked, err
}

// appendAnswer is what the append routes answer: next_version, and
// `locked` (create-children with eager locks) or `response_cursor`
// (respond-to-parent).
type appendAnswer struct {
	wire.CreateChildrenAnswer
	ResponseCursor *core.ResponseCursor `json:"response_cursor,omitempty"`
}

// appendCallAnswer is appendCall with the whole answer. A 409 resolved by
// reading the events back answers only next_version.
func (c *Client) appendCallAnswer(ctx context.Context, path string, body any, id core.ExecutionId, version core.Version, batch []core.AppendRequest) (appendAnswer, error) {
	var out appendAnswer
	resp, err := c.post(ctx, http.MethodPost, path, body, idempotent, &out)
	if err == nil {
		return out, nil
	}
	if resp == nil || !resp.Ambiguous || resp.Status != http.StatusConflict {
		return appendAnswer{}, err
	}
	if next, ok := c.committed(ctx, id, version, batch); ok {
		return appendAnswer{CreateChildrenAnswer: wire.CreateChildrenAnswer{NextVersion: next}}, nil
	}
	return appendAnswer{}, err
}

// committed reports whether the events of id from version on are batch (the
// write of a lost answer committed) and, if so, the version the write
// returned: after the batch, or the Finished event's own version.
func (c *Client) committed(ctx context.Context, id core.ExecutionId, version core.Version, batch []core.AppendRequest) (core.Version, bool) {
	if len(batch) == 0 || len(batch) > wire.MaxPageLength {
		return 0, false
	}
	page, err := c.ListExecutionEvents(ctx, id, core.Pagination[core.Version]{Direction: core.NewerThan,
		Length: uint16(len(batch)), Cursor: version, IncludingCursor: true}, false)
	if err != nil || len(page.Events) != len(batch) {
		return 0, false
	}
	for i, ev := range page.Events {
		if ev.Version != version+core.Version(i) || !sameRequest(core.AppendRequest{CreatedAt: ev.CreatedAt, Event: ev.Event}, batch[i]) {
			return 0, false
		}
	}
	next := version + core.Version(len(batch))
	if _, fin := batch[len(batch)-1].Event.(*core.Finished); fin {
		next--
	}
	return next, true
}

// sameRequest compares two requests in core's JSON, the form the store keeps.
func sameRequest(a, b core.AppendRequest) bool {
	ja, err1 := core.MarshalJSON(a)
	jb, err2 := core.MarshalJSON(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

func batchBody(currentTime core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, version core.Version) wire.AppendBatchBody {
	return wire.AppendBatchBody{CurrentTime: timePtr(currentTime), Batch: batch, ExecutionID: id, Version: version}
}

// Append implements core.DbExecutor; like every version-guarded write it
// may be coalesced with the client's other writes (see the package
// documentation, "Coalesced writes").
func (c *Client) Append(ctx context.Context, id core.ExecutionId, version core.Version, req core.AppendRequest) (core.Version, error) {
	next, _, err := c.writes.write(ctx, &pendingWrite{one: true,
		item: AppendItem{ExecutionID: id, Version: version, Batch: []core.AppendRequest{req}, CurrentTime: req.CreatedAt}})
	return next, err
}

// appendRoute is Append by its own route.
func (c *Client) appendRoute(ctx context.Context, id core.ExecutionId, version core.Version, req core.AppendRequest) (core.Version, error) {
	return c.appendCall(ctx, wire.PathWorkerAppend, wire.AppendBody{ExecutionID: id, Version: version, Req: req},
		id, version, []core.AppendRequest{req})
}

// AppendBatch implements core.DbConnection (a zero currentTime is the
// server's clock); it may be coalesced like Append.
func (c *Client) AppendBatch(ctx context.Context, currentTime core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, version core.Version) (core.Version, error) {
	next, _, err := c.writes.write(ctx, &pendingWrite{item: AppendItem{ExecutionID: id, Version: version, Batch: batch, CurrentTime: currentTime}})
	return next, err
}

// appendBatchRoute is AppendBatch by its own route.
func (c *Client) appendBatchRoute(ctx context.Context, currentTime core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, version core.Version) (core.Version, error) {
	return c.appendCall(ctx, wire.PathWorkerAppendBatch, batchBody(currentTime, batch, id, version), id, version, batch)
}

// AppendBatchCreateNewExecution implements core.DbConnection.
func (c *Client) AppendBatchCreateNewExecution(ctx context.Context, currentTime core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, version core.Version, children []core.CreateRequest, backtraces []core.BacktraceInfo) (core.Version, error) {
	if children == nil {
		children = []core.CreateRequest{}
	}
	return c.appendCall(ctx, wire.PathWorkerCreateChildren, wire.CreateChildrenBody{
		AppendBatchBody: batchBody(currentTime, batch, id, version), Children: children, Backtraces: backtraces}, id, version, batch)
}

// AppendBatchCreateNewExecutionLocked implements core.EagerChildCreator:
// create-children with the body's `lock` field (eager dispatch). The answer
// lists the children created locked to the caller; the request is retried
// after an ambiguous failure, and the server answers the retry of a write
// that committed with the same locks. A server that predates the field
// refuses it (422 unknown field `lock`): the request is sent again without
// it, answering no locks, and later ones go without it.
func (c *Client) AppendBatchCreateNewExecutionLocked(ctx context.Context, currentTime core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, version core.Version, children []core.CreateRequest, backtraces []core.BacktraceInfo, locks []core.EagerLock) (core.Version, []core.LockedExecution, error) {
	if len(locks) == 0 || c.noEager.Load() {
		next, err := c.AppendBatchCreateNewExecution(ctx, currentTime, batch, id, version, children, backtraces)
		return next, nil, err
	}
	if children == nil {
		children = []core.CreateRequest{}
	}
	body := wire.CreateChildrenBody{AppendBatchBody: batchBody(currentTime, batch, id, version), Children: children,
		Backtraces: backtraces, Lock: make([]wire.EagerLockJSON, len(locks))}
	for i, l := range locks {
		body.Lock[i] = wire.EagerLockJSON{LockParams: lockParams(l.Request), BatchSize: l.Request.BatchSize,
			FFQNs: l.FFQNs, ByComponentDigest: l.Request.ByComponentDigest}
	}
	next, locked, err := c.appendCallLocked(ctx, wire.PathWorkerCreateChildren, body, id, version, batch)
	var ae *Error
	if errors.As(err, &ae) && ae.Status == http.StatusUnprocessableEntity && strings.Contains(ae.Message, "unknown field `lock`") {
		c.noEager.Store(true)
		next, err := c.AppendBatchCreateNewExecution(ctx, currentTime, batch, id, version, children, backtraces)
		return next, nil, err
	}
	// A server answers the retry of a committed eager write with its locks
	// itself; a write resolved by reading it back (a server that cannot
	// lock eagerly) answers none: those children are pending.
	return next, lockedOf(locked), err
}

// AppendBatchRespondToParent implements core.DbExecutor; it may be
// coalesced like Append.
func (c *Client) AppendBatchRespondToParent(ctx context.Context, events core.AppendEventsToExecution, resp core.AppendResponseToExecution, currentTime core.Timestamp) (core.Version, error) {
	next, _, err := c.AppendBatchRespondToParentAt(ctx, events, resp, currentTime)
	return next, err
}

// AppendBatchRespondToParentAt implements core.ResponseCursorReporter:
// the cursor is the server's response_cursor (0 from a server that
// predates it, for a deferred response, or when a lost answer was
// resolved by reading the events back).
func (c *Client) AppendBatchRespondToParentAt(ctx context.Context, events core.AppendEventsToExecution, resp core.AppendResponseToExecution, currentTime core.Timestamp) (core.Version, core.ResponseCursor, error) {
	return c.writes.write(ctx, &pendingWrite{item: AppendItem{ExecutionID: events.ExecutionID, Version: events.Version,
		Batch: events.Batch, CurrentTime: currentTime, Response: &resp}})
}

var _ core.ResponseCursorReporter = (*Client)(nil)

// respondToParentRoute is AppendBatchRespondToParent by its own route.
func (c *Client) respondToParentRoute(ctx context.Context, events core.AppendEventsToExecution, resp core.AppendResponseToExecution, currentTime core.Timestamp) (core.Version, core.ResponseCursor, error) {
	a, err := c.appendCallAnswer(ctx, wire.PathWorkerRespondToParent, wire.RespondToParentBody{
		Events: events, Response: resp, CurrentTime: timePtr(currentTime)}, events.ExecutionID, events.Version, events.Batch)
	return a.NextVersion, cursorOf(a.ResponseCursor), err
}

// cursorOf is an optional wire cursor: 0 when absent.
func cursorOf(c *core.ResponseCursor) core.ResponseCursor {
	if c == nil {
		return 0
	}
	return *c
}

// AppendItem is one write of AppendMany: a batch appended to ExecutionID
// at Version (AppendBatch) or, with Response set, a child's batch and its
// response to its parent (AppendBatchRespondToParent; ExecutionID is the
// child). A zero CurrentTime is the server's clock.
type AppendItem struct {
	ExecutionID core.ExecutionId
	Version     core.Version
	Batch       []core.AppendRequest
	CurrentTime core.Timestamp
	Response    *core.AppendResponseToExecution
}

// AppendResult is one item's outcome: the next version, or the error its
// single method would have returned.
type AppendResult struct {
	NextVersion core.Version
	// ResponseCursor is, for an item with a Response, the cursor the
	// response got in the parent when the server told (0 otherwise).
	ResponseCursor core.ResponseCursor
	Err            error
}

// AppendMany writes items, to different executions, in one request
// (POST /v1/worker/append-batch/many): each item is atomic on its own and
// answered on its own, so a worker finishing many executions pays one
// request instead of one per execution. The error is the request's; the
// items' are in the results, in order. Like the single writes, an item
// answered 409 after an ambiguous failure is resolved by reading its events
// back.
func (c *Client) AppendMany(ctx context.Context, items []AppendItem) ([]AppendResult, error) {
	body := wire.AppendManyBody{Items: make([]wire.AppendManyItem, len(items))}
	for i, it := range items {
		if it.Response != nil {
			body.Items[i].RespondToParent = &wire.RespondToParentBody{Events: core.AppendEventsToExecution{
				ExecutionID: it.ExecutionID, Version: it.Version, Batch: it.Batch}, Response: *it.Response, CurrentTime: timePtr(it.CurrentTime)}
		} else {
			b := batchBody(it.CurrentTime, it.Batch, it.ExecutionID, it.Version)
			body.Items[i].Append = &b
		}
	}
	var out wire.AppendManyJSON
	resp, err := c.post(ctx, http.MethodPost, wire.PathWorkerAppendMany, body, idempotent, &out)
	if err != nil {
		return nil, err
	}
	if len(out.Results) != len(items) {
		return nil, fmt.Errorf("client: POST %s: %d results for %d items", wire.PathWorkerAppendMany, len(out.Results), len(items))
	}
	results := make([]AppendResult, len(items))
	for i, r := range out.Results {
		if r.NextVersion != nil {
			results[i].NextVersion, results[i].ResponseCursor = *r.NextVersion, cursorOf(r.ResponseCursor)
			continue
		}
		results[i].Err = &Error{Status: r.Status, Message: r.Err, Method: http.MethodPost, Path: wire.PathWorkerAppendMany,
			cause: causeOf(r.Status, r.Err)}
		if resp.Ambiguous && r.Status == http.StatusConflict {
			if next, ok := c.committed(ctx, items[i].ExecutionID, items[i].Version, items[i].Batch); ok {
				results[i] = AppendResult{NextVersion: next}
			}
		}
	}
	return results, nil
}

// AppendBatchWithDelayResponse implements core.DbConnection.
func (c *Client) AppendBatchWithDelayResponse(ctx context.Context, currentTime core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, version core.Version, js core.JoinSetId, delay core.DelayId) (core.Version, error) {
	return c.appendCall(ctx, wire.PathWorkerDelayResponse, wire.DelayResponseBody{
		AppendBatchBody: batchBody(currentTime, batch, id, version), JoinSetID: js, DelayID: delay}, id, version, batch)
}

// UpsertStubResponse implements core.DbConnection: an equal return value
// already stored succeeds, a different one is core.ErrStubConflict.
func (c *Client) UpsertStubResponse(ctx context.Context, id core.ExecutionIdDerived, version core.Version, req core.AppendRequest, resp core.AppendResponseToExecution, currentTime core.Timestamp) error {
	_, err := c.post(ctx, http.MethodPost, wire.PathWorkerStubResponse, wire.StubResponseBody{
		ExecutionID: id, Version: version, Req: req, Response: resp, CurrentTime: timePtr(currentTime)}, idempotent, nil)
	var e *Error
	if errors.As(err, &e) && errors.Is(e.cause, core.ErrConflict) {
		e.cause = core.ErrStubConflict
	}
	return err
}

// Create implements core.DbConnection (POST /v1/worker/create): it returns 1,
// or 2 when req.Paused. An id that exists is core.ErrConflict, unless the
// answer of an earlier attempt was lost and the stored creation equals req.
func (c *Client) Create(ctx context.Context, req core.CreateRequest) (core.Version, error) {
	var out wire.NextVersionJSON
	resp, err := c.post(ctx, http.MethodPost, wire.PathWorkerCreate, req, idempotent, &out)
	if err == nil {
		return out.NextVersion, nil
	}
	if resp != nil && resp.Ambiguous && resp.Status == http.StatusConflict && c.storedIs(ctx, req) {
		if req.Paused {
			return 2, nil
		}
		return 1, nil
	}
	return 0, err
}

// storedIs reports whether the stored create request of req's id is req:
// a 409 to a create retried after an ambiguous failure is then its own
// first attempt, which committed.
func (c *Client) storedIs(ctx context.Context, req core.CreateRequest) bool {
	stored, gerr := c.GetCreateRequest(ctx, req.ExecutionID)
	sent := req
	sent.Paused = false // GetCreateRequest does not report it
	a, err1 := core.MarshalJSON(stored)
	b, err2 := core.MarshalJSON(sent)
	return gerr == nil && err1 == nil && err2 == nil && bytes.Equal(a, b)
}

// CreateLocked implements core.EagerCreator (POST /v1/worker/create-locked,
// eager start): the create, with the execution locked to the caller in the
// same commit when lock takes it. Retried after an ambiguous failure: the
// server answers the retry of a create that committed with the same lock;
// if that lock is gone by then (expired, taken by another run) the retry's
// 409 is resolved as Create resolves it — the stored request is this one,
// so it is created, with no lock to answer. A server that predates the
// route (404, 405) gets a plain Create, and later calls go without a lock.
func (c *Client) CreateLocked(ctx context.Context, req core.CreateRequest, lock core.EagerLock) (core.Version, []core.LockedExecution, error) {
	if c.noEagerStart.Load() {
		next, err := c.Create(ctx, req)
		return next, nil, err
	}
	body := wire.CreateLockedBody{Request: &req, Lock: wire.EagerLockJSON{LockParams: lockParams(lock.Request),
		BatchSize: 1, FFQNs: lock.FFQNs, ByComponentDigest: lock.Request.ByComponentDigest}}
	var out wire.CreateChildrenAnswer
	resp, err := c.post(ctx, http.MethodPost, wire.PathWorkerCreateLocked, body, idempotent, &out)
	if err == nil {
		return out.NextVersion, lockedOf(out.Locked), nil
	}
	var ae *Error
	if errors.As(err, &ae) && (ae.Status == http.StatusNotFound || ae.Status == http.StatusMethodNotAllowed) {
		c.noEagerStart.Store(true)
		next, err := c.Create(ctx, req)
		return next, nil, err
	}
	if resp != nil && resp.Ambiguous && resp.Status == http.StatusConflict && c.storedIs(ctx, req) {
		if req.Paused {
			return 2, nil, nil
		}
		return 1, nil, nil
	}
	return 0, nil, err
}

var _ core.EagerBatchCreator = (*Client)(nil)

// CreateLockedMany implements core.EagerBatchCreator (POST
// /v1/worker/create-locked with `requests`, at most wire.MaxCreateLocked;
// lock.Request.BatchSize must be len(reqs)): each request is created in its
// own commit under the one lock and answered on its own. Retried after an
// ambiguous failure: the server answers each request as CreateLocked's
// retry, and an item's 409 is resolved as CreateLocked resolves it (the
// stored request is this one: created, with no lock to answer). A server
// that predates batches (422 unknown field `requests`) or the route (404,
// 405) gets one CreateLocked per request, and later batches go so too.
func (c *Client) CreateLockedMany(ctx context.Context, reqs []core.CreateRequest, lock core.EagerLock) ([]core.CreateLockedResult, error) {
	if len(reqs) == 0 {
		return []core.CreateLockedResult{}, nil
	}
	if c.noEagerStart.Load() || c.noEagerBatch.Load() || len(reqs) > wire.MaxCreateLocked {
		return c.createLockedEach(ctx, reqs, lock), nil
	}
	body := wire.CreateLockedBody{Requests: reqs, Lock: wire.EagerLockJSON{LockParams: lockParams(lock.Request),
		BatchSize: lock.Request.BatchSize, FFQNs: lock.FFQNs, ByComponentDigest: lock.Request.ByComponentDigest}}
	var out wire.CreateLockedManyAnswer
	resp, err := c.post(ctx, http.MethodPost, wire.PathWorkerCreateLocked, body, idempotent, &out)
	var ae *Error
	switch {
	case err == nil:
	case errors.As(err, &ae) && (ae.Status == http.StatusNotFound || ae.Status == http.StatusMethodNotAllowed):
		c.noEagerStart.Store(true)
		return c.createLockedEach(ctx, reqs, lock), nil
	case errors.As(err, &ae) && ae.Status == http.StatusUnprocessableEntity && strings.Contains(ae.Message, "unknown field `requests`"):
		c.noEagerBatch.Store(true)
		return c.createLockedEach(ctx, reqs, lock), nil
	default:
		return nil, err
	}
	if len(out.Results) != len(reqs) {
		return nil, fmt.Errorf("client: POST %s: %d results for %d requests", wire.PathWorkerCreateLocked, len(out.Results), len(reqs))
	}
	results := make([]core.CreateLockedResult, len(reqs))
	for i, r := range out.Results {
		if r.NextVersion != nil {
			results[i].NextVersion = *r.NextVersion
			if r.Locked != nil {
				le := r.Locked.Core()
				results[i].Locked = &le
			}
			continue
		}
		if resp.Ambiguous && r.Status == http.StatusConflict && c.storedIs(ctx, reqs[i]) {
			results[i].NextVersion = 1
			if reqs[i].Paused {
				results[i].NextVersion = 2
			}
			continue
		}
		results[i].Err = &Error{Status: r.Status, Message: r.Err, Method: http.MethodPost, Path: wire.PathWorkerCreateLocked,
			cause: causeOf(r.Status, r.Err)}
	}
	return results, nil
}

// createLockedEach is CreateLockedMany by one CreateLocked per request, in
// parallel.
func (c *Client) createLockedEach(ctx context.Context, reqs []core.CreateRequest, lock core.EagerLock) []core.CreateLockedResult {
	one := lock
	one.Request.BatchSize = 1
	results := make([]core.CreateLockedResult, len(reqs))
	var wg sync.WaitGroup
	for i := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			next, locked, err := c.CreateLocked(ctx, reqs[i], one)
			results[i] = core.CreateLockedResult{NextVersion: next, Err: err}
			if err == nil && len(locked) > 0 {
				results[i].Locked = &locked[0]
			}
		}()
	}
	wg.Wait()
	return results
}

// AppendBatchFiringDelay implements core.DelayFireAppender (POST
// /v1/worker/append-batch/fire-delay): the delay's fire and the batch in
// one commit. Retried after an ambiguous failure: the retry of a write that
// committed finds the delay fired, and its 409 is resolved by reading the
// batch back (outcome answered). A server that predates the route (405,
// or 404 "not found": the route answers an unknown execution or delay
// with 404 "execution or delay not found") gets FireDelay and then
// AppendBatch, from then on. That is not atomic: a batch such a server
// refuses leaves the delay fired (it was due: the sweep would have fired
// it too). Such a server cannot tell a delay fired by its sweep from a
// cancelled one either, so its "answered" is reported as
// DelayFireCancelled (the caller gives the run up and the next run
// replays the response, whichever it is).
func (c *Client) AppendBatchFiringDelay(ctx context.Context, currentTime core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, version core.Version, delay core.DelayId) (core.FireAppendAnswer, error) {
	if !c.noFireAppend.Load() {
		var out wire.FireAppendAnswer
		resp, err := c.post(ctx, http.MethodPost, wire.PathWorkerFireAppend, wire.FireAppendBody{
			AppendBatchBody: batchBody(currentTime, batch, id, version), DelayID: delay}, idempotent, &out)
		var ae *Error
		switch {
		case err == nil:
			o, ok := core.ParseDelayFireOutcome(out.Outcome)
			if !ok {
				return core.FireAppendAnswer{}, fmt.Errorf("client: fire delay %s and append: unknown outcome %q", delay, out.Outcome)
			}
			ans := core.FireAppendAnswer{DelayFireAnswer: core.DelayFireAnswer{Outcome: o}}
			if out.NextVersion != nil {
				ans.NextVersion = *out.NextVersion
			}
			if out.FiredAt != nil && out.ResponseCursor != nil {
				ans.FiredAt, ans.Cursor = *out.FiredAt, *out.ResponseCursor
			}
			return ans, nil
		case errors.As(err, &ae) && (ae.Status == http.StatusNotFound && ae.Message == "not found" || ae.Status == http.StatusMethodNotAllowed):
			c.noFireAppend.Store(true)
		case resp != nil && resp.Ambiguous && resp.Status == http.StatusConflict:
			if next, ok := c.committed(ctx, id, version, batch); ok {
				return core.FireAppendAnswer{DelayFireAnswer: core.DelayFireAnswer{Outcome: core.DelayFireAnswered}, NextVersion: next}, nil
			}
			return core.FireAppendAnswer{}, err
		default:
			return core.FireAppendAnswer{}, err
		}
	}
	fired, err := c.FireDelay(ctx, delay)
	if err != nil {
		return core.FireAppendAnswer{}, err
	}
	switch fired.Outcome {
	case core.DelayFireNotDue:
		return core.FireAppendAnswer{DelayFireAnswer: fired}, nil
	case core.DelayFireAnswered:
		return core.FireAppendAnswer{DelayFireAnswer: core.DelayFireAnswer{Outcome: core.DelayFireCancelled}}, nil
	}
	next, err := c.appendBatchRoute(ctx, currentTime, batch, id, version)
	if err != nil {
		return core.FireAppendAnswer{}, err
	}
	return core.FireAppendAnswer{DelayFireAnswer: fired, NextVersion: next}, nil
}

var _ core.DelayFireAppender = (*Client)(nil)

// FireDelay implements core.DelayFirer (POST
// /v1/worker/delays/{delay_id}/fire): the server fires delay when it is
// due at its clock and unpaused. Idempotent (a retry of a fire that
// committed answers "answered"). A server that predates the route (405,
// or 404 "not found"; the route answers an unknown delay with 404
// "execution or delay not found", an error wrapping core.ErrNotFound) gets
// no more calls: FireDelay then answers DelayFireNotDue, and the server's
// timers sweep fires the delay as before.
func (c *Client) FireDelay(ctx context.Context, delay core.DelayId) (core.DelayFireAnswer, error) {
	if c.noFireDelay.Load() {
		return core.DelayFireAnswer{Outcome: core.DelayFireNotDue}, nil
	}
	var out wire.FireDelayAnswer
	_, err := c.post(ctx, http.MethodPost, wire.Path(wire.PathWorkerFireDelay, delay.String()), nil, idempotent, &out)
	var ae *Error
	if errors.As(err, &ae) && (ae.Status == http.StatusNotFound && ae.Message == "not found" || ae.Status == http.StatusMethodNotAllowed) {
		c.noFireDelay.Store(true)
		return core.DelayFireAnswer{Outcome: core.DelayFireNotDue}, nil
	}
	if err != nil {
		return core.DelayFireAnswer{}, err
	}
	o, ok := core.ParseDelayFireOutcome(out.Outcome)
	if !ok {
		return core.DelayFireAnswer{}, fmt.Errorf("client: fire delay %s: unknown outcome %q", delay, out.Outcome)
	}
	ans := core.DelayFireAnswer{Outcome: o}
	if o == core.DelayFired && out.FiredAt != nil && out.ResponseCursor != nil {
		ans.FiredAt, ans.Cursor = *out.FiredAt, *out.ResponseCursor
	}
	return ans, nil
}

var _ core.DelayFirer = (*Client)(nil)

// --- reads ------------------------------------------------------------------------------------

// Get implements core.DbConnection (GET /v1/worker/executions/{id}/log).
func (c *Client) Get(ctx context.Context, id core.ExecutionId) (*core.ExecutionLog, error) {
	var out wire.ExecutionLogJSON
	if err := c.get(ctx, wire.Path(wire.PathWorkerExecutionLog, id.String()), nil, &out); err != nil {
		return nil, err
	}
	l := out.Core()
	return &l, nil
}

// ReadHistory returns the history events of id with version >= fromVersion,
// its responses with cursor > afterCursor and its next version, read
// consistently (GET /v1/worker/executions/{id}/history); see
// core.DbConnection.
func (c *Client) ReadHistory(ctx context.Context, id core.ExecutionId, fromVersion core.Version, afterCursor core.ResponseCursor) (core.HistoryDelta, error) {
	q := url.Values{"from_version": {strconv.FormatUint(uint64(fromVersion), 10)}, "after_cursor": {strconv.FormatUint(uint64(afterCursor), 10)}}
	var out wire.HistoryDeltaJSON
	if err := c.get(ctx, wire.Path(wire.PathWorkerHistory, id.String()), q, &out); err != nil {
		return core.HistoryDelta{}, err
	}
	return out.Core(), nil
}

// GetExecutionEvent implements core.DbConnection (through the events route).
func (c *Client) GetExecutionEvent(ctx context.Context, id core.ExecutionId, version core.Version) (core.ExecutionEvent, error) {
	page, err := c.ListExecutionEvents(ctx, id, core.Pagination[core.Version]{Direction: core.NewerThan, Length: 1,
		Cursor: version, IncludingCursor: true}, false)
	if err != nil {
		return core.ExecutionEvent{}, err
	}
	if len(page.Events) != 1 || page.Events[0].Version != version {
		return core.ExecutionEvent{}, fmt.Errorf("client: event %d of %s: %w", version, id, core.ErrNotFound)
	}
	return page.Events[0], nil
}

// GetLastExecutionEvent implements core.DbExecutor (through the events route).
func (c *Client) GetLastExecutionEvent(ctx context.Context, id core.ExecutionId) (core.ExecutionEvent, error) {
	page, err := c.ListExecutionEvents(ctx, id, core.Pagination[core.Version]{Direction: core.OlderThan, Length: 1,
		Cursor: core.Version(^uint32(0)), IncludingCursor: true}, false)
	if err != nil {
		return core.ExecutionEvent{}, err
	}
	if len(page.Events) == 0 {
		return core.ExecutionEvent{}, fmt.Errorf("client: last event of %s: %w", id, core.ErrNotFound)
	}
	return page.Events[len(page.Events)-1], nil
}

// GetCreateRequest implements core.DbConnection (from the event at version 0).
func (c *Client) GetCreateRequest(ctx context.Context, id core.ExecutionId) (core.CreateRequest, error) {
	ev, err := c.GetExecutionEvent(ctx, id, 0)
	if err != nil {
		return core.CreateRequest{}, err
	}
	created, ok := ev.Event.(*core.Created)
	if !ok {
		return core.CreateRequest{}, fmt.Errorf("client: execution log of %s must start with creation", id)
	}
	return core.CreateRequestFrom(id, ev.CreatedAt, created), nil
}

// GetPendingState implements core.DbConnection (GET /v1/executions/{id}/status).
func (c *Client) GetPendingState(ctx context.Context, id core.ExecutionId) (core.ExecutionWithState, error) {
	var out core.ExecutionWithState
	err := c.get(ctx, wire.Path(wire.PathExecutionStatus, id.String()), nil, &out)
	return out, err
}

// GetExpiredTimers implements core.DbConnection (GET /v1/worker/expired-timers).
func (c *Client) GetExpiredTimers(ctx context.Context, at core.Timestamp) ([]core.ExpiredTimer, error) {
	var q url.Values
	if !at.IsZero() {
		q = url.Values{"at": {at.String()}}
	}
	var out []wire.ExpiredTimerJSON
	if err := c.get(ctx, wire.PathWorkerExpiredTimers, q, &out); err != nil {
		return nil, err
	}
	timers := make([]core.ExpiredTimer, len(out))
	for i, t := range out {
		timers[i] = core.ExpiredTimer(t)
	}
	return timers, nil
}

// GetCancelling implements core.DbConnection (GET /v1/worker/cancelling;
// batchSize is capped at wire.MaxCancellingBatch).
func (c *Client) GetCancelling(ctx context.Context, batchSize uint32) ([]core.ExecutionId, error) {
	if batchSize == 0 {
		return []core.ExecutionId{}, nil
	}
	q := url.Values{"batch_size": {strconv.Itoa(int(min(batchSize, wire.MaxCancellingBatch)))}}
	var out []core.ExecutionId
	err := c.get(ctx, wire.PathWorkerCancelling, q, &out)
	return out, err
}

// --- waits ---------------------------------------------------------------------------------------

// SubscribeToNextResponses implements core.DbConnection: it long-polls
// GET …/next-responses until a response after lastResponse exists or ctx is
// done (then the error wraps core.ErrTimeout). An unknown execution waits.
func (c *Client) SubscribeToNextResponses(ctx context.Context, id core.ExecutionId, lastResponse core.ResponseCursor) ([]core.ResponseWithCursor, error) {
	for {
		wait, ok := waitSlice(ctx, c.maxWait)
		if !ok || ctx.Err() != nil {
			return nil, timeoutErr(ctx)
		}
		q := url.Values{"last_response": {strconv.FormatUint(uint64(lastResponse), 10)}, "wait_ms": {strconv.FormatInt(wait.Milliseconds(), 10)}}
		var out wire.ResponsesJSON
		if err := c.get(ctx, wire.Path(wire.PathWorkerNextResponses, id.String()), q, &out); err != nil {
			if ctx.Err() != nil {
				return nil, timeoutErr(ctx)
			}
			return nil, err
		}
		if len(out.Responses) > 0 {
			return out.Responses, nil
		}
	}
}

// WaitForFinishedResult implements core.DbConnection: it long-polls
// GET …/result until the execution finished (its storage return value) or
// ctx is done (an error wrapping core.ErrTimeout); core.ErrNotFound for an
// unknown execution.
func (c *Client) WaitForFinishedResult(ctx context.Context, id core.ExecutionId) (core.ReturnValue, error) {
	for {
		wait, ok := waitSlice(ctx, c.maxWait)
		if !ok || ctx.Err() != nil {
			return core.ReturnValue{}, timeoutErr(ctx)
		}
		var rv core.ReturnValue
		err := c.get(ctx, wire.Path(wire.PathWorkerResult, id.String()), url.Values{"wait_ms": {strconv.FormatInt(wait.Milliseconds(), 10)}}, &rv)
		switch {
		case err == nil:
			return rv, nil
		case errors.Is(err, ErrNotFinished):
		case ctx.Err() != nil:
			return core.ReturnValue{}, timeoutErr(ctx)
		default:
			return core.ReturnValue{}, err
		}
	}
}

// --- logs, backtraces, sweep -------------------------------------------------------------------------

// AppendBacktrace implements core.DbConnection. Unlike the store, which logs
// failures and returns nil, it returns the error (callers may ignore it).
func (c *Client) AppendBacktrace(ctx context.Context, bt core.BacktraceInfo) error {
	_, err := c.AppendBacktraceBatch(ctx, []core.BacktraceInfo{bt})
	return err
}

// AppendBacktraceBatch implements core.DbConnection (POST /v1/worker/backtraces).
func (c *Client) AppendBacktraceBatch(ctx context.Context, batch []core.BacktraceInfo) (int, error) {
	if len(batch) == 0 {
		return 0, nil
	}
	var out wire.InsertedJSON
	_, err := c.post(ctx, http.MethodPost, wire.PathWorkerBacktraces, wire.AppendBacktracesBody{Backtraces: batch}, idempotent, &out)
	return out.Inserted, err
}

// AppendLog implements core.DbConnection.
func (c *Client) AppendLog(ctx context.Context, row core.LogInfoAppendRow) error {
	return c.AppendLogBatch(ctx, []core.LogInfoAppendRow{row})
}

// AppendLogBatch implements core.DbConnection (POST /v1/worker/logs).
func (c *Client) AppendLogBatch(ctx context.Context, rows []core.LogInfoAppendRow) error {
	if len(rows) == 0 {
		return nil
	}
	body := wire.AppendLogsBody{Logs: make([]wire.LogRowJSON, len(rows))}
	for i, r := range rows {
		body.Logs[i] = wire.NewLogRowJSON(r)
	}
	_, err := c.post(ctx, http.MethodPost, wire.PathWorkerLogs, body, unsafe, nil)
	return err
}

// Sweep runs one timer sweep through POST /v1/worker/sweep and returns the
// server's report (with stela dev and the Lambdas, store.SweepResult:
// expired_locks, expired_delays, skipped). The sweep runs at the server's
// clock, or at at when at is earlier (zero: the server's clock); an at
// ahead of the server's clock by more than its skew bound is a
// *core.ValidationError (docs/http-api.md §1, "Event times").
func (c *Client) Sweep(ctx context.Context, at core.Timestamp) (json.RawMessage, error) {
	var out json.RawMessage
	_, err := c.post(ctx, http.MethodPost, wire.PathWorkerSweep, wire.SweepBody{At: timePtr(at)}, idempotent, &out)
	return out, err
}

// FunctionComponent returns the component of the store's current
// deployment that exports ffqn (not as an extension function) and that
// deployment: GET /v1/deployment-id, then GET /v1/components filtered by
// ffqn. It is how a worker learns the component type of a function it
// does not serve before creating an execution of it. core.ErrNotFound
// when the store has no deployment or none of its components exports ffqn.
func (c *Client) FunctionComponent(ctx context.Context, ffqn core.FunctionFqn) (core.ComponentId, core.DeploymentId, error) {
	dep, err := c.GetCurrentDeploymentID(ctx)
	if err != nil {
		return core.ComponentId{}, core.DeploymentId{}, err
	}
	comps, err := c.ListComponents(ctx, ComponentQuery{DeploymentID: &dep, FFQN: &ffqn, Exports: true})
	if err != nil {
		return core.ComponentId{}, core.DeploymentId{}, err
	}
	for _, comp := range comps {
		if comp.Exports == nil {
			continue
		}
		for _, e := range *comp.Exports {
			if e.FFQN == ffqn && e.Extension == nil {
				return comp.ComponentID, dep, nil
			}
		}
	}
	return core.ComponentId{}, core.DeploymentId{}, fmt.Errorf("client: no component of %s exports %s: %w", dep, ffqn, core.ErrNotFound)
}
