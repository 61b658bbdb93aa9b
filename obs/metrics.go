package obs

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/timers"
)

// Metric names (the Prometheus exposition; EMF names are in vocabulary).
const (
	MetricExecutionsCreated  = "stela_executions_created_total"
	MetricExecutionsFinished = "stela_executions_finished_total"
	MetricLockGrants         = "stela_lock_grants_total"
	MetricLockBatchSize      = "stela_lock_batch_size"
	MetricCommitDuration     = "stela_store_commit_duration_seconds"
	MetricCommits            = "stela_store_commits_total"
	MetricBackendCommits     = "stela_store_backend_commits_total"
	MetricStoreRetries       = "stela_store_retries_total"
	MetricStoreResends       = "stela_store_resends_total"
	MetricWriteTransactions  = "stela_store_write_transactions_total"
	MetricDynamoThrottles    = "stela_dynamodb_throttles_total"
	MetricDynamoErrors       = "stela_dynamodb_errors_total"
	MetricSweepPasses        = "stela_timers_passes_total"
	MetricSweepDuration      = "stela_timers_pass_duration_seconds"
	MetricDelaysFired        = "stela_timers_delays_fired_total"
	MetricLocksExpired       = "stela_timers_locks_expired_total"
	MetricSweepSkipped       = "stela_timers_skipped_total"
	MetricCancellations      = "stela_timers_cancellations_finished_total"
	MetricSweepLag           = "stela_timers_sweep_lag_seconds"
	MetricRetentionPasses    = "stela_retention_passes_total"
	MetricRetentionExpired   = "stela_retention_trees_expired_total"
	MetricRetentionItems     = "stela_retention_items_total"
	MetricHTTPRequests       = "stela_http_requests_total"
	MetricHTTPDuration       = "stela_http_request_duration_seconds"
)

// Label values of requests that matched no route pattern.
const (
	RouteUnmatched = "unmatched"
)

// Buckets of the histograms.
var (
	// latencyBuckets (seconds) span an fsync'd SQLite commit (~1 ms) to a
	// long poll (20 s).
	latencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}
	// batchBuckets cover lock batch sizes up to wire.MaxLockBatch and
	// in-process batches beyond it.
	batchBuckets = []float64{0, 1, 2, 4, 8, 16, 25, 50, 100}
)

// Metrics is Stela's one metrics vocabulary on a registry of its own
// (registry.go): the store, the HTTP handler and the timers loop report to
// it (through Observer), /metrics exposes it as Prometheus text (Handler,
// WritePrometheus) and the Lambda functions write it as CloudWatch
// Embedded Metric Format (EMF). It is safe for concurrent use.
type Metrics struct {
	reg *registry

	created     *series
	finished    [store.NumOutcomes]*series
	lockGrants  *series
	lockBatch   *series
	commitDur   []*series                  // by store.Op
	commits     [][]*series                // by store.Op, result index
	resultIndex map[string]int             // store.ResultOf → index
	passes      [2]*series                 // ok, failed
	passDur     *series                    //
	fired       *series                    //
	expired     *series                    //
	skipped     *series                    //
	cancelled   *series                    //
	lag         *lagGauge                  //
	retPasses   [2]*series                 // ok, failed
	retExpired  *series                    //
	retItems    *series                    //
	httpReqs    *family                    // route, code
	httpDur     *family                    // route
	httpMu      sync.RWMutex               //
	httpCache   map[routeStatus]httpSeries // resolved series, so the hot path does not allocate
	throttles   *series                    //
	dynamoErrs  *family                    // operation, code
	backendOnce sync.Once                  //
	emf         emfState                   // last values flushed as EMF
}

type routeStatus struct {
	route  string
	status int
}

type httpSeries struct {
	reqs *series
	dur  *series
}

