package obs

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// collector is an OTLP/HTTP endpoint that keeps what it receives and
// answers with the queued statuses (then 200).
type collector struct {
	srv *httptest.Server

	mu       sync.Mutex
	requests []*http.Request
	bodies   [][]byte
	statuses []int
	header   http.Header // added to every answer
	answer   []byte      // body of a 200
}

func newCollector(t *testing.T) *collector {
	c := &collector{header: http.Header{}}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body, _ = io.ReadAll(zr)
		}
		c.mu.Lock()
		c.requests, c.bodies = append(c.requests, r), append(c.bodies, body)
		status := http.StatusOK
		if len(c.statuses) > 0 {
			status, c.statuses = c.statuses[0], c.statuses[1:]
		}
		answer := c.answer
		c.mu.Unlock()
		for k, v := range c.header {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(status)
		if status == http.StatusOK {
			_, _ = w.Write(answer)
		} else {
			_, _ = io.WriteString(w, "refused: "+http.StatusText(status))
		}
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *collector) received() ([]*http.Request, [][]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.requests), slices.Clone(c.bodies)
}

// decode parses an export request with the generated types of
// opentelemetry-proto and fails on any field they do not know.
func decode(t *testing.T, body []byte) *coltracepb.ExportTraceServiceRequest {
	t.Helper()
	var req coltracepb.ExportTraceServiceRequest
	if err := (proto.UnmarshalOptions{DiscardUnknown: false}).Unmarshal(body, &req); err != nil {
		t.Fatalf("not an ExportTraceServiceRequest: %v", err)
	}
	var unknown func(m protoreflect.Message, path string)
	unknown = func(m protoreflect.Message, path string) {
		if u := m.GetUnknown(); len(u) > 0 {
			t.Errorf("%s: %d bytes of fields the schema does not know", path, len(u))
		}
		m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			p := path + "." + string(fd.Name())
			switch {
			case fd.IsList() && fd.Message() != nil:
				for i := range v.List().Len() {
					unknown(v.List().Get(i).Message(), p)
				}
			case fd.Message() != nil && !fd.IsMap():
				unknown(v.Message(), p)
			}
			return true
		})
	}
	unknown(req.ProtoReflect(), "request")
	return &req
}

// normalize orders scopes and spans (the official exporter groups them
// through maps: its order is not defined).
func normalize(req *coltracepb.ExportTraceServiceRequest) {
	for _, rs := range req.ResourceSpans {
		slices.SortFunc(rs.ScopeSpans, func(a, b *tracepb.ScopeSpans) int {
			return strings.Compare(a.GetScope().GetName(), b.GetScope().GetName())
		})
		for _, ss := range rs.ScopeSpans {
			slices.SortFunc(ss.Spans, func(a, b *tracepb.Span) int { return bytes.Compare(a.SpanId, b.SpanId) })
		}
	}
}

// sampleSpans ends spans that use everything a span can carry: every
// attribute type, events, links (local and remote, with trace state), each
// status, each kind, a remote parent, two instrumentation scopes.
func sampleSpans(t *testing.T) []sdktrace.ReadOnlySpan {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	res := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.26.0",
		attribute.String("service.name", "stela-test"), attribute.Int("pid", 42))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithResource(res))
	a := tp.Tracer("scope-a", trace.WithInstrumentationVersion("1.2.3"), trace.WithSchemaURL("https://example.com/schema"),
		trace.WithInstrumentationAttributes(attribute.Bool("scoped", true)))
	b := tp.Tracer("scope-b")

	ts, err := trace.ParseTraceState("vendor=abc,other=x")
	if err != nil {
		t.Fatal(err)
	}
	remote := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:  trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7}, TraceFlags: trace.FlagsSampled,
		TraceState: ts, Remote: true})
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 123456789, time.UTC)

	ctx := trace.ContextWithRemoteSpanContext(context.Background(), remote)
	ctx, server := a.Start(ctx, "POST /v1/executions", trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(t0),
		trace.WithAttributes(
			attribute.String("s", "x"), attribute.String("empty", ""), attribute.Bool("t", true), attribute.Bool("f", false),
			attribute.Int64("i", -7), attribute.Int64("zero", 0), attribute.Float64("pi", 3.25), attribute.Float64("fzero", 0),
			attribute.StringSlice("ss", []string{"a", "", "c"}), attribute.BoolSlice("bs", []bool{true, false}),
			attribute.Int64Slice("is", []int64{1, -2, 0}), attribute.Float64Slice("fs", []float64{0.5, 0}),
			attribute.ByteSlice("bytes", []byte{0, 1, 2}), attribute.Slice("mixed", attribute.StringValue("m"), attribute.IntValue(3), attribute.Value{}),
			attribute.Map("map", attribute.String("k", "v"), attribute.Int("n", 1)), attribute.KeyValue{Key: "nothing"}),
		trace.WithLinks(trace.Link{SpanContext: remote, Attributes: []attribute.KeyValue{attribute.String("why", "follows")}}))
	server.AddEvent("retry", trace.WithTimestamp(t0.Add(time.Millisecond)), trace.WithAttributes(attribute.Int("attempt", 2)))
	server.AddEvent("bare", trace.WithTimestamp(t0.Add(2*time.Millisecond)))
	server.SetStatus(codes.Error, "boom")

	_, commit := a.Start(ctx, "stela.store create", trace.WithTimestamp(t0.Add(time.Millisecond)))
	commit.SetStatus(codes.Ok, "")
	commit.End(trace.WithTimestamp(t0.Add(3 * time.Millisecond)))

	for _, k := range []trace.SpanKind{trace.SpanKindClient, trace.SpanKindProducer, trace.SpanKindConsumer, trace.SpanKindInternal} {
		_, s := b.Start(context.Background(), "kind "+k.String(), trace.WithSpanKind(k), trace.WithTimestamp(t0),
			trace.WithLinks(trace.Link{SpanContext: commit.SpanContext()}))
		s.End(trace.WithTimestamp(t0.Add(time.Second)))
	}
	server.End(trace.WithTimestamp(t0.Add(5 * time.Millisecond)))
	return rec.Ended()
}

