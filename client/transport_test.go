package client_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/client/sigv4"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/httpapi"
)

// fastRetry keeps retry tests quick.
var fastRetry = client.WithRetry(client.RetryPolicy{MaxAttempts: 4, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond})

// TestErrorMapping: every status the server documents comes back as the core
// error it stands for, with the status and message kept in *client.Error.
func TestErrorMapping(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		check  func(error) bool
	}{
		{404, `{"err":"not found"}`, func(err error) bool { return errors.Is(err, core.ErrNotFound) }},
		{409, `{"err":"version conflict: expected: 7, got: 5"}`, func(err error) bool {
			var vc *core.VersionConflictError
			return errors.As(err, &vc) && vc.Expected == 7 && vc.Requested == 5 && errors.Is(err, core.ErrVersionConflict)
		}},
		{409, `{"err":"already finished"}`, func(err error) bool { return errors.Is(err, core.ErrAlreadyFinished) }},
		{409, `{"err":"conflict"}`, func(err error) bool {
			return errors.Is(err, core.ErrConflict) && !errors.Is(err, core.ErrAlreadyFinished)
		}},
		{409, "{\"err\":\"illegal state: `Unlocked` cannot be appended in state paused\"}", func(err error) bool {
			var u *core.UnlockedCannotBeAppendedError
			return errors.As(err, &u) && u.State == "paused" && errors.Is(err, core.ErrUnlockedCannotBeAppended)
		}},
		{422, `{"err":"cannot pause, execution is already paused"}`, func(err error) bool {
			var is *core.IllegalStateError
			return errors.As(err, &is) && is.Reason == "cannot pause, execution is already paused"
		}},
		{422, "{\"err\":\"invalid request body: missing field `req`\"}", func(err error) bool {
			var ve *core.ValidationError
			return errors.As(err, &ve) && !errors.Is(err, core.ErrIllegalState)
		}},
		{400, `{"err":"invalid expiry date"}`, func(err error) bool {
			var ve *core.ValidationError
			return errors.As(err, &ve) && ve.Reason == "invalid expiry date"
		}},
		{413, `{"err":"request body too large"}`, func(err error) bool { return errors.Is(err, core.ErrValidation) }},
		{425, `{"err":"not finished yet"}`, func(err error) bool { return errors.Is(err, client.ErrNotFinished) }},
		{501, `{"err":"not implemented"}`, func(err error) bool { return errors.Is(err, core.ErrNotImplemented) }},
		{401, "missing or invalid API token", func(err error) bool { return errors.Is(err, client.ErrUnauthorized) }},
		{403, `{"message":"Forbidden"}`, func(err error) bool { return errors.Is(err, client.ErrUnauthorized) }},
		{503, `{"err":"database error"}`, func(err error) bool { return errors.Is(err, client.ErrUnavailable) && client.IsRetryable(err) }},
		{504, `{"err":"timed out"}`, func(err error) bool { return errors.Is(err, client.ErrUnavailable) && errors.Is(err, core.ErrTimeout) }},
		{500, `{"err":"internal server error"}`, func(err error) bool { return !client.IsRetryable(err) && errors.Unwrap(err) == nil }},
	} {
		t.Run(fmt.Sprintf("%d %s", tc.status, tc.body), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			c := newClient(t, srv.URL, client.WithRetry(client.RetryPolicy{MaxAttempts: 1}))
			_, err := c.GetPendingState(context.Background(), newID(t))
			var ce *client.Error
			if !errors.As(err, &ce) || ce.Status != tc.status || client.StatusOf(err) != tc.status || ce.Path == "" {
				t.Fatalf("err %v (%T), want a *client.Error with status %d", err, err, tc.status)
			}
			if !tc.check(err) {
				t.Fatalf("err %v does not map as expected (cause %v)", err, errors.Unwrap(err))
			}
			if !strings.Contains(ce.Error(), fmt.Sprintf("(HTTP %d)", tc.status)) {
				t.Fatalf("message %q", ce.Error())
			}
		})
	}
}

// faultyHandler answers the first `fail` requests matching `match` with
// `status` (after passing them to next when `commit`), then passes every
// request to next. It counts the matching requests.
type faultyHandler struct {
	next   http.Handler
	match  string
	status int
	commit bool
	fail   int32
	hits   atomic.Int32
}

