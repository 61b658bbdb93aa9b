package storetest

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/stela-dev/stela/core"
)

// The storage behaviour docs/spec/scenarios.md lists as untested by Obelisk
// (§19 there).
func gapScenarios() []contractTest {
	return []contractTest{
		{"Gap02_AppendAtStaleVersionIsVersionConflict", gapVersionConflict},
		{"Gap02_CancelWithRetriesRetriesVersionConflicts", gapCancelWithRetries},
		{"Gap03_LockPendingRejectsAnInvalidExpiryUpFront", gapLockExpiry},
		{"Gap06_PauseAndUnpauseDelay", gapPauseDelay},
		{"Gap06_PausedDelayRequestCreatesPausedTimer", gapPausedDelayRequest},
		{"Gap06_AppendBatchWithDelayResponse", gapBatchWithDelayResponse},
		{"Gap06_AppendDelayResponseReportsStoredOutcome", gapDelayResponseOutcomes},
		{"Gap06_FireDelayOnlyWhenDueAtTheStoresClock", gapFireDelay},
		{"Gap06_AppendBatchFiringDelay", gapAppendBatchFiringDelay},
		{"Gap07_RespondToParentTellsTheResponsesCursor", gapRespondCursor},
		{"Gap04_SubscribeToNextResponsesWaitsAndTimesOut", gapSubscribe},
		{"Gap04_WaitForFinishedResult", gapWaitFinished},
		{"Gap04_ReadyDataWinsOverAnExpiredDeadline", gapExpiredDeadline},
		{"Gap04_WaitForPending", gapWaitPending},
		{"Gap12_ListExecutionEventsResponses", gapListEventsResponses},
		{"Gap12_ReadsOfMissingThingsAreNotFound", gapNotFound},
		{"Gap12_ListExecutionsPagesByCreatedAt", gapListByCreatedAt},
		{"Gap12_ListExecutionsPagesByExecutionID", gapListByID},
		{"Gap12_ListExecutionsFilters", gapListFilters},
		{"Gap12_ListExecutionsStateFilters", gapStateFilters},
		{"Gap13_ListLogsFiltersAndPages", gapLogs},
	}
}

func gapVersionConflict(h *harness) {
	x := h.create()
	_, err := h.appendAt(x, 0, jsc(mustJS("o:")), h.now())
	h.wantVersionConflict("append at 0", err, 1, 0)
	_, err = h.appendAt(x, 5, jsc(mustJS("o:")), h.now())
	h.wantVersionConflict("append at 5", err, 1, 5)
	_, err = h.db.AppendBatch(h.ctx, h.now(), []core.AppendRequest{{CreatedAt: h.now(), Event: jsc(mustJS("o:"))}}, x, 2)
	h.wantVersionConflict("append_batch at 2", err, 1, 2)
	_, err = h.lockOne(x, 2, newExr(), newRun(), h.now().Add(time.Second))
	h.wantVersionConflict("lock_one at 2", err, 1, 2)
	h.wantNextVersion(x, 1)
}

// gapLockExpiry: a lock whose lock_expires_at is not after its created_at is
// "invalid expiry date" on every lock method, checked before candidates are
// read (docs/spec/semantics.md §3.5, §4.2.1): a worker with a skewed clock
// gets the error instead of "nothing pending" while executions stay pending.
func gapLockExpiry(h *harness) {
	x := h.create()
	for _, exp := range []core.Timestamp{h.now(), h.now().Add(-time.Second)} {
		req := h.lockReq(newExr(), newRun(), exp)
		ffqns := []core.FunctionFqn{ffqnF}
		for _, m := range []struct {
			name string
			lock func() ([]core.LockedExecution, error)
		}{
			{"lock_pending_by_ffqns", func() ([]core.LockedExecution, error) { return h.db.LockPendingByFFQNs(h.ctx, req, ffqns) }},
			{"lock_pending_by_ffqns_auto", func() ([]core.LockedExecution, error) { return h.db.LockPendingByFFQNsAuto(h.ctx, req, ffqns) }},
			{"lock_pending_by_component_digest", func() ([]core.LockedExecution, error) { return h.db.LockPendingByComponentDigest(h.ctx, req) }},
			{"lock_pending_by_ffqns with nothing pending", func() ([]core.LockedExecution, error) {
				return h.db.LockPendingByFFQNs(h.ctx, req, []core.FunctionFqn{ffqnChild})
			}},
		} {
			got, err := m.lock()
			h.wantValidation(fmt.Sprintf("%s with lock_expires_at %s, created_at %s", m.name, exp, req.CreatedAt), err, "invalid expiry date")
			if len(got) != 0 {
				h.t.Fatalf("%s returned %d locked executions with an invalid expiry", m.name, len(got))
			}
		}
	}
	h.wantStatus(x, core.StatePendingAt, core.LifecycleActive)
	h.wantNextVersion(x, 1)
	h.lockAny(h.now().Add(time.Second))
}

// conflictInjector fails the first n cancellation calls with a version conflict.
type conflictInjector struct {
	core.DbExecutor
	n     int
	calls int
}

func (c *conflictInjector) CancelWorkflow(ctx context.Context, id core.ExecutionId, at core.Timestamp) (core.CancelOutcome, error) {
	c.calls++
	if c.n > 0 {
		c.n--
		return 0, &core.VersionConflictError{Expected: 2, Requested: 1}
	}
	return c.DbExecutor.CancelWorkflow(ctx, id, at)
}

func (c *conflictInjector) AppendActivityCancellationRequested(ctx context.Context, id core.ExecutionId, at core.Timestamp) (core.CancelOutcome, error) {
	c.calls++
	if c.n > 0 {
		c.n--
		return 0, &core.VersionConflictError{Expected: 2, Requested: 1}
	}
	return c.DbExecutor.AppendActivityCancellationRequested(ctx, id, at)
}

func gapCancelWithRetries(h *harness) {
	for _, wf := range []bool{true, false} {
		cancel := core.CancelActivityWithRetries
		mods := []func(*core.CreateRequest){}
		if wf {
			cancel = core.CancelWorkflowWithRetries
			mods = append(mods, withFFQN(ffqnFC), withComp(compWF))
		}
		x := h.create(mods...)
		inj := &conflictInjector{DbExecutor: h.db, n: 6}
		_, err := cancel(h.ctx, inj, x, h.now())
		h.wantVersionConflict("six conflicts", err, 2, 1)
		if inj.calls != 6 {
			h.t.Fatalf("%d calls, want 6 (1 + 5 retries)", inj.calls)
		}
		h.wantNextVersion(x, 1)
		inj = &conflictInjector{DbExecutor: h.db, n: 5}
		out, err := cancel(h.ctx, inj, x, h.now())
		h.wantCancelOutcome("five conflicts then success", out, err, core.CancelRequested)
		h.wantStatus(x, core.StatePendingAt, core.LifecycleCancelling)
		// Real store calls also go through the helpers unchanged.
		out, err = cancel(h.ctx, h.db, x, h.now())
		want := core.CancelRequested
		if wf {
			want = core.CancelAlreadyCancelling
		}
		h.wantCancelOutcome("repeat through the store", out, err, want)
	}
}

// delayedExecution creates X locked until t0+1h with JSC(o:) and DREQ(o:, D, t0+100ms).
func delayedExecution(h *harness, paused bool) (core.ExecutionId, core.JoinSetId, core.DelayId) {
	h.t.Helper()
	x := h.create()
	h.lockAny(t0.Add(time.Hour))
	js := mustJS("o:")
	d := core.NewDelayId(x, js, 1)
	h.mustAppend(x, 2, jsc(js))
	h.mustAppend(x, 3, hist(&core.JoinSetRequestEvent{JoinSetID: js, Request: &core.DelayRequest{DelayID: d,
		ExpiresAt: t0.Add(100 * time.Millisecond), ScheduleAt: schedIn(100 * time.Millisecond), Paused: paused}}))
	return x, js, d
}

