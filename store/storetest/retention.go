package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
)

// Retention of finished execution trees (store.Service.ApplyRetention,
// core/retention.go). Every backend must make a tree disappear for readers
// once it is finished and its period has passed since its last execution
// finished, and never before: a backend that removes trees (SQLite, mem)
// does it in the pass after that instant, one that marks them ahead
// (DynamoDB's time-to-live) marks them in an earlier pass and its readers
// stop seeing them at that instant. The tests therefore run a pass at
// several points and check what readers see; what is physically left is
// checked per backend (sqlite and dynamo tests).

// retentionPeriod is the period of the retention scenarios; it is longer
// than DynamoDB's marking lag (dynamo.DefaultRetentionLag, 15 minutes), so
// a pass halfway through the period has marked the tree.
const retentionPeriod = 2 * time.Hour

// runRetention runs the retention scenarios, each against a fresh backend
// whose service has the scenario's retention.
func runRetention(t *testing.T, newBackend NewBackend, opts RunOptions) {
	period, forever := core.RetainFor(retentionPeriod), core.RetainForever
	for _, rt := range []struct {
		name string
		r    core.Retention
		fn   func(h *harness)
	}{
		{"R01_FinishedActivityExpiresAfterItsPeriod", period, r01},
		{"R02_FinishedTreeExpiresWhole", period, r02},
		{"R03_ChildOutlivingItsParentKeepsTheTree", period, r03},
		{"R04_RunningParentKeepsFinishedChildren", period, r04},
		{"R05_ScheduledTopLevelExecutionIsItsOwnTree", period, r05},
		{"R06_ForeverKeepsEverything", forever, r06},
		{"R07_OverlappingPassesAreSafe", period, r07},
		{"R08_PeriodCountsFromWhenTheStoreSawTheFinish", period, r08},
	} {
		t.Run("Retention/"+rt.name, func(t *testing.T) {
			rt.fn(newHarnessWith(t, newBackend, opts, func(o *store.Options) { o.Retention = rt.r }))
		})
	}
}

// RunRetention runs only the retention scenarios.
func RunRetention(t *testing.T, newBackend NewBackend, opts RunOptions) {
	runRetention(t, newBackend, opts)
}

// retain runs one retention pass at the clock's now.
func (h *harness) retain() store.RetentionResult {
	h.t.Helper()
	res, err := h.svc.ApplyRetention(h.ctx, h.now())
	h.wantNoErr("apply_retention", err)
	return res
}

// wantPresent checks that every id reads and lists.
func (h *harness) wantPresent(ids ...core.ExecutionId) {
	h.t.Helper()
	listed := h.listedIDs()
	for _, id := range ids {
		if _, err := h.db.Get(h.ctx, id); err != nil {
			h.t.Fatalf("get %s: %v, want it kept", id, err)
		}
		if !listed[id] {
			h.t.Fatalf("list_executions does not show %s, want it kept", id)
		}
	}
}

// wantGone checks that every id reads as never stored: 404 on every read,
// absent from listings, no logs, no backtraces.
func (h *harness) wantGone(ids ...core.ExecutionId) {
	h.t.Helper()
	listed := h.listedIDs()
	for _, id := range ids {
		_, err := h.db.Get(h.ctx, id)
		h.wantErr("get "+id.String(), err, core.ErrNotFound)
		_, err = h.db.GetPendingState(h.ctx, id)
		h.wantErr("get_pending_state "+id.String(), err, core.ErrNotFound)
		_, err = h.db.ListExecutionEvents(h.ctx, id, core.Pagination[core.Version]{Direction: core.NewerThan, Length: 10}, false)
		h.wantErr("list_execution_events "+id.String(), err, core.ErrNotFound)
		_, err = h.db.GetBacktrace(h.ctx, id, core.BacktraceFilter{Kind: "first"})
		h.wantErr("get_backtrace "+id.String(), err, core.ErrNotFound)
		if listed[id] {
			h.t.Fatalf("list_executions still shows %s", id)
		}
		logs, err := h.db.ListLogs(h.ctx, id, true, core.LogFilter{ShowLogs: true, ShowStreams: true},
			core.Pagination[core.LogCursor]{Direction: core.NewerThan, Length: 100, Cursor: core.LogCursorMin})
		h.wantNoErr("list_logs", err)
		if len(logs.Items) != 0 {
			h.t.Fatalf("list_logs %s still returns %d rows", id, len(logs.Items))
		}
	}
}

// listedIDs returns every execution list_executions shows, derived ones included.
func (h *harness) listedIDs() map[core.ExecutionId]bool {
	h.t.Helper()
	out := map[core.ExecutionId]bool{}
	for _, e := range h.listExecutions(core.ListExecutionsFilter{ShowDerived: true}, byCreated(core.OlderThan, 1000, nil, false)) {
		out[e.ExecutionID] = true
	}
	return out
}