// NewMetrics returns the vocabulary registered on a fresh registry. (The
// Go runtime and process metrics `stela dev` also serves are its own
// business: cmd/stela adds them to what WritePrometheus writes.)
func NewMetrics() *Metrics {
	reg := newRegistry()
	m := &Metrics{reg: reg, httpCache: map[routeStatus]httpSeries{}, resultIndex: map[string]int{}}
	counter := func(name, help string) *series { return reg.counter(name, help).with() }
	m.created = counter(MetricExecutionsCreated, "Executions created (top-level and children).")
	finished := reg.counter(MetricExecutionsFinished,
		"Executions finished, by outcome (ok, error, timeout, cancelled, nondeterminism, out_of_fuel, failure).", "outcome")
	for o := range store.NumOutcomes {
		m.finished[o] = finished.with(o.String())
	}
	m.lockGrants = counter(MetricLockGrants, "Executions locked by workers.")
	m.lockBatch = reg.histogram(MetricLockBatchSize, "Executions granted per lock request.", batchBuckets).with()

	commitDur := reg.histogram(MetricCommitDuration,
		"Wall time of the store's transactions by operation (op=\"append\" is the append latency), backend retries included.",
		latencyBuckets, "op")
	commits := reg.counter(MetricCommits,
		"Store transactions by operation and result (ok, version_conflict, conflict, already_finished, …).", "op", "result")
	results := store.CommitResults()
	for i, r := range results {
		m.resultIndex[r] = i
	}
	for _, op := range store.Ops() {
		m.commitDur = append(m.commitDur, commitDur.with(op.String()))
		row := make([]*series, len(results))
		for i, r := range results {
			row[i] = commits.with(op.String(), r)
		}
		m.commits = append(m.commits, row)
	}

	passes := reg.counter(MetricSweepPasses, "Timer sweep passes (sweep + cancellation driver), by result (ok, failed).", "result")
	m.passes = [2]*series{passes.with("ok"), passes.with("failed")}
	m.passDur = reg.histogram(MetricSweepDuration, "Wall time of one timers pass.", latencyBuckets).with()
	m.fired = counter(MetricDelaysFired, "Delays the timer sweep fired.")
	m.expired = counter(MetricLocksExpired, "Expired locks the timer sweep resolved (retried, unlocked or finished).")
	m.skipped = counter(MetricSweepSkipped, "Timers another sweeper or a late worker resolved first.")
	m.cancelled = counter(MetricCancellations, "Cancelling executions the cancellation driver finished.")
	m.lag = &lagGauge{}
	reg.gaugeFunc(MetricSweepLag,
		"Sweep lag: now minus the deadline of the oldest due timer (delay or expired lock) not yet handled; 0 when none.", m.lag.read)
	retPasses := reg.counter(MetricRetentionPasses, "Retention passes (expiring finished execution trees), by result (ok, failed).", "result")
	m.retPasses = [2]*series{retPasses.with("ok"), retPasses.with("failed")}
	m.retExpired = counter(MetricRetentionExpired, "Finished execution trees the retention passes removed (embedded) or marked with their expiry (DynamoDB).")
	m.retItems = counter(MetricRetentionItems, "Rows the retention passes deleted (embedded) or items they marked with their expiry (DynamoDB).")

	m.httpReqs = reg.counter(MetricHTTPRequests, "HTTP requests by route pattern and status code.", "route", "code")
	m.httpDur = reg.histogram(MetricHTTPDuration, "HTTP request latency by route pattern.", latencyBuckets, "route")

	m.throttles = counter(MetricDynamoThrottles, "DynamoDB request attempts throttled (the SDK retried them), cancellation reasons included.")
	m.dynamoErrs = reg.counter(MetricDynamoErrors,
		"DynamoDB request attempts that failed, by operation and error code (ConditionalCheckFailedException and TransactionCanceledException are the store's contention).",
		"operation", "code")
	return m
}

// WritePrometheus writes the metrics in the Prometheus text exposition
// format (version 0.0.4), families sorted by name.
func (m *Metrics) WritePrometheus(w io.Writer) error { return writeText(w, m.reg.gather()) }

// PrometheusContentType is the Content-Type of WritePrometheus's output.
const PrometheusContentType = "text/plain; version=0.0.4; charset=utf-8"

// Handler serves the metrics as Prometheus text (WritePrometheus).
func (m *Metrics) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		var b bytes.Buffer
		if err := m.WritePrometheus(&b); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", PrometheusContentType)
		_, _ = w.Write(b.Bytes())
	})
}

// --- store ---------------------------------------------------------------------

// StoreCommit records one store transaction.
func (m *Metrics) StoreCommit(c store.Commit) {
	op := int(c.Op)
	if op >= len(m.commits) {
		op = int(store.OpOther)
	}
	m.commitDur[op].observe(c.Duration.Seconds())
	m.commits[op][m.resultIndex[c.Result()]].inc()
	if c.Created > 0 {
		m.created.add(float64(c.Created))
	}
	for o, n := range c.Finished {
		if n > 0 {
			m.finished[o].add(float64(n))
		}
	}
}

// LockCall records one lock request.
func (m *Metrics) LockCall(_, granted int) {
	m.lockBatch.observe(float64(granted))
	if granted > 0 {
		m.lockGrants.add(float64(granted))
	}
}

// BackendCounters are a storage backend's own cumulative counters (zero
// when the backend has no such notion): what only the adapter sees.
type BackendCounters struct {
	// Commits is the number of transactions committed with writes.
	Commits int64
	// Retries counts transaction re-runs after losing to a concurrent
	// commit or a throttled / conflicting DynamoDB transaction.
	Retries int64
	// Resends counts DynamoDB commits re-sent after an ambiguous outcome.
	Resends int64
	// WriteTransactions counts SQLite write transactions (each one fsync,
	// shared by the commits of one group commit).
	WriteTransactions int64
}

