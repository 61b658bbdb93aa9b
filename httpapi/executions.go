package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"unicode/utf8"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/wire"
)

// GET /v1/execution-id
func (s *server) generateExecutionID(c *call) error {
	id, err := s.newExecutionID()
	if err != nil {
		return err
	}
	return c.reply(http.StatusOK, id, id.String)
}

// GET /v1/executions
func (s *server) listExecutions(c *call) error {
	q, filter, err := s.listFilter(c)
	if err != nil {
		return err
	}
	if filter.StateFilters, err = stateFilters(q); err != nil {
		return err
	}
	length, err := q.length(wire.MaxPageLength)
	if err != nil {
		return err
	}
	including, err := q.boolean("including_cursor", false)
	if err != nil {
		return err
	}
	dir, err := q.direction(core.OlderThan)
	if err != nil {
		return err
	}
	p, err := listPagination(q, dir, length, including)
	if err != nil {
		return err
	}
	list, err := s.db.ListExecutions(c.ctx(), filter, p)
	if err != nil {
		return err
	}
	list = nonNil(list)
	if next := nextPageQuery(c.r.URL.Query(), p, list); next != "" {
		c.w.Header().Set("Link", "<?"+next+`>; rel="next"`)
	}
	return c.reply(http.StatusOK, list, func() string { return executionsText(list) })
}

// listPagination reads the cursor of GET /v1/executions (docs/http-api.md
// §3.5). `order` names the key the pages sort by: created_at (default;
// cursor absent, an RFC 3339 timestamp, plus cursor_execution_id for a
// position) or execution_id (cursor absent or an execution id). An
// execution-id cursor without order=execution_id is refused: a walk whose
// first page came without a cursor is by created_at, and continuing it with
// the id of its last row would cut a page from another order (losing and
// repeating rows).
func listPagination(q query, dir core.Direction, length uint16, including bool) (core.ExecutionListPagination, error) {
	var p core.ExecutionListPagination
	byID := false
	switch q.str("order") {
	case "", "created_at":
	case "execution_id":
		byID = true
	default:
		return p, queryErr("order", "expected `created_at` or `execution_id`")
	}
	raw, hasCursor := q.str("cursor"), q.has("cursor")
	switch {
	case byID:
		p.ExecutionID = &core.Pagination[*core.ExecutionId]{Direction: dir, Length: length, IncludingCursor: including}
		if hasCursor {
			id, err := core.ParseExecutionId(raw)
			if err != nil {
				return p, queryErr("cursor", "with order=execution_id, expected an execution id")
			}
			p.ExecutionID.Cursor = &id
		}
	default:
		p.CreatedBy = &core.Pagination[*core.Timestamp]{Direction: dir, Length: length, IncludingCursor: including}
		if hasCursor {
			ts, err := core.ParseTimestamp(raw)
			if err != nil {
				if _, idErr := core.ParseExecutionId(raw); idErr == nil {
					return p, queryErr("cursor", "an execution id cursor pages by execution id: send `order=execution_id` on every page of the walk, "+
						"the first too; to continue a walk by creation time send `cursor=<created_at>&cursor_execution_id=<execution_id>` of its last row, "+
						`or follow the Link: rel="next" header`)
				}
				return p, queryErr("cursor", "expected an RFC 3339 timestamp (or, with order=execution_id, an execution id)")
			}
			p.CreatedBy.Cursor = &ts
		}
	}
	// Stela extension: the tie-break of a created_at cursor (docs/http-api.md §3.5).
	if q.has("cursor_execution_id") {
		if p.CreatedBy == nil || p.CreatedBy.Cursor == nil {
			return p, queryErr("cursor_execution_id", "needs an RFC 3339 timestamp `cursor`")
		}
		id, err := core.ParseExecutionId(q.str("cursor_execution_id"))
		if err != nil {
			return p, queryErr("cursor_execution_id", "expected an execution id")
		}
		p.CreatedByID = &id
	}
	return p, nil
}

