package storetest

import (
	"fmt"
	"reflect"
	"sort"
	"time"

	"github.com/stela-dev/stela/core"
)

// Areas 6–7: delays, timers, retries and timeouts (executor and watcher played by the test).
func timerScenarios() []contractTest {
	return []contractTest{
		{"T036_GetExpiredLock", t036},
		{"T037_GetExpiredDelay", t037},
		{"T038_ExpiredLockOfExecutionThatMadeProgress", t038},
		{"T040_ActivityTrapTriggersRetry", t040},
		{"T041_ActivityTrapNotRetriedWithoutRetries", t041},
		{"T042_HangingLockIsCleanedAndRetried", t042},
	}
}

// expiredTimers returns get_expired_timers(at) in a canonical order (delays
// by delay id, then locks by execution id) so results compare exactly.
func (h *harness) expiredTimers(at core.Timestamp) []core.ExpiredTimer {
	h.t.Helper()
	got, err := h.db.GetExpiredTimers(h.ctx, at)
	h.wantNoErr("get_expired_timers", err)
	sortTimers(got)
	return got
}

func sortTimers(ts []core.ExpiredTimer) {
	key := func(t core.ExpiredTimer) string {
		if t.Delay != nil {
			return "0" + t.Delay.DelayID.String()
		}
		return "1" + t.Lock.ExecutionID.String()
	}
	sort.SliceStable(ts, func(i, j int) bool { return key(ts[i]) < key(ts[j]) })
}

func timersString(ts []core.ExpiredTimer) string {
	var s string
	for _, t := range ts {
		if t.Delay != nil {
			s += fmt.Sprintf("Delay%+v ", *t.Delay)
		} else if t.Lock != nil {
			l := *t.Lock
			mr := "None"
			if l.MaxRetries != nil {
				mr = fmt.Sprint(*l.MaxRetries)
			}
			s += fmt.Sprintf("Lock{%s locked_at %d next %d intermittent %d max_retries %s backoff %+v by %s/%s} ",
				l.ExecutionID, l.LockedAtVersion, l.NextVersion, l.IntermittentEventCount, mr, l.RetryExpBackoff, l.LockedBy.ExecutorID, l.LockedBy.RunID)
		} else {
			s += "<empty timer> "
		}
	}
	return "[" + s + "]"
}

func (h *harness) wantTimers(at core.Timestamp, want []core.ExpiredTimer) {
	h.t.Helper()
	got := h.expiredTimers(at)
	sortTimers(want)
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		h.t.Fatalf("get_expired_timers(%s):\n got %s\nwant %s", at, timersString(got), timersString(want))
	}
}

func expiredLock(id core.ExecutionId, lockedAt, next core.Version, intermittent uint32, maxRetries *uint32, backoff time.Duration, by core.LockedBy, expires core.Timestamp) core.ExpiredTimer {
	return core.ExpiredTimer{Lock: &core.ExpiredLock{ExecutionID: id, LockedAtVersion: lockedAt, NextVersion: next,
		IntermittentEventCount: intermittent, MaxRetries: maxRetries, RetryExpBackoff: core.DurationOf(backoff), LockedBy: by,
		LockExpiresAt: expires}}
}

func u32p(v uint32) *uint32 { return &v }

func t036(h *harness) {
	x := h.create()
	by := lockedBy(newExr(), newRun())
	h.mustLock(by.ExecutorID, by.RunID, t0.Add(100*time.Millisecond))
	h.wantTimers(t0, nil)
	at := h.advance(100 * time.Millisecond)
	h.wantTimers(at, []core.ExpiredTimer{expiredLock(x, 1, 2, 0, u32p(0), 0, by, t0.Add(100*time.Millisecond))})
}

func t037(h *harness) {
	x := h.create()
	h.lockAny(t0.Add(200 * time.Millisecond))
	js := mustJS("o:")
	h.mustAppend(x, 2, jsc(js))
	d := core.NewDelayId(x, js, 1)
	h.mustAppend(x, 3, dreq(js, d, t0.Add(100*time.Millisecond), schedIn(100*time.Millisecond)))
	h.wantTimers(t0, nil)
	h.wantTimers(t0.Add(100*time.Millisecond), []core.ExpiredTimer{{Delay: &core.ExpiredDelay{ExecutionID: x, JoinSetID: js, DelayID: d,
		ExpiresAt: t0.Add(100 * time.Millisecond)}}})
}

func t038(h *harness) {
	h.forEachLockStrategy(func(h *harness, ls lockStrategy) {
		x := h.create()
		by := lockedBy(newExr(), newRun())
		h.mustLockWith(ls, h.lockReq(by.ExecutorID, by.RunID, t0.Add(500*time.Millisecond)))
		h.mustAppend(x, 2, jsc(mustJS("o:")))
		h.wantTimers(t0, nil)
		h.wantTimers(t0.Add(500*time.Millisecond), []core.ExpiredTimer{expiredLock(x, 1, 3, 0, u32p(0), 0, by, t0.Add(500*time.Millisecond))})
	})
}

// trap plays the executor's reaction to an activity trap at version v: retry
// (TemporarilyFailed with the core.CanBeRetriedAfter backoff) or finish.
func (h *harness) trap(le core.LockedExecution, retry core.ComponentRetryConfig, reason, detail string) core.ExecutionRequest {
	h.t.Helper()
	var ev core.ExecutionRequest
	if d, ok := core.CanBeRetriedAfter(le.IntermittentEventCount+1, retry.MaxRetries, retry.RetryExpBackoff); ok {
		std, _ := d.Std()
		ev = &core.TemporarilyFailed{BackoffExpiresAt: h.now().Add(std), Reason: "activity trap: " + reason, Detail: strp(detail)}
	} else {
		ev = finished(core.RetFailure(core.FailureUncategorized, strp("activity trap: "+reason), strp(detail)))
	}
	h.mustAppend(le.ExecutionID, le.NextVersion, ev)
	return ev
}

