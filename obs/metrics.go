package obs

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

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
	// batchBuckets cover lock batch sizes up to httpapi.MaxLockBatch and
	// in-process batches beyond it.
	batchBuckets = []float64{0, 1, 2, 4, 8, 16, 25, 50, 100}
)

// Metrics is Stela's one metrics vocabulary on a Prometheus registry: the
// store, the HTTP handler and the timers loop report to it (through
// Observer), /metrics exposes it as Prometheus text (Handler) and the
// Lambda functions write it as CloudWatch Embedded Metric Format (EMF).
// It is safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	created     prometheus.Counter
	finished    [store.NumOutcomes]prometheus.Counter
	lockGrants  prometheus.Counter
	lockBatch   prometheus.Histogram
	commitDur   []prometheus.Observer      // by store.Op
	commits     [][]prometheus.Counter     // by store.Op, result index
	resultIndex map[string]int             // store.ResultOf → index
	passes      [2]prometheus.Counter      // ok, failed
	passDur     prometheus.Histogram       //
	fired       prometheus.Counter         //
	expired     prometheus.Counter         //
	skipped     prometheus.Counter         //
	cancelled   prometheus.Counter         //
	lag         *lagCollector              //
	retPasses   [2]prometheus.Counter      // ok, failed
	retExpired  prometheus.Counter         //
	retItems    prometheus.Counter         //
	httpReqs    *prometheus.CounterVec     // route, code
	httpDur     *prometheus.HistogramVec   // route
	httpMu      sync.RWMutex               //
	httpCache   map[routeStatus]httpSeries // resolved series, so the hot path does not allocate
	throttles   prometheus.Counter         //
	dynamoErrs  *prometheus.CounterVec     // operation, code
	backendOnce sync.Once                  //
	emf         emfState                   // last values flushed as EMF
}

type routeStatus struct {
	route  string
	status int
}

type httpSeries struct {
	reqs prometheus.Counter
	dur  prometheus.Observer
}

// NewMetrics returns the vocabulary registered on a fresh registry (with
// the Go runtime and process collectors when goCollectors is true, as
// `stela dev` serves them; the Lambda functions leave them out of EMF).
func NewMetrics(goCollectors bool) *Metrics {
	reg := prometheus.NewRegistry()
	if goCollectors {
		reg.MustRegister(prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	}
	m := &Metrics{reg: reg, httpCache: map[routeStatus]httpSeries{}, resultIndex: map[string]int{}}
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
		reg.MustRegister(c)
		return c
	}
	m.created = counter(MetricExecutionsCreated, "Executions created (top-level and children).")
	finished := prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricExecutionsFinished,
		Help: "Executions finished, by outcome (ok, error, timeout, cancelled, nondeterminism, out_of_fuel, failure)."}, []string{"outcome"})
	reg.MustRegister(finished)
	for o := range store.NumOutcomes {
		m.finished[o] = finished.WithLabelValues(o.String())
	}
	m.lockGrants = counter(MetricLockGrants, "Executions locked by workers.")
	m.lockBatch = prometheus.NewHistogram(prometheus.HistogramOpts{Name: MetricLockBatchSize,
		Help: "Executions granted per lock request.", Buckets: batchBuckets})
	reg.MustRegister(m.lockBatch)

	commitDur := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: MetricCommitDuration,
		Help:    "Wall time of the store's transactions by operation (op=\"append\" is the append latency), backend retries included.",
		Buckets: latencyBuckets}, []string{"op"})
	commits := prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricCommits,
		Help: "Store transactions by operation and result (ok, version_conflict, conflict, already_finished, …)."}, []string{"op", "result"})
	reg.MustRegister(commitDur, commits)
	results := store.CommitResults()
	for i, r := range results {
		m.resultIndex[r] = i
	}
	for _, op := range store.Ops() {
		m.commitDur = append(m.commitDur, commitDur.WithLabelValues(op.String()))
		row := make([]prometheus.Counter, len(results))
		for i, r := range results {
			row[i] = commits.WithLabelValues(op.String(), r)
		}
		m.commits = append(m.commits, row)
	}

	passes := prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricSweepPasses,
		Help: "Timer sweep passes (sweep + cancellation driver), by result (ok, failed)."}, []string{"result"})
	reg.MustRegister(passes)
	m.passes = [2]prometheus.Counter{passes.WithLabelValues("ok"), passes.WithLabelValues("failed")}
	m.passDur = prometheus.NewHistogram(prometheus.HistogramOpts{Name: MetricSweepDuration,
		Help: "Wall time of one timers pass.", Buckets: latencyBuckets})
	reg.MustRegister(m.passDur)
	m.fired = counter(MetricDelaysFired, "Delays the timer sweep fired.")
	m.expired = counter(MetricLocksExpired, "Expired locks the timer sweep resolved (retried, unlocked or finished).")
	m.skipped = counter(MetricSweepSkipped, "Timers another sweeper or a late worker resolved first.")
	m.cancelled = counter(MetricCancellations, "Cancelling executions the cancellation driver finished.")
	m.lag = &lagCollector{desc: prometheus.NewDesc(MetricSweepLag,
		"Sweep lag: now minus the deadline of the oldest due timer (delay or expired lock) not yet handled; 0 when none.", nil, nil)}
	reg.MustRegister(m.lag)
	retPasses := prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricRetentionPasses,
		Help: "Retention passes (expiring finished execution trees), by result (ok, failed)."}, []string{"result"})
	reg.MustRegister(retPasses)
	m.retPasses = [2]prometheus.Counter{retPasses.WithLabelValues("ok"), retPasses.WithLabelValues("failed")}
	m.retExpired = counter(MetricRetentionExpired, "Finished execution trees the retention passes removed (embedded) or marked with their expiry (DynamoDB).")
	m.retItems = counter(MetricRetentionItems, "Rows the retention passes deleted (embedded) or items they marked with their expiry (DynamoDB).")

	m.httpReqs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricHTTPRequests,
		Help: "HTTP requests by route pattern and status code."}, []string{"route", "code"})
	m.httpDur = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: MetricHTTPDuration,
		Help: "HTTP request latency by route pattern.", Buckets: latencyBuckets}, []string{"route"})
	reg.MustRegister(m.httpReqs, m.httpDur)

	m.throttles = counter(MetricDynamoThrottles, "DynamoDB request attempts throttled (the SDK retried them), cancellation reasons included.")
	m.dynamoErrs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricDynamoErrors,
		Help: "DynamoDB request attempts that failed, by operation and error code (ConditionalCheckFailedException and TransactionCanceledException are the store's contention)."},
		[]string{"operation", "code"})
	reg.MustRegister(m.dynamoErrs)
	return m
}

