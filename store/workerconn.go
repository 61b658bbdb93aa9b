package store

import (
	"context"
	"time"

	"github.com/stela-dev/stela/core"
)

// Service is a whole core.WorkerConn in-process: workers run on it
// without HTTP (worker.New(svc, …)).
var _ core.WorkerConn = (*Service)(nil)

// lockWaitSlice bounds one wait of LockPending's long poll, so that
// executions that become due by time (a retry's backoff) are found even
// without a notification.
const lockWaitSlice = 250 * time.Millisecond

// LockPending implements core.WorkerConn: it locks with req and, when
// nothing was pending, waits for a pending notification (in slices of at
// most lockWaitSlice, up to wait) and locks again, stamped at the store's
// time. The locks run under a context of their own, bounded by the wait
// and the lease, so that one granted is returned whatever ctx does; ctx
// ends the waits at once.
func (s *Service) LockPending(ctx context.Context, req core.LockRequest, ffqns []core.FunctionFqn, wait time.Duration) ([]core.LockedExecution, error) {
	lease := req.LockExpiresAt.Sub(req.CreatedAt.Time)
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), max(wait, 0)+lease)
	defer cancel()
	start := time.Now()
	for {
		locked, err := s.LockPendingByFFQNs(lctx, req, ffqns)
		if err != nil || len(locked) > 0 || wait <= 0 {
			return locked, err
		}
		remaining := wait - time.Since(start)
		if remaining <= 0 || ctx.Err() != nil {
			return locked, nil
		}
		wctx, wcancel := context.WithTimeout(ctx, min(remaining, lockWaitSlice))
		s.WaitForPendingByFFQN(wctx, s.clock.Now(), ffqns, nil)
		wcancel()
		if ctx.Err() != nil {
			return nil, nil
		}
		now := s.clock.Now()
		req.CreatedAt, req.PendingAtOrSooner, req.LockExpiresAt = now, now, now.Add(lease)
	}
}

// Cancel implements core.WorkerConn: core.CancelExecution at the store's
// time.
func (s *Service) Cancel(ctx context.Context, id core.ExecutionId) (core.CancelOutcome, error) {
	return core.CancelExecution(ctx, s, id, s.clock.Now())
}

// CancelDelay implements core.WorkerConn: core.CancelDelay at the store's
// time.
func (s *Service) CancelDelay(ctx context.Context, delay core.DelayId) (core.DelayCancelOutcome, error) {
	return core.CancelDelay(ctx, s, delay, s.clock.Now())
}

// FunctionComponent implements core.WorkerConn from the current
// deployment's components (core.FunctionComponent).
func (s *Service) FunctionComponent(ctx context.Context, ffqn core.FunctionFqn) (core.ComponentId, core.DeploymentId, error) {
	return core.FunctionComponent(ctx, s, ffqn)
}
