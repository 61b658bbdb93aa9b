// Package app builds what every Stela Lambda (and `stela dev --backend
// dynamo`) needs from the environment: a validated Config, the AWS
// configuration, the DynamoDB-backed store.Service, the S3 CAS and a JSON
// slog logger. FromEnv is the only function in the Lambda code that reads
// environment variables; it runs once per cold start.
//
// The package is not under functions/internal because cmd/stela builds the
// same stack for its DynamoDB mode (the dev server uses the same config code).
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/stela-dev/stela/cas"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/dynamo"
	"github.com/stela-dev/stela/functions"
	"github.com/stela-dev/stela/httpapi"
	"github.com/stela-dev/stela/obs"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/timers"
)

// Environment variables read by LoadConfig.
const (
	EnvTable           = "STELA_TABLE"             // required: the DynamoDB table
	EnvBucket          = "STELA_BUCKET"            // the S3 bucket of the CAS; empty: no CAS
	EnvBucketPrefix    = "STELA_BUCKET_PREFIX"     // key prefix in the bucket, e.g. "cas/"
	EnvAPIToken        = "STELA_API_TOKEN"         // optional bearer token checked by the handler
	EnvLogLevel        = "STELA_LOG_LEVEL"         // debug|info|warn|error (default info)
	EnvShards          = "STELA_SHARDS"            // dynamo.Options.Shards
	EnvInlineThreshold = "STELA_INLINE_THRESHOLD"  // dynamo.Options.InlineThreshold (bytes)
	EnvFollowWait      = "STELA_FOLLOW_WAIT"       // httpapi long-poll bound (Go duration)
	EnvPollInterval    = "STELA_POLL_INTERVAL"     // store.Options.PollInterval (Go duration)
	EnvTimersInterval  = "STELA_TIMERS_INTERVAL"   // timers pass interval (Go duration, default 1s)
	EnvTimersLeeway    = "STELA_TIMERS_LEEWAY"     // timers sweep leeway (Go duration, default 0)
	EnvTimersBudget    = "STELA_TIMERS_MAX_BUDGET" // cap of one timers invocation (default 1m)
	EnvTimersMargin    = "STELA_TIMERS_MARGIN"     // time kept free before the deadline (default 5s)
	// EnvRetention is how long a finished execution tree is kept
	// (store.Options.Retention): "30d", "720h" or "forever"; default
	// core.DefaultRetentionPeriod (30 days).
	EnvRetention = "STELA_RETENTION"
	// EnvDigestIndex = "off" drops the pending-by-component-digest index
	// (dynamo.Options.DisableDigestIndex): cheaper writes, no lock by digest.
	EnvDigestIndex = "STELA_DIGEST_INDEX"
	// EnvDeploymentCounts = "off" drops the deployment-counts index
	// (dynamo.Options.DisableDeploymentCounts): cheaper writes, no per-deployment counts.
	EnvDeploymentCounts = "STELA_DEPLOYMENT_COUNTS"
	// EnvMetricsNamespace is the CloudWatch namespace of the functions'
	// EMF metrics (default obs.DefaultNamespace, "Stela"; the CDK stack sets
	// "Stela/<stack name>").
	EnvMetricsNamespace = "STELA_METRICS_NAMESPACE"
	// envFunctionName is set by Lambda: the function's name.
	envFunctionName = "AWS_LAMBDA_FUNCTION_NAME"
)

// Config is the validated configuration of a Lambda.
type Config struct {
	Table           string
	Bucket          string
	BucketPrefix    string
	APIToken        string
	LogLevel        slog.Level
	Shards          int
	InlineThreshold int
	FollowWait      time.Duration
	PollInterval    time.Duration
	TimersInterval  time.Duration
	TimersLeeway    time.Duration
	TimersMaxBudget time.Duration
	TimersMargin    time.Duration
	// NoDigestIndex and NoDeploymentCounts trade features for write cost
	// (see dynamo/doc.go, "Cost").
	NoDigestIndex      bool
	NoDeploymentCounts bool
	// MetricsNamespace is the CloudWatch namespace of the EMF metrics
	// ("" = obs.DefaultNamespace).
	MetricsNamespace string
	// Retention is how long a finished execution tree is kept.
	Retention core.Retention
}

