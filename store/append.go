package store

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/stela-dev/stela/core"
)

// appendIn appends batch to id at version inside t; currentTime drives pending notifications.
func (s *Service) appendIn(t *txn, id core.ExecutionId, version core.Version, batch []core.AppendRequest, currentTime core.Timestamp, opts core.AppendOptions) (core.AppendResult, error) {
	if err := core.ValidateAppendBatch(batch); err != nil {
		return core.AppendResult{}, err // checked before the execution is looked up (docs/spec/semantics.md §8.2)
	}
	if hasJoinNext(batch) {
		if err := s.drainIn(t, id, currentTime); err != nil {
			return core.AppendResult{}, err
		}
	}
	h, err := t.head(id)
	if err != nil {
		return core.AppendResult{}, err
	}
	lk := &lookup{tx: t.tx, id: id}
	res, err := core.AppendBatch(*h, version, batch, lk, opts)
	if lk.err != nil {
		return core.AppendResult{}, lk.err
	}
	if err != nil {
		return core.AppendResult{}, err
	}
	if rk := res.State.ResultKind; rk != nil && !h.IsFinished() && res.State.IsFinished() {
		t.finished[OutcomeOf(*rk)]++
	}
	if err := t.tx.AppendEvents(id, res.Events); err != nil {
		return core.AppendResult{}, err
	}
	if res.State.IsFinished() && !h.IsFinished() {
		if err := s.recordFinished(t, &res.State); err != nil { // retention.go
			return core.AppendResult{}, err
		}
	}
	for _, d := range res.Delays {
		if err := t.tx.PutDelay(d); err != nil {
			return core.AppendResult{}, err
		}
		if !d.Paused {
			t.timers = append(t.timers, timerNote{key: delayTimerKey(d.DelayID), at: d.ExpiresAt})
		}
	}
	t.setHead(res.State)
	t.notes = append(t.notes, stateNotes(&res.State, currentTime)...)
	return res, nil
}

// respondIn records a response for id inside t (docs/spec/semantics.md §3.12).
// A child's response carried by the Finished event t appends may be deferred
// by the backend (Inbox): t then leaves id's head alone, and the response is
// applied by the next drainIn or settle of id.
func (s *Service) respondIn(t *txn, id core.ExecutionId, createdAt core.Timestamp, ev core.JoinSetResponseEvent, currentTime core.Timestamp) error {
	t.cursor = 0
	if ib := t.caps.inbox; ib != nil && t.heads[id] == nil {
		if _, child := ev.Event.(*core.ChildExecutionFinished); child {
			deferred, err := ib.DeferResponse(id, core.JoinSetResponseEventOuter{CreatedAt: createdAt, Event: ev})
			if err != nil {
				return err
			}
			if deferred {
				t.notes = append(t.notes, note{kind: noteResponse, key: responseKey(id)})
				return nil
			}
		}
	}
	// Responses deferred earlier get their cursors first: a response that
	// completed before this one started is never numbered after it.
	if err := s.drainIn(t, id, currentTime); err != nil {
		return err
	}
	return s.applyResponseIn(t, id, createdAt, ev, currentTime)
}

// applyResponseIn applies a response to id's head inside t: the cursor and
// the unblock rule of core.ApplyResponse.
func (s *Service) applyResponseIn(t *txn, id core.ExecutionId, createdAt core.Timestamp, ev core.JoinSetResponseEvent, currentTime core.Timestamp) error {
	h, err := t.head(id)
	if err != nil {
		return err
	}
	st, cursor, unblocked := core.ApplyResponse(*h, ev.JoinSetID, createdAt)
	resp := core.ResponseWithCursor{
		Event:  core.JoinSetResponseEventOuter{CreatedAt: createdAt, Event: ev},
		Cursor: cursor,
	}
	if err := t.tx.AddResponse(id, resp); err != nil {
		return err
	}
	t.cursor = cursor
	if d, ok := ev.Event.(*core.DelayFinished); ok {
		if err := t.tx.DeleteDelay(id, ev.JoinSetID, d.DelayID); err != nil {
			return err
		}
		t.timers = append(t.timers, timerNote{key: delayTimerKey(d.DelayID), clear: true})
	}
	t.setHead(st)
	t.notes = append(t.notes, note{kind: noteResponse, key: responseKey(id)})
	if unblocked {
		t.notes = append(t.notes, stateNotes(&st, currentTime)...)
	}
	return nil
}

