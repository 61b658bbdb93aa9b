package obs

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
)

// The tracer TracingFromEnv uses: an implementation of the OpenTelemetry
// trace API (go.opentelemetry.io/otel/trace) with what Stela's two kinds of
// spans need — head sampling, attributes, events, links, status, a batch
// processor feeding the OTLP exporter — in place of the OpenTelemetry SDK,
// whose generality cost every Lambda function half a megabyte more (package
// doc, "The tracer and the exporter"). It reads the SDK's variables:
// OTEL_TRACES_SAMPLER[_ARG], OTEL_BSP_*, OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES.

// Variables of the tracer (the OpenTelemetry specification's).
const (
	EnvTracesSampler    = "OTEL_TRACES_SAMPLER"
	EnvTracesSamplerArg = "OTEL_TRACES_SAMPLER_ARG"
	EnvServiceName      = "OTEL_SERVICE_NAME"
	EnvResourceAttrs    = "OTEL_RESOURCE_ATTRIBUTES"
	EnvBSPScheduleDelay = "OTEL_BSP_SCHEDULE_DELAY"
	EnvBSPExportTimeout = "OTEL_BSP_EXPORT_TIMEOUT"
	EnvBSPMaxQueueSize  = "OTEL_BSP_MAX_QUEUE_SIZE"
	EnvBSPMaxBatchSize  = "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"
)

// Defaults (specification: "Batching processor", "Span limits").
const (
	defaultBSPDelay     = 5 * time.Second
	defaultBSPTimeout   = 30 * time.Second
	defaultBSPQueue     = 2048
	defaultBSPBatch     = 512
	spanLimit           = 128 // attributes, events and links per span; attributes per event or link
	telemetrySDKName    = "stela"
	telemetrySDKVersion = "1"
)

// spanRecord is an ended span, as exported.
type spanRecord struct {
	name          string
	sc, parent    trace.SpanContext
	kind          trace.SpanKind
	start, end    time.Time
	attrs         []attribute.KeyValue
	droppedAttrs  int
	events        []spanEvent
	droppedEvents int
	links         []spanLink
	droppedLinks  int
	status        codes.Code
	statusDesc    string
	scope         scope
	res           *resourceInfo
}

type spanEvent struct {
	name    string
	time    time.Time
	attrs   []attribute.KeyValue
	dropped int
}

type spanLink struct {
	sc      trace.SpanContext
	attrs   []attribute.KeyValue
	dropped int
}

// scope is an instrumentation scope (a Tracer's name, version, schema and
// attributes); it is comparable, so that spans group by it.
type scope struct {
	name, version, schemaURL string
	attrs                    attribute.Set
}

// resourceInfo is the resource of every span of a provider.
type resourceInfo struct {
	attrs     []attribute.KeyValue
	schemaURL string
}

// spanExporter receives batches of ended spans (the OTLP exporter; tests
// keep them).
type spanExporter interface {
	export(ctx context.Context, spans []*spanRecord) error
	shutdown(ctx context.Context) error
}

// sampler decides whether a new span is recorded and sampled.
type sampler struct {
	parentBased bool
	ratio       float64 // of the root spans: 1 always, 0 never
}

// sample decides for a span of traceID under parent.
func (s sampler) sample(parent trace.SpanContext, traceID trace.TraceID) bool {
	if s.parentBased && parent.IsValid() {
		return parent.IsSampled()
	}
	switch {
	case s.ratio >= 1:
		return true
	case s.ratio <= 0:
		return false
	}
	// As the SDK's TraceIDRatioBased: the trace id's low 63 bits against
	// the ratio of 2^63, so that every service of a trace decides alike.
	return binary.BigEndian.Uint64(traceID[8:16])>>1 < uint64(s.ratio*(1<<63))
}

// samplerFromEnv reads OTEL_TRACES_SAMPLER and its argument (default
// parentbased_always_on).
func samplerFromEnv(getenv func(string) string) (sampler, error) {
	name := strings.ToLower(strings.TrimSpace(getenv(EnvTracesSampler)))
	arg := strings.TrimSpace(getenv(EnvTracesSamplerArg))
	ratio := func() (float64, error) {
		if arg == "" {
			return 1, nil
		}
		r, err := strconv.ParseFloat(arg, 64)
		if err != nil || r < 0 || r > 1 {
			return 0, fmt.Errorf("%s=%q (want a ratio in [0, 1])", EnvTracesSamplerArg, arg)
		}
		return r, nil
	}
	switch name {
	case "", "parentbased_always_on":
		return sampler{parentBased: true, ratio: 1}, nil
	case "always_on":
		return sampler{ratio: 1}, nil
	case "always_off":
		return sampler{ratio: 0}, nil
	case "parentbased_always_off":
		return sampler{parentBased: true, ratio: 0}, nil
	case "traceidratio", "parentbased_traceidratio":
		r, err := ratio()
		return sampler{parentBased: name != "traceidratio", ratio: r}, err
	}
	return sampler{}, fmt.Errorf("%s=%q (want always_on, always_off, traceidratio or their parentbased_ forms)", EnvTracesSampler, name)
}