func gapPauseDelay(h *harness) {
	x, js, d := delayedExecution(h, false)
	due := []core.ExpiredTimer{{Delay: &core.ExpiredDelay{ExecutionID: x, JoinSetID: js, DelayID: d, ExpiresAt: t0.Add(100 * time.Millisecond)}}}
	at := t0.Add(200 * time.Millisecond)
	h.wantTimers(at, due)
	h.wantNoErr("pause_delay", h.db.PauseDelay(h.ctx, d))
	h.wantNoErr("pause_delay again (no-op)", h.db.PauseDelay(h.ctx, d))
	h.wantNextVersion(x, 4)
	h.wantTimers(at, nil)
	if _, delays := h.sweep(at); delays != 0 {
		h.t.Fatalf("sweep fired %d paused delays, want 0", delays)
	}
	if n := len(h.get(x).Responses); n != 0 {
		h.t.Fatalf("paused delay got %d responses", n)
	}
	h.wantNoErr("unpause_delay", h.db.UnpauseDelay(h.ctx, d))
	h.wantNoErr("unpause_delay again (no-op)", h.db.UnpauseDelay(h.ctx, d))
	h.wantNextVersion(x, 4)
	h.wantTimers(at, due)
	if _, delays := h.sweep(at); delays != 1 {
		h.t.Fatalf("sweep fired %d delays after unpause, want 1", delays)
	}
	l := h.get(x)
	if len(l.Responses) != 1 {
		h.t.Fatalf("%d responses, want 1", len(l.Responses))
	}
	h.wantJSON("fired delay", l.Responses[0].Event, core.JoinSetResponseEventOuter{CreatedAt: at, Event: delayResp(js, d, true)})
	h.wantErr("pause_delay after it fired", h.db.PauseDelay(h.ctx, d), core.ErrNotFound)
	h.wantErr("unpause_delay after it fired", h.db.UnpauseDelay(h.ctx, d), core.ErrNotFound)
	h.wantErr("pause_delay of an unknown delay", h.db.PauseDelay(h.ctx, core.NewDelayId(newExecID(), js, 1)), core.ErrNotFound)

	// A paused delay can still be cancelled.
	y, yjs, yd := delayedExecution(h, false)
	h.wantNoErr("pause_delay", h.db.PauseDelay(h.ctx, yd))
	out, err := core.CancelDelay(h.ctx, h.db, yd, h.now())
	h.wantNoErr("cancel_delay of a paused delay", err)
	if out != core.DelayCancelled {
		h.t.Fatalf("cancel_delay = %d, want cancelled", out)
	}
	h.wantJSON("cancelled delay", h.get(y).Responses[0].Event.Event, delayResp(yjs, yd, false))
	h.wantErr("pause_delay after cancel", h.db.PauseDelay(h.ctx, yd), core.ErrNotFound)
}

// gapFireDelay (core.DelayFirer: a worker awaiting a sleep fires its delay
// at the expiry): before the expiry at the store's clock, or paused, the
// call writes nothing (not_due) and the timer stays; when due it records
// the response the sweep would (created_at = the store's time), once — a
// second call, or a sweep after it, finds it answered; a cancelled delay
// is answered too; an unknown delay is ErrNotFound.
func gapFireDelay(h *harness) {
	f, ok := h.db.(core.DelayFirer)
	if !ok {
		h.t.Fatalf("%T does not implement core.DelayFirer", h.db)
	}
	fire := func(what string, d core.DelayId, want core.DelayFireOutcome) core.DelayFireAnswer {
		h.t.Helper()
		out, err := f.FireDelay(h.ctx, d)
		h.wantNoErr(what, err)
		if out.Outcome != want {
			h.t.Fatalf("%s: %s, want %s", what, out.Outcome, want)
		}
		if want != core.DelayFired && (out.Cursor != 0 || !out.FiredAt.IsZero()) {
			h.t.Fatalf("%s: %s with a response %+v", what, out.Outcome, out)
		}
		return out
	}
	x, js, d := delayedExecution(h, false) // expires at t0+100ms
	due := []core.ExpiredTimer{{Delay: &core.ExpiredDelay{ExecutionID: x, JoinSetID: js, DelayID: d, ExpiresAt: t0.Add(100 * time.Millisecond)}}}
	h.clock.Set(t0.Add(99 * time.Millisecond))
	fire("fire before the expiry", d, core.DelayFireNotDue)
	h.wantNextVersion(x, 4)
	if n := len(h.get(x).Responses); n != 0 {
		h.t.Fatalf("%d responses after an early fire, want 0", n)
	}
	at := h.advance(time.Millisecond + 50*time.Millisecond)
	h.wantNoErr("pause_delay", h.db.PauseDelay(h.ctx, d))
	fire("fire of a paused delay", d, core.DelayFireNotDue)
	h.wantNoErr("unpause_delay", h.db.UnpauseDelay(h.ctx, d))
	h.wantTimers(at, due)
	fired := fire("fire when due", d, core.DelayFired)
	l := h.get(x)
	if len(l.Responses) != 1 {
		h.t.Fatalf("%d responses, want 1", len(l.Responses))
	}
	// The answer tells the response it recorded (a worker then needs no
	// read of it): the store's time and the stored cursor.
	if fired.Cursor != l.Responses[0].Cursor || !fired.FiredAt.Equal(at) {
		h.t.Fatalf("fire answered cursor %d at %s, stored cursor %d at %s", fired.Cursor, fired.FiredAt, l.Responses[0].Cursor, at)
	}
	h.wantJSON("fired delay", l.Responses[0].Event, core.JoinSetResponseEventOuter{CreatedAt: at, Event: delayResp(js, d, true)})
	h.wantTimers(at, nil)
	fire("fire again", d, core.DelayFireAnswered)
	if _, delays := h.sweep(at.Add(time.Second)); delays != 0 {
		h.t.Fatalf("sweep fired %d delays after the fire, want 0", delays)
	}
	if n := len(h.get(x).Responses); n != 1 {
		h.t.Fatalf("%d responses after fire, fire and sweep, want 1", n)
	}

	y, yjs, yd := delayedExecution(h, false)
	if _, err := core.CancelDelay(h.ctx, h.db, yd, h.now()); err != nil {
		h.t.Fatalf("cancel_delay: %v", err)
	}
	fire("fire of a cancelled delay", yd, core.DelayFireAnswered)
	h.wantJSON("cancelled delay", h.get(y).Responses[0].Event.Event, delayResp(yjs, yd, false))

	_, err := f.FireDelay(h.ctx, core.NewDelayId(newExecID(), js, 1))
	h.wantErr("fire of an unknown delay", err, core.ErrNotFound)
}

