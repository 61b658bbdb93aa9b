package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/stela-dev/stela/core"
)

// edgeCaseTests covers each numbered item of docs/spec/semantics.md §8.
func edgeCaseTests() []contractTest {
	return []contractTest{
		{"E08_01_NextVersionStaysAtFinishedVersion", e01},
		{"E08_02_AppendCheckOrder", e02},
		{"E08_03_ResponsesNeverBumpTheVersion", e03},
		{"E08_04_ResponseCursorsArePerRecipientAndGapless", e04},
		{"E08_05_UnblockRule", e05},
		{"E08_06_JoinNextMatchesResponsesByOrdinal", e06},
		{"E08_07_LastLockSurvivesUntilFinished", e07},
		{"E08_08_WatcherClassifiesByMaxRetriesAndProgress", e08},
		{"E08_09_IntermittentEventCountAndBackoff", e09},
		{"E08_10_UnlockedRules", e10},
		{"E08_11_LifecycleIsAnOverlay", e11},
		{"E08_12_CancelAsymmetry", e12},
		{"E08_13_GlobalUniqueness", e13},
		{"E08_14_TimerRowsRemovedOnlyByDelayResponses", e14},
		{"E08_15_ChildResultsTravelWithResponses", e15},
		{"E08_16_ByteExactJSONRoundTrip", e16},
		{"E08_17_IdOrderingIsStringOrdering", e17},
		{"E08_18_PrefixFiltersAreCaseSensitivePlainPrefixes", e18},
		{"E08_19_LockBatchesFollowFFQNOrderAndReturnOnlyLocked", e19},
		{"E08_20_AutoLockingDoesNotMoveTheExecution", e20},
		{"E08_21_CurrentDeploymentFollowsLocksAndUpgrades", e21},
		{"E08_22_InsertIfAbsentAndReplaceSemantics", e22},
		{"E08_23_CreatePaused", e23},
		{"E08_24_WaitsOnUnknownExecutions", e24},
		{"E08_25_UpgradeChecksDigestFirstAndFences", e25},
		{"E08_26_HistoryEventsNeedNoLock", e26},
		{"E08_27_DerivedIdsResolveParentFromTheString", e27},
		{"E08_28_WaitsCheckFirstAndWakeOnPending", e28},
	}
}

func e01(h *harness) {
	x := h.create()
	h.lockAny(t0.Add(time.Minute))
	v, err := h.db.AppendBatch(h.ctx, h.now(), []core.AppendRequest{
		{CreatedAt: h.now(), Event: jsc(mustJS("o:"))}, {CreatedAt: h.now(), Event: finished(ok0)}}, x, 2)
	h.wantNoErr("append_batch ending in Finished", err)
	if v != 3 {
		h.t.Fatalf("append_batch returned %d, want 3 (the Finished version)", v)
	}
	h.wantNextVersion(x, 3)
	h.wantState(x, psFinished(3, h.now(), ok0.ResultKind()))
	for _, at := range []core.Version{3, 4} {
		_, err := h.appendAt(x, at, jsc(mustJS("o:")), h.now())
		h.wantErr(fmt.Sprintf("append at %d after Finished", at), err, core.ErrAlreadyFinished)
	}
	// The parent's finished_version is the child's Finished version.
	p, c, js, _ := setupParentAwaitingChild(h, lockStrategies[0])
	h.mustLockWith(lockStrategies[0], h.lockReq(newExr(), newRun(), t0.Add(time.Minute)), ffqnChild)
	rv := core.RetOk(&core.WastValWithType{Type: "u64", Value: json.RawMessage(`55`)})
	v, err = h.db.AppendBatchRespondToParent(h.ctx,
		core.AppendEventsToExecution{ExecutionID: c, Version: 2, Batch: []core.AppendRequest{{CreatedAt: h.now(), Event: finished(rv)}}},
		core.AppendResponseToExecution{ParentExecutionID: p, CreatedAt: h.now(), JoinSetID: js,
			ChildExecutionID: core.ExecutionIdDerived{ExecutionId: c}, FinishedVersion: 2, Result: rv}, h.now())
	h.wantNoErr("respond to parent", err)
	if v != 2 {
		h.t.Fatalf("returned %d, want 2", v)
	}
	h.wantNextVersion(c, 2)
	cf := h.get(p).Responses[0].Event.Event.Event.(*core.ChildExecutionFinished)
	if cf.FinishedVersion != 2 {
		h.t.Fatalf("finished_version %d, want 2", cf.FinishedVersion)
	}
}

func e02(h *harness) {
	x := h.create()
	unknown := newExecID()
	created := &core.Created{FFQN: ffqnF, ComponentID: compACT, ScheduledAt: t0}
	for _, id := range []core.ExecutionId{x, unknown} {
		_, err := h.appendAt(id, 1, created, h.now())
		h.wantValidation("append Created", err, "cannot append `Created` event - use `create` instead")
	}
	_, err := h.appendAt(unknown, 1, jsc(mustJS("o:")), h.now())
	h.wantErr("append to an unknown execution", err, core.ErrNotFound)
	_, err = h.db.AppendBatch(h.ctx, h.now(), nil, x, 1)
	h.wantErr("empty append_batch", err, core.ErrValidation)

	// Lock path: expiry, then state, then version.
	_, err = h.lockOne(x, 7, newExr(), newRun(), h.now())
	h.wantValidation("lock with expiry == created_at at a wrong version", err, "invalid expiry date")
	_, err = h.lockOne(x, 7, newExr(), newRun(), h.now().Add(time.Second))
	h.wantVersionConflict("lock at a wrong version", err, 1, 7)
	by := lockedBy(newExr(), newRun())
	_, err = h.lockOne(x, 1, by.ExecutorID, by.RunID, h.now().Add(time.Second))
	h.wantNoErr("lock", err)
	_, err = h.lockOne(x, 7, newExr(), newRun(), h.now().Add(time.Second))
	h.wantIllegal("lock by another holder at a wrong version", err, "cannot lock, already locked")

	// Finished: AlreadyFinished before the version check; Locked → IllegalState.
	h.mustAppend(x, 2, finished(ok0))
	_, err = h.appendAt(x, 9, jsc(mustJS("o:")), h.now())
	h.wantErr("append at a wrong version after Finished", err, core.ErrAlreadyFinished)
	_, err = h.lockOne(x, 2, by.ExecutorID, by.RunID, h.now().Add(time.Second))
	h.wantIllegal("lock of a finished execution", err, "already finished")
	_, err = h.appendAt(x, 2, &core.Locked{ComponentID: compACT, ExecutorID: by.ExecutorID, RunID: by.RunID,
		LockExpiresAt: h.now().Add(time.Second), RetryConfig: retry0()}, h.now())
	h.wantIllegal("append Locked to a finished execution", err, "already finished")

	// Not yet pending: a different executor may not lock early.
	y := h.create(withSched(t0.Add(time.Hour)))
	_, err = h.lockOne(y, 1, newExr(), newRun(), t0.Add(2*time.Hour))
	h.wantValidation("lock before scheduled_at", err, "cannot lock, not yet pending")
}

