package storetest

import (
	"time"

	"github.com/stela-dev/stela/core"
)

// Areas 8–9: pause / unpause and cancellation.
func pauseCancelScenarios() []contractTest {
	return []contractTest{
		{"T044_PauseFinishedExecutionFails", t044},
		{"T045_PauseAndUnpauseLockedWorkflowReturnsToPendingAt", t045},
		{"T046_CannotPauseRunningActivity", t046},
		{"T048_CannotLockPausedExecution", t048},
		{"T049_CannotAppendUnlockedToPausedExecution", t049},
		{"T050_CreatePausedWorkflow", t050},
		{"T052_PauseWithPendingChildThenResponseThenUnpauseIsPending", t052},
		{"T053_PauseWithPendingDelayThenResponseThenUnpauseIsPending", t053},
		{"T054_CancellationRequestedFromPendingAtKeepsUnderlyingState", t054},
		{"T056_CancellationRequestedOnPausedWorkflowKeepsUnderlyingState", t056},
		{"T057_CancelActivityOnLockedExecution", t057},
		{"T058_CancelActivityOnPausedExecution", t058},
		{"T060_CancelWorkflowFromPendingAt", t060},
		{"T061_CancelWorkflowFromLockedKeepsUnderlyingState", t061},
		{"T062_CancelWorkflowFromPausedKeepsUnderlyingState", t062},
		{"T064_CancelWorkflowSecondCallIsAlreadyCancelling", t064},
		{"T065_GetCancellingReturnsOnlyCancellingRows", t065},
		{"T066_CannotLockCancellingExecution", t066},
		{"T070_StorageCancellationDriverFinishesBlockedWorkflowAsCancelled", t070},
	}
}

func t044(h *harness) {
	x := h.create()
	h.mustAppend(x, 1, finished(ok0))
	_, err := h.appendAt(x, 2, &core.Paused{}, h.now())
	h.wantErr("append Paused after Finished", err, core.ErrAlreadyFinished)
	_, err = h.db.PauseExecution(h.ctx, x, h.now())
	h.wantErr("pause_execution of a finished execution", err, core.ErrAlreadyFinished)
}

func t045(h *harness) {
	x := h.create(withComp(compWF))
	by := lockedBy(newExr(), newRun())
	h.mustLock(by.ExecutorID, by.RunID, t0.Add(30*time.Second))
	h.wantState(x, psLocked(by, t0.Add(30*time.Second)))
	v, err := h.db.PauseExecution(h.ctx, x, t0)
	h.wantNoErr("pause_execution", err)
	if v != 4 {
		h.t.Fatalf("pause_execution returned %d, want 4 (Unlocked v2 + Paused v3)", v)
	}
	h.wantState(x, psPaused(psPendingAt(t0, &by)))
	l := h.get(x)
	h.wantJSON("events[2]", l.Events[2].Event, &core.Unlocked{UnlockedAt: t0, Reason: "paused"})
	h.wantJSON("events[3]", l.Events[3].Event, &core.Paused{})
	v, err = h.db.UnpauseExecution(h.ctx, x, t0)
	h.wantNoErr("unpause_execution", err)
	if v != 5 {
		h.t.Fatalf("unpause_execution returned %d, want 5", v)
	}
	h.wantState(x, psPendingAt(t0, &by))
}

func t046(h *harness) {
	x := h.create()
	by := lockedBy(newExr(), newRun())
	h.mustLock(by.ExecutorID, by.RunID, t0.Add(30*time.Second))
	_, err := h.db.PauseExecution(h.ctx, x, t0)
	h.wantIllegal("pause of a locked activity", err, "cannot pause a running activity; cancel it instead")
	h.wantState(x, psLocked(by, t0.Add(30*time.Second)))
	h.wantNextVersion(x, 2)
}

func t048(h *harness) {
	x := h.create()
	h.mustAppend(x, 1, &core.Paused{})
	_, err := h.lockOne(x, 2, newExr(), newRun(), t0.Add(30*time.Second))
	h.wantIllegal("lock_one of a paused execution", err, "cannot lock, execution is paused")
}

func t049(h *harness) {
	x := h.create()
	h.mustAppend(x, 1, &core.Paused{})
	_, err := h.appendAt(x, 2, &core.Unlocked{UnlockedAt: t0, Reason: "should fail"}, t0)
	h.wantUnlockedRejected("Unlocked on a paused execution", err, "paused")
}

