package functions_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stela-dev/stela/functions"
	"github.com/stela-dev/stela/functions/lambdatest"
	"github.com/stela-dev/stela/httpapi"
	"github.com/stela-dev/stela/obs"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/store/mem"
	"github.com/stela-dev/stela/timers"
)

// instrumented is an observed store with the telemetry of one function
// writing its EMF lines to out.
func instrumented(function string) (*store.Service, *obs.Observer, *functions.Telemetry, *bytes.Buffer) {
	m := obs.NewMetrics()
	o := obs.NewObserver(m, nil)
	svc := store.New(mem.New(), store.Options{Clock: fixedClock{t0}, Observer: o})
	out := &bytes.Buffer{}
	return svc, o, &functions.Telemetry{Metrics: m, Out: out, Namespace: "Stela/Test", Function: function}, out
}

func mustParseEMF(t *testing.T, out *bytes.Buffer) []obs.EMFDocument {
	t.Helper()
	docs, err := obs.ParseEMF(bytes.NewReader(out.Bytes()))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(docs) == 0 {
		t.Fatal("no EMF line written")
	}
	for _, d := range docs {
		if d.Namespace != "Stela/Test" {
			t.Fatalf("namespace %q", d.Namespace)
		}
	}
	return docs
}

func TestAPIFunctionWritesEMFOncePerInvocation(t *testing.T) {
	svc, o, tel, out := instrumented("stela-api")
	h := functions.Instrument(tel, functions.NewAPI(svc, nil, httpapi.Options{Clock: fixedClock{t0},
		Authorizer: httpapi.AllowAll(), Observer: o}).Handle)

	ctx := lambdatest.Context(t, "req-submit", 10*time.Second)
	if resp := lambdatest.MustInvokeHTTP(t, ctx, h, "api/testdata/submit-put.json"); resp.StatusCode != http.StatusCreated {
		t.Fatalf("submit: %d %s", resp.StatusCode, resp.Body)
	}
	docs := mustParseEMF(t, out)
	for _, c := range []struct {
		name  string
		count bool
		where []string
		want  float64
	}{
		{"ExecutionsCreated", false, nil, 1},
		{"HTTPRequests", false, []string{"Route", "PUT /v1/executions/{execution_id}", "StatusClass", "2xx", "Code", "201"}, 1},
		{"HTTPLatency", true, []string{"Route", "PUT /v1/executions/{execution_id}"}, 1},
		{"StoreCommits", false, []string{"Op", "create", "Result", "ok"}, 1},
	} {
		if got := obs.SumEMF(docs, c.name, c.count, c.where...); got != c.want {
			t.Errorf("%s %v = %v, want %v\n%s", c.name, c.where, got, c.want, out)
		}
	}
	for _, d := range docs {
		if d.Root["Function"] != "stela-api" || d.Root["RequestId"] != "req-submit" {
			t.Fatalf("line without the function and invocation: %v", d.Root)
		}
	}

	// The next invocation writes only its own request.
	out.Reset()
	ctx = lambdatest.Context(t, "req-status", 10*time.Second)
	lambdatest.MustInvokeHTTP(t, ctx, h, "api/testdata/status.json")
	docs = mustParseEMF(t, out)
	if got := obs.SumEMF(docs, "ExecutionsCreated", false); got != 0 {
		t.Errorf("second invocation re-wrote ExecutionsCreated = %v", got)
	}
	if got := obs.SumEMF(docs, "HTTPRequests", false); got != 1 {
		t.Errorf("second invocation HTTPRequests = %v, want 1\n%s", got, out)
	}
}

func TestTimersFunctionWritesTheSweepMetrics(t *testing.T) {
	svc, o, tel, out := instrumented("stela-timers")
	blockedOnDelay(t, svc) // due at t0+1s
	h := functions.NewTimers(svc, fixedClock{t0.Add(3 * time.Second)}, functions.TimersOptions{MaxBudget: time.Nanosecond,
		Logger: slog.New(slog.DiscardHandler), Telemetry: tel, Loop: timers.Options{Observer: o}})
	res := lambdatest.MustInvoke(t, lambdatest.Context(t, "req-timers", time.Minute), h.Handle,
		lambdatest.MustReadEvent(t, "timers/testdata/scheduled-event.json"))
	var st timers.Stats
	if err := json.Unmarshal(res, &st); err != nil || st.ExpiredDelays != 1 {
		t.Fatalf("stats %s, %v", res, err)
	}
	docs := mustParseEMF(t, out)
	for _, c := range []struct {
		name  string
		where []string
		want  float64
	}{
		{"DelaysFired", nil, 1},
		{"SweepPasses", []string{"Result", "ok"}, 1},
		{"SweepLag", nil, 2}, // the pass ran 2 s after the delay's deadline
		{"LocksExpired", nil, 0},
	} {
		if got := obs.SumEMF(docs, c.name, false, c.where...); got != c.want {
			t.Errorf("%s %v = %v, want %v\n%s", c.name, c.where, got, c.want, out)
		}
	}
	if u := docs[0].Units; len(u) == 0 {
		t.Fatal("no metric declared")
	}
	for _, d := range docs {
		if u, ok := d.Units["SweepLag"]; ok && u != "Seconds" {
			t.Errorf("SweepLag unit %q", u)
		}
	}
}

func TestInstrumentFlushesEvenWhenTheHandlerFails(t *testing.T) {
	_, _, tel, out := instrumented("f")
	tel.Metrics.HTTPRequest("GET /x", 500, time.Millisecond)
	h := functions.Instrument(tel, func(context.Context, events.EventBridgeEvent) (string, error) {
		return "", context.DeadlineExceeded
	})
	if _, err := h(context.Background(), events.EventBridgeEvent{}); err == nil {
		t.Fatal("error swallowed")
	}
	if got := obs.SumEMF(mustParseEMF(t, out), "HTTPRequests", false, "StatusClass", "5xx"); got != 1 {
		t.Fatalf("HTTPRequests 5xx = %v, want 1", got)
	}
}
