package obs

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// memExporter keeps the batches it is given.
type memExporter struct {
	mu       sync.Mutex
	batches  [][]*spanRecord
	exported chan int // the size of each batch, when not nil
	fail     error
	down     bool
}

func (m *memExporter) export(_ context.Context, spans []*spanRecord) error {
	m.mu.Lock()
	m.batches = append(m.batches, spans)
	m.mu.Unlock()
	if m.exported != nil {
		m.exported <- len(spans)
	}
	return m.fail
}

func (m *memExporter) shutdown(context.Context) error { m.down = true; return nil }

func (m *memExporter) spans() map[string]*spanRecord {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]*spanRecord{}
	for _, b := range m.batches {
		for _, s := range b {
			out[s.name] = s
		}
	}
	return out
}

// newTestProvider is a provider whose loop never fires on its own (a delay
// of an hour): only a full batch, a flush or a shutdown export.
func newTestProvider(t *testing.T, smp sampler, exp spanExporter, env map[string]string) *provider {
	t.Helper()
	if env == nil {
		env = map[string]string{}
	}
	if _, ok := env[EnvBSPScheduleDelay]; !ok {
		env[EnvBSPScheduleDelay] = "3600000"
	}
	bsp, err := batcherFromEnv(envMap(env).get, exp, func(err error) { t.Logf("export: %v", err) })
	if err != nil {
		t.Fatal(err)
	}
	res, _ := resourceFromEnv(envMap{}.get, "test")
	p := &provider{res: res, sampler: smp, bsp: bsp.start()}
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	return p
}

var alwaysOn = sampler{parentBased: true, ratio: 1}

func TestTracerRecordsWhatTheSpanWasTold(t *testing.T) {
	exp := &memExporter{}
	p := newTestProvider(t, alwaysOn, exp, nil)
	tr := p.Tracer("scope", trace.WithInstrumentationVersion("2"))
	remote := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2},
		TraceFlags: trace.FlagsSampled, Remote: true})
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

	ctx, root := tr.Start(trace.ContextWithRemoteSpanContext(context.Background(), remote), "HTTP POST",
		trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(t0), trace.WithAttributes(attribute.String("a", "1")))
	root.SetName("POST /v1/executions")
	root.SetAttributes(attribute.String("a", "2"), attribute.Int("b", 3), attribute.KeyValue{}) // a replaced, the invalid one left out
	root.SetStatus(codes.Error, "boom")
	root.AddLink(trace.Link{}) // invalid: left out
	_, child := tr.Start(ctx, "stela.store create", trace.WithTimestamp(t0.Add(time.Millisecond)))
	child.RecordError(fmt.Errorf("wrapped: %w", errors.New("conflict")), trace.WithTimestamp(t0.Add(2*time.Millisecond)))
	child.SetStatus(codes.Ok, "ignored")
	child.SetStatus(codes.Error, "too late: Ok is final")
	for i := range spanLimit + 2 {
		child.SetAttributes(attribute.Int(fmt.Sprint("k", i), i))
	}
	child.End(trace.WithTimestamp(t0.Add(3 * time.Millisecond)))
	child.End() // once
	if child.IsRecording() {
		t.Error("an ended span still records")
	}
	root.End(trace.WithTimestamp(t0.Add(5 * time.Millisecond)))
	if err := p.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}

	got := exp.spans()
	r, c := got["POST /v1/executions"], got["stela.store create"]
	if len(got) != 2 || r == nil || c == nil {
		t.Fatalf("spans %v", got)
	}
	if r.sc.TraceID() != remote.TraceID() || !r.parent.Equal(remote) || r.kind != trace.SpanKindServer || !r.sc.IsSampled() {
		t.Errorf("root: trace %s parent %v kind %v", r.sc.TraceID(), r.parent, r.kind)
	}
	if !r.start.Equal(t0) || !r.end.Equal(t0.Add(5*time.Millisecond)) || r.status != codes.Error || r.statusDesc != "boom" {
		t.Errorf("root: %v..%v status %v %q", r.start, r.end, r.status, r.statusDesc)
	}
	if len(r.attrs) != 2 || r.attrs[0] != attribute.String("a", "2") || r.attrs[1] != attribute.Int("b", 3) || len(r.links) != 0 {
		t.Errorf("root attributes %v links %v", r.attrs, r.links)
	}
	if r.scope.name != "scope" || r.scope.version != "2" || r.res == nil {
		t.Errorf("root scope %+v resource %v", r.scope, r.res)
	}
	if c.parent.SpanID() != r.sc.SpanID() || c.sc.TraceID() != r.sc.TraceID() || c.kind != trace.SpanKindInternal || c.parent.IsRemote() {
		t.Errorf("child: parent %v kind %v", c.parent, c.kind)
	}
	if c.status != codes.Ok || c.statusDesc != "" {
		t.Errorf("child status %v %q, want Ok without a description", c.status, c.statusDesc)
	}
	if len(c.attrs) != spanLimit || c.droppedAttrs != 2 {
		t.Errorf("child: %d attributes, %d dropped; want %d and 2", len(c.attrs), c.droppedAttrs, spanLimit)
	}
	if len(c.events) != 1 || c.events[0].name != "exception" || !c.events[0].time.Equal(t0.Add(2*time.Millisecond)) ||
		c.events[0].attrs[0] != attribute.String("exception.type", "*fmt.wrapError") ||
		c.events[0].attrs[1] != attribute.String("exception.message", "wrapped: conflict") {
		t.Errorf("child events %+v", c.events)
	}
}

