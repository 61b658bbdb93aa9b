package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
)

// DataSet is what BuildDataSet wrote.
type DataSet struct {
	// IDs are every execution written, Trees the roots of the workflow
	// trees among them.
	IDs, Trees []core.ExecutionId
	// Deployments are the deployments written (the first active, the
	// second enqueued, the rest inactive); Blobs the CAS blobs their files
	// and source mappings refer to.
	Deployments []core.DeploymentId
	Blobs       []core.ContentDigest
	// Waiting is a child that is pending while its parent, Blocked, waits
	// for it (join set WaitingJS): finishing it after an import must
	// unblock the parent in the destination as in the source.
	Waiting   core.ExecutionId
	Blocked   core.ExecutionId
	WaitingJS core.JoinSetId
}

// BuildDataSet writes through svc (its CAS blobs) at clock's now a data
// set of the size of the contract suite's scenarios, with a record of
// every kind a store keeps, for the transfer tests (`stela export` /
// `stela import`): executions in every state (pending now and scheduled,
// paused, locked — one lock expiring within a second, one granted for a
// day —, retrying after a temporary failure, blocked on a join set with a
// response applied and a child still pending, cancelling, finished ok,
// with an error, with an execution failure, cancelled), workflow trees
// with children, grandchildren, delays fired, waiting and paused,
// responses, a stubbed child, logs (lines and stream chunks), backtraces,
// payloads of 100 KB (above DynamoDB's inline threshold: offloaded to the
// CAS) and deployments with files, components, metadata and source
// mappings. rounds repeats the per-round part (rounds ≥ 1); the clock
// advances as the writes need (delays fire).
func BuildDataSet(t *testing.T, svc *store.Service, blobs core.Cas, clock *SimClock, rounds int) DataSet {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	h := &harness{t: t, ctx: ctx, db: svc, svc: svc, clock: clock, blobs: blobs}
	var ds DataSet
	add := func(ids ...core.ExecutionId) { ds.IDs = append(ds.IDs, ids...) }

	ds.Deployments, ds.Blobs = h.dataSetDeployments()
	for round := range max(rounds, 1) {
		big := round == 0
		tree := BuildTree(t, svc, clock, true, big)
		add(tree.IDs...)
		ds.Trees = append(ds.Trees, tree.Root)
		open := BuildTree(t, svc, clock, false, false)
		add(open.IDs...)
		ds.Trees = append(ds.Trees, open.Root)
		add(h.dataSetActivities(round)...)
		root, ids := h.dataSetWorkflows(&ds)
		add(ids...)
		ds.Trees = append(ds.Trees, root)
	}
	h.wantDataSetCoverage(ds.IDs)
	return ds
}

// dataSetDeployments writes two deployments with files, components,
// metadata and a source mapping, activates the first and enqueues the
// second, and one more without files that was active before the first.
func (h *harness) dataSetDeployments() ([]core.DeploymentId, []core.ContentDigest) {
	wasm := h.writeBlob("\x00asm" + strings.Repeat("component bytes ", 20_000))
	src := h.writeBlob("fn main() {}\n")
	comp := mustDigest(0xc1)
	var deps []core.DeploymentId
	for i, status := range []core.DeploymentStatus{core.DeploymentActive, core.DeploymentEnqueued, core.DeploymentInactive} { // as they end
		id := newDepAt(uint64(i + 1))
		deps = append(deps, id)
		toml := fmt.Sprintf("[[activity_wasm]]\nname = \"act%d\"\n", i)
		if status == core.DeploymentInactive {
			h.mustInsertDep(h.depRecord(id, toml), nil, nil, nil)
			continue
		}
		files := []core.DeploymentFileRecord{{Path: "act.wasm", Digest: wasm}, {Path: "src/main.rs", Digest: src}}
		ext := "submit"
		meta := []core.ComponentMetadataRecord{{ComponentDigest: comp, WitOrigin: core.WitOriginWasm, Wit: "package ns:pkg;",
			Exports: []core.PersistedFunctionMetadata{{FFQN: ffqnF, ReturnType: "string", Submittable: true,
				ParameterTypes: []core.PersistedParameterType{{Name: "x", WitType: "u32"}}}},
			Imports: []core.PersistedFunctionMetadata{{FFQN: ffqnChild, ReturnType: "u64", Extension: &ext}}}}
		comps := []core.DeploymentComponentRecord{{DeploymentID: id, ComponentName: "act", ComponentDigest: comp,
			ComponentType: core.ComponentTypeActivity}}
		cfiles := []core.DeploymentComponentFileRecord{{ComponentName: "act", Path: "act.wasm", Role: core.RoleWasmComponent},
			{ComponentName: "act", Path: "src/main.rs", Role: core.RoleBacktraceSource}}
		h.mustInsertDep(h.depRecord(id, toml, files...), meta, comps, cfiles)
	}
	h.wantNoErr("activate_deployment", h.db.ActivateDeployment(h.ctx, deps[2], h.now()))
	h.advance(time.Millisecond)
	h.wantNoErr("activate_deployment", h.db.ActivateDeployment(h.ctx, deps[0], h.now()))
	h.enqueue(deps[1], core.Enqueued)
	for i, want := range []core.DeploymentStatus{core.DeploymentActive, core.DeploymentEnqueued, core.DeploymentInactive} {
		h.wantDepStatus(deps[i], want)
	}
	if h.getDep(deps[2]).LastActiveAt == nil {
		h.t.Fatal("the inactive deployment has no last_active_at")
	}
	h.upsertSource(comp, "src/main.rs", false, src)
	h.upsertSource(comp, "main.rs", true, src)
	return deps, []core.ContentDigest{wasm, src}
}

