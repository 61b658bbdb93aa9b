package functions_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/functions"
	"github.com/stela-dev/stela/functions/lambdatest"
	"github.com/stela-dev/stela/httpapi"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/store/mem"
)

type fixedClock struct{ t core.Timestamp }

func (c fixedClock) Now() core.Timestamp { return c.t }

var t0 = core.TS(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))

func newStore() *store.Service {
	return store.New(mem.New(), store.Options{Clock: fixedClock{t0}})
}

func newAPI(auth httpapi.Authorizer) *functions.HTTP {
	return functions.NewAPI(newStore(), nil, httpapi.Options{Clock: fixedClock{t0}, Authorizer: auth})
}

func TestAPIRecordedEvents(t *testing.T) {
	h := newAPI(httpapi.AllowAll())
	// The cases run in order against one store: submit, then read.
	for _, tc := range []struct {
		name, file  string
		status      int
		contentType string
		body        []string // substrings of the body
	}{
		{"PutSubmitCreatesTheExecution", "submit-put.json", http.StatusCreated, "application/json", []string{`"ok": "E_01KBNHM5FQW81KP5Y3XMNX31K4"`}},
		{"RepeatedPutSubmitIsIdempotent", "submit-put.json", http.StatusOK, "application/json", []string{`"ok": "E_01KBNHM5FQW81KP5Y3XMNX31K4"`}},
		{"Base64BodyIsDecoded", "submit-post-base64.json", http.StatusCreated, "application/json", []string{`"ok": "E_`}},
		{"StatusIsPendingAfterSubmit", "status.json", http.StatusOK, "application/json", []string{`"status": "pending_at"`, `"ffqn": "testing:integration/activity.add"`}},
		{"UnknownExecutionIs404", "status-unknown.json", http.StatusNotFound, "application/json", []string{`"err": "not found"`}},
		{"MalformedPathEscapeIsAJSON400", "status-bad-escape.json", http.StatusBadRequest, "application/json", []string{`"err": "malformed request: invalid URL escape \"%zz\""`}},
		{"QueryStringReachesTheHandler", "events.json", http.StatusOK, "application/json", []string{`"created"`, `"max_version": 0`}},
		{"AcceptTextGetsText", "list-text.json", http.StatusOK, "text/plain", []string{"E_01KBNHM5FQW81KP5Y3XMNX31K4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := lambdatest.Context(t, "lambda-"+tc.name, 10*time.Second)
			resp := lambdatest.MustInvokeHTTP(t, ctx, h.Handle, "api/testdata/"+tc.file)
			if resp.StatusCode != tc.status {
				t.Fatalf("status = %d, want %d; body %s", resp.StatusCode, tc.status, resp.Body)
			}
			if got := lambdatest.Header(resp, "Content-Type"); !strings.HasPrefix(got, tc.contentType) {
				t.Errorf("content-type = %q, want %s", got, tc.contentType)
			}
			for _, want := range tc.body {
				if !strings.Contains(resp.Body, want) {
					t.Errorf("body lacks %s:\n%s", want, resp.Body)
				}
			}
			if resp.IsBase64Encoded {
				t.Errorf("a JSON/text response was base64-encoded")
			}
		})
	}

	t.Run("APIGatewayRequestIdBecomesTheRequestId", func(t *testing.T) {
		ctx := lambdatest.Context(t, "lambda-1", 10*time.Second)
		resp := lambdatest.MustInvokeHTTP(t, ctx, h.Handle, "api/testdata/status.json")
		if got, want := lambdatest.Header(resp, "X-Request-Id"), "req-status"; got != want {
			t.Errorf("X-Request-Id = %q, want %q", got, want)
		}
	})
}

