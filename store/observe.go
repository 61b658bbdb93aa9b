package store

import (
	"context"
	"errors"
	"time"

	"github.com/stela-dev/stela/core"
)

// Observer receives what the service did, after the fact: one Commit per
// transaction it ran and one LockCall per lock request. Package obs
// implements it (Prometheus metrics, CloudWatch EMF, OpenTelemetry spans);
// the service knows nothing of exporters. Implementations must be safe for
// concurrent use and cheap: they run on the request path. A nil
// Options.Observer costs nothing.
type Observer interface {
	// Commit reports one Update the service ran: what for, when it started,
	// how it ended and, when it committed, what it changed. ctx is the
	// caller's (it carries the trace of the request, if any).
	Commit(ctx context.Context, c Commit)
	// LockCall reports one lock request: the batch size asked for and the
	// executions locked (granted <= requested; LockOne asks for 1).
	LockCall(ctx context.Context, requested, granted int)
}

// Op names what a transaction of the service was for (a metrics label).
type Op uint8

// Operations of the service's transactions.
const (
	// OpOther is every transaction not listed below (pause, upgrade,
	// deployments, …).
	OpOther Op = iota
	// OpCreate is Create: a new top-level execution.
	OpCreate
	// OpLock locks pending executions (one transaction per batch on SQLite,
	// per execution on DynamoDB).
	OpLock
	// OpAppend is a worker's append: events, children, a response to the
	// parent, a stub.
	OpAppend
	// OpRespond records a response alone (a fired or cancelled delay).
	OpRespond
	// OpCancel requests a cancellation.
	OpCancel
	numOps
)

var opNames = [numOps]string{"other", "create", "lock", "append", "respond", "cancel"}

// String returns the operation's label ("append").
func (o Op) String() string {
	if o < numOps {
		return opNames[o]
	}
	return "other"
}

// Ops lists every operation, in order.
func Ops() []Op {
	out := make([]Op, numOps)
	for i := range out {
		out[i] = Op(i)
	}
	return out
}

// Outcome is how an execution finished (a metrics label).
type Outcome uint8

// Outcomes of finished executions.
const (
	OutcomeOK Outcome = iota
	// OutcomeError is a fallible function's error return.
	OutcomeError
	// OutcomeTimeout is the execution failure timed_out.
	OutcomeTimeout
	// OutcomeCancelled is the execution failure cancelled.
	OutcomeCancelled
	// OutcomeNondeterminism is the execution failure nondeterminism_detected.
	OutcomeNondeterminism
	// OutcomeOutOfFuel is the execution failure out_of_fuel.
	OutcomeOutOfFuel
	// OutcomeFailure is any other execution failure (uncategorized).
	OutcomeFailure
	// NumOutcomes is the number of outcomes.
	NumOutcomes
)

var outcomeNames = [NumOutcomes]string{"ok", "error", "timeout", "cancelled", "nondeterminism", "out_of_fuel", "failure"}

// String returns the outcome's label ("timeout").
func (o Outcome) String() string {
	if o < NumOutcomes {
		return outcomeNames[o]
	}
	return "failure"
}

// OutcomeOf classifies a finished execution's result kind.
func OutcomeOf(k core.ResultKind) Outcome {
	switch {
	case !k.IsErr:
		return OutcomeOK
	case k.Failure == "":
		return OutcomeError
	case k.Failure == core.FailureTimedOut:
		return OutcomeTimeout
	case k.Failure == core.FailureCancelled:
		return OutcomeCancelled
	case k.Failure == core.FailureNondeterminismDetected:
		return OutcomeNondeterminism
	case k.Failure == core.FailureOutOfFuel:
		return OutcomeOutOfFuel
	}
	return OutcomeFailure
}

// Commit describes one transaction of the service (Observer.Commit).
type Commit struct {
	Op    Op
	Start time.Time
	// Duration is the wall time of the whole Update, backend retries
	// included.
	Duration time.Duration
	// Err is nil when the transaction committed (or had nothing to write).
	Err error
	// Created counts executions the commit created (children included).
	Created int
	// Finished counts executions the commit finished, by outcome.
	Finished [NumOutcomes]int
}

// Result classifies Err (a metrics label): "ok", "version_conflict",
// "conflict", "already_finished", "illegal_state", "validation",
// "not_found", "unavailable", "timeout" or "error".
func (c *Commit) Result() string { return ResultOf(c.Err) }

// ResultOf classifies a store error as Commit.Result does.
func ResultOf(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, core.ErrVersionConflict):
		return "version_conflict"
	case errors.Is(err, core.ErrConflict), errors.Is(err, core.ErrStubConflict):
		return "conflict"
	case errors.Is(err, core.ErrAlreadyFinished):
		return "already_finished"
	case errors.Is(err, core.ErrIllegalState), errors.Is(err, core.ErrUnlockedCannotBeAppended):
		return "illegal_state"
	case errors.Is(err, core.ErrValidation):
		return "validation"
	case errors.Is(err, core.ErrNotFound):
		return "not_found"
	case errors.Is(err, core.ErrUnavailable):
		return "unavailable"
	case errors.Is(err, core.ErrTimeout), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "timeout"
	}
	return "error"
}

// CommitResults lists every value ResultOf returns.
func CommitResults() []string {
	return []string{"ok", "version_conflict", "conflict", "already_finished", "illegal_state", "validation",
		"not_found", "unavailable", "timeout", "error"}
}
