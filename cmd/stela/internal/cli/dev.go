package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/stela-dev/stela/bench"
	"github.com/stela-dev/stela/cas"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/dynamo"
	"github.com/stela-dev/stela/functions/app"
	"github.com/stela-dev/stela/httpapi"
	"github.com/stela-dev/stela/obs"
	"github.com/stela-dev/stela/sqlite"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/timers"
)

// Backends of `stela dev`.
const (
	backendAuto     = "auto"
	backendEmbedded = "embedded"
	backendDynamo   = "dynamo"
	// defaultDevTable is the table name when STELA_TABLE is unset.
	defaultDevTable = "stela"
)

// Shutdown budget: long polls answer at once (httpapi.Options.Draining);
// the other in-flight requests get drainGrace to finish on their own, then
// they are cancelled and get drainForce more.
const (
	drainGrace = 3 * time.Second
	drainForce = 5 * time.Second
)

type devOptions struct {
	dataDir, addr, token, backend, logLevel string
	durability, cpuProfile                  string
	timersInterval                          time.Duration
	retention                               retentionFlag
	// existing refuses to create a store that does not exist (the source
	// of an export or a backup) instead of creating it.
	existing bool
}

// retentionFlag is --retention: a core.Retention that remembers whether
// it was given (with --backend dynamo, STELA_RETENTION applies otherwise).
type retentionFlag struct {
	r   core.Retention
	set bool
}

func (f *retentionFlag) String() string { return f.r.String() }

func (f *retentionFlag) Set(s string) error {
	f.set = true
	return f.r.Set(s)
}

// retentionUsage documents --retention.
const retentionUsage = "how long a finished execution (with all its child executions) is kept after the last of\n" +
	"them finished: a number of days (30d), a Go duration (720h) or forever; then it is\n" +
	"deleted (reads answer 404, lists no longer show it)"

func devCommand() *command {
	return &command{
		name: "dev", summary: "run a local Stela server (HTTP API + timers) on the embedded store", maxArgs: 0,
		doc: "By default the data lives in <data-dir>/stela.db (SQLite) and <data-dir>/blobs (CAS); the\n" +
			"directory is created if absent and survives restarts. With --backend dynamo (or, with\n" +
			"--backend auto, when STELA_TABLE is set) the server uses the\n" +
			"DynamoDB table $STELA_TABLE (default \"stela\", created if absent) and, when STELA_BUCKET is\n" +
			"set, that S3 bucket as CAS; AWS credentials, region and endpoints come from the usual AWS_*\n" +
			"variables. Timers run in-process: due delays and expired locks are handled at their\n" +
			"deadline, and a safety sweep (with the cancellation driver) runs every --timers-interval.\n" +
			"SIGINT/SIGTERM stop it gracefully.\n\n" +
			"Finished executions are kept for --retention (default 30 days) after the last execution of\n" +
			"their tree finished, then deleted by the timers (--retention forever keeps everything).\n\n" +
			"The embedded store fsyncs every acknowledged write before answering (--durability fsync,\n" +
			"shared by the writes committed together); --durability os-crash-unsafe skips the fsync.\n\n" +
			"Example:\n  stela dev --data-dir ./.stela --addr 127.0.0.1:8080",
		flags: func(fs *flag.FlagSet, e *Env) func(context.Context, []string) error {
			o := &devOptions{retention: retentionFlag{r: core.RetainFor(core.DefaultRetentionPeriod)}}
			fs.StringVar(&o.dataDir, "data-dir", ".stela", "directory of the embedded store and blobs")
			fs.StringVar(&o.addr, "addr", "127.0.0.1:8080", "listen address (port 0 picks a free port)")
			fs.StringVar(&o.token, "token", "", "require this bearer token on every request (default: no auth)")
			fs.StringVar(&o.backend, "backend", backendAuto, "store: auto, embedded (SQLite) or dynamo (DynamoDB + S3)")
			fs.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error (logs go to stderr)")
			fs.DurationVar(&o.timersInterval, "timers-interval", timers.DefaultInterval, "safety sweep period (timers written through this server fire at their deadline)")
			fs.StringVar(&o.durability, "durability", sqlite.DurabilityFsyncName, sqlite.DurabilityUsage)
			fs.Var(&o.retention, "retention", retentionUsage)
			fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write the server's CPU profile (pprof) to this file until it stops")
			return func(ctx context.Context, _ []string) error { return runDev(ctx, e, o) }
		},
	}
}