// gapAppendBatchFiringDelay (core.DelayFireAppender: fire-and-continue, a
// run that awaited a sleep in memory goes on at the expiry, and its next
// write carries the fire): the fire is FireDelay's (the store's clock,
// unpaused) and the batch is appended in the same commit, or nothing is.
// Not due, or paused: not_due, nothing written. Due: the DelayFinished(Ok)
// response (the answer's time and cursor), which unblocks the JoinNext,
// and the batch. A refused batch (version conflict, illegal event) is the
// error and leaves the delay unfired. Fired already (by the call itself,
// FireDelay or the sweep's AppendDelayResponse): answered, the batch
// alone, as FireDelay then AppendBatch would leave it. Cancelled:
// cancelled, nothing written. Neither timer nor response: ErrNotFound; a
// delay of another execution, or a batch with a JoinNext of the delay's
// join set: a validation error.
func gapAppendBatchFiringDelay(h *harness) {
	f, ok := h.db.(core.DelayFireAppender)
	if !ok {
		h.t.Fatalf("%T does not implement core.DelayFireAppender", h.db)
	}
	// sleeping is delayedExecution (X locked until t0+1h, D expiring at
	// t0+100ms) with the JoinNext a run writes before it awaits the sleep
	// in memory: X is blocked on js until the lease's end, at version 5.
	sleeping := func() (core.ExecutionId, core.JoinSetId, core.DelayId) {
		h.t.Helper()
		x, js, d := delayedExecution(h, false)
		h.mustAppend(x, 4, jnFor(js, t0.Add(time.Hour), nil))
		h.wantStatus(x, core.StateBlockedByJoinSet, core.LifecycleActive)
		return x, js, d
	}
	// after is the batch the run writes after the sleep.
	after := func(v byte) []core.AppendRequest {
		return []core.AppendRequest{{CreatedAt: h.now(), Event: persist(v)}, {CreatedAt: h.now(), Event: persist(v + 1)}}
	}
	call := func(x core.ExecutionId, v core.Version, d core.DelayId, batch []core.AppendRequest) (core.FireAppendAnswer, error) {
		return f.AppendBatchFiringDelay(h.ctx, h.now(), batch, x, v, d)
	}
	fire := func(what string, x core.ExecutionId, v core.Version, d core.DelayId, batch []core.AppendRequest, want core.DelayFireOutcome) core.FireAppendAnswer {
		h.t.Helper()
		out, err := call(x, v, d, batch)
		h.wantNoErr(what, err)
		if out.Outcome != want {
			h.t.Fatalf("%s: %s, want %s", what, out.Outcome, want)
		}
		if want != core.DelayFired && (out.Cursor != 0 || !out.FiredAt.IsZero()) {
			h.t.Fatalf("%s: %s with a response %+v", what, out.Outcome, out)
		}
		appended := want == core.DelayFired || want == core.DelayFireAnswered
		if wantNext := v + core.Version(len(batch)); appended && out.NextVersion != wantNext {
			h.t.Fatalf("%s: next_version %d, want %d", what, out.NextVersion, wantNext)
		}
		if !appended && out.NextVersion != 0 {
			h.t.Fatalf("%s: %s with next_version %d", what, out.Outcome, out.NextVersion)
		}
		return out
	}
	// hasTimer reports whether d has an unpaused timer row.
	hasTimer := func(d core.DelayId) bool {
		h.t.Helper()
		for _, tm := range h.expiredTimers(t0.Add(30 * time.Minute)) { // the delays are due, the locks not
			if tm.Delay != nil && tm.Delay.DelayID == d {
				return true
			}
		}
		return false
	}
	// snapshot is everything stored about x (events, responses, version,
	// state) and whether its delay d has an unpaused timer row.
	snapshot := func(x core.ExecutionId, d core.DelayId) string {
		h.t.Helper()
		return fmt.Sprintf("%s timer=%v", jsonOrErr(h.get(x)), hasTimer(d))
	}
	unchanged := func(what string, x core.ExecutionId, d core.DelayId, before string) {
		h.t.Helper()
		if after := snapshot(x, d); after != before {
			h.t.Fatalf("%s wrote:\nbefore %s\nafter  %s", what, before, after)
		}
	}
	// wantBatchAt checks that x's events from version v on are batch.
	wantBatchAt := func(what string, x core.ExecutionId, v core.Version, batch []core.AppendRequest) {
		h.t.Helper()
		l := h.get(x)
		if l.NextVersion != v+core.Version(len(batch)) || len(l.Events) != int(l.NextVersion) {
			h.t.Fatalf("%s: next_version %d with %d events, want %d", what, l.NextVersion, len(l.Events), v+core.Version(len(batch)))
		}
		for i, r := range batch {
			h.wantJSON(fmt.Sprintf("%s: event %d", what, v+core.Version(i)), l.Events[v+core.Version(i)],
				core.ExecutionEvent{CreatedAt: r.CreatedAt, Event: r.Event, Version: v + core.Version(i)})
		}
	}
	wantResponses := func(what string, x core.ExecutionId, want ...core.JoinSetResponseEvent) []core.ResponseWithCursor {
		h.t.Helper()
		rs := h.get(x).Responses
		if len(rs) != len(want) {
			h.t.Fatalf("%s: %d responses, want %d", what, len(rs), len(want))
		}
		for i, w := range want {
			h.wantJSON(fmt.Sprintf("%s: response %d", what, i), rs[i].Event.Event, w)
		}
		return rs
	}

	// a. Not due at the store's clock, whatever the worker's time.
	x, js, d := sleeping()
	h.clock.Set(t0.Add(99 * time.Millisecond))
	before := snapshot(x, d)
	out, err := f.AppendBatchFiringDelay(h.ctx, t0.Add(time.Hour), after(1), x, 5, d)
	h.wantNoErr("fire-append before the expiry", err)
	if out.Outcome != core.DelayFireNotDue || out.NextVersion != 0 || out.Cursor != 0 || !out.FiredAt.IsZero() {
		h.t.Fatalf("fire-append before the expiry (the worker's clock an hour ahead): %+v, want not_due", out)
	}
	unchanged("fire-append before the expiry", x, d, before)

	// f. Due but paused: not_due, nothing written.
	at := h.advance(50 * time.Millisecond)
	h.wantNoErr("pause_delay", h.db.PauseDelay(h.ctx, d))
	before = snapshot(x, d)
	fire("fire-append of a paused delay", x, 5, d, after(1), core.DelayFireNotDue)
	unchanged("fire-append of a paused delay", x, d, before)
	h.wantNoErr("unpause_delay", h.db.UnpauseDelay(h.ctx, d))

	// b. Due: the response, which unblocks X, and the batch; the timer row
	// is gone.
	batch := after(1)
	fired := fire("fire-append when due", x, 5, d, batch, core.DelayFired)
	rs := wantResponses("fire-append when due", x, delayResp(js, d, true))
	if fired.Cursor != rs[0].Cursor || !fired.FiredAt.Equal(at) {
		h.t.Fatalf("fire-append answered cursor %d at %s, stored cursor %d at %s", fired.Cursor, fired.FiredAt, rs[0].Cursor, at)
	}
	h.wantJSON("fired delay", rs[0], core.ResponseWithCursor{Cursor: fired.Cursor,
		Event: core.JoinSetResponseEventOuter{CreatedAt: at, Event: delayResp(js, d, true)}})
	wantBatchAt("fire-append when due", x, 5, batch)
	h.wantStatus(x, core.StatePendingAt, core.LifecycleActive)
	if hasTimer(d) {
		h.t.Fatalf("the fired delay's timer row still exists")
	}
	h.wantErr("pause_delay of the fired delay", h.db.PauseDelay(h.ctx, d), core.ErrNotFound)
	if _, delays := h.sweep(at.Add(time.Second)); delays != 0 {
		h.t.Fatalf("sweep fired %d delays after the fire-append, want 0", delays)
	}
	// The same call again (its answer lost): the batch's versions are taken.
	before = snapshot(x, d)
	_, err = call(x, 5, d, batch)
	h.wantVersionConflict("fire-append repeated", err, 7, 5)
	unchanged("fire-append repeated", x, d, before)
	// d. Fired already (by the call above): the batch alone.
	next := []core.AppendRequest{{CreatedAt: h.now(), Event: persist(9)}}
	fire("fire-append of the fired delay", x, 7, d, next, core.DelayFireAnswered)
	wantBatchAt("fire-append of the fired delay", x, 7, next)
	wantResponses("fire-append of the fired delay", x, delayResp(js, d, true))

	// c. A refused batch with a due delay: the error, and the delay stays
	// unfired (X stays blocked); a right call then fires it.
	y, _, yd := sleeping() // due at the store's clock
	before = snapshot(y, yd)
	_, err = call(y, 4, yd, after(1))
	h.wantVersionConflict("fire-append at a stale version", err, 5, 4)
	unchanged("fire-append at a stale version", y, yd, before)
	if !hasTimer(yd) {
		h.t.Fatalf("the delay's timer row is gone after a refused fire-append")
	}
	_, err = call(y, 6, yd, after(1))
	h.wantVersionConflict("fire-append at a version ahead", err, 5, 6)
	unchanged("fire-append at a version ahead", y, yd, before)
	illegal := []core.AppendRequest{{CreatedAt: h.now(), Event: persist(1)}, {CreatedAt: h.now(), Event: &core.Unpaused{}}}
	_, err = call(y, 5, yd, illegal)
	h.wantIllegal("fire-append of an illegal batch", err, "cannot unpause, execution is not paused")
	unchanged("fire-append of an illegal batch", y, yd, before)
	h.wantStatus(y, core.StateBlockedByJoinSet, core.LifecycleActive)
	batch = after(3)
	fired = fire("fire-append after the refused ones", y, 5, yd, batch, core.DelayFired)
	rs = wantResponses("fire-append after the refused ones", y, delayResp(js, yd, true))
	if fired.Cursor != rs[0].Cursor || !fired.FiredAt.Equal(h.now()) || !rs[0].Event.CreatedAt.Equal(h.now()) {
		h.t.Fatalf("fire-append answered cursor %d at %s, stored %d at %s", fired.Cursor, fired.FiredAt, rs[0].Cursor, rs[0].Event.CreatedAt)
	}
	wantBatchAt("fire-append after the refused ones", y, 5, batch)

	// d. Fired by FireDelay, and by the sweep's AppendDelayResponse: the
	// batch alone, and the same state as the fire in one commit.
	z, _, zd := sleeping()
	fd, err := h.db.(core.DelayFirer).FireDelay(h.ctx, zd)
	h.wantNoErr("fire_delay", err)
	if fd.Outcome != core.DelayFired {
		h.t.Fatalf("fire_delay: %s, want fired", fd.Outcome)
	}
	batch = after(4)
	fire("fire-append of a delay FireDelay fired", z, 5, zd, batch, core.DelayFireAnswered)
	wantBatchAt("fire-append of a delay FireDelay fired", z, 5, batch)
	wantResponses("fire-append of a delay FireDelay fired", z, delayResp(js, zd, true))
	if gy, gz := h.pendingState(y), h.pendingState(z); gy.State != core.StatePendingAt || gz.State != core.StatePendingAt ||
		!gy.PendingAt.ScheduledAt.Equal(gz.PendingAt.ScheduledAt) || gy.Lifecycle != gz.Lifecycle {
		h.t.Fatalf("fired with the batch: %s; fired, then the batch: %s", jsonOrErr(gy), jsonOrErr(gz))
	}
	w, _, wd := sleeping()
	o, err := h.db.AppendDelayResponse(h.ctx, h.now(), w, js, wd, true)
	h.wantNoErr("append_delay_response (the sweep's)", err)
	if o != core.DelayResponseSuccess {
		h.t.Fatalf("append_delay_response = %d, want success", o)
	}
	batch = after(5)
	fire("fire-append of a delay the sweep fired", w, 5, wd, batch, core.DelayFireAnswered)
	wantBatchAt("fire-append of a delay the sweep fired", w, 5, batch)
	wantResponses("fire-append of a delay the sweep fired", w, delayResp(js, wd, true))

	// e. Cancelled: nothing written.
	c, _, cd := sleeping()
	co, err := core.CancelDelay(h.ctx, h.db, cd, h.now())
	h.wantNoErr("cancel_delay", err)
	if co != core.DelayCancelled {
		h.t.Fatalf("cancel_delay = %d, want cancelled", co)
	}
	before = snapshot(c, cd)
	fire("fire-append of a cancelled delay", c, 5, cd, after(6), core.DelayFireCancelled)
	unchanged("fire-append of a cancelled delay", c, cd, before)
	wantResponses("fire-append of a cancelled delay", c, delayResp(js, cd, false))
	h.wantNextVersion(c, 5)

	// g. Neither timer nor response; a delay of another execution.
	u := newExecID()
	_, err = call(u, 1, core.NewDelayId(u, js, 1), after(7))
	h.wantErr("fire-append to an unknown execution", err, core.ErrNotFound)
	before = snapshot(x, d)
	_, err = call(x, 8, core.NewDelayId(x, js, 9), after(7))
	h.wantErr("fire-append of an unknown delay", err, core.ErrNotFound)
	unchanged("fire-append of an unknown delay", x, d, before)
	p, _, pd := sleeping()
	beforeP := snapshot(p, pd)
	_, err = call(x, 8, pd, after(7))
	h.wantValidation("fire-append of another execution's delay", err, "")
	unchanged("fire-append of another execution's delay", x, d, before)
	unchanged("fire-append of another execution's delay", p, pd, beforeP)

	// h. A JoinNext of the delay's own join set in the batch: refused on
	// every backend (the JoinNext awaiting a delay precedes its fire).
	q, qjs, qd := sleeping()
	beforeQ := snapshot(q, qd)
	_, err = call(q, 5, qd, []core.AppendRequest{{CreatedAt: h.now(), Event: jnFor(qjs, t0.Add(time.Hour), nil)}})
	h.wantValidation("fire-append with a JoinNext of the delay's join set", err, "")
	unchanged("fire-append with a JoinNext of the delay's join set", q, qd, beforeQ)
}