func e03(h *harness) {
	x := h.create()
	by := lockedBy(newExr(), newRun())
	h.mustLock(by.ExecutorID, by.RunID, t0.Add(time.Minute))
	js := mustJS("o:")
	c := x.NextLevel(js)
	h.mustAppend(x, 2, jsc(js))
	h.mustAppend(x, 3, creq(js, c))
	h.mustRespond(x, childResp(js, c, 1, ok0))
	h.wantNextVersion(x, 4)
	h.wantState(x, psLocked(by, t0.Add(time.Minute)))
	// The running worker is not fenced by the response: it continues at v4 and
	// its JoinNext finds the response already there.
	h.mustAppend(x, 4, jn(js, t0.Add(time.Minute)))
	h.wantState(x, psPendingAt(t0.Add(time.Minute), &by))
}

func e04(h *harness) {
	a, b := h.create(), h.create()
	js := mustJS("o:")
	va, vb := h.mustAppend(a, 1, jsc(js)), h.mustAppend(b, 1, jsc(js))
	va = h.delayAndRespond(a, va, js, 1)
	vb = h.delayAndRespond(b, vb, js, 1)
	va = h.delayAndRespond(a, va, js, 2)
	// A rejected duplicate does not consume a cursor.
	h.wantErr("duplicate", h.respond(a, delayResp(js, core.NewDelayId(a, js, 2), true)), core.ErrConflict)
	h.delayAndRespond(a, va, js, 3)
	if got := cursorsOf(h.get(a).Responses); fmt.Sprint(got) != "[1 2 3]" {
		h.t.Fatalf("cursors of a %v, want [1 2 3]", got)
	}
	if got := cursorsOf(h.get(b).Responses); fmt.Sprint(got) != "[1]" {
		h.t.Fatalf("cursors of b %v, want [1]", got)
	}
	rs, err := h.db.SubscribeToNextResponses(h.ctx, a, 2)
	h.wantNoErr("subscribe above watermark 2", err)
	if fmt.Sprint(cursorsOf(rs)) != "[3]" {
		h.t.Fatalf("subscribe(2) = %v, want [3]", cursorsOf(rs))
	}
}

// blockedOn creates X locked by `by`, with JSC(js) (and JSC(other)) and JN(js, runExp) → Blocked.
func (h *harness) blockedOn(js, other core.JoinSetId, runExp core.Timestamp, mods ...func(*core.CreateRequest)) (core.ExecutionId, core.LockedBy, core.Version) {
	h.t.Helper()
	x := h.create(mods...)
	by := lockedBy(newExr(), newRun())
	_, err := h.lockOne(x, 1, by.ExecutorID, by.RunID, h.now().Add(time.Hour))
	h.wantNoErr("lock_one", err)
	h.mustAppend(x, 2, jsc(js))
	h.mustAppend(x, 3, jsc(other))
	v := h.mustAppend(x, 4, jnFor(js, runExp, nil))
	h.wantState(x, psBlocked(js, runExp, false))
	return x, by, v
}

func e05(h *harness) {
	js, other := mustJS("n:a"), mustJS("n:b")
	// Response on another join set: no change.
	x, by, _ := h.blockedOn(js, other, t0.Add(time.Minute))
	h.mustRespond(x, delayResp(other, core.NewDelayId(x, other, 1), true))
	h.wantState(x, psBlocked(js, t0.Add(time.Minute), false))
	// Same join set, response earlier than the block's deadline: pending at the deadline.
	h.mustRespond(x, delayResp(js, core.NewDelayId(x, js, 1), true))
	h.wantNextVersion(x, 5)
	h.wantState(x, psPendingAt(t0.Add(time.Minute), &by))

	// Response later than the deadline: pending at the response time.
	y, byY, _ := h.blockedOn(js, other, t0.Add(time.Second))
	at := h.advance(5 * time.Second)
	h.mustRespond(y, delayResp(js, core.NewDelayId(y, js, 1), true))
	h.wantState(y, psPendingAt(at, &byY))

	// Paused: unblocked underneath, stays paused.
	z, byZ, v := h.blockedOn(js, other, h.now().Add(time.Minute))
	h.mustAppend(z, v, &core.Paused{})
	h.mustRespond(z, delayResp(js, core.NewDelayId(z, js, 1), true))
	h.wantState(z, psPaused(psPendingAt(h.now().Add(time.Minute), &byZ)))

	// Cancelling: never unblocked.
	w, _, v := h.blockedOn(js, other, h.now().Add(time.Minute))
	h.mustAppend(w, v, &core.CancellationRequested{})
	h.mustRespond(w, delayResp(js, core.NewDelayId(w, js, 1), true))
	h.wantState(w, psCancelling(psBlocked(js, h.now().Add(time.Minute), false)))
}

func e06(h *harness) {
	x := h.create()
	by := lockedBy(newExr(), newRun())
	h.mustLock(by.ExecutorID, by.RunID, t0.Add(time.Hour))
	js, other := mustJS("n:js"), mustJS("n:other")
	v := h.mustAppend(x, 2, jsc(js))
	v = h.mustAppend(x, v, jsc(other))
	// Responses: other@1s, js@2s (r1), js@3s (r2).
	for i, j := range []core.JoinSetId{other, js, js} {
		h.clock.Set(t0.Add(time.Duration(i+1) * time.Second))
		h.mustRespond(x, delayResp(j, core.NewDelayId(x, j, uint64(i+1)), true))
	}
	h.clock.Set(t0)
	// JoinNextTry(found) and JoinNextTooMany are not counted.
	v = h.mustAppend(x, v, hist(&core.JoinNextTry{JoinSetID: js, Outcome: core.JoinNextTryFound}))
	v = h.mustAppend(x, v, hist(&core.JoinNextTooMany{JoinSetID: js}))
	v = h.mustAppend(x, v, jnFor(js, t0, nil)) // 1st → r1
	h.wantState(x, psPendingAt(t0.Add(2*time.Second), &by))
	v = h.mustAppend(x, v, jnFor(js, t0, nil)) // 2nd → r2
	h.wantState(x, psPendingAt(t0.Add(3*time.Second), &by))
	v = h.mustAppend(x, v, jnFor(js, t0, nil)) // 3rd → none
	h.wantState(x, psBlocked(js, t0, false))
	// A closing JoinNext is counted like any other.
	closing := mustJS("n:closing")
	v = h.mustAppend(x, v, jsc(closing))
	h.clock.Set(t0.Add(4 * time.Second))
	h.mustRespond(x, delayResp(closing, core.NewDelayId(x, closing, 1), true))
	v = h.mustAppend(x, v, jnClosing(closing, t0))
	h.wantState(x, psPendingAt(t0.Add(4*time.Second), &by))
	h.mustAppend(x, v, jnFor(closing, t0, nil))
	h.wantState(x, psBlocked(closing, t0, false))
}

