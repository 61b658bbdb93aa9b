package functions

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/obs"
	"github.com/stela-dev/stela/timers"
)

// Properties of every EMF line (searchable with Logs Insights; not
// dimensions).
const (
	emfPropFunction  = "Function"
	emfPropRequestID = "RequestId"
)

// DefaultTimersFlushEvery is how often the `timers` function writes its
// metrics during an invocation (the sweep lag alarm needs a data point
// every minute, and an invocation lasts nearly a minute).
const DefaultTimersFlushEvery = 10 * time.Second

// Telemetry flushes a function's metrics, as CloudWatch Embedded Metric
// Format lines on Out (stdout: the function's log, which CloudWatch turns
// into metrics without an API call), and its spans, at the end of each
// invocation. Both Metrics and Tracing may be nil (off).
type Telemetry struct {
	Metrics *obs.Metrics
	Tracing *obs.Tracing
	// Out receives the EMF lines.
	Out io.Writer
	// Namespace is the CloudWatch namespace (default obs.DefaultNamespace).
	Namespace string
	// Function names the function on every line (property "Function").
	Function string
	// Logger receives flush failures. Default slog.Default().
	Logger *slog.Logger
}

// Flush writes the metrics changed since the last flush and exports the
// spans ended so far. Failures are logged, never returned: telemetry must
// not fail an invocation.
func (t *Telemetry) Flush(ctx context.Context) {
	if t == nil {
		return
	}
	log := t.Logger
	if log == nil {
		log = slog.Default()
	}
	if t.Metrics != nil && t.Out != nil {
		props := map[string]string{}
		if t.Function != "" {
			props[emfPropFunction] = t.Function
		}
		if lc, ok := lambdacontext.FromContext(ctx); ok && lc.AwsRequestID != "" {
			props[emfPropRequestID] = lc.AwsRequestID
		}
		if err := t.Metrics.WriteEMF(t.Out, obs.EMFOptions{Namespace: t.Namespace, Properties: props}); err != nil {
			log.WarnContext(ctx, "metrics flush failed", core.LogKeyErr, err)
		}
	}
	if t.Tracing != nil {
		// The invocation may be over (its deadline passed): the export gets
		// its own bound.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		if err := t.Tracing.Flush(fctx); err != nil {
			log.WarnContext(ctx, "trace flush failed", core.LogKeyErr, err)
		}
	}
}

// Instrument wraps a Lambda handler so that each invocation ends with
// t.Flush, whatever its outcome.
func Instrument[In, Out any](t *Telemetry, h func(context.Context, In) (Out, error)) func(context.Context, In) (Out, error) {
	if t == nil {
		return h
	}
	return func(ctx context.Context, in In) (Out, error) {
		defer t.Flush(ctx)
		return h(ctx, in)
	}
}

// flushingObserver passes every timers pass to inner and flushes the
// telemetry when every has passed since the last flush.
type flushingObserver struct {
	inner timers.Observer
	tel   *Telemetry
	every time.Duration
	last  time.Time
}

// RetentionPass passes a retention pass to inner (flushed with the next
// timers pass or at the end of the invocation).
func (f *flushingObserver) RetentionPass(ctx context.Context, p timers.RetentionPass) {
	if r, ok := f.inner.(timers.RetentionObserver); ok {
		r.RetentionPass(ctx, p)
	}
}

func (f *flushingObserver) Pass(ctx context.Context, p timers.Pass) {
	if f.inner != nil {
		f.inner.Pass(ctx, p)
	}
	if now := time.Now(); now.Sub(f.last) >= f.every {
		f.last = now
		f.tel.Flush(ctx)
	}
}