// resourceFromEnv is service.name (serviceName, then OTEL_RESOURCE_ATTRIBUTES,
// then OTEL_SERVICE_NAME, the later winning) and the telemetry.sdk.*
// attributes.
func resourceFromEnv(getenv func(string) string, serviceName string) (*resourceInfo, error) {
	attrs := map[string]string{"service.name": serviceName}
	var errs []error
	for _, pair := range strings.Split(getenv(EnvResourceAttrs), ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		val, err := url.PathUnescape(strings.TrimSpace(v))
		if !ok || k == "" || err != nil {
			errs = append(errs, fmt.Errorf("%s: bad entry %q (want key=value, the value percent-encoded)", EnvResourceAttrs, pair))
			continue
		}
		attrs[k] = val
	}
	if s := strings.TrimSpace(getenv(EnvServiceName)); s != "" {
		attrs["service.name"] = s
	}
	attrs["telemetry.sdk.name"], attrs["telemetry.sdk.language"], attrs["telemetry.sdk.version"] =
		telemetrySDKName, "go", telemetrySDKVersion
	kvs := make([]attribute.KeyValue, 0, len(attrs))
	for k, v := range attrs {
		kvs = append(kvs, attribute.String(k, v))
	}
	set := attribute.NewSet(kvs...) // sorted by key
	return &resourceInfo{attrs: set.ToSlice()}, errors.Join(errs...)
}

// provider implements trace.TracerProvider: spans of its tracers are
// sampled by its sampler and, once ended, batched to its exporter.
type provider struct {
	embedded.TracerProvider
	res     *resourceInfo
	sampler sampler
	bsp     *batcher
}

// Tracer implements trace.TracerProvider.
func (p *provider) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	c := trace.NewTracerConfig(opts...)
	return &tracer{p: p, scope: scope{name: name, version: c.InstrumentationVersion(), schemaURL: c.SchemaURL(),
		attrs: c.InstrumentationAttributes()}}
}

// ForceFlush exports every ended span.
func (p *provider) ForceFlush(ctx context.Context) error { return p.bsp.flush(ctx) }

// Shutdown flushes and stops the exporter.
func (p *provider) Shutdown(ctx context.Context) error { return p.bsp.shutdown(ctx) }

type tracer struct {
	embedded.Tracer
	p     *provider
	scope scope
}

func newSpanID() (id trace.SpanID) {
	for !id.IsValid() {
		binary.BigEndian.PutUint64(id[:], rand.Uint64())
	}
	return id
}

// Start implements trace.Tracer.
func (t *tracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	c := trace.NewSpanStartConfig(opts...)
	parent := trace.SpanContextFromContext(ctx)
	if c.NewRoot() {
		parent = trace.SpanContext{}
	}
	cfg := trace.SpanContextConfig{SpanID: newSpanID()}
	if parent.IsValid() {
		cfg.TraceID, cfg.TraceState = parent.TraceID(), parent.TraceState()
	} else {
		for !cfg.TraceID.IsValid() {
			binary.BigEndian.PutUint64(cfg.TraceID[:8], rand.Uint64())
			binary.BigEndian.PutUint64(cfg.TraceID[8:], rand.Uint64())
		}
	}
	if !t.p.sampler.sample(parent, cfg.TraceID) {
		// Not recorded; its context still carries the trace to children.
		return trace.ContextWithSpanContext(ctx, trace.NewSpanContext(cfg)), nonRecording{sc: trace.NewSpanContext(cfg), p: t.p}
	}
	cfg.TraceFlags = trace.FlagsSampled
	start := c.Timestamp()
	if start.IsZero() {
		start = time.Now()
	}
	s := &span{t: t, rec: spanRecord{name: name, sc: trace.NewSpanContext(cfg), parent: parent,
		kind: trace.ValidateSpanKind(c.SpanKind()), start: start, scope: t.scope, res: t.p.res}}
	s.setAttributes(c.Attributes())
	for _, l := range c.Links() {
		s.addLink(l)
	}
	return trace.ContextWithSpan(ctx, s), s
}