func t050(h *harness) {
	x := newExecID()
	h.mustCreateReq(h.createReq(x, withPaused()))
	h.wantState(x, psPaused(psPendingAt(t0, nil)))
	_, err := h.lockOne(x, 2, newExr(), newRun(), t0.Add(30*time.Second))
	h.wantIllegal("lock_one of a paused execution", err, "cannot lock, execution is paused")
	h.mustAppend(x, 2, &core.Unpaused{})
	h.wantState(x, psPendingAt(t0, nil))
}

// pausedBlockedParent is the common start of T052/T053: locked, JSC(o:),
// request, JN(o:, t0+30s) → Blocked, Paused at v5.
func pausedBlockedParent(h *harness, request func(x core.ExecutionId, js core.JoinSetId) core.ExecutionRequest, requested *core.FunctionFqn) (core.ExecutionId, core.JoinSetId, core.LockedBy) {
	h.t.Helper()
	x := h.create()
	by := lockedBy(newExr(), newRun())
	h.mustLock(by.ExecutorID, by.RunID, t0.Add(30*time.Second))
	js := mustJS("o:")
	h.mustAppend(x, 2, jsc(js))
	h.mustAppend(x, 3, request(x, js))
	h.mustAppend(x, 4, jnFor(js, t0.Add(30*time.Second), requested))
	h.wantState(x, psBlocked(js, t0.Add(30*time.Second), false))
	h.mustAppend(x, 5, &core.Paused{})
	h.wantState(x, psPaused(psBlocked(js, t0.Add(30*time.Second), false)))
	return x, js, by
}

func t052(h *harness) {
	f := ffqnF
	x, js, by := pausedBlockedParent(h, func(x core.ExecutionId, js core.JoinSetId) core.ExecutionRequest {
		return creq(js, x.NextLevel(js))
	}, &f)
	h.mustRespond(x, childResp(js, x.NextLevel(js), 1, ok0))
	h.wantState(x, psPaused(psPendingAt(t0.Add(30*time.Second), &by)))
	h.mustAppend(x, 6, &core.Unpaused{})
	h.wantState(x, psPendingAt(t0.Add(30*time.Second), &by))
}

func t053(h *harness) {
	x, js, by := pausedBlockedParent(h, func(x core.ExecutionId, js core.JoinSetId) core.ExecutionRequest {
		return dreq(js, core.NewDelayId(x, js, 1), t0.Add(time.Minute), schedIn(time.Minute))
	}, nil)
	h.mustRespond(x, delayResp(js, core.NewDelayId(x, js, 1), true))
	h.wantState(x, psPaused(psPendingAt(t0.Add(30*time.Second), &by)))
	h.mustAppend(x, 6, &core.Unpaused{})
	h.wantState(x, psPendingAt(t0.Add(30*time.Second), &by))
}

func t054(h *harness) {
	x := h.create(withSched(t0.Add(time.Minute)))
	if v := h.mustAppend(x, 1, &core.CancellationRequested{}); v != 2 {
		h.t.Fatalf("returned %d, want 2", v)
	}
	h.wantState(x, psCancelling(psPendingAt(t0.Add(time.Minute), nil)))
	h.wantLastEvent(x, &core.CancellationRequested{})
}

func t056(h *harness) {
	x := h.create(withComp(compWF))
	h.mustAppend(x, 1, &core.Paused{})
	h.mustAppend(x, 2, &core.CancellationRequested{})
	h.wantState(x, psCancelling(psPendingAt(t0, nil)))
}

func (h *harness) wantCancelOutcome(what string, out core.CancelOutcome, err error, want core.CancelOutcome) {
	h.t.Helper()
	h.wantNoErr(what, err)
	if out != want {
		h.t.Fatalf("%s = %s, want %s", what, out, want)
	}
}

func t057(h *harness) {
	x := h.create()
	by := lockedBy(newExr(), newRun())
	h.mustLock(by.ExecutorID, by.RunID, t0.Add(30*time.Second))
	out, err := h.db.AppendActivityCancellationRequested(h.ctx, x, t0)
	h.wantCancelOutcome("activity cancel", out, err, core.CancelRequested)
	h.wantState(x, psCancelling(psLocked(by, t0.Add(30*time.Second))))
	h.wantLastEvent(x, &core.CancellationRequested{})
}

func t058(h *harness) {
	x := h.create()
	h.mustAppend(x, 1, &core.Paused{})
	out, err := h.db.AppendActivityCancellationRequested(h.ctx, x, t0)
	h.wantCancelOutcome("activity cancel", out, err, core.CancelRequested)
	h.wantState(x, psCancelling(psPendingAt(t0, nil)))
	h.wantLastEvent(x, &core.CancellationRequested{})
}

