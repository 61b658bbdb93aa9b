package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/stela-dev/stela/core"
)

// Content types written by the handler.
const (
	contentTypeJSON  = "application/json"
	contentTypeText  = "text/plain; charset=utf-8"
	contentTypeBytes = "application/octet-stream"
)

// format is the negotiated representation of a response.
type format uint8

const (
	fmtJSON format = iota + 1
	fmtText
	fmtBytes
)

// formatRule says how a route picks its representation.
type formatRule uint8

const (
	// jsonDefault negotiates Accept; missing or */* gives JSON.
	jsonDefault formatRule = iota + 1
	// textDefault negotiates Accept; missing or */* gives text.
	textDefault
	// jsonOnly ignores Accept.
	jsonOnly
	// textOnly ignores Accept.
	textOnly
	// bytesOnly ignores Accept (raw blobs; errors are JSON).
	bytesOnly
)

// negotiate picks the representation for r under rule; ok is false when the
// Accept header names only unsupported types (406).
func negotiate(r *http.Request, rule formatRule) (format, bool) {
	var def format
	switch rule {
	case jsonOnly:
		return fmtJSON, true
	case textOnly:
		return fmtText, true
	case bytesOnly:
		return fmtBytes, true
	case textDefault:
		def = fmtText
	default:
		def = fmtJSON
	}
	accept := strings.Join(r.Header.Values("Accept"), ",")
	if strings.TrimSpace(accept) == "" {
		return def, true
	}
	type mediaRange struct {
		typ string
		q   float64
	}
	var ranges []mediaRange
	for part := range strings.SplitSeq(accept, ",") {
		fields := strings.Split(part, ";")
		mr := mediaRange{typ: strings.ToLower(strings.TrimSpace(fields[0])), q: 1}
		for _, p := range fields[1:] {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			if strings.EqualFold(k, "q") {
				if q, err := strconv.ParseFloat(v, 64); err == nil {
					mr.q = q
				}
			}
		}
		if mr.typ != "" && mr.q > 0 {
			ranges = append(ranges, mr)
		}
	}
	sort.SliceStable(ranges, func(i, j int) bool { return ranges[i].q > ranges[j].q })
	for _, mr := range ranges {
		switch mr.typ {
		case "application/json", "application/*":
			return fmtJSON, true
		case "text/plain", "text/*":
			return fmtText, true
		case "*/*", "*":
			return def, true
		}
	}
	return fmtJSON, false
}

// call is one request being served by a route handler.
type call struct {
	s *server
	w http.ResponseWriter
	r *http.Request
	f format
	// compact writes JSON without indentation: the worker routes, whose
	// answers only programs read (Obelisk's public API pretty-prints, and so
	// do Stela's public routes).
	compact bool
}

func (c *call) ctx() context.Context { return c.r.Context() }

// reply writes v as JSON, or text() as plain text, per the negotiated format.
func (c *call) reply(status int, v any, text func() string) error {
	if c.f == fmtText && text != nil {
		return c.text(status, text())
	}
	return c.json(status, v)
}

// json writes v as JSON (pretty-printed unless the call is compact)
// regardless of the negotiated format.
func (c *call) json(status int, v any) error {
	marshal := core.MarshalJSONIndent
	if c.compact {
		marshal = core.MarshalJSON
	}
	b, err := marshal(v)
	if err != nil {
		return fmt.Errorf("httpapi: encode response: %w", err)
	}
	c.w.Header().Set("Content-Type", contentTypeJSON)
	c.w.WriteHeader(status)
	_, _ = c.w.Write(b)
	return nil
}

// text writes a plain-text body.
func (c *call) text(status int, s string) error {
	c.w.Header().Set("Content-Type", contentTypeText)
	c.w.WriteHeader(status)
	_, _ = c.w.Write([]byte(s))
	return nil
}

// ok writes the success envelope {"ok": msg}, or msg as text.
func (c *call) ok(status int, msg string) error {
	writeEnvelope(c.w, c.f, status, "ok", msg)
	return nil
}

