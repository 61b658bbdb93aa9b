package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/wire"
)

// --- handlers ----------------------------------------------------------------------

func checkBatch(name string, n, lo, hi int) error {
	if n < lo || n > hi {
		return badRequest("`%s` must have between %d and %d entries, got %d", name, lo, hi, n)
	}
	return nil
}

func lockedJSON(locked []core.LockedExecution) []wire.LockedExecutionJSON {
	out := make([]wire.LockedExecutionJSON, 0, len(locked))
	for _, l := range locked {
		out = append(out, wire.NewLockedExecutionJSON(l))
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
	var b wire.LockPendingBody
	if err := c.decodeBody(&b); err != nil {
		return err
	}
	if err := s.timeBound().lock(&b.LockParams); err != nil {
		return err
	}
	if b.BatchSize < 1 || b.BatchSize > wire.MaxLockBatch {
		return badRequest("`batch_size` must be between 1 and %d", wire.MaxLockBatch)
	}
	if kind == lockByDigest {
		if b.FFQNs != nil {
			return unprocessable(errors.New("unknown field `ffqns`"))
		}
	} else if err := checkBatch("ffqns", len(b.FFQNs), 1, wire.MaxAppendBatch); err != nil {
		return err
	}
	lock := func() ([]core.LockedExecution, core.LockRequest, error) {
		req := b.Request(s.now(), b.BatchSize, b.PendingAtOrSooner)
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
	for len(locked) == 0 && b.WaitMs > 0 && !s.draining() {
		remaining := time.Until(deadline)
		if remaining <= 0 {
			break
		}
		wctx, cancel := s.pollContext(c.ctx(), min(remaining, lockWaitSlice))
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
	var b wire.LockOneBody
	if err := c.decodeBody(&b); err != nil {
		return err
	}
	if err := s.timeBound().lock(&b.LockParams); err != nil {
		return err
	}
	setExecutionID(c.r, b.ExecutionID)
	locked, err := s.db.LockOne(c.ctx(), b.Request(s.now(), 1, nil), b.ExecutionID, b.Version)
	if err != nil {
		return err
	}
	return c.json(http.StatusOK, wire.NewLockedExecutionJSON(locked))
}

func (s *server) timeOr(t *core.Timestamp) core.Timestamp {
	if t != nil {
		return *t
	}
	return s.now()
}

// POST /v1/worker/append
func (s *server) workerAppend(c *call) error {
	var b wire.AppendBody
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
	return c.json(http.StatusOK, wire.NextVersionJSON{NextVersion: next})
}

// POST /v1/worker/append-batch
func (s *server) workerAppendBatch(c *call) error {
	var b wire.AppendBatchBody
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
	return c.json(http.StatusOK, wire.NextVersionJSON{NextVersion: next})
}

// appendBatchOf checks and commits an append-batch body (the route and an
// append-batch/many item).
func (s *server) appendBatchOf(ctx context.Context, b *wire.AppendBatchBody) (core.Version, error) {
	if err := checkBatch("batch", len(b.Batch), 1, wire.MaxAppendBatch); err != nil {
		return 0, err
	}
	return s.db.AppendBatch(ctx, s.timeOr(b.CurrentTime), b.Batch, b.ExecutionID, b.Version)
}

// POST /v1/worker/append-batch/create-children
func (s *server) workerCreateChildren(c *call) error {
	var b wire.CreateChildrenBody
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
	if err := checkBatch("batch", len(b.Batch), 1, wire.MaxAppendBatch); err != nil {
		return err
	}
	if err := checkBatch("batch` + `children", len(b.Batch)+len(b.Children), 1, wire.MaxAppendBatch); err != nil {
		return err
	}
	if err := checkBatch("backtraces", len(b.Backtraces), 0, wire.MaxBacktraceBatch); err != nil {
		return err
	}
	if len(b.Lock) > 0 {
		return s.createChildrenLocked(c, &b)
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
	return c.json(http.StatusOK, wire.NextVersionJSON{NextVersion: next})
}

// eagerCreator is what the create-children route needs of the store for a
// body with eager locks (store.Service).
type eagerCreator interface {
	AppendBatchCreateNewExecutionLockedChecked(ctx context.Context, currentTime core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, version core.Version, children []core.CreateRequest, backtraces []core.BacktraceInfo, locks []core.EagerLock) (core.Version, []core.LockedExecution, error)
}

// createChildrenLocked is create-children with eager locks (wire.EagerLockJSON,
// docs/http-api.md §4.1): the children they take are created locked and
// answered in `locked`. A store that cannot lock eagerly creates them
// pending and answers no lock.
func (s *server) createChildrenLocked(c *call, b *wire.CreateChildrenBody) error {
	if len(b.Lock) > maxEagerLocks {
		return badRequest("`lock` has %d entries, at most %d", len(b.Lock), maxEagerLocks)
	}
	now := s.now()
	locks := make([]core.EagerLock, len(b.Lock))
	for i, l := range b.Lock {
		if l.BatchSize < 1 || l.BatchSize > wire.MaxAppendBatch {
			return badRequest("`lock[%d].batch_size` must be 1..%d", i, wire.MaxAppendBatch)
		}
		if len(l.FFQNs) == 0 {
			return badRequest("`lock[%d].ffqns` must name at least one function", i)
		}
		if err := s.timeBound().checkPtr(fmt.Sprintf("lock[%d].created_at", i), l.CreatedAt); err != nil {
			return err
		}
		req := l.Request(now, l.BatchSize, nil)
		req.ByComponentDigest = l.ByComponentDigest
		locks[i] = core.EagerLock{Request: req, FFQNs: l.FFQNs}
	}
	ec, ok := s.db.(eagerCreator)
	if !ok {
		checked, ok := s.db.(core.ChildWriteChecker)
		if !ok {
			return core.ErrNotImplemented
		}
		next, err := checked.AppendBatchCreateNewExecutionChecked(c.ctx(), s.timeOr(b.CurrentTime), b.Batch, b.ExecutionID, b.Version, b.Children, b.Backtraces)
		if err != nil {
			return err
		}
		return c.json(http.StatusOK, wire.CreateChildrenAnswer{NextVersion: next})
	}
	next, locked, err := ec.AppendBatchCreateNewExecutionLockedChecked(c.ctx(), s.timeOr(b.CurrentTime), b.Batch, b.ExecutionID, b.Version, b.Children, b.Backtraces, locks)
	if err != nil {
		return err
	}
	return c.json(http.StatusOK, lockedAnswer(next, locked))
}

// lockedAnswer is the answer of a write that created executions locked
// (create-children with eager locks, create-locked).
func lockedAnswer(next core.Version, locked []core.LockedExecution) wire.CreateChildrenAnswer {
	out := wire.CreateChildrenAnswer{NextVersion: next, Locked: make([]wire.LockedExecutionJSON, len(locked))}
	for i, le := range locked {
		out.Locked[i] = wire.NewLockedExecutionJSON(le)
	}
	return out
}

// maxEagerLocks bounds the entries of create-children's `lock` (one per
// lock group of the worker).
const maxEagerLocks = 8

// decodeNonEmptyBatch decodes into body a request that embeds an append
// batch (ab, a field of body), checks the batch's times and its size (at
// least one event) and names the execution for the request's log.
func (s *server) decodeNonEmptyBatch(c *call, body any, ab *wire.AppendBatchBody) error {
	if err := c.decodeBody(body); err != nil {
		return err
	}
	if err := s.timeBound().appendBatch("", ab); err != nil {
		return err
	}
	setExecutionID(c.r, ab.ExecutionID)
	return checkBatch("batch", len(ab.Batch), 1, wire.MaxAppendBatch)
}

// POST /v1/worker/append-batch/delay-response
func (s *server) workerDelayResponse(c *call) error {
	var b wire.DelayResponseBody
	if err := s.decodeNonEmptyBatch(c, &b, &b.AppendBatchBody); err != nil {
		return err
	}
	next, err := s.db.AppendBatchWithDelayResponse(c.ctx(), s.timeOr(b.CurrentTime), b.Batch, b.ExecutionID, b.Version, b.JoinSetID, b.DelayID)
	if err != nil {
		return err
	}
	return c.json(http.StatusOK, wire.NextVersionJSON{NextVersion: next})
}

// msgDelayNotFound is the 404 of the delay routes for an unknown execution
// or delay: not the mux's "not found", which tells a client that the
// server predates the route.
const msgDelayNotFound = "execution or delay not found"

// POST /v1/worker/append-batch/fire-delay (core.DelayFireAppender): a store
// that cannot fire and append in one commit answers not_due (the worker
// then gives the execution back, and the run that replays it after the
// sweep's fire writes the events).
func (s *server) workerFireAppend(c *call) error {
	var b wire.FireAppendBody
	if err := s.decodeNonEmptyBatch(c, &b, &b.AppendBatchBody); err != nil {
		return err
	}
	if owner, _ := b.DelayID.SplitToParts(); owner != b.ExecutionID {
		return httpErr(http.StatusBadRequest, "delay_id: "+b.DelayID.String()+" is not a delay of execution_id "+b.ExecutionID.String())
	}
	f, ok := s.db.(core.DelayFireAppender)
	if !ok {
		return c.json(http.StatusOK, wire.FireAppendAnswer{Outcome: core.DelayFireNotDue.String()})
	}
	out, err := f.AppendBatchFiringDelay(c.ctx(), s.timeOr(b.CurrentTime), b.Batch, b.ExecutionID, b.Version, b.DelayID)
	if errors.Is(err, core.ErrNotFound) {
		// Named, so that a client tells it from the 404 of a server
		// that predates the route ("not found").
		return httpErr(http.StatusNotFound, msgDelayNotFound)
	}
	if err != nil {
		return err
	}
	ans := wire.FireAppendAnswer{Outcome: out.Outcome.String()}
	if out.Outcome == core.DelayFired || out.Outcome == core.DelayFireAnswered {
		ans.NextVersion = &out.NextVersion
	}
	if out.Outcome == core.DelayFired && out.Cursor != 0 {
		ans.FiredAt, ans.ResponseCursor = &out.FiredAt, &out.Cursor
	}
	return c.json(http.StatusOK, ans)
}

// POST /v1/worker/append-batch/respond-to-parent
func (s *server) workerRespondToParent(c *call) error {
	var b wire.RespondToParentBody
	if err := c.decodeBody(&b); err != nil {
		return err
	}
	if err := s.timeBound().respondToParent("", &b); err != nil {
		return err
	}
	setExecutionID(c.r, b.Events.ExecutionID)
	next, cursor, err := s.respondToParentOf(c.ctx(), &b)
	if err != nil {
		return err
	}
	return c.json(http.StatusOK, wire.RespondToParentJSON{NextVersion: next, ResponseCursor: wire.CursorOrNil(cursor)})
}

// respondToParentOf checks and commits a respond-to-parent body (the route
// and an append-batch/many item).
func (s *server) respondToParentOf(ctx context.Context, b *wire.RespondToParentBody) (core.Version, core.ResponseCursor, error) {
	if err := checkBatch("events.batch", len(b.Events.Batch), 1, wire.MaxAppendBatch); err != nil {
		return 0, 0, err
	}
	// Checked against the child's batch and the parent's log in the same write (docs/http-api.md §4.1).
	checked, ok := s.db.(core.ChildWriteChecker)
	if !ok {
		return 0, 0, core.ErrNotImplemented
	}
	return checked.AppendBatchRespondToParentChecked(ctx, b.Events, b.Response, s.timeOr(b.CurrentTime))
}

// appendManyParallelism bounds the items of one many-write in flight.
const appendManyParallelism = 8

// POST /v1/worker/append-batch/many
func (s *server) workerAppendMany(c *call) error {
	var b wire.AppendManyBody
	if err := c.decodeBody(&b); err != nil {
		return err
	}
	if err := s.timeBound().many(&b); err != nil {
		return err
	}
	if err := checkBatch("items", len(b.Items), 1, wire.MaxAppendMany); err != nil {
		return err
	}
	results := make([]wire.AppendManyResult, len(b.Items))
	var g errgroup.Group
	g.SetLimit(appendManyParallelism)
	for i := range b.Items {
		g.Go(func() error {
			next, cursor, err := s.appendItem(c.ctx(), &b.Items[i])
			if err == nil {
				results[i] = wire.AppendManyResult{NextVersion: &next, ResponseCursor: wire.CursorOrNil(cursor)}
				return nil
			}
			status, msg := errorStatus(err)
			if status >= 500 && status != http.StatusNotImplemented && status != http.StatusServiceUnavailable {
				s.log.ErrorContext(c.ctx(), "append-many item failed", slog.Int("item", i), slog.Int(logKeyStatus, status),
					slog.String(logKeyErr, err.Error()))
			}
			results[i] = wire.AppendManyResult{Status: status, Err: msg}
			return nil
		})
	}
	_ = g.Wait()
	return c.json(http.StatusOK, wire.AppendManyJSON{Results: results})
}

// appendItem runs one item of a many-write as its single route would.
func (s *server) appendItem(ctx context.Context, it *wire.AppendManyItem) (core.Version, core.ResponseCursor, error) {
	switch {
	case it.Append != nil && it.RespondToParent == nil:
		next, err := s.appendBatchOf(ctx, it.Append)
		return next, 0, err
	case it.RespondToParent != nil && it.Append == nil:
		return s.respondToParentOf(ctx, it.RespondToParent)
	}
	return 0, 0, badRequest("an item must have exactly one of `append` and `respond_to_parent`")
}

// POST /v1/worker/stub-response
func (s *server) workerStubResponse(c *call) error {
	var b wire.StubResponseBody
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
	out := wire.ExecutionLogJSON(*l)
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
		wctx, cancel := s.pollContext(c.ctx(), time.Duration(s.clampWait(*wait))*time.Millisecond)
		defer cancel()
		rs, err = s.db.SubscribeToNextResponses(wctx, id, cursor)
		if err != nil && !s.pollEnded(c.ctx(), err) {
			return err
		}
	}
	return c.json(http.StatusOK, wire.ResponsesJSON{Responses: nonNil(rs)})
}

// POST /v1/worker/logs
func (s *server) workerAppendLogs(c *call) error {
	var b wire.AppendLogsBody
	if err := c.decodeBody(&b); err != nil {
		return err
	}
	if err := s.timeBound().logs(&b); err != nil {
		return err
	}
	if err := checkBatch("logs", len(b.Logs), 1, wire.MaxLogBatch); err != nil {
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
	var b wire.AppendBacktracesBody
	if err := c.decodeBody(&b); err != nil {
		return err
	}
	if err := checkBatch("backtraces", len(b.Backtraces), 1, wire.MaxBacktraceBatch); err != nil {
		return err
	}
	n, err := s.db.AppendBacktraceBatch(c.ctx(), b.Backtraces)
	if err != nil {
		return err
	}
	return c.json(http.StatusOK, wire.InsertedJSON{Inserted: n})
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
	out := make([]wire.ExpiredTimerJSON, 0, len(timers))
	for _, t := range timers {
		out = append(out, wire.ExpiredTimerJSON(t))
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
		if *n < 1 || *n > wire.MaxCancellingBatch {
			return queryErr("batch_size", fmt.Sprintf("must be between 1 and %d", wire.MaxCancellingBatch))
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
	var b wire.SweepBody
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
