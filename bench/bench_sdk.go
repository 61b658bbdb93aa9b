package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/sqlite"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/timers"
	"github.com/stela-dev/stela/worker"
)

// Targets of the SDK benchmarks on a 2-core machine (issue 11).
const (
	targetW1Workflows       = 1000.0
	targetW1WorkflowCPUms   = 2.0
	targetW1Activities      = 1500.0
	targetW2P50             = 100 * time.Millisecond
	targetW2BytesPerChild   = 2048.0
	targetW3AllDone         = 1200 * time.Millisecond
	targetW3LatenessP99     = 50 * time.Millisecond
	sdkBenchTimeout         = 10 * time.Minute
	sdkBenchWorkerBatch     = 25
	sdkBenchWorkerPollWait  = 2 * time.Second
	sdkBenchWorkerLockLease = 30 * time.Second
	// sdkBenchSubmitters submit concurrently (the load generator).
	sdkBenchSubmitters = 32
)

// sdkBenchCommands are the benchmarks that drive Stela through the worker
// SDK (package worker), as an application would.
func sdkBenchCommands() []Command {
	doc := "Runs against the server given by --url, or else against a `stela dev` it starts on a\n" +
		"temporary data directory; --embedded runs the store in-process instead (no HTTP). Prints\n" +
		"throughput, latency percentiles, CPU per execution (client + server, the server's read\n" +
		"from `stela dev`'s stats) and the server's store, durability and fsyncs per commit."
	return []Command{
		sdkBenchLeaf("w1", "W1: executions through 8 SDK workers, as activities and as workflows calling one activity",
			doc+"\n\nW1 submits --executions activities, then as many workflows that each call one activity,\n"+
				"while --workers workers (one connection each) run them; latency is submit → Finished.", benchW1),
		sdkBenchLeaf("w2", "W2: sequential workflows fanning out to 100 child activities each",
			doc+"\n\nW2 runs --iterations workflows one after the other, each submitting --children\n"+
				"activities into a join set and awaiting them all; it reports bytes received per activity.", benchW2),
		sdkBenchLeaf("w3", "W3: concurrent workflows each sleeping 1 s (durable timers)",
			doc+"\n\nW3 submits --sleepers workflows that each sleep --sleep; it reports when all are done\n"+
				"and how late each sleep ended (resume time − expiry).", benchW3),
		sdkBenchLeaf("sdk", "W1, W2 and W3 against one server", doc, benchSDKAll),
	}
}

// sdkBenchOptions are the flags of the SDK benchmarks.
type sdkBenchOptions struct {
	readServer func() Server
	server     Server
	embedded   bool
	asJSON     bool
	devArgs    string
	cpuProfile string
	awaitWin   time.Duration
	durability string
	executions int
	workers    int
	iterations int
	children   int
	sleepers   int
	sleep      time.Duration
}