// nextPageQuery returns the query string of the page after list (the page
// cut with p from the request's query q), or "" when list is not full: the
// same query with the cursor moved to the last row in scan order (the
// oldest for older, the newest for newer), as the position in the page's
// own order — created_at and execution_id, or the execution id — and
// including_cursor dropped. It is the Link: rel="next" of the answer.
func nextPageQuery(q url.Values, p core.ExecutionListPagination, list []core.ExecutionWithState) string {
	desc, length := p.Window()
	if len(list) == 0 || len(list) < length {
		return ""
	}
	last := list[len(list)-1]
	if !desc {
		last = list[0]
	}
	next := url.Values{}
	for k, v := range q {
		switch k {
		case "cursor", "cursor_execution_id", "including_cursor", "order":
		default:
			next[k] = v
		}
	}
	if p.ExecutionID != nil {
		next.Set("order", "execution_id")
		next.Set("cursor", last.ExecutionID.String())
	} else {
		next.Set("cursor", last.CreatedAt.String())
		next.Set("cursor_execution_id", last.ExecutionID.String())
	}
	return next.Encode()
}

// GET /v1/executions/{execution_id}
func (s *server) getRetval(c *call) error {
	id, err := pathExecutionID(c.r)
	if err != nil {
		return err
	}
	q, err := c.query()
	if err != nil {
		return err
	}
	follow, err := q.boolean("follow", false)
	if err != nil {
		return err
	}
	ev, err := s.db.GetLastExecutionEvent(c.ctx(), id)
	if err != nil {
		return err
	}
	if f, ok := ev.Event.(*core.Finished); ok {
		return c.json(http.StatusOK, retVal{f.Retval})
	}
	if follow {
		rv, done, err := s.waitFinished(c.ctx(), id)
		if err != nil {
			return err
		}
		if done {
			return c.json(http.StatusOK, retVal{rv})
		}
		c.w.Header().Set("Retry-After", "0")
	}
	return httpErr(http.StatusTooEarly, "not finished yet")
}

// waitFinished long-polls for the result for at most FollowWait; done is
// false when the bound elapsed first.
func (s *server) waitFinished(ctx context.Context, id core.ExecutionId) (rv core.ReturnValue, done bool, err error) {
	wctx, cancel := s.pollContext(ctx, s.followWait)
	defer cancel()
	rv, err = s.db.WaitForFinishedResult(wctx, id)
	switch {
	case err == nil:
		return rv, true, nil
	case s.pollEnded(ctx, err):
		return rv, false, nil
	}
	return rv, false, err
}

// retVal is Obelisk's lossy, untyped web RetVal: {"ok": v|null},
// {"err": v|null} or {"execution_failed": {kind, reason?, detail?}}.
type retVal struct{ v core.ReturnValue }

func (r retVal) MarshalJSON() ([]byte, error) {
	switch r.v.Kind {
	case core.ReturnOk, core.ReturnErr:
		key := "ok"
		if r.v.Kind == core.ReturnErr {
			key = "err"
		}
		val := json.RawMessage("null")
		if r.v.Value != nil && len(r.v.Value.Value) > 0 {
			val = r.v.Value.Value
		}
		return core.MarshalJSON(map[string]json.RawMessage{key: val})
	case core.ReturnExecutionFailure:
		return core.MarshalJSON(map[string]*core.FinishedExecutionFailure{"execution_failed": r.v.Failure})
	}
	return nil, errors.New("httpapi: invalid return value")
}

// GET /v1/executions/{execution_id}/status
func (s *server) getStatus(c *call) error {
	id, err := pathExecutionID(c.r)
	if err != nil {
		return err
	}
	st, err := s.db.GetPendingState(c.ctx(), id)
	if err != nil {
		return err
	}
	return c.reply(http.StatusOK, st, func() string { return st.PendingState.String() })
}