func t060(h *harness) {
	x := h.create(withFFQN(ffqnFC))
	out, err := h.db.CancelWorkflow(h.ctx, x, t0)
	h.wantCancelOutcome("cancel_workflow", out, err, core.CancelRequested)
	h.wantState(x, psCancelling(psPendingAt(t0, nil)))
	h.wantLastEvent(x, &core.CancellationRequested{})
}

func t061(h *harness) {
	x := h.create(withFFQN(ffqnFC))
	by := lockedBy(newExr(), newRun())
	_, err := h.lockOne(x, 1, by.ExecutorID, by.RunID, t0.Add(30*time.Second))
	h.wantNoErr("lock_one", err)
	out, err := h.db.CancelWorkflow(h.ctx, x, t0)
	h.wantCancelOutcome("cancel_workflow", out, err, core.CancelRequested)
	h.wantState(x, psCancelling(psLocked(by, t0.Add(30*time.Second))))
	h.wantEventsTail(x, "locked", "cancellation_requested")
}

func t062(h *harness) {
	x := h.create(withFFQN(ffqnFC), withComp(compWF))
	_, err := h.db.PauseExecution(h.ctx, x, t0)
	h.wantNoErr("pause_execution", err)
	out, err := h.db.CancelWorkflow(h.ctx, x, t0)
	h.wantCancelOutcome("cancel_workflow", out, err, core.CancelRequested)
	h.wantStatus(x, core.StatePendingAt, core.LifecycleCancelling)
	h.wantEventsTail(x, "paused", "cancellation_requested")
}

func t064(h *harness) {
	x := h.create(withFFQN(ffqnFC))
	out, err := h.db.CancelWorkflow(h.ctx, x, t0)
	h.wantCancelOutcome("first cancel_workflow", out, err, core.CancelRequested)
	out, err = h.db.CancelWorkflow(h.ctx, x, t0)
	h.wantCancelOutcome("second cancel_workflow", out, err, core.CancelAlreadyCancelling)
	h.wantNextVersion(x, 2)

	y := h.create(withFFQN(ffqnFC))
	h.mustAppend(y, 1, finished(ok0))
	out, err = h.db.CancelWorkflow(h.ctx, y, t0)
	h.wantCancelOutcome("cancel_workflow of a finished execution", out, err, core.CancelAlreadyFinished)
	h.wantNextVersion(y, 1)
}

func t065(h *harness) {
	a := h.create(withFFQN(ffqnFC))
	out, err := h.db.CancelWorkflow(h.ctx, a, t0)
	h.wantCancelOutcome("cancel_workflow", out, err, core.CancelRequested)
	h.create()
	got, err := h.db.GetCancelling(h.ctx, 10)
	h.wantNoErr("get_cancelling", err)
	if len(got) != 1 || got[0] != a {
		h.t.Fatalf("get_cancelling = %v, want [%s]", got, a)
	}
}

func t066(h *harness) {
	x := h.create()
	h.mustAppend(x, 1, &core.CancellationRequested{})
	_, err := h.lockOne(x, 2, newExr(), newRun(), t0.Add(30*time.Second))
	h.wantIllegal("lock_one of a cancelling execution", err, "cannot lock, execution is cancelling")
}

// t070 is the storage path of T070: a cancellable workflow blocked on a long
// durable sleep is cancelled; the driver cancels the delay and finishes it.
func t070(h *harness) {
	x := h.create(withFFQN(ffqnFC), withComp(compWF))
	_, err := h.lockOne(x, 1, newExr(), newRun(), t0.Add(time.Second))
	h.wantNoErr("lock_one", err)
	js := mustJS("o:1-sleep")
	d := core.NewDelayId(x, js, 1)
	h.mustAppend(x, 2, jsc(js))
	h.mustAppend(x, 3, dreq(js, d, t0.Add(100*time.Second), schedIn(100*time.Second)))
	h.mustAppend(x, 4, jnFor(js, t0.Add(time.Second), nil))
	h.mustCancelWorkflow(x)
	h.driveUntilFinished(x)
	h.wantFinishedCancelled(x)
	l := h.get(x)
	if len(l.Responses) != 1 {
		h.t.Fatalf("%d responses, want the cancelled delay", len(l.Responses))
	}
	h.wantJSON("delay response", l.Responses[0].Event.Event, delayResp(js, d, false))
	if res, _ := h.db.GetPendingState(h.ctx, x); res.PendingState.Finished == nil ||
		res.PendingState.Finished.ResultKind != core.ResultKindFailure(core.FailureCancelled) {
		h.t.Fatalf("result kind %s, want execution_failure cancelled", jsonOrErr(res.PendingState))
	}
}
