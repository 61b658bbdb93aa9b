package worker

import (
	"errors"
	"fmt"

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
// failed ({"execution_failure": …}).
type ResultError struct {
	// ID is the execution.
	ID core.ExecutionId
	// Result is the child's return value (Kind ReturnErr or ReturnExecutionFailure).
	Result core.ReturnValue
}

// Error renders the execution's error value or failure, after its id.
func (e *ResultError) Error() string {
	switch e.Result.Kind {
	case core.ReturnErr:
		if e.Result.Value == nil {
			return fmt.Sprintf("%s returned an error", e.ID)
		}
		var msg string
		if e.Result.Value.Type == "string" && jsonString(e.Result.Value.Value, &msg) {
			return fmt.Sprintf("%s: %s", e.ID, msg)
		}
		return fmt.Sprintf("%s returned error %s", e.ID, e.Result.Value.Value)
	case core.ReturnExecutionFailure:
		f := e.Result.Failure
		s := fmt.Sprintf("%s failed (%s)", e.ID, f.Kind)
		if f.Reason != nil {
			s += ": " + *f.Reason
		}
		return s
	}
	return fmt.Sprintf("%s finished", e.ID)
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