func (f *faultyHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.URL.Path, f.match) {
		f.next.ServeHTTP(w, r)
		return
	}
	if n := f.hits.Add(1); n <= f.fail {
		if f.commit {
			f.next.ServeHTTP(httptest.NewRecorder(), r) // the store commits; the answer is lost
		}
		w.WriteHeader(f.status)
		_, _ = io.WriteString(w, `{"err":"bad gateway"}`)
		return
	}
	f.next.ServeHTTP(w, r)
}

// faultyServer serves the real handler behind a faultyHandler.
func faultyServer(t *testing.T, f http.Handler) *client.Client {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return newClient(t, srv.URL, fastRetry)
}

// lockedWorkflow creates and locks a workflow (next version 2).
func lockedWorkflow(t *testing.T, s storeMethods) core.ExecutionId {
	t.Helper()
	ctx := context.Background()
	now := core.TS(time.Now())
	id := newID(t)
	if _, err := s.Create(ctx, createReq(now, id, ffqnWorkflow, core.ComponentTypeWorkflow, nil)); err != nil {
		t.Fatal(err)
	}
	exr, _ := core.NewExecutorId(1, bytes.NewReader(make([]byte, 10)))
	run, _ := core.NewRunId(1, bytes.NewReader(make([]byte, 10)))
	if _, err := s.LockOne(ctx, core.LockRequest{CreatedAt: now, ComponentID: core.ComponentId{ComponentType: core.ComponentTypeWorkflow},
		ExecutorID: exr, RunID: run, LockExpiresAt: now.Add(time.Minute)}, id, 1); err != nil {
		t.Fatal(err)
	}
	return id
}

