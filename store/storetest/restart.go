package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
)

// OpenFunc opens (or reopens) a durable store on dir. The returned function
// closes it; after it returns, every acknowledged write must be durable.
type OpenFunc func(t *testing.T, clock core.Clock, dir string) (Store, func())

// RunRestart is the durability hook for backends that persist to a
// directory (SQLite): it writes every kind of record, closes the store,
// reopens it on the same directory and checks that nothing acknowledged was
// lost and that writing continues where it stopped.
func RunRestart(t *testing.T, open OpenFunc) {
	t.Run("T001_OpeningTwiceIsIdempotent", func(t *testing.T) {
		dir := t.TempDir()
		clock := NewSimClock(t0)
		for i := 0; i < 2; i++ {
			db, closeFn := open(t, clock, dir)
			if _, err := db.GetCancelling(context.Background(), 1); err != nil {
				t.Fatalf("open #%d: store unusable: %v", i+1, err)
			}
			closeFn()
		}
	})
	t.Run("AcknowledgedWritesSurviveReopen", func(t *testing.T) { runRestart(t, open) })
}

// snapshot is everything RunRestart compares before and after the restart.
type snapshot struct {
	logs       map[core.ExecutionId]string
	states     map[core.ExecutionId]string
	list       string
	timers     string
	cancelling string
	execLogs   string
	backtraces string
}

func takeSnapshot(h *harness, ids []core.ExecutionId, far core.Timestamp) snapshot {
	h.t.Helper()
	s := snapshot{logs: map[core.ExecutionId]string{}, states: map[core.ExecutionId]string{}}
	for _, id := range ids {
		s.logs[id] = mustJSON(h.get(id))
		ws, err := h.db.GetPendingState(h.ctx, id)
		h.wantNoErr("get_pending_state", err)
		s.states[id] = mustJSON(ws)
	}
	s.list = mustJSON(h.listExecutions(core.ListExecutionsFilter{ShowDerived: true}, byCreated(core.OlderThan, 100, nil, false)))
	s.timers = timersString(h.expiredTimers(far))
	c, err := h.db.GetCancelling(h.ctx, 100)
	h.wantNoErr("get_cancelling", err)
	s.cancelling = mustJSON(c)
	logs, err := h.db.ListLogs(h.ctx, ids[0], true, core.LogFilter{ShowLogs: true, ShowStreams: true},
		core.Pagination[core.LogCursor]{Direction: core.NewerThan, Length: 100, Cursor: core.LogCursorMin})
	h.wantNoErr("list_logs", err)
	s.execLogs = mustJSON(logs.Items)
	var bts []core.BacktraceInfo
	for _, k := range []string{"first", "last"} {
		bt, err := h.db.GetBacktrace(h.ctx, ids[0], core.BacktraceFilter{Kind: k})
		h.wantNoErr("get_backtrace", err)
		bts = append(bts, bt)
	}
	s.backtraces = mustJSON(bts)
	return s
}

