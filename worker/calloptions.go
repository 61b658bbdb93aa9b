package worker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/stela-dev/stela/core"
)

// CallOption tunes one Call (worker.Call, a handle's Call).
type CallOption func(*callOptions)

type callOptions struct {
	scheduleToClose time.Duration
	startToClose    time.Duration
	retry           *core.ComponentRetryConfig
}

// Metadata keys of a child's per-call retry policy (CallRetryPolicy), a
// Stela extension (docs/http-api.md): the worker running the child locks
// it with this policy instead of its registration's.
const (
	metaMaxRetries = "stela:retry:max_retries"
	metaBackoffMs  = "stela:retry:backoff_ms"
	// metaStartToCloseMs is a child's per-call start-to-close timeout
	// (CallStartToClose), decimal milliseconds.
	metaStartToCloseMs = "stela:start_to_close_ms"
)

// CallStartToClose bounds each run of this call's child activity to d,
// overriding its registration's StartToClose for this call only. It is
// recorded in the child's Created metadata (stela:start_to_close_ms); the
// worker running the child caps the run's lock at d after it was taken
// (an at-once lease extension with the earlier expiry when the lock
// lasts longer, one more write per run) and cancels the activity's ctx
// with cause ErrStartToCloseTimeout then, writing nothing: the store's
// timers record the timeout as for StartToClose. Ignored for a workflow
// child and when d <= 0.
func CallStartToClose(d time.Duration) CallOption {
	return func(o *callOptions) { o.startToClose = d }
}

// CallRetryPolicy overrides, for this call's child only, the retry policy
// of the activity's registration (RetryPolicy): up to maxRetries failed
// runs are retried, the n-th after backoff × 2^(n-1). It is recorded in
// the child's Created metadata (stela:retry:max_retries,
// stela:retry:backoff_ms); the worker running the child extends its lock
// at once with that policy (one more write per run), so that the store's
// timeout handling uses it too. Ignored for a workflow child.
func CallRetryPolicy(maxRetries uint32, backoff time.Duration) CallOption {
	return func(o *callOptions) {
		o.retry = &core.ComponentRetryConfig{MaxRetries: &maxRetries, RetryExpBackoff: core.DurationOf(backoff)}
	}
}

// childMetadata is the metadata of a child created now: the trace context
// and the call's options. mu is held.
func (wf *Context) childMetadata() core.ExecutionMetadata {
	md := maps.Clone(wf.trace)
	if md == nil && wf.childMeta != nil {
		md = core.ExecutionMetadata{}
	}
	maps.Copy(md, wf.childMeta)
	return md
}

// startToCloseOverride returns the per-call start-to-close timeout
// recorded in md (CallStartToClose), if any.
func startToCloseOverride(md core.ExecutionMetadata) (time.Duration, bool) {
	ms, err := strconv.ParseInt(md[metaStartToCloseMs], 10, 64)
	if err != nil || ms <= 0 || ms > int64(time.Duration(1<<63-1)/time.Millisecond) {
		return 0, false
	}
	return time.Duration(ms) * time.Millisecond, true
}

// retryOverride returns the per-call retry policy recorded in md, if any.
func retryOverride(md core.ExecutionMetadata) (core.ComponentRetryConfig, bool) {
	n, err1 := strconv.ParseUint(md[metaMaxRetries], 10, 32)
	ms, err2 := strconv.ParseInt(md[metaBackoffMs], 10, 64)
	if err1 != nil || err2 != nil || ms < 0 {
		return core.ComponentRetryConfig{}, false
	}
	m := uint32(n)
	return core.ComponentRetryConfig{MaxRetries: &m, RetryExpBackoff: core.DurationOf(time.Duration(ms) * time.Millisecond)}, true
}

// ScheduleToClose bounds a Call to d from when it is made (Temporal's
// schedule-to-close timeout: queueing, every attempt and its retries'
// backoffs included). The call is recorded as a join set g:<n> holding the
// child and a delay of d (docs/spec's events, nothing new), awaited with
// one JoinNext: when the delay answers first, Call returns at once a
// *TimeoutError (errors.Is ErrScheduleToCloseTimeout) and the workflow
// goes on; the child is left in the join set, which is closed when the
// workflow returns (an activity is cancelled and its cancellation awaited:
// a running one notices within Options.CancelCheck of the worker running
// it). When the child answers first, the set is closed at once, which
// cancels the delay.
func ScheduleToClose(d time.Duration) CallOption {
	return func(o *callOptions) { o.scheduleToClose = d }
}

// ErrScheduleToCloseTimeout is matched (errors.Is) by the *TimeoutError of a
// Call whose ScheduleToClose deadline passed before its child answered.
var ErrScheduleToCloseTimeout = errors.New("worker: schedule-to-close timeout")