func TestRetries(t *testing.T) {
	ctx := context.Background()
	t.Run("GetIsRetriedOn503UntilItSucceeds", func(t *testing.T) {
		svc := newService(t)
		f := &faultyHandler{next: handlerOf(svc), match: "/v1/executions/", status: 503, fail: 2}
		c := faultyServer(t, f)
		id := lockedWorkflow(t, svc)
		if st, err := c.GetPendingState(ctx, id); err != nil || st.ExecutionID != id {
			t.Fatalf("GetPendingState = %+v, %v", st, err)
		}
		if f.hits.Load() != 3 {
			t.Fatalf("%d attempts, want 3", f.hits.Load())
		}
	})
	t.Run("RetriesStopAtMaxAttempts", func(t *testing.T) {
		f := &faultyHandler{next: http.NotFoundHandler(), match: "/", status: 504, fail: 100}
		c := faultyServer(t, f)
		_, err := c.GetPendingState(ctx, newID(t))
		if !errors.Is(err, client.ErrUnavailable) || f.hits.Load() != 4 {
			t.Fatalf("err %v after %d attempts, want ErrUnavailable after 4", err, f.hits.Load())
		}
	})
	t.Run("LockIsNotRetriedAfterAnAmbiguousFailure", func(t *testing.T) {
		svc := newService(t)
		f := &faultyHandler{next: handlerOf(svc), match: "/v1/worker/lock/", status: 502, fail: 1}
		c := faultyServer(t, f)
		_, err := c.LockPendingByFFQNs(ctx, activityLock(), []core.FunctionFqn{ffqnActivity})
		if !errors.Is(err, client.ErrUnavailable) || f.hits.Load() != 1 {
			t.Fatalf("err %v after %d attempts, want ErrUnavailable after 1", err, f.hits.Load())
		}
	})
	t.Run("TooManyRequestsIsRetriedEvenForALock", func(t *testing.T) {
		svc := newService(t)
		f := &faultyHandler{next: handlerOf(svc), match: "/v1/worker/lock/", status: 429, fail: 2}
		c := faultyServer(t, f)
		locked, err := c.LockPendingByFFQNs(ctx, activityLock(), []core.FunctionFqn{ffqnActivity})
		if err != nil || len(locked) != 0 || f.hits.Load() != 3 {
			t.Fatalf("%v, %v after %d attempts, want an empty lock after 3", locked, err, f.hits.Load())
		}
	})
	t.Run("ConnectionRefusedIsRetriedEvenForALock", func(t *testing.T) {
		svc := newService(t)
		srv := httptest.NewServer(handlerOf(svc))
		defer srv.Close()
		rt := &refusingTransport{next: http.DefaultTransport, refuse: 2}
		c := newClient(t, srv.URL, fastRetry, client.WithHTTPClient(&http.Client{Transport: rt}))
		if _, err := c.LockPendingByFFQNs(ctx, activityLock(), []core.FunctionFqn{ffqnActivity}); err != nil {
			t.Fatal(err)
		}
		if rt.calls.Load() != 3 {
			t.Fatalf("%d attempts, want 3", rt.calls.Load())
		}
	})
	t.Run("RefusedConnectionsRideOverARestart", func(t *testing.T) {
		// A server restarting refuses connections for a while: more
		// refusals than MaxAttempts, within Refused, still succeed (a
		// Create: nothing was sent, so even a POST is safe to repeat).
		svc := newService(t)
		srv := httptest.NewServer(handlerOf(svc))
		defer srv.Close()
		for _, tc := range []struct {
			refused time.Duration
			ok      bool
		}{{time.Minute, true}, {0, false}} {
			rt := &refusingTransport{next: http.DefaultTransport, refuse: 10, errno: true}
			c := newClient(t, srv.URL, client.WithRetry(client.RetryPolicy{MaxAttempts: 4, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond, Refused: tc.refused}),
				client.WithHTTPClient(&http.Client{Transport: rt}))
			_, err := c.Create(ctx, createReq(core.TS(time.Now()), newID(t), ffqnActivity, core.ComponentTypeActivity, nil))
			switch {
			case tc.ok && (err != nil || rt.calls.Load() != 11):
				t.Fatalf("Refused %s: %v after %d attempts, want success after 11", tc.refused, err, rt.calls.Load())
			case !tc.ok && (err == nil || rt.calls.Load() != 4):
				t.Fatalf("Refused 0: %v after %d attempts, want the refusal after 4 (MaxAttempts)", err, rt.calls.Load())
			}
		}
	})
	t.Run("RefusalsEndAfterTheRefusedWindow", func(t *testing.T) {
		rt := &refusingTransport{next: http.DefaultTransport, refuse: 1 << 30, errno: true}
		c := newClient(t, "http://127.0.0.1:1", client.WithRetry(client.RetryPolicy{MaxAttempts: 1, MaxDelay: 5 * time.Millisecond, Refused: 50 * time.Millisecond}),
			client.WithHTTPClient(&http.Client{Transport: rt}))
		_, err := c.GetPendingState(ctx, newID(t))
		if !errors.Is(err, syscall.ECONNREFUSED) || rt.calls.Load() < 2 {
			t.Fatalf("%v after %d attempts, want the refusal after several", err, rt.calls.Load())
		}
	})
	t.Run("ADeadlineDuringRefusalsKeepsTheRefusal", func(t *testing.T) {
		// The caller's deadline ends the refusals first: the error is
		// both, so that IsUnreachable still tells what happened.
		rt := &refusingTransport{next: http.DefaultTransport, refuse: 1 << 30, errno: true}
		c := newClient(t, "http://127.0.0.1:1", client.WithRetry(client.RetryPolicy{MaxAttempts: 1, MaxDelay: 5 * time.Millisecond, Refused: time.Hour}),
			client.WithHTTPClient(&http.Client{Transport: rt}))
		dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		_, err := c.GetPendingState(dctx, newID(t))
		if !errors.Is(err, context.DeadlineExceeded) || !client.IsUnreachable(err) || !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("%v, want the deadline and the refusal", err)
		}
	})
	t.Run("ARealClosedPortIsARefusal", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		c := newClient(t, "http://"+addr, client.WithRetry(client.RetryPolicy{MaxAttempts: 1, MaxDelay: 5 * time.Millisecond, Refused: 30 * time.Millisecond}))
		if _, err := c.GetPendingState(ctx, newID(t)); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("%v, want a refused connection", err)
		}
	})
	t.Run("CommittedAppendWhoseAnswerWasLostSucceeds", func(t *testing.T) {
		svc := newService(t)
		f := &faultyHandler{next: handlerOf(svc), match: "/v1/worker/append-batch", status: 502, fail: 1, commit: true}
		c := faultyServer(t, f)
		id := lockedWorkflow(t, svc)
		now := core.TS(time.Now())
		next, err := c.AppendBatch(ctx, now, []core.AppendRequest{
			hist(now, &core.Persist{Value: core.Bytes{1, 2}, Kind: core.PersistKind{Type: "execution_id"}}),
			{CreatedAt: now, Event: &core.Finished{Retval: okString("x")}},
		}, id, 2)
		if err != nil || next != 3 {
			t.Fatalf("AppendBatch = %d, %v; want 3 (the Finished version) after the lost answer", next, err)
		}
		if l, _ := svc.Get(ctx, id); len(l.Events) != 4 || f.hits.Load() != 2 {
			t.Fatalf("%d events after %d attempts, want 4 after 2 (written once)", len(l.Events), f.hits.Load())
		}
	})
	t.Run("AnotherWritersEventIsStillAConflict", func(t *testing.T) {
		svc := newService(t)
		id := lockedWorkflow(t, svc)
		now := core.TS(time.Now())
		real := handlerOf(svc)
		var lost atomic.Bool
		c := faultyServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v1/worker/append" && lost.CompareAndSwap(false, true) {
				// Another writer wins version 2 while this attempt's answer is lost.
				_, _ = svc.Append(ctx, id, 2, hist(now, &core.Persist{Value: core.Bytes{9}, Kind: core.PersistKind{Type: "execution_id"}}))
				w.WriteHeader(http.StatusBadGateway)
				return
			}
			real.ServeHTTP(w, r)
		}))
		_, err := c.Append(ctx, id, 2, hist(now, &core.Persist{Value: core.Bytes{1}, Kind: core.PersistKind{Type: "execution_id"}}))
		var vc *core.VersionConflictError
		if !errors.As(err, &vc) || vc.Expected != 3 || vc.Requested != 2 {
			t.Fatalf("err %v, want the version conflict", err)
		}
	})
	t.Run("CommittedCreateWhoseAnswerWasLostSucceeds", func(t *testing.T) {
		svc := newService(t)
		f := &faultyHandler{next: handlerOf(svc), match: "/v1/worker/create", status: 504, fail: 1, commit: true}
		c := faultyServer(t, f)
		req := createReq(core.TS(time.Now()), newID(t), ffqnActivity, core.ComponentTypeActivity, nil)
		req.Paused = true
		if v, err := c.Create(ctx, req); err != nil || v != 2 {
			t.Fatalf("Create = %d, %v; want 2", v, err)
		}
		if _, err := c.Create(ctx, req); !errors.Is(err, core.ErrConflict) {
			t.Fatalf("a second Create: %v, want ErrConflict", err)
		}
	})
	t.Run("DeadlinesAreHonoured", func(t *testing.T) {
		block := make(chan struct{})
		defer close(block)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-block:
			case <-r.Context().Done():
			}
		}))
		defer srv.Close()
		c := newClient(t, srv.URL)
		dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := c.GetPendingState(dctx, newID(t))
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
			t.Fatalf("err %v after %v, want the deadline", err, time.Since(start))
		}
	})
	t.Run("BackoffStopsAtTheDeadline", func(t *testing.T) {
		f := &faultyHandler{next: http.NotFoundHandler(), match: "/", status: 503, fail: 100}
		srv := httptest.NewServer(f)
		defer srv.Close()
		c := newClient(t, srv.URL, client.WithRetry(client.RetryPolicy{MaxAttempts: 10, BaseDelay: time.Hour, MaxDelay: time.Hour}))
		dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := c.GetPendingState(dctx, newID(t))
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
			t.Fatalf("err %v after %v, want the deadline", err, time.Since(start))
		}
	})
}

