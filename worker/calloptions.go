package worker

import (
	"errors"
	"fmt"
	"time"

	"github.com/stela-dev/stela/core"
)

// CallOption tunes one Call (worker.Call, a handle's Call).
type CallOption func(*callOptions)

type callOptions struct {
	scheduleToClose time.Duration
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
