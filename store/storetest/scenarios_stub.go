package storetest

import (
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/stela-dev/stela/core"
)

// Areas 10–11: stubs (hash pins T072–T078 and the storage gap (a)–(c)),
// upgrades ((a)–(d) and auto-locking).
func stubUpgradeScenarios() []contractTest {
	return []contractTest{
		{"T072_TypedStubHashIsStable", t072},
		{"T073_UntypedStubHashIsStable", t073},
		{"T074_DifferentStubValuesHashDifferently", t074},
		{"T076_StubHashJSONRoundTrips", t076},
		{"T077_StubHashDisplayParseRoundTrips", t077},
		{"T078_TypedAndUntypedSameContentHashDifferently", t078},
		{"Gap10a_UpsertStubResponseFinishesChildAndRespondsToParent", gapStubA},
		{"Gap10b_UpsertStubResponseSameValueIsIdempotent", gapStubB},
		{"Gap10c_UpsertStubResponseDifferentValueIsStubConflict", gapStubC},
		{"Signal_SenderFirstThenWorkflowCreatesTheSameStub", signalSenderFirst},
		{"Signal_WorkflowFirstThenSenderFillsItsStub", signalWorkflowFirst},
		{"Gap11a_UpgradeWithWrongOldDigestIsNotFound", gapUpgradeA},
		{"Gap11b_UpgradeAppendsSuccessAndMovesDigest", gapUpgradeB},
		{"Gap11c_FailedUpgradeMarksDigestIncompatible", gapUpgradeC},
		{"Gap11d_UpgradeOfFinishedExecutionIsAlreadyFinished", gapUpgradeD},
		{"Gap11_AutoLockingKeepsDigestAndDeployment", gapAutoLock},
	}
}

func t072(h *harness) {
	s := core.RetOk(&core.WastValWithType{Type: "string", Value: json.RawMessage(`"hello"`)}).StubRetValHash().String()
	if len(s) != 66 || !strings.HasPrefix(s, "01") {
		h.t.Fatalf("typed hash %q: want 66 chars starting 01", s)
	}
}

func t073(h *harness) {
	s := core.StubRetValHashUntyped(`{"ok": "hello"}`).String()
	if len(s) != 66 || !strings.HasPrefix(s, "01") {
		h.t.Fatalf("untyped hash %q: want 66 chars starting 01", s)
	}
}

func t074(h *harness) {
	hs := []core.StubRetValHash{ok0.StubRetValHash(), core.RetErr(nil).StubRetValHash(),
		core.StubRetValHashUntyped("value1"), core.StubRetValHashUntyped("value2")}
	for i := range hs {
		for j := i + 1; j < len(hs); j++ {
			if hs[i] == hs[j] {
				h.t.Fatalf("hashes %d and %d are equal", i, j)
			}
		}
	}
}

func t076(h *harness) {
	want := ok0.StubRetValHash()
	b, err := json.Marshal(want)
	h.wantNoErr("marshal", err)
	var got core.StubRetValHash
	h.wantNoErr("unmarshal", json.Unmarshal(b, &got))
	if got != want {
		h.t.Fatalf("round trip %s, want %s", got, want)
	}
}

func t077(h *harness) {
	want := core.StubRetValHashUntyped("test value")
	got, err := core.ParseStubRetValHash(want.String())
	h.wantNoErr("parse", err)
	if got != want {
		h.t.Fatalf("round trip %s, want %s", got, want)
	}
}

func t078(h *harness) {
	if ok0.StubRetValHash() == core.StubRetValHashUntyped(`{"ok":null}`) {
		h.t.Fatalf("typed and untyped hashes of the same text are equal")
	}
}