// GET /v1/executions/{execution_id}/events
func (s *server) listEvents(c *call) error {
	id, err := pathExecutionID(c.r)
	if err != nil {
		return err
	}
	q, err := c.query()
	if err != nil {
		return err
	}
	version, err := q.optUint("version", 32)
	if err != nil {
		return err
	}
	length, err := q.length(wire.MaxPageLength)
	if err != nil {
		return err
	}
	including, err := q.boolean("including_cursor", false)
	if err != nil {
		return err
	}
	dir, err := q.direction(core.NewerThan)
	if err != nil {
		return err
	}
	withBT, err := q.boolean("include_backtrace_id", false)
	if err != nil {
		return err
	}
	cursor := openCursor(version, dir)
	page, err := s.db.ListExecutionEvents(c.ctx(), id, core.Pagination[core.Version]{
		Direction: dir, Length: length, Cursor: core.Version(cursor), IncludingCursor: including}, withBT)
	if err != nil {
		return err
	}
	page.Events = nonNil(page.Events)
	return c.reply(http.StatusOK, page, func() string { return eventsText(page.Events) })
}

// openCursor returns the explicit cursor, else 0 (newer) or u32::MAX (older).
func openCursor(explicit *uint64, dir core.Direction) uint32 {
	switch {
	case explicit != nil:
		return uint32(*explicit)
	case dir == core.OlderThan:
		return u32Max
	}
	return 0
}

// GET /v1/executions/{execution_id}/responses
func (s *server) listResponses(c *call) error {
	id, err := pathExecutionID(c.r)
	if err != nil {
		return err
	}
	q, err := c.query()
	if err != nil {
		return err
	}
	var js *core.JoinSetId
	if q.has("join_set") {
		if q.str("join_set") == "" {
			return queryErr("join_set", "must not be empty")
		}
		j, err := core.NewJoinSetId(core.JoinSetKindNamed, q.str("join_set"))
		if err != nil {
			return queryErr("join_set", "invalid join set name")
		}
		js = &j
	}
	cursor, err := q.optUint("cursor", 32)
	if err != nil {
		return err
	}
	length, err := q.length(wire.MaxPageLength)
	if err != nil {
		return err
	}
	including, err := q.boolean("including_cursor", false)
	if err != nil {
		return err
	}
	dir, err := q.direction(core.NewerThan)
	if err != nil {
		return err
	}
	page, err := s.db.ListResponses(c.ctx(), id, core.Pagination[core.ResponseCursor]{
		Direction: dir, Length: length, Cursor: core.ResponseCursor(openCursor(cursor, dir)), IncludingCursor: including}, js)
	if err != nil {
		return err
	}
	page.Responses = nonNil(page.Responses)
	return c.reply(http.StatusOK, page, func() string { return responsesText(page.Responses) })
}

// GET /v1/executions/{execution_id}/logs
func (s *server) listLogs(c *call) error {
	id, err := pathExecutionID(c.r)
	if err != nil {
		return err
	}
	q, err := c.query()
	if err != nil {
		return err
	}
	var filter core.LogFilter
	for _, l := range q.all("level") {
		lv, ok := wire.LogLevelByName(l)
		if !ok {
			return queryErr("level", "expected trace, debug, info, warn or error")
		}
		filter.Levels = append(filter.Levels, lv)
	}
	for _, st := range q.all("stream_type") {
		t, ok := wire.StreamTypeByName(st)
		if !ok {
			return queryErr("stream_type", "expected stdout or stderr")
		}
		filter.StreamTypes = append(filter.StreamTypes, t)
	}
	if filter.ShowLogs, err = q.boolean("show_logs", true); err != nil {
		return err
	}
	if filter.ShowStreams, err = q.boolean("show_streams", true); err != nil {
		return err
	}
	if !filter.ShowLogs && !filter.ShowStreams {
		return badRequest("at least one of `show_logs`, `show_streams` must be set")
	}
	showDerived, err := q.boolean("show_derived", false)
	if err != nil {
		return err
	}
	showRunID, err := q.boolean("show_run_id", false)
	if err != nil {
		return err
	}
	length, err := q.length(wire.MaxPageLength)
	if err != nil {
		return err
	}
	including, err := q.boolean("including_cursor", false)
	if err != nil {
		return err
	}
	dir, err := q.direction(core.NewerThan)
	if err != nil {
		return err
	}
	if filter.CreatedAfter, err = q.optTimestamp("after"); err != nil {
		return err
	}
	cursor := core.LogCursorMin
	if dir == core.OlderThan {
		cursor = core.LogCursorMax
	}
	if q.has("cursor") {
		raw := q.str("cursor")
		if cur, ok := wire.DecodeLogCursor(raw); ok {
			cursor = cur
		} else if ts, err := core.ParseTimestamp(raw); err == nil {
			// Legacy: a timestamp cursor bounds created_at instead.
			if dir == core.NewerThan {
				if filter.CreatedAfter == nil || ts.After(*filter.CreatedAfter) {
					filter.CreatedAfter = &ts
				}
			} else {
				filter.CreatedBefore = &ts
			}
		} else {
			return badRequest("invalid log cursor")
		}
	}
	page, err := s.db.ListLogs(c.ctx(), id, showDerived, filter, core.Pagination[core.LogCursor]{
		Direction: dir, Length: length, Cursor: cursor, IncludingCursor: including})
	if err != nil {
		return err
	}
	items := make([]wire.LogEntryJSON, 0, len(page.Items))
	for _, row := range page.Items {
		items = append(items, wire.NewLogEntryJSON(row))
	}
	return c.reply(http.StatusOK, items, func() string { return logsText(page.Items, showRunID, showDerived) })
}