// devStack is the store and CAS the dev server runs on.
type devStack struct {
	svc      *store.Service
	cas      core.Cas
	describe []string // banner lines: where the data lives
	// sqlite is the embedded store (nil on DynamoDB), durability its mode
	// as read back from the writer connection.
	sqlite     *sqlite.Backend
	durability string
}

func runDev(ctx context.Context, e *Env, o *devOptions) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return usagef("invalid --log-level %q", o.logLevel)
	}
	if o.timersInterval <= 0 {
		return usagef("--timers-interval must be positive")
	}
	logger := slog.New(slog.NewTextHandler(e.Stderr, &slog.HandlerOptions{Level: level}))
	if o.cpuProfile != "" {
		stop, err := bench.StartCPUProfile(o.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	mode := o.backend
	switch mode {
	case backendAuto:
		mode = backendEmbedded
		// Only an explicit table selects DynamoDB: an endpoint variable alone
		// (e.g. a DynamoDB Local left in the shell for tests) must not move a
		// newcomer's data off the embedded store.
		if e.Getenv(app.EnvTable) != "" {
			mode = backendDynamo
		}
	case backendEmbedded, backendDynamo:
	default:
		return usagef("invalid --backend %q: want auto, embedded or dynamo", o.backend)
	}
	durability, err := sqlite.ParseDurability(o.durability)
	if err != nil {
		return usagef("--durability: %v", err)
	}
	if mode == backendDynamo && durability != sqlite.DurabilityFsync {
		return usagef("--durability %s applies to the embedded store only (DynamoDB commits are always durable)", o.durability)
	}
	// Metrics always (served at /metrics); tracing when the OTEL_*
	// variables configure an exporter (docs/operations.md).
	tracing, err := obs.TracingFromEnv(ctx, e.Getenv, "stela-dev")
	if err != nil {
		return usagef("tracing: %v", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := tracing.Shutdown(sctx); err != nil {
			logger.Warn("trace exporter shutdown failed", core.LogKeyErr, err)
		}
	}()
	tel := devTelemetry{metrics: obs.NewMetrics(), tracing: tracing}
	tel.observer = obs.NewObserver(tel.metrics, tracing)
	st, err := openByKind(ctx, e, mode, o, durability, logger, tel)
	if err != nil {
		return err
	}
	defer func() {
		if err := st.svc.Close(); err != nil {
			logger.Error("close store failed", core.LogKeyErr, err)
		}
	}()

	auth := httpapi.AllowAll()
	if o.token != "" {
		auth = httpapi.BearerToken(o.token)
	}
	clock := store.SystemClock{}
	draining := make(chan struct{}) // closed at shutdown: long polls answer at once
	handler := httpapi.New(st.svc, st.cas, httpapi.Options{Clock: clock, Logger: logger, Authorizer: auth,
		Sweep: app.SweepFunc(st.svc), Ready: st.svc.Ready, Observer: tel.observer, Draining: draining})
	// Reading /metrics measures the sweep lag: a stopped sweep shows.
	tel.metrics.SetLagProbe(func(ctx context.Context) (time.Duration, error) {
		return store.TimerLag(ctx, st.svc, clock.Now())
	})

	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.addr, err)
	}
	// Requests net/http rejects before routing (e.g. a malformed %-escape)
	// still get a JSON error body.
	ln = httpapi.JSONErrorsListener(ln)
	baseCtx, cancelRequests := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRequests()
	srv := &http.Server{Handler: withDevRoutes(handler, auth, st, mode, tel.metrics), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return baseCtx },
		ErrorLog:    slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}

	timersCtx, stopTimers := context.WithCancel(context.WithoutCancel(ctx))
	// The timers wake at the earliest delay or lock expiry this server wrote;
	// --timers-interval paces a safety sweep for the rest (timers from before
	// the start, other processes, unpaused delays, cancellations).
	deadlines := st.svc.WatchTimers()
	defer deadlines.Close()
	var wg sync.WaitGroup
	wg.Go(func() {
		stats, err := timers.Run(timersCtx, st.svc, clock, timers.Options{Interval: o.timersInterval, Logger: logger, Deadlines: deadlines,
			Observer: tel.observer, Retention: st.svc})
		if err != nil {
			logger.Error("timers stopped", core.LogKeyErr, err)
			return
		}
		logger.Debug("timers stopped", slog.Any("stats", stats))
	})
	defer func() {
		stopTimers()
		wg.Wait()
	}()

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	printBanner(e.Stdout, st, "http://"+ln.Addr().String(), o, mode)

	select {
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	fmt.Fprintln(e.Stderr, "stela dev: shutting down (finishing in-flight requests)")
	close(draining)
	// ctx is done: the drain deadlines hang off an uncancelled copy of it.
	shCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drainGrace)
	err = srv.Shutdown(shCtx)
	cancel()
	if err != nil {
		cancelRequests() // end long polls (follow, wait_ms), then give the rest a little more time
		shCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drainForce)
		err = srv.Shutdown(shCtx)
		cancel()
		if err != nil {
			_ = srv.Close()
		}
	}
	stopTimers()
	wg.Wait()
	fmt.Fprintln(e.Stderr, "stela dev: stopped")
	return nil
}

