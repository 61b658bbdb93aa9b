package functions

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/stela-dev/stela/worker"
)

// Defaults of WorkerPassOptions.
const (
	// DefaultWorkerMargin is the time kept free before the invocation's
	// deadline: the worker's shutdown grace plus the releases it writes.
	DefaultWorkerMargin = 5 * time.Second
	// DefaultWorkerMaxBudget caps one invocation (the schedule's period).
	DefaultWorkerMaxBudget = time.Minute
)

// WorkerPassOptions configure the `worker` function.
type WorkerPassOptions struct {
	// SafetyMargin is subtracted from the time left before the deadline to
	// get the pass's budget; it must exceed the worker's ShutdownGrace.
	// Default DefaultWorkerMargin.
	SafetyMargin time.Duration
	// MaxBudget caps a pass (and is the budget without a deadline).
	// Default DefaultWorkerMaxBudget.
	MaxBudget time.Duration
	// Logger receives one line per invocation. Default slog.Default().
	Logger *slog.Logger
}

// WorkerPass is the `worker` function: each invocation — from its
// EventBridge schedule or on demand (e.g. right after a submission) — runs
// one worker pass: it locks the pending executions of the registered
// functions, runs them and appends their outcomes until nothing is pending
// or the budget ends; then it releases (Unlocked) what it could not finish,
// so the next pass or any other worker takes it over at once. The event's
// content is ignored: a pass is level-triggered, like the timers sweep.
type WorkerPass struct {
	w    *worker.Worker
	opts WorkerPassOptions
	log  *slog.Logger
}

// NewWorkerPass returns the handler running w.
func NewWorkerPass(w *worker.Worker, opts WorkerPassOptions) *WorkerPass {
	if opts.SafetyMargin <= 0 {
		opts.SafetyMargin = DefaultWorkerMargin
	}
	if opts.MaxBudget <= 0 {
		opts.MaxBudget = DefaultWorkerMaxBudget
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &WorkerPass{w: w, opts: opts, log: log}
}

// WorkerPassResult is what an invocation did.
type WorkerPassResult struct {
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
func (p *WorkerPass) Budget(ctx context.Context) time.Duration {
	return invocationBudget(ctx, p.opts.MaxBudget, p.opts.SafetyMargin)
}

// invocationBudget is the time left before ctx's deadline minus margin,
// capped at maxBudget (the budget when ctx has no deadline); at least 1 ns.
func invocationBudget(ctx context.Context, maxBudget, margin time.Duration) time.Duration {
	b := maxBudget
	if dl, ok := ctx.Deadline(); ok {
		b = min(b, time.Until(dl)-margin)
	}
	return max(b, time.Nanosecond)
}

// Handle runs one pass.
func (p *WorkerPass) Handle(ctx context.Context, _ json.RawMessage) (WorkerPassResult, error) {
	budget := p.Budget(ctx)
	before := p.w.Stats()
	start := time.Now()
	pctx, cancel := context.WithTimeout(ctx, budget)
	err := p.w.RunUntilIdle(pctx)
	idle := pctx.Err() == nil
	cancel()
	after := p.w.Stats()
	res := WorkerPassResult{Activities: after.Activities - before.Activities, Workflows: after.Workflows - before.Workflows,
		Idle: idle, Cached: after.Cached, Seconds: time.Since(start).Seconds(), BudgetMs: budget.Milliseconds()}
	if err != nil {
		return res, fmt.Errorf("functions: worker pass: %w", err)
	}
	p.log.InfoContext(ctx, "worker pass", slog.Any("result", res))
	return res, nil
}