func e07(h *harness) {
	x := h.create()
	by := lockedBy(newExr(), newRun())
	h.mustLock(by.ExecutorID, by.RunID, t0.Add(time.Minute))
	// Unlocked into the future: only the last holder may lock early (extension).
	h.mustAppend(x, 2, &core.Unlocked{UnlockedAt: t0.Add(time.Hour), Reason: "executor closing"})
	h.wantState(x, psPendingAt(t0.Add(time.Hour), &by))
	_, err := h.lockOne(x, 3, newExr(), newRun(), t0.Add(time.Minute))
	h.wantValidation("early lock by another executor", err, "cannot lock, not yet pending")
	_, err = h.lockOne(x, 3, by.ExecutorID, by.RunID, t0.Add(time.Minute))
	h.wantNoErr("early lock by the last holder", err)
	h.mustAppend(x, 4, &core.TemporarilyFailed{BackoffExpiresAt: t0, Reason: "r"})
	h.wantState(x, psPendingAt(t0, &by))
	js := mustJS("o:")
	h.mustAppend(x, 5, jsc(js))
	h.mustAppend(x, 6, jn(js, t0.Add(time.Minute)))
	h.mustRespond(x, delayResp(js, core.NewDelayId(x, js, 1), true))
	h.wantState(x, psPendingAt(t0.Add(time.Minute), &by))
	// An expired lock held by someone else cannot be taken over.
	by2 := lockedBy(newExr(), newRun())
	h.clock.Set(t0.Add(time.Minute))
	_, err = h.lockOne(x, 7, by2.ExecutorID, by2.RunID, t0.Add(2*time.Minute))
	h.wantNoErr("lock by a new executor once pending", err)
	h.clock.Set(t0.Add(3 * time.Minute))
	if got, err := h.db.LockPendingByFFQNs(h.ctx, h.lockReq(by.ExecutorID, newRun(), t0.Add(time.Hour)), []core.FunctionFqn{ffqnF}); err != nil || len(got) != 0 {
		h.t.Fatalf("lock of an expired lock: %d locked, err %v; want none", len(got), err)
	}
	_, err = h.lockOne(x, 8, by.ExecutorID, by.RunID, t0.Add(time.Hour))
	h.wantIllegal("take over an expired lock", err, "cannot lock, already locked")
	h.mustAppend(x, 8, finished(ok0))
	h.wantState(x, psFinished(8, h.now(), ok0.ResultKind()))
}

func e08(h *harness) {
	lockWith := func(id core.ExecutionId, v core.Version, by core.LockedBy, rc core.ComponentRetryConfig, exp core.Timestamp) {
		h.t.Helper()
		req := h.lockReq(by.ExecutorID, by.RunID, exp)
		req.RetryConfig = rc
		_, err := h.db.LockOne(h.ctx, req, id, v)
		h.wantNoErr("lock_one", err)
	}
	exp := t0.Add(time.Second)
	// Workflow (max_retries None) that made progress: Unlocked("made progress").
	progressed := h.create(withComp(compWF))
	lockWith(progressed, 1, lockedBy(newExr(), newRun()), retryForever(time.Second), exp)
	h.mustAppend(progressed, 2, jsc(mustJS("o:")))
	// Workflow that extended its lock and made no progress since: timed out with backoff.
	extended := h.create(withComp(compWF))
	byE := lockedBy(newExr(), newRun())
	lockWith(extended, 1, byE, retryForever(time.Second), exp)
	h.mustAppend(extended, 2, jsc(mustJS("o:")))
	lockWith(extended, 3, byE, retryForever(time.Second), exp)
	// An activity (max_retries Some) that made progress is not a workflow.
	activity := h.create()
	lockWith(activity, 1, lockedBy(newExr(), newRun()), retryN(5, time.Second), exp)
	h.mustAppend(activity, 2, jsc(mustJS("o:")))

	at := h.advance(time.Second)
	if locks, _ := h.sweep(at); locks != 3 {
		h.t.Fatalf("sweep handled %d locks, want 3", locks)
	}
	last := h.wantLastEvent(progressed, &core.Unlocked{UnlockedAt: at, Reason: "made progress"})
	if last.Version != 3 || !last.CreatedAt.Equal(at) {
		h.t.Fatalf("Unlocked at v%d created %s, want v3 at %s", last.Version, last.CreatedAt, at)
	}
	h.wantStatus(progressed, core.StatePendingAt, core.LifecycleActive)
	h.wantLastEvent(extended, &core.TemporarilyTimedOut{BackoffExpiresAt: at.Add(time.Second)})
	h.wantLastEvent(activity, &core.TemporarilyTimedOut{BackoffExpiresAt: at.Add(time.Second)})
}

func e09(h *harness) {
	x := h.create()
	rc := retryN(3, 1500*time.Microsecond)
	by := lockedBy(newExr(), newRun())
	lock := func(v core.Version, wantCount uint32) {
		h.t.Helper()
		req := h.lockReq(by.ExecutorID, by.RunID, h.now().Add(time.Second))
		req.RetryConfig = rc
		le, err := h.db.LockOne(h.ctx, req, x, v)
		h.wantNoErr("lock_one", err)
		if le.IntermittentEventCount != wantCount {
			h.t.Fatalf("intermittent_event_count at v%d = %d, want %d", v, le.IntermittentEventCount, wantCount)
		}
	}
	lock(1, 0)
	h.mustAppend(x, 2, &core.TemporarilyFailed{BackoffExpiresAt: h.now(), Reason: "r"})
	lock(3, 1)
	h.mustAppend(x, 4, &core.Unlocked{UnlockedAt: h.now(), Reason: "executor closing"})
	lock(5, 1)
	h.mustAppend(x, 6, &core.TemporarilyTimedOut{BackoffExpiresAt: h.now()})
	lock(7, 2)
	at := h.advance(time.Second)
	// Backoff is stored in whole milliseconds: 1.5ms reads back as 1ms.
	h.wantTimers(at, []core.ExpiredTimer{expiredLock(x, 7, 8, 2, u32p(3), time.Millisecond, by, at)})
	h.sweep(at)
	// Third failure: backoff × 2^2.
	h.wantLastEvent(x, &core.TemporarilyTimedOut{BackoffExpiresAt: at.Add(4 * time.Millisecond)})
	h.clock.Set(at.Add(4 * time.Millisecond))
	lock(9, 3)
	at = h.advance(time.Second)
	h.sweep(at)
	// Fourth failure exceeds max_retries 3.
	h.wantLastEvent(x, finished(core.RetFailure(core.FailureTimedOut, nil, nil)))
}