func sdkBenchLeaf(name, summary, doc string, fn func(ctx context.Context, e *Env, o *sdkBenchOptions, env *benchEnv) (any, error)) Command {
	return Command{
		Name: name, Summary: summary, Doc: doc,
		Flags: func(fs *flag.FlagSet, e *Env) func(context.Context) error {
			o := &sdkBenchOptions{readServer: e.ServerFlags(fs)}
			fs.BoolVar(&o.asJSON, "json", false, "print the results as JSON")
			fs.BoolVar(&o.embedded, "embedded", false, "run the store in-process (SQLite in a temporary directory), without HTTP")
			fs.StringVar(&o.durability, "durability", sqlite.DurabilityFsyncName, "with --embedded, "+sqlite.DurabilityUsage)
			fs.StringVar(&o.devArgs, "dev-args", "", "extra flags of the `stela dev` the benchmark starts (space-separated)")
			fs.IntVar(&o.workers, "workers", 8, "workers, each with its own connection")
			fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write the client's CPU profile (pprof) to this file")
			fs.DurationVar(&o.awaitWin, "await-window", 0, "the workers' AwaitWindow (0: the SDK default; negative: park at once)")
			if name == "w1" || name == "sdk" {
				fs.IntVar(&o.executions, "executions", 2000, "executions of each kind")
			}
			if name == "w2" || name == "sdk" {
				fs.IntVar(&o.iterations, "iterations", 20, "workflows, one after the other")
				fs.IntVar(&o.children, "children", 100, "child activities per workflow")
			}
			if name == "w3" || name == "sdk" {
				fs.IntVar(&o.sleepers, "sleepers", 500, "concurrent sleeping workflows")
				fs.DurationVar(&o.sleep, "sleep", time.Second, "how long each workflow sleeps")
			}
			return func(ctx context.Context) error {
				o.server = o.readServer()
				ctx, cancel := context.WithTimeout(ctx, sdkBenchTimeout)
				defer cancel()
				env, err := newBenchEnv(ctx, e, o)
				if err != nil {
					return err
				}
				defer env.close()
				if o.cpuProfile != "" {
					stop, err := StartCPUProfile(o.cpuProfile)
					if err != nil {
						return err
					}
					defer stop()
				}
				res, err := fn(ctx, e, o, env)
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

// StartCPUProfile writes this process's CPU profile (pprof) to path until
// stop is called.
func StartCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// --- the environment: server, connections, CPU ------------------------------------------

// benchEnv is where an SDK benchmark runs: a server (started here, given by
// URL, or in-process) and a way to open worker connections.
type benchEnv struct {
	// Server describes the store and its durability.
	Server string
	// conn opens a connection; received returns the bytes received so far.
	conn     func() (worker.Conn, error)
	received func() int64
	// stats reads the server's cost counters (`stela dev`'s stats route);
	// local is the in-process store instead (embedded mode).
	stats      *client.Client
	local      *sqlite.Backend
	durability string
	close      func()
}

func newBenchEnv(ctx context.Context, e *Env, o *sdkBenchOptions) (*benchEnv, error) {
	if o.embedded {
		return embeddedBenchEnv(ctx, o)
	}
	url, server, stop := o.server.URL, "server given by --url", func() {}
	if !o.server.Given {
		dev, err := startDevServer(ctx, o.devArgs)
		if err != nil {
			return nil, err
		}
		url, server, stop = dev.url, dev.store, dev.stop
	}
	env, err := httpBenchEnv(url, o.server.Token)
	if err != nil {
		stop()
		return nil, err
	}
	env.close = stop
	var st devStats
	if err := getDevStats(ctx, env.stats, &st); err == nil {
		server = fmt.Sprintf("%s; %s backend", server, st.Backend)
		if st.Durability != "" {
			server += ", durability " + st.Durability
		}
	} else {
		server += "; durability not reported by the server"
	}
	env.Server = server
	fmt.Fprintf(e.Stderr, "bench: server %s (%s)\n", url, server)
	return env, nil
}

// embeddedBenchEnv runs the store (SQLite at --durability) and its timers
// in-process: the workers call store.Service directly.
func embeddedBenchEnv(ctx context.Context, o *sdkBenchOptions) (*benchEnv, error) {
	d, err := sqlite.ParseDurability(o.durability)
	if err != nil {
		return nil, usagef("--durability: %v", err)
	}
	dir, err := os.MkdirTemp("", "stela-bench-sdk-")
	if err != nil {
		return nil, err
	}
	b, err := openBenchStore(ctx, dir, d)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	svc := store.New(b, store.Options{})
	tctx, stopTimers := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() {
		_, _ = timers.Run(tctx, svc, store.SystemClock{}, timers.Options{Interval: 10 * time.Millisecond,
			Logger: quietLogger()})
	})
	return &benchEnv{
		Server:     "in-process, embedded SQLite, durability " + d.String() + ", timers every 10ms",
		conn:       func() (worker.Conn, error) { return svc, nil },
		received:   func() int64 { return 0 },
		local:      b,
		durability: d.String(),
		close: func() {
			stopTimers()
			wg.Wait()
			_ = svc.Close()
			os.RemoveAll(dir)
		},
	}, nil
}

// startCost starts measuring the benchmark's cost (CPU per execution,
// client + server, and the store's commits).
func (env *benchEnv) startCost(ctx context.Context) *costMeter {
	if env.local != nil {
		return startLocalCost(env.local, env.durability)
	}
	return startCost(ctx, env.stats)
}

// costLine renders a benchCost on one line.
func costLine(c benchCost) string {
	var s string
	switch {
	case c.ClientCPUms == 0:
		s = fmt.Sprintf("CPU %.2f ms/execution (one process)", c.ServerCPUms)
	case c.ServerCPUms == 0:
		s = fmt.Sprintf("CPU %.2f ms/execution (client; the server does not report its CPU)", c.ClientCPUms)
	default:
		s = fmt.Sprintf("CPU %.2f ms/execution (client %.2f + server %.2f)", c.ClientCPUms+c.ServerCPUms, c.ClientCPUms, c.ServerCPUms)
	}
	if c.Commits > 0 {
		s += fmt.Sprintf(", %.2f fsyncs/commit", c.FsyncsPerCommit)
	}
	return s
}

// totalCPU is the CPU per execution, client + server.
func totalCPU(c benchCost) float64 { return c.ClientCPUms + c.ServerCPUms }

// devServer is a `stela dev` child process.
type devServer struct {
	url, store string
	stop       func()
}

// startDevServer starts `stela dev` (this binary) on a temporary data
// directory and a free port, and returns once it printed its banner.
func startDevServer(ctx context.Context, extra string) (*devServer, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "stela-bench-dev-")
	if err != nil {
		return nil, err
	}
	args := append([]string{"dev", "--data-dir", dir, "--addr", "127.0.0.1:0", "--log-level", "warn"}, strings.Fields(extra)...)
	cmd := exec.Command(self, args...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start stela dev: %w", err)
	}
	stop := func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		os.RemoveAll(dir)
	}
	d := &devServer{stop: stop}
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		var lines []string
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			lines = append(lines, line)
			if rest, ok := strings.CutPrefix(line, "API:"); ok {
				d.url = strings.Fields(rest)[0]
			}
			if rest, ok := strings.CutPrefix(line, "store:"); ok {
				d.store = strings.TrimSpace(rest)
			}
			if strings.HasPrefix(line, "Press Ctrl-C") {
				if d.store == "" {
					d.store = strings.Join(lines, "; ")
				}
				ready <- nil
				_, _ = io.Copy(io.Discard, stdout)
				return
			}
		}
		ready <- fmt.Errorf("stela dev exited before it was ready: %s", strings.Join(lines, "; "))
	}()
	select {
	case err := <-ready:
		if err != nil {
			stop()
			return nil, err
		}
	case <-ctx.Done():
		stop()
		return nil, ctx.Err()
	}
	return d, nil
}

