package storetest

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/stela-dev/stela/core"
)

// Areas 12–14 and 18: listing and pagination, logs, backtraces, and the
// encoding unit tests that pin what the store must round-trip.
func listingScenarios() []contractTest {
	return []contractTest{
		{"T082_ListExecutionsFiltersByVersionedPackageName", t082},
		{"T084_ListExecutionEventsPaginationDirection", t084},
		{"T085_ListResponsesEmptyIsEmptyList", t085},
		{"T086_ListResponsesOfUnknownIdIsEmptyList", t086},
		{"T088_ListResponsesFiltersExactJoinSet", t088},
		{"T089_ResponseCursorsArePerExecution", t089},
		{"T090_ListResponsesPaginationDirection", t090},
		{"T098_ListLogsWithShowDerived", t098},
		{"T102_Backtraces", t102},
		{"T176_ResultKindsAreStoredExactly", t176},
		{"T177_FinishedPendingStateRoundTrips", t177},
		{"T178_OkHoldingNoneRoundTripsThroughStore", t178},
		{"T181_JoinNextTryOutcomesRoundTripThroughStore", t181},
		{"T182_JoinNextTrySerializesNewFormat", t182},
	}
}

func (h *harness) listExecutions(f core.ListExecutionsFilter, p core.ExecutionListPagination) []core.ExecutionWithState {
	h.t.Helper()
	got, err := h.db.ListExecutions(h.ctx, f, p)
	h.wantNoErr("list_executions", err)
	return got
}

func idsOf(l []core.ExecutionWithState) []core.ExecutionId {
	out := make([]core.ExecutionId, len(l))
	for i, e := range l {
		out[i] = e.ExecutionID
	}
	return out
}

func (h *harness) wantIDs(what string, got []core.ExecutionId, want ...core.ExecutionId) {
	h.t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		h.t.Fatalf("%s:\n got %v\nwant %v", what, got, want)
	}
}

func t082(h *harness) {
	a := h.create(withFFQN(mustFFQN("obelisk-client:api-http/executions@1.0.0-beta.generate")))
	h.create(withFFQN(mustFFQN("obelisk-client:api-http/executions@2.0.0-beta.generate")))
	got := h.listExecutions(core.ListExecutionsFilter{FunctionName: &core.FunctionNameFilter{Kind: "package", Value: "obelisk-client:api-http@1.0.0-beta"}},
		core.DefaultExecutionListPagination())
	h.wantIDs("versioned package filter", idsOf(got), a)
	if got[0].FFQN.String() != "obelisk-client:api-http/executions@1.0.0-beta.generate" {
		h.t.Fatalf("ffqn %s", got[0].FFQN)
	}
}

func versionsOf(evs []core.ExecutionEvent) []core.Version {
	out := make([]core.Version, len(evs))
	for i, e := range evs {
		out[i] = e.Version
	}
	return out
}

func t084(h *harness) {
	x := h.create()
	h.lockAny(t0.Add(100 * time.Millisecond))
	js := mustJS("o:")
	v := h.mustAppend(x, 2, jsc(js))
	for i := 1; i <= 5; i++ {
		v = h.mustAppend(x, v, dreq(js, core.NewDelayId(x, js, uint64(i)), t0.Add(time.Duration(10+i-1)*time.Second), schedNow))
	}
	for _, c := range []struct {
		p    core.Pagination[core.Version]
		want []core.Version
	}{
		{core.Pagination[core.Version]{Direction: core.NewerThan, Length: 3, Cursor: 0, IncludingCursor: true}, []core.Version{0, 1, 2}},
		{core.Pagination[core.Version]{Direction: core.NewerThan, Length: 2, Cursor: 2}, []core.Version{3, 4}},
		{core.Pagination[core.Version]{Direction: core.OlderThan, Length: 3, Cursor: math.MaxUint32, IncludingCursor: true}, []core.Version{5, 6, 7}},
		{core.Pagination[core.Version]{Direction: core.OlderThan, Length: 2, Cursor: 4}, []core.Version{2, 3}},
		{core.Pagination[core.Version]{Direction: core.OlderThan, Length: 2, Cursor: 4, IncludingCursor: true}, []core.Version{3, 4}},
	} {
		got, err := h.db.ListExecutionEvents(h.ctx, x, c.p, false)
		h.wantNoErr("list_execution_events", err)
		if fmt.Sprint(versionsOf(got.Events)) != fmt.Sprint(c.want) || got.MaxVersion != 7 {
			h.t.Fatalf("%+v: versions %v max %d, want %v max 7", c.p, versionsOf(got.Events), got.MaxVersion, c.want)
		}
	}
}

