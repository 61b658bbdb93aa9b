// Package tracemeta carries W3C trace context in an execution's metadata,
// with Obelisk's convention: the OpenTelemetry propagation keys prefixed
// with "tracing:" ({"tracing:traceparent": "00-<trace id>-<span id>-01",
// "tracing:tracestate": …}), and the marker "tracing:obelisk-tracing-linked"
// (empty value) meaning the execution's spans link to that context instead
// of being its children.
//
// The HTTP API stores the submitting request's trace context when it
// creates an execution (ForRequest); a worker continues the trace from the
// metadata of what it locked (Context) and sends it back as the
// `traceparent` header of every request about that execution, and copies
// the metadata into the children it creates, so one trace follows a
// workflow and everything it spawned (docs/operations.md, "Tracing").
package tracemeta

import (
	"context"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/stela-dev/stela/core"
)

// Metadata keys (Obelisk's convention).
const (
	// Prefix is prepended to every propagation key.
	Prefix = "tracing:"
	// KeyTraceparent holds the W3C traceparent.
	KeyTraceparent = Prefix + "traceparent"
	// KeyTracestate holds the W3C tracestate.
	KeyTracestate = Prefix + "tracestate"
	// KeyLinked (empty value) marks a linked, not parent, context.
	KeyLinked = Prefix + "obelisk-tracing-linked"
)

// propagator is the W3C trace-context format (traceparent, tracestate).
var propagator = propagation.TraceContext{}

// carrier adapts metadata to propagation.TextMapCarrier, prefixing keys.
type carrier core.ExecutionMetadata

func (c carrier) Get(key string) string { return c[Prefix+key] }
func (c carrier) Set(key, value string) { c[Prefix+key] = value }
func (c carrier) Keys() []string {
	var out []string
	for k := range c {
		if rest, ok := strings.CutPrefix(k, Prefix); ok {
			out = append(out, rest)
		}
	}
	return out
}

// Inject returns metadata carrying sc (nil when sc is not valid).
func Inject(sc trace.SpanContext) core.ExecutionMetadata {
	if !sc.IsValid() {
		return nil
	}
	md := core.ExecutionMetadata{}
	propagator.Inject(trace.ContextWithSpanContext(context.Background(), sc), carrier(md))
	return md
}

// ForRequest returns the metadata of an execution created by r: the trace
// context of the span in ctx when there is one (tracing is on: the
// execution's trace continues from the request that created it), else the
// request's own valid `traceparent` / `tracestate` headers; nil when
// neither.
func ForRequest(ctx context.Context, r *http.Request) core.ExecutionMetadata {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		return Inject(sc)
	}
	if r.Header.Get("traceparent") == "" {
		return nil
	}
	// Values are re-joined: proxies (aws-lambda-go-api-proxy) split headers on commas.
	h := propagation.HeaderCarrier{}
	for _, name := range []string{"traceparent", "tracestate"} {
		if v := strings.Join(r.Header.Values(name), ","); v != "" {
			h.Set(name, v)
		}
	}
	return Inject(trace.SpanContextFromContext(propagator.Extract(context.Background(), h)))
}

// SpanContext returns the trace context stored in md (not valid when
// there is none) and whether it is marked as linked.
func SpanContext(md core.ExecutionMetadata) (sc trace.SpanContext, linked bool) {
	if md == nil {
		return trace.SpanContext{}, false
	}
	_, linked = md[KeyLinked]
	return trace.SpanContextFromContext(propagator.Extract(context.Background(), carrier(md))), linked
}

// Context returns ctx carrying md's trace context as the remote parent of
// the spans started from it (unchanged when md has none or is linked).
func Context(ctx context.Context, md core.ExecutionMetadata) context.Context {
	sc, linked := SpanContext(md)
	if !sc.IsValid() || linked {
		return ctx
	}
	return trace.ContextWithRemoteSpanContext(ctx, sc)
}

// Header sets the `traceparent` (and `tracestate`) headers of an HTTP
// request about an execution from its metadata: what a worker sends so
// that the server's spans join the execution's trace.
func Header(h http.Header, md core.ExecutionMetadata) {
	if v := md[KeyTraceparent]; v != "" {
		h.Set("traceparent", v)
		if s := md[KeyTracestate]; s != "" {
			h.Set("tracestate", s)
		}
	}
}
