// Package workerpass is the `worker` Lambda function's handler: one pass of
// an SDK worker (package worker) per invocation. It is not in package
// functions so that the other functions, which link functions, do not link
// the worker SDK (and, through its HTTP client, the AWS SDK's configuration
// chain: docs/deploy.md, "What a function links").
package workerpass

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/stela-dev/stela/functions"
	"github.com/stela-dev/stela/worker"
)

// Defaults of Options.
const (
	// DefaultMargin is the time kept free before the invocation's
	// deadline: the worker's shutdown grace plus the releases it writes.
	DefaultMargin = 5 * time.Second
	// DefaultMaxBudget caps one invocation (the schedule's period).
	DefaultMaxBudget = time.Minute
)

// Options configure the `worker` function.
type Options struct {
	// SafetyMargin is subtracted from the time left before the deadline to
	// get the pass's budget; it must exceed the worker's ShutdownGrace.
	// Default DefaultMargin.
	SafetyMargin time.Duration
	// MaxBudget caps a pass (and is the budget without a deadline).
	// Default DefaultMaxBudget.
	MaxBudget time.Duration
	// Logger receives one line per invocation. Default slog.Default().
	Logger *slog.Logger
}

// Pass is the `worker` function: each invocation — from its
// EventBridge schedule or on demand (e.g. right after a submission) — runs
// one worker pass: it locks the pending executions of the registered
// functions, runs them and appends their outcomes until nothing is pending
// or the budget ends; then it releases (Unlocked) what it could not finish,
// so the next pass or any other worker takes it over at once. The event's
// content is ignored: a pass is level-triggered, like the timers sweep.
type Pass struct {
	w    *worker.Worker
	opts Options
	log  *slog.Logger
}

// New returns the handler running w.
func New(w *worker.Worker, opts Options) *Pass {
	if opts.SafetyMargin <= 0 {
		opts.SafetyMargin = DefaultMargin
	}
	if opts.MaxBudget <= 0 {
		opts.MaxBudget = DefaultMaxBudget
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Pass{w: w, opts: opts, log: log}
}

// Result is what an invocation did.
type Result struct {
	// Activities and Workflows count the runs of this pass.
	Activities int64 `json:"activities"`
	Workflows  int64 `json:"workflows"`
	// Idle is true when the pass ended because nothing was left to do, false
	// when its budget ran out first.
	Idle bool `json:"idle"`
	// Cached is how many suspended workflows the (warm) function keeps.
	Cached   int     `json:"cached"`
	Seconds  float64 `json:"seconds"`
	BudgetMs int64   `json:"budget_ms"`
}

// Budget returns how long a pass whose invocation context is ctx may run.
func (p *Pass) Budget(ctx context.Context) time.Duration {
	return functions.InvocationBudget(ctx, p.opts.MaxBudget, p.opts.SafetyMargin)
}

// Handle runs one pass.
func (p *Pass) Handle(ctx context.Context, _ json.RawMessage) (Result, error) {
	budget := p.Budget(ctx)
	before := p.w.Stats()
	start := time.Now()
	pctx, cancel := context.WithTimeout(ctx, budget)
	err := p.w.RunUntilIdle(pctx)
	idle := pctx.Err() == nil
	cancel()
	after := p.w.Stats()
	res := Result{Activities: after.Activities - before.Activities, Workflows: after.Workflows - before.Workflows,
		Idle: idle, Cached: after.Cached, Seconds: time.Since(start).Seconds(), BudgetMs: budget.Milliseconds()}
	if err != nil {
		return res, fmt.Errorf("workerpass: %w", err)
	}
	p.log.InfoContext(ctx, "worker pass", slog.Any("result", res))
	return res, nil
}