// dataSetActivities writes activities in every state of their life.
func (h *harness) dataSetActivities(round int) []core.ExecutionId {
	var ids []core.ExecutionId
	keep := func(id core.ExecutionId) core.ExecutionId { ids = append(ids, id); return id }
	keep(h.create())                                              // pending now
	keep(h.create(withSched(h.now().Add(time.Hour))))             // scheduled
	keep(h.create(withPaused()))                                  // paused
	paused := keep(h.create(withSched(h.now().Add(time.Minute)))) // paused after creation
	_, err := h.db.PauseExecution(h.ctx, paused, h.now())
	h.wantNoErr("pause_execution", err)

	lock := func(id core.ExecutionId, exp time.Duration, rc core.ComponentRetryConfig) core.LockedExecution {
		req := h.lockReq(newExr(), newRun(), h.now().Add(exp))
		req.RetryConfig = rc
		le, err := h.db.LockOne(h.ctx, req, id, 1)
		h.wantNoErr("lock_one", err)
		return le
	}
	lock(keep(h.create()), 24*time.Hour, retryN(3, time.Second)) // locked for a day
	lock(keep(h.create()), time.Second, retry0())                // lock expiring in a second

	retrying := keep(h.create())
	le := lock(retrying, time.Minute, retryN(5, 10*time.Second))
	h.trap(le, retryN(5, 10*time.Second), "boom", "round "+fmt.Sprint(round)) // temporarily failed, retried later

	result := json.RawMessage(`"done"`)
	if round == 0 {
		big, err := json.Marshal(strings.Repeat("r", 100_000))
		h.wantNoErr("result", err)
		result = big
	}
	for _, rv := range []core.ReturnValue{
		core.RetOk(&core.WastValWithType{Type: "string", Value: result}),
		core.RetErr(&core.WastValWithType{Type: "string", Value: json.RawMessage(`"declined"`)}),
		core.RetFailure(core.FailureUncategorized, strp("trap"), strp("detail")),
	} {
		id := keep(h.create())
		lock(id, time.Minute, retry0())
		h.mustAppend(id, 2, finished(rv))
	}
	cancel := func(id core.ExecutionId) {
		out, err := h.db.AppendActivityCancellationRequested(h.ctx, id, h.now())
		h.wantNoErr("cancel activity", err)
		if out != core.CancelRequested {
			h.t.Fatalf("cancel activity = %s, want cancellation requested", out)
		}
	}
	cancelled := keep(h.create())
	cancel(cancelled)
	h.driveUntilFinished(cancelled) // finished cancelled
	cancel(keep(h.create()))        // cancelling
	for _, id := range ids {
		h.appendLog(id, core.LogInfo, "activity "+id.String())
	}
	return ids
}