func e10(h *harness) {
	x := h.create(withSched(t0.Add(time.Minute)))
	_, err := h.appendAt(x, 1, &core.Unlocked{UnlockedAt: t0.Add(time.Minute), Reason: "r"}, t0)
	h.wantUnlockedRejected("Unlocked not earlier than scheduled_at", err, "pending")
	h.wantNextVersion(x, 1)
	h.mustAppend(x, 1, &core.Unlocked{UnlockedAt: t0.Add(time.Second), Reason: "r"})
	h.wantState(x, psPendingAt(t0.Add(time.Second), nil))

	js, other := mustJS("n:a"), mustJS("n:b")
	y, _, v := h.blockedOn(js, other, t0.Add(time.Hour))
	h.mustAppend(y, v, &core.Unlocked{UnlockedAt: t0.Add(time.Second), Reason: "executor closing"})
	h.wantState(y, psBlocked(js, t0.Add(time.Second), false))

	z := h.create()
	h.mustAppend(z, 1, &core.CancellationRequested{})
	_, err = h.appendAt(z, 2, &core.Unlocked{UnlockedAt: t0, Reason: "r"}, t0)
	h.wantUnlockedRejected("Unlocked on a cancelling execution", err, "cancelling")
}

func e11(h *harness) {
	// A cancelling locked activity that fails temporarily stays cancelling.
	a := h.create()
	h.lockAny(t0.Add(time.Minute))
	h.mustAppend(a, 2, &core.CancellationRequested{})
	h.mustAppend(a, 3, &core.TemporarilyFailed{BackoffExpiresAt: t0.Add(time.Second), Reason: "r"})
	h.wantStatus(a, core.StatePendingAt, core.LifecycleCancelling)
	h.mustAppend(a, 4, finished(cancelledRetval))
	h.wantState(a, psFinished(4, h.now(), cancelledRetval.ResultKind()))

	// A paused execution can be advanced: JoinNext blocks it, a response unblocks it, all underneath.
	p := h.create(withComp(compWF))
	js := mustJS("o:")
	h.mustAppend(p, 1, &core.Paused{})
	h.mustAppend(p, 2, jsc(js))
	h.mustAppend(p, 3, jnFor(js, t0, nil))
	h.wantState(p, psPaused(psBlocked(js, t0, false)))
	h.mustRespond(p, delayResp(js, core.NewDelayId(p, js, 1), true))
	h.wantState(p, psPaused(psPendingAt(t0, nil)))
	h.mustAppend(p, 4, finished(ok0))
	h.wantState(p, psFinished(4, h.now(), ok0.ResultKind()))

	// Pausing a locked workflow consumes two versions.
	w := h.create(withComp(compWF))
	h.lockAny(t0.Add(time.Minute))
	v, err := h.db.PauseExecution(h.ctx, w, t0)
	h.wantNoErr("pause_execution", err)
	if v != 4 {
		h.t.Fatalf("pause_execution of a locked workflow returned %d, want 4", v)
	}
	h.wantEventsTail(w, "locked", "unlocked", "paused")
}

func e12(h *harness) {
	a := h.create()
	for i := 0; i < 2; i++ {
		out, err := h.db.AppendActivityCancellationRequested(h.ctx, a, t0)
		h.wantCancelOutcome("activity cancel", out, err, core.CancelRequested)
	}
	h.wantNextVersion(a, 2)
	h.mustAppend(a, 2, finished(cancelledRetval))
	out, err := h.db.AppendActivityCancellationRequested(h.ctx, a, t0)
	h.wantCancelOutcome("activity cancel after finishing as cancelled", out, err, core.CancelRequested)
	b := h.create()
	h.mustAppend(b, 1, finished(ok0))
	out, err = h.db.AppendActivityCancellationRequested(h.ctx, b, t0)
	h.wantCancelOutcome("activity cancel after finishing ok", out, err, core.CancelAlreadyFinished)

	// Workflows: finished and cancelling are checked before the ffqn.
	plain := h.create(withComp(compWF))
	_, err = h.db.CancelWorkflow(h.ctx, plain, t0)
	h.wantIllegal("cancel of a non-cancellable workflow", err, "cannot cancel, execution is not a cancellable workflow")
	h.mustAppend(plain, 1, &core.CancellationRequested{})
	out, err = h.db.CancelWorkflow(h.ctx, plain, t0)
	h.wantCancelOutcome("cancel_workflow of a cancelling non-cancellable workflow", out, err, core.CancelAlreadyCancelling)
	done := h.create(withComp(compWF))
	h.mustAppend(done, 1, finished(ok0))
	out, err = h.db.CancelWorkflow(h.ctx, done, t0)
	h.wantCancelOutcome("cancel_workflow of a finished non-cancellable workflow", out, err, core.CancelAlreadyFinished)

	// Cancelling(Locked) is skipped by the expired-lock sweep.
	c := h.create()
	h.lockAny(t0.Add(time.Second))
	out, err = h.db.AppendActivityCancellationRequested(h.ctx, c, t0)
	h.wantCancelOutcome("cancel locked activity", out, err, core.CancelRequested)
	at := h.advance(time.Second)
	for _, tm := range h.expiredTimers(at) {
		if tm.Lock != nil && tm.Lock.ExecutionID == c {
			h.t.Fatalf("expired-lock sweep lists the cancelling execution")
		}
	}
	if locks, _ := h.sweep(at); locks != 0 {
		h.t.Fatalf("sweep handled %d locks, want 0", locks)
	}
	h.wantStatus(c, core.StateLocked, core.LifecycleCancelling)
}

func e13(h *harness) {
	a, b := h.create(), h.create()
	js := mustJS("o:")
	c := a.NextLevel(js)
	h.mustRespond(a, childResp(js, c, 1, ok0))
	h.wantErr("same child id responded to another execution", h.respond(b, childResp(js, c, 1, ok0)), core.ErrConflict)
	d := core.NewDelayId(a, js, 1)
	h.mustRespond(a, delayResp(js, d, true))
	h.wantErr("same delay id responded to another execution", h.respond(b, delayResp(js, d, true)), core.ErrConflict)

	va := h.mustAppend(b, 1, jsc(js))
	dd := core.NewDelayId(b, js, 1)
	va = h.mustAppend(b, va, dreq(js, dd, t0.Add(time.Minute), schedNow))
	_, err := h.appendAt(b, va, dreq(js, dd, t0.Add(time.Minute), schedNow), h.now())
	h.wantErr("duplicate DelayRequest", err, core.ErrConflict)
	h.wantNextVersion(b, va)

	// A child that already exists aborts the whole batch.
	p := h.create()
	child := p.NextLevel(js)
	h.createWithID(child, withParent(p, js))
	_, err = h.db.AppendBatchCreateNewExecution(h.ctx, h.now(), []core.AppendRequest{{CreatedAt: h.now(), Event: jsc(js)},
		{CreatedAt: h.now(), Event: creq(js, child)}}, p, 1, []core.CreateRequest{h.createReq(child, withParent(p, js))}, nil)
	h.wantErr("child that already exists", err, core.ErrConflict)
	h.wantNextVersion(p, 1)

	// A parent that already has this child's response: nothing is written.
	h.mustRespond(p, childResp(js, child, 1, ok0))
	_, err = h.db.AppendBatchRespondToParent(h.ctx,
		core.AppendEventsToExecution{ExecutionID: child, Version: 1, Batch: []core.AppendRequest{{CreatedAt: h.now(), Event: finished(ok0)}}},
		core.AppendResponseToExecution{ParentExecutionID: p, CreatedAt: h.now(), JoinSetID: js,
			ChildExecutionID: core.ExecutionIdDerived{ExecutionId: child}, FinishedVersion: 1, Result: ok0}, h.now())
	h.wantErr("second response for the child", err, core.ErrConflict)
	h.wantStatus(child, core.StatePendingAt, core.LifecycleActive)
	_, err = h.db.AppendBatchRespondToParent(h.ctx,
		core.AppendEventsToExecution{ExecutionID: p, Version: 1, Batch: []core.AppendRequest{{CreatedAt: h.now(), Event: finished(ok0)}}},
		core.AppendResponseToExecution{ParentExecutionID: p, CreatedAt: h.now(), JoinSetID: js,
			ChildExecutionID: core.ExecutionIdDerived{ExecutionId: child}, FinishedVersion: 1, Result: ok0}, h.now())
	h.wantValidation("respond to itself", err, "Parameters `execution_id` and `parent_execution_id` cannot be the same")
}

