package bench

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/sqlite"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/wire"
)

// Targets of the benchmarks on a 2-core machine (printed next to the result).
const (
	targetRoundTripsHTTP     = 700.0
	targetRoundTripP99       = 50 * time.Millisecond
	targetRoundTripsEmbedded = 1500.0
	targetFanOutP50          = 130 * time.Millisecond
	targetDelayMax           = 2400 * time.Millisecond
)

// benchOptions are the flags shared by the benchmarks.
type benchOptions struct {
	server     func() Server
	asJSON     bool
	executions int
	workers    int
	batch      int
	children   int
	iterations int
	delays     int
	delay      time.Duration
}

func addBenchFlags(fs *flag.FlagSet, e *Env, name string) *benchOptions {
	o := &benchOptions{server: e.ServerFlags(fs)}
	fs.BoolVar(&o.asJSON, "json", false, "print the results as JSON")
	if name == "roundtrip" || name == "all" {
		fs.IntVar(&o.executions, "executions", 4000, "round trips to run")
		fs.IntVar(&o.batch, "batch", 10, "lock batch size")
	}
	if name != "delays" {
		fs.IntVar(&o.workers, "workers", 8, "worker goroutines")
	}
	if name == "fanout" || name == "all" {
		fs.IntVar(&o.children, "children", 100, "children per parent workflow")
		fs.IntVar(&o.iterations, "iterations", 20, "parent workflows, one after the other")
	}
	if name == "delays" || name == "all" {
		fs.IntVar(&o.delays, "delays", 500, "concurrent delays")
		fs.DurationVar(&o.delay, "delay", time.Second, "duration of each delay")
	}
	return o
}

func benchLeaf(name, summary, doc string, fn func(ctx context.Context, e *Env, o *benchOptions) (any, error)) Command {
	return Command{
		Name: name, Summary: summary, Doc: doc,
		Flags: func(fs *flag.FlagSet, e *Env) func(context.Context) error {
			o := addBenchFlags(fs, e, name)
			return func(ctx context.Context) error {
				res, err := fn(ctx, e, o)
				if err != nil {
					return err
				}
				if o.asJSON {
					b, _ := json.MarshalIndent(res, "", "  ")
					fmt.Fprintln(e.Stdout, string(b))
				}
				return nil
			}
		},
	}
}

// --- statistics ------------------------------------------------------------------------

// latencies summarises a sample of durations.
type latencies struct {
	Count int     `json:"count"`
	P50ms float64 `json:"p50_ms"`
	P99ms float64 `json:"p99_ms"`
	Maxms float64 `json:"max_ms"`
}

func summarize(ds []time.Duration) latencies {
	if len(ds) == 0 {
		return latencies{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	pct := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return ms(s[max(0, min(i, len(s)-1))])
	}
	return latencies{Count: len(s), P50ms: pct(0.50), P99ms: pct(0.99), Maxms: ms(s[len(s)-1])}
}

func ms(d time.Duration) float64 { return math.Round(float64(d.Microseconds())/10) / 100 }

func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "MISS"
}

// recorder collects durations from many goroutines.
type recorder struct {
	mu sync.Mutex
	ds []time.Duration
}

func (r *recorder) add(d time.Duration) {
	r.mu.Lock()
	r.ds = append(r.ds, d)
	r.mu.Unlock()
}

func (r *recorder) all() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ds)
}

// forEach runs fn(i) for i in [0, n) on workers goroutines.
func forEach(ctx context.Context, n, workers int, fn func(ctx context.Context, i int) error) error {
	g, ctx := errgroup.WithContext(ctx)
	var next atomic.Int64
	for range max(1, workers) {
		g.Go(func() error {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return nil
				}
				if err := fn(ctx, i); err != nil {
					return err
				}
			}
		})
	}
	return g.Wait()
}

// --- worker identity -------------------------------------------------------------------

// benchRun names one benchmark run: unique ffqns keep runs (and the data
// already in the store) apart, and one executor/run id owns every lock.
type benchRun struct {
	tag      string
	executor core.ExecutorId
	run      core.RunId
}