// stubParent creates P blocked on js awaiting the stub child C = P.js_1
// (C has only Created, component activity_stub).
func stubParent(h *harness) (p, c core.ExecutionId, js core.JoinSetId, by core.LockedBy) {
	h.t.Helper()
	p = h.create(withComp(compWF))
	by = lockedBy(newExr(), newRun())
	h.mustLock(by.ExecutorID, by.RunID, t0.Add(time.Second))
	js = mustJS("n:stub")
	c = p.NextLevel(js)
	stubComp := core.ComponentId{ComponentType: core.ComponentTypeActivityStub, Name: "stub"}
	v := h.submit(p, 2, []core.ExecutionRequest{jsc(js), creq(js, c)}, h.createReq(c, withParent(p, js), withComp(stubComp)))
	h.mustAppend(p, v, jnFor(js, t0.Add(time.Second), nil))
	h.wantState(p, psBlocked(js, t0.Add(time.Second), false))
	return p, c, js, by
}

func (h *harness) upsertStub(p, c core.ExecutionId, js core.JoinSetId, rv core.ReturnValue) error {
	return h.db.UpsertStubResponse(h.ctx, core.ExecutionIdDerived{ExecutionId: c}, 1,
		core.AppendRequest{CreatedAt: h.now(), Event: finished(rv)},
		core.AppendResponseToExecution{ParentExecutionID: p, CreatedAt: h.now(), JoinSetID: js,
			ChildExecutionID: core.ExecutionIdDerived{ExecutionId: c}, FinishedVersion: 1, Result: rv}, h.now())
}

func stubValue(v string) core.ReturnValue {
	return core.RetOk(&core.WastValWithType{Type: "record { a: u32, b: u32 }", Value: json.RawMessage(v)})
}

func gapStubA(h *harness) {
	p, c, js, by := stubParent(h)
	rv := stubValue(`{"a":1,"b":2}`)
	h.wantNoErr("upsert_stub_response", h.upsertStub(p, c, js, rv))
	h.wantNextVersion(c, 1)
	h.wantState(c, psFinished(1, h.now(), rv.ResultKind()))
	h.wantLastEvent(c, finished(rv))
	pl := h.get(p)
	if len(pl.Responses) != 1 {
		h.t.Fatalf("parent has %d responses, want 1", len(pl.Responses))
	}
	h.wantJSON("parent response", pl.Responses[0].Event.Event, childResp(js, c, 1, rv))
	h.wantState(p, psPendingAt(t0.Add(time.Second), &by))
}

func gapStubB(h *harness) {
	p, c, js, _ := stubParent(h)
	h.wantNoErr("first upsert", h.upsertStub(p, c, js, stubValue(`{"a":1,"b":2}`)))
	h.wantNoErr("same value again", h.upsertStub(p, c, js, stubValue(`{"a":1,"b":2}`)))
	h.wantNoErr("structurally equal value (other key order)", h.upsertStub(p, c, js, stubValue(`{"b":2,"a":1}`)))
	h.wantNoErr("stub_execution with the same value", core.StubExecution(h.ctx, h.db, core.ExecutionIdDerived{ExecutionId: c}, p, js, h.now(), stubValue(`{"a":1,"b":2}`)))
	if n := len(h.get(p).Responses); n != 1 {
		h.t.Fatalf("parent has %d responses after idempotent upserts, want 1", n)
	}
	h.wantNextVersion(c, 1)
}

func gapStubC(h *harness) {
	p, c, js, _ := stubParent(h)
	h.wantNoErr("first upsert", h.upsertStub(p, c, js, stubValue(`{"a":1,"b":2}`)))
	err := h.upsertStub(p, c, js, stubValue(`{"a":1,"b":3}`))
	h.wantErr("upsert with a different value", err, core.ErrStubConflict)
	err = core.StubExecution(h.ctx, h.db, core.ExecutionIdDerived{ExecutionId: c}, p, js, h.now(), core.RetErr(nil))
	h.wantErr("stub_execution with a different value", err, core.ErrConflict)
	if n := len(h.get(p).Responses); n != 1 {
		h.t.Fatalf("parent has %d responses, want 1", n)
	}
	h.wantLastEvent(c, finished(stubValue(`{"a":1,"b":2}`)))
}