// maxDrain bounds the deferred responses one transaction applies (each adds
// a few items to the backend's commit).
const maxDrain = 32

// unsettledError reports more deferred responses to id than one transaction
// applies; update applies them first (settle) and runs fn again.
type unsettledError struct{ id core.ExecutionId }

func (e *unsettledError) Error() string {
	return "store: too many deferred responses to " + e.id.String() + " for one transaction"
}

// drainIn applies id's deferred responses (Inbox) inside t, in the order
// the backend returns them: what a read of id's responses or a JoinNext must
// see first.
func (s *Service) drainIn(t *txn, id core.ExecutionId, currentTime core.Timestamp) error {
	ib := t.caps.inbox
	if ib == nil {
		return nil
	}
	rs, err := ib.DeferredResponses(id)
	if err != nil || len(rs) == 0 {
		return err
	}
	if len(rs) > maxDrain {
		return &unsettledError{id}
	}
	for _, r := range rs {
		if err := s.applyResponseIn(t, id, r.CreatedAt, r.Event, currentTime); err != nil {
			return err
		}
	}
	return nil
}

// settle applies id's deferred responses (Inbox) in transactions of their
// own, maxDrain at a time, so that a read of its responses that follows sees
// them. A no-op on backends without Inbox.
func (s *Service) settle(ctx context.Context, id core.ExecutionId) error {
	ib := s.caps.inbox
	if ib == nil {
		return nil
	}
	for {
		pending, err := ib.HasDeferredResponses(ctx, id)
		if err != nil || !pending {
			return err
		}
		applied := 0
		err = s.update1(ctx, OpOther, func(t *txn) error {
			inbox := t.caps.inbox
			if inbox == nil {
				return nil
			}
			rs, err := inbox.DeferredResponses(id)
			if err != nil {
				return err
			}
			rs = rs[:min(len(rs), maxDrain)]
			applied = len(rs)
			now := s.clock.Now()
			for _, r := range rs {
				if err := s.applyResponseIn(t, id, r.CreatedAt, r.Event, now); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil || applied < maxDrain {
			return err
		}
	}
}

// SettleResponses applies the deferred responses to id (see Inbox); the
// sweep calls it for the parent of a derived execution whose lock expired,
// so that a parent whose elected responder died is unblocked by the
// responses already there. A no-op on backends without Inbox.
func (s *Service) SettleResponses(ctx context.Context, id core.ExecutionId) error {
	return s.settle(ctx, id)
}

// hasJoinNext reports whether batch appends a JoinNext (whose lookup must
// see every response of its join set).
func hasJoinNext(batch []core.AppendRequest) bool {
	for _, r := range batch {
		if h, ok := r.Event.(*core.HistoryEventRequest); ok {
			if _, ok := h.Event.(*core.JoinNext); ok {
				return true
			}
		}
	}
	return false
}

// Append implements core.DbExecutor.
func (s *Service) Append(ctx context.Context, id core.ExecutionId, version core.Version, req core.AppendRequest) (core.Version, error) {
	return s.AppendBatch(ctx, req.CreatedAt, []core.AppendRequest{req}, id, version)
}

// AppendBatch implements core.DbConnection.
func (s *Service) AppendBatch(ctx context.Context, currentTime core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, version core.Version) (core.Version, error) {
	var next core.Version
	err := s.updateAs(ctx, OpAppend, func(t *txn) error {
		res, err := s.appendIn(t, id, version, batch, currentTime, core.AppendOptions{})
		next = res.NextVersion
		return err
	})
	return next, err
}

// AppendBatchRespondToParent implements core.DbExecutor.
func (s *Service) AppendBatchRespondToParent(ctx context.Context, events core.AppendEventsToExecution, resp core.AppendResponseToExecution, currentTime core.Timestamp) (core.Version, error) {
	next, _, err := s.AppendBatchRespondToParentAt(ctx, events, resp, currentTime)
	return next, err
}

// AppendBatchRespondToParentAt implements core.ResponseCursorReporter.
func (s *Service) AppendBatchRespondToParentAt(ctx context.Context, events core.AppendEventsToExecution, resp core.AppendResponseToExecution, currentTime core.Timestamp) (core.Version, core.ResponseCursor, error) {
	if err := core.ValidateRespondToParent(events, resp); err != nil {
		return 0, 0, err
	}
	return s.respondToParent(ctx, events, resp, currentTime, false)
}

// AppendBatchRespondToParentChecked implements core.ChildWriteChecker: the
// request is checked on its own first, then, in the same Update as the
// write, against the child's creation (core.CheckRespondToParent: one
// read, whatever the number of siblings).
func (s *Service) AppendBatchRespondToParentChecked(ctx context.Context, events core.AppendEventsToExecution, resp core.AppendResponseToExecution, currentTime core.Timestamp) (core.Version, core.ResponseCursor, error) {
	if err := core.CheckRespondToParentRequest(events, resp); err != nil {
		return 0, 0, err
	}
	return s.respondToParent(ctx, events, resp, currentTime, true)
}

func (s *Service) respondToParent(ctx context.Context, events core.AppendEventsToExecution, resp core.AppendResponseToExecution, currentTime core.Timestamp, check bool) (core.Version, core.ResponseCursor, error) {
	var checkIn func(t *txn) error
	if check {
		checkIn = func(t *txn) error {
			ev, err := t.tx.Event(events.ExecutionID, 0)
			if err != nil {
				return err
			}
			created, _ := ev.Event.(*core.Created)
			return core.CheckRespondToParent(events, resp, created)
		}
	}
	return s.appendRespondingToParent(ctx, events.ExecutionID, events.Version, events.Batch, resp, currentTime, checkIn)
}

// appendRespondingToParent appends batch to the child id and, in the same
// Update, records resp (a ChildExecutionFinished) in the parent; check, when
// not nil, runs between the two. It returns the child's next version and
// the response's cursor in the parent (0 when deferred). After a failure
// the parent is settled (settleAfterFailure).
func (s *Service) appendRespondingToParent(ctx context.Context, id core.ExecutionId, version core.Version, batch []core.AppendRequest, resp core.AppendResponseToExecution, currentTime core.Timestamp, check func(t *txn) error) (core.Version, core.ResponseCursor, error) {
	var next core.Version
	var cursor core.ResponseCursor
	err := s.updateAs(ctx, OpAppend, func(t *txn) error {
		res, err := s.appendIn(t, id, version, batch, currentTime, core.AppendOptions{})
		if err != nil {
			return err
		}
		next = res.NextVersion
		if check != nil {
			if err := check(t); err != nil {
				return err
			}
		}
		err = s.respondIn(t, resp.ParentExecutionID, resp.CreatedAt, core.JoinSetResponseEvent{
			JoinSetID: resp.JoinSetID,
			Event: &core.ChildExecutionFinished{ChildExecutionID: resp.ChildExecutionID,
				FinishedVersion: resp.FinishedVersion, Result: resp.Result},
		}, currentTime)
		cursor = t.cursor
		return err
	})
	if err != nil {
		s.settleAfterFailure(ctx, resp.ParentExecutionID)
		return next, 0, err
	}
	return next, cursor, nil
}

// settleAfterFailure settles parent after a failed response to it: the
// failed transaction may have been the one elected to unblock it (Inbox),
// and the siblings' deferred responses must not wait for its retry. Best
// effort (the sweep does it again when the child's lock expires).
func (s *Service) settleAfterFailure(ctx context.Context, parent core.ExecutionId) {
	if s.caps.inbox == nil {
		return
	}
	if err := s.settle(context.WithoutCancel(ctx), parent); err != nil && !errors.Is(err, core.ErrNotFound) {
		s.log.Warn("settling deferred responses failed", core.LogKeyExecutionID, parent.String(), core.LogKeyErr, err)
	}
}

// UpsertStubResponse implements core.DbConnection.
func (s *Service) UpsertStubResponse(ctx context.Context, id core.ExecutionIdDerived, version core.Version, req core.AppendRequest, resp core.AppendResponseToExecution, currentTime core.Timestamp) error {
	_, _, err := s.appendRespondingToParent(ctx, id.ExecutionId, version, []core.AppendRequest{req}, resp, currentTime, nil)
	if !errors.Is(err, core.ErrAlreadyFinished) {
		return err
	}
	ev, rerr := s.GetExecutionEvent(ctx, id.ExecutionId, version)
	if rerr == nil {
		if f, ok := ev.Event.(*core.Finished); ok && f.Retval.Equal(resp.Result) {
			return nil
		}
	}
	return core.ErrStubConflict
}

// AppendBatchWithDelayResponse implements core.DbConnection.
func (s *Service) AppendBatchWithDelayResponse(ctx context.Context, currentTime core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, version core.Version, js core.JoinSetId, delay core.DelayId) (core.Version, error) {
	var next core.Version
	err := s.updateAs(ctx, OpAppend, func(t *txn) error {
		res, err := s.appendIn(t, id, version, batch, currentTime, core.AppendOptions{})
		if err != nil {
			return err
		}
		next = res.NextVersion
		return s.respondIn(t, id, currentTime, core.JoinSetResponseEvent{JoinSetID: js,
			Event: &core.DelayFinished{DelayID: delay, Result: true}}, currentTime)
	})
	return next, err
}

// AppendDelayResponse implements core.DbConnection.
func (s *Service) AppendDelayResponse(ctx context.Context, createdAt core.Timestamp, id core.ExecutionId, js core.JoinSetId, delay core.DelayId, success bool) (core.AppendDelayResponseOutcome, error) {
	err := s.updateAs(ctx, OpRespond, func(t *txn) error {
		return s.respondIn(t, id, createdAt, core.JoinSetResponseEvent{JoinSetID: js,
			Event: &core.DelayFinished{DelayID: delay, Result: core.UnitResult(success)}}, createdAt)
	})
	if err == nil {
		return core.DelayResponseSuccess, nil
	}
	if !errors.Is(err, core.ErrConflict) {
		return 0, err
	}
	var ok, found bool
	if verr := s.view(ctx, func(tx ReadTx) error {
		var err error
		ok, found, err = tx.DelayOutcome(delay)
		return err
	}); verr != nil {
		return 0, verr
	}
	if !found {
		return 0, err
	}
	if ok {
		return core.DelayResponseAlreadyFinished, nil
	}
	return core.DelayResponseAlreadyCancelled, nil
}

// errDelayNotDue ends FireDelay's transaction without a write.
var errDelayNotDue = errors.New("store: delay not due")

// FireDelay implements core.DelayFirer: the sweep's AppendDelayResponse
// (fired) for one delay, at the store's clock, when its timer row is due
// and unpaused. The timer row and the response are read in the commit's
// transaction, so a concurrent sweep or cancellation answers it once:
// whoever commits second finds the response (DelayFireAnswered).
func (s *Service) FireDelay(ctx context.Context, delay core.DelayId) (core.DelayFireAnswer, error) {
	owner, js := delay.SplitToParts()
	if owner.IsZero() {
		return core.DelayFireAnswer{}, &core.ValidationError{Reason: "invalid delay id " + delay.String()}
	}
	var ans core.DelayFireAnswer
	err := s.updateAs(ctx, OpRespond, func(t *txn) error {
		var err error
		ans, err = s.fireIn(t, owner, js, delay)
		if err == nil && ans.Outcome != core.DelayFired {
			return errDelayNotDue
		}
		return err
	})
	switch {
	case errors.Is(err, errDelayNotDue):
		if ans.Outcome == core.DelayFireCancelled {
			ans.Outcome = core.DelayFireAnswered // FireDelay's callers do not tell the two apart
		}
		return core.DelayFireAnswer{Outcome: ans.Outcome}, nil
	case errors.Is(err, core.ErrConflict):
		// Answered between the read and the commit (the guard of the response).
		return core.DelayFireAnswer{Outcome: core.DelayFireAnswered}, nil
	case err != nil:
		return core.DelayFireAnswer{}, err
	}
	return ans, nil
}

// fireIn fires delay (of owner's join set js) inside t when its timer row
// is due and unpaused at the store's clock (DelayFired, with the response's
// time and cursor). Otherwise it writes nothing and answers
// DelayFireNotDue, DelayFireAnswered (the delay fired already) or
// DelayFireCancelled (it was cancelled); core.ErrNotFound when neither the
// timer row nor a response exists.
func (s *Service) fireIn(t *txn, owner core.ExecutionId, js core.JoinSetId, delay core.DelayId) (core.DelayFireAnswer, error) {
	d, ok, err := t.tx.Delay(owner, js, delay)
	if err != nil {
		return core.DelayFireAnswer{}, err
	}
	if !ok {
		fired, found, err := t.tx.DelayOutcome(delay)
		switch {
		case err != nil:
			return core.DelayFireAnswer{}, err
		case !found:
			return core.DelayFireAnswer{}, fmt.Errorf("%w: delay %s", core.ErrNotFound, delay)
		case fired:
			return core.DelayFireAnswer{Outcome: core.DelayFireAnswered}, nil
		}
		return core.DelayFireAnswer{Outcome: core.DelayFireCancelled}, nil
	}
	now := s.clock.Now()
	if d.Paused || d.ExpiresAt.After(now) {
		return core.DelayFireAnswer{Outcome: core.DelayFireNotDue}, nil
	}
	if err := s.respondIn(t, owner, now, core.JoinSetResponseEvent{JoinSetID: js,
		Event: &core.DelayFinished{DelayID: delay, Result: true}}, now); err != nil {
		return core.DelayFireAnswer{}, err
	}
	return core.DelayFireAnswer{Outcome: core.DelayFired, FiredAt: now, Cursor: t.cursor}, nil
}

// AppendBatchFiringDelay implements core.DelayFireAppender: fireIn and
// appendIn in one transaction, so the events that follow the delay's
// response are never stored without it, and a refused batch leaves the
// delay unfired. A conflict at the commit (a sweep or a cancellation
// answered the delay between the read and the commit) runs the
// transaction again, which then finds the response. The batch may not
// hold a JoinNext of the delay's join set (a ValidationError): the
// JoinNext awaiting a delay is written before the delay fires.
func (s *Service) AppendBatchFiringDelay(ctx context.Context, currentTime core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, version core.Version, delay core.DelayId) (core.FireAppendAnswer, error) {
	owner, js := delay.SplitToParts()
	if owner.IsZero() || owner != id {
		return core.FireAppendAnswer{}, &core.ValidationError{Reason: "delay " + delay.String() + " is not a delay of execution " + id.String()}
	}
	for _, r := range batch {
		if h, ok := r.Event.(*core.HistoryEventRequest); ok {
			if j, ok := h.Event.(*core.JoinNext); ok && j.JoinSetID == js {
				// The JoinNext awaiting the delay precedes its response; one
				// in the batch would be checked against responses the
				// transaction is still writing, which backends see differently.
				return core.FireAppendAnswer{}, &core.ValidationError{Reason: "batch: a JoinNext of the delay's join set " + js.String() + " must be written before the fire"}
			}
		}
	}
	var ans core.FireAppendAnswer
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		err = s.updateAs(ctx, OpAppend, func(t *txn) error {
			fire, err := s.fireIn(t, owner, js, delay)
			if err != nil {
				return err
			}
			ans = core.FireAppendAnswer{DelayFireAnswer: fire}
			if fire.Outcome != core.DelayFired && fire.Outcome != core.DelayFireAnswered {
				return errDelayNotDue
			}
			res, err := s.appendIn(t, id, version, batch, currentTime, core.AppendOptions{})
			ans.NextVersion = res.NextVersion
			return err
		})
		if !errors.Is(err, core.ErrConflict) || ans.Outcome != core.DelayFired {
			break
		}
	}
	switch {
	case errors.Is(err, errDelayNotDue):
		return core.FireAppendAnswer{DelayFireAnswer: core.DelayFireAnswer{Outcome: ans.Outcome}}, nil
	case err != nil:
		return core.FireAppendAnswer{}, err
	}
	return ans, nil
}

var _ core.DelayFireAppender = (*Service)(nil)

var _ core.DelayFirer = (*Service)(nil)

// CancelWorkflow implements core.DbExecutor.
func (s *Service) CancelWorkflow(ctx context.Context, id core.ExecutionId, cancelledAt core.Timestamp) (core.CancelOutcome, error) {
	var out core.CancelOutcome
	err := s.updateAs(ctx, OpCancel, func(t *txn) error {
		h, err := t.head(id)
		if err != nil {
			return err
		}
		o, req, err := core.PlanCancelWorkflow(h, cancelledAt)
		if err != nil {
			return err
		}
		out = o
		if req == nil {
			return nil
		}
		_, err = s.appendIn(t, id, h.NextVersion(), []core.AppendRequest{*req}, cancelledAt, core.AppendOptions{})
		return err
	})
	return out, err
}

// AppendActivityCancellationRequested implements core.DbExecutor.
func (s *Service) AppendActivityCancellationRequested(ctx context.Context, id core.ExecutionId, cancelledAt core.Timestamp) (core.CancelOutcome, error) {
	var out core.CancelOutcome
	err := s.updateAs(ctx, OpCancel, func(t *txn) error {
		h, err := t.head(id)
		if err != nil {
			return err
		}
		o, req := core.PlanCancelActivity(h, cancelledAt)
		out = o
		if req == nil {
			return nil
		}
		_, err = s.appendIn(t, id, h.NextVersion(), []core.AppendRequest{*req}, cancelledAt, core.AppendOptions{})
		return err
	})
	return out, err
}

// Create implements core.DbConnection.
func (s *Service) Create(ctx context.Context, req core.CreateRequest) (core.Version, error) {
	if err := req.Validate(); err != nil {
		return 0, err
	}
	var next core.Version = 1
	if req.Paused {
		next = 2
	}
	err := s.updateAs(ctx, OpCreate, func(t *txn) error { return s.createIn(t, req) })
	if err != nil {
		return 0, err
	}
	return next, nil
}

// AppendBatchCreateNewExecution implements core.DbConnection.
func (s *Service) AppendBatchCreateNewExecution(ctx context.Context, currentTime core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, version core.Version, children []core.CreateRequest, backtraces []core.BacktraceInfo) (core.Version, error) {
	return s.createChildren(ctx, currentTime, batch, id, version, children, backtraces, false)
}

// AppendBatchCreateNewExecutionChecked implements core.ChildWriteChecker:
// the children are checked against the parent's stored log and the batch
// (core.CheckCreateChildren) in the same Update as the write.
func (s *Service) AppendBatchCreateNewExecutionChecked(ctx context.Context, currentTime core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, version core.Version, children []core.CreateRequest, backtraces []core.BacktraceInfo) (core.Version, error) {
	return s.createChildren(ctx, currentTime, batch, id, version, children, backtraces, true)
}

func (s *Service) createChildren(ctx context.Context, currentTime core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, version core.Version, children []core.CreateRequest, backtraces []core.BacktraceInfo, check bool) (core.Version, error) {
	next, _, err := s.createChildrenOnce(ctx, currentTime, batch, id, version, children, backtraces, nil, check, false)
	return next, err
}

// AppendBatchCreateNewExecutionLocked implements core.EagerChildCreator:
// AppendBatchCreateNewExecution that also creates the children locks take
// already locked (eager.go).
func (s *Service) AppendBatchCreateNewExecutionLocked(ctx context.Context, currentTime core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, version core.Version, children []core.CreateRequest, backtraces []core.BacktraceInfo, locks []core.EagerLock) (core.Version, []core.LockedExecution, error) {
	return s.createChildrenLocked(ctx, currentTime, batch, id, version, children, backtraces, locks, false)
}

// AppendBatchCreateNewExecutionLockedChecked is
// AppendBatchCreateNewExecutionLocked with the checks of
// AppendBatchCreateNewExecutionChecked (the HTTP route).
func (s *Service) AppendBatchCreateNewExecutionLockedChecked(ctx context.Context, currentTime core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, version core.Version, children []core.CreateRequest, backtraces []core.BacktraceInfo, locks []core.EagerLock) (core.Version, []core.LockedExecution, error) {
	return s.createChildrenLocked(ctx, currentTime, batch, id, version, children, backtraces, locks, true)
}

// hasSignalStub reports whether children create a signal stub.
func hasSignalStub(children []core.CreateRequest) bool {
	for _, c := range children {
		if core.IsSignalStub(c) {
			return true
		}
	}
	return false
}

// signalStubExists reports whether the signal stub c exists already, as the
// child of the same parent and join set (a sender created it first); a
// different execution under its id is a conflict.
func (s *Service) signalStubExists(t *txn, c core.CreateRequest) (bool, error) {
	h, err := t.head(c.ExecutionID)
	if errors.Is(err, core.ErrNotFound) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	if h.FFQN != c.FFQN { // the derived id names the parent and the join set
		return false, fmt.Errorf("%w: execution %s exists and is not this signal stub", core.ErrConflict, c.ExecutionID)
	}
	return true, nil
}

func (s *Service) createChildrenOnce(ctx context.Context, currentTime core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, version core.Version, children []core.CreateRequest, backtraces []core.BacktraceInfo, locks []core.EagerLock, check, retried bool) (core.Version, []core.LockedExecution, error) {
	var next core.Version
	var locked []core.LockedExecution
	err := s.updateAs(ctx, OpAppend, func(t *txn) error {
		locked = locked[:0]
		taken := make([]int, len(locks))
		res, err := s.appendIn(t, id, version, batch, currentTime, core.AppendOptions{})
		if err != nil {
			return err
		}
		next = res.NextVersion
		if check && len(children) > 0 {
			// Most batches carry their own JoinSetCreate and requests, so
			// the log is read only when the batch alone does not justify
			// its children: events 1 … version-1, the log before the batch
			// (some backends read their own writes). The one thing the fast
			// path cannot see — a batch that creates again a join set its
			// log already closed — only affects the worker's own execution,
			// whose version it holds; the children stay derived from it.
			if core.CheckCreateChildren(id, nil, batch, children) != nil {
				if err := checkChildrenAgainstLog(t, id, version, batch, children); err != nil {
					return err
				}
			}
		}
		// The children are written together at the end of the loop
		// where the backend can (HeadsCreator): their reads in the loop
		// (a signal stub's) are served by t.heads.
		_, t.deferCreates = t.tx.(HeadsCreator)
		for _, c := range children {
			if core.IsSignalStub(c) {
				// A sender may have created the stub already (core.SendSignal).
				if exists, err := s.signalStubExists(t, c); err != nil {
					return err
				} else if exists {
					continue
				}
			}
			if lk := eagerLockFor(locks, taken, &c); lk != nil {
				le, err := s.createLockedIn(t, c, &lk.Request)
				if err != nil {
					return err
				}
				if !le.ExecutionID.IsZero() {
					locked = append(locked, le)
				}
				continue
			}
			if err := s.createIn(t, c); err != nil {
				return err
			}
		}
		return t.flushCreates()
	})
	if err != nil && errors.Is(err, core.ErrConflict) && hasSignalStub(children) && !retried {
		// A sender created a signal stub between the read and the commit:
		// run again, which now sees it.
		return s.createChildrenOnce(ctx, currentTime, batch, id, version, children, backtraces, locks, check, true)
	}
	if err != nil {
		return 0, nil, err
	}
	if len(backtraces) > 0 {
		if _, berr := s.b.AppendBacktraces(ctx, backtraces); berr != nil {
			s.log.Warn("append backtraces failed", core.LogKeyExecutionID, id.String(), core.LogKeyErr, berr)
		}
	}
	return next, locked, nil
}

// checkChildrenAgainstLog checks children against id's log before version
// (events 1 … version-1) and batch. Where the backend reads join-set
// events alone (JoinSetEventsReader), it first checks against those: they
// give the exact open or closed state of the children's join sets, so an
// acceptance there is the whole log's; anything else (a child whose request
// is not in batch, say) is decided on the whole log.
func checkChildrenAgainstLog(t *txn, id core.ExecutionId, version core.Version, batch []core.AppendRequest, children []core.CreateRequest) error {
	if r, ok := t.tx.(JoinSetEventsReader); ok {
		events, err := r.JoinSetEvents(id, childJoinSets(children), version)
		if err != nil {
			return err
		}
		if core.CheckCreateChildren(id, events, batch, children) == nil {
			return nil
		}
	}
	history, err := t.tx.Events(id, 1, version)
	if err != nil {
		return err
	}
	return core.CheckCreateChildren(id, history, batch, children)
}

// childJoinSets lists the join sets the derived children's ids name, once each.
func childJoinSets(children []core.CreateRequest) []core.JoinSetId {
	var out []core.JoinSetId
	for i := range children {
		if _, js, ok := children[i].ExecutionID.SplitToParts(); ok && !slices.Contains(out, js) {
			out = append(out, js)
		}
	}
	return out
}

func (s *Service) createIn(t *txn, req core.CreateRequest) error {
	st, events, _, err := core.NewExecution(req)
	if err != nil {
		return err
	}
	if err := t.createHead(st, events); err != nil {
		return err
	}
	t.created[st.ExecutionID] = true
	t.heads[st.ExecutionID] = &st
	if !req.Paused {
		t.notes = append(t.notes, stateNotes(&st, req.CreatedAt)...)
	}
	return nil
}

// AppendBacktrace implements core.DbConnection (best effort: failures are logged).
func (s *Service) AppendBacktrace(ctx context.Context, bt core.BacktraceInfo) error {
	if _, err := s.b.AppendBacktraces(ctx, []core.BacktraceInfo{bt}); err != nil {
		s.log.Warn("append backtrace failed", core.LogKeyExecutionID, bt.ExecutionID.String(), core.LogKeyErr, err)
	}
	return nil
}

// AppendBacktraceBatch implements core.DbConnection.
func (s *Service) AppendBacktraceBatch(ctx context.Context, batch []core.BacktraceInfo) (int, error) {
	return s.b.AppendBacktraces(ctx, batch)
}

// AppendLog implements core.DbConnection.
func (s *Service) AppendLog(ctx context.Context, row core.LogInfoAppendRow) error {
	return s.b.AppendLogs(ctx, []core.LogInfoAppendRow{row})
}

// AppendLogBatch implements core.DbConnection.
func (s *Service) AppendLogBatch(ctx context.Context, rows []core.LogInfoAppendRow) error {
	if len(rows) == 0 {
		return nil
	}
	return s.b.AppendLogs(ctx, rows)
}

// AppendResponse implements core.ResponseAppender (the test back door).
func (s *Service) AppendResponse(ctx context.Context, createdAt core.Timestamp, id core.ExecutionId, resp core.JoinSetResponseEvent) error {
	return s.updateAs(ctx, OpRespond, func(t *txn) error { return s.respondIn(t, id, createdAt, resp, createdAt) })
}

// Cancel implements core.WorkerConn: core.CancelExecution at the store's
// time.
func (s *Service) Cancel(ctx context.Context, id core.ExecutionId) (core.CancelOutcome, error) {
	return core.CancelExecution(ctx, s, id, s.clock.Now())
}

// CancelDelay implements core.WorkerConn: core.CancelDelay at the store's
// time.
func (s *Service) CancelDelay(ctx context.Context, delay core.DelayId) (core.DelayCancelOutcome, error) {
	return core.CancelDelay(ctx, s, delay, s.clock.Now())
}
