package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
)

// scenarioTests lists every ported scenario of docs/spec/scenarios.md, in catalogue order.
func scenarioTests() []contractTest {
	var all []contractTest
	all = append(all, basicScenarios()...)
	all = append(all, joinSetScenarios()...)
	all = append(all, timerScenarios()...)
	all = append(all, pauseCancelScenarios()...)
	all = append(all, stubUpgradeScenarios()...)
	all = append(all, listingScenarios()...)
	all = append(all, gapScenarios()...)
	all = append(all, eagerScenarios()...)
	return all
}

// Areas 1–3: create / lock / append basics, conflicts, locking.
func basicScenarios() []contractTest {
	return []contractTest{
		{"T004_LockPendingWhileNothingIsPendingIsNoop", t004},
		{"T005_LockPendingSortsByScheduledAt", t005},
		{"T006_AppendAfterFinishIsAlreadyFinished", t006},
		{"T008_GetExecutionEventKeepsJSONOrder", t008},
		{"T009_ListExecutionEventsKeepsJSONOrder", t009},
		{"T010_DiffProptestAgreesWithModel", t010},
		{"T012_SimpleLifecycleTickBased", t012},
		{"T013_SimpleLifecycleTaskBased", t013},
		{"T014_CreatingExecutionTwiceIsConflict", t014},
		{"T016_SameDelayResponseTwiceIsConflict", t016},
		{"T017_SameChildResponseTwiceIsConflict", t017},
		{"T018_LockingInUnlockBackoffIsNotPossible", t018},
		{"T020_LockExtendedWithSameExecutorWorks", t020},
		{"T021_LockExtendedWithAnotherExecutorFails", t021},
		{"T022_ExpiredLockIsNotPending", t022},
	}
}

func t004(h *harness) {
	got, err := h.db.LockPendingByFFQNs(h.ctx, h.lockReq(newExr(), newRun(), t0.Add(500*time.Millisecond)), []core.FunctionFqn{ffqnF})
	h.wantNoErr("lock_pending_by_ffqns on an empty store", err)
	if len(got) != 0 {
		h.t.Fatalf("locked %d executions, want 0", len(got))
	}
}

func t005(h *harness) {
	h.forEachLockStrategy(func(h *harness, ls lockStrategy) {
		older := newExecID()
		h.mustCreateReq(h.createReq(older, func(r *core.CreateRequest) { r.CreatedAt = t0; r.ScheduledAt = t0 }))
		h.advance(time.Nanosecond)
		newer := newExecID()
		h.mustCreateReq(h.createReq(newer, func(r *core.CreateRequest) { r.CreatedAt = t0; r.ScheduledAt = h.now() }))
		h.advance(999 * time.Nanosecond)
		newest := newExecID()
		h.mustCreateReq(h.createReq(newest, func(r *core.CreateRequest) { r.CreatedAt = t0; r.ScheduledAt = h.now() }))

		req := h.lockReq(newExr(), newRun(), h.now().Add(time.Second))
		req.BatchSize = 3
		got, err := ls.lock(h, req)
		h.wantNoErr("lock", err)
		want := []core.ExecutionId{older, newer, newest}
		if len(got) != len(want) {
			h.t.Fatalf("locked %d executions, want 3", len(got))
		}
		for i := range want {
			if got[i].ExecutionID != want[i] {
				h.t.Fatalf("locked[%d] = %s, want %s (order by scheduled_at)", i, got[i].ExecutionID, want[i])
			}
		}
	})
}

func t006(h *harness) {
	h.forEachLockStrategy(func(h *harness, ls lockStrategy) {
		x := h.create()
		le := h.mustLockWith(ls, h.lockReq(newExr(), newRun(), t0.Add(500*time.Millisecond)))
		if le.ExecutionID != x || le.NextVersion != 2 {
			h.t.Fatalf("locked %s next_version %d, want %s next_version 2", le.ExecutionID, le.NextVersion, x)
		}
		if got := mustJSON(le.Params); got != "[]" {
			h.t.Fatalf("locked params %s, want []", got)
		}
		if le.FFQN != ffqnF {
			h.t.Fatalf("locked ffqn %s, want %s", le.FFQN, ffqnF)
		}
		h.mustAppend(x, 2, finished(ok0))
		_, err := h.appendAt(x, 2, finished(ok0), h.now())
		h.wantErr("second Finished", err, core.ErrAlreadyFinished)
	})
}

// recordRetval is the T008 value: a record whose type and value keys are not alphabetical.
func recordRetval() core.ReturnValue {
	return core.RetOk(&core.WastValWithType{
		Type:  "record { login: string, repo: string, description: option<string> }",
		Value: json.RawMessage(`{"login":"login","repo":"repo","description":"description"}`),
	})
}