// gapRespondCursor (core.ResponseCursorReporter: a worker hands a child's
// response to its parent's run in memory): the cursor a respond-to-parent
// reports is the one the response is stored with in the parent, or 0 when
// the store deferred it (numbered later); never another.
func gapRespondCursor(h *harness) {
	r, ok := h.db.(core.ResponseCursorReporter)
	if !ok {
		h.t.Fatalf("%T does not implement core.ResponseCursorReporter", h.db)
	}
	p, c, js, _ := setupParentAwaitingChild(h, lockStrategies[0])
	h.mustLockWith(lockStrategies[0], h.lockReq(newExr(), newRun(), t0.Add(time.Minute)), ffqnChild)
	rv := core.RetOk(&core.WastValWithType{Type: "u64", Value: json.RawMessage(`7`)})
	v, cursor, err := r.AppendBatchRespondToParentAt(h.ctx,
		core.AppendEventsToExecution{ExecutionID: c, Version: 2, Batch: []core.AppendRequest{{CreatedAt: h.now(), Event: finished(rv)}}},
		core.AppendResponseToExecution{ParentExecutionID: p, CreatedAt: h.now(), JoinSetID: js,
			ChildExecutionID: core.ExecutionIdDerived{ExecutionId: c}, FinishedVersion: 2, Result: rv}, h.now())
	h.wantNoErr("respond to parent", err)
	if v != 2 {
		h.t.Fatalf("returned version %d, want 2", v)
	}
	rs := h.get(p).Responses
	if len(rs) != 1 {
		h.t.Fatalf("%d responses, want 1", len(rs))
	}
	if cursor != 0 && cursor != rs[0].Cursor {
		h.t.Fatalf("respond-to-parent reported cursor %d, the response is stored at %d", cursor, rs[0].Cursor)
	}
}

func gapPausedDelayRequest(h *harness) {
	x, js, d := delayedExecution(h, true)
	at := t0.Add(200 * time.Millisecond)
	h.wantTimers(at, nil)
	h.wantNoErr("unpause_delay", h.db.UnpauseDelay(h.ctx, d))
	h.wantTimers(at, []core.ExpiredTimer{{Delay: &core.ExpiredDelay{ExecutionID: x, JoinSetID: js, DelayID: d, ExpiresAt: t0.Add(100 * time.Millisecond)}}})
}