// LoadConfig reads and validates the configuration through getenv
// (os.Getenv in production, a map in tests).
func LoadConfig(getenv func(string) string) (Config, error) {
	c := Config{
		Table:        strings.TrimSpace(getenv(EnvTable)),
		Bucket:       strings.TrimSpace(getenv(EnvBucket)),
		BucketPrefix: getenv(EnvBucketPrefix),
		APIToken:     strings.TrimSpace(getenv(EnvAPIToken)),

		MetricsNamespace: strings.TrimSpace(getenv(EnvMetricsNamespace)),
		Retention:        core.RetainFor(core.DefaultRetentionPeriod),
	}
	var errs []error
	if c.Table == "" {
		errs = append(errs, fmt.Errorf("%s is required", EnvTable))
	}
	if c.BucketPrefix != "" && !strings.HasSuffix(c.BucketPrefix, "/") {
		errs = append(errs, fmt.Errorf("%s must end in \"/\", got %q", EnvBucketPrefix, c.BucketPrefix))
	}
	if lv := getenv(EnvLogLevel); lv != "" {
		if err := c.LogLevel.UnmarshalText([]byte(lv)); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", EnvLogLevel, err))
		}
	}
	intVar := func(name string, dst *int) {
		if s := getenv(name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n <= 0 {
				errs = append(errs, fmt.Errorf("%s must be a positive integer, got %q", name, s))
			}
			*dst = n
		}
	}
	durVar := func(name string, dst *time.Duration) {
		if s := getenv(name); s != "" {
			d, err := time.ParseDuration(s)
			if err != nil || d < 0 {
				errs = append(errs, fmt.Errorf("%s must be a non-negative Go duration (e.g. 1s), got %q", name, s))
			}
			*dst = d
		}
	}
	offVar := func(name string, dst *bool) {
		switch s := strings.TrimSpace(getenv(name)); s {
		case "", "on":
		case "off":
			*dst = true
		default:
			errs = append(errs, fmt.Errorf("%s must be on or off, got %q", name, s))
		}
	}
	if s := getenv(EnvRetention); s != "" {
		if err := c.Retention.Set(s); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", EnvRetention, err))
		}
	}
	offVar(EnvDigestIndex, &c.NoDigestIndex)
	offVar(EnvDeploymentCounts, &c.NoDeploymentCounts)
	intVar(EnvShards, &c.Shards)
	intVar(EnvInlineThreshold, &c.InlineThreshold)
	durVar(EnvFollowWait, &c.FollowWait)
	durVar(EnvPollInterval, &c.PollInterval)
	durVar(EnvTimersInterval, &c.TimersInterval)
	durVar(EnvTimersLeeway, &c.TimersLeeway)
	durVar(EnvTimersBudget, &c.TimersMaxBudget)
	durVar(EnvTimersMargin, &c.TimersMargin)
	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("app: invalid configuration: %w", err)
	}
	return c, nil
}

// DynamoOptions returns the dynamo.Options that c configures: table,
// shards, inline threshold and index layout (Cas, Logger and Clock are left
// to the caller). bench/cost measures with the same options.
func (c Config) DynamoOptions() dynamo.Options {
	return dynamo.Options{Table: c.Table, Shards: c.Shards, InlineThreshold: c.InlineThreshold,
		DisableDigestIndex: c.NoDigestIndex, DisableDeploymentCounts: c.NoDeploymentCounts}
}

// App is what a Lambda main wires together.
type App struct {
	Config Config
	// AWS is the SDK configuration: WithAWS's, else AWSConfigFromEnv's
	// (the Lambda environment, AWS_ENDPOINT_URL and
	// AWS_ENDPOINT_URL_<SERVICE> included).
	AWS aws.Config
	// Dynamo is the DynamoDB client the store uses.
	Dynamo *dynamodb.Client
	// Store is the store.Service on the DynamoDB backend.
	Store *store.Service
	// CAS is the S3 blob store (*cas.S3), nil when no bucket is configured.
	CAS core.Cas
	// Logger writes JSON to stdout; records logged with an invocation
	// context carry its request id.
	Logger *slog.Logger
	// Clock is the wall clock.
	Clock core.Clock
	// Metrics is the instrumentation of the store, the HTTP handler, the
	// timers loop and the DynamoDB client; Tracing is nil unless the
	// OTEL_* variables configure an exporter (FromEnv); Observer reports to
	// both.
	Metrics  *obs.Metrics
	Tracing  *obs.Tracing
	Observer *obs.Observer
	// Function is the Lambda function's name ("" outside Lambda).
	Function string

	haveAWS bool // AWS was given (WithAWS)
}

// Option adjusts NewWithLogger.
type Option func(*App)

// WithTracing makes the store and the handlers trace with t (nil: off).
func WithTracing(t *obs.Tracing) Option { return func(a *App) { a.Tracing = t } }

// WithAWS uses cfg instead of AWSConfigFromEnv(os.Getenv): outside Lambda,
// the result of config.LoadDefaultConfig (profiles, SSO, …).
func WithAWS(cfg aws.Config) Option { return func(a *App) { a.AWS, a.haveAWS = cfg, true } }

// WithMetrics reports to m instead of a fresh obs.Metrics (the dev server
// passes the one it serves at /metrics).
func WithMetrics(m *obs.Metrics) Option { return func(a *App) { a.Metrics = m } }

// FromEnv reads the environment (os.Getenv) and builds the App, with
// tracing when the standard OTEL_* variables ask for it
// (obs.TracingFromEnv; service name "stela-<function>").
func FromEnv(ctx context.Context) (*App, error) {
	cfg, err := LoadConfig(os.Getenv)
	if err != nil {
		return nil, err
	}
	service := "stela"
	if fn := os.Getenv(envFunctionName); fn != "" {
		service = "stela-" + fn
	}
	tracing, err := obs.TracingFromEnv(ctx, os.Getenv, service)
	if err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	a, err := New(ctx, cfg, os.Stdout, WithTracing(tracing))
	if err != nil {
		return nil, err
	}
	a.Function = os.Getenv(envFunctionName)
	return a, nil
}

