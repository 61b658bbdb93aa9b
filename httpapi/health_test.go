package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestHealthRoutes(t *testing.T) {
	var readyErr error
	e := newEnv(t, newMemDB(t), func(o *Options) {
		o.Authorizer = BearerToken("s3cret")
		o.Ready = func(context.Context) error { return readyErr }
	})
	t.Run("HealthzAnswersWithoutAToken", func(t *testing.T) {
		r := e.do("GET", "/healthz", nil).want(http.StatusOK)
		if !strings.Contains(r.text(), `"status": "ok"`) || r.Header().Get("Cache-Control") != "no-store" {
			t.Fatalf("body %s, headers %v", r.text(), r.Header())
		}
	})
	t.Run("ReadyzIs200WhenTheStoreIsReady", func(t *testing.T) {
		if r := e.do("GET", "/readyz", nil).want(http.StatusOK); !strings.Contains(r.text(), `"status": "ready"`) {
			t.Fatalf("body %s", r.text())
		}
	})
	t.Run("ReadyzIs503WithTheReasonWhenNot", func(t *testing.T) {
		readyErr = errors.New("sqlite: not ready: schema version 4, this build expects 3")
		defer func() { readyErr = nil }()
		r := e.do("GET", "/readyz", nil).want(http.StatusServiceUnavailable)
		if !strings.Contains(r.text(), `"status": "not ready"`) || !strings.Contains(r.text(), "schema version 4") {
			t.Fatalf("body %s", r.text())
		}
	})
	t.Run("HeadAnswersTheStatusWithoutABody", func(t *testing.T) {
		for _, path := range []string{"/healthz", "/readyz"} {
			r := e.do("HEAD", path, nil).want(http.StatusOK)
			if r.Header().Get("Content-Type") != contentTypeJSON {
				t.Fatalf("HEAD %s: headers %v", path, r.Header())
			}
		}
		readyErr = errors.New("not ready")
		defer func() { readyErr = nil }()
		e.do("HEAD", "/readyz", nil).want(http.StatusServiceUnavailable)
	})
	t.Run("OtherMethodsAreBehindTheAuthorizer", func(t *testing.T) {
		e.do("POST", "/healthz", nil).want(http.StatusUnauthorized)
	})
	t.Run("TheAPIStaysBehindTheAuthorizer", func(t *testing.T) {
		e.do("GET", "/v1/executions", nil).want(http.StatusUnauthorized)
	})
}

// recordingObserver keeps what RequestDone reports.
type recordingObserver struct {
	mu   sync.Mutex
	done []string
	key  any
}

type obsKey struct{}

func (o *recordingObserver) RequestStarted(ctx context.Context, _ *http.Request) context.Context {
	return context.WithValue(ctx, obsKey{}, "started")
}

func (o *recordingObserver) RequestDone(ctx context.Context, route string, status int, d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.key = ctx.Value(obsKey{})
	if d < 0 {
		route += " (negative duration)"
	}
	o.done = append(o.done, route+" "+http.StatusText(status))
}

func TestObserverSeesRoutePatternsAndStatuses(t *testing.T) {
	rec := &recordingObserver{}
	e := newEnv(t, newMemDB(t), func(o *Options) {
		o.Authorizer = BearerToken("s3cret")
		o.Observer = rec
	})
	auth := []string{"Authorization", "Bearer s3cret"}
	e.do("GET", "/v1/executions/E_01KBNHM5FQW81KP5Y3XMNX31K4/status", nil, auth...).want(http.StatusNotFound)
	e.do("GET", "/v1/executions", nil).want(http.StatusUnauthorized)
	e.do("GET", "/no/such/route", nil, auth...).want(http.StatusNotFound)
	e.do("GET", "/healthz", nil).want(http.StatusOK)
	e.do("GET", "/console/", nil).want(http.StatusOK)
	want := []string{
		"GET /v1/executions/{execution_id}/status Not Found", // the pattern, never the raw path
		"GET /v1/executions Unauthorized",
		" Not Found",
		"GET /healthz OK",
		"console OK",
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if strings.Join(rec.done, "\n") != strings.Join(want, "\n") {
		t.Fatalf("observed:\n%s\nwant:\n%s", strings.Join(rec.done, "\n"), strings.Join(want, "\n"))
	}
	if rec.key != "started" {
		t.Fatalf("RequestDone got a context without what RequestStarted added")
	}
}