// dataSetWorkflows writes a workflow tree: a root blocked on a join set
// with one response applied and one child pending, a child workflow that
// is cancelling (blocked on a grandchild), a stubbed child, a child that
// scheduled a delay it paused.
func (h *harness) dataSetWorkflows(ds *DataSet) (core.ExecutionId, []core.ExecutionId) {
	p := h.create(withComp(compWF))
	_, err := h.lockOne(p, 1, newExr(), newRun(), h.now().Add(time.Hour))
	h.wantNoErr("lock workflow", err)
	js, jsStub, jsDelay := mustJS("g:1"), mustJS("g:2"), mustJS("g:3")
	done, waiting := p.NextLevel(js), p.NextLevel(js).Incremented()
	cancelling, stubbed := waiting.Incremented(), p.NextLevel(jsStub)
	paused := core.NewDelayId(p, jsDelay, 1)
	v := h.submit(p, 2, []core.ExecutionRequest{jsc(js), creq(js, done), creq(js, waiting), creqTo(js, cancelling, ffqnFC),
		jsc(jsStub), creq(jsStub, stubbed), jsc(jsDelay), dreq(jsDelay, paused, h.now().Add(time.Hour), schedIn(time.Hour))},
		h.createReq(done, withParent(p, js)), h.createReq(waiting, withParent(p, js)),
		h.createReq(cancelling, withParent(p, js), withFFQN(ffqnFC), withComp(compWF)), h.createReq(stubbed, withParent(p, jsStub)))
	h.wantNoErr("pause_delay", h.db.PauseDelay(h.ctx, paused))
	h.finishChild(done, ok0)
	h.wantNoErr("upsert_stub_response", h.upsertStub(p, stubbed, jsStub, stubValue(`{"a":1,"b":2}`)))
	v = h.mustAppend(p, v, jn(js, h.now().Add(time.Hour))) // takes done's response
	h.mustAppend(p, v, jn(js, h.now().Add(time.Hour)))     // waits for the next one
	h.wantStatus(p, core.StateBlockedByJoinSet, core.LifecycleActive)

	// The cancellable child blocks on a grandchild, then is cancelled.
	_, err = h.lockOne(cancelling, 1, newExr(), newRun(), h.now().Add(time.Hour))
	h.wantNoErr("lock cancellable child", err)
	jsg := mustJS("g:4")
	g := cancelling.NextLevel(jsg)
	vc := h.submit(cancelling, 2, []core.ExecutionRequest{jsc(jsg), creq(jsg, g)}, h.createReq(g, withParent(cancelling, jsg)))
	h.mustAppend(cancelling, vc, jn(jsg, h.now().Add(time.Hour)))
	h.mustCancelWorkflow(cancelling)
	h.wantStatus(cancelling, core.StateBlockedByJoinSet, core.LifecycleCancelling)
	_, err = h.db.AppendBacktraceBatch(h.ctx, []core.BacktraceInfo{{ExecutionID: cancelling, ComponentID: compWF,
		VersionMinIncluding: 2, VersionMaxExcluding: 4,
		WasmBacktrace: core.WasmBacktrace{Frames: []core.FrameInfo{{Module: "m", FuncName: "await", Symbols: []core.FrameSymbol{}}}}}})
	h.wantNoErr("append_backtrace_batch", err)
	h.wantNoErr("append_log_batch", h.db.AppendLogBatch(h.ctx, []core.LogInfoAppendRow{
		{ExecutionID: p, RunID: newRun(), Entry: core.LogEntry{CreatedAt: h.now(), Level: core.LogWarn, Message: "waiting"}},
		{ExecutionID: cancelling, RunID: newRun(), Entry: core.LogEntry{CreatedAt: h.now(), StreamType: core.StreamStderr, Payload: []byte("err\n")}},
		{ExecutionID: p, RunID: newRun(), Entry: core.LogEntry{CreatedAt: h.now(), Level: core.LogDebug, Message: "after the child"}},
	}))
	ds.Blocked, ds.Waiting, ds.WaitingJS = p, waiting, js
	return p, []core.ExecutionId{p, done, waiting, cancelling, stubbed, g}
}

// wantDataSetCoverage checks that the data set has every state ×
// lifecycle a store can hold and every kind of finish.
func (h *harness) wantDataSetCoverage(ids []core.ExecutionId) {
	h.t.Helper()
	seen := map[string]bool{}
	for _, id := range ids {
		l := h.get(id)
		ps := l.PendingState
		seen[ps.State.String()+"/"+ps.Lifecycle.String()] = true
		if ps.Finished != nil {
			seen[jsonOrErr(ps.Finished.ResultKind)] = true
		}
	}
	for _, want := range []string{"pending_at/active", "pending_at/paused", "pending_at/cancelling", "locked/active",
		"blocked_by_join_set/active", "blocked_by_join_set/cancelling", "finished/active", `"ok"`, `{"err":"error"}`,
		`{"err":{"execution_failure":"uncategorized"}}`, `{"err":{"execution_failure":"cancelled"}}`} {
		if !seen[want] {
			h.t.Fatalf("the data set has no execution in %s (has %v)", want, seen)
		}
	}
}
