package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/wire"
)

// Accept values of Do.
const (
	JSON = "application/json"
	Text = "text/plain"
)

// DefaultMaxWait bounds one long-poll request (API Gateway ends requests
// after 30 s; the server clamps waits to its own follow bound).
const DefaultMaxWait = 20 * time.Second

// RetryPolicy is how failed requests are retried (see the package
// documentation for which failures and which requests).
type RetryPolicy struct {
	// MaxAttempts is the total number of attempts (1 disables retries).
	MaxAttempts int
	// BaseDelay is the backoff before the first retry; it doubles per retry.
	BaseDelay time.Duration
	// MaxDelay caps one backoff (and a server's Retry-After).
	MaxDelay time.Duration
	// Refused is how long a request whose connection is refused (nothing
	// was sent: a server restarting, or not up yet) is tried again beyond
	// MaxAttempts, counted from the first refusal, with the same backoff
	// (at most MaxDelay, or 250 ms when MaxDelay is 0). 0: refusals count as
	// attempts like any failure.
	Refused time.Duration
}

// DefaultRetry is the policy of New: 4 attempts, 100 ms doubling up to 2 s,
// each backoff drawn uniformly from [0, bound) (full jitter), and refused
// connections tried for 10 s, so that a Submit or an Await rides over a
// restart of the server.
var DefaultRetry = RetryPolicy{MaxAttempts: 4, BaseDelay: 100 * time.Millisecond, MaxDelay: 2 * time.Second, Refused: 10 * time.Second}

// Client calls one Stela server. It is safe for concurrent use.
type Client struct {
	base    *url.URL
	direct  []directRoutes
	http    *http.Client
	token   string
	signer  Signer
	retry   RetryPolicy
	maxWait time.Duration
	// writes coalesces the version-guarded writes (coalesce.go).
	writes *coalescer
	// noEager is set once the server refused create-children's `lock`
	// field (it predates eager dispatch): eager requests then go without it.
	noEager atomic.Bool
	// noEagerStart is set once the server answered POST
	// /v1/worker/create-locked with 404 or 405 (it predates eager start):
	// CreateLocked then creates without a lock.
	noEagerStart atomic.Bool
	// noEagerBatch is set once the server refused create-locked's
	// `requests` field (it predates batches): CreateLockedMany then sends
	// one CreateLocked per request.
	noEagerBatch atomic.Bool
	// noFireDelay is set once the server answered POST
	// /v1/worker/delays/{id}/fire with 404 or 405 (it predates the route):
	// FireDelay then answers not_due at once and the sweep fires delays.
	noFireDelay atomic.Bool
	// noFireAppend is set once the server answered POST
	// /v1/worker/append-batch/fire-delay with 404 or 405 (it predates the
	// route): AppendBatchFiringDelay then fires and appends in two requests.
	noFireAppend atomic.Bool
}

// Option configures New.
type Option func(*Client) error

// WithToken sends `Authorization: Bearer <token>` (no header when empty).
func WithToken(token string) Option {
	return func(c *Client) error { c.token = token; return nil }
}

// SigV4Service is the AWS signing name of API Gateway's IAM authorization:
// the service a Signer signs requests to the base URL for.
const SigV4Service = "execute-api"

// FunctionURLService is the AWS signing name of a Lambda function URL's IAM
// authorization: the service a Signer signs requests for that
// WithFunctionURLs sends to a function URL.
const FunctionURLService = "lambda"

// Signer authenticates each attempt of a request before it is sent
// (WithSigner). Package client/sigv4 implements it with AWS Signature
// Version 4 for IAM-authorised deployments.
type Signer interface {
	// Sign adds the request's credentials to req; body is its body (nil:
	// none) and service the AWS signing name of the endpoint it goes to
	// (SigV4Service, or FunctionURLService for a function URL).
	Sign(ctx context.Context, req *http.Request, body []byte, service string) error
}

// WithSigner signs every attempt with s (client/sigv4 for IAM). It excludes
// WithToken: both use the Authorization header.
func WithSigner(s Signer) Option {
	return func(c *Client) error {
		if s == nil {
			return errors.New("client: nil Signer")
		}
		c.signer = s
		return nil
	}
}

// WithHTTPClient sends the requests with h (default: a client with a
// 256-connection pool and no overall timeout; contexts bound the calls).
func WithHTTPClient(h *http.Client) Option {
	return func(c *Client) error {
		if h == nil {
			return errors.New("client: nil http.Client")
		}
		c.http = h
		return nil
	}
}