func activityLock() core.LockRequest {
	return core.LockRequest{BatchSize: 1, ComponentID: core.ComponentId{ComponentType: core.ComponentTypeActivity}, LockExpiresAt: core.TS(time.Now().Add(time.Minute))}
}

// refusingTransport fails the first `refuse` round trips as a refused dial.
type refusingTransport struct {
	next   http.RoundTripper
	refuse int32
	errno  bool // refuse with ECONNREFUSED (a server restarting), else another dial error
	calls  atomic.Int32
}

func (r *refusingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if r.calls.Add(1) <= r.refuse {
		if r.errno {
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
		}
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	}
	return r.next.RoundTrip(req)
}

func TestTokenAuth(t *testing.T) {
	svc := newService(t)
	url := serve(t, svc, func(o *httpapi.Options) { o.Authorizer = httpapi.BearerToken("s3cret") })
	id := lockedWorkflow(t, svc)
	if _, err := newClient(t, url).GetPendingState(context.Background(), id); !errors.Is(err, client.ErrUnauthorized) || client.StatusOf(err) != 401 {
		t.Fatalf("without a token: %v, want 401", err)
	}
	if _, err := newClient(t, url, client.WithToken("wrong")).GetPendingState(context.Background(), id); client.StatusOf(err) != 401 {
		t.Fatalf("with a wrong token: %v, want 401", err)
	}
	if st, err := newClient(t, url, client.WithToken("s3cret")).GetPendingState(context.Background(), id); err != nil || st.ExecutionID != id {
		t.Fatalf("with the token: %+v, %v", st, err)
	}
}

