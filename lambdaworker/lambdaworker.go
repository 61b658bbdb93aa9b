// Package lambdaworker is the entry point of a worker Lambda function in
// the user's own module: register workflows and activities on a
// worker.Worker and start the Lambda handler in one call.
//
//	package main
//
//	import (
//		"github.com/stela-dev/stela/lambdaworker"
//		"example.com/shop/orders"
//	)
//
//	func main() { lambdaworker.Start(orders.Register) }
//
// Each invocation — the function's EventBridge schedule or an on-demand
// invoke right after a submission — runs one worker pass
// (functions/workerpass): the worker locks what is pending for its
// registered functions, runs it and appends the outcomes until nothing is
// pending or the invocation's budget ends (the time left before the
// deadline minus a safety margin, capped by STELA_WORKER_MAX_BUDGET);
// then it releases (Unlocked) what it could not finish, so the next pass or
// any other worker takes it over at once. Metrics (EMF on stdout) and spans
// are flushed once per invocation, like every Stela function.
//
// The worker calls the store directly (DynamoDB and the S3 CAS), not the
// HTTP API. It is configured from the environment the CDK construct
// (infra/stelacdk.NewWorker) or the SAM template sets: STELA_TABLE,
// STELA_BUCKET, STELA_BUCKET_PREFIX, STELA_RETENTION and
// STELA_METRICS_NAMESPACE (functions/app.LoadConfig), plus EnvName,
// EnvMaxBudget and EnvMargin below.
//
// The package is not part of the SDK proper (client, worker, wire never
// import the server): it links the DynamoDB store, which is what a worker
// on Lambda runs against.
package lambdaworker

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/stela-dev/stela/functions"
	"github.com/stela-dev/stela/functions/app"
	"github.com/stela-dev/stela/functions/workerpass"
	"github.com/stela-dev/stela/worker"
)

// Environment variables read by New besides functions/app's.
const (
	// EnvName names the worker (worker.Options.Name); default the Lambda
	// function's name.
	EnvName = "STELA_WORKER_NAME"
	// EnvMaxBudget caps one pass (Go duration; default
	// workerpass.DefaultMaxBudget, one minute). The construct sets it to
	// the function's timeout.
	EnvMaxBudget = "STELA_WORKER_MAX_BUDGET"
	// EnvMargin is the time kept free before the invocation's deadline for
	// the releases (Go duration; default workerpass.DefaultMargin, 5 s). It
	// must exceed the worker's shutdown grace (DefaultShutdownGrace).
	EnvMargin = "STELA_WORKER_MARGIN"
)

// DefaultShutdownGrace is how long running functions get to return once a
// pass's budget ends, before the worker releases them.
const DefaultShutdownGrace = 2 * time.Second

// Option adjusts the worker New builds.
type Option func(*worker.Options)

// WithOptions lets f adjust the worker's options (concurrency, cache,
// lock batch, …) after New has filled in the name, clock, logger and
// shutdown grace.
func WithOptions(f func(*worker.Options)) Option { return Option(f) }

// Handler is a worker Lambda: the worker, the application it runs on, and
// the per-invocation pass.
type Handler struct {
	// Worker runs the registered functions; Submit on it to start work.
	Worker *worker.Worker
	// App is the store, CAS, logger and telemetry built from the
	// environment.
	App  *app.App
	pass *workerpass.Pass
	tel  *functions.Telemetry
}

// New builds the handler from the environment (os.Getenv): the
// DynamoDB-backed store, the worker with register's functions, the pass.
func New(ctx context.Context, register func(*worker.Worker), opts ...Option) (*Handler, error) {
	if register == nil {
		return nil, fmt.Errorf("lambdaworker: register is nil")
	}
	popts, err := passOptions(os.Getenv)
	if err != nil {
		return nil, err
	}
	a, err := app.FromEnv(ctx)
	if err != nil {
		return nil, err
	}
	name := strings.TrimSpace(os.Getenv(EnvName))
	if name == "" {
		name = a.Function
	}
	if name == "" {
		name = "lambda-worker"
	}
	wo := worker.Options{Name: name, Clock: a.Clock, Logger: a.Logger, ShutdownGrace: DefaultShutdownGrace}
	for _, o := range opts {
		o(&wo)
	}
	if wo.ShutdownGrace >= popts.SafetyMargin {
		return nil, fmt.Errorf("lambdaworker: shutdown grace %v must be shorter than %s (%v)", wo.ShutdownGrace, EnvMargin, popts.SafetyMargin)
	}
	w := worker.New(a.Store, wo)
	register(w)
	popts.Logger = a.Logger
	return &Handler{Worker: w, App: a, pass: workerpass.New(w, popts), tel: a.Telemetry()}, nil
}

// passOptions reads EnvMaxBudget and EnvMargin.
func passOptions(getenv func(string) string) (workerpass.Options, error) {
	o := workerpass.Options{MaxBudget: workerpass.DefaultMaxBudget, SafetyMargin: workerpass.DefaultMargin}
	for _, v := range []struct {
		name string
		dst  *time.Duration
	}{{EnvMaxBudget, &o.MaxBudget}, {EnvMargin, &o.SafetyMargin}} {
		s := strings.TrimSpace(getenv(v.name))
		if s == "" {
			continue
		}
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return o, fmt.Errorf("lambdaworker: %s must be a positive Go duration (e.g. 5s), got %q", v.name, s)
		}
		*v.dst = d
	}
	return o, nil
}

// Handle runs one pass (any event: a pass is level-triggered) and flushes
// the invocation's telemetry.
func (h *Handler) Handle(ctx context.Context, event json.RawMessage) (workerpass.Result, error) {
	return functions.Instrument(h.tel, h.pass.Handle)(ctx, event)
}

// Start is the whole main of a worker function: New, then lambda.Start
// with Handle. It does not return; a configuration error ends the process
// (the Lambda init fails and says why in the log).
func Start(register func(*worker.Worker), opts ...Option) {
	h, err := New(context.Background(), register, opts...)
	if err != nil {
		slog.Error("stela worker: init failed", "err", err)
		os.Exit(1)
	}
	lambda.Start(h.Handle)
}