func (h *harness) listResponses(id core.ExecutionId, p core.Pagination[core.ResponseCursor], js *core.JoinSetId) core.ListResponsesResponse {
	h.t.Helper()
	got, err := h.db.ListResponses(h.ctx, id, p, js)
	h.wantNoErr("list_responses", err)
	return got
}

func cursorsOf(rs []core.ResponseWithCursor) []core.ResponseCursor {
	out := make([]core.ResponseCursor, len(rs))
	for i, r := range rs {
		out[i] = r.Cursor
	}
	return out
}

func newer(length uint16, cursor core.ResponseCursor, incl bool) core.Pagination[core.ResponseCursor] {
	return core.Pagination[core.ResponseCursor]{Direction: core.NewerThan, Length: length, Cursor: cursor, IncludingCursor: incl}
}

func older(length uint16, cursor core.ResponseCursor, incl bool) core.Pagination[core.ResponseCursor] {
	return core.Pagination[core.ResponseCursor]{Direction: core.OlderThan, Length: length, Cursor: cursor, IncludingCursor: incl}
}

func t085(h *harness) {
	x := h.create()
	if got := h.listResponses(x, newer(10, 0, true), nil); len(got.Responses) != 0 || got.MaxCursor != 0 {
		h.t.Fatalf("got %d responses max %d, want none", len(got.Responses), got.MaxCursor)
	}
}

func t086(h *harness) {
	if got := h.listResponses(newExecID(), newer(10, 0, true), nil); len(got.Responses) != 0 || got.MaxCursor != 0 {
		h.t.Fatalf("got %d responses max %d for an unknown id, want an empty page", len(got.Responses), got.MaxCursor)
	}
}

// delayAndRespond appends DREQ(js, Delay(x, js, idx)) at v and its DelayFinished(Ok) response.
func (h *harness) delayAndRespond(x core.ExecutionId, v core.Version, js core.JoinSetId, idx uint64) core.Version {
	h.t.Helper()
	d := core.NewDelayId(x, js, idx)
	v = h.mustAppend(x, v, dreq(js, d, h.now().Add(10*time.Second), schedNow))
	h.mustRespond(x, delayResp(js, d, true))
	return v
}

func t088(h *harness) {
	x := h.create()
	h.lockAny(t0.Add(time.Minute))
	target, oneOff, operator := mustJS("n:session-events"), mustJS("o:session-events"), mustJS("n:operator")
	v := core.Version(2)
	for _, js := range []core.JoinSetId{target, oneOff, operator} {
		v = h.mustAppend(x, v, jsc(js))
	}
	v = h.delayAndRespond(x, v, oneOff, 1)
	v = h.delayAndRespond(x, v, operator, 2)
	h.delayAndRespond(x, v, target, 3)

	got := h.listResponses(x, newer(2, 0, false), &target)
	if len(got.Responses) != 0 || got.ScanCursor != 2 || got.MaxCursor != 3 {
		h.t.Fatalf("first page: cursors %v scan %d max %d, want [] scan 2 max 3", cursorsOf(got.Responses), got.ScanCursor, got.MaxCursor)
	}
	got = h.listResponses(x, newer(2, 2, false), &target)
	if fmt.Sprint(cursorsOf(got.Responses)) != "[3]" || got.ScanCursor != 3 {
		h.t.Fatalf("second page: cursors %v scan %d, want [3] scan 3", cursorsOf(got.Responses), got.ScanCursor)
	}
	got = h.listResponses(x, newer(2, 3, false), &target)
	if len(got.Responses) != 0 || got.ScanCursor != 3 {
		h.t.Fatalf("third page: cursors %v scan %d, want [] scan 3", cursorsOf(got.Responses), got.ScanCursor)
	}
}