// PUT /v1/executions/{execution_id}/cancel
func (s *server) cancelExecution(c *call) error {
	id, err := pathExecutionID(c.r)
	if err != nil {
		return err
	}
	out, err := core.CancelExecution(c.ctx(), s.db, id, s.now())
	if err != nil {
		return err
	}
	switch out {
	case core.CancelAlreadyFinished:
		return httpErr(http.StatusConflict, "already finished")
	case core.CancelAlreadyCancelling:
		return httpErr(http.StatusConflict, "already cancelling")
	}
	return c.ok(http.StatusOK, "cancellation requested")
}

// PUT /v1/executions/{execution_id}/pause
func (s *server) pauseExecution(c *call) error {
	id, err := pathExecutionID(c.r)
	if err != nil {
		return err
	}
	if _, err := s.db.PauseExecution(c.ctx(), id, s.now()); err != nil {
		return err
	}
	return c.ok(http.StatusOK, "paused")
}

// PUT /v1/executions/{execution_id}/unpause
func (s *server) unpauseExecution(c *call) error {
	id, err := pathExecutionID(c.r)
	if err != nil {
		return err
	}
	if _, err := s.db.UnpauseExecution(c.ctx(), id, s.now()); err != nil {
		return err
	}
	return c.ok(http.StatusOK, "unpaused")
}

// PUT /v1/executions/{execution_id}/stub
func (s *server) stubExecution(c *call) error {
	raw := c.r.PathValue("execution_id")
	child, err := core.ParseExecutionIdDerived(raw)
	if err != nil {
		return &apiError{status: http.StatusBadRequest, msg: idErrText("execution id", raw, err), err: err}
	}
	setExecutionID(c.r, child)
	var rv core.ReturnValue
	if err := c.decodeBody(&rv); err != nil {
		return err
	}
	cr, err := s.db.GetCreateRequest(c.ctx(), child.ExecutionId)
	if err != nil {
		return err
	}
	if cr.ComponentID.ComponentType != core.ComponentTypeActivityStub {
		return httpErr(http.StatusNotFound, "function not found")
	}
	parent, js, _ := child.SplitToParts()
	if err := core.StubExecution(c.ctx(), s.db, child, parent, js, s.now(), rv); err != nil {
		return err
	}
	return c.ok(http.StatusOK, "stubbed")
}

// parseBacktraceVersion parses `version` = first | last (default) | <u32>.
func parseBacktraceVersion(q query) (core.BacktraceFilter, error) {
	switch v := q.str("version"); {
	case !q.has("version") || v == "last":
		return core.BacktraceFilter{Kind: "last"}, nil
	case v == "first":
		return core.BacktraceFilter{Kind: "first"}, nil
	default:
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return core.BacktraceFilter{}, badRequest("invalid version value `%s`", v)
		}
		return core.BacktraceFilter{Kind: "specific", Specific: core.Version(n)}, nil
	}
}

