package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/stela-dev/stela/core"
)

// Errors of the HTTP layer that have no core equivalent.
var (
	// ErrUnauthorized: the server rejected the credentials (401, 403).
	ErrUnauthorized = errors.New("unauthorized")
	// ErrUnavailable: the server or a gateway is overloaded or down (429,
	// 502, 503, 504) after the retries the call allowed.
	ErrUnavailable = errors.New("service unavailable")
	// ErrNotFinished: the execution has no result yet (425).
	ErrNotFinished = errors.New("not finished yet")
)

// Error is a non-2xx answer. It unwraps to the core error the status and
// message stand for (see the package documentation), so errors.Is and
// errors.As see through it.
type Error struct {
	// Status is the HTTP status.
	Status int
	// Message is the server's message: the `err` of a JSON error body, or
	// the text body.
	Message string
	// Method and Path name the request.
	Method, Path string
	cause        error
}

func (e *Error) Error() string { return fmt.Sprintf("%s (HTTP %d)", e.Message, e.Status) }

// Unwrap returns the core error the answer maps to (nil when none does).
func (e *Error) Unwrap() error { return e.cause }

// StatusOf returns the HTTP status of an *Error in err's chain, else 0.
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// IsUnreachable reports whether err means the server could not be reached
// (connection refused or reset, DNS failure).
func IsUnreachable(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	return errors.As(err, &op) || errors.As(err, &dns) || errors.Is(err, io.ErrUnexpectedEOF)
}

// IsRetryable reports whether err is worth retrying later: the server was
// unreachable or unavailable. The client already retried what it could.
func IsRetryable(err error) bool {
	return errors.Is(err, ErrUnavailable) || IsUnreachable(err)
}

// errorOf builds the *Error of a non-2xx answer to r.
func errorOf(r *request, resp *Response) *Error {
	msg := strings.TrimSpace(string(resp.Body))
	var env struct {
		Err *string `json:"err"`
	}
	if json.Unmarshal(resp.Body, &env) == nil && env.Err != nil {
		msg = *env.Err
	}
	if msg == "" {
		msg = http.StatusText(resp.Status)
	}
	return &Error{Status: resp.Status, Message: msg, Method: r.method, Path: r.path, cause: causeOf(resp.Status, msg)}
}

// causeOf maps a status and message back to core's error taxonomy: the
// inverse of httpapi's errorStatus (docs/http-api.md §1.1).
func causeOf(status int, msg string) error {
	switch status {
	case http.StatusNotFound:
		return core.ErrNotFound
	case http.StatusConflict:
		var exp, got core.Version
		if n, _ := fmt.Sscanf(msg, "version conflict: expected: %d, got: %d", &exp, &got); n == 2 {
			return &core.VersionConflictError{Expected: exp, Requested: got}
		}
		if state, ok := strings.CutPrefix(msg, "illegal state: `Unlocked` cannot be appended in state "); ok {
			return &core.UnlockedCannotBeAppendedError{State: state}
		}
		switch msg {
		case "version conflict":
			return core.ErrVersionConflict
		case "already finished":
			return core.ErrAlreadyFinished
		case "already cancelling":
			return errAlreadyCancelling
		}
		return core.ErrConflict
	case http.StatusUnprocessableEntity:
		if strings.HasPrefix(msg, "invalid request body") {
			return &core.ValidationError{Reason: msg}
		}
		return &core.IllegalStateError{Reason: msg}
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		return &core.ValidationError{Reason: msg}
	case http.StatusTooEarly:
		return ErrNotFinished
	case http.StatusNotImplemented:
		return core.ErrNotImplemented
	case http.StatusUnauthorized, http.StatusForbidden:
		return ErrUnauthorized
	case http.StatusGatewayTimeout:
		return errors.Join(ErrUnavailable, core.ErrTimeout)
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable:
		return ErrUnavailable
	}
	return nil
}

// errAlreadyCancelling is the 409 of a cancel of a cancelling execution
// (Cancel turns it into core.CancelAlreadyCancelling).
var errAlreadyCancelling = fmt.Errorf("already cancelling: %w", core.ErrConflict)