func TestAPIBearerToken(t *testing.T) {
	h := newAPI(httpapi.BearerToken("s3cret"))
	ctx := lambdatest.Context(t, "lambda-auth", 10*time.Second)
	t.Run("RequestWithoutTokenIs401", func(t *testing.T) {
		resp := lambdatest.MustInvokeHTTP(t, ctx, h.Handle, "api/testdata/status.json")
		if resp.StatusCode != http.StatusUnauthorized || lambdatest.Header(resp, "WWW-Authenticate") != "Bearer" {
			t.Errorf("status = %d, WWW-Authenticate %q; want 401 Bearer", resp.StatusCode, lambdatest.Header(resp, "WWW-Authenticate"))
		}
	})
	t.Run("ConsoleIsServedWithoutToken", func(t *testing.T) {
		// The web console's page loads without the token (it then asks for
		// one); its API calls stay protected (RequestWithoutTokenIs401).
		resp := lambdatest.MustInvokeHTTP(t, ctx, h.Handle, "api/testdata/console-deep-link.json")
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(lambdatest.Header(resp, "Content-Type"), "text/html") ||
			!strings.Contains(resp.Body, "/console/static/app.js") || lambdatest.Header(resp, "Content-Security-Policy") == "" {
			t.Errorf("status = %d, content-type %q, body %.200s", resp.StatusCode, lambdatest.Header(resp, "Content-Type"), resp.Body)
		}
	})
	t.Run("RequestWithTokenIsServed", func(t *testing.T) {
		resp := lambdatest.MustInvokeHTTP(t, ctx, h.Handle, "api/testdata/status-with-token.json")
		if resp.StatusCode != http.StatusNotFound { // authorised; the execution does not exist in this store
			t.Errorf("status = %d, want 404 (past auth); body %s", resp.StatusCode, resp.Body)
		}
	})
}

func TestWorkerFunctions(t *testing.T) {
	svc := newStore()
	opts := httpapi.Options{Clock: fixedClock{t0}, Authorizer: httpapi.AllowAll()}
	api := functions.NewAPI(svc, nil, opts)
	lock := functions.NewWorker(svc, nil, opts, functions.LockRoutes)
	appendFn := functions.NewWorker(svc, nil, opts, functions.AppendRoutes)
	ctx := lambdatest.Context(t, "lambda-worker", 10*time.Second)
	if resp := lambdatest.MustInvokeHTTP(t, ctx, api.Handle, "api/testdata/submit-put.json"); resp.StatusCode != http.StatusCreated {
		t.Fatalf("submit: %d %s", resp.StatusCode, resp.Body)
	}

	t.Run("LockFunctionLocksThePendingExecution", func(t *testing.T) {
		resp := lambdatest.MustInvokeHTTP(t, ctx, lock.Handle, "lock/testdata/lock-pending-by-ffqns.json")
		var locked []struct {
			NextVersion int `json:"next_version"`
		}
		if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(resp.Body), &locked) != nil || len(locked) != 1 || locked[0].NextVersion != 2 {
			t.Fatalf("lock: %d %s", resp.StatusCode, resp.Body)
		}
	})
	t.Run("LockFunctionDoesNotServeOtherRoutes", func(t *testing.T) {
		resp := lambdatest.MustInvokeHTTP(t, ctx, lock.Handle, "lock/testdata/list-executions.json")
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(resp.Body, `"err": "not found"`) {
			t.Fatalf("list on lock function: %d %s", resp.StatusCode, resp.Body)
		}
	})
	t.Run("AppendFunctionDoesNotServeLockRoutes", func(t *testing.T) {
		resp := lambdatest.MustInvokeHTTP(t, ctx, appendFn.Handle, "append/testdata/lock-pending-by-ffqns.json")
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("lock on append function: %d %s", resp.StatusCode, resp.Body)
		}
	})
	t.Run("AppendFunctionFinishesTheLockedExecution", func(t *testing.T) {
		resp := lambdatest.MustInvokeHTTP(t, ctx, appendFn.Handle, "append/testdata/append-finished.json")
		var next struct {
			NextVersion int `json:"next_version"`
		}
		if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(resp.Body), &next) != nil || next.NextVersion != 2 {
			t.Fatalf("append: %d %s", resp.StatusCode, resp.Body)
		}
		st, err := svc.GetPendingState(ctx, mustID(t, "E_01KBNHM5FQW81KP5Y3XMNX31K4"))
		if err != nil || st.PendingState.Status() != "finished" {
			t.Fatalf("state after append = %v, %v; want finished", st.PendingState.Status(), err)
		}
	})
}

func mustID(tb testing.TB, s string) core.ExecutionId {
	tb.Helper()
	id, err := core.ParseExecutionId(s)
	if err != nil {
		tb.Fatal(err)
	}
	return id
}