// sideRecords writes a log row and a backtrace for id.
func (h *harness) sideRecords(id core.ExecutionId, v core.Version) {
	h.t.Helper()
	h.appendLog(id, core.LogInfo, "log of "+id.String())
	bt := core.BacktraceInfo{ExecutionID: id, ComponentID: compWF, VersionMinIncluding: v, VersionMaxExcluding: v + 1,
		WasmBacktrace: core.WasmBacktrace{Frames: []core.FrameInfo{{Module: "m", FuncName: "f", Symbols: []core.FrameSymbol{}}}}}
	_, err := h.db.AppendBacktraceBatch(h.ctx, []core.BacktraceInfo{bt})
	h.wantNoErr("append_backtrace_batch", err)
}

// r01: a finished top-level activity (the common tree of one) is kept for
// its period after it finished and gone from that instant; an execution
// that finished later stays.
func r01(h *harness) {
	x := h.create()
	h.lockAny(t0.Add(time.Minute))
	h.sideRecords(x, 1)
	h.mustAppend(x, 2, finished(ok0))
	h.retain()
	h.wantPresent(x)

	h.advance(retentionPeriod / 2)
	later := h.create()
	h.mustAppend(later, 1, finished(ok0))
	h.retain()
	h.wantPresent(x, later)

	h.advance(retentionPeriod/2 - time.Second)
	h.retain()
	h.wantPresent(x, later)

	h.advance(time.Second)
	h.retain()
	h.wantGone(x)
	h.wantPresent(later)

	h.advance(retentionPeriod / 2)
	h.retain()
	h.wantGone(x, later)
}

// r02: a workflow with a child workflow (which has its own child), a child
// activity, a fired delay, logs and backtraces: the whole tree goes once
// the period has passed since the root, its last execution, finished.
func r02(h *harness) {
	p := h.create(withComp(compWF))
	_, err := h.lockOne(p, 1, newExr(), newRun(), t0.Add(24*time.Hour))
	h.wantNoErr("lock", err)
	js, jsd, jsg := mustJS("g:1"), mustJS("g:2"), mustJS("g:3")
	c1 := p.NextLevel(js)
	c2 := c1.Incremented()
	g := c1.NextLevel(jsg)
	d := core.NewDelayId(p, jsd, 1)
	v := h.submit(p, 2, []core.ExecutionRequest{jsc(js), creq(js, c1), creq(js, c2), jsc(jsd),
		dreq(jsd, d, h.now().Add(time.Second), schedIn(time.Second))},
		h.createReq(c1, withParent(p, js), withComp(compWF)), h.createReq(c2, withParent(p, js)))
	_, err = h.lockOne(c1, 1, newExr(), newRun(), t0.Add(24*time.Hour))
	h.wantNoErr("lock child", err)
	vc := h.submit(c1, 2, []core.ExecutionRequest{jsc(jsg), creq(jsg, g)}, h.createReq(g, withParent(c1, jsg)))
	other := h.create(withSched(t0.Add(100 * 24 * time.Hour))) // unrelated, never finished
	h.finishChild(g, ok0)
	h.finishChild2(c1, vc, ok0)
	h.finishChild(c2, ok0)
	h.advance(time.Second)
	if _, delays := h.sweep(h.now()); delays != 1 {
		h.t.Fatalf("sweep fired %d delays, want 1", delays)
	}
	for _, id := range []core.ExecutionId{p, c1, g} {
		h.sideRecords(id, 2)
	}
	h.mustAppend(p, v, finished(ok0))
	tree := []core.ExecutionId{p, c1, c2, g}
	h.retain()
	h.wantPresent(tree...)

	h.advance(retentionPeriod - time.Second)
	h.retain()
	h.wantPresent(tree...)
	if n := len(h.get(p).Responses); n != 3 {
		h.t.Fatalf("the root has %d responses before it expires, want 3", n)
	}

	h.advance(time.Second)
	h.retain()
	h.wantGone(tree...)
	h.wantPresent(other)
	if _, err := h.db.AppendDelayResponse(h.ctx, h.now(), p, jsd, d, false); !errors.Is(err, core.ErrNotFound) {
		h.t.Fatalf("cancel_delay on an expired execution: %v, want NotFound", err)
	}
	res := h.retain()
	if res.Expired != 0 {
		h.t.Fatalf("a pass after the tree went expired %d trees, want 0", res.Expired)
	}
	h.wantPresent(other)
}