func t089(h *harness) {
	a := h.create()
	h.lockAny(t0.Add(time.Minute))
	b := h.create()
	h.lockAny(t0.Add(time.Minute))
	js := mustJS("o:")
	va, vb := h.mustAppend(a, 2, jsc(js)), h.mustAppend(b, 2, jsc(js))
	for i := uint64(1); i <= 3; i++ {
		va = h.delayAndRespond(a, va, js, i)
		vb = h.delayAndRespond(b, vb, js, i)
	}
	for _, x := range []core.ExecutionId{a, b} {
		got := h.listResponses(x, newer(10, 0, true), nil)
		if fmt.Sprint(cursorsOf(got.Responses)) != "[1 2 3]" || got.MaxCursor != 3 {
			h.t.Fatalf("%s: cursors %v max %d, want [1 2 3] max 3", x, cursorsOf(got.Responses), got.MaxCursor)
		}
	}
}

func t090(h *harness) {
	x := h.create()
	h.lockAny(t0.Add(time.Minute))
	js := mustJS("o:")
	v := h.mustAppend(x, 2, jsc(js))
	for i := uint64(1); i <= 5; i++ {
		v = h.delayAndRespond(x, v, js, i)
	}
	for _, c := range []struct {
		p    core.Pagination[core.ResponseCursor]
		want string
	}{
		{newer(2, 0, true), "[1 2]"},
		{newer(2, 2, false), "[3 4]"},
		{older(2, math.MaxUint32, true), "[4 5]"},
		{older(2, 4, false), "[2 3]"},
		{older(2, 4, true), "[3 4]"},
	} {
		got := h.listResponses(x, c.p, nil)
		if fmt.Sprint(cursorsOf(got.Responses)) != c.want || got.MaxCursor != 5 {
			h.t.Fatalf("%+v: cursors %v max %d, want %s max 5", c.p, cursorsOf(got.Responses), got.MaxCursor, c.want)
		}
	}
}

func (h *harness) appendLog(id core.ExecutionId, level core.LogLevel, msg string) {
	h.t.Helper()
	h.wantNoErr("append_log", h.db.AppendLog(h.ctx, core.LogInfoAppendRow{ExecutionID: id, RunID: newRun(),
		Entry: core.LogEntry{CreatedAt: h.now(), Level: level, Message: msg}}))
}

func (h *harness) listLogs(id core.ExecutionId, derived bool, p core.Pagination[core.LogCursor]) core.ListLogsResponse {
	h.t.Helper()
	got, err := h.db.ListLogs(h.ctx, id, derived, core.LogFilter{ShowLogs: true}, p)
	h.wantNoErr("list_logs", err)
	return got
}

func messagesOf(items []core.LogEntryRow) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Entry.Message
	}
	return out
}

func t098(h *harness) {
	p := h.create()
	h.advance(time.Second)
	h.appendLog(p, core.LogInfo, "parent log")
	h.advance(time.Second)
	c := p.NextLevel(mustJS("o:"))
	h.createWithID(c, withParent(p, mustJS("o:")))
	h.appendLog(c, core.LogError, "child log")
	h.advance(time.Second)
	g := c.NextLevel(mustJS("o:"))
	h.createWithID(g, withParent(c, mustJS("o:")))
	h.appendLog(g, core.LogWarn, "grandchild log")
	h.advance(time.Second)

	newest := core.Pagination[core.LogCursor]{Direction: core.OlderThan, Length: 10, Cursor: core.LogCursorMax}
	got := h.listLogs(p, false, newest)
	if fmt.Sprint(messagesOf(got.Items)) != "[parent log]" || got.Items[0].ExecutionID != p {
		h.t.Fatalf("without derived: %v, want [parent log]", messagesOf(got.Items))
	}
	got = h.listLogs(p, true, newest)
	if fmt.Sprint(messagesOf(got.Items)) != "[grandchild log child log parent log]" {
		h.t.Fatalf("with derived: %v, want newest first [grandchild log child log parent log]", messagesOf(got.Items))
	}
	if got.Items[0].ExecutionID != g || got.Items[1].ExecutionID != c || got.Items[2].ExecutionID != p {
		h.t.Fatalf("with derived: ids %v %v %v", got.Items[0].ExecutionID, got.Items[1].ExecutionID, got.Items[2].ExecutionID)
	}
	one := newest
	one.Length = 1
	got = h.listLogs(p, true, one)
	if len(got.Items) != 1 {
		h.t.Fatalf("OlderThan{1, MAX}: %d items, want 1", len(got.Items))
	}
	c1 := got.Items[0].Cursor
	got = h.listLogs(p, true, core.Pagination[core.LogCursor]{Direction: core.OlderThan, Length: 1, Cursor: c1})
	if fmt.Sprint(messagesOf(got.Items)) != "[child log]" {
		h.t.Fatalf("OlderThan{1, c1}: %v, want [child log]", messagesOf(got.Items))
	}
}