func runRestart(t *testing.T, open OpenFunc) {
	dir := t.TempDir()
	clock := NewSimClock(t0)
	db, closeFn := open(t, clock, dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h := &harness{t: t, ctx: ctx, db: db, clock: clock}

	// A parent workflow with a finished child, a fired delay, a paused delay and a pending one.
	p := h.create(withComp(compWF), withFFQN(ffqnFC))
	by := lockedBy(newExr(), newRun())
	_, err := h.lockOne(p, 1, by.ExecutorID, by.RunID, t0.Add(time.Hour))
	h.wantNoErr("lock", err)
	js := mustJS("g:1")
	c := p.NextLevel(js)
	fired, paused, waiting := core.NewDelayId(p, js, 1), core.NewDelayId(p, js, 2), core.NewDelayId(p, js, 3)
	v := h.submit(p, 2, []core.ExecutionRequest{jsc(js), creq(js, c),
		dreq(js, fired, t0.Add(time.Second), schedIn(time.Second)),
		dreq(js, paused, t0.Add(time.Second), schedIn(time.Second)),
		dreq(js, waiting, t0.Add(time.Hour), schedIn(time.Hour)),
		jn(js, t0.Add(time.Hour))}, h.createReq(c, withParent(p, js)))
	h.wantNoErr("pause_delay", h.db.PauseDelay(h.ctx, paused))
	h.lockAny(t0.Add(time.Minute))
	h.finishChild2(c, 2, core.RetOk(&core.WastValWithType{Type: "string", Value: []byte(`"done"`)}))
	h.advance(2 * time.Second)
	if _, delays := h.sweep(h.now()); delays != 1 {
		t.Fatalf("sweep fired %d delays, want 1", delays)
	}
	v = h.mustAppend(p, v, &core.TemporarilyFailed{BackoffExpiresAt: h.now(), Reason: "r"})
	// A cancelling workflow, a paused execution, an upgraded one, a finished one.
	cw := h.create(withFFQN(ffqnFC), withComp(compWF), withSched(t0.Add(time.Hour)))
	h.mustCancelWorkflow(cw)
	pa := newExecID()
	h.mustCreateReq(h.createReq(pa, withPaused()))
	up := h.create(withComp(compWith(core.ComponentTypeWorkflow, digest1)), withSched(t0.Add(time.Hour)))
	h.wantNoErr("upgrade", h.db.UpgradeExecutionComponent(h.ctx, up, digest1, digest2, manual(true)))
	fin := h.create(withSched(t0.Add(time.Hour)))
	h.mustAppend(fin, 1, finished(core.RetErr(nil)))
	// Logs and backtraces.
	h.appendLog(p, core.LogInfo, "parent")
	h.wantNoErr("append_log_batch", h.db.AppendLogBatch(h.ctx, []core.LogInfoAppendRow{
		{ExecutionID: c, RunID: by.RunID, Entry: core.LogEntry{CreatedAt: h.now(), StreamType: core.StreamStderr, Payload: []byte{0, 1, 2, 255}}},
		{ExecutionID: p, RunID: by.RunID, Entry: core.LogEntry{CreatedAt: h.now().Add(time.Nanosecond), Level: core.LogWarn, Message: "ž"}},
	}))
	bt := core.BacktraceInfo{ExecutionID: p, ComponentID: compWF, VersionMinIncluding: 2, VersionMaxExcluding: 4,
		WasmBacktrace: core.WasmBacktrace{Frames: []core.FrameInfo{{Module: "m", FuncName: "f", Symbols: []core.FrameSymbol{{File: strp("a.rs"), Line: line(3)}}}}}}
	if n, err := h.db.AppendBacktraceBatch(h.ctx, []core.BacktraceInfo{bt}); err != nil || n != 1 {
		t.Fatalf("append_backtrace_batch = %d, %v", n, err)
	}
	ids := []core.ExecutionId{p, c, cw, pa, up, fin}
	far := t0.Add(24 * time.Hour)
	before := takeSnapshot(h, ids, far)

	closeFn()
	if _, err := db.Get(ctx, p); !errors.Is(err, core.ErrClosed) {
		t.Errorf("get after close: err = %v, want ErrClosed", err)
	}
	db, closeFn = open(t, clock, dir)
	defer closeFn()
	h.db = db

	after := takeSnapshot(h, ids, far)
	for _, id := range ids {
		if before.logs[id] != after.logs[id] {
			t.Fatalf("log of %s changed across restart:\nbefore %s\nafter  %s", id, before.logs[id], after.logs[id])
		}
		if before.states[id] != after.states[id] {
			t.Fatalf("state of %s changed across restart:\nbefore %s\nafter  %s", id, before.states[id], after.states[id])
		}
	}
	for _, c := range []struct{ what, b, a string }{
		{"list_executions", before.list, after.list}, {"expired timers", before.timers, after.timers},
		{"get_cancelling", before.cancelling, after.cancelling}, {"logs", before.execLogs, after.execLogs},
		{"backtraces", before.backtraces, after.backtraces},
	} {
		if c.b != c.a {
			t.Fatalf("%s changed across restart:\nbefore %s\nafter  %s", c.what, c.b, c.a)
		}
	}

	// Writing continues where it stopped.
	_, err = h.db.Create(h.ctx, h.createReq(fin))
	h.wantErr("duplicate create after restart", err, core.ErrConflict)
	out, err := h.db.AppendDelayResponse(h.ctx, h.now(), p, js, fired, true)
	h.wantNoErr("delay response after restart", err)
	if out != core.DelayResponseAlreadyFinished {
		t.Fatalf("repeated delay response = %d, want already finished", out)
	}
	h.wantNoErr("unpause_delay after restart", h.db.UnpauseDelay(h.ctx, paused))
	if _, delays := h.sweep(h.now()); delays != 1 {
		t.Fatalf("sweep after restart fired %d delays, want the unpaused one", delays)
	}
	if got := cursorsOf(h.get(p).Responses); len(got) != 3 || got[2] != 3 {
		t.Fatalf("response cursors after restart %v, want [1 2 3]", got)
	}
	h.mustAppend(p, v, jsc(mustJS("g:2")))
	maxLog := core.LogCursor(0)
	for _, it := range mustItems(h, p) {
		maxLog = max(maxLog, it.Cursor)
	}
	h.appendLog(p, core.LogInfo, "after restart")
	items := mustItems(h, p)
	if last := items[len(items)-1]; last.Entry.Message != "after restart" || last.Cursor <= maxLog {
		t.Fatalf("log written after restart has cursor %d (max before %d) message %q", last.Cursor, maxLog, last.Entry.Message)
	}
	if _, err := store.Sweep(h.ctx, h.db, far); err != nil {
		t.Fatalf("sweep at a far time: %v", err)
	}
}

func mustItems(h *harness, id core.ExecutionId) []core.LogEntryRow {
	h.t.Helper()
	got, err := h.db.ListLogs(h.ctx, id, false, core.LogFilter{ShowLogs: true, ShowStreams: true},
		core.Pagination[core.LogCursor]{Direction: core.NewerThan, Length: 100, Cursor: core.LogCursorMin})
	h.wantNoErr("list_logs", err)
	return got.Items
}

// finishChild2 finishes a locked child at version v, responding to its parent.
func (h *harness) finishChild2(c core.ExecutionId, v core.Version, rv core.ReturnValue) {
	h.t.Helper()
	parent, js, _ := c.SplitToParts()
	_, err := h.db.AppendBatchRespondToParent(h.ctx,
		core.AppendEventsToExecution{ExecutionID: c, Version: v, Batch: []core.AppendRequest{{CreatedAt: h.now(), Event: finished(rv)}}},
		core.AppendResponseToExecution{ParentExecutionID: parent, CreatedAt: h.now(), JoinSetID: js,
			ChildExecutionID: core.ExecutionIdDerived{ExecutionId: c}, FinishedVersion: v, Result: rv}, h.now())
	h.wantNoErr("finish child", err)
}