// r03: a parent that finished while its child runs (its lock expired, say)
// is kept, child and all, until the period has passed since the child
// finished.
func r03(h *harness) {
	p := h.create(withComp(compWF))
	_, err := h.lockOne(p, 1, newExr(), newRun(), t0.Add(time.Minute))
	h.wantNoErr("lock", err)
	js := mustJS("g:1")
	c := p.NextLevel(js)
	v := h.submit(p, 2, []core.ExecutionRequest{jsc(js), creq(js, c)}, h.createReq(c, withParent(p, js)))
	h.mustAppend(p, v, finished(core.RetFailure(core.FailureTimedOut, nil, nil)))
	h.sideRecords(p, 2)

	h.advance(3 * retentionPeriod)
	h.retain()
	h.wantPresent(p, c)

	h.finishChild(c, ok0) // a finished parent still takes its children's responses
	h.advance(retentionPeriod - time.Second)
	h.retain()
	h.wantPresent(p, c)

	h.advance(time.Second)
	h.retain()
	h.wantGone(p, c)
}

// r04: finished children of a running parent are kept however old.
func r04(h *harness) {
	p := h.create(withComp(compWF))
	_, err := h.lockOne(p, 1, newExr(), newRun(), t0.Add(100*24*time.Hour))
	h.wantNoErr("lock", err)
	js := mustJS("g:1")
	c := p.NextLevel(js)
	h.submit(p, 2, []core.ExecutionRequest{jsc(js), creq(js, c)}, h.createReq(c, withParent(p, js)))
	h.sideRecords(c, 1)
	h.finishChild(c, ok0)
	for range 3 {
		h.advance(retentionPeriod)
		h.retain()
		h.wantPresent(p, c)
	}
	logs := h.listLogs(p, true, core.Pagination[core.LogCursor]{Direction: core.NewerThan, Length: 10, Cursor: core.LogCursorMin})
	if len(logs.Items) != 1 {
		h.t.Fatalf("the finished child's logs: %d rows, want 1", len(logs.Items))
	}
}

// r05: a top-level execution a workflow scheduled is the root of its own
// tree: it outlives the workflow's expiry and expires after its own finish.
func r05(h *harness) {
	p := h.create(withComp(compWF))
	_, err := h.lockOne(p, 1, newExr(), newRun(), t0.Add(time.Minute))
	h.wantNoErr("lock", err)
	s := newExecID()
	v := h.submit(p, 2, []core.ExecutionRequest{persist(1)}, h.createReq(s, withSched(t0.Add(10*retentionPeriod))))
	h.mustAppend(p, v, finished(ok0))
	h.advance(retentionPeriod)
	h.retain()
	h.wantGone(p)
	h.wantPresent(s)

	h.advance(10 * retentionPeriod)
	h.retain()
	h.wantPresent(s)
	h.mustAppend(s, 1, finished(ok0))
	h.advance(retentionPeriod)
	h.retain()
	h.wantGone(s)
}

// r06: with retention forever nothing is ever removed.
func r06(h *harness) {
	x := h.create()
	h.sideRecords(x, 0)
	h.mustAppend(x, 1, finished(ok0))
	h.advance(1000 * 24 * time.Hour)
	if res := h.retain(); res != (store.RetentionResult{}) {
		h.t.Fatalf("a pass with retention forever did %+v", res)
	}
	h.wantPresent(x)
}

// r07: passes of two services on one backend (two processes) overlap
// safely, and later passes find nothing more to do.
func r07(h *harness) {
	var ids []core.ExecutionId
	for range 5 {
		x := h.create()
		h.sideRecords(x, 0)
		h.mustAppend(x, 1, finished(ok0))
		ids = append(ids, x)
	}
	kept := h.create()
	other := store.New(h.backend, store.Options{Clock: h.clock, Retention: core.RetainFor(retentionPeriod)})
	for _, at := range []time.Duration{retentionPeriod / 2, retentionPeriod / 2} {
		h.advance(at)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, svc := range []*store.Service{h.svc, other} {
			wg.Go(func() { _, errs[i] = svc.ApplyRetention(h.ctx, h.now()) })
		}
		wg.Wait()
		for _, err := range errs {
			h.wantNoErr("overlapping apply_retention", err)
		}
	}
	h.wantGone(ids...)
	h.wantPresent(kept)
	if res := h.retain(); res.Expired != 0 {
		h.t.Fatalf("a later pass expired %d trees, want 0", res.Expired)
	}
}

// r08: the period counts from when the store recorded the finish (its own
// clock), not from the Finished event's created_at: a worker whose clock
// runs behind (or a late write) does not shorten it.
func r08(h *harness) {
	x := h.create()
	h.lockAny(t0.Add(time.Minute))
	h.advance(30 * time.Minute)
	late := h.now().Add(-30 * time.Minute) // the Finished event's time: the worker's
	if _, err := h.appendAt(x, 2, finished(ok0), late); err != nil {
		h.t.Fatalf("append finished: %v", err)
	}
	h.advance(retentionPeriod - time.Second) // past late + period, before now + period
	h.retain()
	h.wantPresent(x)
	h.advance(time.Second)
	h.retain()
	h.wantGone(x)
}