func gapBatchWithDelayResponse(h *harness) {
	x := h.create()
	by := lockedBy(newExr(), newRun())
	h.mustLock(by.ExecutorID, by.RunID, t0.Add(time.Second))
	now := h.advance(10 * time.Millisecond)
	js := mustJS("o:1-sleep")
	d := core.NewDelayId(x, js, 1)
	batch := []core.AppendRequest{
		{CreatedAt: now, Event: jsc(js)},
		{CreatedAt: now, Event: dreq(js, d, now, schedIn(0))},
		{CreatedAt: now, Event: jnFor(js, t0.Add(time.Second), nil)},
	}
	v, err := h.db.AppendBatchWithDelayResponse(h.ctx, now, batch, x, 2, js, d)
	h.wantNoErr("append_batch_with_delay_response", err)
	if v != 5 {
		h.t.Fatalf("returned %d, want 5", v)
	}
	h.wantState(x, psPendingAt(t0.Add(time.Second), &by))
	l := h.get(x)
	if len(l.Responses) != 1 {
		h.t.Fatalf("%d responses, want 1", len(l.Responses))
	}
	h.wantJSON("response", l.Responses[0], core.ResponseWithCursor{Cursor: 1,
		Event: core.JoinSetResponseEventOuter{CreatedAt: now, Event: delayResp(js, d, true)}})
	for _, tm := range h.expiredTimers(t0.Add(time.Hour)) {
		if tm.Delay != nil {
			h.t.Fatalf("timer row of the answered delay still exists: %s", timersString([]core.ExpiredTimer{tm}))
		}
	}
	h.wantErr("pause_delay of the answered delay", h.db.PauseDelay(h.ctx, d), core.ErrNotFound)

	// A failing batch writes neither events nor the response.
	_, err = h.db.AppendBatchWithDelayResponse(h.ctx, now, batch, x, 2, js, core.NewDelayId(x, js, 2))
	h.wantVersionConflict("stale batch", err, 5, 2)
	if n := len(h.get(x).Responses); n != 1 {
		h.t.Fatalf("%d responses after a failed batch, want 1", n)
	}
}

func gapDelayResponseOutcomes(h *harness) {
	x := h.create()
	h.lockAny(t0.Add(time.Hour))
	js := mustJS("o:")
	fired, cancelled := core.NewDelayId(x, js, 1), core.NewDelayId(x, js, 2)
	h.mustAppend(x, 2, jsc(js))
	h.mustAppend(x, 3, dreq(js, fired, t0, schedNow))
	h.mustAppend(x, 4, dreq(js, cancelled, t0.Add(time.Minute), schedIn(time.Minute)))
	resp := func(d core.DelayId, ok bool) core.AppendDelayResponseOutcome {
		h.t.Helper()
		out, err := h.db.AppendDelayResponse(h.ctx, h.now(), x, js, d, ok)
		h.wantNoErr("append_delay_response", err)
		return out
	}
	for i, c := range []struct {
		d    core.DelayId
		ok   bool
		want core.AppendDelayResponseOutcome
	}{
		{fired, true, core.DelayResponseSuccess},
		{fired, true, core.DelayResponseAlreadyFinished},
		{fired, false, core.DelayResponseAlreadyFinished},
		{cancelled, false, core.DelayResponseSuccess},
		{cancelled, false, core.DelayResponseAlreadyCancelled},
		{cancelled, true, core.DelayResponseAlreadyCancelled},
	} {
		if got := resp(c.d, c.ok); got != c.want {
			h.t.Fatalf("call %d (%s, ok=%v) = %d, want %d", i, c.d, c.ok, got, c.want)
		}
	}
	if n := len(h.get(x).Responses); n != 2 {
		h.t.Fatalf("%d responses, want 2", n)
	}
	for _, c := range []struct {
		d    core.DelayId
		want core.DelayCancelOutcome
	}{{fired, core.DelayAlreadyFinished}, {cancelled, core.DelayCancelled}} {
		out, err := core.CancelDelay(h.ctx, h.db, c.d, h.now())
		h.wantNoErr("cancel_delay", err)
		if out != c.want {
			h.t.Fatalf("cancel_delay(%s) = %d, want %d", c.d, out, c.want)
		}
	}
	_, err := h.db.AppendDelayResponse(h.ctx, h.now(), newExecID(), js, core.NewDelayId(x, js, 9), true)
	h.wantErr("append_delay_response to an unknown execution", err, core.ErrNotFound)
}

type subscribeResult struct {
	rs  []core.ResponseWithCursor
	err error
}

func gapSubscribe(h *harness) {
	x := h.create()
	h.lockAny(t0.Add(time.Hour))
	js := mustJS("o:")
	d1, d2 := core.NewDelayId(x, js, 1), core.NewDelayId(x, js, 2)
	h.mustAppend(x, 2, jsc(js))
	h.mustAppend(x, 3, dreq(js, d1, t0.Add(time.Hour), schedNow))
	h.mustAppend(x, 4, dreq(js, d2, t0.Add(time.Hour), schedNow))

	short, cancel := context.WithTimeout(h.ctx, 20*time.Millisecond)
	_, err := h.db.SubscribeToNextResponses(short, x, 0)
	cancel()
	h.wantErr("subscribe without responses", err, core.ErrTimeout)

	ctx, cancel := context.WithTimeout(h.ctx, generous)
	defer cancel()
	done := make(chan subscribeResult, 1)
	go func() {
		rs, err := h.db.SubscribeToNextResponses(ctx, x, 0)
		done <- subscribeResult{rs, err}
	}()
	h.mustRespond(x, delayResp(js, d1, true))
	r := <-done
	h.wantNoErr("subscriber woken by a response", r.err)
	if fmt.Sprint(cursorsOf(r.rs)) != "[1]" {
		h.t.Fatalf("subscriber got cursors %v, want [1]", cursorsOf(r.rs))
	}
	h.mustRespond(x, delayResp(js, d2, false))
	rs, err := h.db.SubscribeToNextResponses(ctx, x, 1)
	h.wantNoErr("subscribe after 1", err)
	if fmt.Sprint(cursorsOf(rs)) != "[2]" {
		h.t.Fatalf("subscribe after cursor 1 got %v, want [2]", cursorsOf(rs))
	}
	rs, err = h.db.SubscribeToNextResponses(ctx, x, 0)
	h.wantNoErr("subscribe after 0", err)
	if fmt.Sprint(cursorsOf(rs)) != "[1 2]" {
		h.t.Fatalf("subscribe after cursor 0 got %v, want [1 2]", cursorsOf(rs))
	}
}

type finishedResult struct {
	rv  core.ReturnValue
	err error
}

func gapWaitFinished(h *harness) {
	_, err := h.db.WaitForFinishedResult(h.ctx, newExecID())
	h.wantErr("wait_for_finished_result of an unknown execution", err, core.ErrNotFound)

	x := h.create()
	short, cancel := context.WithTimeout(h.ctx, 20*time.Millisecond)
	_, err = h.db.WaitForFinishedResult(short, x)
	cancel()
	h.wantErr("wait_for_finished_result of a running execution", err, core.ErrTimeout)

	ctx, cancel := context.WithTimeout(h.ctx, generous)
	defer cancel()
	done := make(chan finishedResult, 1)
	go func() {
		rv, err := h.db.WaitForFinishedResult(ctx, x)
		done <- finishedResult{rv, err}
	}()
	rv := core.RetErr(nil)
	h.mustAppend(x, 1, finished(rv))
	r := <-done
	h.wantNoErr("waiter woken by Finished", r.err)
	h.wantJSON("waited result", r.rv, rv)
	got, err := h.db.WaitForFinishedResult(h.ctx, x)
	h.wantNoErr("wait_for_finished_result of a finished execution", err)
	h.wantJSON("finished result", got, rv)
}

