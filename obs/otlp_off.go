//go:build stela_nootlp

package obs

import (
	"context"
	"errors"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// haveOTLP: this build cannot export spans.
const haveOTLP = false

// newOTLPExporter fails: this build leaves the OTLP exporter out (-tags
// stela_nootlp).
func newOTLPExporter(context.Context) (sdktrace.SpanExporter, error) {
	return nil, errors.New("this build has no OTLP exporter (built with -tags stela_nootlp)")
}
