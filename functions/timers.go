package functions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/timers"
)

// Log attribute keys of the timers invocation record (the common ones are
// core.LogKey*).
const (
	logKeyEventID      = "event_id"
	logKeyScheduledFor = "scheduled_for"
	logKeyBudget       = "budget"
	logKeyStats        = "stats"
)

// Defaults of TimersOptions.
const (
	// DefaultSafetyMargin is the time left unused before the invocation deadline.
	DefaultSafetyMargin = 5 * time.Second
	// DefaultMaxBudget caps one invocation's loop: the period of the
	// EventBridge schedule, so consecutive invocations barely overlap.
	DefaultMaxBudget = time.Minute
)

// TimersOptions configure the `timers` function.
type TimersOptions struct {
	// Loop configures each pass (Interval default 1 s, so delays fire with
	// about 1 s resolution); its Budget is ignored and computed per invocation.
	Loop timers.Options
	// SafetyMargin is subtracted from the time left before the invocation's
	// deadline to get the loop's budget. Default DefaultSafetyMargin.
	SafetyMargin time.Duration
	// MaxBudget caps the loop's budget (and is the budget when the context
	// has no deadline). Default DefaultMaxBudget.
	MaxBudget time.Duration
	// Logger receives one line per invocation. Default slog.Default().
	Logger *slog.Logger
	// Telemetry, when set, is flushed every FlushEvery during the loop (after
	// a pass) and at the end of each invocation.
	Telemetry *Telemetry
	// FlushEvery paces the flushes of Telemetry during an invocation.
	// Default DefaultTimersFlushEvery.
	FlushEvery time.Duration
}

// Timers is the `timers` function: each EventBridge-scheduled invocation
// runs timers.Run until shortly before its deadline. The event's content is
// ignored apart from its id, which is logged: the sweep is level-triggered,
// so duplicate, late or missing invocations are harmless.
type Timers struct {
	db    core.DbConnection
	clock core.Clock
	opts  TimersOptions
	log   *slog.Logger
}

// NewTimers returns the handler over db; clock gives the sweep's "now".
func NewTimers(db core.DbConnection, clock core.Clock, opts TimersOptions) *Timers {
	if opts.SafetyMargin <= 0 {
		opts.SafetyMargin = DefaultSafetyMargin
	}
	if opts.MaxBudget <= 0 {
		opts.MaxBudget = DefaultMaxBudget
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if opts.Loop.Logger == nil {
		opts.Loop.Logger = log
	}
	return &Timers{db: db, clock: clock, opts: opts, log: log}
}

// errEveryPassFailed marks an invocation in which the store never answered.
var errEveryPassFailed = errors.New("every timers pass failed")

// Budget returns how long an invocation whose context is ctx may loop: the
// time left before ctx's deadline minus the safety margin, capped at
// MaxBudget; at least 1 ns (so one pass still runs).
func (t *Timers) Budget(ctx context.Context) time.Duration {
	return InvocationBudget(ctx, t.opts.MaxBudget, t.opts.SafetyMargin)
}

// Handle runs the loop for one scheduled event and returns its statistics.
// It fails (so the invocation is retried and shows in error metrics) only
// when every pass failed.
func (t *Timers) Handle(ctx context.Context, ev events.EventBridgeEvent) (timers.Stats, error) {
	opts := t.opts.Loop
	opts.Budget = t.Budget(ctx)
	if tel := t.opts.Telemetry; tel != nil {
		every := t.opts.FlushEvery
		if every <= 0 {
			every = DefaultTimersFlushEvery
		}
		opts.Observer = &flushingObserver{inner: opts.Observer, tel: tel, every: every, last: time.Now()}
		defer tel.Flush(ctx)
	}
	st, err := timers.Run(ctx, t.db, t.clock, opts)
	if err != nil {
		return st, fmt.Errorf("functions: timers: %w", err)
	}
	t.log.InfoContext(ctx, "timers invocation", slog.String(logKeyEventID, ev.ID), slog.Time(logKeyScheduledFor, ev.Time),
		slog.Duration(logKeyBudget, opts.Budget), slog.Any(logKeyStats, st))
	if st.Passes > 0 && st.FailedPasses == st.Passes {
		return st, fmt.Errorf("functions: timers: %w (%d passes)", errEveryPassFailed, st.Passes)
	}
	return st, nil
}

// InvocationBudget is the time left before ctx's deadline minus margin,
// capped at maxBudget (the budget when ctx has no deadline); at least 1 ns.
// The timers and worker functions size their passes with it.
func InvocationBudget(ctx context.Context, maxBudget, margin time.Duration) time.Duration {
	b := maxBudget
	if dl, ok := ctx.Deadline(); ok {
		b = min(b, time.Until(dl)-margin)
	}
	return max(b, time.Nanosecond)
}
