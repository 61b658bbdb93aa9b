package httpapi

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"sync"
	"time"

	"github.com/stela-dev/stela/console"
	"github.com/stela-dev/stela/core"
)

// Limits and defaults of the handler.
const (
	// DefaultMaxBodyBytes is the request body limit when Options.MaxBodyBytes is 0.
	DefaultMaxBodyBytes = 1 << 20
	// DefaultFollowWait is the long-poll bound when Options.FollowWait is 0.
	DefaultFollowWait = 20 * time.Second
	// MaxFollowWait is the largest accepted Options.FollowWait: API Gateway HTTP
	// APIs end every request after 30 s, so a long poll must return before that.
	MaxFollowWait = 29 * time.Second
	// MaxPageLength caps `length` on every listing route (larger values are clamped).
	MaxPageLength = 100
	// DefaultPageLength is the `length` of listing routes when absent.
	DefaultPageLength = 20
	// MaxLockBatch caps `batch_size` of the worker lock routes.
	MaxLockBatch = 25
	// MaxAppendBatch caps the events (plus created children) of one worker append.
	MaxAppendBatch = 90
	// MaxLogBatch caps the rows of one worker log append.
	MaxLogBatch = 1000
	// MaxBacktraceBatch caps the backtraces of one worker backtrace append.
	MaxBacktraceBatch = 90
	// MaxCancellingBatch caps `batch_size` of GET /v1/worker/cancelling.
	MaxCancellingBatch = 100
)

// Options configure New. The zero value is usable except for Authorizer,
// which fails closed: a nil Authorizer rejects every request (use AllowAll()
// explicitly for an unauthenticated dev server).
type Options struct {
	// Clock provides "now" for created_at, paused_at and similar fields.
	// Default: the wall clock.
	Clock core.Clock
	// Logger receives one line per request plus details of server errors.
	// Default: discard.
	Logger *slog.Logger
	// Authorizer checks every API request before routing (openapi.json
	// included); the web console's static files (console.Owns) are served
	// without it.
	Authorizer Authorizer
	// MaxBodyBytes bounds request bodies (413 beyond). Default 1 MiB.
	MaxBodyBytes int64
	// FollowWait bounds the long polls (`follow=true`, worker `wait_ms`).
	// Default 20 s; values above MaxFollowWait are clamped to it.
	FollowWait time.Duration
	// Entropy supplies the random bits of generated execution ids.
	// Default crypto/rand. It need not be safe for concurrent use.
	Entropy io.Reader
	// Sweep backs POST /v1/worker/sweep (typically store.Sweep bound to the
	// store); its result is returned as JSON. Nil: the route answers 501.
	Sweep func(ctx context.Context, at core.Timestamp) (any, error)
}

// server is the http.Handler returned by New.
type server struct {
	db         core.DbExternalApi
	cas        core.Cas
	clock      core.Clock
	log        *slog.Logger
	auth       Authorizer
	maxBody    int64
	followWait time.Duration
	entropy    *lockedReader
	sweep      func(ctx context.Context, at core.Timestamp) (any, error)
	mux        *http.ServeMux
	openapiDoc []byte
	console    http.Handler
}

