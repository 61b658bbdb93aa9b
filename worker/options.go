package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stela-dev/stela/core"
)

// DefaultCancelCheck is Options.CancelCheck's default: a running
// activity's ctx is cancelled within about half a second of its
// execution's cancellation.
const DefaultCancelCheck = 500 * time.Millisecond

// ErrStartToCloseTimeout is the cause (context.Cause) of an activity's ctx
// cancellation when its run exceeded its start-to-close timeout
// (StartToClose).
var ErrStartToCloseTimeout = errors.New("worker: start-to-close timeout")

// StartToClose bounds each run of an activity to d (Temporal's
// start-to-close timeout). The run's lock expires d after it was taken —
// the worker never extends the lease past that — and at that moment the
// activity's ctx is cancelled with cause ErrStartToCloseTimeout and the
// worker writes nothing: the store's timers find the expired lock and
// record the timeout as docs/spec says (TemporarilyTimedOut with the retry
// policy's backoff, or, once retries are exhausted, Finished with a
// timeout execution failure), and the execution is retried like a failed
// one. The worker measures d on Options.Clock (workertest's simulated
// clock). Workflows ignore it.
func StartToClose(d time.Duration) FuncOption {
	return func(f *function) {
		if f.kind == core.ComponentTypeWorkflow || d <= 0 {
			return
		}
		f.startToClose = d
	}
}

// lease returns how long the group's locks last: lockExpiry, or the
// start-to-close timeout when it is shorter.
func (g *lockGroup) lease(lockExpiry time.Duration) time.Duration {
	if g.startToClose > 0 && g.startToClose < lockExpiry {
		return g.startToClose
	}
	return lockExpiry
}

// startToCloseDeadline is when a run of f locked as le must end: d after
// the lock was taken (its expiry minus the lease it was locked with); zero
// when f has no start-to-close timeout.
//
// A per-call timeout recorded in the child's metadata (CallStartToClose)
// replaces the registration's: the deadline is then that long after the
// lock was taken, whatever lease the lock was taken with.
func (w *Worker) startToCloseDeadline(le core.LockedExecution, f *function) core.Timestamp {
	lease := w.opts.LockExpiry
	if f.startToClose > 0 {
		lease = min(f.startToClose, w.opts.LockExpiry)
	}
	d := f.startToClose
	if c, ok := startToCloseOverride(le.Metadata); ok {
		d = c
	}
	if d <= 0 {
		return core.Timestamp{}
	}
	return le.LockedEvent.LockExpiresAt.Add(d - lease) // lock time + d
}

// cancelAtDeadline cancels a run with ErrStartToCloseTimeout at deadline
// (none when zero), on the worker's clock: a TimerClock's timers, else the
// wall clock's. The returned function stops the timer.
func (w *Worker) cancelAtDeadline(deadline core.Timestamp, cancel context.CancelCauseFunc) (stop func()) {
	if deadline.IsZero() {
		return func() {}
	}
	d := deadline.Sub(w.clock.Now().Time)
	fire := func() { cancel(ErrStartToCloseTimeout) }
	if tc, ok := w.clock.(TimerClock); ok {
		s := tc.AfterFunc(d, fire)
		return func() { s() }
	}
	t := time.AfterFunc(d, fire)
	return func() { t.Stop() }
}

// watchCancellation checks every Options.CancelCheck whether the
// execution's cancellation was requested and then cancels the run with
// ErrCancelled (the lease extension would only notice it when due). The
// returned function stops the watch.
func (w *Worker) watchCancellation(id core.ExecutionId, cancel context.CancelCauseFunc) (stop func()) {
	if w.opts.CancelCheck < 0 {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(w.opts.CancelCheck)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			ctx, stop := w.ioContext()
			st, err := w.conn.GetPendingState(ctx, id)
			stop()
			if err == nil && st.PendingState.Lifecycle == core.LifecycleCancelling {
				cancel(ErrCancelled)
				return
			}
		}
	}()
	return func() { close(done); <-finished }
}

// Cancellable registers a workflow as cancellable. The store's rule
// (docs/spec) is the name: only a workflow whose function name ends in
// "-cancellable" can be cancelled (CancelWorkflow, `stela execution
// cancel`); any other is refused. Cancellable appends that suffix to the
// registered ffqn — Workflow(w, "demo:shop/workflow.order", fn,
// Cancellable()) serves "demo:shop/workflow.order-cancellable", which is
// the name callers and submitters must use (a handle made with
// WorkflowFunc.Cancellable does). Registration panics when the name
// already ends in "-cancellable" (the flag would double it: register that
// name without the flag, or drop the suffix), when the suffixed name is
// too long, and for an activity (activities are always cancellable).
func Cancellable() FuncOption {
	return func(f *function) { f.cancellable = true }
}

// cancellableName returns f with the store's cancellable suffix appended
// (Cancellable), or why it cannot be.
func cancellableName(f core.FunctionFqn, kind core.ComponentType) (core.FunctionFqn, error) {
	if kind != core.ComponentTypeWorkflow {
		return core.FunctionFqn{}, errors.New("Cancellable applies to workflows only (activities are always cancellable)")
	}
	if f.IsCancellable() {
		return core.FunctionFqn{}, fmt.Errorf("Cancellable with a name already ending in %q: register it without the flag, or drop the suffix", core.SuffixFnCancellable)
	}
	return core.ParseFunctionFqn(f.String() + core.SuffixFnCancellable)
}
