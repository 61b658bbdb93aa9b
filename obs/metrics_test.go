package obs_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/httpapi"
	"github.com/stela-dev/stela/obs"
	"github.com/stela-dev/stela/sqlite"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/store/storetest"
	"github.com/stela-dev/stela/timers"
)

var t0 = core.TS(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))

func must[T any](tb testing.TB, f func(string) (T, error), s string) T {
	tb.Helper()
	v, err := f(s)
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

// rig is the embedded store, the HTTP handler over it and one observer.
type rig struct {
	t       *testing.T
	ctx     context.Context
	clock   *storetest.SimClock
	backend *sqlite.Backend
	svc     *store.Service
	h       http.Handler
	m       *obs.Metrics
	o       *obs.Observer
	exr     core.ExecutorId
	run     core.RunId
}

func newRig(t *testing.T, tracing *obs.Tracing) *rig {
	t.Helper()
	b, err := sqlite.Open(filepath.Join(t.TempDir(), "stela.db"), sqlite.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, ctx: context.Background(), clock: storetest.NewSimClock(t0), backend: b, m: obs.NewMetrics(),
		exr: must(t, core.ParseExecutorId, "Exr_01KBNJ2T3D8W7H3X6Q4M9R5V1A"),
		run: must(t, core.ParseRunId, "Run_01KBNJ2V0P6C4Y8N2B7K3T5W9E")}
	r.o = obs.NewObserver(r.m, tracing)
	r.m.ObserveBackend(func() obs.BackendCounters {
		s := b.Stats()
		return obs.BackendCounters{Commits: s.Commits, WriteTransactions: s.Transactions}
	})
	r.svc = store.New(b, store.Options{Clock: r.clock, Observer: r.o, Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { _ = r.svc.Close() })
	r.h = httpapi.New(r.svc, nil, httpapi.Options{Clock: r.clock, Authorizer: httpapi.AllowAll(), Observer: r.o,
		Ready: r.svc.Ready})
	return r
}

// do sends a request to the handler and returns the recorder.
func (r *rig) do(method, path, body string, hdr ...string) *httptest.ResponseRecorder {
	r.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "text/plain")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	r.h.ServeHTTP(w, req)
	return w
}

// submit creates an activity through POST /v1/executions.
func (r *rig) submit(ffqn string, hdr ...string) core.ExecutionId {
	r.t.Helper()
	w := r.do("POST", "/v1/executions", `{"ffqn":"`+ffqn+`","params":[]}`, hdr...)
	if w.Code != http.StatusCreated {
		r.t.Fatalf("submit: %d %s", w.Code, w.Body)
	}
	return must(r.t, core.ParseExecutionId, strings.TrimSpace(w.Body.String()))
}

func (r *rig) lockReq(ct core.ComponentType, batch uint32, expires core.Timestamp) core.LockRequest {
	return core.LockRequest{BatchSize: batch, PendingAtOrSooner: r.clock.Now(), CreatedAt: r.clock.Now(),
		ComponentID: core.ComponentId{ComponentType: ct}, ExecutorID: r.exr, RunID: r.run, LockExpiresAt: expires,
		RetryConfig: core.RetryConfigZero()}
}

func (r *rig) finish(id core.ExecutionId, v core.Version, rv core.ReturnValue) {
	r.t.Helper()
	if _, err := r.svc.Append(r.ctx, id, v, core.AppendRequest{CreatedAt: r.clock.Now(), Event: &core.Finished{Retval: rv}}); err != nil {
		r.t.Fatalf("finish %s: %v", id, err)
	}
}

// blockOnDelay creates a workflow and blocks it on a delay due after d.
func (r *rig) blockOnDelay(d time.Duration) core.ExecutionId {
	r.t.Helper()
	id, err := core.NewExecutionId(uint64(t0.UnixMilli()), rand.Reader)
	if err != nil {
		r.t.Fatal(err)
	}
	now := r.clock.Now()
	ffqn := must(r.t, core.ParseFunctionFqn, "test:obs/wf.sleep")
	wf := core.ComponentId{ComponentType: core.ComponentTypeWorkflow}
	if _, err := r.svc.Create(r.ctx, core.CreateRequest{CreatedAt: now, ExecutionID: id, FFQN: ffqn, Params: core.Params{},
		ScheduledAt: now, ComponentID: wf}); err != nil {
		r.t.Fatal(err)
	}
	le, err := r.svc.LockOne(r.ctx, r.lockReq(core.ComponentTypeWorkflow, 1, now.Add(time.Hour)), id, 1)
	if err != nil {
		r.t.Fatal(err)
	}
	js := must(r.t, core.ParseJoinSetId, "o:sleep")
	batch := []core.AppendRequest{
		{CreatedAt: now, Event: &core.HistoryEventRequest{Event: &core.JoinSetCreate{JoinSetID: js}}},
		{CreatedAt: now, Event: &core.HistoryEventRequest{Event: &core.JoinSetRequestEvent{JoinSetID: js,
			Request: &core.DelayRequest{DelayID: core.NewDelayId(id, js, 1), ExpiresAt: now.Add(d),
				ScheduleAt: core.ScheduleAt{Kind: "in", In: core.DurationOf(d)}}}}},
		{CreatedAt: now, Event: &core.HistoryEventRequest{Event: &core.JoinNext{JoinSetID: js, RunExpiresAt: now.Add(time.Hour)}}},
	}
	if _, err := r.svc.AppendBatch(r.ctx, now, batch, id, le.NextVersion); err != nil {
		r.t.Fatal(err)
	}
	return id
}

// onePass runs exactly one timers pass at the rig's clock.
func (r *rig) onePass() timers.Stats {
	r.t.Helper()
	st, err := timers.Run(r.ctx, r.svc, r.clock, timers.Options{Budget: time.Nanosecond, Observer: r.o,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil || st.Passes != 1 {
		r.t.Fatalf("timers pass: %+v %v", st, err)
	}
	return st
}

// scrape reads /metrics as Prometheus text and returns the families.
func scrape(t *testing.T, m *obs.Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	w := httptest.NewRecorder()
	m.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	if w.Code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", w.Code, w.Body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(w.Body.Bytes()))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, w.Body)
	}
	return fams
}

// value returns the value of the series of name whose labels include
// labels (pairs): a counter's or gauge's value, a histogram's count.
// Missing series read as -1.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
	sum, found := 0.0, false
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if have[labels[i]] != labels[i+1] {
				continue next
			}
		}
		found = true
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		case m.Untyped != nil:
			sum += m.GetUntyped().GetValue()
		}
	}
	if !found {
		return -1
	}
	return sum
}