// TimeoutError is a Call's schedule-to-close timeout (ScheduleToClose).
type TimeoutError struct {
	// ID is the child execution that did not answer in time.
	ID core.ExecutionId
	// FFQN is the function called.
	FFQN core.FunctionFqn
	// Timeout is the ScheduleToClose duration.
	Timeout time.Duration
}

// Error names the function and the timeout (the child is in ID).
func (e *TimeoutError) Error() string {
	return fmt.Sprintf("%s did not finish within its schedule-to-close timeout of %s", e.FFQN, e.Timeout)
}

// Is reports whether target is ErrScheduleToCloseTimeout.
func (e *TimeoutError) Is(target error) bool { return target == ErrScheduleToCloseTimeout }

// callWith is Call of target with its options; hint as for callTarget.
func (wf *Context) callWith(target core.FunctionFqn, ps core.Params, hint core.ComponentType, opts []CallOption) (Response, error) {
	var o callOptions
	for _, opt := range opts {
		opt(&o)
	}
	md := core.ExecutionMetadata{}
	if o.retry != nil {
		md[metaMaxRetries] = strconv.FormatUint(uint64(*o.retry.MaxRetries), 10)
		md[metaBackoffMs] = strconv.FormatUint(o.retry.RetryExpBackoff.Millis(), 10)
	}
	if ms := o.startToClose.Milliseconds(); ms > 0 {
		md[metaStartToCloseMs] = strconv.FormatInt(ms, 10)
	}
	if len(md) > 0 {
		wf.l.mu.Lock()
		wf.childMeta = md
		wf.l.mu.Unlock()
		defer func() {
			wf.l.mu.Lock()
			wf.childMeta = nil
			wf.l.mu.Unlock()
		}()
	}
	if o.scheduleToClose <= 0 {
		return wf.callTarget(target, ps, hint)
	}
	return wf.callWithDeadline(target, ps, hint, o.scheduleToClose)
}

// callWithDeadline races the child against a delay in a join set of its own.
func (wf *Context) callWithDeadline(target core.FunctionFqn, ps core.Params, hint core.ComponentType, d time.Duration) (Response, error) {
	js := wf.NewJoinSet()
	child, err := js.submitTarget(target, ps, hint)
	if err != nil {
		return Response{}, err
	}
	if _, err := js.SubmitDelay(d); err != nil {
		return Response{}, err
	}
	r, err := js.Next()
	if err != nil {
		return Response{}, err
	}
	if r.ChildID != child {
		return Response{}, &TimeoutError{ID: child, FFQN: target, Timeout: d}
	}
	js.Close() // cancels the delay
	return r, nil
}

// applyRetryOverride switches a run of a child whose call set a retry
// policy (CallRetryPolicy) to it, and caps its lock at a per-call
// start-to-close deadline (CallStartToClose, l.deadline) that falls
// before the lock's expiry: the lock is extended at once with that
// policy and expiry, so that the store's timeout handling and the worker's outcome
// (activityOutcome reads le's) agree. It reports whether the run may go
// on; a fenced or refused extension releases nothing (the new owner or the
// refusal path takes over) and logs.
func (w *Worker) applyRetryOverride(le *core.LockedExecution, l *lease) bool {
	rc, ok := retryOverride(le.Metadata)
	retry := ok && !sameRetry(rc, le.LockedEvent.RetryConfig)
	// A per-call start-to-close deadline before the lock's expiry
	// (CallStartToClose) shortens the lock to it.
	shorten := !l.deadline.IsZero() && l.deadline.Before(le.LockedEvent.LockExpiresAt)
	if !retry && !shorten {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := w.clock.Now()
	req := l.extension(now) // capped at l.deadline
	ev := req.Event.(*core.Locked)
	if retry {
		ev.RetryConfig = rc
	}
	switch {
	case shorten && !ev.LockExpiresAt.After(now):
		ev.LockExpiresAt = now.Add(time.Millisecond) // the deadline passed already: expire at once
	case !shorten && !ev.LockExpiresAt.After(le.LockedEvent.LockExpiresAt):
		ev.LockExpiresAt = le.LockedEvent.LockExpiresAt // never shorten the lease but for the deadline
	}
	err := w.retryWrite(nil, func(ctx context.Context) error {
		next, err := w.conn.Append(ctx, le.ExecutionID, l.next, req)
		if err == nil {
			l.next = next
		}
		return err
	})
	if err != nil {
		w.log.Warn("cannot apply the call's retry policy; releasing the execution", "execution_id", le.ExecutionID.String(), "err", err)
		if !isFenced(err) {
			w.release(le.ExecutionID, l.next, "retry policy not applied")
		}
		return false
	}
	l.locked = *ev
	le.LockedEvent = *ev
	le.NextVersion = l.next
	return true
}