// fromSDK converts the SDK's spans to the tracer's records, so that both
// exporters get the same spans.
func fromSDK(spans []sdktrace.ReadOnlySpan) []*spanRecord {
	resources := map[*resource.Resource]*resourceInfo{}
	var out []*spanRecord
	for _, s := range spans {
		res := resources[s.Resource()]
		if res == nil {
			res = &resourceInfo{attrs: s.Resource().Attributes(), schemaURL: s.Resource().SchemaURL()}
			resources[s.Resource()] = res
		}
		sc := s.InstrumentationScope()
		r := &spanRecord{name: s.Name(), sc: s.SpanContext(), parent: s.Parent(), kind: s.SpanKind(),
			start: s.StartTime(), end: s.EndTime(), attrs: s.Attributes(), droppedAttrs: s.DroppedAttributes(),
			droppedEvents: s.DroppedEvents(), droppedLinks: s.DroppedLinks(), status: s.Status().Code,
			statusDesc: s.Status().Description, res: res,
			scope: scope{name: sc.Name, version: sc.Version, schemaURL: sc.SchemaURL, attrs: sc.Attributes}}
		for _, e := range s.Events() {
			r.events = append(r.events, spanEvent{name: e.Name, time: e.Time, attrs: e.Attributes, dropped: e.DroppedAttributeCount})
		}
		for _, l := range s.Links() {
			r.links = append(r.links, spanLink{sc: l.SpanContext, attrs: l.Attributes, dropped: l.DroppedAttributeCount})
		}
		out = append(out, r)
	}
	return out
}

// The exporter's requests, decoded with opentelemetry-proto's generated
// types, are exactly what the official OTLP/HTTP exporter sends for the
// same spans.
func TestOTLPEncodingMatchesTheOfficialExporter(t *testing.T) {
	spans := sampleSpans(t)
	ctx := context.Background()

	ours := newCollector(t)
	cfg, err := otlpConfigFromEnv(envMap{EnvOTLPEndpoint: ours.srv.URL}.get, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := newOTLPExporterFor(cfg).export(ctx, fromSDK(spans)); err != nil {
		t.Fatal(err)
	}

	official := newCollector(t)
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(official.srv.URL+"/v1/traces"),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}))
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.ExportSpans(ctx, spans); err != nil {
		t.Fatal(err)
	}

	oReqs, oBodies := ours.received()
	wReqs, wBodies := official.received()
	if len(oBodies) != 1 || len(wBodies) != 1 {
		t.Fatalf("%d requests (official exporter: %d), want 1 each", len(oBodies), len(wBodies))
	}
	if oReqs[0].URL.Path != "/v1/traces" || oReqs[0].Method != http.MethodPost {
		t.Errorf("%s %s, want POST /v1/traces", oReqs[0].Method, oReqs[0].URL.Path)
	}
	if got, want := oReqs[0].Header.Get("Content-Type"), wReqs[0].Header.Get("Content-Type"); got != want {
		t.Errorf("Content-Type %q, want %q", got, want)
	}
	got, want := decode(t, oBodies[0]), decode(t, wBodies[0])
	normalize(got)
	normalize(want)
	// Links carry the linked span's trace state (the official exporter
	// leaves Link.trace_state out); the rest must be identical.
	for _, rs := range got.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				for _, l := range s.Links {
					if l.TraceState != "vendor=abc,other=x" {
						t.Errorf("span %q: link trace state %q, want the linked span's", s.Name, l.TraceState)
					}
					l.TraceState = ""
				}
			}
		}
	}
	if !proto.Equal(got, want) {
		t.Fatalf("the encoding differs from the official exporter's:\ngot  %v\nwant %v", got, want)
	}
	if n := len(got.ResourceSpans[0].ScopeSpans[0].Spans) + len(got.ResourceSpans[0].ScopeSpans[1].Spans); n != len(spans) {
		t.Fatalf("%d spans sent, want %d", n, len(spans))
	}
}

