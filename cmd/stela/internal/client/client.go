// Package client is a small Go client of Stela's HTTP API: the public
// routes the CLI calls and the worker routes (/v1/worker/…) the benchmarks
// and example workers drive. Request and response bodies are the wire types
// httpapi exports.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/httpapi"
)

// Accept values.
const (
	JSON = "application/json"
	Text = "text/plain"
)

// Client calls one Stela server. It is safe for concurrent use.
type Client struct {
	base  string
	token string
	http  *http.Client
}

// New returns a client of the server at baseURL (e.g. http://127.0.0.1:8080)
// sending token as a bearer token when it is not empty.
func New(baseURL, token string) *Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 256
	t.MaxIdleConnsPerHost = 256
	return &Client{base: strings.TrimRight(baseURL, "/"), token: token, http: &http.Client{Transport: t}}
}

// BaseURL returns the server URL.
func (c *Client) BaseURL() string { return c.base }

// Error is a non-2xx answer: the HTTP status and the server's message (the
// `err` of a JSON error body, or the text body).
type Error struct {
	Status  int
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s (HTTP %d)", e.Message, e.Status)
}

// StatusOf returns the HTTP status of an *Error in err's chain, else 0.
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// IsUnreachable reports whether err means the server could not be reached
// (connection refused or reset, DNS failure): worth retrying, or worth a hint.
func IsUnreachable(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	return errors.As(err, &op) || errors.As(err, &dns) || errors.Is(err, io.ErrUnexpectedEOF)
}