// gapExpiredDeadline: a wait reads first and races its deadline only while
// nothing is ready (docs/spec/semantics.md §4.3.13, §4.3.14):
// get_finished_result is the wait with an immediately-ready timeout, so an
// already-expired context must still return a finished result or the
// responses already stored.
func gapExpiredDeadline(h *harness) {
	x := h.create()
	h.lockAny(t0.Add(time.Hour))
	js := mustJS("o:")
	d := core.NewDelayId(x, js, 1)
	h.mustAppend(x, 2, jsc(js))
	h.mustAppend(x, 3, dreq(js, d, t0.Add(time.Hour), schedNow))
	h.mustRespond(x, delayResp(js, d, true))
	rv := core.RetErr(nil)
	h.mustAppend(x, 4, finished(rv))

	for _, c := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
	}{
		{"cancelled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(h.ctx)
			cancel()
			return ctx, cancel
		}},
		{"past deadline", func() (context.Context, context.CancelFunc) {
			return context.WithDeadline(h.ctx, time.Unix(0, 0))
		}},
	} {
		ctx, cancel := c.ctx()
		got, err := h.db.WaitForFinishedResult(ctx, x)
		h.wantNoErr("wait_for_finished_result of a finished execution, "+c.name+" context", err)
		h.wantJSON("finished result, "+c.name+" context", got, rv)
		rs, err := h.db.SubscribeToNextResponses(ctx, x, 0)
		h.wantNoErr("subscribe_to_next_responses with a stored response, "+c.name+" context", err)
		if fmt.Sprint(cursorsOf(rs)) != "[1]" {
			h.t.Fatalf("subscribe with a %s context got cursors %v, want [1]", c.name, cursorsOf(rs))
		}
		// Nothing ready: the expired deadline wins at once.
		_, err = h.db.SubscribeToNextResponses(ctx, x, 1)
		h.wantErr("subscribe after the last response, "+c.name+" context", err, core.ErrTimeout)
		y := h.create()
		_, err = h.db.WaitForFinishedResult(ctx, y)
		h.wantErr("wait_for_finished_result of a pending execution, "+c.name+" context", err, core.ErrTimeout)
		cancel()
	}
}

func gapWaitPending(h *harness) {
	ffqns := []core.FunctionFqn{ffqnF}
	// Nothing pending: returns when the context ends.
	short, cancel := context.WithTimeout(h.ctx, 20*time.Millisecond)
	h.db.WaitForPendingByFFQN(short, h.now(), ffqns, nil)
	h.db.WaitForPendingByComponentDigest(short, h.now(), compACT.ComponentDigest)
	cancel()

	for _, byDigest := range []bool{false, true} {
		ctx, cancel := context.WithTimeout(h.ctx, generous)
		done := make(chan struct{})
		at := h.now()
		go func() {
			if byDigest {
				h.db.WaitForPendingByComponentDigest(ctx, at, compACT.ComponentDigest)
			} else {
				h.db.WaitForPendingByFFQN(ctx, at, ffqns, nil)
			}
			close(done)
		}()
		x := h.create()
		<-done
		if ctx.Err() != nil {
			h.t.Fatalf("wait_for_pending (by digest %v) did not return before the deadline after a create", byDigest)
		}
		cancel()
		// Already pending: returns at once.
		ctx, cancel = context.WithTimeout(h.ctx, generous)
		if byDigest {
			h.db.WaitForPendingByComponentDigest(ctx, h.now(), compACT.ComponentDigest)
		} else {
			h.db.WaitForPendingByFFQN(ctx, h.now(), ffqns, nil)
		}
		if ctx.Err() != nil {
			h.t.Fatalf("wait_for_pending (by digest %v) waited although %s is pending", byDigest, x)
		}
		cancel()
		h.mustAppend(x, 1, finished(ok0))
	}
}

func gapListEventsResponses(h *harness) {
	x := h.create()
	h.lockAny(t0.Add(time.Hour))
	js := mustJS("o:")
	v := h.mustAppend(x, 2, jsc(js))
	v = h.delayAndRespond(x, v, js, 1)
	h.delayAndRespond(x, v, js, 2)
	got, err := h.db.ListExecutionEventsResponses(h.ctx, x, 2, 2, false, newer(10, 0, false))
	h.wantNoErr("list_execution_events_responses", err)
	ws, err := h.db.GetPendingState(h.ctx, x)
	h.wantNoErr("get_pending_state", err)
	h.wantJSON("execution_with_state", got.ExecutionWithState, ws)
	if fmt.Sprint(versionsOf(got.Events)) != "[2 3]" || got.MaxVersion != 4 {
		h.t.Fatalf("events %v max %d, want [2 3] max 4", versionsOf(got.Events), got.MaxVersion)
	}
	if fmt.Sprint(cursorsOf(got.Responses)) != "[1 2]" || got.MaxCursor != 2 {
		h.t.Fatalf("responses %v max %d, want [1 2] max 2", cursorsOf(got.Responses), got.MaxCursor)
	}
	l := h.get(x)
	h.wantJSON("events", got.Events, l.Events[2:4])
	h.wantJSON("responses", got.Responses, l.Responses)
	_, err = h.db.ListExecutionEventsResponses(h.ctx, newExecID(), 0, 2, false, newer(10, 0, false))
	h.wantErr("unknown execution", err, core.ErrNotFound)
}

func gapNotFound(h *harness) {
	x := h.create()
	unknown := newExecID()
	_, err := h.db.GetExecutionEvent(h.ctx, x, 1)
	h.wantErr("get_execution_event beyond the log", err, core.ErrNotFound)
	_, err = h.db.GetExecutionEvent(h.ctx, unknown, 0)
	h.wantErr("get_execution_event of an unknown execution", err, core.ErrNotFound)
	_, err = h.db.GetLastExecutionEvent(h.ctx, unknown)
	h.wantErr("get_last_execution_event", err, core.ErrNotFound)
	last, err := h.db.GetLastExecutionEvent(h.ctx, x)
	h.wantNoErr("get_last_execution_event", err)
	if last.Version != 0 || last.Event.Variant() != "created" {
		h.t.Fatalf("last event v%d %s, want v0 created", last.Version, last.Event.Variant())
	}
	_, err = h.db.Get(h.ctx, unknown)
	h.wantErr("get", err, core.ErrNotFound)
	_, err = h.db.GetPendingState(h.ctx, unknown)
	h.wantErr("get_pending_state", err, core.ErrNotFound)
	_, err = h.db.GetCreateRequest(h.ctx, unknown)
	h.wantErr("get_create_request", err, core.ErrNotFound)
	_, err = h.db.ListExecutionEvents(h.ctx, unknown, core.Pagination[core.Version]{Direction: core.NewerThan, Length: 1}, false)
	h.wantErr("list_execution_events", err, core.ErrNotFound)
	_, err = h.appendAt(unknown, 1, jsc(mustJS("o:")), h.now())
	h.wantErr("append", err, core.ErrNotFound)
	_, err = h.lockOne(unknown, 1, newExr(), newRun(), h.now().Add(time.Second))
	h.wantErr("lock_one", err, core.ErrNotFound)
	_, err = h.db.CancelWorkflow(h.ctx, unknown, h.now())
	h.wantErr("cancel_workflow", err, core.ErrNotFound)
	_, err = h.db.AppendActivityCancellationRequested(h.ctx, unknown, h.now())
	h.wantErr("append_activity_cancellation_requested", err, core.ErrNotFound)
	_, err = h.db.PauseExecution(h.ctx, unknown, h.now())
	h.wantErr("pause_execution", err, core.ErrNotFound)
	_, err = h.db.UnpauseExecution(h.ctx, unknown, h.now())
	h.wantErr("unpause_execution", err, core.ErrNotFound)
	h.wantErr("upgrade_execution_component", h.db.UpgradeExecutionComponent(h.ctx, unknown, digest1, digest2, manual(false)), core.ErrNotFound)
	h.wantErr("append_response", h.respond(unknown, delayResp(mustJS("o:"), core.NewDelayId(unknown, mustJS("o:"), 1), true)), core.ErrNotFound)
}