// envMap is an environment for getenv.
type envMap map[string]string

func (m envMap) get(k string) string { return m[k] }

func TestOTLPConfigFromEnv(t *testing.T) {
	files := map[string][]byte{}
	read := func(name string) ([]byte, error) {
		if b, ok := files[name]; ok {
			return b, nil
		}
		return nil, io.ErrUnexpectedEOF
	}
	for _, c := range []struct {
		name    string
		env     map[string]string
		url     string
		headers map[string]string
		timeout time.Duration
		gzip    bool
		err     string // a substring of the error; "" = none
	}{
		{name: "Default", env: map[string]string{}, url: "http://localhost:4318/v1/traces", timeout: 10 * time.Second},
		{name: "BaseURLGetsThePath", env: map[string]string{EnvOTLPEndpoint: "https://collector:4318"},
			url: "https://collector:4318/v1/traces", timeout: 10 * time.Second},
		{name: "BaseURLWithAPath", env: map[string]string{EnvOTLPEndpoint: "http://c:4318/otlp/"},
			url: "http://c:4318/otlp/v1/traces", timeout: 10 * time.Second},
		{name: "SignalURLAsIs", env: map[string]string{EnvOTLPEndpoint: "http://ignored", EnvOTLPTracesEndpoint: "http://c:9/custom"},
			url: "http://c:9/custom", timeout: 10 * time.Second},
		{name: "SignalURLWithoutPathIsRoot", env: map[string]string{EnvOTLPTracesEndpoint: "http://c:9"},
			url: "http://c:9/", timeout: 10 * time.Second},
		{name: "HeadersTimeoutGzip", env: map[string]string{
			EnvOTLPHeaders: "authorization=Bearer%20abc, x-team = stela ,", EnvOTLPTimeout: "1500", EnvOTLPCompression: "gzip",
			EnvOTLPProtocol: "http/protobuf"},
			url: "http://localhost:4318/v1/traces", headers: map[string]string{"Authorization": "Bearer abc", "X-Team": "stela"},
			timeout: 1500 * time.Millisecond, gzip: true},
		{name: "SignalVariablesWin", env: map[string]string{
			EnvOTLPHeaders: "a=1", EnvOTLPTracesHeaders: "b=2", EnvOTLPTimeout: "1000", EnvOTLPTracesTimeout: "2000",
			EnvOTLPCompression: "gzip", EnvOTLPTracesCompression: "none"},
			url: "http://localhost:4318/v1/traces", headers: map[string]string{"B": "2"}, timeout: 2 * time.Second},
		{name: "GRPCRefused", env: map[string]string{EnvOTLPProtocol: "grpc"}, err: EnvOTLPProtocol + `="grpc"`},
		{name: "JSONRefused", env: map[string]string{EnvOTLPTracesProtocol: "http/json"}, err: EnvOTLPTracesProtocol},
		{name: "BadCompression", env: map[string]string{EnvOTLPCompression: "zstd"}, err: EnvOTLPCompression},
		{name: "BadTimeout", env: map[string]string{EnvOTLPTimeout: "10s"}, err: EnvOTLPTimeout},
		{name: "BadURL", env: map[string]string{EnvOTLPEndpoint: "collector:4318"}, err: EnvOTLPEndpoint},
		{name: "BadHeader", env: map[string]string{EnvOTLPHeaders: "novalue"}, err: EnvOTLPHeaders},
		{name: "MissingCA", env: map[string]string{EnvOTLPCertificate: "/nope.pem"}, err: EnvOTLPCertificate},
		{name: "CertWithoutKey", env: map[string]string{EnvOTLPClientCert: "/c.pem"}, err: EnvOTLPClientKey},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := otlpConfigFromEnv(envMap(c.env).get, read)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one naming %s", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.url != c.url || cfg.timeout != c.timeout || cfg.gzip != c.gzip {
				t.Errorf("url %s timeout %v gzip %v, want %s %v %v", cfg.url, cfg.timeout, cfg.gzip, c.url, c.timeout, c.gzip)
			}
			if len(cfg.headers) != len(c.headers) {
				t.Errorf("headers %v, want %v", cfg.headers, c.headers)
			}
			for k, v := range c.headers {
				if got := cfg.headers.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

// exportTo exports spans to c with the configuration env adds to c's
// endpoint, retries waiting nothing; it returns the error and the waits.
func exportTo(t *testing.T, c *collector, env map[string]string, spans []sdktrace.ReadOnlySpan) (error, []time.Duration) {
	t.Helper()
	e := map[string]string{EnvOTLPEndpoint: c.srv.URL}
	for k, v := range env {
		e[k] = v
	}
	cfg, err := otlpConfigFromEnv(envMap(e).get, nil)
	if err != nil {
		t.Fatal(err)
	}
	exp := newOTLPExporterFor(cfg)
	var waits []time.Duration
	exp.sleep = func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return ctx.Err()
	}
	return exp.export(context.Background(), fromSDK(spans)), waits
}

func TestOTLPExportRetriesWhatTheCollectorSaysToRetry(t *testing.T) {
	spans := sampleSpans(t)
	t.Run("UnavailableThenOK", func(t *testing.T) {
		c := newCollector(t)
		c.statuses = []int{http.StatusServiceUnavailable, http.StatusTooManyRequests, http.StatusBadGateway}
		err, waits := exportTo(t, c, nil, spans)
		if err != nil {
			t.Fatal(err)
		}
		_, bodies := c.received()
		if len(bodies) != 4 || len(waits) != 3 {
			t.Fatalf("%d requests, %d waits; want 4 and 3", len(bodies), len(waits))
		}
		if !bytes.Equal(bodies[0], bodies[3]) {
			t.Fatal("a retry sent another body")
		}
		for i, w := range waits {
			if w < otlpRetryFirst/2 || w > otlpRetryMax {
				t.Errorf("wait %d = %v, outside [%v, %v]", i, w, otlpRetryFirst/2, otlpRetryMax)
			}
		}
	})
	t.Run("RetryAfterIsHonoured", func(t *testing.T) {
		c := newCollector(t)
		c.statuses = []int{http.StatusTooManyRequests}
		c.header.Set("Retry-After", "3")
		err, waits := exportTo(t, c, nil, spans)
		if err != nil || len(waits) != 1 || waits[0] != 3*time.Second {
			t.Fatalf("err %v, waits %v; want one wait of 3s", err, waits)
		}
	})
	t.Run("BadRequestIsNotRetried", func(t *testing.T) {
		c := newCollector(t)
		c.statuses = []int{http.StatusBadRequest}
		err, waits := exportTo(t, c, nil, spans)
		if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "refused: Bad Request") {
			t.Fatalf("error %v, want the 400 and its body", err)
		}
		if _, bodies := c.received(); len(bodies) != 1 || len(waits) != 0 {
			t.Fatalf("%d requests, %d waits; want 1 and 0", len(bodies), len(waits))
		}
	})
	t.Run("PartialSuccessIsAnError", func(t *testing.T) {
		c := newCollector(t)
		resp, err := proto.Marshal(&coltracepb.ExportTraceServiceResponse{PartialSuccess: &coltracepb.ExportTracePartialSuccess{
			RejectedSpans: 2, ErrorMessage: "span too old"}})
		if err != nil {
			t.Fatal(err)
		}
		c.answer = resp
		err, _ = exportTo(t, c, nil, spans)
		if err == nil || !strings.Contains(err.Error(), "rejected 2 spans: span too old") {
			t.Fatalf("error %v, want the rejected spans", err)
		}
	})
	t.Run("GzipAndHeaders", func(t *testing.T) {
		c := newCollector(t)
		err, _ := exportTo(t, c, map[string]string{EnvOTLPCompression: "gzip", EnvOTLPHeaders: "x-api-key=k%3D1"}, spans)
		if err != nil {
			t.Fatal(err)
		}
		reqs, bodies := c.received()
		if len(reqs) != 1 || reqs[0].Header.Get("Content-Encoding") != "gzip" || reqs[0].Header.Get("X-Api-Key") != "k=1" {
			t.Fatalf("headers %v", reqs[0].Header)
		}
		if req := decode(t, bodies[0]); len(req.ResourceSpans) != 1 {
			t.Fatalf("gzipped body decodes to %v", req)
		}
	})
	t.Run("ShutDownExporterRefuses", func(t *testing.T) {
		c := newCollector(t)
		exp := newOTLPExporterFor(otlpConfig{url: c.srv.URL + "/v1/traces", timeout: time.Second})
		_ = exp.shutdown(context.Background())
		if err := exp.export(context.Background(), fromSDK(spans)); err == nil {
			t.Fatal("export after shutdown accepted")
		}
	})
}