// workload is the scripted workload: what it did, to compare with the
// metrics.
type workload struct {
	submitted, lockedBatch, finishedOK, finishedErr, finishedTimeout, delays, expiredLocks, conflicts int
}

// runWorkload drives r: activities submitted over HTTP, locked in one
// batch, finished ok / error / timed out; workflows whose delays the sweep
// fires; an activity whose lock the sweep expires; a stale append.
func runWorkload(t *testing.T, r *rig) workload {
	t.Helper()
	var w workload
	act := "test:obs/act.work"
	var ids []core.ExecutionId
	for range 5 {
		ids = append(ids, r.submit(act))
		w.submitted++
	}
	locked, err := r.svc.LockPendingByFFQNs(r.ctx, r.lockReq(core.ComponentTypeActivity, 8, t0.Add(time.Hour)),
		[]core.FunctionFqn{must(t, core.ParseFunctionFqn, act)})
	if err != nil || len(locked) != 5 {
		t.Fatalf("lock: %d %v", len(locked), err)
	}
	w.lockedBatch = len(locked)
	r.finish(ids[0], 2, core.RetOk(nil))
	r.finish(ids[1], 2, core.RetOk(nil))
	r.finish(ids[2], 2, core.RetErr(nil))
	r.finish(ids[3], 2, core.RetFailure(core.FailureTimedOut, nil, nil))
	w.finishedOK, w.finishedErr, w.finishedTimeout = 2, 1, 1
	// A stale writer (a second worker holding version 2 of ids[0]).
	if _, err := r.svc.Append(r.ctx, ids[0], 2, core.AppendRequest{CreatedAt: r.clock.Now(), Event: &core.Unlocked{}}); err == nil {
		t.Fatal("stale append accepted")
	}
	w.conflicts = 1
	// ids[4] keeps its lock; two workflows sleep 1 s; one more activity's
	// lock expires after 2 s (no retries left: the sweep finishes it).
	r.blockOnDelay(time.Second)
	r.blockOnDelay(time.Second)
	w.delays = 2
	w.submitted += 2
	exp := r.submit(act)
	w.submitted++
	if _, err := r.svc.LockOne(r.ctx, r.lockReq(core.ComponentTypeActivity, 1, r.clock.Now().Add(2*time.Second)), exp, 1); err != nil {
		t.Fatal(err)
	}
	w.expiredLocks = 1
	r.clock.Advance(3 * time.Second)
	st := r.onePass()
	if st.ExpiredDelays != w.delays || st.ExpiredLocks != w.expiredLocks {
		t.Fatalf("pass = %+v, want %d delays and %d lock", st, w.delays, w.expiredLocks)
	}
	return w
}