// --- finish tracking ---------------------------------------------------------------------

// finishTracker records when top-level executions were submitted and when
// their Finished was acknowledged (the workers' OnFinished).
type finishTracker struct {
	mu        sync.Mutex
	submitted map[core.ExecutionId]time.Time
	finished  map[core.ExecutionId]time.Time
	want      int
	all       chan struct{}
}

func newFinishTracker(want int) *finishTracker {
	return &finishTracker{submitted: map[core.ExecutionId]time.Time{}, finished: map[core.ExecutionId]time.Time{},
		want: want, all: make(chan struct{})}
}

func (t *finishTracker) submit(id core.ExecutionId, at time.Time) {
	t.mu.Lock()
	t.submitted[id] = at
	t.mu.Unlock()
}

// onFinished is the workers' OnFinished: it records top-level executions.
func (t *finishTracker) onFinished(id core.ExecutionId, _ core.ReturnValue) {
	if !id.IsTopLevel() {
		return
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, dup := t.finished[id]; dup {
		return
	}
	t.finished[id] = now
	if len(t.finished) == t.want {
		close(t.all)
	}
}

// wait blocks until want executions finished.
func (t *finishTracker) wait(ctx context.Context) error {
	select {
	case <-t.all:
		return nil
	case <-ctx.Done():
		t.mu.Lock()
		n := len(t.finished)
		t.mu.Unlock()
		return fmt.Errorf("%d of %d executions finished: %w", n, t.want, ctx.Err())
	}
}

// latencies returns submit → finished durations and the span from the
// first submission to the last finish.
func (t *finishTracker) latencies() ([]time.Duration, time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []time.Duration
	var first, last time.Time
	for id, done := range t.finished {
		sub, ok := t.submitted[id]
		if !ok {
			continue
		}
		out = append(out, done.Sub(sub))
		if first.IsZero() || sub.Before(first) {
			first = sub
		}
		if done.After(last) {
			last = done
		}
	}
	return out, last.Sub(first)
}

// benchWorkers starts n workers, each on its own connection, and returns
// them with a function that stops them and waits.
func (env *benchEnv) benchWorkers(ctx context.Context, o *sdkBenchOptions, t *finishTracker, register func(w *worker.Worker)) ([]*worker.Worker, func() error, error) {
	n := o.workers
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var ws []*worker.Worker
	errs := make(chan error, n)
	for range n {
		conn, err := env.conn()
		if err != nil {
			cancel()
			return nil, nil, err
		}
		w := worker.New(conn, worker.Options{Name: "bench", LockBatch: sdkBenchWorkerBatch,
			PollWait: sdkBenchWorkerPollWait, LockExpiry: sdkBenchWorkerLockLease, ShutdownGrace: time.Second,
			AwaitWindow: o.awaitWin, Logger: quietLogger(), OnFinished: t.onFinished})
		register(w)
		ws = append(ws, w)
		go func() { errs <- w.Run(runCtx) }()
	}
	stop := func() error {
		cancel()
		var err error
		for range n {
			err = errors.Join(err, <-errs)
		}
		return err
	}
	return ws, stop, nil
}

// submitAll submits n executions of ffqn from sdkBenchSubmitters goroutines,
// recording the times.
func submitAll(ctx context.Context, w *worker.Worker, t *finishTracker, ffqn string, n int, params func(i int) any) error {
	return forEach(ctx, n, sdkBenchSubmitters, func(ctx context.Context, i int) error {
		at := time.Now()
		id, err := w.Submit(ctx, ffqn, params(i))
		if err != nil {
			return err
		}
		t.submit(id, at)
		return nil
	})
}

// --- W1 -----------------------------------------------------------------------------------

type w1Part struct {
	Kind       string    `json:"kind"`
	Executions int       `json:"executions"`
	Seconds    float64   `json:"seconds"`
	PerSecond  float64   `json:"per_second"`
	Latency    latencies `json:"latency"`
	Cost       benchCost `json:"cost"`
	Target     string    `json:"target"`
	Pass       bool      `json:"pass"`
}

type w1Result struct {
	Server     string `json:"server"`
	Workers    int    `json:"workers"`
	Activities w1Part `json:"activities"`
	Workflows  w1Part `json:"workflows"`
}

func benchW1(ctx context.Context, e *Env, o *sdkBenchOptions, env *benchEnv) (any, error) {
	if o.executions < 1 || o.workers < 1 {
		return nil, usagef("--executions and --workers must be positive")
	}
	run, err := newBenchRun()
	if err != nil {
		return nil, err
	}
	act, wf := run.ffqn("w1-activity").String(), run.ffqn("w1-workflow").String()
	res := w1Result{Server: env.Server, Workers: o.workers}
	for _, kind := range []string{"activities", "workflows"} {
		t := newFinishTracker(o.executions)
		ws, stop, err := env.benchWorkers(ctx, o, t, func(w *worker.Worker) {
			worker.Activity(w, act, func(context.Context, int) (worker.Unit, error) { return worker.Unit{}, nil })
			worker.Workflow(w, wf, func(c *worker.Context, i int) (worker.Unit, error) {
				return worker.Call[worker.Unit](c, act, i)
			})
		})
		if err != nil {
			return nil, err
		}
		target := act
		if kind == "workflows" {
			target = wf
		}
		meter := env.startCost(ctx)
		err = submitAll(ctx, ws[0], t, target, o.executions, func(i int) any { return i })
		if err == nil {
			err = t.wait(ctx)
		}
		cost := meter.stop(ctx, o.executions)
		if serr := stop(); err == nil {
			err = serr
		}
		if err != nil {
			return nil, fmt.Errorf("w1 %s: %w", kind, err)
		}
		lat, span := t.latencies()
		p := w1Part{Kind: kind, Executions: o.executions, Seconds: math.Round(span.Seconds()*1000) / 1000,
			PerSecond: math.Round(float64(o.executions) / span.Seconds()), Latency: summarize(lat), Cost: cost}
		if kind == "activities" {
			p.Target = fmt.Sprintf("≥%.0f/s", targetW1Activities)
			p.Pass = p.PerSecond >= targetW1Activities
			res.Activities = p
		} else {
			p.Target = fmt.Sprintf("≥%.0f/s at ≤%.0f ms CPU", targetW1Workflows, targetW1WorkflowCPUms)
			p.Pass = p.PerSecond >= targetW1Workflows && cost.ServerCPUms > 0 && totalCPU(cost) <= targetW1WorkflowCPUms
			res.Workflows = p
		}
		if !o.asJSON {
			fmt.Fprintf(e.Stdout, "W1 %s: %d executions, %d workers, %.2fs: %.0f/s   latency p50 %.1fms p99 %.1fms   %s   [target %s: %s]\n",
				kind, p.Executions, o.workers, p.Seconds, p.PerSecond, p.Latency.P50ms, p.Latency.P99ms, costLine(p.Cost), p.Target, verdict(p.Pass))
		}
	}
	return res, nil
}

// --- W2 -----------------------------------------------------------------------------------

type w2Result struct {
	Server            string    `json:"server"`
	Iterations        int       `json:"iterations"`
	Children          int       `json:"children"`
	Workers           int       `json:"workers"`
	Latency           latencies `json:"latency"`
	BytesPerActivity  float64   `json:"bytes_received_per_activity"`
	Cost              benchCost `json:"cost"`
	TargetP50ms       float64   `json:"target_p50_ms"`
	TargetBytesPerAct float64   `json:"target_bytes_per_activity"`
	Pass              bool      `json:"pass"`
}

func benchW2(ctx context.Context, e *Env, o *sdkBenchOptions, env *benchEnv) (any, error) {
	if o.iterations < 1 || o.children < 1 || o.workers < 1 {
		return nil, usagef("--iterations, --children and --workers must be positive")
	}
	run, err := newBenchRun()
	if err != nil {
		return nil, err
	}
	act, wf := run.ffqn("w2-child").String(), run.ffqn("w2-parent").String()
	t := newFinishTracker(o.iterations + 1) // the first iteration warms up and is not counted
	ws, stop, err := env.benchWorkers(ctx, o, t, func(w *worker.Worker) {
		worker.Activity(w, act, func(context.Context, int) (worker.Unit, error) { return worker.Unit{}, nil })
		worker.Workflow(w, wf, func(c *worker.Context, n int) (int, error) {
			js := c.NewJoinSet()
			for i := range n {
				if _, err := js.Submit(act, i); err != nil {
					return 0, err
				}
			}
			for range n {
				r, err := js.Next()
				if err != nil {
					return 0, err
				}
				if err := r.Err(); err != nil {
					return 0, err
				}
			}
			return n, nil
		})
	})
	if err != nil {
		return nil, err
	}
	var lat []time.Duration
	var meter *costMeter
	var bytes0 int64
	for i := range o.iterations + 1 {
		if i == 1 {
			meter, bytes0 = env.startCost(ctx), env.received()
		}
		start := time.Now()
		id, serr := ws[0].Submit(ctx, wf, o.children)
		if serr != nil {
			err = serr
			break
		}
		t.submit(id, start)
		if _, werr := worker.Await[int](ctx, ws[0], id); werr != nil {
			err = fmt.Errorf("workflow %d: %w", i, werr)
			break
		}
		if i > 0 {
			lat = append(lat, time.Since(start))
		}
	}
	var res w2Result
	if err == nil {
		children := o.iterations * o.children
		res = w2Result{Server: env.Server, Iterations: o.iterations, Children: o.children, Workers: o.workers,
			Latency: summarize(lat), Cost: meter.stop(ctx, o.iterations*(o.children+1)),
			BytesPerActivity: math.Round(float64(env.received()-bytes0) / float64(children)),
			TargetP50ms:      ms(targetW2P50), TargetBytesPerAct: targetW2BytesPerChild}
		res.Pass = res.Latency.P50ms <= res.TargetP50ms && res.BytesPerActivity <= targetW2BytesPerChild
	}
	if serr := stop(); err == nil {
		err = serr
	}
	if err != nil {
		return nil, fmt.Errorf("w2: %w", err)
	}
	if !o.asJSON {
		fmt.Fprintf(e.Stdout, "W2: %d workflows × %d child activities, one after the other, %d workers\n", o.iterations, o.children, o.workers)
		fmt.Fprintf(e.Stdout, "  per workflow p50 %.1fms p99 %.1fms max %.1fms   %.0f bytes received/activity   %s   [target p50 ≤%dms, ≤%.0f B/activity: %s]\n",
			res.Latency.P50ms, res.Latency.P99ms, res.Latency.Maxms, res.BytesPerActivity, costLine(res.Cost),
			targetW2P50.Milliseconds(), targetW2BytesPerChild, verdict(res.Pass))
	}
	return res, nil
}

// --- W3 -----------------------------------------------------------------------------------

type w3Result struct {
	Server    string  `json:"server"`
	Sleepers  int     `json:"sleepers"`
	SleepMs   float64 `json:"sleep_ms"`
	AllDoneMs float64 `json:"all_done_ms"`
	// SubmittedMs is when the last submission returned and AllAsleepMs
	// when the last workflow began its sleep, after the first submission.
	SubmittedMs float64   `json:"submitted_ms"`
	AllAsleepMs float64   `json:"all_asleep_ms"`
	Latency     latencies `json:"latency"`
	Lateness    latencies `json:"timer_lateness"`
	Cost        benchCost `json:"cost"`
	TargetAllMs float64   `json:"target_all_done_ms"`
	TargetP99ms float64   `json:"target_lateness_p99_ms"`
	Pass        bool      `json:"pass"`
}

func benchW3(ctx context.Context, e *Env, o *sdkBenchOptions, env *benchEnv) (any, error) {
	if o.sleepers < 1 || o.sleep <= 0 || o.workers < 1 {
		return nil, usagef("--sleepers, --sleep and --workers must be positive")
	}
	run, err := newBenchRun()
	if err != nil {
		return nil, err
	}
	wf := run.ffqn("w3-sleeper").String()
	t := newFinishTracker(o.sleepers)
	var asleep sync.Map // execution → wall time its sleep started (first run only)
	var lateness recorder
	var measured atomic.Int64
	ws, stop, err := env.benchWorkers(ctx, o, t, func(w *worker.Worker) {
		worker.Workflow(w, wf, func(c *worker.Context, d time.Duration) (worker.Unit, error) {
			// Wall time is read here only to measure the benchmark: the
			// workers keep their runs in memory, so nothing is replayed.
			start, _ := asleep.LoadOrStore(c.ExecutionID(), time.Now()) //stela:nondeterministic-ok benchmark measurement, decides nothing
			if err := c.Sleep(d); err != nil {
				return worker.Unit{}, err
			}
			if !c.IsReplaying() {
				lateness.add(time.Since(start.(time.Time).Add(d))) //stela:nondeterministic-ok benchmark measurement, decides nothing
				measured.Add(1)                                    //stela:nondeterministic-ok benchmark measurement, decides nothing
			}
			return worker.Unit{}, nil
		})
	})
	if err != nil {
		return nil, err
	}
	meter := env.startCost(ctx)
	first := time.Now()
	err = submitAll(ctx, ws[0], t, wf, o.sleepers, func(int) any { return o.sleep })
	submitted := time.Since(first)
	if err == nil {
		err = t.wait(ctx)
	}
	cost := meter.stop(ctx, o.sleepers)
	if serr := stop(); err == nil {
		err = serr
	}
	if err != nil {
		return nil, fmt.Errorf("w3: %w", err)
	}
	lat, span := t.latencies()
	var lastAsleep time.Time
	asleep.Range(func(_, v any) bool {
		if at := v.(time.Time); at.After(lastAsleep) {
			lastAsleep = at
		}
		return true
	})
	res := w3Result{Server: env.Server, Sleepers: o.sleepers, SleepMs: ms(o.sleep), AllDoneMs: ms(span),
		SubmittedMs: ms(submitted), AllAsleepMs: ms(lastAsleep.Sub(first)),
		Latency: summarize(lat), Lateness: summarize(lateness.all()), Cost: cost,
		TargetAllMs: ms(targetW3AllDone), TargetP99ms: ms(targetW3LatenessP99)}
	res.Pass = span <= targetW3AllDone && res.Lateness.P99ms <= res.TargetP99ms
	if !o.asJSON {
		fmt.Fprintf(e.Stdout, "W3: %d workflows sleeping %s each: all done %.0fms after the first submission (all submitted after %.0fms, all asleep after %.0fms)\n",
			o.sleepers, o.sleep, res.AllDoneMs, res.SubmittedMs, res.AllAsleepMs)
		fmt.Fprintf(e.Stdout, "  submit → done p50 %.0fms p99 %.0fms   timer lateness p50 %.1fms p99 %.1fms max %.1fms   %s   [target all ≤%dms, lateness p99 ≤%dms: %s]\n",
			res.Latency.P50ms, res.Latency.P99ms, res.Lateness.P50ms, res.Lateness.P99ms, res.Lateness.Maxms, costLine(res.Cost),
			targetW3AllDone.Milliseconds(), targetW3LatenessP99.Milliseconds(), verdict(res.Pass))
	}
	return res, nil
}

func benchSDKAll(ctx context.Context, e *Env, o *sdkBenchOptions, env *benchEnv) (any, error) {
	out := map[string]any{"server": env.Server}
	for _, b := range []struct {
		name string
		fn   func(context.Context, *Env, *sdkBenchOptions, *benchEnv) (any, error)
	}{{"w1", benchW1}, {"w2", benchW2}, {"w3", benchW3}} {
		res, err := b.fn(ctx, e, o, env)
		if err != nil {
			return nil, err
		}
		out[b.name] = res
	}
	return out, nil
}