func newBenchRun() (*benchRun, error) {
	now := uint64(time.Now().UnixMilli())
	exr, err := core.NewExecutorId(now, rand.Reader)
	if err != nil {
		return nil, err
	}
	run, err := core.NewRunId(now, rand.Reader)
	if err != nil {
		return nil, err
	}
	var b [5]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	return &benchRun{tag: fmt.Sprintf("r%x", b), executor: exr, run: run}, nil
}

func (b *benchRun) ffqn(kind string) core.FunctionFqn {
	f, err := core.ParseFunctionFqn("bench:" + b.tag + "/" + kind + ".run")
	if err != nil {
		panic(err) // the tag is hex: always valid
	}
	return f
}

func (b *benchRun) lockParams(ct core.ComponentType) wire.LockParams {
	retry := core.RetryConfigZero()
	if ct == core.ComponentTypeWorkflow {
		retry = core.ComponentRetryConfig{}
	}
	return wire.LockParams{ComponentID: core.ComponentId{ComponentType: ct, Name: "bench"},
		ExecutorID: b.executor, RunID: b.run, LockExpiresAt: now().Add(time.Minute), RetryConfig: retry}
}

func (b *benchRun) lockRequest(ct core.ComponentType, batch int) core.LockRequest {
	p := b.lockParams(ct)
	t := now()
	return core.LockRequest{BatchSize: uint32(batch), PendingAtOrSooner: t, CreatedAt: t, ComponentID: p.ComponentID,
		DeploymentID: p.DeploymentID, ExecutorID: p.ExecutorID, RunID: p.RunID, LockExpiresAt: p.LockExpiresAt,
		RetryConfig: p.RetryConfig}
}

func now() core.Timestamp { return core.TS(time.Now()) }

// lockWait locks executions of f, long-polling for wait. Like Obelisk's
// executor, it asks to be woken by executions pending up to the end of the
// wait (pending_at_or_sooner = now + wait); the server still locks only
// those already due, and stamps the lock with its clock.
func (b *benchRun) lockWait(ctx context.Context, c *client.Client, ct core.ComponentType, batch int, f core.FunctionFqn, wait time.Duration) ([]core.LockedExecution, error) {
	req := b.lockRequest(ct, batch)
	req.CreatedAt, req.PendingAtOrSooner = core.Timestamp{}, now().Add(wait)
	return c.LockPendingWait(ctx, req, client.ByFFQNs(f), wait)
}

func newID() (core.ExecutionId, error) {
	return core.NewExecutionId(uint64(time.Now().UnixMilli()), rand.Reader)
}

func finishedOK(at core.Timestamp) core.AppendRequest {
	return core.AppendRequest{CreatedAt: at, Event: &core.Finished{Retval: core.RetOk(nil)}}
}

// --- round trips -------------------------------------------------------------------------

// roundTripper is what the round-trip benchmark drives: over HTTP or in-process.
type roundTripper interface {
	submit(ctx context.Context, id core.ExecutionId) error
	lock(ctx context.Context, batch int) ([]lockedRef, error)
	finish(ctx context.Context, ref lockedRef) error
}

type lockedRef struct {
	id   core.ExecutionId
	next core.Version
}

// roundTripResult is the output of roundtrip and embedded.
type roundTripResult struct {
	Name            string    `json:"name"`
	Executions      int       `json:"executions"`
	Workers         int       `json:"workers"`
	Batch           int       `json:"batch"`
	SubmitPerSecond float64   `json:"submit_per_second"`
	Seconds         float64   `json:"seconds"`
	PerSecond       float64   `json:"round_trips_per_second"`
	Latency         latencies `json:"latency"`
	LockLatency     latencies `json:"lock_call_latency"`
	AppendLatency   latencies `json:"append_latency"`
	LockCalls       int64     `json:"lock_calls"`
	// Cost covers the whole run (submit, lock, finish), per round trip.
	Cost            benchCost `json:"cost"`
	TargetPerSecond float64   `json:"target_per_second"`
	Pass            bool      `json:"pass"`
}

