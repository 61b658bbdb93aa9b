package storetest

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/stela-dev/stela/core"
)

// Area 5: join sets and responses (T028, T029 played as executor + watcher;
// T030–T034, the open-member tracker, observed through the cancellation driver).
func joinSetScenarios() []contractTest {
	return []contractTest{
		{"T028_ChildPermanentFailureNotifiesParent", t028},
		{"T029_ChildTimeoutByWatcherNotifiesParent", t029},
		{"T030_TrackerTracksOpenJoinSetMembers", t030},
		{"T032_ReconstructKeepsUnrespondedMembersOpen", t032},
		{"T033_ClosingJoinNextRemovesTheJoinSet", t033},
		{"T034_ReconstructMatchesWorkerFIFOModel", t034},
	}
}

func jnFor(js core.JoinSetId, runExp core.Timestamp, requested *core.FunctionFqn) core.ExecutionRequest {
	return hist(&core.JoinNext{JoinSetID: js, RunExpiresAt: runExp, RequestedFFQN: requested})
}

// setupParentAwaitingChild is steps 1–2 of T028: P locked by (exrP, runP),
// then JSC(o:), CREQ(o:, C) + create C, JN(o:, t0) in one
// append_batch_create_new_execution.
func setupParentAwaitingChild(h *harness, ls lockStrategy) (p, c core.ExecutionId, js core.JoinSetId, by core.LockedBy) {
	h.t.Helper()
	p = h.create()
	by = lockedBy(newExr(), newRun())
	if le := h.mustLockWith(ls, h.lockReq(by.ExecutorID, by.RunID, t0.Add(time.Second))); le.NextVersion != 2 {
		h.t.Fatalf("parent next_version %d, want 2", le.NextVersion)
	}
	js = mustJS("o:")
	c = p.NextLevel(js)
	child := ffqnChild
	batch := []core.AppendRequest{
		{CreatedAt: t0, Event: jsc(js)},
		{CreatedAt: t0, Event: creqTo(js, c, ffqnChild)},
		{CreatedAt: t0, Event: jnFor(js, t0, &child)},
	}
	childReq := h.createReq(c, withFFQN(ffqnChild), withParent(p, js), withSched(t0))
	v, err := h.db.AppendBatchCreateNewExecution(h.ctx, t0, batch, p, 2, []core.CreateRequest{childReq}, nil)
	h.wantNoErr("append_batch_create_new_execution", err)
	if v != 5 {
		h.t.Fatalf("append_batch_create_new_execution returned %d, want 5", v)
	}
	h.wantState(p, psBlocked(js, t0, false))
	h.wantState(c, psPendingAt(t0, nil))
	return p, c, js, by
}

func t028(h *harness) {
	h.forEachLockStrategy(func(h *harness, ls lockStrategy) {
		p, c, js, byP := setupParentAwaitingChild(h, ls)
		lc := h.mustLockWith(ls, h.lockReq(newExr(), newRun(), t0.Add(time.Second)), ffqnChild)
		if lc.ExecutionID != c || lc.NextVersion != 2 {
			h.t.Fatalf("child lock: %s next %d, want %s next 2", lc.ExecutionID, lc.NextVersion, c)
		}
		// The worker traps; the executor consults the retry policy (RETRY0: no retry).
		if _, retry := core.CanBeRetriedAfter(lc.IntermittentEventCount+1, retry0().MaxRetries, retry0().RetryExpBackoff); retry {
			h.t.Fatalf("RETRY0 allows a retry")
		}
		rv := core.RetFailure(core.FailureUncategorized, strp("activity trap: error reason"), strp("detail"))
		v, err := h.db.AppendBatchRespondToParent(h.ctx,
			core.AppendEventsToExecution{ExecutionID: c, Version: 2, Batch: []core.AppendRequest{{CreatedAt: t0, Event: finished(rv)}}},
			core.AppendResponseToExecution{ParentExecutionID: p, CreatedAt: t0, JoinSetID: js,
				ChildExecutionID: core.ExecutionIdDerived{ExecutionId: c}, FinishedVersion: 2, Result: rv}, t0)
		h.wantNoErr("append_batch_respond_to_parent", err)
		if v != 2 {
			h.t.Fatalf("append_batch_respond_to_parent returned %d, want 2", v)
		}
		h.wantNextVersion(c, 2)
		h.wantLastEvent(c, finished(rv))
		h.wantState(p, psPendingAt(t0, &byP))
		pl := h.get(p)
		if len(pl.Responses) != 1 {
			h.t.Fatalf("parent has %d responses, want 1", len(pl.Responses))
		}
		h.wantJSON("parent response", pl.Responses[0], core.ResponseWithCursor{Cursor: 1,
			Event: core.JoinSetResponseEventOuter{CreatedAt: t0, Event: childResp(js, c, 2, rv)}})
	})
}

