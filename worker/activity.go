package worker

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/stela-dev/stela/core"
)

// Texts recorded in TemporarilyFailed and execution failures, as Obelisk's
// executor writes them.
const (
	reasonActivityError = "activity finished with error"
	reasonExecutorClose = "executor closing"
	// reasonAwaitWindow is Stela's: a workflow stopped waiting for a
	// response in memory (Options.AwaitWindow) and gave its execution back.
	reasonAwaitWindow = "await window ended"
	// reasonDelayNotFired is Stela's: a run went on after a sleep it was to
	// fire with its next write (fire-and-continue), but the delay did not
	// fire (cancelled, or paused); the execution is given back unwritten.
	reasonDelayNotFired = "awaited delay did not fire"
)

// runActivity runs one locked activity execution and appends its outcome.
// Its slot (sl) is lent out once the function returned, before the
// outcome's write.
func (w *Worker) runActivity(le core.LockedExecution, f *function, sl *slot) {
	l := newLease(w, le)
	l.deadline = w.startToCloseDeadline(le, f)
	if !w.applyRetryOverride(&le, l) {
		return
	}
	ctx, cancel := w.runContext()
	defer cancel(nil)
	stopTimer := w.cancelAtDeadline(l.deadline, cancel)
	stopWatch := w.watchCancellation(le.ExecutionID, cancel)
	stop := w.keepLease(l.extendActivity, func(err error) {
		if isRefused(err) {
			cancel(&refusedError{err: err})
			return
		}
		cancel(w.lostCause(le.ExecutionID))
	})
	ctx = withExecutionLog(ctx, w, le) // Logger(ctx), worker/log.go
	rv, err, pv := callActivity(withActivityInfo(ctx, activityInfo(le, l.deadline.Time)), f, le.Params)
	stop()
	stopWatch()
	stopTimer()
	cause := context.Cause(ctx)
	var refused *refusedError
	switch {
	case errors.Is(cause, ErrStartToCloseTimeout):
		// The lock expires at the deadline: the store's timers record
		// the timeout (TemporarilyTimedOut, or Finished with a timeout
		// failure once retries are exhausted) and retry it by policy.
		w.log.Info("activity exceeded its start-to-close timeout; the store records the timeout",
			"execution_id", le.ExecutionID.String())
		return
	case errors.As(cause, &refused):
		w.refuseActivity(le, l, refused.err)
		return
	case errors.Is(cause, ErrCancelled):
		w.finishCancelled(le)
		return
	case errors.Is(cause, ErrLeaseLost):
		w.log.Info("activity lost its lease; its outcome is dropped", "execution_id", le.ExecutionID.String())
		return
	case errors.Is(cause, ErrShutdown) && (err != nil || pv != nil):
		w.release(le.ExecutionID, l.next, reasonExecutorClose)
		return
	}
	// The function is done: the outcome's write shares the store's
	// commits with those of the other runs instead of holding the slot.
	sl.release()
	now := w.clock.Now()
	ev := activityOutcome(le, rv, err, pv, now)
	werr := w.retryWrite(l, func(ctx context.Context) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		return w.appendOutcome(ctx, le.ExecutionID, le.Parent, l.next, ev, now)
	})
	if isRefused(werr) {
		w.refuseActivity(le, l, werr)
		return
	}
	if werr != nil {
		w.log.Warn("activity outcome not recorded", "execution_id", le.ExecutionID.String(), "err", werr)
		return
	}
	w.log.Debug("activity done", "execution_id", le.ExecutionID.String(), "event", ev.Event.Variant())
	if fin, ok := ev.Event.(*core.Finished); ok {
		w.reportFinished(le.ExecutionID, fin.Retval)
	}
}

// refusedError is the cause of an activity run's cancellation when the
// store refused its lease extension.
type refusedError struct{ err error }

func (e *refusedError) Error() string { return "worker: write refused: " + e.err.Error() }
func (e *refusedError) Unwrap() error { return e.err }

// refuseActivity records a write of an activity run that the store refused
// (its outcome or its lease extension): it is logged at ERROR and the
// execution finished with an uncategorized execution failure naming the
// refusal, never retried (the same write would be refused again).
func (w *Worker) refuseActivity(le core.LockedExecution, l *lease, refused error) {
	w.log.Error("the store refused an activity write; finishing the execution with an execution failure",
		"execution_id", le.ExecutionID.String(), "err", refused)
	if err := w.finishWithFailure(le, l, refusalReason(refused)); err != nil {
		w.log.Error("cannot record the refused write on the execution", "execution_id", le.ExecutionID.String(), "err", err)
	}
}

// finishWithFailure finishes a locked execution that is not run (or whose
// outcome cannot be written) with an uncategorized execution failure
// carrying reason, responding to its parent if it has one.
func (w *Worker) finishWithFailure(le core.LockedExecution, l *lease, reason string) error {
	now := w.clock.Now()
	rv := core.RetFailure(core.FailureUncategorized, &reason, nil)
	ev := core.AppendRequest{CreatedAt: now, Event: &core.Finished{Retval: rv}}
	err := w.retryWrite(l, func(ctx context.Context) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		return w.appendOutcome(ctx, le.ExecutionID, le.Parent, l.next, ev, now)
	})
	if err == nil {
		w.reportFinished(le.ExecutionID, rv)
	}
	return err
}

