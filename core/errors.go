package core

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors of the store contract (docs/spec/semantics.md §4.0). Every error a store
// returns wraps exactly one of them, so callers branch with errors.Is; the
// typed errors below carry the details and unwrap to their sentinel.
var (
	// ErrNotFound: the execution, event, delay row or other record does not exist
	// (DbErrorRead::NotFound / DbErrorWrite::NotFound).
	ErrNotFound = errors.New("not found")
	// ErrConflict: a uniqueness violation — duplicate execution id, duplicate
	// response for a child or delay, duplicate delay request (NonRetriable(Conflict)).
	ErrConflict = errors.New("conflict")
	// ErrAlreadyFinished: the execution is finished (NonRetriable(AlreadyFinished)).
	ErrAlreadyFinished = errors.New("already finished")
	// ErrIllegalState: the event is not allowed in the current state; see *IllegalStateError.
	ErrIllegalState = errors.New("illegal state")
	// ErrValidation: the request is malformed; see *ValidationError.
	ErrValidation = errors.New("validation failed")
	// ErrVersionConflict: a version-guarded write used a stale version; see *VersionConflictError.
	ErrVersionConflict = errors.New("version conflict")
	// ErrUnlockedCannotBeAppended: `Unlocked` is not applicable in the current state;
	// see *UnlockedCannotBeAppendedError. Executors treat it as success.
	ErrUnlockedCannotBeAppended = errors.New("`Unlocked` cannot be appended")
	// ErrStubConflict: a stub was already finished with a different return value.
	ErrStubConflict = errors.New("stub conflict: already finished with a different value")
	// ErrTimeout: a wait ended because its context was done before the awaited
	// condition held (DbErrorReadWithTimeout::Timeout, SubscriptionEnded).
	ErrTimeout = errors.New("timeout")
	// ErrClosed: the store was closed (DbErrorGeneric::Close).
	ErrClosed = errors.New("store closed")
	// ErrNotImplemented: the backend does not implement this method yet.
	ErrNotImplemented = errors.New("not implemented")
	// ErrUnavailable: the store gave up after retrying contention or
	// throttling (store.Retry); nothing was written and the same request
	// may succeed later (HTTP 503 with Retry-After).
	ErrUnavailable = errors.New("unavailable")
)

// VersionConflictError is returned when a write's version is not the next one.
type VersionConflictError struct {
	Expected  Version // the version the store would accept
	Requested Version // the version the caller sent
}

func (e *VersionConflictError) Error() string {
	return fmt.Sprintf("version conflict: expected: %d, got: %d", e.Expected, e.Requested)
}

// Unwrap returns ErrVersionConflict.
func (e *VersionConflictError) Unwrap() error { return ErrVersionConflict }

// IllegalStateError explains why an event cannot be applied.
type IllegalStateError struct{ Reason string }

func (e *IllegalStateError) Error() string { return "illegal state: " + e.Reason }

// Unwrap returns ErrIllegalState.
func (e *IllegalStateError) Unwrap() error { return ErrIllegalState }

// ValidationError explains why input was rejected.
type ValidationError struct {
	Reason string
	// Path is the JSON path of the value the reason is about, relative to
	// the decoded document (`batch[0].created_at`); "" when the reason is
	// about the whole input or names no value.
	Path string
	// Bound marks a value of the right type outside its documented bounds
	// (a timestamp beyond the year 9999, a duration longer than
	// MaxDuration, a string longer than its limit), as opposed to input of
	// the wrong shape (a value of the wrong JSON type, a missing or unknown
	// field). Decoding a request body, the HTTP API answers the first 400
	// and the second 422 (axum's answer to a body serde cannot read).
	Bound bool
}

func (e *ValidationError) Error() string { return "validation failed: " + e.Message() }

// Message is the reason followed by " at `<path>`" when the error names a
// value.
func (e *ValidationError) Message() string { return e.Reason + at(e.Path) }

// AtPath returns err located under prefix: a *ValidationError gets prefix
// prepended to its Path (a copy; err is not changed); any other error
// becomes a *ValidationError at prefix whose reason is its text.
func AtPath(err error, prefix string) error {
	if err == nil {
		return nil
	}
	var ve *ValidationError
	if !asErr(err, &ve) {
		return &ValidationError{Reason: strings.TrimPrefix(err.Error(), "json: "), Path: prefix}
	}
	c := *ve
	switch {
	case prefix == "":
	case c.Path == "":
		c.Path = prefix
	case strings.HasPrefix(c.Path, "["):
		c.Path = prefix + c.Path
	default:
		c.Path = prefix + "." + c.Path
	}
	return &c
}

// Unwrap returns ErrValidation.
func (e *ValidationError) Unwrap() error { return ErrValidation }

// UnlockedCannotBeAppendedError names the state ("pending", "paused" or
// "cancelling") in which `Unlocked` was rejected.
type UnlockedCannotBeAppendedError struct{ State string }

func (e *UnlockedCannotBeAppendedError) Error() string {
	return "illegal state: `Unlocked` cannot be appended in state " + e.State
}

// Unwrap returns ErrUnlockedCannotBeAppended.
func (e *UnlockedCannotBeAppendedError) Unwrap() error { return ErrUnlockedCannotBeAppended }

func illegal(reason string) error              { return &IllegalStateError{Reason: reason} }
func invalid(reason string) error              { return &ValidationError{Reason: reason} }
func asErr[T error](err error, target *T) bool { return errors.As(err, target) }

// IsNonRetriable reports whether err is a permanent write error: retrying the
// same request cannot succeed (conflict, validation, illegal state, version
// conflict, already finished, Unlocked rejection).
func IsNonRetriable(err error) bool {
	for _, s := range []error{ErrConflict, ErrAlreadyFinished, ErrIllegalState, ErrValidation,
		ErrVersionConflict, ErrUnlockedCannotBeAppended, ErrStubConflict} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}