func runRoundTrips(ctx context.Context, rt roundTripper, n, workers, batch int) (roundTripResult, error) {
	res := roundTripResult{Executions: n, Workers: workers, Batch: batch}
	start := time.Now()
	if err := forEach(ctx, n, workers, func(ctx context.Context, _ int) error {
		id, err := newID()
		if err != nil {
			return err
		}
		return rt.submit(ctx, id)
	}); err != nil {
		return res, fmt.Errorf("submit: %w", err)
	}
	res.SubmitPerSecond = math.Round(float64(n) / time.Since(start).Seconds())

	var done, lockCalls atomic.Int64
	var lat, lockLat, appendLat recorder
	var end atomic.Int64
	start = time.Now()
	g, gctx := errgroup.WithContext(ctx)
	for range workers {
		g.Go(func() error {
			for done.Load() < int64(n) {
				t0 := time.Now()
				refs, err := rt.lock(gctx, batch)
				lockCalls.Add(1)
				if err != nil {
					return fmt.Errorf("lock: %w", err)
				}
				if len(refs) > 0 {
					lockLat.add(time.Since(t0))
				}
				inner, ictx := errgroup.WithContext(gctx)
				for _, ref := range refs {
					inner.Go(func() error {
						t1 := time.Now()
						if err := rt.finish(ictx, ref); err != nil {
							return fmt.Errorf("finish %s: %w", ref.id, err)
						}
						appendLat.add(time.Since(t1))
						lat.add(time.Since(t0))
						if done.Add(1) == int64(n) {
							end.Store(int64(time.Since(start)))
						}
						return nil
					})
				}
				if err := inner.Wait(); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return res, err
	}
	elapsed := time.Duration(end.Load())
	res.Seconds = math.Round(elapsed.Seconds()*1000) / 1000
	res.PerSecond = math.Round(float64(n) / elapsed.Seconds())
	res.Latency = summarize(lat.all())
	res.LockLatency, res.AppendLatency = summarize(lockLat.all()), summarize(appendLat.all())
	res.LockCalls = lockCalls.Load()
	return res, nil
}

func printRoundTrip(w io.Writer, r roundTripResult, p99Target time.Duration) {
	fmt.Fprintf(w, "%s: %d activity round trips (lock batch %d, %d workers) in %.2fs (submitted at %.0f/s)\n",
		r.Name, r.Executions, r.Batch, r.Workers, r.Seconds, r.SubmitPerSecond)
	target := fmt.Sprintf("≥%.0f/s", r.TargetPerSecond)
	if p99Target > 0 {
		target += fmt.Sprintf(", p99 ≤%dms", p99Target.Milliseconds())
	}
	fmt.Fprintf(w, "  throughput %.0f round trips/s   latency p50 %.1fms  p99 %.1fms  max %.1fms   [target %s: %s]\n",
		r.PerSecond, r.Latency.P50ms, r.Latency.P99ms, r.Latency.Maxms, target, verdict(r.Pass))
	fmt.Fprintf(w, "  lock calls %d (%.1f executions each): p50 %.1fms p99 %.1fms   appends: p50 %.1fms p99 %.1fms\n",
		r.LockCalls, float64(r.Executions)/float64(max(1, r.LockCalls)), r.LockLatency.P50ms, r.LockLatency.P99ms,
		r.AppendLatency.P50ms, r.AppendLatency.P99ms)
}

// httpRoundTrips drives the worker routes.
type httpRoundTrips struct {
	c    *client.Client
	run  *benchRun
	ffqn core.FunctionFqn
}

func (h *httpRoundTrips) submit(ctx context.Context, id core.ExecutionId) error {
	_, err := h.c.Submit(ctx, id, client.SubmitRequest{FFQN: h.ffqn})
	return err
}

func (h *httpRoundTrips) lock(ctx context.Context, batch int) ([]lockedRef, error) {
	locked, err := h.run.lockWait(ctx, h.c, core.ComponentTypeActivity, batch, h.ffqn, 100*time.Millisecond)
	refs := make([]lockedRef, len(locked))
	for i, l := range locked {
		refs[i] = lockedRef{l.ExecutionID, l.NextVersion}
	}
	return refs, err
}

func (h *httpRoundTrips) finish(ctx context.Context, ref lockedRef) error {
	_, err := h.c.Append(ctx, ref.id, ref.next, finishedOK(now()))
	return err
}

func benchRoundTrip(ctx context.Context, e *Env, o *benchOptions) (any, error) {
	run, err := newBenchRun()
	if err != nil {
		return nil, err
	}
	c, err := o.server().client()
	if err != nil {
		return nil, err
	}
	rt := &httpRoundTrips{c: c, run: run, ffqn: run.ffqn("roundtrip")}
	meter := startCost(ctx, rt.c)
	res, err := runRoundTrips(ctx, rt, o.executions, o.workers, o.batch)
	if err != nil {
		return nil, err
	}
	res.Cost = meter.stop(ctx, o.executions)
	res.Name, res.TargetPerSecond = "roundtrip (HTTP)", targetRoundTripsHTTP
	res.Pass = res.PerSecond >= targetRoundTripsHTTP && res.Latency.P99ms <= ms(targetRoundTripP99)
	if !o.asJSON {
		printRoundTrip(e.Stdout, res, targetRoundTripP99)
		printCost(e.Stdout, res.Cost, "round trip")
	}
	return res, nil
}

// embeddedRoundTrips drives store.Service directly.
type embeddedRoundTrips struct {
	svc  *store.Service
	run  *benchRun
	ffqn core.FunctionFqn
}

func (m *embeddedRoundTrips) submit(ctx context.Context, id core.ExecutionId) error {
	t := now()
	_, err := m.svc.Create(ctx, core.CreateRequest{CreatedAt: t, ExecutionID: id, FFQN: m.ffqn, Params: core.Params{},
		ScheduledAt: t, ComponentID: core.ComponentId{ComponentType: core.ComponentTypeActivity}, Metadata: core.ExecutionMetadata{}})
	return err
}

func (m *embeddedRoundTrips) lock(ctx context.Context, batch int) ([]lockedRef, error) {
	locked, err := m.svc.LockPendingByFFQNs(ctx, m.run.lockRequest(core.ComponentTypeActivity, batch), []core.FunctionFqn{m.ffqn})
	if err == nil && len(locked) == 0 {
		wctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		m.svc.WaitForPendingByFFQN(wctx, now(), []core.FunctionFqn{m.ffqn}, nil)
		cancel()
	}
	refs := make([]lockedRef, len(locked))
	for i, l := range locked {
		refs[i] = lockedRef{l.ExecutionID, l.NextVersion}
	}
	return refs, err
}

func (m *embeddedRoundTrips) finish(ctx context.Context, ref lockedRef) error {
	_, err := m.svc.Append(ctx, ref.id, ref.next, finishedOK(now()))
	return err
}

// openBenchStore opens the embedded benchmark's store in dir and checks that
// the durability asked for is the one in force on the writer connection.
func openBenchStore(ctx context.Context, dir string, d sqlite.Durability) (*sqlite.Backend, error) {
	b, err := sqlite.Open(filepath.Join(dir, "bench.db"), sqlite.Options{Durability: d})
	if err != nil {
		return nil, err
	}
	if got, err := b.DurabilityInForce(ctx); err != nil || got != d {
		_ = b.Close()
		return nil, fmt.Errorf("bench store runs at durability %v (%v), want %v", got, err, d)
	}
	return b, nil
}

func benchEmbedded() Command {
	return Command{
		Name: "embedded", Summary: "activity round trips in-process on store.Service + SQLite (no HTTP)",
		Doc: "Opens a fresh SQLite store (in a temporary directory unless --data-dir is given) and runs\n" +
			"the roundtrip benchmark against store.Service directly.",
		Flags: func(fs *flag.FlagSet, e *Env) func(context.Context) error {
			asJSON := fs.Bool("json", false, "print the results as JSON")
			n := fs.Int("executions", 10000, "round trips to run")
			workers := fs.Int("workers", 8, "worker goroutines")
			batch := fs.Int("batch", 10, "lock batch size")
			dataDir := fs.String("data-dir", "", "directory of the SQLite file (default: a temporary one, removed after)")
			durability := fs.String("durability", sqlite.DurabilityFsyncName, sqlite.DurabilityUsage)
			return func(ctx context.Context) error {
				d, err := sqlite.ParseDurability(*durability)
				if err != nil {
					return usagef("--durability: %v", err)
				}
				dir, cleanup, err := benchDir(*dataDir, "stela-bench-")
				if err != nil {
					return err
				}
				defer cleanup()
				backend, err := openBenchStore(ctx, dir, d)
				if err != nil {
					return err
				}
				svc := store.New(backend, store.Options{})
				defer svc.Close()
				run, err := newBenchRun()
				if err != nil {
					return err
				}
				meter := startLocalCost(backend, d.String())
				res, err := runRoundTrips(ctx, &embeddedRoundTrips{svc: svc, run: run, ffqn: run.ffqn("embedded")}, *n, *workers, *batch)
				if err != nil {
					return err
				}
				res.Cost = meter.stop(ctx, *n)
				res.Name = "embedded (store.Service + SQLite, durability " + d.String() + ")"
				res.TargetPerSecond = targetRoundTripsEmbedded
				res.Pass = res.PerSecond >= targetRoundTripsEmbedded
				if *asJSON {
					b, _ := json.MarshalIndent(res, "", "  ")
					fmt.Fprintln(e.Stdout, string(b))
				} else {
					printRoundTrip(e.Stdout, res, 0)
					printCost(e.Stdout, res.Cost, "round trip")
				}
				return nil
			}
		},
	}
}

// benchDir returns dataDir (created if absent), or a new temporary directory
// named after prefix that cleanup removes.
func benchDir(dataDir, prefix string) (dir string, cleanup func(), err error) {
	if dataDir != "" {
		return dataDir, func() {}, os.MkdirAll(dataDir, 0o755)
	}
	tmp, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", nil, err
	}
	return tmp, func() { os.RemoveAll(tmp) }, nil
}

// --- fan-out -------------------------------------------------------------------------------

type fanOutResult struct {
	Children int `json:"children"`
	// ParentLocks and ChildLockCalls count lock requests (per parent on average, and in total).
	ParentLocks    float64   `json:"parent_locks_per_iteration"`
	ChildLockCalls int64     `json:"child_lock_calls"`
	Iterations     int       `json:"iterations"`
	Workers        int       `json:"workers"`
	Latency        latencies `json:"latency"`
	// Cost covers the counted iterations, per execution (parent or child).
	Cost      benchCost `json:"cost"`
	TargetP50 float64   `json:"target_p50_ms"`
	Pass      bool      `json:"pass"`
}

func benchFanOut(ctx context.Context, e *Env, o *benchOptions) (any, error) {
	if o.children < 1 || o.iterations < 1 {
		return nil, usagef("--children and --iterations must be positive")
	}
	c, err := o.server().client()
	if err != nil {
		return nil, err
	}
	run, err := newBenchRun()
	if err != nil {
		return nil, err
	}
	parentF, childF := run.ffqn("parent"), run.ffqn("child")
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Child workers: lock pending children, finish each with respond-to-parent.
	children, cctx := errgroup.WithContext(ctx)
	var childLocks atomic.Int64
	for range o.workers {
		children.Go(func() error {
			for cctx.Err() == nil {
				childLocks.Add(1)
				locked, err := run.lockWait(cctx, c, core.ComponentTypeActivity, wire.MaxLockBatch, childF, 200*time.Millisecond)
				if err != nil {
					if cctx.Err() != nil {
						return nil
					}
					return fmt.Errorf("lock children: %w", err)
				}
				inner, ictx := errgroup.WithContext(cctx)
				for _, l := range locked {
					inner.Go(func() error { return finishChild(ictx, c, l) })
				}
				if err := inner.Wait(); err != nil && cctx.Err() == nil {
					return err
				}
			}
			return nil
		})
	}
	var lat []time.Duration
	parentLocks := 0
	var meter *costMeter
	for i := range o.iterations + 1 { // the first iteration warms up and is not counted
		if i == 1 {
			meter = startCost(ctx, c)
		}
		d, locks, err := fanOutOnce(ctx, c, run, parentF, childF, o.children)
		parentLocks += locks
		if err != nil {
			cancel()
			_ = children.Wait()
			return nil, err
		}
		if i > 0 {
			lat = append(lat, d)
		}
	}
	var cost benchCost
	if meter != nil {
		cost = meter.stop(ctx, o.iterations*(o.children+1))
	}
	cancel()
	if err := children.Wait(); err != nil {
		return nil, err
	}
	res := fanOutResult{Cost: cost, Children: o.children, Iterations: o.iterations, Workers: o.workers, Latency: summarize(lat),
		TargetP50: ms(targetFanOutP50), ParentLocks: float64(parentLocks) / float64(o.iterations+1), ChildLockCalls: childLocks.Load()}
	res.Pass = res.Latency.P50ms <= res.TargetP50
	if !o.asJSON {
		fmt.Fprintf(e.Stdout, "fanout: %d parent workflows × %d children (%d child workers), submit → parent finished\n",
			o.iterations, o.children, o.workers)
		fmt.Fprintf(e.Stdout, "  latency p50 %.1fms  p99 %.1fms  max %.1fms   parent locks/iteration %.1f  child lock calls %d   [target p50 ≤%dms: %s]\n",
			res.Latency.P50ms, res.Latency.P99ms, res.Latency.Maxms, res.ParentLocks, res.ChildLockCalls,
			targetFanOutP50.Milliseconds(), verdict(res.Pass))
		printCost(e.Stdout, res.Cost, "execution")
	}
	return res, nil
}

func finishChild(ctx context.Context, c *client.Client, l core.LockedExecution) error {
	if l.Parent == nil {
		return fmt.Errorf("child %s has no parent", l.ExecutionID)
	}
	t := now()
	_, err := c.AppendBatchRespondToParent(ctx,
		core.AppendEventsToExecution{ExecutionID: l.ExecutionID, Version: l.NextVersion, Batch: []core.AppendRequest{finishedOK(t)}},
		core.AppendResponseToExecution{ParentExecutionID: l.Parent.ExecutionID, CreatedAt: t, JoinSetID: l.Parent.JoinSetID,
			ChildExecutionID: core.ExecutionIdDerived{ExecutionId: l.ExecutionID}, FinishedVersion: l.NextVersion, Result: core.RetOk(nil)},
		core.Timestamp{})
	if err != nil {
		return fmt.Errorf("finish child %s: %w", l.ExecutionID, err)
	}
	return nil
}

func historyEvent(at core.Timestamp, h core.HistoryEvent) core.AppendRequest {
	return core.AppendRequest{CreatedAt: at, Event: &core.HistoryEventRequest{Event: h}}
}

// fanOutOnce runs one parent workflow to completion and returns the time
// from its submission to the ack of its Finished.
func fanOutOnce(ctx context.Context, c *client.Client, run *benchRun, parentF, childF core.FunctionFqn, n int) (d time.Duration, locks int, err error) {
	parent, err := newID()
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	if _, err := c.Submit(ctx, parent, client.SubmitRequest{FFQN: parentF, ComponentType: core.ComponentTypeWorkflow}); err != nil {
		return 0, locks, fmt.Errorf("submit parent: %w", err)
	}
	locked, err := lockParent(ctx, c, run, parentF, parent)
	locks++
	if err != nil {
		return 0, locks, err
	}
	js, _ := core.NewJoinSetId(core.JoinSetKindGenerated, "1")
	next := locked.NextVersion
	// Create the children in chunks that fit the append limit (batch + children ≤ MaxAppendBatch).
	child := parent.NextLevel(js)
	created := 0
	for created < n || created == 0 {
		t := now()
		var batch []core.AppendRequest
		var reqs []core.CreateRequest
		if created == 0 {
			batch = append(batch, historyEvent(t, &core.JoinSetCreate{JoinSetID: js}))
		}
		for created < n && len(batch)+len(reqs)+2 <= wire.MaxAppendBatch-1 {
			batch = append(batch, historyEvent(t, &core.JoinSetRequestEvent{JoinSetID: js, Request: &core.ChildExecutionRequest{
				ChildExecutionID: core.ExecutionIdDerived{ExecutionId: child}, TargetFFQN: childF, Params: core.Params{}}}))
			reqs = append(reqs, core.CreateRequest{CreatedAt: t, ExecutionID: child, FFQN: childF, Params: core.Params{},
				Parent: &core.Parent{ExecutionID: parent, JoinSetID: js}, ScheduledAt: t,
				ComponentID: core.ComponentId{ComponentType: core.ComponentTypeActivity}, Metadata: core.ExecutionMetadata{}})
			child = child.Incremented()
			created++
		}
		if created == n { // the first await goes with the last children
			batch = append(batch, historyEvent(t, &core.JoinNext{JoinSetID: js, RunExpiresAt: t}))
		}
		next, err = c.AppendBatchCreateNewExecution(ctx, core.Timestamp{}, batch, parent, next, reqs, nil)
		if err != nil {
			return 0, locks, fmt.Errorf("create children: %w", err)
		}
	}
	// Join: each time the parent is unblocked, await every response already
	// there plus one more (which blocks), until all n are consumed.
	awaited := 1
	for {
		locked, err := lockParent(ctx, c, run, parentF, parent)
		locks++
		if err != nil {
			return 0, locks, err
		}
		next = locked.NextVersion
		t := now()
		have := len(locked.Responses)
		var batch []core.AppendRequest
		for awaited < n && awaited < have+1 && len(batch) < wire.MaxAppendBatch-1 {
			batch = append(batch, historyEvent(t, &core.JoinNext{JoinSetID: js, RunExpiresAt: t}))
			awaited++
		}
		finished := awaited == n && have >= n
		if finished {
			batch = append(batch, finishedOK(t))
		}
		if len(batch) > 0 {
			if _, err := c.AppendBatch(ctx, core.Timestamp{}, batch, parent, next); err != nil {
				return 0, locks, fmt.Errorf("join: %w", err)
			}
		}
		if finished {
			return time.Since(start), locks, nil
		}
	}
}

// lockParent locks the parent workflow as soon as it is pending.
func lockParent(ctx context.Context, c *client.Client, run *benchRun, parentF core.FunctionFqn, parent core.ExecutionId) (core.LockedExecution, error) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		locked, err := run.lockWait(ctx, c, core.ComponentTypeWorkflow, 1, parentF, time.Second)
		if err != nil {
			return core.LockedExecution{}, fmt.Errorf("lock parent: %w", err)
		}
		if len(locked) == 1 {
			if locked[0].ExecutionID != parent {
				return core.LockedExecution{}, fmt.Errorf("locked %s, expected parent %s", locked[0].ExecutionID, parent)
			}
			return locked[0], nil
		}
	}
	return core.LockedExecution{}, errors.New("parent workflow never became pending")
}

