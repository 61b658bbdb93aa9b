package httpapi

import (
	"context"
	"crypto/rand"
	"errors"
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

// Defaults and bounds of the handler (the routes' own limits are the
// contract's: package wire).
const (
	// DefaultMaxBodyBytes is the request body limit when Options.MaxBodyBytes is 0.
	DefaultMaxBodyBytes = 1 << 20
	// DefaultFollowWait is the long-poll bound when Options.FollowWait is 0.
	DefaultFollowWait = 20 * time.Second
	// MaxFollowWait is the largest accepted Options.FollowWait: API Gateway HTTP
	// APIs end every request after 30 s, so a long poll must return before that.
	MaxFollowWait = 29 * time.Second
	// DefaultUpgradeCheckWait is Options.UpgradeCheckWait when it is 0:
	// twice worker.DefaultUpgradeCheckPoll, so that an idle unpinned
	// worker's slow poll takes the check in time.
	DefaultUpgradeCheckWait = 20 * time.Second
	// DefaultMaxClockSkew is Options.MaxClockSkew when it is 0.
	DefaultMaxClockSkew = 5 * time.Minute
	// DefaultMaxEventAge is Options.MaxEventAge when it is 0.
	DefaultMaxEventAge = time.Hour
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
	// Ready backs GET /readyz (typically store.Service.Ready): nil error
	// answers 200, an error 503 with its text. Nil: /readyz answers 200 like
	// /healthz. Both are served without the Authorizer (see ServeHTTP).
	Ready func(ctx context.Context) error
	// MaxClockSkew bounds how far ahead of Clock's now the event times a
	// worker route accepts (created_at of locks, events, created
	// executions, responses and log rows; current_time) may lie, and
	// MaxEventAge how far behind: beyond either the request is 400 and
	// nothing is written (docs/http-api.md §1, "Event times"). MaxClockSkew
	// also bounds how far ahead a sweep's `at` may be (a sweep never runs
	// later than now). Defaults DefaultMaxClockSkew and DefaultMaxEventAge;
	// negative: unbounded on that side (a sweep still never runs later than
	// now).
	MaxClockSkew time.Duration
	MaxEventAge  time.Duration
	// UpgradeCheckWait bounds how long PUT /v1/executions/{id}/upgrade
	// (without skip_determinism_check) waits for a worker of the new
	// component digest to take its replay check; then the check is
	// cancelled and the answer is 404 "new component not found". Values
	// above MaxFollowWait are clamped to it (API Gateway's 30 s). Default
	// DefaultUpgradeCheckWait.
	UpgradeCheckWait time.Duration
	// Observer, when set, sees every request (package obs: metrics by route
	// pattern, status and latency; spans). Nil costs nothing.
	Observer Observer
	// Draining, when set, is closed as the server begins to shut down: the
	// long polls in progress (a lock's or next-responses' wait_ms, a
	// result's wait) and those that start later answer at once with what
	// they have, as if their wait had elapsed, so that a graceful stop
	// (http.Server.Shutdown) does not wait for them. Writes in flight are
	// not affected.
	Draining <-chan struct{}
}

// Observer receives every request the handler serves: RequestStarted before
// anything else (it may return a context carrying a span, which the
// handlers and the store then see), RequestDone once it is answered, with
// the route pattern that served it ("GET /v1/executions/{execution_id}";
// "" when none matched, "console" for the web console's files), the status
// and the duration. Implementations must be safe for concurrent use.
type Observer interface {
	RequestStarted(ctx context.Context, r *http.Request) context.Context
	RequestDone(ctx context.Context, route string, status int, d time.Duration)
}

// Health routes, served before authorization: they reveal nothing but
// whether the process is up and the store ready, and probes (load
// balancers, orchestrators) carry no token.
const (
	HealthzPath = "/healthz"
	ReadyzPath  = "/readyz"
)

// pollContext is the context of one long poll of at most d under ctx (the
// request's): done at d, or once the server drains (Options.Draining).
func (s *server) pollContext(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	wctx, cancel := context.WithTimeout(ctx, d)
	if s.drained == nil {
		return wctx, cancel
	}
	stop := context.AfterFunc(s.drained, cancel)
	return wctx, func() {
		stop()
		cancel()
	}
}

// draining reports whether the server began to shut down (Options.Draining).
func (s *server) draining() bool { return s.drained != nil && s.drained.Err() != nil }

// pollEnded reports whether err, from a long poll under pollContext, is
// its wait ending (its bound elapsed, or the server drains) rather than a
// failure; ctx is the request's.
func (s *server) pollEnded(ctx context.Context, err error) bool {
	return ctx.Err() == nil && (errors.Is(err, core.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) || s.draining())
}

// readyTimeout bounds the store check of /readyz.
const readyTimeout = 5 * time.Second

// server is the http.Handler returned by New.
type server struct {
	db          core.DbExternalApi
	cas         core.Cas
	clock       core.Clock
	log         *slog.Logger
	auth        Authorizer
	maxBody     int64
	followWait  time.Duration
	upgradeWait time.Duration
	maxSkew     time.Duration
	maxEventAge time.Duration
	entropy     *lockedReader
	sweep       func(ctx context.Context, at core.Timestamp) (any, error)
	ready       func(ctx context.Context) error
	obs         Observer
	drained     context.Context // done once Options.Draining is closed; nil without it
	mux         *http.ServeMux
	openapiDoc  []byte
	console     http.Handler
}

// New returns the handler serving Stela's whole HTTP API (see the package
// documentation) over db and cas. cas may be nil; the routes reading blobs
// then answer 501.
func New(db core.DbExternalApi, cas core.Cas, opts Options) http.Handler {
	s := &server{
		db: db, cas: cas, clock: opts.Clock, log: opts.Logger, auth: opts.Authorizer,
		maxBody: opts.MaxBodyBytes, followWait: opts.FollowWait, sweep: opts.Sweep,
		ready: opts.Ready, obs: opts.Observer, maxSkew: opts.MaxClockSkew, maxEventAge: opts.MaxEventAge,
		upgradeWait: opts.UpgradeCheckWait,
	}
	if opts.Draining != nil {
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			<-opts.Draining
			cancel()
		}()
		s.drained = ctx
	}
	if s.upgradeWait <= 0 {
		s.upgradeWait = DefaultUpgradeCheckWait
	}
	s.upgradeWait = min(s.upgradeWait, MaxFollowWait)
	if s.maxSkew == 0 {
		s.maxSkew = DefaultMaxClockSkew
	}
	if s.maxEventAge == 0 {
		s.maxEventAge = DefaultMaxEventAge
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

// StatusClientClosedRequest is the status recorded (in the access log, the
// observer's metrics and spans) for a request whose client went away before
// it was answered — nginx's 499 "client closed request": the client
// cancelled it (a worker stopping during its lock long poll) or its
// connection closed. The server did not fail, so it is not counted as a 5xx.
const StatusClientClosedRequest = 499

// recordedStatus is the status to record for r answered with status: 499
// instead of a 5xx the handler wrote (or nothing) because r's context was
// cancelled, i.e. its client went away. A deadline (a Lambda invocation's
// end) stays a server error.
func recordedStatus(r *http.Request, status int) int {
	if (status == 0 || status >= 500) && errors.Is(r.Context().Err(), context.Canceled) {
		return StatusClientClosedRequest
	}
	return status
}

// ServeHTTP runs the middleware chain: request id, observer, access log
// and panic recovery, the health routes and the web console (package
// console: /, /console, /console/…), both served without authorization,
// then authorization, body limit, routing.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	info := &reqInfo{id: s.requestID(r)}
	ctx := context.WithValue(r.Context(), reqInfoKey{}, info)
	if s.obs != nil {
		ctx = s.obs.RequestStarted(ctx, r)
	}
	r = r.WithContext(ctx)
	w.Header().Set(headerRequestID, info.id)
	sw := &statusWriter{ResponseWriter: w}
	defer func() {
		if s.obs != nil {
			status := sw.status
			if status == 0 {
				status = http.StatusOK // net/http answers 200 for a handler that wrote nothing
			}
			s.obs.RequestDone(r.Context(), info.route, recordedStatus(r, status), time.Since(start))
		}
	}()
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
			slog.String(logKeyRoute, info.route), slog.Int(logKeyStatus, recordedStatus(r, sw.status)),
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
	if (r.Method == http.MethodGet || r.Method == http.MethodHead) && (r.URL.Path == HealthzPath || r.URL.Path == ReadyzPath) {
		info.route = r.Method + " " + r.URL.Path
		s.serveHealth(sw, r)
		return
	}
	h, pattern := s.mux.Handler(r)
	info.route = pattern
	if err := s.auth.Authorize(r); err != nil {
		s.log.WarnContext(r.Context(), "request denied", s.attrs(info, slog.String(logKeyErr, err.Error()))...)
		writeUnauthorized(sw)
		return
	}
	if r.Body != nil {
		r.Body = http.MaxBytesReader(sw, r.Body, s.maxBody)
	}
	if pattern == "" {
		s.serveUnmatched(sw, r, h)
		return
	}
	s.mux.ServeHTTP(sw, r)
}

func (s *server) attrs(info *reqInfo, extra ...any) []any {
	out := []any{slog.String(logKeyRequestID, info.id)}
	if info.executionID != "" {
		out = append(out, slog.String(logKeyExecutionID, info.executionID))
	}
	return append(out, extra...)
}

// serveHealth answers GET /healthz (the process is up) and GET /readyz
// (Options.Ready: the store is reachable and its schema current); HEAD the
// same without the body (probes that only look at the status).
func (s *server) serveHealth(w http.ResponseWriter, r *http.Request) {
	type answer struct {
		Status string `json:"status"`
		Err    string `json:"err,omitempty"`
	}
	out, status := answer{Status: "ok"}, http.StatusOK
	if r.URL.Path == ReadyzPath {
		out.Status = "ready"
		if s.ready != nil {
			ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
			err := s.ready(ctx)
			cancel()
			if err != nil {
				out, status = answer{Status: "not ready", Err: err.Error()}, http.StatusServiceUnavailable
				s.log.WarnContext(r.Context(), "not ready", s.attrs(infoOf(r), slog.String(logKeyErr, err.Error()))...)
			}
		}
	}
	b, _ := core.MarshalJSONIndent(out)
	w.Header().Set("Content-Type", contentTypeJSON)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b)
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
