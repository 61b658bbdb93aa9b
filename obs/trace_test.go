package obs_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/httpapi"
	"github.com/stela-dev/stela/obs"
	"github.com/stela-dev/stela/obs/tracemeta"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/store/mem"
	"github.com/stela-dev/stela/store/storetest"
)

const clientTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// spansNamed returns the ended spans called name.
func spansNamed(exp *tracetest.InMemoryExporter, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func TestTracingJoinsRequestsAndCommitsToTheExecutionsTrace(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	r := newRig(t, obs.NewTracing(tp))
	wantTrace := must(t, trace.TraceIDFromHex, "4bf92f3577b34da6a3ce929d0e0e4736")

	id := r.submit("test:obs/act.work", "traceparent", clientTraceparent)

	httpSpans := spansNamed(exp, "POST /v1/executions")
	if len(httpSpans) != 1 {
		t.Fatalf("%d request spans, want 1: %v", len(httpSpans), exp.GetSpans())
	}
	req := httpSpans[0]
	if req.SpanContext.TraceID() != wantTrace || req.Parent.SpanID().String() != "00f067aa0ba902b7" || !req.Parent.IsRemote() {
		t.Fatalf("request span trace %s parent %s, want the client's trace and span", req.SpanContext.TraceID(), req.Parent.SpanID())
	}
	if req.SpanKind != trace.SpanKindServer {
		t.Errorf("request span kind %v, want server", req.SpanKind)
	}
	commits := spansNamed(exp, "stela.store create")
	if len(commits) != 1 || commits[0].SpanContext.TraceID() != wantTrace || commits[0].Parent.SpanID() != req.SpanContext.SpanID() {
		t.Fatalf("create commit spans %v, want one child of the request span", commits)
	}
	if !commits[0].EndTime.After(commits[0].StartTime) && !commits[0].EndTime.Equal(commits[0].StartTime) {
		t.Errorf("commit span ends before it starts")
	}

	cr, err := r.svc.GetCreateRequest(r.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	sc, linked := tracemeta.SpanContext(cr.Metadata)
	if sc.TraceID() != wantTrace || sc.SpanID() != req.SpanContext.SpanID() || linked {
		t.Fatalf("metadata %v: trace %s span %s, want the request span of the client's trace", cr.Metadata, sc.TraceID(), sc.SpanID())
	}
	if !strings.HasPrefix(cr.Metadata[tracemeta.KeyTraceparent], "00-4bf92f3577b34da6a3ce929d0e0e4736-") {
		t.Fatalf("metadata %v lacks %s", cr.Metadata, tracemeta.KeyTraceparent)
	}

	// A worker locks it, then appends its result sending the execution's
	// trace context back (the convention of docs/operations.md).
	le, err := r.svc.LockOne(r.ctx, r.lockReq(core.ComponentTypeActivity, 1, t0.Add(time.Hour)), id, 1)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	tracemeta.Header(h, le.Metadata)
	w := r.do("POST", "/v1/worker/append", `{"execution_id":"`+id.String()+`","version":2,"req":{"created_at":"2026-01-01T00:00:00Z",
		"event":{"finished":{"retval":{"ok":null},"http_client_traces":null}}}}`, "traceparent", h.Get("traceparent"))
	if w.Code != http.StatusOK {
		t.Fatalf("append: %d %s", w.Code, w.Body)
	}
	appendReq := spansNamed(exp, "POST /v1/worker/append")
	appendCommit := spansNamed(exp, "stela.store append")
	if len(appendReq) != 1 || len(appendCommit) != 1 {
		t.Fatalf("append spans: %d requests, %d commits", len(appendReq), len(appendCommit))
	}
	if appendReq[0].SpanContext.TraceID() != wantTrace || appendCommit[0].SpanContext.TraceID() != wantTrace {
		t.Fatalf("the worker's append is in trace %s, want the execution's %s", appendReq[0].SpanContext.TraceID(), wantTrace)
	}
	if appendReq[0].Parent.SpanID() != req.SpanContext.SpanID() {
		t.Errorf("append request span's parent %s, want the submit span %s", appendReq[0].Parent.SpanID(), req.SpanContext.SpanID())
	}

	t.Run("ARequestWithoutTraceparentStartsATrace", func(t *testing.T) {
		id := r.submit("test:obs/act.work")
		cr, _ := r.svc.GetCreateRequest(r.ctx, id)
		sc, _ := tracemeta.SpanContext(cr.Metadata)
		if !sc.IsValid() || sc.TraceID() == wantTrace {
			t.Fatalf("metadata %v, want a new trace", cr.Metadata)
		}
	})
	t.Run("ServerErrorsMarkTheSpan", func(t *testing.T) {
		exp.Reset()
		_ = r.svc.Close()
		r.do("GET", "/v1/executions", "")
		spans := spansNamed(exp, "GET /v1/executions")
		if len(spans) != 1 || spans[0].Status.Code.String() != "Error" {
			t.Fatalf("spans %v, want one with status Error", spans)
		}
	})
}

func TestTracingFromEnvIsOffByDefault(t *testing.T) {
	for _, env := range []map[string]string{
		{},
		{obs.EnvOTLPEndpoint: "http://127.0.0.1:4318", obs.EnvSDKDisabled: "true"},
		{obs.EnvOTLPEndpoint: "http://127.0.0.1:4318", obs.EnvTracesExporter: "none"},
	} {
		tr, err := obs.TracingFromEnv(context.Background(), func(k string) string { return env[k] }, "stela")
		if tr != nil || err != nil {
			t.Errorf("env %v: tracing %v, %v; want off", env, tr, err)
		}
	}
	tr, err := obs.TracingFromEnv(context.Background(), func(k string) string {
		return map[string]string{obs.EnvTracesExporter: "zipkin"}[k]
	}, "stela")
	if err == nil || tr != nil {
		t.Errorf("unsupported exporter: %v, %v; want an error", tr, err)
	}
	tr, err = obs.TracingFromEnv(context.Background(), func(k string) string {
		return map[string]string{obs.EnvOTLPEndpoint: "http://127.0.0.1:1"}[k]
	}, "stela")
	if err != nil || tr == nil {
		t.Fatalf("endpoint set: %v, %v; want tracing on", tr, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_ = tr.Shutdown(ctx) // nothing listens: the error is the exporter's, not ours
}

// Tracing configured by the environment alone sends the request's and the
// commit's spans to the collector it names, over OTLP/HTTP protobuf with
// the headers it names, when the function flushes.
func TestTracingFromEnvExportsToTheCollector(t *testing.T) {
	var (
		mu     sync.Mutex
		got    []*tracepb.TracesData
		header http.Header
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var td tracepb.TracesData // ExportTraceServiceRequest's fields
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || proto.Unmarshal(body, &td) != nil {
			http.Error(w, "not an OTLP/HTTP protobuf export", http.StatusBadRequest)
			return
		}
		mu.Lock()
		got, header = append(got, &td), r.Header.Clone()
		mu.Unlock()
	}))
	defer srv.Close()
	env := map[string]string{obs.EnvOTLPEndpoint: srv.URL, obs.EnvOTLPHeaders: "x-honeycomb-team=secret"}
	tr, err := obs.TracingFromEnv(context.Background(), func(k string) string { return env[k] }, "stela-test")
	if err != nil || tr == nil {
		t.Fatalf("TracingFromEnv: %v, %v; want tracing on", tr, err)
	}
	r := newRig(t, tr)
	r.submit("test:obs/act.work", "traceparent", clientTraceparent)
	_ = r.svc.Close()
	r.do("GET", "/v1/executions", "") // a 5xx: the store is closed
	if err := tr.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if header.Get("X-Honeycomb-Team") != "secret" {
		t.Errorf("headers %v, want the configured one", header)
	}
	spans := map[string]*tracepb.Span{}
	for _, td := range got {
		for _, rs := range td.ResourceSpans {
			service := ""
			for _, kv := range rs.GetResource().GetAttributes() {
				if kv.Key == "service.name" {
					service = kv.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					if service != "stela-test" || ss.GetScope().GetName() != "github.com/stela-dev/stela" {
						t.Errorf("span %q from service %q scope %q", s.Name, service, ss.GetScope().GetName())
					}
					spans[s.Name] = s
				}
			}
		}
	}
	req, commit, failed := spans["POST /v1/executions"], spans["stela.store create"], spans["GET /v1/executions"]
	if req == nil || commit == nil || failed == nil {
		t.Fatalf("spans received: %v, want the request's and the commit's", spans)
	}
	if hex.EncodeToString(req.TraceId) != "4bf92f3577b34da6a3ce929d0e0e4736" || hex.EncodeToString(req.ParentSpanId) != "00f067aa0ba902b7" ||
		req.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("request span trace %x parent %x kind %v, want the client's trace and span, server", req.TraceId, req.ParentSpanId, req.Kind)
	}
	if failed.GetStatus().GetCode() != tracepb.Status_STATUS_CODE_ERROR || len(failed.ParentSpanId) != 0 {
		t.Errorf("failed request span: status %v parent %x, want an error at the root of its own trace", failed.GetStatus(), failed.ParentSpanId)
	}
	if !bytes.Equal(commit.ParentSpanId, req.SpanId) || !bytes.Equal(commit.TraceId, req.TraceId) {
		t.Errorf("commit span parent %x, want the request span %x", commit.ParentSpanId, req.SpanId)
	}
	attrs := map[string]string{}
	for _, kv := range append(req.Attributes, commit.Attributes...) {
		v := kv.GetValue().GetStringValue()
		if _, isInt := kv.GetValue().GetValue().(*commonpb.AnyValue_IntValue); isInt {
			v = fmt.Sprintf("int %d", kv.GetValue().GetIntValue())
		}
		attrs[kv.Key] = v
	}
	for k, v := range map[string]string{"http.route": "POST /v1/executions", "http.response.status_code": "int 201",
		"stela.store.result": "ok", "stela.executions.created": "int 1"} {
		if attrs[k] != v {
			t.Errorf("attribute %s = %q, want %q", k, attrs[k], v)
		}
	}
	_ = tr.Shutdown(context.Background())
}

// hooks runs the hooks one request makes on o.
func hooks(o *obs.Observer, ctx context.Context, req *http.Request, c store.Commit) {
	ctx = o.RequestStarted(ctx, req)
	o.Commit(ctx, c)
	o.LockCall(ctx, 8, 3)
	o.RequestDone(ctx, "POST /v1/worker/lock/pending-by-ffqns", 200, time.Millisecond)
}

// With tracing off, the hooks allocate nothing, metrics on or off.
func TestHooksDoNotAllocateWithTracingOff(t *testing.T) {
	req := httptest.NewRequest("POST", "/v1/worker/lock/pending-by-ffqns", nil)
	c := store.Commit{Op: store.OpLock, Start: time.Now(), Duration: time.Millisecond}
	for name, o := range map[string]*obs.Observer{
		"MetricsOn":  obs.NewObserver(obs.NewMetrics(), nil),
		"MetricsOff": obs.NewObserver(nil, nil),
	} {
		hooks(o, context.Background(), req, c) // resolves the series once
		if n := testing.AllocsPerRun(200, func() { hooks(o, context.Background(), req, c) }); n != 0 {
			t.Errorf("%s: %v allocations per request, want 0", name, n)
		}
	}
}

// stelaTracing is the tracing TracingFromEnv builds (Stela's tracer and
// exporter), exporting to a collector that accepts everything.
func stelaTracing(b *testing.B) *obs.Tracing {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }))
	b.Cleanup(srv.Close)
	// At a benchmark's rate the queue overflows; the warnings are not the figures.
	def := slog.Default()
	slog.SetDefault(slog.New(slog.DiscardHandler))
	b.Cleanup(func() { slog.SetDefault(def) })
	tr, err := obs.TracingFromEnv(context.Background(), func(k string) string {
		return map[string]string{obs.EnvOTLPEndpoint: srv.URL}[k]
	}, "bench")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	return tr
}