// New returns the handler serving Stela's whole HTTP API (see the package
// documentation) over db and cas. cas may be nil; the routes reading blobs
// then answer 501.
func New(db core.DbExternalApi, cas core.Cas, opts Options) http.Handler {
	s := &server{
		db: db, cas: cas, clock: opts.Clock, log: opts.Logger, auth: opts.Authorizer,
		maxBody: opts.MaxBodyBytes, followWait: opts.FollowWait, sweep: opts.Sweep,
	}
	if s.clock == nil {
		s.clock = wallClock{}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.auth == nil {
		s.auth = denyAll{}
	}
	if s.maxBody <= 0 {
		s.maxBody = DefaultMaxBodyBytes
	}
	if s.followWait <= 0 {
		s.followWait = DefaultFollowWait
	}
	s.followWait = min(s.followWait, MaxFollowWait)
	entropy := opts.Entropy
	if entropy == nil {
		entropy = rand.Reader
	}
	s.entropy = &lockedReader{r: entropy}
	doc, err := buildOpenAPI(routes)
	if err != nil {
		panic(err) // the document is static; a failure is a programming error caught by the tests
	}
	s.openapiDoc = doc
	s.console = console.Handler()
	s.mux = http.NewServeMux()
	for i := range routes {
		rt := &routes[i]
		s.mux.Handle(rt.pattern(), s.routeHandler(rt))
	}
	return s
}

type wallClock struct{}

func (wallClock) Now() core.Timestamp { return core.TS(time.Now()) }

type lockedReader struct {
	mu sync.Mutex
	r  io.Reader
}

func (l *lockedReader) Read(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Read(p)
}

// Log attribute keys.
const (
	logKeyRequestID   = core.LogKeyRequestID
	logKeyExecutionID = core.LogKeyExecutionID
	logKeyMethod      = "method"
	logKeyPath        = core.LogKeyPath
	logKeyRoute       = "route"
	logKeyStatus      = "status"
	logKeyDuration    = "duration_ms"
	logKeyErr         = core.LogKeyErr
)

// headerRequestID carries the request id in both directions.
const headerRequestID = "X-Request-Id"

// reqInfo is the per-request state shared by the middleware and the handlers.
type reqInfo struct {
	id          string
	route       string
	executionID string
}

type reqInfoKey struct{}

func infoOf(r *http.Request) *reqInfo {
	if i, ok := r.Context().Value(reqInfoKey{}).(*reqInfo); ok {
		return i
	}
	return &reqInfo{}
}

// setExecutionID records the execution a request is about, for the logs.
func setExecutionID(r *http.Request, id fmt.Stringer) {
	infoOf(r).executionID = id.String()
}

var validRequestID = regexp.MustCompile(`^[A-Za-z0-9._:/+=-]{1,128}$`)

// requestID returns the client's X-Request-Id if it is sane, else a new one.
func (s *server) requestID(r *http.Request) string {
	if id := r.Header.Get(headerRequestID); validRequestID.MatchString(id) {
		return id
	}
	var b [10]byte
	if _, err := io.ReadFull(s.entropy, b[:]); err != nil {
		return fmt.Sprintf("req-%d", time.Now().UnixNano())
	}
	return fmt.Sprintf("req-%x", b)
}

// statusWriter remembers the status code for the access log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// ServeHTTP runs the middleware chain: request id, access log and panic
// recovery, the web console (package console: /, /console, /console/…,
// served without authorization), authorization, body limit, routing.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	info := &reqInfo{id: s.requestID(r)}
	r = r.WithContext(context.WithValue(r.Context(), reqInfoKey{}, info))
	w.Header().Set(headerRequestID, info.id)
	sw := &statusWriter{ResponseWriter: w}
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.log.ErrorContext(r.Context(), "handler panicked", s.attrs(info, slog.Any(logKeyErr, p))...)
			if sw.status == 0 {
				writeEnvelope(sw, fmtJSON, http.StatusInternalServerError, "err", "internal server error")
			}
		}
		s.log.InfoContext(r.Context(), "http request", s.attrs(info,
			slog.String(logKeyMethod, r.Method), slog.String(logKeyPath, r.URL.Path),
			slog.String(logKeyRoute, info.route), slog.Int(logKeyStatus, sw.status),
			slog.Int64(logKeyDuration, time.Since(start).Milliseconds()))...)
	}()

	// The web console's files hold no data and must load before the user
	// has entered a token, so they skip the Authorizer; every API route
	// below stays behind it.
	if console.Owns(r.URL.Path) {
		info.route = "console"
		s.console.ServeHTTP(sw, r)
		return
	}
	if err := s.auth.Authorize(r); err != nil {
		s.log.WarnContext(r.Context(), "request denied", s.attrs(info, slog.String(logKeyErr, err.Error()))...)
		writeUnauthorized(sw)
		return
	}
	if r.Body != nil {
		r.Body = http.MaxBytesReader(sw, r.Body, s.maxBody)
	}
	h, pattern := s.mux.Handler(r)
	if pattern == "" {
		s.serveUnmatched(sw, r, h)
		return
	}
	info.route = pattern
	s.mux.ServeHTTP(sw, r)
}

func (s *server) attrs(info *reqInfo, extra ...any) []any {
	out := []any{slog.String(logKeyRequestID, info.id)}
	if info.executionID != "" {
		out = append(out, slog.String(logKeyExecutionID, info.executionID))
	}
	return append(out, extra...)
}

// serveUnmatched renders the mux's own 404 / 405 answers as JSON.
func (s *server) serveUnmatched(w http.ResponseWriter, r *http.Request, h http.Handler) {
	rec := &headerRecorder{header: http.Header{}}
	h.ServeHTTP(rec, r)
	status := rec.status
	if status == 0 {
		status = http.StatusNotFound
	}
	msg := "not found"
	if status == http.StatusMethodNotAllowed {
		msg = "method not allowed"
		w.Header().Set("Allow", rec.header.Get("Allow"))
	}
	writeEnvelope(w, fmtJSON, status, "err", msg)
}

// headerRecorder captures what the mux's fallback handlers write.
type headerRecorder struct {
	header http.Header
	status int
}

func (h *headerRecorder) Header() http.Header         { return h.header }
func (h *headerRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (h *headerRecorder) WriteHeader(code int) {
	if h.status == 0 {
		h.status = code
	}
}

// now returns the handler clock's time.
func (s *server) now() core.Timestamp { return s.clock.Now() }

// newExecutionID generates a top-level execution id (E_ + ULID of now).
func (s *server) newExecutionID() (core.ExecutionId, error) {
	ms := s.now().UnixMilli()
	if ms < 0 {
		ms = 0
	}
	id, err := core.NewExecutionId(uint64(ms), s.entropy)
	if err != nil {
		return core.ExecutionId{}, fmt.Errorf("httpapi: generate execution id: %w", err)
	}
	return id, nil
}
