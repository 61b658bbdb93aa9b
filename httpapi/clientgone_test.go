package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/wire"
)

// TestClientGoneIsRecordedAs499: a worker that stops while its lock long
// poll waits cancels the request; the server's answer then reaches nobody.
// That is the client's doing, not a server error: the observer (the
// stela_http_requests_total metric) and the access log record 499 "client
// closed request", never 500, and nothing is logged at ERROR. (Every worker
// exit used to count one 500.)
func TestClientGoneIsRecordedAs499(t *testing.T) {
	rec := &statusObserver{}
	logs := &bytes.Buffer{}
	e := newEnv(t, newMemDB(t), func(o *Options) {
		o.Observer = rec
		o.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	body, err := core.MarshalJSON(wire.LockPendingBody{LockParams: wire.LockParams{
		ComponentID: core.ComponentId{ComponentType: core.ComponentTypeActivity, Name: "w"},
		ExecutorID:  testExecutor, RunID: testRun, LockExpiresAt: t0.Add(time.Minute),
		RetryConfig: core.RetryConfigZero()}, BatchSize: 1, FFQNs: []core.FunctionFqn{ffqnActivity}, WaitMs: 5000})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the worker went away: its request's context is done
	req := httptest.NewRequest(http.MethodPost, "/v1/worker/lock/pending-by-ffqns", bytes.NewReader(body)).WithContext(ctx)
	req.Header.Set("Content-Type", "application/json")
	e.h.ServeHTTP(httptest.NewRecorder(), req)

	rec.mu.Lock()
	got := strings.Join(rec.done, "\n")
	rec.mu.Unlock()
	if want := "POST /v1/worker/lock/pending-by-ffqns 499"; got != want {
		t.Errorf("observed %q, want %q", got, want)
	}
	var access map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["level"] == "ERROR" {
			t.Errorf("a request the client abandoned is logged at ERROR: %s", line)
		}
		if m["msg"] == "http request" {
			access = m
		}
	}
	if access == nil || access["status"] != float64(499) {
		t.Errorf("access log %v, want status 499\nlogs:\n%s", access, logs)
	}
}

// statusObserver keeps the route and status RequestDone reports.
type statusObserver struct {
	mu   sync.Mutex
	done []string
}

func (o *statusObserver) RequestStarted(ctx context.Context, _ *http.Request) context.Context {
	return ctx
}

func (o *statusObserver) RequestDone(_ context.Context, route string, status int, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.done = append(o.done, fmt.Sprintf("%s %d", route, status))
}