// devTelemetry is the dev server's instrumentation: the metrics served at
// /metrics, tracing (nil: off) and the observer reporting to both.
type devTelemetry struct {
	metrics  *obs.Metrics
	tracing  *obs.Tracing
	observer *obs.Observer
}

// openByKind opens the store of kind (backendEmbedded or backendDynamo):
// the one way the CLI opens a backend (dev, export, import, backup). The
// embedded store lives in o.dataDir; DynamoDB's table and bucket come from
// e's STELA_* variables and are opened by functions/app, as the Lambdas
// open them.
func openByKind(ctx context.Context, e *Env, kind string, o *devOptions, durability sqlite.Durability, logger *slog.Logger, tel devTelemetry) (*devStack, error) {
	switch kind {
	case backendEmbedded:
		return openEmbedded(ctx, o, durability, logger, tel)
	case backendDynamo:
		return openDynamo(ctx, e, o, logger, tel)
	}
	return nil, fmt.Errorf("unknown backend %q", kind)
}

func openEmbedded(ctx context.Context, o *devOptions, durability sqlite.Durability, logger *slog.Logger, tel devTelemetry) (*devStack, error) {
	dir, err := filepath.Abs(o.dataDir)
	if err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "stela.db")); o.existing && err != nil {
		return nil, fmt.Errorf("no embedded store in %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	dbPath := filepath.Join(dir, "stela.db")
	backend, err := sqlite.Open(dbPath, sqlite.Options{Logger: logger, Durability: durability})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dbPath, err)
	}
	inForce, err := backend.DurabilityInForce(ctx)
	if err != nil {
		_ = backend.Close()
		return nil, err
	}
	blobs := filepath.Join(dir, "blobs")
	c, err := cas.NewDir(blobs)
	if err != nil {
		_ = backend.Close()
		return nil, fmt.Errorf("open blob dir %s: %w", blobs, err)
	}
	tel.metrics.ObserveBackend(func() obs.BackendCounters {
		s := backend.Stats()
		return obs.BackendCounters{Commits: s.Commits, WriteTransactions: s.Transactions}
	})
	return &devStack{
		svc: store.New(backend, store.Options{Logger: logger, Cas: c, Observer: tel.observer, Retention: o.retention.r}),
		cas: c,
		describe: []string{
			"store:  embedded SQLite " + dbPath,
			"        durability " + describeDurability(inForce),
			"blobs:  " + blobs,
		},
		sqlite:     backend,
		durability: inForce.String(),
	}, nil
}

func describeDurability(d sqlite.Durability) string {
	if d == sqlite.DurabilityFsync {
		return d.String() + ": every acknowledged write is fsynced (synchronous=FULL)"
	}
	return d.String() + ": an OS crash or power loss may lose the last acknowledged writes (synchronous=NORMAL)"
}

