package timers

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
)

// DefaultRetentionInterval is the pause between two retention passes.
const DefaultRetentionInterval = time.Minute

// Log attribute keys of the retention passes.
const (
	logKeyRetentionPasses = "retention_passes"
	logKeyExpiredTrees    = "expired_trees"
	logKeyExpired         = "expired"
	logKeyKept            = "kept"
	logKeyRetried         = "retried"
	logKeyItems           = "items"
)

// Retainer expires finished execution trees (store.Service.ApplyRetention).
type Retainer interface {
	ApplyRetention(ctx context.Context, now core.Timestamp) (store.RetentionResult, error)
}

// RetentionObserver, when the Options.Observer implements it, receives one
// report per retention pass (package obs: metrics).
type RetentionObserver interface {
	RetentionPass(ctx context.Context, p RetentionPass)
}

// RetentionPass describes one retention pass.
type RetentionPass struct {
	// Duration is the wall time the pass took.
	Duration time.Duration
	// Result is what the pass decided and removed or marked.
	Result store.RetentionResult
	// Err is the pass's failure (nil: it succeeded).
	Err error
}

// retention runs the retention passes of one Run in their own goroutine,
// so that a long purge never delays a sweep.
type retention struct {
	cancel                  context.CancelFunc
	wg                      sync.WaitGroup
	mu                      sync.Mutex
	passes, failed, expired int
}

// startRetention starts the passes (nil when opts.Retention is nil).
func startRetention(ctx context.Context, clock core.Clock, alarms Alarms, opts Options, log *slog.Logger) *retention {
	if opts.Retention == nil {
		return nil
	}
	interval := opts.RetentionInterval
	if interval == 0 {
		interval = DefaultRetentionInterval
	}
	r := &retention{}
	observer, _ := opts.Observer.(RetentionObserver)
	rctx, cancel := context.WithCancel(ctx)
	r.cancel = cancel
	r.wg.Go(func() {
		for rctx.Err() == nil {
			start := clock.Now()
			wallStart := time.Now()
			res, err := opts.Retention.ApplyRetention(rctx, start)
			r.mu.Lock()
			r.passes++
			r.expired += res.Expired
			if err != nil && rctx.Err() == nil {
				r.failed++
			}
			r.mu.Unlock()
			if observer != nil && (err == nil || rctx.Err() == nil) {
				observer.RetentionPass(rctx, RetentionPass{Duration: time.Since(wallStart), Result: res, Err: err})
			}
			switch {
			case err != nil && rctx.Err() != nil:
				// Interrupted by shutdown: the next pass resumes.
			case err != nil:
				log.ErrorContext(rctx, "retention pass failed", slog.String(logKeyErr, err.Error()))
			case res.Trees > 0:
				log.InfoContext(rctx, "retention pass", slog.Int(logKeyExpired, res.Expired), slog.Int(logKeyKept, res.Kept),
					slog.Int(logKeyRetried, res.Retried), slog.Int(logKeyItems, res.Items))
			}
			alarm, release := alarms.At(start.Add(interval))
			select {
			case <-rctx.Done():
			case <-alarm:
			}
			release()
		}
	})
	return r
}

// stop ends the passes (one under way is interrupted; the next resumes it)
// and adds their counts to st.
func (r *retention) stop(st *Stats) {
	if r == nil {
		return
	}
	r.cancel()
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	st.RetentionPasses += r.passes
	st.FailedRetentionPasses += r.failed
	st.ExpiredTrees += r.expired
}