func e14(h *harness) {
	at := t0.Add(time.Minute)
	fire := func(x core.ExecutionId, js core.JoinSetId, d core.DelayId) {
		h.t.Helper()
		found := false
		for _, tm := range h.expiredTimers(at) {
			found = found || (tm.Delay != nil && tm.Delay.DelayID == d)
		}
		if !found {
			h.t.Fatalf("delay %s of %s (%s) is not listed as expired", d, x, jsonOrErr(h.pendingState(x)))
		}
	}
	js := mustJS("o:")
	mk := func(after core.ExecutionRequest) (core.ExecutionId, core.DelayId) {
		h.t.Helper()
		x := h.create()
		d := core.NewDelayId(x, js, 1)
		h.mustAppend(x, 1, jsc(js))
		h.mustAppend(x, 2, dreq(js, d, at, schedIn(time.Minute)))
		h.mustAppend(x, 3, after)
		return x, d
	}
	fin, dFin := mk(finished(ok0))
	paused, dPaused := mk(&core.Paused{})
	canc, dCanc := mk(&core.CancellationRequested{})
	for _, c := range []struct {
		x core.ExecutionId
		d core.DelayId
	}{{fin, dFin}, {paused, dPaused}, {canc, dCanc}} {
		fire(c.x, js, c.d)
	}
	if _, delays := h.sweep(at); delays != 3 {
		h.t.Fatalf("sweep fired %d delays, want 3", delays)
	}
	for _, x := range []core.ExecutionId{fin, paused, canc} {
		if n := len(h.get(x).Responses); n != 1 {
			h.t.Fatalf("%s has %d responses, want the fired delay", x, n)
		}
	}
	h.wantTimers(at, nil)
	h.wantStatus(paused, core.StatePendingAt, core.LifecyclePaused)

	// cancel_delay does not check that the delay was requested.
	y := h.create()
	ghost := core.NewDelayId(y, js, 7)
	out, err := core.CancelDelay(h.ctx, h.db, ghost, h.now())
	h.wantNoErr("cancel of a never-requested delay", err)
	if out != core.DelayCancelled {
		h.t.Fatalf("cancel_delay = %d, want cancelled", out)
	}
	h.wantJSON("ghost delay response", h.get(y).Responses[0].Event.Event, delayResp(js, ghost, false))
	h.wantNextVersion(y, 1)
}

func e15(h *harness) {
	p, c, js, by := setupParentAwaitingChild(h, lockStrategies[0])
	rv := core.RetErr(&core.WastValWithType{Type: "string", Value: json.RawMessage(`"boom"`)})
	h.mustLockWith(lockStrategies[0], h.lockReq(newExr(), newRun(), t0.Add(time.Minute)), ffqnChild)
	_, err := h.db.AppendBatchRespondToParent(h.ctx,
		core.AppendEventsToExecution{ExecutionID: c, Version: 2, Batch: []core.AppendRequest{{CreatedAt: t0, Event: finished(rv)}}},
		core.AppendResponseToExecution{ParentExecutionID: p, CreatedAt: t0, JoinSetID: js,
			ChildExecutionID: core.ExecutionIdDerived{ExecutionId: c}, FinishedVersion: 2, Result: rv}, t0)
	h.wantNoErr("respond to parent", err)
	want := core.ResponseWithCursor{Cursor: 1, Event: core.JoinSetResponseEventOuter{CreatedAt: t0, Event: childResp(js, c, 2, rv)}}
	h.wantJSON("get", h.get(p).Responses, []core.ResponseWithCursor{want})
	h.wantJSON("list_responses", h.listResponses(p, newer(10, 0, false), nil).Responses, []core.ResponseWithCursor{want})
	rs, err := h.db.SubscribeToNextResponses(h.ctx, p, 0)
	h.wantNoErr("subscribe", err)
	h.wantJSON("subscribe", rs, []core.ResponseWithCursor{want})
	h.wantState(p, psPendingAt(t0, &by))
	le, err := h.lockOne(p, 5, by.ExecutorID, by.RunID, t0.Add(time.Minute))
	h.wantNoErr("relock parent", err)
	h.wantJSON("locked responses", le.Responses, []core.ResponseWithCursor{want})
}

func e16(h *harness) {
	params := core.Params{json.RawMessage(`18446744073709551615`), json.RawMessage(`{"b":1,"a":[1.50,-0,1e400]}`), json.RawMessage(`"ž\n<>&\u2028"`)}
	meta := core.ExecutionMetadata{"tracing:traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tracing:obelisk-tracing-linked": ""}
	for _, ns := range []int{123456789, 123456000, 123000000, 0} {
		h.clock.Set(t0.Add(time.Duration(ns)))
		x := newExecID()
		req := h.createReq(x, func(r *core.CreateRequest) {
			r.Params = params
			r.Metadata = meta
			r.ScheduledAt = core.TS(time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC))
		})
		h.mustCreateReq(req)
		l := h.get(x)
		h.wantJSON("Created event", l.Events[0], core.ExecutionEvent{CreatedAt: h.now(), Event: req.CreatedEvent(), Version: 0})
		cr, err := h.db.GetCreateRequest(h.ctx, x)
		h.wantNoErr("get_create_request", err)
		h.wantJSON("create request", cr, req)
		unlocked := &core.Unlocked{UnlockedAt: h.now(), Reason: "r\"\\\u0001"}
		h.mustAppend(x, 1, unlocked)
		ev, err := h.db.GetExecutionEvent(h.ctx, x, 1)
		h.wantNoErr("get_execution_event", err)
		h.wantJSON("Unlocked event", ev, core.ExecutionEvent{CreatedAt: h.now(), Event: unlocked, Version: 1})
		if s := mustJSON(ev.Event); s != `{"unlocked":{"backoff_expires_at":"`+h.now().String()+`","reason":"r\"\\\u0001"}}` {
			h.t.Fatalf("Unlocked JSON %s", s)
		}
	}
	h.clock.Set(t0)
	p := h.create()
	h.mustAppend(p, 1, &core.Paused{})
	ws, err := h.db.GetPendingState(h.ctx, p)
	h.wantNoErr("get_pending_state", err)
	if s := mustJSON(ws.PendingState); s != `{"status":"paused","PendingAt":{"scheduled_at":"1970-01-01T00:00:00Z","last_lock":null}}` {
		h.t.Fatalf("paused pending state JSON %s", s)
	}
	rv := core.RetOk(&core.WastValWithType{Type: "string", Value: json.RawMessage(`"ž\n<>&\u2028"`)})
	traces := []core.HttpClientTrace{{Req: core.RequestTrace{SentAt: t0.Add(time.Microsecond), URI: "https://example.com/?a=1&b=2", Method: "GET"},
		Resp: &core.ResponseTrace{FinishedAt: t0.Add(time.Millisecond), Status: core.StatusResult{Err: strp("connection refused")}}}}
	f := &core.Finished{Retval: rv, HTTPClientTraces: &traces}
	h.mustAppend(p, 2, f)
	h.wantJSON("Finished with traces", h.get(p).LastEvent().Event, f)
}