var (
	digest1 = mustDigest(0x11)
	digest2 = mustDigest(0x22)
	digest3 = mustDigest(0x33)
	digest4 = mustDigest(0x44)
)

func compWith(t core.ComponentType, d core.ComponentDigest) core.ComponentId {
	return core.ComponentId{ComponentType: t, Name: "c", ComponentDigest: d}
}

func manual(force bool) core.ComponentUpgradeReason {
	return core.ComponentUpgradeReason{Manual: true, Force: force}
}

func (h *harness) wantDigest(id core.ExecutionId, want core.ComponentDigest, dep core.DeploymentId) {
	h.t.Helper()
	ws, err := h.db.GetPendingState(h.ctx, id)
	h.wantNoErr("get_pending_state", err)
	if ws.ComponentDigest != want || ws.DeploymentID != dep {
		h.t.Fatalf("%s has digest %s deployment %s, want %s %s", id, ws.ComponentDigest, ws.DeploymentID, want, dep)
	}
	if l := h.get(id); l.ComponentDigest != want || l.DeploymentID != dep {
		h.t.Fatalf("get(%s) digest %s deployment %s, want %s %s", id, l.ComponentDigest, l.DeploymentID, want, dep)
	}
}

func gapUpgradeA(h *harness) {
	x := h.create(withComp(compWith(core.ComponentTypeWorkflow, digest1)))
	err := h.db.UpgradeExecutionComponent(h.ctx, x, digest2, digest3, manual(false))
	h.wantErr("upgrade from a digest that is not current", err, core.ErrNotFound)
	h.wantNextVersion(x, 1)
}

// autoLock locks pending F executions with the auto strategy as an executor of digest d.
func (h *harness) autoLock(d core.ComponentDigest, dep core.DeploymentId) []core.LockedExecution {
	h.t.Helper()
	req := h.lockReq(newExr(), newRun(), h.now().Add(time.Second))
	req.BatchSize = 10
	req.ComponentID = compWith(core.ComponentTypeWorkflow, d)
	req.DeploymentID = dep
	got, err := h.db.LockPendingByFFQNsAuto(h.ctx, req, []core.FunctionFqn{ffqnF})
	h.wantNoErr("lock_pending_by_ffqns_auto", err)
	return got
}

func gapUpgradeB(h *harness) {
	x := h.create(withComp(compWith(core.ComponentTypeWorkflow, digest1)))
	// First mark digest3 incompatible, so the success below must clear it.
	h.mustAppend(x, 1, &core.ComponentUpgradeFinished{ComponentDigest: digest3, DeploymentID: dep0,
		Outcome: core.ComponentUpgradeOutcome{FailedReason: "replay failed"}})
	if got := h.autoLock(digest3, dep0); len(got) != 0 {
		h.t.Fatalf("auto lock by the incompatible digest locked %d, want 0", len(got))
	}
	before := h.pendingState(x)
	now := h.now()
	h.wantNoErr("upgrade", h.db.UpgradeExecutionComponent(h.ctx, x, digest1, digest3, manual(true)))
	h.wantNextVersion(x, 3)
	last := h.wantLastEvent(x, &core.ComponentUpgradeFinished{ComponentDigest: digest3, DeploymentID: dep0,
		Outcome: core.ComponentUpgradeOutcome{Success: true, Reason: manual(true)}})
	if last.Version != 2 || !last.CreatedAt.Equal(now) {
		h.t.Fatalf("upgrade event v%d at %s, want v2 at the store clock's now %s", last.Version, last.CreatedAt, now)
	}
	h.wantState(x, before)
	h.wantDigest(x, digest3, dep0)
	if got := h.autoLock(digest3, dep0); len(got) != 1 {
		h.t.Fatalf("auto lock by digest3 after a successful upgrade locked %d, want 1 (incompatible marker cleared)", len(got))
	}
}