// BenchmarkRequestHooks measures the hooks of one request (tracing with
// the SDK, as the tests make spans, and with Stela's tracer, as the
// functions and `stela dev` do).
//
//	go test ./obs -run '^$' -bench RequestHooks -benchmem
func BenchmarkRequestHooks(b *testing.B) {
	req := httptest.NewRequest("POST", "/v1/worker/lock/pending-by-ffqns", nil)
	req.Header.Set("traceparent", clientTraceparent)
	c := store.Commit{Op: store.OpLock, Start: time.Now(), Duration: time.Millisecond}
	for _, bc := range []struct {
		name string
		o    *obs.Observer
	}{
		{"TracingOffMetricsOff", obs.NewObserver(nil, nil)},
		{"TracingOffMetricsOn", obs.NewObserver(obs.NewMetrics(), nil)},
		{"TracingOnMetricsOn", obs.NewObserver(obs.NewMetrics(),
			obs.NewTracing(sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))))},
		{"StelaTracingOnMetricsOn", obs.NewObserver(obs.NewMetrics(), stelaTracing(b))},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				hooks(bc.o, context.Background(), req, c)
			}
		})
	}
}

// BenchmarkHandler serves GET /v1/executions/{id}/status on the in-memory
// store without an observer and with each configuration: tracing off adds
// no allocation to the request.
//
//	go test ./obs -run '^$' -bench Handler -benchmem
func BenchmarkHandler(b *testing.B) {
	clk := storetest.NewSimClock(t0)
	id := must(b, core.ParseExecutionId, "E_01KBNHM5FQW81KP5Y3XMNX31K4")
	for _, bc := range []struct {
		name string
		o    *obs.Observer
	}{
		{"NoObserver", nil},
		{"TracingOffMetricsOn", obs.NewObserver(obs.NewMetrics(), nil)},
		{"TracingOnMetricsOn", obs.NewObserver(obs.NewMetrics(),
			obs.NewTracing(sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))))},
		{"StelaTracingOnMetricsOn", obs.NewObserver(obs.NewMetrics(), stelaTracing(b))},
	} {
		b.Run(bc.name, func(b *testing.B) {
			opts := store.Options{Clock: clk, Logger: slog.New(slog.DiscardHandler)}
			hopts := httpapi.Options{Clock: clk, Authorizer: httpapi.AllowAll()}
			if bc.o != nil {
				opts.Observer, hopts.Observer = bc.o, bc.o
			}
			svc := store.New(mem.New(), opts)
			if _, err := svc.Create(context.Background(), core.CreateRequest{CreatedAt: t0, ExecutionID: id,
				FFQN: must(b, core.ParseFunctionFqn, "test:obs/act.work"), Params: core.Params{}, ScheduledAt: t0,
				ComponentID: core.ComponentId{ComponentType: core.ComponentTypeActivity}}); err != nil {
				b.Fatal(err)
			}
			h := httpapi.New(svc, nil, hopts)
			req := httptest.NewRequest("GET", "/v1/executions/"+id.String()+"/status", nil)
			req.Header.Set("X-Request-Id", "bench")
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatal(w.Code)
				}
			}
		})
	}
}