func e17(h *harness) {
	p := h.create()
	js := mustJS("g:1")
	c1 := p.NextLevel(js)
	c2 := c1.Incremented()
	c10 := c1
	for i := 1; i < 10; i++ {
		c10 = c10.Incremented()
	}
	for _, c := range []core.ExecutionId{c2, c10} {
		h.advance(time.Second)
		h.createWithID(c, withParent(p, js))
	}
	derived := core.ListExecutionsFilter{ShowDerived: true}
	h.wantIDSet("NewerThan(…_10)", idsOf(h.listExecutions(derived, byID(core.NewerThan, 10, &c10, false))), c2)
	h.wantIDSet("OlderThan(…_2)", idsOf(h.listExecutions(derived, byID(core.OlderThan, 10, &c2, false))), p, c10)
	h.wantIDs("newest first by created_at", idsOf(h.listExecutions(derived, core.DefaultExecutionListPagination())), c10, c2, p)
}

func e18(h *harness) {
	x := h.create()
	pag := core.DefaultExecutionListPagination()
	for _, tc := range []struct {
		prefix string
		want   []core.ExecutionId
	}{
		{"E_", []core.ExecutionId{x}},
		{x.String(), []core.ExecutionId{x}},
		{"e_", nil},
		{"E%", nil},
		{"E" + "\\_", nil},
		{"_", nil},
	} {
		h.wantIDs(fmt.Sprintf("prefix %q", tc.prefix), idsOf(h.listExecutions(core.ListExecutionsFilter{ExecutionIDPrefix: tc.prefix}, pag)), tc.want...)
	}
	h.wantIDs("upper-case function prefix", idsOf(h.listExecutions(core.ListExecutionsFilter{
		FunctionName: &core.FunctionNameFilter{Kind: "function", Value: "NS:pkg/ifc.fn"}}, pag)))
	h.wantIDs("function prefix with %", idsOf(h.listExecutions(core.ListExecutionsFilter{
		FunctionName: &core.FunctionNameFilter{Kind: "function", Value: "ns:%"}}, pag)))
}

func e19(h *harness) {
	f1, f2 := mustFFQN("ns:pkg/ifc.one"), mustFFQN("ns:pkg/ifc.two")
	a1 := h.create(withFFQN(f1))
	h.advance(time.Millisecond)
	b1 := h.create(withFFQN(f2))
	h.advance(time.Millisecond)
	a2 := h.create(withFFQN(f1))
	h.advance(time.Millisecond)
	b2 := h.create(withFFQN(f2))
	req := h.lockReq(newExr(), newRun(), h.now().Add(time.Minute))
	req.BatchSize = 3
	got, err := h.db.LockPendingByFFQNs(h.ctx, req, []core.FunctionFqn{f2, f1})
	h.wantNoErr("lock", err)
	var ids []core.ExecutionId
	for _, le := range got {
		ids = append(ids, le.ExecutionID)
	}
	h.wantIDs("locked (per ffqn in the given order, then by scheduled_at)", ids, b1, b2, a1)
	for _, le := range got {
		h.wantState(le.ExecutionID, psLocked(lockedBy(req.ExecutorID, req.RunID), req.LockExpiresAt))
		h.wantJSON("locked event", &le.LockedEvent, req.LockedEvent())
	}
	h.wantStatus(a2, core.StatePendingAt, core.LifecycleActive)

	// The LockedExecution carries everything a worker needs.
	p := h.create()
	js := mustJS("n:x")
	x := p.NextLevel(js)
	meta := core.ExecutionMetadata{"k": "v"}
	h.createWithID(x, withParent(p, js), func(r *core.CreateRequest) {
		r.Params = core.Params{json.RawMessage(`1`), json.RawMessage(`"two"`)}
		r.Metadata = meta
	})
	by := lockedBy(newExr(), newRun())
	_, err = h.lockOne(x, 1, by.ExecutorID, by.RunID, h.now().Add(time.Minute))
	h.wantNoErr("lock_one", err)
	h.mustAppend(x, 2, jsc(js))
	h.mustAppend(x, 3, persist(7))
	h.mustRespond(x, delayResp(js, core.NewDelayId(x, js, 1), true))
	h.mustAppend(x, 4, &core.TemporarilyFailed{BackoffExpiresAt: h.now(), Reason: "r"})
	req2 := h.lockReq(by.ExecutorID, newRun(), h.now().Add(time.Minute))
	req2.RetryConfig = retryN(2, time.Second)
	le, err := h.db.LockOne(h.ctx, req2, x, 5)
	h.wantNoErr("lock_one", err)
	l := h.get(x)
	want := core.LockedExecution{ExecutionID: x, NextVersion: 6, Metadata: meta, ComponentDigest: compACT.ComponentDigest,
		LockedEvent: *req2.LockedEvent(), FFQN: ffqnF, Params: core.Params{json.RawMessage(`1`), json.RawMessage(`"two"`)},
		EventHistory: l.EventHistory(), Responses: l.Responses, Parent: &core.Parent{ExecutionID: p, JoinSetID: js}, IntermittentEventCount: 1,
		ComponentType: compACT.ComponentType}
	if len(want.EventHistory) != 2 {
		h.t.Fatalf("event history %d entries, want 2", len(want.EventHistory))
	}
	h.wantJSON("locked execution", lockedJSON(le), lockedJSON(want))
}

// lockedJSON renders a LockedExecution for comparison.
func lockedJSON(le core.LockedExecution) map[string]any {
	hist := make([]any, len(le.EventHistory))
	for i, e := range le.EventHistory {
		hist[i] = []any{json.RawMessage(mustJSON(e.Event)), e.Version}
	}
	return map[string]any{"id": le.ExecutionID, "next": le.NextVersion, "meta": le.Metadata, "digest": le.ComponentDigest,
		"locked": &le.LockedEvent, "ffqn": le.FFQN, "params": le.Params, "history": hist, "responses": le.Responses,
		"parent": le.Parent, "intermittent": le.IntermittentEventCount, "component_type": le.ComponentType}
}