func gapUpgradeC(h *harness) {
	x := h.create(withComp(compWith(core.ComponentTypeWorkflow, digest1)))
	h.mustAppend(x, 1, &core.ComponentUpgradeFinished{ComponentDigest: digest4, DeploymentID: newDep(),
		Outcome: core.ComponentUpgradeOutcome{FailedReason: "auto-upgrade replay produced no writes"}})
	h.wantDigest(x, digest1, dep0)
	h.wantState(x, psPendingAt(t0, nil))
	if got := h.autoLock(digest4, dep0); len(got) != 0 {
		h.t.Fatalf("auto lock by the incompatible digest locked %d, want 0", len(got))
	}
	// The plain locks do not honour the marker.
	req := h.lockReq(newExr(), newRun(), h.now().Add(time.Second))
	req.ComponentID = compWith(core.ComponentTypeWorkflow, digest1)
	got, err := h.db.LockPendingByComponentDigest(h.ctx, req)
	h.wantNoErr("lock by digest1", err)
	if len(got) != 1 {
		h.t.Fatalf("lock_pending_by_component_digest(digest1) locked %d, want 1", len(got))
	}
}

func gapUpgradeD(h *harness) {
	x := h.create(withComp(compWith(core.ComponentTypeWorkflow, digest1)))
	h.mustAppend(x, 1, finished(ok0))
	err := h.db.UpgradeExecutionComponent(h.ctx, x, digest1, digest3, manual(false))
	h.wantErr("upgrade of a finished execution", err, core.ErrAlreadyFinished)
	err = h.db.UpgradeExecutionComponent(h.ctx, x, digest2, digest3, manual(false))
	h.wantErr("upgrade of a finished execution from a wrong digest", err, core.ErrNotFound)
}

func gapAutoLock(h *harness) {
	dep2 := newDep()
	x := h.create(withComp(compWith(core.ComponentTypeWorkflow, digest1)))
	got := h.autoLock(digest2, dep2)
	if len(got) != 1 || got[0].ExecutionID != x {
		h.t.Fatalf("auto lock locked %d, want %s", len(got), x)
	}
	if got[0].ComponentDigest != digest1 {
		h.t.Fatalf("auto-locked component digest %s, want the execution's current digest %s", got[0].ComponentDigest, digest1)
	}
	if got[0].LockedEvent.ComponentID.ComponentDigest != digest2 || got[0].LockedEvent.DeploymentID != dep2 {
		h.t.Fatalf("Locked event records %s/%s, want the executor's %s/%s", got[0].LockedEvent.ComponentID.ComponentDigest,
			got[0].LockedEvent.DeploymentID, digest2, dep2)
	}
	h.wantDigest(x, digest1, dep0)
	l := h.get(x)
	lk, ok := l.LastEvent().Event.(*core.Locked)
	if !ok || lk.ComponentID.ComponentDigest != digest2 || lk.DeploymentID != dep2 {
		h.t.Fatalf("stored Locked event %s, want the executor's component and deployment", jsonOrErr(l.LastEvent().Event))
	}

	// The non-auto lock moves the execution to the locker's digest and deployment.
	y := h.create(withComp(compWith(core.ComponentTypeWorkflow, digest1)))
	req := h.lockReq(newExr(), newRun(), h.now().Add(time.Second))
	req.ComponentID = compWith(core.ComponentTypeWorkflow, digest2)
	req.DeploymentID = dep2
	locked, err := h.db.LockPendingByFFQNs(h.ctx, req, []core.FunctionFqn{ffqnF})
	h.wantNoErr("lock", err)
	if len(locked) != 1 || locked[0].ExecutionID != y || locked[0].ComponentDigest != digest2 {
		h.t.Fatalf("plain lock: %d locked, want %s with digest %s", len(locked), y, digest2)
	}
	h.wantDigest(y, digest2, dep2)
}

// errorsAs is errors.As for tests that inspect typed errors inline.
func errorsAs[T error](err error) (T, bool) {
	var target T
	ok := errors.As(err, &target)
	return target, ok
}

