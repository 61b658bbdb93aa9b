// Package timers runs Stela's periodic background work: the expired-timers
// sweep (due delays fire, expired locks are resolved), the cancellation
// driver and, given Options.Retention, the retention passes that expire
// finished execution trees (in a goroutine of their own, every
// RetentionInterval, so that a long purge never delays a sweep). The dev
// server runs it in-process; the `timers` Lambda runs it for most of each
// EventBridge-scheduled invocation.
//
// Between passes the loop waits for the next Interval, or — given the
// store's TimerWatch as Options.Deadlines, as `stela dev` does — until the
// earliest delay or lock expiry it knows of, so in-process timers fire at
// their deadline while Interval paces a safety sweep.
//
// Every write a pass makes is version-guarded or unique per delay (see
// store.Sweep and store.DriveCancellations), so any number of loops may run
// at once, late or duplicated, against one store: each due delay fires once
// and each expired lock is resolved once.
package timers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
)

// Defaults of Options.
const (
	// DefaultInterval is the pause between two passes.
	DefaultInterval = time.Second
	// DefaultBatch is how many cancelling executions one pass drives.
	DefaultBatch = 100
)

// Log attribute keys.
const (
	logKeyPass          = "pass"
	logKeyExpiredLocks  = "expired_locks"
	logKeyExpiredDelays = "expired_delays"
	logKeySkipped       = "skipped"
	logKeyCancelled     = "cancelled"
	logKeyErr           = core.LogKeyErr
	logKeyPhase         = "phase"
	logKeyPasses        = "passes"
	logKeyFailedPasses  = "failed_passes"
)

// Options configure Run. The zero value runs a pass every second, sweeping
// at "now", until ctx is done.
type Options struct {
	// Interval is the longest time from the start of one pass to the start
	// of the next (a pass that takes longer is followed immediately by the
	// next); with Deadlines a pass also starts at each deadline. Default
	// DefaultInterval.
	Interval time.Duration
	// Leeway is subtracted from the clock's now for the sweep, so that a
	// worker finishing right at its lock deadline wins the race
	// (docs/spec/semantics.md §5.2). Default 0.
	Leeway time.Duration
	// Batch bounds the cancelling executions driven per pass. Default DefaultBatch.
	Batch int
	// Budget, when positive, stops the loop once this much wall time has
	// passed since Run started: no pass starts after it (except the first),
	// and the pass under way finishes (with ctx, not with the budget). Zero:
	// run until ctx is done.
	Budget time.Duration
	// Logger receives one line per pass that did something (Info), one per
	// failed pass (Error) and a summary when the loop stops (Debug).
	// Default slog.Default().
	Logger *slog.Logger
	// Deadlines, when set, makes the loop wake at the earliest deadline it
	// reports (plus Leeway) instead of waiting for the next Interval, which
	// then only paces a safety sweep: the in-process server sets it to its
	// store's TimerWatch so delays fire at their deadline. Nil: every
	// Interval (the Lambda's level-triggered sweep).
	Deadlines Deadlines
	// Alarms arms the loop's wake-ups. Default: real timers measured against
	// clock. Tests with a simulated clock inject their own.
	Alarms Alarms
	// Observer, when set, is told about every pass (package obs: metrics,
	// including the sweep lag). Passes interrupted by ctx are not reported.
	Observer Observer
	// Retention, when set, runs retention passes (expiring finished
	// execution trees, store.Service.ApplyRetention) beside the loop: one
	// at the start, then every RetentionInterval, never delaying a sweep
	// (retention.go).
	Retention Retainer
	// RetentionInterval is the pause between two retention passes.
	// Default DefaultRetentionInterval.
	RetentionInterval time.Duration
}

// Observer receives one report per pass of Run.
type Observer interface {
	Pass(ctx context.Context, p Pass)
}

// Pass describes one pass of Run.
type Pass struct {
	// Start is the clock's time when the pass started.
	Start core.Timestamp
	// Duration is the wall time the pass took.
	Duration time.Duration
	// Sweep is what the sweep did (Sweep.OldestDue: the oldest timer it
	// found due).
	Sweep store.SweepResult
	// Cancelled is the number of cancelling executions finished.
	Cancelled int
	// Err is the pass's first failure (nil: it succeeded).
	Err error
	// Lag is how late the sweep was when the pass started: Start minus the
	// deadline of the oldest timer it found due (zero when none was).
	// LagKnown is false when the sweep failed before reading the timers.
	Lag      time.Duration
	LagKnown bool
}

