package obs

import (
	"context"
	"net/http"
	"time"

	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/timers"
)

// Observer reports what the store, the HTTP handler and the timers loop
// did to Metrics and Tracing, either of which may be nil (off). It
// implements store.Observer, httpapi.Observer and timers.Observer (obs
// does not import httpapi, which imports obs/tracemeta: the httpapi check
// is in observer_test.go).
type Observer struct {
	metrics *Metrics
	tracing *Tracing
}

var (
	_ store.Observer           = (*Observer)(nil)
	_ timers.Observer          = (*Observer)(nil)
	_ timers.RetentionObserver = (*Observer)(nil)
)

// NewObserver reports to m and t (either may be nil).
func NewObserver(m *Metrics, t *Tracing) *Observer { return &Observer{metrics: m, tracing: t} }

// Metrics returns the metrics reported to (nil when off).
func (o *Observer) Metrics() *Metrics { return o.metrics }

// Tracing returns the tracing reported to (nil when off).
func (o *Observer) Tracing() *Tracing { return o.tracing }

// Commit implements store.Observer.
func (o *Observer) Commit(ctx context.Context, c store.Commit) {
	if o.metrics != nil {
		o.metrics.StoreCommit(c)
	}
	if o.tracing != nil {
		o.tracing.commitSpan(ctx, c)
	}
}

// LockCall implements store.Observer.
func (o *Observer) LockCall(_ context.Context, requested, granted int) {
	if o.metrics != nil {
		o.metrics.LockCall(requested, granted)
	}
}

// Pass implements timers.Observer.
func (o *Observer) Pass(_ context.Context, p timers.Pass) {
	if o.metrics != nil {
		o.metrics.TimersPass(p)
	}
}

// RetentionPass implements timers.RetentionObserver.
func (o *Observer) RetentionPass(_ context.Context, p timers.RetentionPass) {
	if o.metrics != nil {
		o.metrics.RetentionPass(p)
	}
}

// RequestStarted implements httpapi.Observer: with tracing on, ctx gets the
// request's server span (child of its `traceparent`).
func (o *Observer) RequestStarted(ctx context.Context, r *http.Request) context.Context {
	if o.tracing != nil {
		return o.tracing.startRequest(ctx, r)
	}
	return ctx
}

// RequestDone implements httpapi.Observer.
func (o *Observer) RequestDone(ctx context.Context, route string, status int, d time.Duration) {
	if o.metrics != nil {
		o.metrics.HTTPRequest(route, status, d)
	}
	if o.tracing != nil {
		o.tracing.endRequest(ctx, route, status)
	}
}