func setupT008(h *harness) (core.ExecutionId, core.ExecutionRequest) {
	h.t.Helper()
	x := h.create()
	le := h.lockAny(t0.Add(500 * time.Millisecond))
	if le.NextVersion != 2 {
		h.t.Fatalf("next_version %d, want 2", le.NextVersion)
	}
	ev := finished(recordRetval())
	if v := h.mustAppend(x, 2, ev); v != 2 {
		h.t.Fatalf("append Finished returned %d, want 2", v)
	}
	return x, ev
}

func t008(h *harness) {
	x, ev := setupT008(h)
	got, err := h.db.GetExecutionEvent(h.ctx, x, 2)
	h.wantNoErr("get_execution_event", err)
	h.wantJSON("event at v2", got, core.ExecutionEvent{CreatedAt: h.now(), Event: ev, Version: 2})
	if s := mustJSON(got.Event); s != `{"finished":{"retval":{"ok":{"type":"record { login: string, repo: string, description: option<string> }","value":{"login":"login","repo":"repo","description":"description"}}},"http_client_traces":null}}` {
		h.t.Fatalf("stored JSON reordered: %s", s)
	}
}

func t009(h *harness) {
	x, ev := setupT008(h)
	got, err := h.db.ListExecutionEvents(h.ctx, x, core.Pagination[core.Version]{Direction: core.NewerThan, Length: 1, Cursor: 2, IncludingCursor: true}, false)
	h.wantNoErr("list_execution_events", err)
	if got.MaxVersion != 2 || len(got.Events) != 1 {
		h.t.Fatalf("got %d events, max_version %d; want 1 event, max_version 2", len(got.Events), got.MaxVersion)
	}
	h.wantJSON("listed event", got.Events[0], core.ExecutionEvent{CreatedAt: h.now(), Event: ev, Version: 2})
}

// t012 plays one executor tick: lock pending, the worker returns Ok at v2.
func t012(h *harness) {
	h.forEachLockStrategy(func(h *harness, ls lockStrategy) {
		x := h.create()
		exr, run := newExr(), newRun()
		le := h.mustLockWith(ls, h.lockReq(exr, run, h.now().Add(time.Second)))
		h.mustAppend(x, le.NextVersion, finished(ok0))
		checkSimpleLifecycle(h, x)
	})
}

// t013 is t012 with a task-based executor: it first waits for pending
// executions (already pending, so the wait returns at once), then locks.
func t013(h *harness) {
	h.forEachLockStrategy(func(h *harness, ls lockStrategy) {
		x := h.create()
		ctx, cancel := contextWithTimeout(h.ctx, generous)
		defer cancel()
		if ls.name == "ByFFQNs" {
			h.db.WaitForPendingByFFQN(ctx, h.now(), []core.FunctionFqn{ffqnF}, nil)
		} else {
			h.db.WaitForPendingByComponentDigest(ctx, h.now(), compACT.ComponentDigest)
		}
		if ctx.Err() != nil {
			h.t.Fatalf("wait_for_pending did not return although an execution is pending")
		}
		le := h.mustLockWith(ls, h.lockReq(newExr(), newRun(), h.now().Add(time.Second)))
		h.mustAppend(x, le.NextVersion, finished(ok0))
		checkSimpleLifecycle(h, x)
	})
}

func checkSimpleLifecycle(h *harness, x core.ExecutionId) {
	h.t.Helper()
	l := h.get(x)
	if len(l.Events) != 3 {
		h.t.Fatalf("%d events %v, want Created, Locked, Finished", len(l.Events), variantsOf(l.Events))
	}
	for i, v := range []string{"created", "locked", "finished"} {
		e := l.Events[i]
		if e.Event.Variant() != v || e.Version != core.Version(i) || e.BacktraceID != nil {
			h.t.Fatalf("event %d = %s v%d backtrace %v, want %s v%d backtrace nil", i, e.Event.Variant(), e.Version, e.BacktraceID, v, i)
		}
	}
	if !l.Events[0].CreatedAt.Equal(t0) || l.Events[1].CreatedAt.Before(t0) || l.Events[2].CreatedAt.Before(l.Events[1].CreatedAt) {
		h.t.Fatalf("created_at not monotone: %v", []core.Timestamp{l.Events[0].CreatedAt, l.Events[1].CreatedAt, l.Events[2].CreatedAt})
	}
	h.wantJSON("v2", l.Events[2].Event, &core.Finished{Retval: ok0})
	if l.NextVersion != 2 {
		h.t.Fatalf("next_version %d, want 2", l.NextVersion)
	}
}