// signalBatch is the workflow's wait for its seq-th signal name: JSC, the
// stub's request and creation (core.SignalStubRequest), JN.
func (h *harness) signalBatch(p core.ExecutionId, v core.Version, name string, seq uint64, runExp core.Timestamp) (core.ExecutionId, core.JoinSetId) {
	h.t.Helper()
	req, err := core.SignalStubRequest(p, name, seq, h.now(), dep0)
	h.wantNoErr("signal stub request", err)
	js := req.Parent.JoinSetID
	v = h.submit(p, v, []core.ExecutionRequest{jsc(js), creqTo(js, req.ExecutionID, core.SignalFFQN)}, req)
	h.mustAppend(p, v, jnFor(js, runExp, nil))
	return req.ExecutionID, js
}

func signalPayload(v string) core.SignalPayload {
	return core.SignalPayload{Key: "k-" + v, Value: json.RawMessage(`"` + v + `"`)}
}

// signalSenderFirst: a signal sent before the workflow waits creates and
// finishes the stub and answers the workflow's (not yet created) join set;
// the workflow's later batch creating the same stub is accepted (the store
// does not create it again) and its JoinNext finds the response.
func signalSenderFirst(h *harness) {
	p := h.create(withComp(compWF))
	by := lockedBy(newExr(), newRun())
	h.mustLock(by.ExecutorID, by.RunID, t0.Add(time.Second))
	seq, err := core.SendSignal(h.ctx, h.db, p, "go", signalPayload("a"), h.now())
	h.wantNoErr("send_signal", err)
	if seq != 1 {
		h.t.Fatalf("first signal has sequence %d, want 1", seq)
	}
	c, js := h.signalBatch(p, 2, "go", 1, t0.Add(time.Second))
	rv, _ := core.SignalReturnValue(signalPayload("a"))
	h.wantState(c, psFinished(1, h.now(), rv.ResultKind()))
	pl := h.get(p)
	if len(pl.Responses) != 1 {
		h.t.Fatalf("workflow has %d responses, want 1", len(pl.Responses))
	}
	h.wantJSON("workflow response", pl.Responses[0].Event.Event, childResp(js, c, 1, rv))
	h.wantState(p, psPendingAt(t0.Add(time.Second), &by)) // JoinNext with its response there
	if seq, err := core.SendSignal(h.ctx, h.db, p, "go", signalPayload("a"), h.now()); err != nil || seq != 1 {
		h.t.Fatalf("the same send again: sequence %d, %v; want 1 (delivered once)", seq, err)
	}
	if seq, err := core.SendSignal(h.ctx, h.db, p, "go", signalPayload("b"), h.now()); err != nil || seq != 2 {
		h.t.Fatalf("a second signal: sequence %d, %v; want 2", seq, err)
	}
}

// signalWorkflowFirst: the workflow waits first (it creates the stub and
// blocks); the signal finishes that stub and unblocks it. A finished
// workflow refuses signals.
func signalWorkflowFirst(h *harness) {
	p := h.create(withComp(compWF))
	by := lockedBy(newExr(), newRun())
	h.mustLock(by.ExecutorID, by.RunID, t0.Add(time.Second))
	_, js := h.signalBatch(p, 2, "go", 1, t0.Add(time.Second))
	h.wantState(p, psBlocked(js, t0.Add(time.Second), false))
	seq, err := core.SendSignal(h.ctx, h.db, p, "go", signalPayload("a"), h.now())
	h.wantNoErr("send_signal", err)
	if seq != 1 {
		h.t.Fatalf("signal has sequence %d, want 1", seq)
	}
	h.wantState(p, psPendingAt(t0.Add(time.Second), &by))
	h.advance(time.Second)
	h.mustLock(by.ExecutorID, by.RunID, t0.Add(3*time.Second))
	h.mustAppend(p, 6, finished(ok0))
	_, err = core.SendSignal(h.ctx, h.db, p, "go", signalPayload("b"), h.now())
	h.wantErr("signal to a finished workflow", err, core.ErrAlreadyFinished)
}
