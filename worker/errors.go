package worker

import (
	"errors"

	"github.com/stela-dev/stela/core"
)

// Permanent marks an activity error as final: the execution finishes with
// the error ({"err": …}) instead of being retried. A nil err stays nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// IsPermanent reports whether err was marked with Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

// ErrAllProcessed is returned by JoinSet.Next when every submitted member
// was already awaited (recorded as JoinNextTooMany).
var ErrAllProcessed = errors.New("worker: join set has no unawaited member")

// ErrDelayCancelled is returned by Sleep, and by a delay's Response.Err,
// when the delay was cancelled instead of firing.
var ErrDelayCancelled = errors.New("worker: delay cancelled")

// ResultError is an execution (a child, or one awaited with Await) that
// did not finish with Ok: it returned its error variant ({"err": …}) or
// failed ({"execution_failure": …}). Match it with errors.As:
//
//	var re *worker.ResultError
//	if errors.As(err, &re) && re.Kind == core.ReturnErr {
//		log.Printf("child %s declined: %s", re.ID, re.Message)
//	}
//
// Its text is the child's own message, without the child's id (ID carries
// it), so that a workflow returning a child's error passes the message on
// unchanged.
type ResultError struct {
	// ID is the execution.
	ID core.ExecutionId
	// Kind is core.ReturnErr (the function returned its error variant) or
	// core.ReturnExecutionFailure (it failed: see FailureKind).
	Kind core.ReturnValueKind
	// Message is the error value when it is a string (an SDK activity's or
	// workflow's error message), else the value's JSON ("" for none); for
	// a failure, its reason ("" for none).
	Message string
	// Result is the child's return value (Kind ReturnErr or ReturnExecutionFailure).
	Result core.ReturnValue
}

// newResultError is the error of execution id that returned rv (not Ok).
func newResultError(id core.ExecutionId, rv core.ReturnValue) *ResultError {
	e := &ResultError{ID: id, Kind: rv.Kind, Result: rv}
	switch {
	case rv.Kind == core.ReturnErr && rv.Value != nil:
		if rv.Value.Type != "string" || !jsonString(rv.Value.Value, &e.Message) {
			e.Message = string(rv.Value.Value)
		}
	case rv.Kind == core.ReturnExecutionFailure && rv.Failure != nil && rv.Failure.Reason != nil:
		e.Message = *rv.Failure.Reason
	}
	return e
}

// Error renders the execution's error message, or its failure's kind and
// reason; the execution's id is in ID, not in the text.
func (e *ResultError) Error() string {
	if e.Kind == 0 && e.Result.Kind != 0 { // a literal without the derived fields
		e = newResultError(e.ID, e.Result)
	}
	switch e.Kind {
	case core.ReturnErr:
		if e.Message == "" {
			return "the execution returned an error"
		}
		return e.Message
	case core.ReturnExecutionFailure:
		s := "the execution failed"
		if k := e.FailureKind(); k != "" {
			s += " (" + string(k) + ")"
		}
		if e.Message != "" {
			s += ": " + e.Message
		}
		return s
	}
	return "the execution finished"
}

// Is makes a cancelled execution (a cancelled failure) match ErrCancelled,
// so that a workflow interrupted by its cancellation while it waits for a
// child — the cancellation driver cancels the child, the wait returns its
// cancelled result — sees the same errors.Is(err, ErrCancelled) as every
// later call (see docs/worker.md, Cancellation).
func (e *ResultError) Is(target error) bool {
	return target == ErrCancelled && e.FailureKind() == core.FailureCancelled
}

// FailureKind returns the execution failure kind, or "" when the child
// returned its error variant.
func (e *ResultError) FailureKind() core.ExecutionFailureKind {
	if e.Result.Failure == nil {
		return ""
	}
	return e.Result.Failure.Kind
}

// NondeterminismError is the detail of a replay that diverged from the
// execution's history; the execution is finished with an execution failure
// of kind nondeterminism_detected carrying its text.
type NondeterminismError struct {
	// Version is the version of the stored event that did not match (0 if
	// the program ended before consuming the whole history).
	Version core.Version
	Detail  string
}

// Error returns the detail.
func (e *NondeterminismError) Error() string { return "nondeterminism detected: " + e.Detail }

// abortSignal unwinds a workflow's goroutine: it is fenced, evicted or the
// worker stops. It is raised with panic and recovered by the run's top
// frame; it never reaches the store.
type abortSignal struct{ reason string }

// isRefused reports whether err is the store refusing a write for what it
// carries (a validation error, a conflict that is not a fencing one): no
// retry can make it succeed. Credentials and overload are not refusals.
func isRefused(err error) bool {
	return err != nil && !isFenced(err) && (errors.Is(err, core.ErrValidation) || errors.Is(err, core.ErrConflict))
}

func isFenced(err error) bool {
	return errors.Is(err, core.ErrVersionConflict) || errors.Is(err, core.ErrAlreadyFinished) ||
		errors.Is(err, core.ErrNotFound) || errors.Is(err, core.ErrIllegalState)
}