// sigV4Verifier checks each request's SigV4 signature as API Gateway does:
// it re-signs the request's signed headers, path, query and body hash with
// the expected credentials and compares. Failures answer 403.
type sigV4Verifier struct {
	next    http.Handler
	creds   aws.Credentials
	region  string
	service string // default execute-api
	mu      sync.Mutex
	seen    []string // Authorization headers that verified
}

func (v *sigV4Verifier) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := v.verify(r); err != nil {
		w.WriteHeader(http.StatusForbidden)
		_, _ = fmt.Fprintf(w, `{"message":%q}`, err.Error())
		return
	}
	v.next.ServeHTTP(w, r)
}

func (v *sigV4Verifier) verify(r *http.Request) error {
	service := v.service
	if service == "" {
		service = "execute-api"
	}
	auth := r.Header.Get("Authorization")
	scope := "Credential=" + v.creds.AccessKeyID + "/"
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 ") || !strings.Contains(auth, scope) ||
		!strings.Contains(auth, "/"+v.region+"/"+service+"/aws4_request") {
		return fmt.Errorf("bad Authorization %q", auth)
	}
	if v.creds.SessionToken != "" && r.Header.Get("X-Amz-Security-Token") != v.creds.SessionToken {
		return errors.New("missing session token")
	}
	_, signed, _ := strings.Cut(auth, "SignedHeaders=")
	signed, _, _ = strings.Cut(signed, ",")
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	sum := sha256.Sum256(body)
	check, _ := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	for _, h := range strings.Split(signed, ";") {
		if h != "host" && h != "x-amz-date" && h != "x-amz-security-token" {
			check.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	if err := v4.NewSigner().SignHTTP(context.Background(), v.creds, check, hex.EncodeToString(sum[:]), service, v.region, at); err != nil {
		return err
	}
	if check.Header.Get("Authorization") != auth {
		return fmt.Errorf("signature mismatch:\n got  %s\n want %s", auth, check.Header.Get("Authorization"))
	}
	v.mu.Lock()
	v.seen = append(v.seen, auth)
	v.mu.Unlock()
	return nil
}

// static provides fixed credentials.
func static(c aws.Credentials) aws.CredentialsProvider {
	return aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return c, nil })
}