// tick is one executor tick: lock up to one execution of F with retry config rc.
func (h *harness) tick(by core.LockedBy, expiry time.Duration, rc core.ComponentRetryConfig) []core.LockedExecution {
	h.t.Helper()
	req := h.lockReq(by.ExecutorID, by.RunID, h.now().Add(expiry))
	req.RetryConfig = rc
	got, err := h.db.LockPendingByFFQNs(h.ctx, req, []core.FunctionFqn{ffqnF})
	h.wantNoErr("executor tick", err)
	return got
}

func t040(h *harness) {
	x := h.create()
	rc := retryN(1, 100*time.Millisecond)
	exr := newExr()
	locked := h.tick(lockedBy(exr, newRun()), time.Second, rc)
	if len(locked) != 1 {
		h.t.Fatalf("first tick locked %d, want 1", len(locked))
	}
	h.trap(locked[0], rc, "error reason", "error detail")
	l := h.get(x)
	if len(l.Events) != 3 {
		h.t.Fatalf("%d events, want 3", len(l.Events))
	}
	h.wantJSON("v2", l.Events[2], core.ExecutionEvent{CreatedAt: t0, Version: 2, Event: &core.TemporarilyFailed{
		BackoffExpiresAt: t0.Add(100 * time.Millisecond), Reason: "activity trap: error reason", Detail: strp("error detail")}})
	if again := h.tick(lockedBy(exr, newRun()), time.Second, rc); len(again) != 0 {
		h.t.Fatalf("second tick at t0 locked %d, want 0 (backoff)", len(again))
	}
	at := h.advance(100 * time.Millisecond)
	locked = h.tick(lockedBy(exr, newRun()), time.Second, rc)
	if len(locked) != 1 || locked[0].NextVersion != 4 || locked[0].IntermittentEventCount != 1 {
		h.t.Fatalf("tick after backoff: %d locked (next %v), want 1 with next_version 4 and intermittent 1", len(locked), locked)
	}
	h.mustAppend(x, 4, finished(ok0))
	l = h.get(x)
	if l.Events[3].Event.Variant() != "locked" || !l.Events[3].CreatedAt.Equal(at) {
		h.t.Fatalf("v3 = %s at %s, want locked at %s", l.Events[3].Event.Variant(), l.Events[3].CreatedAt, at)
	}
	h.wantJSON("v4", l.Events[4], core.ExecutionEvent{CreatedAt: at, Version: 4, Event: finished(ok0)})
}

func t041(h *harness) {
	x := h.create()
	locked := h.tick(lockedBy(newExr(), newRun()), time.Second, retry0())
	if len(locked) != 1 {
		h.t.Fatalf("tick locked %d, want 1", len(locked))
	}
	h.trap(locked[0], retry0(), "error reason", "error detail")
	l := h.get(x)
	if len(l.Events) != 3 {
		h.t.Fatalf("%d events, want 3", len(l.Events))
	}
	h.wantJSON("v2", l.Events[2], core.ExecutionEvent{CreatedAt: t0, Version: 2,
		Event: finished(core.RetFailure(core.FailureUncategorized, strp("activity trap: error reason"), strp("error detail")))})
}

func t042(h *harness) {
	x := h.create()
	rc := retryN(1, 300*time.Millisecond)
	exr := newExr()
	run1 := newRun()
	first := h.tick(lockedBy(exr, run1), 100*time.Millisecond, rc)
	if len(first) != 1 {
		h.t.Fatalf("tick at t0 locked %d, want 1", len(first))
	}
	// The worker hangs. At t0+100ms the lock has expired.
	at := h.advance(100 * time.Millisecond)
	if got := h.tick(lockedBy(exr, newRun()), 100*time.Millisecond, rc); len(got) != 0 {
		h.t.Fatalf("tick at t0+100ms locked %d, want 0", len(got))
	}
	if locks, _ := h.sweep(at); locks != 1 {
		h.t.Fatalf("watcher handled %d expired locks, want 1", locks)
	}
	l := h.get(x)
	h.wantJSON("v2", l.Events[2], core.ExecutionEvent{CreatedAt: at, Version: 2,
		Event: &core.TemporarilyTimedOut{BackoffExpiresAt: t0.Add(400 * time.Millisecond)}})
	by1 := lockedBy(exr, run1)
	h.wantState(x, psPendingAt(t0.Add(400*time.Millisecond), &by1))
	// The hanging worker's late write is fenced.
	_, err := h.appendAt(x, 2, finished(ok0), at)
	h.wantVersionConflict("late worker append", err, 3, 2)

	h.clock.Set(t0.Add(400 * time.Millisecond))
	if got := h.tick(lockedBy(exr, newRun()), 100*time.Millisecond, rc); len(got) != 1 {
		h.t.Fatalf("tick at t0+400ms locked %d, want 1", len(got))
	}
	at = h.advance(100 * time.Millisecond)
	if got := h.tick(lockedBy(exr, newRun()), 100*time.Millisecond, rc); len(got) != 0 {
		h.t.Fatalf("tick at t0+500ms locked %d, want 0", len(got))
	}
	if locks, _ := h.sweep(at); locks != 1 {
		h.t.Fatalf("watcher handled %d expired locks, want 1", locks)
	}
	// Retry budget exhausted: permanently timed out.
	h.wantLastEvent(x, finished(core.RetFailure(core.FailureTimedOut, nil, nil)))
	_, err = h.appendAt(x, 4, finished(ok0), at)
	h.wantErr("late worker append after finish", err, core.ErrAlreadyFinished)
}