// Response is a raw answer.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Do sends a request. body is encoded as JSON unless it is nil or []byte;
// accept is the Accept header ("" sends none). Any status is returned as is.
func (c *Client) Do(ctx context.Context, method, path string, query url.Values, body any, accept string) (*Response, error) {
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("client: encode %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", method, path, err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", JSON)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("client: read %s %s: %w", method, path, err)
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// Call is Do that turns a non-2xx answer into an *Error.
func (c *Client) Call(ctx context.Context, method, path string, query url.Values, body any, accept string) (*Response, error) {
	r, err := c.Do(ctx, method, path, query, body, accept)
	if err != nil {
		return nil, err
	}
	if r.Status < 200 || r.Status > 299 {
		return r, ErrorOf(r)
	}
	return r, nil
}

// ErrorOf builds the *Error of a non-2xx response.
func ErrorOf(r *Response) *Error {
	msg := strings.TrimSpace(string(r.Body))
	var env struct {
		Err *string `json:"err"`
	}
	if json.Unmarshal(r.Body, &env) == nil && env.Err != nil {
		msg = *env.Err
	}
	if msg == "" {
		msg = http.StatusText(r.Status)
	}
	return &Error{Status: r.Status, Message: msg}
}

// JSON calls the route with Accept: application/json and decodes a 2xx body
// into out (when out is not nil).
func (c *Client) JSON(ctx context.Context, method, path string, query url.Values, body, out any) error {
	r, err := c.Call(ctx, method, path, query, body, JSON)
	if err != nil {
		return err
	}
	if out == nil || len(r.Body) == 0 {
		return nil
	}
	if err := json.Unmarshal(r.Body, out); err != nil {
		return fmt.Errorf("client: decode %s %s: %w", method, path, err)
	}
	return nil
}

// OK calls a route answering {"ok": msg} and returns msg.
func (c *Client) OK(ctx context.Context, method, path string, query url.Values, body any) (string, error) {
	var env struct {
		OK string `json:"ok"`
	}
	err := c.JSON(ctx, method, path, query, body, &env)
	return env.OK, err
}

// ExecPath returns /v1/executions/{id}[/suffix] with the id escaped.
func ExecPath(id string, suffix string) string {
	p := "/v1/executions/" + url.PathEscape(id)
	if suffix != "" {
		p += "/" + suffix
	}
	return p
}

// --- public routes ------------------------------------------------------------------

// SubmitBody is the body of PUT /v1/executions/{id}.
type SubmitBody struct {
	FFQN   string            `json:"ffqn"`
	Params []json.RawMessage `json:"params"`
	Paused bool              `json:"paused,omitempty"`
	// ComponentType is used only by a server without deployments (default activity).
	ComponentType string `json:"component_type,omitempty"`
}

// Submit creates execution id (idempotently: an identical resubmission
// answers 200) and returns the HTTP status (201 created, 200 existed).
func (c *Client) Submit(ctx context.Context, id core.ExecutionId, body SubmitBody) (int, error) {
	if body.Params == nil {
		body.Params = []json.RawMessage{}
	}
	r, err := c.Call(ctx, http.MethodPut, ExecPath(id.String(), ""), nil, body, JSON)
	if err != nil {
		return 0, err
	}
	return r.Status, nil
}

// Status returns GET /v1/executions/{id}/status.
func (c *Client) Status(ctx context.Context, id string) (core.ExecutionWithState, json.RawMessage, error) {
	var raw json.RawMessage
	if err := c.JSON(ctx, http.MethodGet, ExecPath(id, "status"), nil, nil, &raw); err != nil {
		return core.ExecutionWithState{}, nil, err
	}
	var st core.ExecutionWithState
	if err := json.Unmarshal(raw, &st); err != nil {
		return st, raw, fmt.Errorf("client: decode status of %s: %w", id, err)
	}
	return st, raw, nil
}

// Result returns the raw RetVal JSON of a finished execution; an unfinished
// one is an *Error with status 425.
func (c *Client) Result(ctx context.Context, id string) (json.RawMessage, error) {
	r, err := c.Call(ctx, http.MethodGet, ExecPath(id, ""), nil, nil, JSON)
	if err != nil {
		return nil, err
	}
	return r.Body, nil
}

// --- worker routes -------------------------------------------------------------------

// LockPendingByFFQNs calls POST /v1/worker/lock/pending-by-ffqns.
func (c *Client) LockPendingByFFQNs(ctx context.Context, b httpapi.LockPendingBody) ([]httpapi.LockedExecutionJSON, error) {
	var out []httpapi.LockedExecutionJSON
	err := c.JSON(ctx, http.MethodPost, "/v1/worker/lock/pending-by-ffqns", nil, b, &out)
	return out, err
}

// LockOne calls POST /v1/worker/lock/one.
func (c *Client) LockOne(ctx context.Context, b httpapi.LockOneBody) (httpapi.LockedExecutionJSON, error) {
	var out httpapi.LockedExecutionJSON
	err := c.JSON(ctx, http.MethodPost, "/v1/worker/lock/one", nil, b, &out)
	return out, err
}

// Append calls POST /v1/worker/append.
func (c *Client) Append(ctx context.Context, b httpapi.AppendBody) (core.Version, error) {
	var out httpapi.NextVersionJSON
	err := c.JSON(ctx, http.MethodPost, "/v1/worker/append", nil, b, &out)
	return out.NextVersion, err
}

// AppendBatch calls POST /v1/worker/append-batch.
func (c *Client) AppendBatch(ctx context.Context, b httpapi.AppendBatchBody) (core.Version, error) {
	var out httpapi.NextVersionJSON
	err := c.JSON(ctx, http.MethodPost, "/v1/worker/append-batch", nil, b, &out)
	return out.NextVersion, err
}

// CreateChildren calls POST /v1/worker/append-batch/create-children.
func (c *Client) CreateChildren(ctx context.Context, b httpapi.CreateChildrenBody) (core.Version, error) {
	var out httpapi.NextVersionJSON
	err := c.JSON(ctx, http.MethodPost, "/v1/worker/append-batch/create-children", nil, b, &out)
	return out.NextVersion, err
}

// RespondToParent calls POST /v1/worker/append-batch/respond-to-parent.
func (c *Client) RespondToParent(ctx context.Context, b httpapi.RespondToParentBody) (core.Version, error) {
	var out httpapi.NextVersionJSON
	err := c.JSON(ctx, http.MethodPost, "/v1/worker/append-batch/respond-to-parent", nil, b, &out)
	return out.NextVersion, err
}

// NextResponses calls GET /v1/worker/executions/{id}/next-responses: the
// responses after cursor last, waiting up to wait for one to arrive.
func (c *Client) NextResponses(ctx context.Context, id core.ExecutionId, last core.ResponseCursor, wait time.Duration) ([]core.ResponseWithCursor, error) {
	q := url.Values{"last_response": {fmt.Sprint(last)}, "wait_ms": {fmt.Sprint(wait.Milliseconds())}}
	var out httpapi.ResponsesJSON
	err := c.JSON(ctx, http.MethodGet, "/v1/worker/executions/"+url.PathEscape(id.String())+"/next-responses", q, nil, &out)
	return out.Responses, err
}