func line(v uint32) *uint32 { return &v }

func t102(h *harness) {
	x := h.create()
	h.lockAny(t0.Add(time.Minute))
	h.mustAppend(x, 2, jsc(mustJS("n:1")))
	bt1 := core.BacktraceInfo{ExecutionID: x, ComponentID: compACT, VersionMinIncluding: 3, VersionMaxExcluding: 4,
		WasmBacktrace: core.WasmBacktrace{Frames: []core.FrameInfo{{Module: "m", FuncName: "f",
			Symbols: []core.FrameSymbol{{FuncName: strp("f2"), File: strp("file"), Line: line(1), Col: line(2)}}}}}}
	h.wantNoErr("append_backtrace", h.db.AppendBacktrace(h.ctx, bt1))
	h.mustAppend(x, 3, jsc(mustJS("n:2")))
	bt2 := core.BacktraceInfo{ExecutionID: x, ComponentID: compACT, VersionMinIncluding: 4, VersionMaxExcluding: 5,
		WasmBacktrace: core.WasmBacktrace{Frames: []core.FrameInfo{{Module: "m", FuncName: "f", Symbols: []core.FrameSymbol{}}}}}
	n, err := h.db.AppendBacktraceBatch(h.ctx, []core.BacktraceInfo{bt1, bt2})
	h.wantNoErr("append_backtrace_batch", err)
	if n != 1 {
		h.t.Fatalf("append_backtrace_batch returned %d, want 1 (only bt2 is new)", n)
	}
	n, err = h.db.AppendBacktraceBatch(h.ctx, []core.BacktraceInfo{bt1, bt2})
	h.wantNoErr("append_backtrace_batch again", err)
	if n != 0 {
		h.t.Fatalf("repeated append_backtrace_batch returned %d, want 0", n)
	}
	for _, c := range []struct {
		f    core.BacktraceFilter
		want core.BacktraceInfo
	}{
		{core.BacktraceFilter{Kind: "first"}, bt1},
		{core.BacktraceFilter{Kind: "specific", Specific: 3}, bt1},
		{core.BacktraceFilter{Kind: "last"}, bt2},
		{core.BacktraceFilter{Kind: "specific", Specific: 4}, bt2},
	} {
		got, err := h.db.GetBacktrace(h.ctx, x, c.f)
		h.wantNoErr("get_backtrace", err)
		h.wantJSON(fmt.Sprintf("get_backtrace(%+v)", c.f), got, c.want)
	}
	_, err = h.db.GetBacktrace(h.ctx, x, core.BacktraceFilter{Kind: "specific", Specific: 5})
	h.wantErr("get_backtrace of a version without backtrace", err, core.ErrNotFound)
	_, err = h.db.GetBacktrace(h.ctx, newExecID(), core.BacktraceFilter{Kind: "last"})
	h.wantErr("get_backtrace of an unknown execution", err, core.ErrNotFound)

	evs, err := h.db.ListExecutionEvents(h.ctx, x, core.Pagination[core.Version]{Direction: core.NewerThan, Length: 10, IncludingCursor: true}, true)
	h.wantNoErr("list_execution_events with backtrace ids", err)
	for _, e := range evs.Events {
		var want *core.Version
		if e.Version == 3 || e.Version == 4 {
			v := e.Version
			want = &v
		}
		if (e.BacktraceID == nil) != (want == nil) || (want != nil && *e.BacktraceID != *want) {
			h.t.Fatalf("event v%d backtrace_id %v, want %v", e.Version, e.BacktraceID, want)
		}
	}
}