func t029(h *harness) {
	h.forEachLockStrategy(func(h *harness, ls lockStrategy) {
		p, c, js, byP := setupParentAwaitingChild(h, ls)
		h.mustLockWith(ls, h.lockReq(newExr(), newRun(), t0.Add(time.Second)), ffqnChild)
		// The worker appends nothing; at expiry the watcher finishes the child.
		at := h.advance(time.Second)
		if locks, _ := h.sweep(at); locks != 1 {
			h.t.Fatalf("sweep handled %d expired locks, want 1", locks)
		}
		rv := core.RetFailure(core.FailureTimedOut, nil, nil)
		h.wantNextVersion(c, 2)
		last := h.wantLastEvent(c, finished(rv))
		if !last.CreatedAt.Equal(at) {
			h.t.Fatalf("child Finished created_at %s, want %s", last.CreatedAt, at)
		}
		h.wantState(p, psPendingAt(at, &byP))
		pl := h.get(p)
		if len(pl.Responses) != 1 {
			h.t.Fatalf("parent has %d responses, want 1", len(pl.Responses))
		}
		h.wantJSON("parent response", pl.Responses[0], core.ResponseWithCursor{Cursor: 1,
			Event: core.JoinSetResponseEventOuter{CreatedAt: at, Event: childResp(js, c, 2, rv)}})
	})
}

// cancellableParent creates a cancellable workflow P.
func (h *harness) cancellableParent() core.ExecutionId {
	h.t.Helper()
	return h.create(withFFQN(ffqnFC), withComp(compWF))
}

// submit appends batch to p at v creating children (AppendBatchCreateNewExecution) and returns the next version.
func (h *harness) submit(p core.ExecutionId, v core.Version, batch []core.ExecutionRequest, children ...core.CreateRequest) core.Version {
	h.t.Helper()
	reqs := make([]core.AppendRequest, len(batch))
	for i, e := range batch {
		reqs[i] = core.AppendRequest{CreatedAt: h.now(), Event: e}
	}
	next, err := h.db.AppendBatchCreateNewExecution(h.ctx, h.now(), reqs, p, v, children, nil)
	h.wantNoErr("append_batch_create_new_execution", err)
	if want := v + core.Version(len(batch)); next != want {
		h.t.Fatalf("append_batch_create_new_execution returned %d, want %d", next, want)
	}
	return next
}

// finishChild finishes an unlocked child at version 1 and responds to its parent.
func (h *harness) finishChild(c core.ExecutionId, rv core.ReturnValue) {
	h.t.Helper()
	parent, js, ok := c.SplitToParts()
	if !ok {
		h.t.Fatalf("%s is not derived", c)
	}
	_, err := h.db.AppendBatchRespondToParent(h.ctx,
		core.AppendEventsToExecution{ExecutionID: c, Version: 1, Batch: []core.AppendRequest{{CreatedAt: h.now(), Event: finished(rv)}}},
		core.AppendResponseToExecution{ParentExecutionID: parent, CreatedAt: h.now(), JoinSetID: js,
			ChildExecutionID: core.ExecutionIdDerived{ExecutionId: c}, FinishedVersion: 1, Result: rv}, h.now())
	h.wantNoErr("finish child "+c.String(), err)
}

func (h *harness) mustCancelWorkflow(id core.ExecutionId) {
	h.t.Helper()
	out, err := h.db.CancelWorkflow(h.ctx, id, h.now())
	h.wantNoErr("cancel_workflow", err)
	if out != core.CancelRequested {
		h.t.Fatalf("cancel_workflow = %s, want cancellation requested", out)
	}
}

var cancelledRetval = core.RetFailure(core.FailureCancelled, nil, nil)

// closingJoinNextsAfterCancel counts, per join set, the closing JoinNexts appended after CancellationRequested.
func closingJoinNextsAfterCancel(l *core.ExecutionLog) map[core.JoinSetId]int {
	out := map[core.JoinSetId]int{}
	seen := false
	for _, e := range l.Events {
		if _, ok := e.Event.(*core.CancellationRequested); ok {
			seen = true
			continue
		}
		if he, ok := e.Event.(*core.HistoryEventRequest); ok && seen {
			if j, ok := he.Event.(*core.JoinNext); ok && j.Closing {
				out[j.JoinSetID]++
			}
		}
	}
	return out
}