// New builds the App for cfg, logging JSON to logOut.
func New(ctx context.Context, cfg Config, logOut io.Writer, opts ...Option) (*App, error) {
	return NewWithLogger(ctx, cfg, slog.New(functions.WithRequestID(slog.NewJSONHandler(logOut, &slog.HandlerOptions{Level: cfg.LogLevel}))), opts...)
}

// NewWithLogger builds the App for cfg with logger (the dev server logs
// text), on the AWS configuration WithAWS gives or, without it, the one
// AWSConfigFromEnv reads from the process's environment.
func NewWithLogger(ctx context.Context, cfg Config, logger *slog.Logger, options ...Option) (*App, error) {
	a := &App{Config: cfg, Logger: logger, Clock: store.SystemClock{}}
	for _, o := range options {
		o(a)
	}
	if a.Metrics == nil {
		a.Metrics = obs.NewMetrics()
	}
	a.Observer = obs.NewObserver(a.Metrics, a.Tracing)
	awsCfg := a.AWS
	if !a.haveAWS {
		var err error
		if awsCfg, err = AWSConfigFromEnv(os.Getenv); err != nil {
			return nil, err
		}
	}
	client := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		// DynamoDB Local does not send the CRC32 of error responses.
		if o.BaseEndpoint != nil && !isAWSEndpoint(*o.BaseEndpoint) {
			o.DisableValidateResponseChecksum = true
		}
		o.APIOptions = append(o.APIOptions, a.Metrics.DynamoDBMiddleware)
	})
	a.AWS, a.Dynamo = awsCfg, client
	if cfg.Bucket != "" {
		a.CAS = cas.NewS3FromConfig(awsCfg, cfg.Bucket, cfg.BucketPrefix)
	}
	opts := cfg.DynamoOptions()
	opts.Cas, opts.Logger, opts.Clock = a.CAS, logger, a.Clock
	backend, err := dynamo.New(client, opts)
	if err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	a.Metrics.ObserveBackend(func() obs.BackendCounters {
		st := backend.Stats()
		return obs.BackendCounters{Commits: st.Commits, Retries: st.Retries, Resends: st.Resends}
	})
	a.Store = store.New(backend, store.Options{Clock: a.Clock, PollInterval: cfg.PollInterval, Logger: logger, Cas: a.CAS,
		Observer: a.Observer, Retention: cfg.Retention})
	return a, nil
}

// Telemetry returns what flushes the function's metrics (EMF on stdout)
// and spans at the end of each invocation (functions.Instrument).
func (a *App) Telemetry() *functions.Telemetry {
	return &functions.Telemetry{Metrics: a.Metrics, Tracing: a.Tracing, Out: os.Stdout,
		Namespace: a.Config.MetricsNamespace, Function: a.Function, Logger: a.Logger}
}

// isAWSEndpoint reports whether endpoint is an AWS-operated host.
func isAWSEndpoint(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil {
		return false
	}
	h := u.Hostname()
	return strings.HasSuffix(h, ".amazonaws.com") || strings.HasSuffix(h, ".amazonaws.com.cn")
}

// Authorizer returns the bearer-token check when STELA_API_TOKEN is set;
// otherwise every request reaching the function is served, since API
// Gateway's authorizer (IAM or JWT, docs/spec/reliability.md §4.1) has already run.
func (a *App) Authorizer() httpapi.Authorizer {
	if a.Config.APIToken != "" {
		return httpapi.BearerToken(a.Config.APIToken)
	}
	return httpapi.AllowAll()
}

// HTTPOptions returns the httpapi options of the HTTP functions, with
// POST /v1/worker/sweep bound to store.Sweep.
func (a *App) HTTPOptions() httpapi.Options {
	return httpapi.Options{Clock: a.Clock, Logger: a.Logger, Authorizer: a.Authorizer(),
		FollowWait: a.Config.FollowWait, Sweep: SweepFunc(a.Store), Ready: a.Store.Ready, Observer: a.Observer}
}

// SweepFunc binds store.Sweep to db for httpapi.Options.Sweep.
func SweepFunc(db core.DbConnection) func(context.Context, core.Timestamp) (any, error) {
	return func(ctx context.Context, at core.Timestamp) (any, error) {
		return store.Sweep(ctx, db, at)
	}
}

// TimersOptions returns the `timers` function's options.
func (a *App) TimersOptions() functions.TimersOptions {
	return functions.TimersOptions{
		Loop: timers.Options{Interval: a.Config.TimersInterval, Leeway: a.Config.TimersLeeway,
			Logger: a.Logger, Observer: a.Observer, Retention: a.Store},
		SafetyMargin: a.Config.TimersMargin, MaxBudget: a.Config.TimersMaxBudget, Logger: a.Logger,
		Telemetry: a.Telemetry(),
	}
}