// GET /v1/executions/{execution_id}/backtrace
func (s *server) getBacktrace(c *call) error {
	id, err := pathExecutionID(c.r)
	if err != nil {
		return err
	}
	q, err := c.query()
	if err != nil {
		return err
	}
	filter, err := parseBacktraceVersion(q)
	if err != nil {
		return err
	}
	bt, err := s.db.GetBacktrace(c.ctx(), id, filter)
	if err != nil {
		return orMessage(err, core.ErrNotFound, http.StatusNotFound, "backtrace not found")
	}
	return c.reply(http.StatusOK, bt, func() string { return backtraceText(bt) })
}

// GET /v1/executions/{execution_id}/backtrace/source
func (s *server) getBacktraceSource(c *call) error {
	id, err := pathExecutionID(c.r)
	if err != nil {
		return err
	}
	q, err := c.query()
	if err != nil {
		return err
	}
	file := q.str("file")
	if file == "" {
		return badRequest("missing query parameter `file`")
	}
	filter, err := parseBacktraceVersion(q)
	if err != nil {
		return err
	}
	bt, err := s.db.GetBacktrace(c.ctx(), id, filter)
	if err != nil {
		return orMessage(err, core.ErrNotFound, http.StatusNotFound, "backtrace not found")
	}
	digest, err := s.db.ResolveSourceDigest(c.ctx(), bt.ComponentID.ComponentDigest, file)
	if err != nil {
		return orMessage(err, core.ErrNotFound, http.StatusNotFound, "source file not found")
	}
	if s.cas == nil {
		return core.ErrNotImplemented
	}
	b, err := s.cas.ReadBlob(c.ctx(), digest)
	if err != nil {
		return orMessage(err, core.ErrNotFound, http.StatusNotFound, "file not found")
	}
	if !utf8.Valid(b) {
		return httpErr(http.StatusInternalServerError, "source file is not valid UTF-8")
	}
	src := string(b)
	return c.reply(http.StatusOK, src, func() string { return src })
}

// GET /v1/executions/{execution_id}/history (Stela extension): the
// execution's history as core.ExecutionHistory.Marshal writes it, byte for
// byte the file `stela execution history export` writes, as an attachment
// named <id>.json (the console's "Download history").
func (s *server) exportHistory(c *call) error {
	id, err := pathExecutionID(c.r)
	if err != nil {
		return err
	}
	log, err := s.db.Get(c.ctx(), id)
	if err != nil {
		return err
	}
	h, err := core.HistoryOf(log)
	if err != nil {
		return err
	}
	b, err := h.Marshal()
	if err != nil {
		return err
	}
	c.w.Header().Set("Content-Type", contentTypeJSON)
	c.w.Header().Set("Content-Disposition", `attachment; filename="`+id.String()+`.json"`)
	c.w.WriteHeader(http.StatusOK)
	_, _ = c.w.Write(b)
	return nil
}

// upgradeBody is the body of PUT …/upgrade.
type upgradeBody struct {
	Old                  *core.ComponentDigest `json:"old" required:"true"`
	New                  *core.ComponentDigest `json:"new" required:"true"`
	SkipDeterminismCheck bool                  `json:"skip_determinism_check"`
}

// PUT /v1/executions/{execution_id}/upgrade: with skip_determinism_check
// the move itself; without, a replay check by a worker of the new digest
// first (upgradeChecked, upgradecheck.go).
func (s *server) upgradeExecution(c *call) error {
	id, err := pathExecutionID(c.r)
	if err != nil {
		return err
	}
	var body upgradeBody
	if err := c.decodeBody(&body); err != nil {
		return err
	}
	if !body.SkipDeterminismCheck {
		return s.upgradeChecked(c, id, *body.Old, *body.New)
	}
	reason := core.ComponentUpgradeReason{Manual: true, Force: true}
	if err := s.db.UpgradeExecutionComponent(c.ctx(), id, *body.Old, *body.New, reason); err != nil {
		return err
	}
	return c.ok(http.StatusOK, "upgraded")
}