// createdSeries creates n executions one second apart (created_at t0+1s…)
// with ids from idMs(k), and returns them oldest first.
func (h *harness) createdSeries(n int, idMs func(k int) uint64) []core.ExecutionId {
	h.t.Helper()
	var ids []core.ExecutionId
	for k := 1; k <= n; k++ {
		h.advance(time.Second)
		id, err := core.NewExecutionId(idMs(k), rand.Reader)
		h.wantNoErr("execution id", err)
		h.createWithID(id)
		ids = append(ids, id)
	}
	return ids
}

func byCreated(dir core.Direction, length uint16, cursor *core.Timestamp, incl bool) core.ExecutionListPagination {
	return core.ExecutionListPagination{CreatedBy: &core.Pagination[*core.Timestamp]{Direction: dir, Length: length, Cursor: cursor, IncludingCursor: incl}}
}

func byID(dir core.Direction, length uint16, cursor *core.ExecutionId, incl bool) core.ExecutionListPagination {
	return core.ExecutionListPagination{ExecutionID: &core.Pagination[*core.ExecutionId]{Direction: dir, Length: length, Cursor: cursor, IncludingCursor: incl}}
}

func tsp(t core.Timestamp) *core.Timestamp { return &t }

func gapListByCreatedAt(h *harness) {
	e := h.createdSeries(5, func(k int) uint64 { return uint64(k) })
	c := func(k int) *core.Timestamp { return tsp(t0.Add(time.Duration(k) * time.Second)) }
	all := core.ListExecutionsFilter{}
	for _, tc := range []struct {
		name string
		p    core.ExecutionListPagination
		want []core.ExecutionId
	}{
		{"default", core.DefaultExecutionListPagination(), []core.ExecutionId{e[4], e[3], e[2], e[1], e[0]}},
		{"OlderThan{2}", byCreated(core.OlderThan, 2, nil, false), []core.ExecutionId{e[4], e[3]}},
		{"OlderThan{2, c4}", byCreated(core.OlderThan, 2, c(4), false), []core.ExecutionId{e[2], e[1]}},
		{"OlderThan{2, c4, incl}", byCreated(core.OlderThan, 2, c(4), true), []core.ExecutionId{e[3], e[2]}},
		{"NewerThan{2}", byCreated(core.NewerThan, 2, nil, false), []core.ExecutionId{e[1], e[0]}},
		{"NewerThan{2, c2}", byCreated(core.NewerThan, 2, c(2), false), []core.ExecutionId{e[3], e[2]}},
		{"NewerThan{2, c2, incl}", byCreated(core.NewerThan, 2, c(2), true), []core.ExecutionId{e[2], e[1]}},
		{"NewerThan{10, c5}", byCreated(core.NewerThan, 10, c(5), false), nil},
	} {
		h.wantIDs(tc.name, idsOf(h.listExecutions(all, tc.p)), tc.want...)
	}
}

func gapListByID(h *harness) {
	h.fresh("IDOrderEqualsCreationOrder", func(h *harness) {
		e := h.createdSeries(5, func(k int) uint64 { return uint64(k) })
		all := core.ListExecutionsFilter{}
		for _, tc := range []struct {
			name string
			p    core.ExecutionListPagination
			want []core.ExecutionId
		}{
			{"OlderThan{2}", byID(core.OlderThan, 2, nil, false), []core.ExecutionId{e[4], e[3]}},
			{"OlderThan{2, id3}", byID(core.OlderThan, 2, &e[2], false), []core.ExecutionId{e[1], e[0]}},
			{"OlderThan{2, id3, incl}", byID(core.OlderThan, 2, &e[2], true), []core.ExecutionId{e[2], e[1]}},
			{"NewerThan{2, id3}", byID(core.NewerThan, 2, &e[2], false), []core.ExecutionId{e[4], e[3]}},
			{"NewerThan{2, id3, incl}", byID(core.NewerThan, 2, &e[2], true), []core.ExecutionId{e[3], e[2]}},
		} {
			h.wantIDs(tc.name, idsOf(h.listExecutions(all, tc.p)), tc.want...)
		}
	})
	h.fresh("SortedByIDNotByCreatedAt", func(h *harness) {
		// Ids decrease while created_at increases. Obelisk sorts an
		// execution-id page by created_at, which loses and repeats rows
		// across pages; Stela sorts it by the cursor's key (core/listing.go).
		e := h.createdSeries(3, func(k int) uint64 { return uint64(100 - k) })
		all := core.ListExecutionsFilter{}
		h.wantIDs("OlderThan{10, max id, incl}", idsOf(h.listExecutions(all, byID(core.OlderThan, 10, &e[0], true))), e[0], e[1], e[2])
		h.wantIDs("NewerThan{10, min id, incl}", idsOf(h.listExecutions(all, byID(core.NewerThan, 10, &e[2], true))), e[0], e[1], e[2])
		h.wantIDs("OlderThan{10, id of e1}", idsOf(h.listExecutions(all, byID(core.OlderThan, 10, &e[1], false))), e[2])
		h.wantIDs("NewerThan{1, min id}", idsOf(h.listExecutions(all, byID(core.NewerThan, 1, &e[2], false))), e[1])
		h.wantIDs("by created_at", idsOf(h.listExecutions(all, core.DefaultExecutionListPagination())), e[2], e[1], e[0])
	})
}

func sortedIDs(ids []core.ExecutionId) []core.ExecutionId {
	out := append([]core.ExecutionId(nil), ids...)
	sort.Slice(out, func(i, j int) bool { return out[i].Compare(out[j]) < 0 })
	return out
}

func (h *harness) wantIDSet(what string, got []core.ExecutionId, want ...core.ExecutionId) {
	h.t.Helper()
	h.wantIDs(what, sortedIDs(got), sortedIDs(want)...)
}

func gapListFilters(h *harness) {
	depA, depB := newDep(), newDep()
	other := mustFFQN("ns:pkg/other.fn")
	h.advance(time.Second)
	p := h.create(withComp(compWith(core.ComponentTypeWorkflow, digest1)), withDep(depA))
	h.advance(time.Second)
	js := mustJS("g:1")
	c := p.NextLevel(js)
	h.createWithID(c, withParent(p, js), withComp(compWith(core.ComponentTypeWorkflow, digest1)), withDep(depA))
	h.advance(time.Second)
	q := h.create(withFFQN(other), withComp(compWith(core.ComponentTypeActivity, digest2)), withDep(depB))
	h.advance(time.Second)
	r := h.create(withComp(compWith(core.ComponentTypeWorkflow, digest1)), withDep(depA))
	h.mustAppend(r, 1, finished(ok0))
	pag := core.DefaultExecutionListPagination()
	for _, tc := range []struct {
		name string
		f    core.ListExecutionsFilter
		want []core.ExecutionId
	}{
		{"top-level only by default", core.ListExecutionsFilter{}, []core.ExecutionId{r, q, p}},
		{"show_derived", core.ListExecutionsFilter{ShowDerived: true}, []core.ExecutionId{r, q, c, p}},
		{"interface name", core.ListExecutionsFilter{FunctionName: &core.FunctionNameFilter{Kind: "interface", Value: "ns:pkg/other"}}, []core.ExecutionId{q}},
		{"function name", core.ListExecutionsFilter{ShowDerived: true, FunctionName: &core.FunctionNameFilter{Kind: "function", Value: "ns:pkg/ifc.fn"}}, []core.ExecutionId{r, c, p}},
		{"package name", core.ListExecutionsFilter{FunctionName: &core.FunctionNameFilter{Kind: "package", Value: "ns:pkg"}}, []core.ExecutionId{r, q, p}},
		{"hide_finished", core.ListExecutionsFilter{HideFinished: true}, []core.ExecutionId{q, p}},
		{"execution_id_prefix", core.ListExecutionsFilter{ShowDerived: true, ExecutionIDPrefix: p.String()}, []core.ExecutionId{c, p}},
		{"component_digest", core.ListExecutionsFilter{ComponentDigest: &digest2}, []core.ExecutionId{q}},
		{"deployment_id", core.ListExecutionsFilter{ShowDerived: true, DeploymentID: &depA}, []core.ExecutionId{r, c, p}},
		{"combined (AND)", core.ListExecutionsFilter{ShowDerived: true, DeploymentID: &depA, HideFinished: true, ExecutionIDPrefix: p.String()}, []core.ExecutionId{c, p}},
	} {
		h.wantIDs(tc.name, idsOf(h.listExecutions(tc.f, pag)), tc.want...)
	}
}