// WithRetry replaces DefaultRetry.
func WithRetry(p RetryPolicy) Option {
	return func(c *Client) error {
		if p.MaxAttempts < 1 || p.BaseDelay < 0 || p.MaxDelay < p.BaseDelay || p.Refused < 0 {
			return fmt.Errorf("client: invalid retry policy %+v", p)
		}
		c.retry = p
		return nil
	}
}

// WithMaxWait bounds the wait one long-poll request asks the server for
// (default DefaultMaxWait); longer waits are made of several requests.
func WithMaxWait(d time.Duration) Option {
	return func(c *Client) error {
		if d <= 0 {
			return errors.New("client: max wait must be positive")
		}
		c.maxWait = d
		return nil
	}
}

// directRoutes are routes sent to a function URL instead of the base URL.
type directRoutes struct {
	prefixes []string
	base     *url.URL
}

// WithFunctionURLs sends the worker lock routes (wire.WorkerLockRoutes)
// to lockURL and the worker write routes (wire.WorkerWriteRoutes) to
// appendURL: the Lambda function URLs of a deployment's lock and append
// functions (infra outputs LockFunctionUrl and AppendFunctionUrl), which
// cost no API Gateway request. With a Signer (client/sigv4) those requests
// are signed for service "lambda" (FunctionURLService), the others for API
// Gateway. An empty URL leaves its routes on the base URL.
func WithFunctionURLs(lockURL, appendURL string) Option {
	return func(c *Client) error {
		for _, r := range []struct {
			raw      string
			prefixes []string
		}{{lockURL, wire.WorkerLockRoutes}, {appendURL, wire.WorkerWriteRoutes}} {
			if r.raw == "" {
				continue
			}
			u, err := url.Parse(strings.TrimRight(r.raw, "/"))
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return fmt.Errorf("client: invalid function URL %q: want http(s)://host[:port][/prefix]", r.raw)
			}
			c.direct = append(c.direct, directRoutes{prefixes: r.prefixes, base: u})
		}
		return nil
	}
}

// endpoint returns the base URL of path and the SigV4 service to sign for.
func (c *Client) endpoint(path string) (*url.URL, string) {
	for _, d := range c.direct {
		for _, p := range d.prefixes {
			if strings.HasPrefix(path, p) {
				return d.base, FunctionURLService
			}
		}
	}
	return c.base, SigV4Service
}

// New returns a client of the server at baseURL (e.g. http://127.0.0.1:8080,
// or an API Gateway stage URL; a path prefix is kept).
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: invalid base URL %q: want http(s)://host[:port][/prefix]", baseURL)
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 256
	t.MaxIdleConnsPerHost = 256
	c := &Client{base: u, http: &http.Client{Transport: t}, retry: DefaultRetry, maxWait: DefaultMaxWait}
	c.writes = newCoalescer(c)
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, err
		}
	}
	if c.signer != nil && c.token != "" {
		return nil, errors.New("client: WithToken and a Signer (SigV4) are exclusive (both use the Authorization header)")
	}
	return c, nil
}

// BaseURL returns the server URL.
func (c *Client) BaseURL() string { return c.base.String() }

// --- requests -------------------------------------------------------------------------

// safety says which failures a request may be retried after.
type safety uint8

const (
	// unsafe: retried only when it certainly was not processed (no
	// connection, 429).
	unsafe safety = iota
	// idempotent: also retried after ambiguous failures.
	idempotent
)

// request is one API call.
type request struct {
	method string
	path   string // escaped, relative to the base URL
	query  url.Values
	body   []byte // JSON; nil = no body
	accept string
	safety safety
}

// Response is a raw answer of Do.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
	// Ambiguous is true when an earlier attempt failed in a way that may have
	// reached the store (the answer belongs to a retry).
	Ambiguous bool
}

func newRequest(method, path string, query url.Values, body any, s safety) (*request, error) {
	r := &request{method: method, path: path, query: query, accept: JSON, safety: s}
	if body != nil {
		raw, err := core.MarshalJSON(body)
		if err != nil {
			return nil, fmt.Errorf("client: encode %s %s: %w", method, path, err)
		}
		r.body = raw
	}
	return r, nil
}

