//go:build !stela_nootlp

package obs

import (
	"context"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// haveOTLP: this build can export spans.
const haveOTLP = true

// newOTLPExporter returns the OTLP/HTTP exporter configured by the
// OTEL_EXPORTER_OTLP_* variables. It links gRPC and protobuf (the exporter's
// own dependencies, ~10 MB of a Lambda binary); build with -tags
// stela_nootlp to leave it out (tracing then refuses to turn on).
func newOTLPExporter(ctx context.Context) (sdktrace.SpanExporter, error) {
	return otlptracehttp.New(ctx)
}