// PUT /v1/delays/{delay_id}/cancel
func (s *server) cancelDelay(c *call) error {
	delay, err := pathDelayID(c.r)
	if err != nil {
		return err
	}
	out, err := core.CancelDelay(c.ctx(), s.db, delay, s.now())
	if err != nil {
		return err
	}
	if out == core.DelayAlreadyFinished {
		return httpErr(http.StatusConflict, "already finished")
	}
	return c.ok(http.StatusOK, "cancelled")
}

// POST /v1/worker/delays/{delay_id}/fire (core.DelayFirer): the delay's
// DelayFinished(Ok) response when it is due at the store's time and
// unpaused; a store that cannot fire on request answers not_due (the
// sweep fires it).
func (s *server) workerFireDelay(c *call) error {
	delay, err := pathDelayID(c.r)
	if err != nil {
		return err
	}
	f, ok := s.db.(core.DelayFirer)
	if !ok {
		return c.json(http.StatusOK, wire.FireDelayAnswer{Outcome: core.DelayFireNotDue.String()})
	}
	out, err := f.FireDelay(c.ctx(), delay)
	if errors.Is(err, core.ErrNotFound) {
		// Named, so that a client tells it from the 404 of a server
		// that predates the route ("not found").
		return httpErr(http.StatusNotFound, msgDelayNotFound)
	}
	if err != nil {
		return err
	}
	ans := wire.FireDelayAnswer{Outcome: out.Outcome.String()}
	if out.Outcome == core.DelayFired && out.Cursor != 0 {
		ans.FiredAt, ans.ResponseCursor = &out.FiredAt, &out.Cursor
	}
	return c.json(http.StatusOK, ans)
}

// PUT /v1/delays/{delay_id}/pause
func (s *server) pauseDelay(c *call) error {
	delay, err := pathDelayID(c.r)
	if err != nil {
		return err
	}
	if err := s.db.PauseDelay(c.ctx(), delay); err != nil {
		return err
	}
	return c.ok(http.StatusOK, "paused")
}

// PUT /v1/delays/{delay_id}/unpause
func (s *server) unpauseDelay(c *call) error {
	delay, err := pathDelayID(c.r)
	if err != nil {
		return err
	}
	if err := s.db.UnpauseDelay(c.ctx(), delay); err != nil {
		return err
	}
	return c.ok(http.StatusOK, "unpaused")
}

// notImplemented answers the Obelisk routes that need a running engine.
func notImplemented(*server, *call) error {
	return httpErr(http.StatusNotImplemented, "not implemented: this route needs the Obelisk engine")
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// POST /v1/executions/{execution_id}/signals/{name} (Stela extension:
// core.SendSignal).
func (s *server) signalExecution(c *call) error {
	id, err := pathExecutionID(c.r)
	if err != nil {
		return err
	}
	name := c.r.PathValue("name")
	if err := core.ValidateSignalName(name); err != nil {
		return &apiError{status: http.StatusBadRequest, msg: "`name`: " + err.Error(), err: err}
	}
	var body wire.SignalBody
	if err := c.decodeBody(&body); err != nil {
		return err
	}
	if len(body.Key) > wire.MaxSignalKeyLen {
		return httpErr(http.StatusBadRequest, fmt.Sprintf("`key`: longer than %d bytes", wire.MaxSignalKeyLen))
	}
	if len(body.Value) == 0 {
		return httpErr(http.StatusBadRequest, "`value`: missing")
	}
	if body.Key == "" {
		var b [12]byte
		_, _ = rand.Read(b[:])
		body.Key = hex.EncodeToString(b[:])
	}
	seq, err := core.SendSignal(c.ctx(), s.db, id, name, core.SignalPayload{Key: body.Key, Value: body.Value}, s.now())
	if err != nil {
		return err
	}
	stub, _, _ := core.SignalStubID(id, name, seq)
	return c.json(http.StatusOK, wire.SignalResponse{Seq: seq, StubExecutionID: stub.String()})
}