func e20(h *harness) {
	x := h.create(withComp(compWith(core.ComponentTypeWorkflow, digest1)))
	h.mustAppend(x, 1, &core.ComponentUpgradeFinished{ComponentDigest: digest2, DeploymentID: dep0,
		Outcome: core.ComponentUpgradeOutcome{FailedReason: "incompatible"}})
	if got := h.autoLock(digest2, newDep()); len(got) != 0 {
		h.t.Fatalf("auto lock by the incompatible digest locked %d", len(got))
	}
	got := h.autoLock(digest3, newDep())
	if len(got) != 1 || got[0].ComponentDigest != digest1 {
		h.t.Fatalf("auto lock by another digest: %d locked", len(got))
	}
	h.wantDigest(x, digest1, dep0)
}

func e21(h *harness) {
	dep1, dep2, dep3 := newDep(), newDep(), newDep()
	x := h.create(withComp(compWith(core.ComponentTypeWorkflow, digest1)))
	inDep := func(d core.DeploymentId) []core.ExecutionId {
		return idsOf(h.listExecutions(core.ListExecutionsFilter{DeploymentID: &d}, core.DefaultExecutionListPagination()))
	}
	h.wantIDs("in dep0", inDep(dep0), x)
	req := h.lockReq(newExr(), newRun(), h.now().Add(time.Minute))
	req.ComponentID, req.DeploymentID = compWith(core.ComponentTypeWorkflow, digest2), dep1
	_, err := h.db.LockOne(h.ctx, req, x, 1)
	h.wantNoErr("lock by dep1", err)
	h.wantDigest(x, digest2, dep1)
	h.wantIDs("in dep1 after lock", inDep(dep1), x)
	h.wantIDs("in dep0 after lock", inDep(dep0))
	h.mustAppend(x, 2, &core.Unlocked{UnlockedAt: h.now(), Reason: "r"})
	h.autoLock(digest3, dep2)
	h.wantDigest(x, digest2, dep1)
	h.mustAppend(x, 4, &core.ComponentUpgradeFinished{ComponentDigest: digest3, DeploymentID: dep3,
		Outcome: core.ComponentUpgradeOutcome{Success: true}})
	h.wantDigest(x, digest3, dep3)
	h.wantNoErr("manual upgrade", h.db.UpgradeExecutionComponent(h.ctx, x, digest3, digest4, manual(false)))
	h.wantDigest(x, digest4, dep3)
	h.wantIDs("in dep3", inDep(dep3), x)
}

func e22(h *harness) {
	skipIfNotImplemented := func(err error) {
		h.t.Helper()
		if errors.Is(err, core.ErrNotImplemented) {
			h.t.Skipf("deployments not implemented by this backend yet: %v", err)
		}
	}
	comp := digest1
	err := h.db.UpsertComponentMetadata(h.ctx, []core.ComponentMetadataRecord{{ComponentDigest: comp, Wit: "package first;", WitOrigin: core.WitOriginWasm}})
	skipIfNotImplemented(err)
	h.wantNoErr("upsert_component_metadata", err)
	h.wantNoErr("second upsert_component_metadata", h.db.UpsertComponentMetadata(h.ctx,
		[]core.ComponentMetadataRecord{{ComponentDigest: comp, Wit: "package second;", WitOrigin: core.WitOriginAuthored}}))
	dep := newDep()
	toml := "{}"
	rec := core.DeploymentRecord{DeploymentID: dep, Digest: core.ContentDigestOf([]byte(toml)), CreatedAt: t0,
		Status: core.DeploymentInactive, DeploymentToml: toml, ObeliskVersion: "0.0.0-test"}
	err = h.db.InsertDeploymentWithComponents(h.ctx, rec, nil,
		[]core.DeploymentComponentRecord{{DeploymentID: dep, ComponentName: "a", ComponentDigest: comp, ComponentType: core.ComponentTypeActivity}}, nil)
	skipIfNotImplemented(err)
	h.wantNoErr("insert_deployment_with_components", err)
	wit, err := h.db.GetDeploymentComponentWit(h.ctx, dep, comp)
	h.wantNoErr("get_deployment_component_wit", err)
	if wit != "package first;" {
		h.t.Fatalf("wit %q, want the first write %q", wit, "package first;")
	}

	// A source mapping refers to a blob that is already in the CAS (SQLite's
	// foreign key in Obelisk; docs/spec/reliability.md S4).
	first, second := h.writeBlob("first"), h.writeBlob("second")
	err = h.db.UpsertSourceMapping(h.ctx, comp, "/src/lib.rs", false, first)
	skipIfNotImplemented(err)
	h.wantNoErr("upsert_source_mapping", err)
	h.wantNoErr("upsert_source_mapping again", h.db.UpsertSourceMapping(h.ctx, comp, "/src/lib.rs", false, second))
	got, err := h.db.ResolveSourceDigest(h.ctx, comp, "/src/lib.rs")
	h.wantNoErr("resolve_source_digest", err)
	if got != second {
		h.t.Fatalf("resolved %s, want the replacing digest %s", got, second)
	}
	h.wantNoErr("suffix mapping", h.db.UpsertSourceMapping(h.ctx, comp, "/lib.rs", true, first))
	_, err = h.db.ResolveSourceDigest(h.ctx, comp, "/src/lib.rs")
	h.wantErr("ambiguous exact + suffix", err, core.ErrNotFound)
	got, err = h.db.ResolveSourceDigest(h.ctx, comp, "/other/lib.rs")
	h.wantNoErr("suffix only", err)
	if got != first {
		h.t.Fatalf("suffix resolved %s, want %s", got, first)
	}
}

func e23(h *harness) {
	x := newExecID()
	req := h.createReq(x, withPaused())
	h.mustCreateReq(req)
	l := h.get(x)
	if len(l.Events) != 2 || l.Events[1].Event.Variant() != "paused" || !l.Events[1].CreatedAt.Equal(req.CreatedAt) {
		h.t.Fatalf("events %v, want Created, Paused (same created_at)", variantsOf(l.Events))
	}
	cr, err := h.db.GetCreateRequest(h.ctx, x)
	h.wantNoErr("get_create_request", err)
	req.Paused = false
	h.wantJSON("create request (paused reported false)", cr, req)
	got, err := h.db.LockPendingByFFQNs(h.ctx, h.lockReq(newExr(), newRun(), h.now().Add(time.Second)), []core.FunctionFqn{ffqnF})
	h.wantNoErr("lock", err)
	if len(got) != 0 {
		h.t.Fatalf("locked a paused execution")
	}
}

func e24(h *harness) {
	short, cancel := context.WithTimeout(h.ctx, 20*time.Millisecond)
	defer cancel()
	_, err := h.db.SubscribeToNextResponses(short, newExecID(), 0)
	h.wantErr("subscribe to an unknown execution", err, core.ErrTimeout)
	_, err = h.db.WaitForFinishedResult(h.ctx, newExecID())
	h.wantErr("wait_for_finished_result of an unknown execution", err, core.ErrNotFound)
}

