package worker

import (
	"context"
	"errors"
	"time"

	"github.com/stela-dev/stela/core"
)

// Fire-and-continue. A run that awaits a sleep in memory and whose
// connection fires delays (core.DelayFirer) used to fire the delay at its
// expiry, wait for that commit, go on, and then write the events that
// follow: two commits and two round trips in a row. With a connection that
// also fires and appends in one commit (core.DelayFireAppender), the run
// goes on at the expiry as if the delay had fired (Context.fire) and its
// next write carries the fire: the store records the DelayFinished(Ok)
// response and the events in one transaction, or neither.
//
// The run's assumption is checked by that write. The delay may have fired
// already (the sweep: the events are appended alone), be not due yet at the
// store's clock (the write is tried again, a few times), or have been
// cancelled or paused meanwhile: then the events that followed the sleep
// are wrong, nothing of them is written, the execution is given back
// (Unlocked), and the next run replays what the store holds (fireLost).
// A write that cannot carry the fire (it creates children, responds to a
// parent, or is a due delay's response) fires it first on its own
// (settleFire), with the same checks. Only sleeps are concerned: a join
// set whose only member is a delay, awaited in memory (Options.AwaitWindow).

// errFireLost is a write refused because the delay its run went on after
// did not fire (see fireLost).
var errFireLost = errors.New("worker: the awaited delay did not fire; the execution was given back")

// mayGoOn reports whether the run may go on after js's delay at its expiry
// without waiting for the fire (and then records that its next write fires
// it): the connection fires and appends in one commit, no other fire is
// pending, and js has no response yet. mu is held.
func (wf *Context) mayGoOn(js *joinSetState, delay core.DelayId) bool {
	if _, ok := wf.w.conn.(core.DelayFireAppender); !ok || wf.w.opts.NoFireAndContinue {
		return false
	}
	if !wf.fire.IsZero() || wf.fireLost || js.consumed < len(js.arrived) || wf.cancelled {
		return false
	}
	wf.fire, js.goOn = delay, true
	return true
}

// writeFiring appends batch at l.next together with the pending fire
// (core.DelayFireAppender), retrying as writeBatch does. A delay not due at
// the store's clock is asked again after a pause (the clocks differ), at
// most fireDelayRetries times; one that stays not due (paused) or was
// cancelled loses the fire (loseFire). mu is held.
func (wf *Context) writeFiring(batch []core.AppendRequest) error {
	fa := wf.w.conn.(core.DelayFireAppender)
	delay := wf.fire
	pause := fireDelayPause
	for attempt := 0; ; attempt++ {
		var ans core.FireAppendAnswer
		err := wf.w.retryWrite(wf.l, func(ctx context.Context) error {
			var err error
			ans, err = fa.AppendBatchFiringDelay(ctx, wf.w.clock.Now(), batch, wf.id, wf.l.next, delay)
			return err
		})
		if err != nil {
			return err
		}
		switch ans.Outcome {
		case core.DelayFired, core.DelayFireAnswered:
			wf.l.next = ans.NextVersion
			wf.buf = wf.buf[:0]
			wf.fired(delay, ans.DelayFireAnswer)
			return nil
		case core.DelayFireNotDue:
			if attempt < fireDelayRetries && wf.pauseFire(pause) {
				pause *= 2
				continue
			}
		}
		return wf.loseFire(delay, ans.Outcome)
	}
}

// settleFire fires the pending delay on its own (core.DelayFirer), before
// a write that cannot carry it. A delay answered already counts as fired
// when its response, read from the store, is DelayFinished(Ok). mu is
// held.
func (wf *Context) settleFire() error {
	if wf.fireLost {
		return errFireLost
	}
	delay := wf.fire
	if delay.IsZero() {
		return nil
	}
	f, ok := wf.w.conn.(core.DelayFirer)
	if !ok {
		return wf.loseFire(delay, core.DelayFireNotDue)
	}
	pause := fireDelayPause
	for attempt := 0; ; attempt++ {
		var ans core.DelayFireAnswer
		err := wf.w.retryWrite(wf.l, func(ctx context.Context) error {
			var err error
			ans, err = f.FireDelay(ctx, delay)
			return err
		})
		if err != nil {
			return err
		}
		switch ans.Outcome {
		case core.DelayFired:
			wf.fired(delay, ans)
			return nil
		case core.DelayFireAnswered:
			if wf.firedOk(delay) {
				wf.fire = core.DelayId{}
				return nil
			}
			ans.Outcome = core.DelayFireCancelled
		case core.DelayFireNotDue:
			if attempt < fireDelayRetries && wf.pauseFire(pause) {
				pause *= 2
				continue
			}
		}
		return wf.loseFire(delay, ans.Outcome)
	}
}

// fired clears the pending fire once written, and hands the response to
// the run when the store told its cursor (else a later read brings it).
func (wf *Context) fired(delay core.DelayId, ans core.DelayFireAnswer) {
	wf.fire = core.DelayId{}
	if ans.Outcome != core.DelayFired {
		return
	}
	wf.w.delaysFired.Add(1)
	if ans.Cursor != 0 {
		_, js := delay.SplitToParts()
		wf.w.handOver(wf.id, core.ExecutionId{}, core.ResponseWithCursor{Cursor: ans.Cursor,
			Event: core.JoinSetResponseEventOuter{CreatedAt: ans.FiredAt, Event: core.JoinSetResponseEvent{
				JoinSetID: js, Event: &core.DelayFinished{DelayID: delay, Result: true}}}})
	}
}

// firedOk reads the responses the run has not seen and reports whether
// delay's is DelayFinished(Ok). mu is held; the responses read are the
// run's from then on.
func (wf *Context) firedOk(delay core.DelayId) bool {
	find := func() (found, ok bool) {
		for _, r := range wf.resps {
			if d, is := r.Event.Event.Event.(*core.DelayFinished); is && d.DelayID == delay {
				return true, bool(d.Result)
			}
		}
		return false, false
	}
	if found, ok := find(); found {
		return ok
	}
	ctx, cancel := wf.w.ioContext()
	defer cancel()
	rs, err := wf.w.conn.SubscribeToNextResponses(ctx, wf.id, wf.lastCursor())
	if err != nil {
		return false
	}
	wf.addResponses(rs)
	_, ok := find()
	return ok
}

// pauseFire waits d before a fire is asked again; false when the worker
// stops meanwhile. mu is held and released while waiting.
func (wf *Context) pauseFire(d time.Duration) bool {
	wf.l.mu.Unlock()
	defer wf.l.mu.Lock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-wf.w.stopping.Done():
		return false
	}
}

// loseFire ends a run whose assumption that delay fired is wrong or cannot
// be checked (outcome): the buffered events are dropped, the execution is
// given back, and every later write of the run is refused (errFireLost).
// mu is held.
func (wf *Context) loseFire(delay core.DelayId, outcome core.DelayFireOutcome) error {
	wf.w.log.Info("the awaited delay did not fire; giving the execution back to replay it",
		"execution_id", wf.id.String(), "delay_id", delay.String(), "outcome", outcome.String())
	wf.fire, wf.fireLost = core.DelayId{}, true
	wf.buf, wf.children = wf.buf[:0], nil
	wf.giveBack(reasonDelayNotFired)
	return errFireLost
}