func t176(h *harness) {
	ok := h.create()
	h.mustAppend(ok, 1, finished(ok0))
	er := h.create()
	h.mustAppend(er, 1, finished(core.RetErr(nil)))
	fail := h.create()
	h.mustAppend(fail, 1, finished(core.RetFailure(core.FailureTimedOut, nil, nil)))
	for id, want := range map[core.ExecutionId]string{ok: `"ok"`, er: `{"err":"error"}`, fail: `{"err":{"execution_failure":"timed_out"}}`} {
		ws, err := h.db.GetPendingState(h.ctx, id)
		h.wantNoErr("get_pending_state", err)
		if ws.PendingState.Finished == nil {
			h.t.Fatalf("%s not finished", id)
		}
		if got := mustJSON(ws.PendingState.Finished.ResultKind); got != want {
			h.t.Fatalf("result_kind %s, want %s", got, want)
		}
	}
	for f, want := range map[core.StateFilter]core.ExecutionId{core.FilterFinishedOk: ok, core.FilterFinishedError: er,
		core.FilterFinishedExecutionFailure: fail} {
		got := h.listExecutions(core.ListExecutionsFilter{StateFilters: []core.StateFilter{f}}, core.DefaultExecutionListPagination())
		h.wantIDs(fmt.Sprintf("state filter %d", f), idsOf(got), want)
	}
}

func t177(h *harness) {
	for _, rv := range []core.ReturnValue{ok0, core.RetFailure(core.FailureTimedOut, nil, nil)} {
		x := h.create()
		h.mustAppend(x, 1, finished(rv))
		ws, err := h.db.GetPendingState(h.ctx, x)
		h.wantNoErr("get_pending_state", err)
		b := mustJSON(ws.PendingState)
		var back core.PendingState
		h.wantNoErr("decode pending state", json.Unmarshal([]byte(b), &back))
		h.wantJSON("round-tripped pending state", back, psFinished(1, t0, rv.ResultKind()))
		if b != `{"status":"finished","version":1,"finished_at":"1970-01-01T00:00:00Z","result_kind":`+mustJSON(rv.ResultKind())+`}` {
			h.t.Fatalf("pending state JSON %s", b)
		}
	}
}

func t178(h *harness) {
	rv := core.RetOk(&core.WastValWithType{Type: "result<option<string>, string>", Value: json.RawMessage(`{"ok":null}`)})
	x := h.create()
	h.mustAppend(x, 1, finished(rv))
	l := h.get(x)
	got, ok := l.FinishedResult()
	if !ok || mustJSON(got) != `{"ok":{"type":"result<option<string>, string>","value":{"ok":null}}}` {
		h.t.Fatalf("stored retval %s", jsonOrErr(got))
	}
	res, err := h.db.WaitForFinishedResult(h.ctx, x)
	h.wantNoErr("wait_for_finished_result", err)
	h.wantJSON("wait_for_finished_result", res, rv)
}

func t181(h *harness) {
	x := h.create()
	js := mustJS("n:test")
	v := h.mustAppend(x, 1, jsc(js))
	for _, o := range []core.JoinNextTryOutcome{core.JoinNextTryFound, core.JoinNextTryPending, core.JoinNextTryAllProcessed} {
		v = h.mustAppend(x, v, hist(&core.JoinNextTry{JoinSetID: js, Outcome: o}))
	}
	l := h.get(x)
	for i, o := range []string{"found", "pending", "all_processed"} {
		e := l.Events[2+i]
		want := `{"history_event":{"event":{"type":"join_next_try","join_set_id":"n:test","outcome":"` + o + `"}}}`
		if got := mustJSON(e.Event); got != want {
			h.t.Fatalf("event v%d = %s, want %s", e.Version, got, want)
		}
	}
}

func t182(h *harness) {
	x := h.create()
	h.mustAppend(x, 1, hist(&core.JoinNextTry{JoinSetID: mustJS("n:test"), Outcome: core.JoinNextTryAllProcessed}))
	ev, err := h.db.GetExecutionEvent(h.ctx, x, 1)
	h.wantNoErr("get_execution_event", err)
	got := mustJSON(ev.Event)
	if got != `{"history_event":{"event":{"type":"join_next_try","join_set_id":"n:test","outcome":"all_processed"}}}` {
		h.t.Fatalf("stored %s", got)
	}
	if core.JoinNextTryOutcomeFromBool(true) != core.JoinNextTryFound || core.JoinNextTryOutcomeFromBool(false) != core.JoinNextTryPending {
		h.t.Fatalf("legacy found_response mapping broken")
	}
}
