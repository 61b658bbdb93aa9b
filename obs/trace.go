package obs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/stela-dev/stela/store"
)

// Environment variables of TracingFromEnv (the OpenTelemetry
// specification's; the exporter also reads the EnvOTLP* variables of
// otlp.go, and the tracer those of tracer.go: OTEL_TRACES_SAMPLER,
// OTEL_BSP_*, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES).
const (
	EnvSDKDisabled         = "OTEL_SDK_DISABLED"
	EnvTracesExporter      = "OTEL_TRACES_EXPORTER"
	EnvOTLPEndpoint        = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvOTLPTracesEndpoint  = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	instrumentationName    = "github.com/stela-dev/stela"
	attrRoute              = "http.route"
	attrMethod             = "http.request.method"
	attrStatus             = "http.response.status_code"
	attrPath               = "url.path"
	attrOp                 = "stela.store.op"
	attrResult             = "stela.store.result"
	attrCreated            = "stela.executions.created"
	spanStoreCommitPrefix  = "stela.store "
	defaultHTTPSpanName    = "HTTP"
	errUnsupportedExporter = "unsupported " + EnvTracesExporter
)

// Tracing makes spans of HTTP requests and store commits with
// OpenTelemetry. A nil *Tracing is "off" and costs nothing.
type Tracing struct {
	tracer   trace.Tracer
	prop     propagation.TextMapPropagator
	flush    func(context.Context) error
	shutdown func(context.Context) error
}

// NewTracing traces with tp (TracingFromEnv passes Stela's own provider,
// tests the OpenTelemetry SDK's with an in-memory exporter); incoming
// requests are joined to their W3C `traceparent`. Flush and Shutdown call
// tp's ForceFlush and Shutdown when it has them.
func NewTracing(tp trace.TracerProvider) *Tracing {
	t := &Tracing{tracer: tp.Tracer(instrumentationName), prop: propagation.TraceContext{},
		flush: func(context.Context) error { return nil }, shutdown: func(context.Context) error { return nil }}
	if p, ok := tp.(interface {
		ForceFlush(context.Context) error
		Shutdown(context.Context) error
	}); ok {
		t.flush, t.shutdown = p.ForceFlush, p.Shutdown
	}
	return t
}

// TracingFromEnv configures tracing from the standard OpenTelemetry
// variables read through getenv: it is on when OTEL_TRACES_EXPORTER is
// "otlp", or unset while OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set; spans then go to that
// collector over OTLP/HTTP (protobuf) in batches. It is off (nil, nil)
// otherwise, with OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none.
// serviceName is the default service.name (OTEL_SERVICE_NAME wins). A
// configuration the exporter cannot honour (OTEL_EXPORTER_OTLP_PROTOCOL=grpc,
// a malformed endpoint or header list…) is an error naming the variable.
func TracingFromEnv(ctx context.Context, getenv func(string) string, serviceName string) (*Tracing, error) {
	if strings.EqualFold(getenv(EnvSDKDisabled), "true") {
		return nil, nil
	}
	switch exp := strings.TrimSpace(getenv(EnvTracesExporter)); exp {
	case "none":
		return nil, nil
	case "":
		if getenv(EnvOTLPEndpoint) == "" && getenv(EnvOTLPTracesEndpoint) == "" {
			return nil, nil
		}
	case "otlp":
	default:
		return nil, fmt.Errorf("obs: %s %s=%q (want otlp or none)", errUnsupportedExporter, EnvTracesExporter, exp)
	}
	exporter, err := newOTLPExporter(getenv)
	if err != nil {
		return nil, fmt.Errorf("obs: OTLP trace exporter: %w", err)
	}
	smp, err1 := samplerFromEnv(getenv)
	res, err2 := resourceFromEnv(getenv, serviceName)
	bsp, err3 := batcherFromEnv(getenv, exporter, func(err error) {
		slog.Default().Warn("trace export failed", "err", err)
	})
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, fmt.Errorf("obs: tracing: %w", err)
	}
	return NewTracing(&provider{res: res, sampler: smp, bsp: bsp.start()}), nil
}

// Flush exports the spans ended so far (a Lambda invocation calls it before
// returning: the process may be frozen afterwards).
func (t *Tracing) Flush(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.flush(ctx)
}

// Shutdown flushes and stops the exporter.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.shutdown(ctx)
}

// startRequest starts the server span of r, child of its `traceparent`.
func (t *Tracing) startRequest(ctx context.Context, r *http.Request) context.Context {
	ctx = t.prop.Extract(ctx, propagation.HeaderCarrier(r.Header))
	ctx, _ = t.tracer.Start(ctx, defaultHTTPSpanName+" "+r.Method, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String(attrMethod, r.Method), attribute.String(attrPath, r.URL.Path)))
	return ctx
}

// endRequest names the request's span by its route and ends it.
func (t *Tracing) endRequest(ctx context.Context, route string, status int) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	if route != "" {
		span.SetName(route)
		span.SetAttributes(attribute.String(attrRoute, route))
	}
	span.SetAttributes(attribute.Int(attrStatus, status))
	if status >= 500 {
		span.SetStatus(codes.Error, http.StatusText(status))
	}
	span.End()
}

// commitSpan records a store transaction as a child span of the request
// in ctx (nothing outside a traced request: the timers' thousands of
// commits would drown the traces).
func (t *Tracing) commitSpan(ctx context.Context, c store.Commit) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	_, span := t.tracer.Start(ctx, spanStoreCommitPrefix+c.Op.String(), trace.WithTimestamp(c.Start),
		trace.WithAttributes(attribute.String(attrOp, c.Op.String()), attribute.String(attrResult, c.Result()),
			attribute.Int(attrCreated, c.Created)))
	if c.Err != nil {
		span.RecordError(c.Err)
		if r := c.Result(); r == "error" || r == "unavailable" || r == "timeout" {
			span.SetStatus(codes.Error, r)
		}
	}
	span.End(trace.WithTimestamp(c.Start.Add(c.Duration)))
}