func (h *harness) wantFinishedCancelled(id core.ExecutionId) {
	h.t.Helper()
	l := h.get(id)
	rv, ok := l.FinishedResult()
	if !ok || !rv.Equal(cancelledRetval) {
		h.t.Fatalf("%s finished with %s (finished=%v), want execution_failure cancelled", id, jsonOrErr(rv), ok)
	}
}

func hasVariant(l *core.ExecutionLog, variant string) bool {
	for _, e := range l.Events {
		if e.Event.Variant() == variant {
			return true
		}
	}
	return false
}

func t030(h *harness) {
	p := h.cancellableParent()
	js := mustJS("n:test")
	c := p.NextLevel(js)
	d := core.NewDelayId(p, js, 2)
	addWorkflow := mustFFQN("testing:integration/workflow-add.add-workflow")
	h.submit(p, 1, []core.ExecutionRequest{jsc(js), creqTo(js, c, addWorkflow), dreq(js, d, t0.Add(time.Hour), schedIn(time.Hour))},
		h.createReq(c, withFFQN(addWorkflow), withComp(compWF), withParent(p, js)))
	h.mustCancelWorkflow(p)
	for i := 0; i < 3; i++ {
		h.drive(h.now())
	}
	// Both members are open: the delay is cancelled, the non-cancellable child
	// workflow is only awaited, so P cannot finish.
	pl := h.get(p)
	if len(pl.Responses) != 1 {
		h.t.Fatalf("parent has %d responses, want 1 (the cancelled delay)", len(pl.Responses))
	}
	h.wantJSON("delay response", pl.Responses[0].Event.Event, delayResp(js, d, false))
	if pl.PendingState.State == core.StateFinished || pl.PendingState.Lifecycle != core.LifecycleCancelling {
		h.t.Fatalf("parent state %s, want still cancelling (child workflow is open)", jsonOrErr(pl.PendingState))
	}
	cl := h.get(c)
	if hasVariant(cl, "cancellation_requested") || cl.PendingState.State == core.StateFinished {
		h.t.Fatalf("non-cancellable child workflow was touched: %v", variantsOf(cl.Events))
	}
}

func t032(h *harness) {
	p := h.cancellableParent()
	js := mustJS("n:js")
	awaited := p.NextLevel(js)
	running := awaited.Incremented()
	v := h.submit(p, 1, []core.ExecutionRequest{jsc(js), creq(js, awaited), creq(js, running)},
		h.createReq(awaited, withParent(p, js)), h.createReq(running, withParent(p, js)))
	h.finishChild(awaited, ok0)
	h.mustAppend(p, v, jnFor(js, h.now(), nil))
	h.mustCancelWorkflow(p)
	h.driveUntilFinished(p)

	h.wantFinishedCancelled(p)
	if got := closingJoinNextsAfterCancel(h.get(p)); got[js] != 1 || len(got) != 1 {
		h.t.Fatalf("closing JoinNexts appended %v, want exactly 1 for %s (only `running` is open)", got, js)
	}
	rl := h.get(running)
	if !hasVariant(rl, "cancellation_requested") {
		h.t.Fatalf("open member `running` was not cancelled: %v", variantsOf(rl.Events))
	}
	h.wantFinishedCancelled(running)
	if al := h.get(awaited); hasVariant(al, "cancellation_requested") || len(al.Events) != 2 {
		h.t.Fatalf("consumed member `awaited` was touched: %v", variantsOf(al.Events))
	}
}

func t033(h *harness) {
	p := h.cancellableParent()
	js := mustJS("n:closing")
	d := core.NewDelayId(p, js, 1)
	h.submit(p, 1, []core.ExecutionRequest{jsc(js), dreq(js, d, t0.Add(time.Hour), schedIn(time.Hour)), jnClosing(js, h.now())})
	h.wantState(p, psBlocked(js, h.now(), true))
	h.mustCancelWorkflow(p)
	h.driveUntilFinished(p)
	pl := h.get(p)
	h.wantFinishedCancelled(p)
	if len(pl.Responses) != 0 {
		h.t.Fatalf("closed join set's delay got responses %s, want none", jsonOrErr(pl.Responses))
	}
	if got := closingJoinNextsAfterCancel(pl); len(got) != 0 {
		h.t.Fatalf("closing JoinNexts appended %v for a closed join set, want none", got)
	}
}