// --- delays ----------------------------------------------------------------------------------

type delaysResult struct {
	Delays     int       `json:"delays"`
	DelayMs    float64   `json:"delay_ms"`
	Latency    latencies `json:"latency"`
	OverTarget int       `json:"over_target"`
	// Cost covers the whole run (submit, lock, request, fire, answer), per delay.
	Cost      benchCost `json:"cost"`
	TargetMax float64   `json:"target_max_ms"`
	Pass      bool      `json:"pass"`
}

func benchDelays(ctx context.Context, e *Env, o *benchOptions) (any, error) {
	if o.delays < 1 || o.delay <= 0 {
		return nil, usagef("--delays and --delay must be positive")
	}
	c, err := o.server().client()
	if err != nil {
		return nil, err
	}
	run, err := newBenchRun()
	if err != nil {
		return nil, err
	}
	f := run.ffqn("delays")
	meter := startCost(ctx, c)
	const setupWorkers = 8
	ids := make([]core.ExecutionId, o.delays)
	if err := forEach(ctx, o.delays, setupWorkers, func(ctx context.Context, i int) error {
		id, err := newID()
		if err != nil {
			return err
		}
		ids[i] = id
		_, err = c.Submit(ctx, id, client.SubmitRequest{FFQN: f, ComponentType: core.ComponentTypeWorkflow})
		return err
	}); err != nil {
		return nil, fmt.Errorf("submit: %w", err)
	}
	var locked []core.LockedExecution
	for len(locked) < o.delays {
		batch, err := run.lockWait(ctx, c, core.ComponentTypeWorkflow, wire.MaxLockBatch, f, time.Second)
		if err != nil {
			return nil, fmt.Errorf("lock: %w", err)
		}
		if len(batch) == 0 {
			return nil, errors.New("lock: the submitted workflows are not pending")
		}
		locked = append(locked, batch...)
	}
	js, _ := core.NewJoinSetId(core.JoinSetKindOneOff, "sleep")
	requested := make([]time.Time, len(locked))
	var lat recorder
	g, gctx := errgroup.WithContext(ctx)
	// Once its delay is requested, each workflow's responses are long-polled.
	watch := func(i int, id core.ExecutionId) {
		g.Go(func() error {
			if _, err := c.SubscribeToNextResponses(gctx, id, 0); err != nil {
				return fmt.Errorf("wait for the delay of %s: %w", id, err)
			}
			lat.add(time.Since(requested[i]))
			return nil
		})
	}
	if err := forEach(gctx, len(locked), setupWorkers, func(ctx context.Context, i int) error {
		l := locked[i]
		t := now()
		requested[i] = time.Now()
		_, err := c.AppendBatch(ctx, core.Timestamp{}, []core.AppendRequest{
			historyEvent(t, &core.JoinSetCreate{JoinSetID: js}),
			historyEvent(t, &core.JoinSetRequestEvent{JoinSetID: js, Request: &core.DelayRequest{
				DelayID: core.NewDelayId(l.ExecutionID, js, 1), ExpiresAt: t.Add(o.delay),
				ScheduleAt: core.ScheduleAt{Kind: "in", In: core.DurationOf(o.delay)}}}),
			historyEvent(t, &core.JoinNext{JoinSetID: js, RunExpiresAt: t}),
		}, l.ExecutionID, l.NextVersion)
		if err == nil {
			watch(i, l.ExecutionID)
		}
		return err
	}); err != nil {
		_ = g.Wait()
		return nil, fmt.Errorf("request delays: %w", err)
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	all := lat.all()
	res := delaysResult{Cost: meter.stop(ctx, o.delays), Delays: len(all), DelayMs: ms(o.delay), Latency: summarize(all), TargetMax: ms(targetDelayMax)}
	for _, d := range all {
		if d > targetDelayMax {
			res.OverTarget++
		}
	}
	res.Pass = res.OverTarget == 0 && len(all) == o.delays
	if !o.asJSON {
		fmt.Fprintf(e.Stdout, "delays: %d concurrent %s delays, request → response seen by the client\n", o.delays, o.delay)
		fmt.Fprintf(e.Stdout, "  latency p50 %.0fms  p99 %.0fms  max %.0fms   over %dms: %d   [target max ≤%dms: %s]\n",
			res.Latency.P50ms, res.Latency.P99ms, res.Latency.Maxms, targetDelayMax.Milliseconds(), res.OverTarget,
			targetDelayMax.Milliseconds(), verdict(res.Pass))
		printCost(e.Stdout, res.Cost, "delay")
	}
	return res, nil
}

func benchAll(ctx context.Context, e *Env, o *benchOptions) (any, error) {
	out := map[string]any{}
	for _, b := range []struct {
		name string
		fn   func(context.Context, *Env, *benchOptions) (any, error)
	}{{"roundtrip", benchRoundTrip}, {"fanout", benchFanOut}, {"delays", benchDelays}} {
		res, err := b.fn(ctx, e, o)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", b.name, err)
		}
		out[b.name] = res
	}
	return out, nil
}
