package worker

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/stela-dev/stela/core"
)

// Causes of a run's context cancellation (context.Cause).
var (
	// ErrCancelled is the cause when the execution's cancellation was requested.
	ErrCancelled = errors.New("worker: execution cancelled")
	// ErrLeaseLost is the cause when another writer took the execution over
	// (the lease expired and was resolved, or the execution was paused).
	ErrLeaseLost = errors.New("worker: lease lost")
	// ErrShutdown is the cause when the worker stops and the grace period ended.
	ErrShutdown = errors.New("worker: shutting down")
)

// lease tracks the lock of one running execution: the version to append
// at next and the lock's expiry, and extends it (a Locked event by the same
// executor and run) while the function runs. mu serializes every write of
// the run with the extensions.
type lease struct {
	w      *Worker
	id     core.ExecutionId
	mu     sync.Mutex
	locked core.Locked
	next   core.Version
	// deadline, if set, is the run's start-to-close deadline: no
	// extension goes past it, so the lock expires then and the store's
	// timers record the timeout.
	deadline core.Timestamp
}

func newLease(w *Worker, le core.LockedExecution) *lease {
	return &lease{w: w, id: le.ExecutionID, locked: le.LockedEvent, next: le.NextVersion}
}

// due reports whether less than half of the lease is left.
func (l *lease) due(now core.Timestamp) bool {
	return !now.Before(l.locked.LockExpiresAt.Add(-l.w.opts.LockExpiry / 2))
}

// extension returns the Locked event that extends the lease from now.
func (l *lease) extension(now core.Timestamp) core.AppendRequest {
	ev := l.locked
	ev.LockExpiresAt = now.Add(l.w.opts.LockExpiry)
	if !l.deadline.IsZero() && ev.LockExpiresAt.After(l.deadline) {
		ev.LockExpiresAt = l.deadline
	}
	return core.AppendRequest{CreatedAt: now, Event: &ev}
}

// keep calls extend whenever the lease is due, until stop is called. A
// failing extension (fenced, or refused by the store) is reported to
// onLost (once) and ends the keeper.
func (w *Worker) keepLease(extend func() error, onLost func(error)) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(max(w.opts.LockExpiry/8, time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if err := extend(); err != nil {
					onLost(err)
					return
				}
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// extendActivity extends an activity's lease if due.
func (l *lease) extendActivity() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.w.clock.Now()
	if !l.due(now) {
		return nil
	}
	req := l.extension(now)
	if !req.Event.(*core.Locked).LockExpiresAt.After(l.locked.LockExpiresAt) {
		return nil // capped at the start-to-close deadline already
	}
	ctx, cancel := l.w.ioContext()
	defer cancel()
	next, err := l.w.conn.Append(ctx, l.id, l.next, req)
	if err != nil {
		if isFenced(err) || isRefused(err) {
			return err
		}
		l.w.log.Debug("lease extension failed, will retry", "execution_id", l.id.String(), "err", err)
		return nil
	}
	l.next = next
	l.locked = *req.Event.(*core.Locked)
	return nil
}

// lostCause classifies a failed extension: a cancellation request fences
// the lock like any other writer, so the state tells which it was.
func (w *Worker) lostCause(id core.ExecutionId) error {
	ctx, cancel := w.ioContext()
	defer cancel()
	st, err := w.conn.GetPendingState(ctx, id)
	if err == nil && st.PendingState.Lifecycle == core.LifecycleCancelling {
		return ErrCancelled
	}
	return ErrLeaseLost
}

// expired reports whether the lease can no longer be relied on.
func (l *lease) expired(now core.Timestamp) bool { return !now.Before(l.locked.LockExpiresAt) }

// retryWrite retries a transient write failure with backoff while the lease
// lasts; permanent errors (fencing, refusals, an unknown function) are
// returned at once.
func (w *Worker) retryWrite(l *lease, write func(ctx context.Context) error) error {
	backoff := 20 * time.Millisecond
	for {
		ctx, cancel := w.ioContext()
		err := write(ctx)
		cancel()
		if err == nil || isFenced(err) || core.IsNonRetriable(err) || errors.Is(err, ErrUnknownFunction) {
			return err
		}
		if l != nil && l.expired(w.clock.Now()) {
			return err
		}
		w.log.Debug("write failed, retrying", "err", err)
		select {
		case <-time.After(backoff):
		case <-w.hardStop.Done():
			return err
		}
		backoff = min(2*backoff, time.Second)
		if l == nil && backoff >= time.Second {
			return err
		}
	}
}

// runContext returns a run's context: cancelled with ErrShutdown
// after the grace period, or with the cause given to the returned cancel.
func (w *Worker) runContext() (context.Context, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := context.AfterFunc(w.hardStop, func() { cancel(ErrShutdown) })
	return ctx, func(cause error) { stop(); cancel(cause) }
}