func t014(h *harness) {
	got, err := h.db.LockPendingByFFQNs(h.ctx, h.lockReq(newExr(), newRun(), t0.Add(time.Second)), []core.FunctionFqn{ffqnF})
	h.wantNoErr("lock on empty store", err)
	if len(got) != 0 {
		h.t.Fatalf("locked %d, want 0", len(got))
	}
	x := newExecID()
	req := h.createReq(x)
	h.mustCreateReq(req)
	_, err = h.db.Create(h.ctx, req)
	h.wantErr("second create", err, core.ErrConflict)
}

func t016(h *harness) {
	x := h.create()
	h.lockAny(t0.Add(100 * time.Millisecond))
	js := mustJS("o:")
	h.mustAppend(x, 2, jsc(js))
	d := core.NewDelayId(x, js, 1)
	h.mustAppend(x, 3, dreq(js, d, t0, schedNow))
	h.mustRespond(x, delayResp(js, d, true))
	h.wantErr("second delay response", h.respond(x, delayResp(js, d, true)), core.ErrConflict)
}

func t017(h *harness) {
	x := h.create()
	h.lockAny(t0.Add(100 * time.Millisecond))
	js := mustJS("o:")
	h.mustAppend(x, 2, jsc(js))
	c := x.NextLevel(js)
	h.mustAppend(x, 3, creq(js, c))
	h.mustRespond(x, childResp(js, c, 1, ok0))
	h.wantErr("second child response", h.respond(x, childResp(js, c, 1, ok0)), core.ErrConflict)
}

func t018(h *harness) {
	h.forEachLockStrategy(func(h *harness, ls lockStrategy) {
		x := h.create()
		exr := newExr()
		h.mustLockWith(ls, h.lockReq(exr, newRun(), t0.Add(500*time.Millisecond)))
		h.mustAppend(x, 2, &core.Unlocked{UnlockedAt: t0.Add(500 * time.Millisecond), Reason: "reason"})
		h.advance(400 * time.Millisecond)
		got, err := ls.lock(h, h.lockReq(exr, newRun(), h.now().Add(time.Second)))
		h.wantNoErr("lock at t0+400ms", err)
		if len(got) != 0 {
			h.t.Fatalf("locked %d at t0+400ms, want 0", len(got))
		}
		h.advance(100 * time.Millisecond)
		got, err = ls.lock(h, h.lockReq(exr, newRun(), h.now().Add(time.Second)))
		h.wantNoErr("lock at t0+500ms", err)
		if len(got) != 1 {
			h.t.Fatalf("locked %d at exactly t0+500ms, want 1 (inclusive)", len(got))
		}
	})
}

func t020(h *harness) {
	x := h.create()
	exr, run := newExr(), newRun()
	if le := h.mustLock(exr, run, t0.Add(500*time.Millisecond)); le.NextVersion != 2 {
		h.t.Fatalf("next_version %d, want 2", le.NextVersion)
	}
	h.advance(500 * time.Millisecond)
	le, err := h.lockOne(x, 2, exr, run, h.now().Add(500*time.Millisecond))
	h.wantNoErr("lock_one extension", err)
	if le.NextVersion != 3 {
		h.t.Fatalf("extension next_version %d, want 3", le.NextVersion)
	}
	h.wantState(x, psLocked(lockedBy(exr, run), h.now().Add(500*time.Millisecond)))
}

func t021(h *harness) {
	for _, c := range []struct {
		name             string
		sameExr, sameRun bool
	}{
		{"DifferentExecutorSameRun", false, true},
		{"SameExecutorDifferentRun", true, false},
		{"BothDifferent", false, false},
	} {
		h.t.Run(c.name, func(t *testing.T) {
			h := h.with(t)
			x := h.create()
			exr, run := newExr(), newRun()
			h.mustLock(exr, run, h.now().Add(500*time.Millisecond))
			h.advance(500 * time.Millisecond)
			exr2, run2 := exr, run
			if !c.sameExr {
				exr2 = newExr()
			}
			if !c.sameRun {
				run2 = newRun()
			}
			_, err := h.lockOne(x, 2, exr2, run2, h.now().Add(500*time.Millisecond))
			h.wantIllegal("lock_one by another holder", err, "cannot lock, already locked")
		})
	}
}

func t022(h *harness) {
	h.create()
	exr := newExr()
	h.mustLock(exr, newRun(), t0.Add(500*time.Millisecond))
	for _, at := range []time.Duration{0, 500 * time.Millisecond, 1000 * time.Millisecond} {
		h.clock.Set(t0.Add(at))
		got, err := h.db.LockPendingByFFQNs(h.ctx, h.lockReq(exr, newRun(), h.now().Add(time.Second)), []core.FunctionFqn{ffqnF})
		h.wantNoErr("lock", err)
		if len(got) != 0 {
			h.t.Fatalf("at t0+%v locked %d, want 0 (an expired lock is not pending)", at, len(got))
		}
	}
}