// Do sends a request with the client's auth and retry policy and returns the
// answer whatever its status. body is encoded as JSON with core's encoder
// unless it is nil or []byte; accept is the Accept header ("" sends none).
// GET and HEAD are retried as idempotent, other methods only when they
// certainly were not processed (the typed methods know better).
func (c *Client) Do(ctx context.Context, method, path string, query url.Values, body any, accept string) (*Response, error) {
	s := unsafe
	if method == http.MethodGet || method == http.MethodHead {
		s = idempotent
	}
	var r *request
	if raw, ok := body.([]byte); ok {
		r = &request{method: method, path: path, query: query, body: raw, safety: s}
	} else {
		var err error
		if r, err = newRequest(method, path, query, body, s); err != nil {
			return nil, err
		}
	}
	r.accept = accept
	return c.send(ctx, r)
}

// Call is Do that turns a non-2xx answer into an *Error (the answer is
// still returned).
func (c *Client) Call(ctx context.Context, method, path string, query url.Values, body any, accept string) (*Response, error) {
	resp, err := c.Do(ctx, method, path, query, body, accept)
	if err != nil {
		return nil, err
	}
	if resp.Status < 200 || resp.Status > 299 {
		return resp, errorOf(&request{method: method, path: path}, resp)
	}
	return resp, nil
}

// send runs the attempts of r.
func (c *Client) send(ctx context.Context, r *request) (*Response, error) {
	ambiguous := false
	var refusedSince time.Time // the first refused attempt of a run of them
	refusals := 0
	var refusal error // the last refusal, kept in the error when ctx ends meanwhile
	ctxErr := func(err error) error {
		if refusal != nil {
			return fmt.Errorf("client: %s %s: %w (the server refused the connection: %w)", r.method, r.path, err, refusal)
		}
		return fmt.Errorf("client: %s %s: %w", r.method, r.path, err)
	}
	for attempt := 1; ; attempt++ {
		resp, err := c.attempt(ctx, r)
		last := attempt >= c.retry.MaxAttempts
		var retryAfter time.Duration
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return nil, ctxErr(ctx.Err())
			}
			unsent := notSent(err)
			if refused(err) && c.retry.Refused > 0 {
				refusal = err
				if refusedSince.IsZero() {
					refusedSince = time.Now()
				}
				if time.Since(refusedSince) < c.retry.Refused {
					refusals++
					if err := sleep(ctx, c.refusedBackoff(refusals)); err != nil {
						return nil, ctxErr(err)
					}
					attempt-- // not counted against MaxAttempts
					continue
				}
			}
			if last || (!unsent && r.safety != idempotent) {
				return nil, fmt.Errorf("client: %s %s: %w", r.method, r.path, err)
			}
			ambiguous = ambiguous || !unsent
		case resp.Status == http.StatusTooManyRequests:
			if last {
				resp.Ambiguous = ambiguous
				return resp, nil
			}
			retryAfter = parseRetryAfter(resp.Header)
		case resp.Status == http.StatusBadGateway || resp.Status == http.StatusServiceUnavailable || resp.Status == http.StatusGatewayTimeout:
			if last || r.safety != idempotent {
				resp.Ambiguous = ambiguous
				return resp, nil
			}
			ambiguous = true
			retryAfter = parseRetryAfter(resp.Header)
		default:
			resp.Ambiguous = ambiguous
			return resp, nil
		}
		if err := sleep(ctx, max(c.backoff(attempt), min(retryAfter, c.retry.MaxDelay))); err != nil {
			return nil, fmt.Errorf("client: %s %s: %w", r.method, r.path, err)
		}
	}
}

// backoff returns the full-jitter delay before retry number attempt (1-based).
func (c *Client) backoff(attempt int) time.Duration {
	bound := c.retry.BaseDelay << min(attempt-1, 30)
	if bound <= 0 || bound > c.retry.MaxDelay {
		bound = c.retry.MaxDelay
	}
	if bound <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(bound)))
}

func parseRetryAfter(h http.Header) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(h.Get("Retry-After")))
	if err != nil || n < 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}

// notSent reports whether err proves the request never reached the server:
// the connection could not be established.
// refused reports whether err is a refused connection: nothing was sent,
// and the server is likely restarting.
func refused(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial" && errors.Is(err, syscall.ECONNREFUSED)
}

// refusedBackoff is the delay before trying a refused request again:
// backoff's, and at least a few milliseconds, so that a run of refusals
// does not spin.
func (c *Client) refusedBackoff(attempt int) time.Duration {
	d := c.backoff(attempt)
	if c.retry.MaxDelay == 0 {
		d = time.Duration(rand.Int64N(int64(250 * time.Millisecond)))
	}
	return max(d, 5*time.Millisecond)
}

func notSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// attempt sends r once.
func (c *Client) attempt(ctx context.Context, r *request) (*Response, error) {
	base, service := c.endpoint(r.path)
	u := base.String() + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	var rd io.Reader
	if r.body != nil {
		rd = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, rd)
	if err != nil {
		return nil, err
	}
	if r.body != nil {
		req.Header.Set("Content-Type", JSON)
	}
	if r.accept != "" {
		req.Header.Set("Accept", r.accept)
	}
	switch {
	case c.token != "":
		req.Header.Set("Authorization", "Bearer "+c.token)
	case c.signer != nil:
		if err := c.signer.Sign(ctx, req, r.body, service); err != nil {
			return nil, err
		}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// call sends r and decodes a 2xx JSON answer into out (when not nil); other
// answers become errors (see errorOf).
func (c *Client) call(ctx context.Context, r *request, out any) (*Response, error) {
	resp, err := c.send(ctx, r)
	if err != nil {
		return nil, err
	}
	if resp.Status < 200 || resp.Status > 299 {
		return resp, errorOf(r, resp)
	}
	if out != nil && len(resp.Body) > 0 {
		if err := decodeAnswer(resp.Body, out); err != nil {
			return resp, fmt.Errorf("client: decode %s %s: %w", r.method, r.path, err)
		}
	}
	return resp, nil
}

// decodeAnswer decodes a JSON answer into out (a pointer to a zero value)
// as json.Unmarshal does. An answer that is valid JSON and that core's
// fast decoder decides alone — no unknown, duplicate, escaped or
// case-folded key, nothing it does not parse exactly as encoding/json —
// is decoded member by member in one pass (core.DecodeValidatedAnswer,
// which gives json.Unmarshal's value); anything else, an answer of a newer
// server with a field this client does not know among them, goes to
// json.Unmarshal, which answers it as before.
func decodeAnswer(body []byte, out any) error {
	if _, ok := core.ValidJSONDepth(body); ok && core.DecodeValidatedAnswer(body, out) {
		if answerHook != nil {
			answerHook(body, out, true)
		}
		return nil
	}
	err := json.Unmarshal(body, out)
	if answerHook != nil && err == nil {
		answerHook(body, out, false)
	}
	return err
}

// answerHook, set only by tests (export_test.go), sees every answer
// decoded: its body, the value and whether the fast decoder took it.
var answerHook func(body []byte, out any, fast bool)

// get calls a GET route (idempotent) and decodes its JSON answer.
func (c *Client) get(ctx context.Context, path string, query url.Values, out any) error {
	_, err := c.call(ctx, &request{method: http.MethodGet, path: path, query: query, accept: JSON, safety: idempotent}, out)
	return err
}

// send JSON body to a route and decode the answer.
func (c *Client) post(ctx context.Context, method, path string, body any, s safety, out any) (*Response, error) {
	r, err := newRequest(method, path, nil, body, s)
	if err != nil {
		return nil, err
	}
	return c.call(ctx, r, out)
}

// okMessage decodes {"ok": msg}.
type okMessage struct {
	OK string `json:"ok"`
}

// --- paths ---------------------------------------------------------------------------

// ExecPath returns /v1/executions/{id}[/suffix] with the id escaped.
func ExecPath(id string, suffix string) string {
	p := wire.Path(wire.PathExecution, id)
	if suffix != "" {
		p += "/" + suffix
	}
	return p
}

// --- waits ------------------------------------------------------------------------------

// waitSlice returns how long the next long-poll request may ask the server
// to wait: until shortly before ctx's deadline (so the answer arrives before
// ctx ends), at most max; ok is false when too little time is left.
func waitSlice(ctx context.Context, limit time.Duration) (time.Duration, bool) {
	deadline, has := ctx.Deadline()
	if !has {
		return limit, true
	}
	left := time.Until(deadline)
	margin := min(max(left/10, 5*time.Millisecond), time.Second)
	w := min(left-margin, limit)
	return w, w >= time.Millisecond
}

// timeoutErr is the error of a wait that ended because ctx was done, as the
// store reports it.
func timeoutErr(ctx context.Context) error {
	err := ctx.Err()
	if err == nil {
		err = context.DeadlineExceeded
	}
	return fmt.Errorf("%w: %w", core.ErrTimeout, err)
}