// The ratio sampler decides as the SDK's does, trace by trace, and the
// parent-based one follows the parent; a span left out carries its trace.
func TestSamplerDecidesAsTheSDK(t *testing.T) {
	for _, ratio := range []float64{0, 0.1, 0.5, 0.9, 1} {
		sdk := sdktrace.TraceIDRatioBased(ratio)
		ours := sampler{ratio: ratio}
		for range 2000 {
			var id trace.TraceID
			binary.BigEndian.PutUint64(id[:8], rand.Uint64())
			binary.BigEndian.PutUint64(id[8:], rand.Uint64())
			want := sdk.ShouldSample(sdktrace.SamplingParameters{ParentContext: context.Background(), TraceID: id}).Decision ==
				sdktrace.RecordAndSample
			if got := ours.sample(trace.SpanContext{}, id); got != want {
				t.Fatalf("ratio %v, trace %s: sampled %v, the SDK says %v", ratio, id, got, want)
			}
		}
	}
	sampled := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, TraceFlags: trace.FlagsSampled})
	unsampled := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, Remote: true})
	pb := sampler{parentBased: true, ratio: 0}
	if !pb.sample(sampled, sampled.TraceID()) || pb.sample(unsampled, unsampled.TraceID()) || pb.sample(trace.SpanContext{}, trace.TraceID{1}) {
		t.Error("parentbased_always_off does not follow the parent")
	}

	exp := &memExporter{}
	p := newTestProvider(t, sampler{parentBased: true, ratio: 0}, exp, nil)
	ctx, s := p.Tracer("x").Start(context.Background(), "dropped")
	_, child := p.Tracer("x").Start(ctx, "child")
	child.End()
	s.End()
	_ = p.ForceFlush(context.Background())
	if s.IsRecording() || !s.SpanContext().IsValid() || s.SpanContext().IsSampled() || len(exp.spans()) != 0 {
		t.Errorf("a span the sampler left out: recording %v context %v; %d exported", s.IsRecording(), s.SpanContext(), len(exp.spans()))
	}
	if child.SpanContext().TraceID() != s.SpanContext().TraceID() {
		t.Error("the child of a span left out starts another trace")
	}
}