// ObserveBackend registers counters read from read at each collection
// (sqlite.Backend.Stats, dynamo.Backend.Stats). Only the first call counts.
func (m *Metrics) ObserveBackend(read func() BackendCounters) {
	m.backendOnce.Do(func() {
		var (
			mu   sync.Mutex
			last BackendCounters
			at   time.Time
		)
		// One read serves the four counters of a collection.
		get := func() BackendCounters {
			mu.Lock()
			defer mu.Unlock()
			if time.Since(at) > 100*time.Millisecond {
				last, at = read(), time.Now()
			}
			return last
		}
		add := func(name, help string, f func(BackendCounters) int64) {
			m.reg.counterFunc(name, help, func() float64 { return float64(f(get())) })
		}
		add(MetricBackendCommits, "Transactions the backend committed with writes.", func(c BackendCounters) int64 { return c.Commits })
		add(MetricStoreRetries, "Transactions re-run after contention or a throttled / cancelled DynamoDB transaction.", func(c BackendCounters) int64 { return c.Retries })
		add(MetricStoreResends, "DynamoDB commits re-sent after an ambiguous outcome.", func(c BackendCounters) int64 { return c.Resends })
		add(MetricWriteTransactions, "SQLite write transactions (one fsync each, shared by a group commit).", func(c BackendCounters) int64 { return c.WriteTransactions })
	})
}

// --- timers --------------------------------------------------------------------

// TimersPass records one timers pass.
func (m *Metrics) TimersPass(p timers.Pass) {
	if p.Err != nil {
		m.passes[1].inc()
	} else {
		m.passes[0].inc()
	}
	m.passDur.observe(p.Duration.Seconds())
	add := func(c *series, n int) {
		if n > 0 {
			c.add(float64(n))
		}
	}
	add(m.fired, p.Sweep.ExpiredDelays)
	add(m.expired, p.Sweep.ExpiredLocks)
	add(m.skipped, p.Sweep.Skipped)
	add(m.cancelled, p.Cancelled)
	if p.LagKnown {
		m.lag.observe(p.Lag)
	}
}

// RetentionPass records one retention pass.
func (m *Metrics) RetentionPass(p timers.RetentionPass) {
	if p.Err != nil {
		m.retPasses[1].inc()
	} else {
		m.retPasses[0].inc()
	}
	if n := p.Result.Expired; n > 0 {
		m.retExpired.add(float64(n))
	}
	if n := p.Result.Items; n > 0 {
		m.retItems.add(float64(n))
	}
}

// SetLagProbe makes the sweep lag gauge measure the lag when collected,
// with probe (store.TimerLag bound to the store and clock), instead of
// reporting what the passes saw: a stopped sweep then shows as a rising
// lag. `stela dev` sets it; probe gets a context bounded by 5 s.
func (m *Metrics) SetLagProbe(probe func(ctx context.Context) (time.Duration, error)) {
	m.lag.mu.Lock()
	defer m.lag.mu.Unlock()
	m.lag.probe = probe
}

// lagProbeTimeout bounds one probe of the sweep lag.
const lagProbeTimeout = 5 * time.Second

// lagGauge is the sweep lag: from the probe when one is set (its failures
// expose nothing), else the largest lag a pass saw since the last EMF
// flush (nothing when no pass ran since).
type lagGauge struct {
	mu    sync.Mutex
	probe func(ctx context.Context) (time.Duration, error)
	max   time.Duration
	seen  bool
}

func (l *lagGauge) observe(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.seen || d > l.max {
		l.max, l.seen = d, true
	}
}

// reset forgets the passes' lag (after an EMF flush).
func (l *lagGauge) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.max, l.seen = 0, false
}

// read is the gauge's value at a collection, in seconds.
func (l *lagGauge) read() (float64, bool) {
	l.mu.Lock()
	probe, v, seen := l.probe, l.max, l.seen
	l.mu.Unlock()
	if probe != nil {
		ctx, cancel := context.WithTimeout(context.Background(), lagProbeTimeout)
		d, err := probe(ctx)
		cancel()
		if err != nil {
			return 0, false
		}
		v, seen = d, true
	}
	return v.Seconds(), seen
}

// --- HTTP ----------------------------------------------------------------------

// statusText holds the label of every valid status code, so labelling
// a request does not allocate.
var statusText = func() (out [600]string) {
	for i := range out {
		out[i] = strconv.Itoa(i)
	}
	return out
}()

// HTTPRequest records one request served under route (a route pattern;
// "" for none) with status, taking d.
func (m *Metrics) HTTPRequest(route string, status int, d time.Duration) {
	if route == "" {
		route = RouteUnmatched
	}
	k := routeStatus{route, status}
	m.httpMu.RLock()
	s, ok := m.httpCache[k]
	m.httpMu.RUnlock()
	if !ok {
		code := strconv.Itoa(status)
		if status >= 0 && status < len(statusText) {
			code = statusText[status]
		}
		s = httpSeries{reqs: m.httpReqs.with(route, code), dur: m.httpDur.with(route)}
		m.httpMu.Lock()
		m.httpCache[k] = s
		m.httpMu.Unlock()
	}
	s.reqs.inc()
	s.dur.observe(d.Seconds())
}