func TestSigV4(t *testing.T) {
	ctx := context.Background()
	creds := aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", SessionToken: "session-token"}
	svc := newService(t)
	v := &sigV4Verifier{next: handlerOf(svc), creds: creds, region: "eu-west-1"}
	srv := httptest.NewServer(v)
	defer srv.Close()
	provider := static(creds)

	c := newClient(t, srv.URL, sigv4.With(aws.Config{Credentials: provider, Region: "eu-west-1"}, ""))
	id := lockedWorkflow(t, svc)
	// A GET with a query and a derived id in the path, and POSTs with bodies.
	js := core.GeneratedJoinSetId(1)
	now := core.TS(time.Now())
	child := core.NewChildExecutionId(id, js, 1)
	if _, err := c.AppendBatchCreateNewExecution(ctx, now, []core.AppendRequest{
		hist(now, &core.JoinSetCreate{JoinSetID: js}),
		hist(now, &core.JoinSetRequestEvent{JoinSetID: js, Request: &core.ChildExecutionRequest{ChildExecutionID: core.ExecutionIdDerived{ExecutionId: child}, TargetFFQN: ffqnActivity, Params: core.Params{}}}),
	}, id, 2, []core.CreateRequest{createReq(now, child, ffqnActivity, core.ComponentTypeActivity, &core.Parent{ExecutionID: id, JoinSetID: js})}, nil); err != nil {
		t.Fatal(err)
	}
	if d, err := c.ReadHistory(ctx, id, 2, 0); err != nil || len(d.Events) != 2 {
		t.Fatalf("ReadHistory = %+v, %v", d, err)
	}
	if st, err := c.GetPendingState(ctx, child); err != nil || st.ExecutionID != child {
		t.Fatalf("GetPendingState(child) = %+v, %v", st, err)
	}
	if len(v.seen) != 3 {
		t.Fatalf("%d verified requests, want 3", len(v.seen))
	}

	// The verifier rejects a wrong secret, and retries are signed afresh.
	wrong := newClient(t, srv.URL, sigv4.WithCredentials(static(aws.Credentials{AccessKeyID: creds.AccessKeyID, SecretAccessKey: "not-the-secret", SessionToken: creds.SessionToken}), "eu-west-1"))
	if _, err := wrong.GetPendingState(ctx, id); !errors.Is(err, client.ErrUnauthorized) || client.StatusOf(err) != http.StatusForbidden {
		t.Fatalf("wrong secret: %v, want 403", err)
	}
	// The SDK's default chain: here, the environment.
	t.Setenv("AWS_ACCESS_KEY_ID", creds.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", creds.SecretAccessKey)
	t.Setenv("AWS_SESSION_TOKEN", creds.SessionToken)
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	t.Setenv("AWS_PROFILE", "")
	chain := newClient(t, srv.URL, sigv4.WithDefaultCredentials("eu-west-1"))
	if st, err := chain.GetPendingState(ctx, id); err != nil || st.ExecutionID != id {
		t.Fatalf("default chain: %+v, %v", st, err)
	}
	if _, err := client.New(srv.URL, sigv4.With(aws.Config{}, "eu-west-1")); err == nil {
		t.Fatal("SigV4 without credentials must be rejected")
	}
	if _, err := client.New(srv.URL, client.WithToken("t"), sigv4.WithCredentials(provider, "eu-west-1")); err == nil {
		t.Fatal("a token and SigV4 together must be rejected")
	}
}

// With WithFunctionURLs, the lock routes go to the lock function's URL and
// the write routes to the append function's, signed for service lambda;
// every other route stays on the API, signed for execute-api.
func TestFunctionURLs(t *testing.T) {
	ctx := context.Background()
	creds := aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"}
	svc := newService(t)
	servers := map[string]*sigV4Verifier{}
	urls := map[string]string{}
	for _, name := range []string{"api", "lock", "append"} {
		v := &sigV4Verifier{next: handlerOf(svc), creds: creds, region: "eu-west-1", service: "lambda"}
		if name == "api" {
			v.service = "execute-api"
		}
		srv := httptest.NewServer(v)
		t.Cleanup(srv.Close)
		servers[name], urls[name] = v, srv.URL
	}
	c := newClient(t, urls["api"], sigv4.WithCredentials(static(creds), "eu-west-1"),
		client.WithFunctionURLs(urls["lock"], urls["append"]+"/"))
	id := newID(t)
	now := core.TS(time.Now())
	if _, err := c.Create(ctx, createReq(now, id, ffqnActivity, core.ComponentTypeActivity, nil)); err != nil {
		t.Fatal(err)
	}
	exr, _ := core.NewExecutorId(uint64(now.UnixMilli()), nil)
	run, _ := core.NewRunId(uint64(now.UnixMilli()), nil)
	req := core.LockRequest{BatchSize: 1, PendingAtOrSooner: now, CreatedAt: now,
		ComponentID: core.ComponentId{ComponentType: core.ComponentTypeActivity, Name: "c", ComponentDigest: testDigest},
		ExecutorID:  exr, RunID: run, LockExpiresAt: now.Add(time.Minute), RetryConfig: core.RetryConfigZero()}
	le, err := c.LockOne(ctx, req, id, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Append(ctx, id, le.NextVersion, core.AppendRequest{CreatedAt: core.TS(time.Now()), Event: &core.Finished{Retval: core.RetOk(nil)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetPendingState(ctx, id); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int{"api": 2, "lock": 1, "append": 1} {
		if got := len(servers[name].seen); got != want {
			t.Errorf("%s received %d verified requests, want %d", name, got, want)
		}
	}
	if _, err := client.New(urls["api"], client.WithFunctionURLs("ftp://x", "")); err == nil {
		t.Error("an invalid function URL was accepted")
	}
}

func TestLongPolls(t *testing.T) {
	ctx := context.Background()
	svc := newService(t)
	// The server waits at most 100 ms per request: the client asks again.
	c := newClient(t, serve(t, svc, func(o *httpapi.Options) { o.FollowWait = 100 * time.Millisecond }))
	now := func() core.Timestamp { return core.TS(time.Now()) }
	lockReq := core.LockRequest{BatchSize: 5, ComponentID: core.ComponentId{ComponentType: core.ComponentTypeActivity},
		LockExpiresAt: core.TS(time.Now().Add(time.Minute))}
	t.Run("LockPendingWaitIsWokenByNewWork", func(t *testing.T) {
		id := newID(t)
		go func() {
			time.Sleep(300 * time.Millisecond)
			_, _ = svc.Create(ctx, createReq(now(), id, ffqnActivity, core.ComponentTypeActivity, nil))
		}()
		start := time.Now()
		locked, err := c.LockPendingWait(ctx, lockReq, client.ByFFQNs(ffqnActivity), 5*time.Second)
		if err != nil || len(locked) != 1 || locked[0].ExecutionID != id {
			t.Fatalf("LockPendingWait = %+v, %v", locked, err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("woken after %v", d)
		}
	})
	t.Run("LockPendingWaitReturnsEmptyAfterTheWait", func(t *testing.T) {
		start := time.Now()
		locked, err := c.LockPendingWait(ctx, lockReq, client.ByComponentDigest(), 250*time.Millisecond)
		if err != nil || len(locked) != 0 || time.Since(start) < 200*time.Millisecond {
			t.Fatalf("LockPendingWait = %+v, %v after %v", locked, err, time.Since(start))
		}
	})
	t.Run("SubscribeOutlastsTheServersBound", func(t *testing.T) {
		wf := lockedWorkflow(t, svc)
		js := core.GeneratedJoinSetId(1)
		child := core.NewChildExecutionId(wf, js, 1)
		if _, err := svc.AppendBatchCreateNewExecution(ctx, now(), []core.AppendRequest{
			hist(now(), &core.JoinSetCreate{JoinSetID: js}),
			hist(now(), &core.JoinSetRequestEvent{JoinSetID: js, Request: &core.ChildExecutionRequest{ChildExecutionID: core.ExecutionIdDerived{ExecutionId: child}, TargetFFQN: ffqnStub, Params: core.Params{}}}),
		}, wf, 2, []core.CreateRequest{createReq(now(), child, ffqnStub, core.ComponentTypeActivityStub, &core.Parent{ExecutionID: wf, JoinSetID: js})}, nil); err != nil {
			t.Fatal(err)
		}
		go func() {
			time.Sleep(350 * time.Millisecond)
			_ = core.StubExecution(ctx, svc, core.ExecutionIdDerived{ExecutionId: child}, wf, js, now(), okString("late"))
		}()
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		rs, err := c.SubscribeToNextResponses(wctx, wf, 0)
		if err != nil || len(rs) != 1 {
			t.Fatalf("SubscribeToNextResponses = %+v, %v", rs, err)
		}
		rv, err := c.WaitForFinishedResult(wctx, child)
		if err != nil || !rv.Equal(okString("late")) {
			t.Fatalf("WaitForFinishedResult = %+v, %v", rv, err)
		}
	})
}

// handlerOf is the real handler over svc, without auth.
func handlerOf(svc core.DbExternalApi) http.Handler {
	return httpapi.New(svc, nil, httpapi.Options{Authorizer: httpapi.AllowAll()})
}