// writeEnvelope writes {"<key>": msg} (pretty JSON) or msg as text.
func writeEnvelope(w http.ResponseWriter, f format, status int, key, msg string) {
	if f == fmtText {
		w.Header().Set("Content-Type", contentTypeText)
		w.WriteHeader(status)
		_, _ = w.Write([]byte(msg))
		return
	}
	b, _ := envelope(key, msg)
	w.Header().Set("Content-Type", contentTypeJSON)
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// envelope renders {"<key>": msg} as the handler's pretty JSON.
func envelope(key, msg string) ([]byte, error) {
	return core.MarshalJSONIndent(map[string]string{key: msg})
}

// ErrorBody returns the JSON body of an error answer, {"err": msg}, exactly
// as the handler writes it; for layers in front of the handler (the Lambda
// adapter) that must answer a request the handler never sees.
func ErrorBody(msg string) []byte {
	b, _ := envelope("err", msg)
	return b
}

// apiError is an error with its HTTP status and public message, produced by
// the handlers for route-specific answers (bad input, Obelisk's texts).
type apiError struct {
	status int
	msg    string
	err    error
}

func (e *apiError) Error() string {
	if e.err != nil {
		return e.msg + ": " + e.err.Error()
	}
	return e.msg
}

func (e *apiError) Unwrap() error { return e.err }

// httpErr returns an apiError with a public message.
func httpErr(status int, msg string) error { return &apiError{status: status, msg: msg} }

// badRequest returns a 400 with a formatted public message.
func badRequest(format string, args ...any) error {
	return &apiError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

// orMessage replaces the public message of err's mapping when err wraps target.
func orMessage(err, target error, status int, msg string) error {
	if errors.Is(err, target) {
		return &apiError{status: status, msg: msg, err: err}
	}
	return err
}

// retryAfterUnavailable is the Retry-After (seconds) of a 503 answered
// because the store gave up retrying contention or throttling
// (core.ErrUnavailable): nothing was written, the same request may succeed.
const retryAfterUnavailable = "1"

// errorStatus maps an error to its HTTP status and public message. This is
// the one place where core's sentinels become HTTP; the table is repeated in
// the package documentation and docs/http-api.md.
func errorStatus(err error) (int, string) {
	var (
		ae *apiError
		mb *http.MaxBytesError
		vc *core.VersionConflictError
		is *core.IllegalStateError
		uc *core.UnlockedCannotBeAppendedError
		ve *core.ValidationError
		ie *core.IDError
	)
	switch {
	case errors.As(err, &ae):
		return ae.status, ae.msg
	case errors.As(err, &mb):
		return http.StatusRequestEntityTooLarge, "request body too large"
	case errors.Is(err, core.ErrUnavailable):
		return http.StatusServiceUnavailable, "temporarily unavailable, retry later"
	case errors.Is(err, core.ErrNotImplemented):
		return http.StatusNotImplemented, "not implemented"
	case errors.As(err, &vc):
		return http.StatusConflict, vc.Error()
	case errors.Is(err, core.ErrVersionConflict):
		return http.StatusConflict, "version conflict"
	case errors.As(err, &uc):
		return http.StatusConflict, uc.Error()
	case errors.Is(err, core.ErrUnlockedCannotBeAppended):
		return http.StatusConflict, core.ErrUnlockedCannotBeAppended.Error()
	case errors.Is(err, core.ErrAlreadyFinished):
		return http.StatusConflict, "already finished"
	case errors.Is(err, core.ErrStubConflict), errors.Is(err, core.ErrConflict):
		return http.StatusConflict, "conflict"
	case errors.As(err, &is):
		return http.StatusUnprocessableEntity, is.Reason
	case errors.Is(err, core.ErrIllegalState):
		return http.StatusUnprocessableEntity, "illegal state"
	case errors.Is(err, core.ErrNotFound):
		return http.StatusNotFound, "not found"
	case errors.As(err, &ve):
		return http.StatusBadRequest, ve.Message()
	case errors.Is(err, core.ErrValidation):
		return http.StatusBadRequest, "validation failed"
	case errors.As(err, &ie):
		return http.StatusBadRequest, ie.Error()
	case errors.Is(err, core.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout, "timed out"
	case errors.Is(err, core.ErrClosed):
		return http.StatusServiceUnavailable, "database error"
	}
	return http.StatusInternalServerError, "internal server error"
}

// fail writes err mapped by errorStatus in the call's format (JSON for raw
// byte routes), logging server-side failures once, here.
func (c *call) fail(err error) {
	status, msg := errorStatus(err)
	info := infoOf(c.r)
	switch {
	case c.r.Context().Err() != nil && status >= 500:
		// The client went away; nobody reads the answer.
		c.s.log.DebugContext(c.ctx(), "request abandoned", c.s.attrs(info, slog.String(logKeyErr, err.Error()))...)
	case status >= 500 && status != http.StatusNotImplemented:
		c.s.log.ErrorContext(c.ctx(), "request failed", c.s.attrs(info, slog.Int(logKeyStatus, status), slog.String(logKeyErr, err.Error()))...)
	}
	if errors.Is(err, core.ErrUnavailable) && status == http.StatusServiceUnavailable {
		c.w.Header().Set("Retry-After", retryAfterUnavailable)
	}
	f := c.f
	if f == fmtBytes {
		f = fmtJSON
	}
	writeEnvelope(c.w, f, status, "err", msg)
}