func e25(h *harness) {
	x := h.create(withComp(compWith(core.ComponentTypeWorkflow, digest1)), withDep(dep0))
	by := lockedBy(newExr(), newRun())
	req := h.lockReq(by.ExecutorID, by.RunID, h.now().Add(time.Minute))
	req.ComponentID = compWith(core.ComponentTypeWorkflow, digest1)
	depL := newDep()
	req.DeploymentID = depL
	_, err := h.db.LockOne(h.ctx, req, x, 1)
	h.wantNoErr("lock", err)
	now := h.advance(time.Second)
	h.wantNoErr("upgrade of a locked execution", h.db.UpgradeExecutionComponent(h.ctx, x, digest1, digest2, manual(false)))
	ev := h.wantLastEvent(x, &core.ComponentUpgradeFinished{ComponentDigest: digest2, DeploymentID: depL,
		Outcome: core.ComponentUpgradeOutcome{Success: true, Reason: manual(false)}})
	if !ev.CreatedAt.Equal(now) {
		h.t.Fatalf("upgrade created_at %s, want the store clock's %s", ev.CreatedAt, now)
	}
	h.wantState(x, psLocked(by, t0.Add(time.Minute)))
	_, err = h.appendAt(x, 2, jsc(mustJS("o:")), now)
	h.wantVersionConflict("the running worker is fenced", err, 3, 2)
	h.mustAppend(x, 3, finished(ok0))
	h.wantErr("wrong old digest on a finished execution", h.db.UpgradeExecutionComponent(h.ctx, x, digest1, digest3, manual(true)), core.ErrNotFound)
	h.wantErr("right old digest on a finished execution", h.db.UpgradeExecutionComponent(h.ctx, x, digest2, digest3, manual(true)), core.ErrAlreadyFinished)
}

func e26(h *harness) {
	js := mustJS("o:")
	others := []core.ExecutionRequest{
		jsc(js), persist(1), creq(js, newExecID().NextLevel(js)),
		hist(&core.Schedule{ExecutionID: newExecID(), ScheduleAt: schedNow}),
		hist(&core.Stub{TargetExecutionID: core.ExecutionIdDerived{ExecutionId: newExecID().NextLevel(js)}, RetvalHash: ok0.StubRetValHash()}),
		hist(&core.JoinNextTry{JoinSetID: js, Outcome: core.JoinNextTryPending}),
		hist(&core.JoinNextTooMany{JoinSetID: js}),
		dreq(js, core.NewDelayId(newExecID(), js, 1), t0.Add(time.Hour), schedNow),
	}
	for _, c := range []struct {
		name  string
		setup core.ExecutionRequest
		state core.StateKind
		lc    core.Lifecycle
	}{
		{"PendingAt", nil, core.StatePendingAt, core.LifecycleActive},
		{"Paused", &core.Paused{}, core.StatePendingAt, core.LifecyclePaused},
		{"Cancelling", &core.CancellationRequested{}, core.StatePendingAt, core.LifecycleCancelling},
	} {
		x := h.create()
		v := core.Version(1)
		if c.setup != nil {
			v = h.mustAppend(x, v, c.setup)
		}
		for _, ev := range others {
			if d, ok := ev.(*core.HistoryEventRequest).Event.(*core.JoinSetRequestEvent); ok {
				if dr, ok := d.Request.(*core.DelayRequest); ok {
					dr.DelayID = core.NewDelayId(x, js, uint64(v))
				}
			}
			v = h.mustAppend(x, v, ev)
		}
		h.wantStatus(x, c.state, c.lc)
		v = h.mustAppend(x, v, &core.TemporarilyTimedOut{BackoffExpiresAt: t0})
		h.mustAppend(x, v, finished(ok0))
	}
}

func e27(h *harness) {
	p := h.create()
	js1 := mustJS("g:1")
	c := p.NextLevel(js1)
	h.createWithID(c, withParent(p, js1))
	js2 := mustJS("o:a-b/c")
	g := c.NextLevel(js2).Incremented()
	h.createWithID(g, withParent(c, js2))
	if parent, js, ok := g.SplitToParts(); !ok || parent != c || js != js2 {
		h.t.Fatalf("split_to_parts(%s) = %s %s", g, parent, js)
	}
	_, err := h.lockOne(g, 1, newExr(), newRun(), h.now().Add(time.Second))
	h.wantNoErr("lock grandchild", err)
	at := h.advance(time.Second)
	h.sweep(at)
	rv := core.RetFailure(core.FailureTimedOut, nil, nil)
	h.wantLastEvent(g, finished(rv))
	cl := h.get(c)
	if len(cl.Responses) != 1 {
		h.t.Fatalf("the grandchild's parent %s has %d responses, want 1", c, len(cl.Responses))
	}
	h.wantJSON("response to the derived parent", cl.Responses[0].Event, core.JoinSetResponseEventOuter{CreatedAt: at, Event: childResp(js2, g, 2, rv)})
	if n := len(h.get(p).Responses); n != 0 {
		h.t.Fatalf("the top-level execution got %d responses, want 0", n)
	}
	d := core.NewDelayId(c, js2, 3)
	out, err := core.CancelDelay(h.ctx, h.db, d, h.now())
	h.wantNoErr("cancel_delay of a derived owner's delay", err)
	if out != core.DelayCancelled {
		h.t.Fatalf("cancel_delay = %d", out)
	}
	h.wantJSON("delay response of the derived owner", h.get(c).Responses[1].Event.Event, delayResp(js2, d, false))
}

func e28(h *harness) {
	ffqns := []core.FunctionFqn{ffqnF}
	// Check first: an execution scheduled in the future is pending at that time.
	h.create(withSched(t0.Add(time.Hour)))
	ctx, cancel := context.WithTimeout(h.ctx, generous)
	h.db.WaitForPendingByFFQN(ctx, t0.Add(time.Hour), ffqns, nil)
	if ctx.Err() != nil {
		h.t.Fatalf("wait_for_pending_by_ffqn(t0+1h) waited although an execution is due then")
	}
	cancel()
	// An unblocking response wakes a waiter.
	js := mustJS("o:")
	x := h.create(withFFQN(mustFFQN("ns:pkg/ifc.other")))
	_, err := h.lockOne(x, 1, newExr(), newRun(), h.now().Add(time.Hour))
	h.wantNoErr("lock", err)
	h.mustAppend(x, 2, jsc(js))
	h.mustAppend(x, 3, jnFor(js, t0, nil))
	ctx, cancel = context.WithTimeout(h.ctx, generous)
	defer cancel()
	done := make(chan struct{})
	go func() {
		h.db.WaitForPendingByFFQN(ctx, t0, []core.FunctionFqn{mustFFQN("ns:pkg/ifc.other")}, nil)
		close(done)
	}()
	h.mustRespond(x, delayResp(js, core.NewDelayId(x, js, 1), true))
	<-done
	if ctx.Err() != nil {
		h.t.Fatalf("waiter not woken by an unblocking response")
	}
}