func TestTracerConfigFromEnv(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want sampler
		err  string
	}{
		{map[string]string{}, sampler{parentBased: true, ratio: 1}, ""},
		{map[string]string{EnvTracesSampler: "always_off"}, sampler{ratio: 0}, ""},
		{map[string]string{EnvTracesSampler: "traceidratio", EnvTracesSamplerArg: "0.25"}, sampler{ratio: 0.25}, ""},
		{map[string]string{EnvTracesSampler: "parentbased_traceidratio", EnvTracesSamplerArg: "0.5"}, sampler{parentBased: true, ratio: 0.5}, ""},
		{map[string]string{EnvTracesSampler: "traceidratio", EnvTracesSamplerArg: "2"}, sampler{}, EnvTracesSamplerArg},
		{map[string]string{EnvTracesSampler: "jaeger_remote"}, sampler{}, EnvTracesSampler},
	} {
		got, err := samplerFromEnv(envMap(c.env).get)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: error %v, want one naming %s", c.env, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%v: %+v, %v; want %+v", c.env, got, err, c.want)
		}
	}

	res, err := resourceFromEnv(envMap{EnvResourceAttrs: "service.name=from-attrs,deployment.environment=prod%20eu, team = core"}.get, "stela-api")
	if err != nil {
		t.Fatal(err)
	}
	attrs := map[string]string{}
	for _, kv := range res.attrs {
		attrs[string(kv.Key)] = kv.Value.AsString()
	}
	if attrs["service.name"] != "from-attrs" || attrs["deployment.environment"] != "prod eu" || attrs["team"] != "core" ||
		attrs["telemetry.sdk.language"] != "go" {
		t.Errorf("resource %v", attrs)
	}
	res, _ = resourceFromEnv(envMap{EnvResourceAttrs: "service.name=x", EnvServiceName: "named"}.get, "stela-api")
	if res.attrs[0] != attribute.String("service.name", "named") {
		t.Errorf("OTEL_SERVICE_NAME does not win: %v", res.attrs)
	}
	if _, err := resourceFromEnv(envMap{EnvResourceAttrs: "novalue"}.get, "s"); err == nil || !strings.Contains(err.Error(), EnvResourceAttrs) {
		t.Errorf("bad resource attributes: %v", err)
	}
	if _, err := batcherFromEnv(envMap{EnvBSPMaxQueueSize: "0", EnvBSPScheduleDelay: "soon"}.get, &memExporter{}, nil); err == nil ||
		!strings.Contains(err.Error(), EnvBSPMaxQueueSize) || !strings.Contains(err.Error(), EnvBSPScheduleDelay) {
		t.Errorf("bad batcher settings: %v", err)
	}
}

func TestBatcher(t *testing.T) {
	t.Run("AFullBatchGoesAtOnceTheRestOnFlush", func(t *testing.T) {
		exp := &memExporter{exported: make(chan int, 10)}
		p := newTestProvider(t, alwaysOn, exp, map[string]string{EnvBSPMaxBatchSize: "3"})
		tr := p.Tracer("x")
		for i := range 4 {
			_, s := tr.Start(context.Background(), fmt.Sprint(i))
			s.End()
		}
		select {
		case n := <-exp.exported:
			if n != 3 {
				t.Fatalf("first batch of %d spans, want 3", n)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a full batch was not exported")
		}
		if err := p.ForceFlush(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := <-exp.exported; n != 1 || len(exp.spans()) != 4 {
			t.Fatalf("flush exported %d, %d in all; want 1 and 4", n, len(exp.spans()))
		}
	})
	t.Run("AFullQueueDropsAndSaysSo", func(t *testing.T) {
		exp := &memExporter{}
		// No export loop: only the flush exports.
		bsp, err := batcherFromEnv(envMap{EnvBSPMaxQueueSize: "2"}.get, exp, nil)
		if err != nil {
			t.Fatal(err)
		}
		p := &provider{sampler: alwaysOn, bsp: bsp}
		for i := range 5 {
			_, s := p.Tracer("x").Start(context.Background(), fmt.Sprint(i))
			s.End()
		}
		err = p.ForceFlush(context.Background())
		if err == nil || !strings.Contains(err.Error(), "3 spans dropped") {
			t.Fatalf("flush: %v, want the 3 dropped spans reported", err)
		}
		if len(exp.spans()) != 2 {
			t.Fatalf("%d exported, want the 2 queued", len(exp.spans()))
		}
	})
	t.Run("ShutdownFlushesThenRefuses", func(t *testing.T) {
		exp := &memExporter{}
		p := newTestProvider(t, alwaysOn, exp, nil)
		_, s := p.Tracer("x").Start(context.Background(), "before")
		s.End()
		if err := p.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		_, s = p.Tracer("x").Start(context.Background(), "after")
		s.End()
		_ = p.ForceFlush(context.Background())
		if got := exp.spans(); len(got) != 1 || got["before"] == nil || !exp.down {
			t.Fatalf("spans %v, exporter shut down %v; want only the span ended before", got, exp.down)
		}
		if err := p.Shutdown(context.Background()); err != nil {
			t.Fatalf("second shutdown: %v", err)
		}
	})
}