// span is a recording span.
type span struct {
	embedded.Span
	t     *tracer
	mu    sync.Mutex
	rec   spanRecord
	ended bool
}

var _ trace.Span = (*span)(nil)

// limitAttrs keeps the first spanLimit attributes.
func limitAttrs(kvs []attribute.KeyValue) ([]attribute.KeyValue, int) {
	if len(kvs) > spanLimit {
		return kvs[:spanLimit:spanLimit], len(kvs) - spanLimit
	}
	return kvs, 0
}

// setAttributes sets kvs, a key set again replacing its value; s.mu held
// or s not yet shared.
func (s *span) setAttributes(kvs []attribute.KeyValue) {
next:
	for _, kv := range kvs {
		if !kv.Valid() {
			continue
		}
		for i := range s.rec.attrs {
			if s.rec.attrs[i].Key == kv.Key {
				s.rec.attrs[i] = kv
				continue next
			}
		}
		if len(s.rec.attrs) >= spanLimit {
			s.rec.droppedAttrs++
			continue
		}
		s.rec.attrs = append(s.rec.attrs, kv)
	}
}

func (s *span) addLink(l trace.Link) {
	if !l.SpanContext.IsValid() {
		return
	}
	if len(s.rec.links) >= spanLimit {
		s.rec.droppedLinks++
		return
	}
	attrs, dropped := limitAttrs(l.Attributes)
	s.rec.links = append(s.rec.links, spanLink{sc: l.SpanContext, attrs: attrs, dropped: dropped})
}

func (s *span) addEvent(name string, opts []trace.EventOption, extra ...attribute.KeyValue) {
	c := trace.NewEventConfig(opts...)
	at := c.Timestamp()
	if at.IsZero() {
		at = time.Now()
	}
	attrs, dropped := limitAttrs(append(extra, c.Attributes()...))
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	if len(s.rec.events) >= spanLimit {
		s.rec.droppedEvents++
		return
	}
	s.rec.events = append(s.rec.events, spanEvent{name: name, time: at, attrs: attrs, dropped: dropped})
}

// End implements trace.Span: the span goes to the batch processor once.
func (s *span) End(opts ...trace.SpanEndOption) {
	c := trace.NewSpanEndConfig(opts...)
	end := c.Timestamp()
	if end.IsZero() {
		end = time.Now()
	}
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.ended = true
	s.rec.end = end
	rec := s.rec
	s.mu.Unlock()
	s.t.p.bsp.add(&rec)
}

// AddEvent implements trace.Span.
func (s *span) AddEvent(name string, opts ...trace.EventOption) { s.addEvent(name, opts) }

// AddLink implements trace.Span.
func (s *span) AddLink(l trace.Link) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		s.addLink(l)
	}
}

// IsRecording implements trace.Span: until it ends.
func (s *span) IsRecording() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.ended
}

// RecordError implements trace.Span: an "exception" event, as the SDK
// records it (exception.type, exception.message).
func (s *span) RecordError(err error, opts ...trace.EventOption) {
	if err == nil {
		return
	}
	s.addEvent("exception", opts, attribute.String("exception.type", errorType(err)),
		attribute.String("exception.message", err.Error()))
}

func errorType(err error) string {
	t := reflect.TypeOf(err)
	if t.PkgPath() == "" && t.Name() == "" {
		return t.String()
	}
	return t.PkgPath() + "." + t.Name()
}

// SpanContext implements trace.Span.
func (s *span) SpanContext() trace.SpanContext { return s.rec.sc }

// SetStatus implements trace.Span: Ok is final, Error wins over Unset, the
// description is kept for Error only.
func (s *span) SetStatus(code codes.Code, description string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended || code == codes.Unset || s.rec.status == codes.Ok {
		return
	}
	s.rec.status, s.rec.statusDesc = code, ""
	if code == codes.Error {
		s.rec.statusDesc = description
	}
}

// SetName implements trace.Span.
func (s *span) SetName(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		s.rec.name = name
	}
}

// SetAttributes implements trace.Span.
func (s *span) SetAttributes(kvs ...attribute.KeyValue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		s.setAttributes(kvs)
	}
}

// TracerProvider implements trace.Span.
func (s *span) TracerProvider() trace.TracerProvider { return s.t.p }

// nonRecording is a span the sampler left out: it only carries its context.
type nonRecording struct {
	embedded.Span
	sc trace.SpanContext
	p  *provider
}

