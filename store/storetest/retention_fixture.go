package storetest

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
)

// TreeFixture is an execution tree written by BuildTree.
type TreeFixture struct {
	// Root is the top-level workflow; IDs are every execution of the tree,
	// the root first.
	Root core.ExecutionId
	IDs  []core.ExecutionId
	// Waiting is the root's delay that has not fired, in join set WaitingJS.
	Waiting   core.DelayId
	WaitingJS core.JoinSetId
}

// BuildTree writes, through db at clock's now, a tree with a record of
// every kind a tree can own, for the per-backend retention tests that
// check what is physically left: a workflow root with a child workflow
// (which has a child of its own) and a child activity, all three children
// finished and answered, a delay that fired and one still waiting (its
// timer row stays), logs of three executions, backtraces of two — the
// root's with the body shared (the same frames as every other tree's
// root), the child's with a body of its own. With big set the child
// activity's params, the grandchild's result and the child workflow's
// backtrace are about 100 KB each (offloaded by a backend with a smaller
// inline threshold), and the root appends a JoinNext and about 2 KB of
// incompressible history (its head spills to an event page). With finish unset the root stays locked (an
// unfinished tree). The clock advances by one second (the delay fires).
func BuildTree(t *testing.T, db Store, clock *SimClock, finish, big bool) TreeFixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h := &harness{t: t, ctx: ctx, db: db, clock: clock}
	blob := func(tag string) string {
		if !big {
			return tag
		}
		return tag + strings.Repeat(tag[:1], 100_000)
	}
	p := h.create(withComp(compWF))
	_, err := h.lockOne(p, 1, newExr(), newRun(), h.now().Add(24*time.Hour))
	h.wantNoErr("lock root", err)
	js, jsd, jsg := mustJS("g:1"), mustJS("g:2"), mustJS("g:3")
	c1 := p.NextLevel(js)
	c2 := c1.Incremented()
	g := c1.NextLevel(jsg)
	fired, waiting := core.NewDelayId(p, jsd, 1), core.NewDelayId(p, jsd, 2)
	params, err := json.Marshal(blob("params"))
	h.wantNoErr("params", err)
	v := h.submit(p, 2, []core.ExecutionRequest{jsc(js), creq(js, c1), creq(js, c2), jsc(jsd),
		dreq(jsd, fired, h.now().Add(time.Second), schedIn(time.Second)),
		dreq(jsd, waiting, h.now().Add(1000*time.Hour), schedIn(1000*time.Hour))},
		h.createReq(c1, withParent(p, js), withComp(compWF)),
		h.createReq(c2, withParent(p, js), func(r *core.CreateRequest) { r.Params = core.Params{params} }))
	_, err = h.lockOne(c1, 1, newExr(), newRun(), h.now().Add(24*time.Hour))
	h.wantNoErr("lock child", err)
	vc := h.submit(c1, 2, []core.ExecutionRequest{jsc(jsg), creq(jsg, g)}, h.createReq(g, withParent(c1, jsg)))
	result, err := json.Marshal(blob("result"))
	h.wantNoErr("result", err)
	h.finishChild(g, core.RetOk(&core.WastValWithType{Type: "string", Value: result}))
	h.finishChild2(c1, vc, ok0)
	h.finishChild(c2, ok0)
	h.advance(time.Second)
	if _, delays := h.sweep(h.now()); delays != 1 {
		t.Fatalf("sweep fired %d delays, want 1", delays)
	}
	if big {
		// A JoinNext and incompressible history: the root's head spills
		// its events to a page (and the JoinNext to a counter).
		reqs := []core.AppendRequest{{CreatedAt: h.now(), Event: jn(js, h.now().Add(time.Hour))}}
		for range 12 {
			value := make(core.Bytes, 120)
			_, _ = rand.Read(value)
			reqs = append(reqs, core.AppendRequest{CreatedAt: h.now(), Event: hist(&core.Persist{Value: value,
				Kind: core.PersistKind{Type: "random_string", MinLength: 120, MaxLengthExclusive: 121}})})
		}
		v, err = h.db.AppendBatch(h.ctx, h.now(), reqs, p, v)
		h.wantNoErr("append_batch", err)
	}
	for _, id := range []core.ExecutionId{p, c1, g} {
		h.appendLog(id, core.LogInfo, "log of "+id.String())
	}
	h.wantNoErr("append_log_batch", h.db.AppendLogBatch(h.ctx, []core.LogInfoAppendRow{{ExecutionID: g, RunID: newRun(),
		Entry: core.LogEntry{CreatedAt: h.now(), StreamType: core.StreamStdout, Payload: []byte("out")}}}))
	frames := func(fn string) core.WasmBacktrace {
		return core.WasmBacktrace{Frames: []core.FrameInfo{{Module: "m", FuncName: fn, Symbols: []core.FrameSymbol{}}}}
	}
	_, err = h.db.AppendBacktraceBatch(h.ctx, []core.BacktraceInfo{
		{ExecutionID: p, ComponentID: compWF, VersionMinIncluding: 2, VersionMaxExcluding: 3, WasmBacktrace: frames("shared")},
		{ExecutionID: c1, ComponentID: compWF, VersionMinIncluding: 2, VersionMaxExcluding: 4, WasmBacktrace: frames(blob("own") + c1.String())},
	})
	h.wantNoErr("append_backtrace_batch", err)
	if finish {
		h.mustAppend(p, v, finished(ok0))
	}
	return TreeFixture{Root: p, IDs: []core.ExecutionId{p, c1, c2, g}, Waiting: waiting, WaitingJS: jsd}
}