// Deadlines reports the deadlines of known timers (store.TimerWatch).
type Deadlines interface {
	// Next returns the earliest deadline strictly after `after`, the time
	// up to which a sweep already ran.
	Next(after core.Timestamp) (core.Timestamp, bool)
	// Changed receives when an earlier deadline than Next last returned was
	// recorded.
	Changed() <-chan struct{}
}

// Alarms arms wake-ups at points in time.
type Alarms interface {
	// At returns a channel that receives once the clock reads at or after
	// t, and a function that releases the alarm.
	At(t core.Timestamp) (<-chan struct{}, func())
}

// clockAlarms are real timers set for t minus the clock's now.
type clockAlarms struct{ clock core.Clock }

func (a clockAlarms) At(t core.Timestamp) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	timer := time.AfterFunc(t.Sub(a.clock.Now().Time), func() { ch <- struct{}{} })
	return ch, func() { timer.Stop() }
}

// Stats counts what Run did over its lifetime.
type Stats struct {
	// Passes is the number of passes run (failed ones included).
	Passes int `json:"passes"`
	// FailedPasses is the number of passes in which the sweep or the
	// cancellation driver returned an error.
	FailedPasses int `json:"failed_passes"`
	// ExpiredLocks is the number of expired locks this loop resolved.
	ExpiredLocks int `json:"expired_locks"`
	// ExpiredDelays is the number of delays this loop fired.
	ExpiredDelays int `json:"expired_delays"`
	// Skipped counts timers another sweeper or a late worker resolved first.
	Skipped int `json:"skipped"`
	// Cancelled is the number of cancelling executions this loop finished.
	Cancelled int `json:"cancelled"`
	// RetentionPasses counts retention passes (failed ones included),
	// FailedRetentionPasses those that returned an error, ExpiredTrees the
	// execution trees they expired.
	RetentionPasses       int `json:"retention_passes"`
	FailedRetentionPasses int `json:"failed_retention_passes"`
	ExpiredTrees          int `json:"expired_trees"`
}