func (nonRecording) End(...trace.SpanEndOption)              {}
func (nonRecording) AddEvent(string, ...trace.EventOption)   {}
func (nonRecording) AddLink(trace.Link)                      {}
func (nonRecording) IsRecording() bool                       { return false }
func (nonRecording) RecordError(error, ...trace.EventOption) {}
func (n nonRecording) SpanContext() trace.SpanContext        { return n.sc }
func (nonRecording) SetStatus(codes.Code, string)            {}
func (nonRecording) SetName(string)                          {}
func (nonRecording) SetAttributes(...attribute.KeyValue)     {}
func (n nonRecording) TracerProvider() trace.TracerProvider  { return n.p }

// batcher is the batch span processor: ended spans queue (up to maxQueue;
// beyond, they are dropped and counted) and go to the exporter in batches
// of maxBatch, every delay or as soon as a batch is full, and on flush.
type batcher struct {
	exp      spanExporter
	delay    time.Duration
	timeout  time.Duration
	maxQueue int
	maxBatch int

	mu      sync.Mutex
	queue   []*spanRecord
	dropped int
	stopped bool
	wake    chan struct{} // a batch is full
	done    chan struct{} // the loop ended
	stop    chan struct{}
	expMu   sync.Mutex // one export at a time
	onError func(error)
}

// batcherFromEnv reads the OTEL_BSP_* variables (milliseconds, counts).
func batcherFromEnv(getenv func(string) string, exp spanExporter, onError func(error)) (*batcher, error) {
	b := &batcher{exp: exp, delay: defaultBSPDelay, timeout: defaultBSPTimeout, maxQueue: defaultBSPQueue,
		maxBatch: defaultBSPBatch, onError: onError}
	var errs []error
	num := func(name string, f func(n int)) {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				errs = append(errs, fmt.Errorf("%s=%q (want a positive integer)", name, v))
				return
			}
			f(n)
		}
	}
	num(EnvBSPScheduleDelay, func(n int) { b.delay = time.Duration(n) * time.Millisecond })
	num(EnvBSPExportTimeout, func(n int) { b.timeout = time.Duration(n) * time.Millisecond })
	num(EnvBSPMaxQueueSize, func(n int) { b.maxQueue = n })
	num(EnvBSPMaxBatchSize, func(n int) { b.maxBatch = n })
	b.maxBatch = min(b.maxBatch, b.maxQueue)
	return b, errors.Join(errs...)
}

// start runs the export loop.
func (b *batcher) start() *batcher {
	b.wake, b.done, b.stop = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	go b.loop()
	return b
}

func (b *batcher) loop() {
	defer close(b.done)
	t := time.NewTimer(b.delay)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-b.wake:
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
		if err := b.exportQueued(ctx); err != nil && b.onError != nil {
			b.onError(err)
		}
		cancel()
		t.Reset(b.delay)
	}
}

// add queues an ended span.
func (b *batcher) add(s *spanRecord) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped || len(b.queue) >= b.maxQueue {
		b.dropped++
		return
	}
	b.queue = append(b.queue, s)
	if len(b.queue) >= b.maxBatch {
		select {
		case b.wake <- struct{}{}:
		default:
		}
	}
}

// exportQueued exports the queue, in batches of at most maxBatch, until it
// is empty or ctx ends.
func (b *batcher) exportQueued(ctx context.Context) error {
	b.expMu.Lock()
	defer b.expMu.Unlock()
	var errs []error
	for {
		b.mu.Lock()
		n := min(len(b.queue), b.maxBatch)
		batch := b.queue[:n:n]
		b.queue = b.queue[n:]
		dropped := b.dropped
		b.dropped = 0
		b.mu.Unlock()
		if dropped > 0 {
			errs = append(errs, fmt.Errorf("obs: %d spans dropped: the queue (%s=%d) was full", dropped, EnvBSPMaxQueueSize, b.maxQueue))
		}
		if n == 0 {
			return errors.Join(errs...)
		}
		if err := b.exp.export(ctx, batch); err != nil {
			errs = append(errs, err)
		}
		if ctx.Err() != nil {
			return errors.Join(errs...)
		}
	}
}

// flush exports every queued span within ctx.
func (b *batcher) flush(ctx context.Context) error { return b.exportQueued(ctx) }

// shutdown flushes, stops the loop and shuts the exporter down; later
// spans are dropped.
func (b *batcher) shutdown(ctx context.Context) error {
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return nil
	}
	b.stopped = true
	b.mu.Unlock()
	if b.stop != nil {
		close(b.stop)
		<-b.done
	}
	return errors.Join(b.flush(ctx), b.exp.shutdown(ctx))
}