// t034 generates random join sets (delays, child activities, cancellable
// child workflows; random arrivals; consuming and closing JoinNexts), cancels
// the parent and drives it to Finished. Through the driver, the tracker's
// FIFO model (open = members minus the first min(#JoinNext, #arrivals)
// arrivals; closed sets absent) is observable as: every member of an open set
// that had no response is cancelled, members of closed sets are left alone,
// and once all members have answered the driver appends exactly
// max(0, members - #JoinNext) closing JoinNexts per open set.
func t034(h *harness) {
	seeds := h.opts.scaled(40, 4)
	for seed := 1; seed <= seeds; seed++ {
		rng := rand.New(rand.NewPCG(uint64(seed), 34))
		p := h.cancellableParent()
		v := core.Version(1)
		want := map[core.JoinSetId]int{}
		type member struct {
			js      core.JoinSetId
			child   core.ExecutionId
			delay   core.DelayId
			arrived bool
			closed  bool
		}
		var all []*member
		sets := 1 + rng.IntN(3)
		for s := 0; s < sets; s++ {
			js := mustJS(fmt.Sprintf("n:js%d", s))
			var members []*member
			batch := []core.ExecutionRequest{jsc(js)}
			var children []core.CreateRequest
			next := p.NextLevel(js)
			nMembers := rng.IntN(5)
			for m := 0; m < nMembers; m++ {
				switch rng.IntN(3) {
				case 0:
					d := core.NewDelayId(p, js, uint64(len(members)+1))
					batch = append(batch, dreq(js, d, t0.Add(time.Hour), schedIn(time.Hour)))
					members = append(members, &member{js: js, delay: d})
				case 1:
					batch = append(batch, creq(js, next))
					children = append(children, h.createReq(next, withParent(p, js)))
					members = append(members, &member{js: js, child: next})
					next = next.Incremented()
				default:
					batch = append(batch, creqTo(js, next, ffqnFC))
					children = append(children, h.createReq(next, withParent(p, js), withFFQN(ffqnFC), withComp(compWF)))
					members = append(members, &member{js: js, child: next})
					next = next.Incremented()
				}
			}
			all = append(all, members...)
			v = h.submit(p, v, batch, children...)
			arrivals := rng.Perm(len(members))[:rng.IntN(len(members)+1)]
			for _, i := range arrivals {
				m := members[i]
				m.arrived = true
				if m.child.IsZero() {
					out, err := h.db.AppendDelayResponse(h.ctx, h.now(), p, js, m.delay, true)
					h.wantNoErr("delay fires", err)
					if out != core.DelayResponseSuccess {
						h.t.Fatalf("delay response outcome %d, want success", out)
					}
				} else {
					h.finishChild(m.child, ok0)
				}
			}
			joinNexts := rng.IntN(len(members) + 2)
			for j := 0; j < joinNexts; j++ {
				v = h.mustAppend(p, v, jnFor(js, h.now(), nil))
			}
			if rng.IntN(2) == 0 {
				v = h.mustAppend(p, v, jnClosing(js, h.now()))
				for _, m := range members {
					m.closed = true
				}
				continue
			}
			if open := len(members) - joinNexts; open > 0 {
				want[js] = open
			}
		}
		h.mustCancelWorkflow(p)
		h.driveUntilFinished(p)
		h.wantFinishedCancelled(p)
		pl := h.get(p)
		if got := closingJoinNextsAfterCancel(pl); fmt.Sprint(got) != fmt.Sprint(want) {
			h.t.Fatalf("seed %d: closing JoinNexts per join set %v, want %v", seed, got, want)
		}
		delayAnswers := map[core.DelayId]bool{}
		for _, r := range pl.Responses {
			if d, ok := r.Event.Event.Event.(*core.DelayFinished); ok {
				delayAnswers[d.DelayID] = bool(d.Result)
			}
		}
		for _, m := range all {
			cancelled := !m.arrived && !m.closed
			if m.child.IsZero() {
				ok, answered := delayAnswers[m.delay]
				if answered != (m.arrived || cancelled) || (cancelled && ok) {
					h.t.Fatalf("seed %d: delay %s (arrived %v, closed set %v): answered %v ok %v", seed, m.delay, m.arrived, m.closed, answered, ok)
				}
				continue
			}
			cl := h.get(m.child)
			if got := hasVariant(cl, "cancellation_requested"); got != cancelled {
				h.t.Fatalf("seed %d: child %s (arrived %v, closed set %v) cancellation requested = %v, want %v",
					seed, m.child, m.arrived, m.closed, got, cancelled)
			}
		}
	}
	h.t.Logf("T034: %d generated parents driven to Finished(cancelled)", seeds)
}