// Registry returns the registry (for tests and extra collectors).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry as Prometheus text (OpenMetrics when asked).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg, EnableOpenMetrics: true})
}

// --- store ---------------------------------------------------------------------

// StoreCommit records one store transaction.
func (m *Metrics) StoreCommit(c store.Commit) {
	op := int(c.Op)
	if op >= len(m.commits) {
		op = int(store.OpOther)
	}
	m.commitDur[op].Observe(c.Duration.Seconds())
	m.commits[op][m.resultIndex[c.Result()]].Inc()
	if c.Created > 0 {
		m.created.Add(float64(c.Created))
	}
	for o, n := range c.Finished {
		if n > 0 {
			m.finished[o].Add(float64(n))
		}
	}
}

// LockCall records one lock request.
func (m *Metrics) LockCall(_, granted int) {
	m.lockBatch.Observe(float64(granted))
	if granted > 0 {
		m.lockGrants.Add(float64(granted))
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
			m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
				func() float64 { return float64(f(get())) }))
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
		m.passes[1].Inc()
	} else {
		m.passes[0].Inc()
	}
	m.passDur.Observe(p.Duration.Seconds())
	add := func(c prometheus.Counter, n int) {
		if n > 0 {
			c.Add(float64(n))
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
		m.retPasses[1].Inc()
	} else {
		m.retPasses[0].Inc()
	}
	if n := p.Result.Expired; n > 0 {
		m.retExpired.Add(float64(n))
	}
	if n := p.Result.Items; n > 0 {
		m.retItems.Add(float64(n))
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

// lagCollector exposes the sweep lag: from the probe when one is set (its
// failures expose nothing), else the largest lag a pass saw since the last
// EMF flush (nothing when no pass ran since).
type lagCollector struct {
	desc  *prometheus.Desc
	mu    sync.Mutex
	probe func(ctx context.Context) (time.Duration, error)
	max   time.Duration
	seen  bool
}

func (l *lagCollector) observe(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.seen || d > l.max {
		l.max, l.seen = d, true
	}
}

// reset forgets the passes' lag (after an EMF flush).
func (l *lagCollector) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.max, l.seen = 0, false
}

func (l *lagCollector) Describe(ch chan<- *prometheus.Desc) { ch <- l.desc }

func (l *lagCollector) Collect(ch chan<- prometheus.Metric) {
	l.mu.Lock()
	probe, v, seen := l.probe, l.max, l.seen
	l.mu.Unlock()
	if probe != nil {
		ctx, cancel := context.WithTimeout(context.Background(), lagProbeTimeout)
		d, err := probe(ctx)
		cancel()
		if err != nil {
			return
		}
		v, seen = d, true
	}
	if seen {
		ch <- prometheus.MustNewConstMetric(l.desc, prometheus.GaugeValue, v.Seconds())
	}
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
		s = httpSeries{reqs: m.httpReqs.WithLabelValues(route, code), dur: m.httpDur.WithLabelValues(route)}
		m.httpMu.Lock()
		m.httpCache[k] = s
		m.httpMu.Unlock()
	}
	s.reqs.Inc()
	s.dur.Observe(d.Seconds())
}