func gapStateFilters(h *harness) {
	lockNow := func(id core.ExecutionId) {
		h.t.Helper()
		_, err := h.lockOne(id, 1, newExr(), newRun(), h.now().Add(time.Hour))
		h.wantNoErr("lock_one", err)
	}
	locked := h.create()
	lockNow(locked)
	pending := h.create()
	scheduled := h.create(withSched(t0.Add(time.Hour)))
	blocked := h.create()
	lockNow(blocked)
	h.mustAppend(blocked, 2, jsc(mustJS("o:")))
	h.mustAppend(blocked, 3, jn(mustJS("o:"), h.now().Add(time.Hour)))
	paused := h.create()
	h.mustAppend(paused, 1, &core.Paused{})
	cancelling := h.create()
	lockNow(cancelling)
	h.mustAppend(cancelling, 2, &core.CancellationRequested{})
	fok, ferr, ffail := h.create(), h.create(), h.create()
	h.mustAppend(fok, 1, finished(ok0))
	h.mustAppend(ferr, 1, finished(core.RetErr(nil)))
	h.mustAppend(ffail, 1, finished(core.RetFailure(core.FailureCancelled, nil, nil)))
	ids := func(x ...core.ExecutionId) []core.ExecutionId { return x }
	for _, tc := range []struct {
		filters []core.StateFilter
		want    []core.ExecutionId
	}{
		{[]core.StateFilter{core.FilterLocked}, ids(locked)},
		{[]core.StateFilter{core.FilterPending}, ids(pending)},
		{[]core.StateFilter{core.FilterScheduled}, ids(scheduled)},
		{[]core.StateFilter{core.FilterBlocked}, ids(blocked)},
		{[]core.StateFilter{core.FilterPaused}, ids(paused)},
		{[]core.StateFilter{core.FilterCancelling}, ids(cancelling)},
		{[]core.StateFilter{core.FilterFinished}, ids(fok, ferr, ffail)},
		{[]core.StateFilter{core.FilterFinishedOk}, ids(fok)},
		{[]core.StateFilter{core.FilterFinishedError}, ids(ferr)},
		{[]core.StateFilter{core.FilterFinishedExecutionFailure}, ids(ffail)},
		{[]core.StateFilter{core.FilterLocked, core.FilterPaused, core.FilterFinishedOk}, ids(locked, paused, fok)},
		{nil, ids(locked, pending, scheduled, blocked, paused, cancelling, fok, ferr, ffail)},
	} {
		got := h.listExecutions(core.ListExecutionsFilter{StateFilters: tc.filters, StateFiltersNow: h.now()}, core.DefaultExecutionListPagination())
		h.wantIDSet(fmt.Sprintf("state filters %v", tc.filters), idsOf(got), tc.want...)
	}
	// Scheduled becomes pending once `now` passes its time.
	got := h.listExecutions(core.ListExecutionsFilter{StateFilters: []core.StateFilter{core.FilterPending}, StateFiltersNow: t0.Add(time.Hour)},
		core.DefaultExecutionListPagination())
	h.wantIDSet("pending at t0+1h", idsOf(got), pending, scheduled)
}

func gapLogs(h *harness) {
	x := h.create()
	run := newRun()
	row := func(d time.Duration, e core.LogEntry) core.LogInfoAppendRow {
		e.CreatedAt = t0.Add(d)
		return core.LogInfoAppendRow{ExecutionID: x, RunID: run, Entry: e}
	}
	h.wantNoErr("append_log_batch", h.db.AppendLogBatch(h.ctx, []core.LogInfoAppendRow{
		row(1*time.Second, core.LogEntry{Level: core.LogInfo, Message: "a"}),
		row(2*time.Second, core.LogEntry{StreamType: core.StreamStdout, Payload: []byte("out")}),
		row(3*time.Second, core.LogEntry{Level: core.LogDebug, Message: "b"}),
		row(4*time.Second, core.LogEntry{StreamType: core.StreamStderr, Payload: []byte("err")}),
	}))
	h.wantNoErr("append_log to another execution", h.db.AppendLog(h.ctx, core.LogInfoAppendRow{ExecutionID: newExecID(), RunID: run,
		Entry: core.LogEntry{CreatedAt: t0, Level: core.LogError, Message: "elsewhere"}}))
	label := func(items []core.LogEntryRow) string {
		var s []string
		for _, it := range items {
			if it.Entry.IsStream() {
				s = append(s, string(it.Entry.Payload))
			} else {
				s = append(s, it.Entry.Message)
			}
		}
		return fmt.Sprint(s)
	}
	first := core.Pagination[core.LogCursor]{Direction: core.NewerThan, Length: 10, Cursor: core.LogCursorMin}
	list := func(f core.LogFilter, p core.Pagination[core.LogCursor]) core.ListLogsResponse {
		h.t.Helper()
		got, err := h.db.ListLogs(h.ctx, x, false, f, p)
		h.wantNoErr("list_logs", err)
		h.wantJSON("pages derived from the items", []any{got.NextPage, got.PrevPage}, []any{core.ListLogsFromPage(got.Items, p).NextPage, core.ListLogsFromPage(got.Items, p).PrevPage})
		return got
	}
	after, before := t0.Add(time.Second), t0.Add(4*time.Second)
	for _, tc := range []struct {
		f    core.LogFilter
		want string
	}{
		{core.LogFilter{ShowLogs: true}, "[a b]"},
		{core.LogFilter{ShowLogs: true, Levels: []core.LogLevel{core.LogInfo}}, "[a]"},
		{core.LogFilter{ShowStreams: true}, "[out err]"},
		{core.LogFilter{ShowStreams: true, StreamTypes: []core.LogStreamType{core.StreamStderr}}, "[err]"},
		{core.LogFilter{ShowLogs: true, ShowStreams: true}, "[a out b err]"},
		{core.LogFilter{ShowLogs: true, ShowStreams: true, CreatedAfter: &after, CreatedBefore: &before}, "[out b]"},
	} {
		if got := label(list(tc.f, first).Items); got != tc.want {
			h.t.Fatalf("filter %+v: %s, want %s", tc.f, got, tc.want)
		}
	}
	both := core.LogFilter{ShowLogs: true, ShowStreams: true}
	p := core.Pagination[core.LogCursor]{Direction: core.NewerThan, Length: 2, Cursor: core.LogCursorMin}
	page := list(both, p)
	if label(page.Items) != "[a out]" {
		h.t.Fatalf("first page %s, want [a out]", label(page.Items))
	}
	page = list(both, page.NextPage)
	if label(page.Items) != "[b err]" {
		h.t.Fatalf("second page %s, want [b err]", label(page.Items))
	}
	last := page.NextPage
	page = list(both, last)
	if len(page.Items) != 0 || page.NextPage != last || page.PrevPage == nil || *page.PrevPage != last.Invert() {
		h.t.Fatalf("page past the end: %d items, next %+v prev %+v", len(page.Items), page.NextPage, page.PrevPage)
	}
	page = list(both, core.Pagination[core.LogCursor]{Direction: core.OlderThan, Length: 3, Cursor: core.LogCursorMax})
	if label(page.Items) != "[err b out]" {
		h.t.Fatalf("OlderThan page %s, want newest first [err b out]", label(page.Items))
	}
}