func openDynamo(ctx context.Context, e *Env, o *devOptions, logger *slog.Logger, tel devTelemetry) (*devStack, error) {
	getenv := func(k string) string {
		if v := e.Getenv(k); v != "" || k != app.EnvTable {
			return v
		}
		return defaultDevTable
	}
	cfg, err := app.LoadConfig(getenv)
	if err != nil {
		return nil, err
	}
	if o.retention.set || e.Getenv(app.EnvRetention) == "" {
		cfg.Retention = o.retention.r
	}
	// The SDK's whole chain (profiles, SSO, …): a laptop is not a Lambda.
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load AWS config: %w", err)
	}
	a, err := app.NewWithLogger(ctx, cfg, logger, app.WithAWS(awsCfg), app.WithMetrics(tel.metrics), app.WithTracing(tel.tracing))
	if err != nil {
		return nil, err
	}
	if o.existing {
		if err := a.Store.Ready(ctx); err != nil {
			return nil, fmt.Errorf("DynamoDB table %q: %w", cfg.Table, err)
		}
	} else if err := dynamo.CreateTable(ctx, a.Dynamo, cfg.Table); err != nil {
		return nil, err
	}
	endpoint := "AWS"
	if ep := e.Getenv("AWS_ENDPOINT_URL_DYNAMODB"); ep != "" {
		endpoint = ep
	} else if ep := e.Getenv("AWS_ENDPOINT_URL"); ep != "" {
		endpoint = ep
	}
	st := &devStack{svc: a.Store, cas: a.CAS,
		describe: []string{fmt.Sprintf("store:  DynamoDB table %q at %s", cfg.Table, endpoint)}}
	if a.CAS == nil {
		dir, err := filepath.Abs(filepath.Join(o.dataDir, "blobs"))
		if err != nil {
			return nil, err
		}
		c, err := cas.NewDir(dir)
		if err != nil {
			return nil, fmt.Errorf("open blob dir %s: %w", dir, err)
		}
		st.cas = c
		st.describe = append(st.describe, "blobs:  "+dir+" (set STELA_BUCKET for S3)")
	} else {
		if err := ensureBucket(ctx, a.AWS, cfg.Bucket); err != nil {
			return nil, err
		}
		st.describe = append(st.describe, fmt.Sprintf("blobs:  S3 bucket %q prefix %q", cfg.Bucket, cfg.BucketPrefix))
	}
	return st, nil
}

// ensureBucket creates the CAS bucket if it does not exist.
func ensureBucket(ctx context.Context, cfg aws.Config, bucket string) error {
	client := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
	if _, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)}); err == nil {
		return nil
	}
	_, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)})
	var owned *s3types.BucketAlreadyOwnedByYou
	if err != nil && !errors.As(err, &owned) {
		return fmt.Errorf("create bucket %s: %w", bucket, err)
	}
	return nil
}

// installCommand installs the stela command (README, "Install").
const installCommand = "go install github.com/stela-dev/stela/cmd/stela@latest"

func printBanner(w io.Writer, st *devStack, url string, o *devOptions, mode string) {
	fmt.Fprintf(w, "stela dev (%s backend)\n", mode)
	for _, l := range st.describe {
		fmt.Fprintf(w, "  %s\n", l)
	}
	fmt.Fprintf(w, "  timers: in-process, at each deadline (safety sweep every %s)\n", o.timersInterval)
	fmt.Fprintf(w, "  retention: finished executions are kept %s\n", describeRetention(st.svc.Retention()))
	authHdr := ""
	if o.token != "" {
		fmt.Fprintf(w, "  API:    %s (bearer token required)\n", url)
		authHdr = fmt.Sprintf(" -H 'Authorization: Bearer %s'", o.token)
	} else {
		fmt.Fprintf(w, "  API:    %s (no auth)\n", url)
		if host, _, _ := net.SplitHostPort(strings.TrimPrefix(url, "http://")); !isLoopback(host) {
			fmt.Fprintf(w, "  WARNING: listening beyond loopback without --token\n")
		}
	}
	fmt.Fprintf(w, "  console: %s/console/ (web console in a browser)\n", url)
	metricsAuth := ""
	if o.token != "" {
		metricsAuth = ", bearer token"
	}
	fmt.Fprintf(w, "  ops:    %s%s (Prometheus text%s), %s%s, %s%s; `stela status`\n",
		url, metricsPath, metricsAuth, url, httpapi.HealthzPath, url, httpapi.ReadyzPath)
	fmt.Fprintf(w, "\nTry it:\n")
	fmt.Fprintf(w, "  curl -s -X POST %s/v1/executions%s -H 'Content-Type: application/json' \\\n", url, authHdr)
	fmt.Fprintf(w, "    -d '{\"ffqn\":\"demo:hello/greeter.greet\",\"params\":[\"World\"]}'\n")
	fmt.Fprintf(w, "  curl -s %s/v1/executions%s -H 'Accept: text/plain'\n", url, authHdr)
	urlFlag := ""
	if url != defaultURL {
		urlFlag = " --url " + url
	}
	tokFlag := ""
	if o.token != "" {
		tokFlag = " --token " + o.token
	}
	fmt.Fprintf(w, "  stela execution list%s%s\n", urlFlag, tokFlag)
	fmt.Fprintf(w, "  (no stela command yet? %s, or go run ./cmd/stela in a clone)\n\n", installCommand)
	fmt.Fprintf(w, "Press Ctrl-C to stop.\n")
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// describeRetention is the banner's retention line.
func describeRetention(r core.Retention) string {
	if r.Forever() {
		return "forever (--retention forever)"
	}
	return r.String() + " after their tree finished (--retention)"
}