// Run runs passes until ctx is done or opts.Budget is spent. The first pass
// starts at once and always runs unless ctx is already done, however small
// the budget. A pass calls store.Sweep at clock.Now()-opts.Leeway, then
// store.DriveCancellations at clock.Now(). A failing pass is logged and the
// loop goes on; Run returns an error only for invalid options, and otherwise
// nil with the accumulated Stats (check Stats.FailedPasses).
func Run(ctx context.Context, db core.DbConnection, clock core.Clock, opts Options) (Stats, error) {
	var st Stats
	if opts.Interval < 0 || opts.Leeway < 0 || opts.Batch < 0 || opts.Budget < 0 || opts.RetentionInterval < 0 {
		return st, errors.New("timers: negative interval, leeway, batch, budget or retention interval")
	}
	if db == nil || clock == nil {
		return st, errors.New("timers: nil store or clock")
	}
	if opts.Interval == 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Batch == 0 {
		opts.Batch = DefaultBatch
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.WithGroup("timers")

	alarms := opts.Alarms
	if alarms == nil {
		alarms = clockAlarms{clock}
	}
	var budget <-chan time.Time
	if opts.Budget > 0 {
		t := time.NewTimer(opts.Budget)
		defer t.Stop()
		budget = t.C
	}
	ret := startRetention(ctx, clock, alarms, opts, log) // retention.go
	for ctx.Err() == nil {
		st.Passes++
		start := clock.Now()
		wallStart := time.Now()
		p := pass(ctx, db, clock, opts)
		st.add(p)
		if opts.Observer != nil && (p.err == nil || ctx.Err() == nil) {
			opts.Observer.Pass(ctx, p.report(start, time.Since(wallStart)))
		}
		switch {
		case p.err != nil && ctx.Err() != nil:
			// Interrupted by shutdown: not a failure of the store.
		case p.err != nil:
			st.FailedPasses++
			log.ErrorContext(ctx, "timers pass failed", slog.Int(logKeyPass, st.Passes),
				slog.String(logKeyPhase, p.phase), slog.String(logKeyErr, p.err.Error()))
		case p.sweep.ExpiredLocks+p.sweep.ExpiredDelays+p.sweep.Skipped+p.cancelled > 0:
			log.InfoContext(ctx, "timers pass", slog.Int(logKeyPass, st.Passes),
				slog.Int(logKeyExpiredLocks, p.sweep.ExpiredLocks), slog.Int(logKeyExpiredDelays, p.sweep.ExpiredDelays),
				slog.Int(logKeySkipped, p.sweep.Skipped), slog.Int(logKeyCancelled, p.cancelled))
		}
		if !wait(ctx, budget, alarms, opts, start.Add(opts.Interval), p.sweptAt) {
			break
		}
	}
	ret.stop(&st)
	return st.done(ctx, log), nil
}

// wait blocks until the next pass is due: the safety sweep at `safety`, or
// the earliest known deadline after `swept` plus the leeway, re-evaluated
// whenever an earlier deadline is recorded. It returns false when the budget
// is spent (ctx being done is checked by the caller).
func wait(ctx context.Context, budget <-chan time.Time, alarms Alarms, opts Options, safety, swept core.Timestamp) bool {
	for {
		wake := safety
		var changed <-chan struct{}
		if opts.Deadlines != nil {
			changed = opts.Deadlines.Changed()
			if d, ok := opts.Deadlines.Next(swept); ok && d.Add(opts.Leeway).Before(wake) {
				wake = d.Add(opts.Leeway)
			}
		}
		alarm, release := alarms.At(wake)
		select {
		case <-ctx.Done():
			release()
			return true
		case <-budget:
			release()
			return false
		case <-changed:
			release()
		case <-alarm:
			release()
			select { // a spent budget wins over a due pass
			case <-budget:
				return false
			default:
				return true
			}
		}
	}
}

// passResult is what one pass did; err is the first failure, in phase.
type passResult struct {
	sweep store.SweepResult
	// sweptAt is the time the sweep ran at: every timer due then was handled.
	sweptAt   core.Timestamp
	cancelled int
	phase     string
	err       error
	// swept is true when the sweep read the due timers (sweep.OldestDue is
	// then meaningful).
	swept bool
}

// report is the Observer's view of p, which started at start.
func (p passResult) report(start core.Timestamp, d time.Duration) Pass {
	out := Pass{Start: start, Duration: d, Sweep: p.sweep, Cancelled: p.cancelled, Err: p.err, LagKnown: p.swept}
	if p.swept && !p.sweep.OldestDue.IsZero() {
		out.Lag = max(start.Sub(p.sweep.OldestDue.Time), 0)
	}
	return out
}

// pass runs one sweep and one cancellation-driver pass. The driver runs even
// when the sweep failed, so one broken timer cannot starve cancellations.
func pass(ctx context.Context, db core.DbConnection, clock core.Clock, opts Options) passResult {
	var p passResult
	p.sweptAt = clock.Now().Add(-opts.Leeway)
	sweep, err := store.Sweep(ctx, db, p.sweptAt)
	p.sweep = sweep
	// A sweep that fails after reading the timers still knows the oldest.
	p.swept = err == nil || !sweep.OldestDue.IsZero()
	if err != nil {
		p.phase, p.err = "sweep", fmt.Errorf("timers: sweep: %w", err)
	}
	n, err := store.DriveCancellations(ctx, db, clock.Now(), opts.Batch)
	p.cancelled = n
	if err != nil && p.err == nil {
		p.phase, p.err = "cancellations", fmt.Errorf("timers: drive cancellations: %w", err)
	}
	return p
}

func (s *Stats) add(p passResult) {
	s.ExpiredLocks += p.sweep.ExpiredLocks
	s.ExpiredDelays += p.sweep.ExpiredDelays
	s.Skipped += p.sweep.Skipped
	s.Cancelled += p.cancelled
}

func (s *Stats) done(ctx context.Context, log *slog.Logger) Stats {
	log.DebugContext(ctx, "timers stopped", slog.Int(logKeyPasses, s.Passes), slog.Int(logKeyFailedPasses, s.FailedPasses),
		slog.Int(logKeyExpiredLocks, s.ExpiredLocks), slog.Int(logKeyExpiredDelays, s.ExpiredDelays),
		slog.Int(logKeySkipped, s.Skipped), slog.Int(logKeyCancelled, s.Cancelled),
		slog.Int(logKeyRetentionPasses, s.RetentionPasses), slog.Int(logKeyExpiredTrees, s.ExpiredTrees))
	return *s
}