// reportFinished reports a stored Finished to Options.OnFinished.
func (w *Worker) reportFinished(id core.ExecutionId, rv core.ReturnValue) {
	if w.opts.OnFinished != nil {
		w.opts.OnFinished(id, rv)
	}
}

// panicValue is a recovered panic with its stack.
type panicValue struct {
	value any
	stack string
}

// callActivity runs the function, turning a panic into a panicValue.
func callActivity(ctx context.Context, f *function, params core.Params) (rv core.ReturnValue, err error, pv *panicValue) {
	defer func() {
		if p := recover(); p != nil {
			pv = &panicValue{value: p, stack: string(debug.Stack())}
		}
	}()
	rv, err = f.activity(ctx, params)
	return rv, err, nil
}

// activityOutcome maps a run's result to the event Obelisk's executor
// would append: Finished(ok), TemporarilyFailed while retries are left
// (errors and panics), Finished(err) for a permanent or final error, and
// Finished(execution failure) for a final panic or a fatal error.
func activityOutcome(le core.LockedExecution, rv core.ReturnValue, err error, pv *panicValue, now core.Timestamp) core.AppendRequest {
	retry := le.LockedEvent.RetryConfig
	backoff, canRetry := core.CanBeRetriedAfter(le.IntermittentEventCount+1, retry.MaxRetries, retry.RetryExpBackoff)
	retryAt := func() core.Timestamp {
		d, ok := backoff.Std()
		if !ok {
			d = time.Duration(1<<63 - 1)
		}
		return now.Add(d)
	}
	finished := func(rv core.ReturnValue) core.AppendRequest {
		return core.AppendRequest{CreatedAt: now, Event: &core.Finished{Retval: rv}}
	}
	var fatal *fatalError
	switch {
	case pv != nil:
		reason := fmt.Sprintf("activity panicked: %v", pv.value)
		if canRetry {
			return core.AppendRequest{CreatedAt: now, Event: &core.TemporarilyFailed{BackoffExpiresAt: retryAt(),
				Reason: reason, Detail: &pv.stack}}
		}
		return finished(core.RetFailure(core.FailureUncategorized, &reason, &pv.stack))
	case err == nil:
		return finished(rv)
	case errors.As(err, &fatal):
		reason := err.Error()
		return finished(core.RetFailure(core.FailureUncategorized, &reason, nil))
	case IsPermanent(err) || !canRetry:
		return finished(core.RetErr(errorValue(err)))
	}
	detail, _ := core.MarshalJSON(errorValue(err))
	d := string(detail)
	return core.AppendRequest{CreatedAt: now, Event: &core.TemporarilyFailed{BackoffExpiresAt: retryAt(),
		Reason: reasonActivityError, Detail: &d}}
}

// appendOutcome appends ev at version; a Finished of a child execution is
// appended together with the response to its parent.
func (w *Worker) appendOutcome(ctx context.Context, id core.ExecutionId, parent *core.Parent, version core.Version, ev core.AppendRequest, now core.Timestamp) error {
	fin, ok := ev.Event.(*core.Finished)
	if !ok || parent == nil {
		_, err := w.conn.Append(ctx, id, version, ev)
		return err
	}
	_, err := w.respondToParent(ctx,
		core.AppendEventsToExecution{ExecutionID: id, Version: version, Batch: []core.AppendRequest{ev}},
		core.AppendResponseToExecution{ParentExecutionID: parent.ExecutionID, CreatedAt: now, JoinSetID: parent.JoinSetID,
			ChildExecutionID: core.ExecutionIdDerived{ExecutionId: id}, FinishedVersion: version, Result: fin.Retval},
		now)
	return err
}

// finishCancelled confirms a cancellation request: Finished(cancelled) at
// the execution's current version (the request bumped it).
func (w *Worker) finishCancelled(le core.LockedExecution) {
	err := w.retryWrite(nil, func(ctx context.Context) error {
		log, err := w.conn.Get(ctx, le.ExecutionID)
		if err != nil {
			return err
		}
		if log.PendingState.State == core.StateFinished || log.PendingState.Lifecycle != core.LifecycleCancelling {
			return nil
		}
		now := w.clock.Now()
		ev := core.AppendRequest{CreatedAt: now, Event: &core.Finished{Retval: core.RetFailure(core.FailureCancelled, nil, nil)}}
		return w.appendOutcome(ctx, le.ExecutionID, le.Parent, log.NextVersion, ev, now)
	})
	if err != nil {
		w.log.Debug("cancellation not confirmed (the cancellation driver will)", "execution_id", le.ExecutionID.String(), "err", err)
	}
}