func TestMetricsCountAScriptedWorkload(t *testing.T) {
	r := newRig(t, nil)
	w := runWorkload(t, r)
	f := scrape(t, r.m)
	// The expired activity had no retries left: the sweep finished it
	// as timed out.
	want := []struct {
		name   string
		labels []string
		want   float64
	}{
		{obs.MetricExecutionsCreated, nil, float64(w.submitted)},
		{obs.MetricExecutionsFinished, []string{"outcome", "ok"}, float64(w.finishedOK)},
		{obs.MetricExecutionsFinished, []string{"outcome", "error"}, float64(w.finishedErr)},
		{obs.MetricExecutionsFinished, []string{"outcome", "timeout"}, float64(w.finishedTimeout + w.expiredLocks)},
		{obs.MetricExecutionsFinished, []string{"outcome", "cancelled"}, 0},
		// 5 in the batch, then LockOne for each of the 2 workflows and the expiring activity.
		{obs.MetricLockGrants, nil, float64(w.lockedBatch + 3)},
		{obs.MetricLockBatchSize, nil, 4}, // lock calls observed
		{obs.MetricCommits, []string{"op", "append", "result", "already_finished"}, float64(w.conflicts)},
		{obs.MetricCommits, []string{"op", "create", "result", "ok"}, float64(w.submitted)},
		{obs.MetricCommitDuration, []string{"op", "append"}, 4 + 2 + float64(w.conflicts) + float64(w.expiredLocks)},
		{obs.MetricDelaysFired, nil, float64(w.delays)},
		{obs.MetricLocksExpired, nil, float64(w.expiredLocks)},
		{obs.MetricSweepPasses, []string{"result", "ok"}, 1},
		{obs.MetricSweepPasses, []string{"result", "failed"}, 0},
		// The pass ran 3 s after t0: the delays were due 2 s before it.
		{obs.MetricSweepLag, nil, 2},
		{obs.MetricHTTPRequests, []string{"route", "POST /v1/executions", "code", "201"}, 6},
		{obs.MetricHTTPDuration, []string{"route", "POST /v1/executions"}, 6},
	}
	for _, c := range want {
		if got := value(f, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if got := value(f, obs.MetricWriteTransactions); got <= 0 {
		t.Errorf("%s = %v, want the SQLite write transactions", obs.MetricWriteTransactions, got)
	}
	if got := value(f, obs.MetricBackendCommits); got < float64(w.submitted) {
		t.Errorf("%s = %v, want at least the %d creations", obs.MetricBackendCommits, got, w.submitted)
	}
	t.Run("StatusRouteIsThePatternNotThePath", func(t *testing.T) {
		r.do("GET", "/v1/executions/E_01KBNHM5FQW81KP5Y3XMNX31K4/status", "")
		r.do("GET", "/nope", "")
		f := scrape(t, r.m)
		if got := value(f, obs.MetricHTTPRequests, "route", "GET /v1/executions/{execution_id}/status", "code", "404"); got != 1 {
			t.Errorf("status route = %v, want 1", got)
		}
		if got := value(f, obs.MetricHTTPRequests, "route", obs.RouteUnmatched, "code", "404"); got != 1 {
			t.Errorf("unmatched = %v, want 1", got)
		}
	})
}

// TestSweepLagRisesWhileTheSweepIsStoppedAndFallsWhenItResumes drives the
// clock by hand: no sleeps.
func TestSweepLagRisesWhileTheSweepIsStoppedAndFallsWhenItResumes(t *testing.T) {
	r := newRig(t, nil)
	r.m.SetLagProbe(func(ctx context.Context) (time.Duration, error) { return store.TimerLag(ctx, r.svc, r.clock.Now()) })
	lag := func() float64 {
		t.Helper()
		return value(scrape(t, r.m), obs.MetricSweepLag)
	}
	r.blockOnDelay(time.Second) // due at t0+1s
	if got := lag(); got != 0 {
		t.Fatalf("lag before the deadline = %v, want 0", got)
	}
	// The sweep is stopped: nothing handles the delay.
	r.clock.Advance(11 * time.Second)
	first := lag()
	r.clock.Advance(50 * time.Second)
	second := lag()
	if first != 10 || second != 60 {
		t.Fatalf("lag while stopped = %v then %v, want 10 then 60 (rising)", first, second)
	}
	// The sweep resumes: one pass fires the delay.
	if st := r.onePass(); st.ExpiredDelays != 1 {
		t.Fatalf("pass = %+v, want the delay fired", st)
	}
	if got := lag(); got != 0 {
		t.Fatalf("lag after the sweep resumed = %v, want 0", got)
	}
}

func TestReadyzOnTheEmbeddedStore(t *testing.T) {
	r := newRig(t, nil)
	if w := r.do("GET", "/readyz", ""); w.Code != http.StatusOK {
		t.Fatalf("/readyz = %d %s", w.Code, w.Body)
	}
	_ = r.svc.Close()
	if w := r.do("GET", "/readyz", ""); w.Code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz on a closed store = %d %s, want 503", w.Code, w.Body)
	}
	if w := r.do("GET", "/healthz", ""); w.Code != http.StatusOK {
		t.Fatalf("/healthz = %d, want 200 (the process is up)", w.Code)
	}
}

// Retention passes are counted by result, with the trees and items they
// expired, and exported as EMF under their own names.
func TestRetentionPassesAreCounted(t *testing.T) {
	r := newRig(t, nil)
	r.m.RetentionPass(timers.RetentionPass{Result: store.RetentionResult{Trees: 3, Expired: 2, Kept: 1,
		ExpireStats: store.ExpireStats{Executions: 4, Items: 17}}})
	r.m.RetentionPass(timers.RetentionPass{Err: context.DeadlineExceeded})
	f := scrape(t, r.m)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{obs.MetricRetentionPasses, []string{"result", "ok"}, 1},
		{obs.MetricRetentionPasses, []string{"result", "failed"}, 1},
		{obs.MetricRetentionExpired, nil, 2},
		{obs.MetricRetentionItems, nil, 17},
	} {
		if got := value(f, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	for prom, emf := range map[string]string{obs.MetricRetentionPasses: "RetentionPasses",
		obs.MetricRetentionExpired: "RetentionTreesExpired", obs.MetricRetentionItems: "RetentionItems"} {
		if got := obs.EMFName(prom); got != emf {
			t.Errorf("EMF name of %s = %q, want %q", prom, got, emf)
		}
	}
}
