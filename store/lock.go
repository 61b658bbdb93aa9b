package store

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/stela-dev/stela/core"
)

// LockPendingByFFQNs implements core.DbExecutor.
func (s *Service) LockPendingByFFQNs(ctx context.Context, req core.LockRequest, ffqns []core.FunctionFqn) ([]core.LockedExecution, error) {
	return s.lockPending(ctx, req, ffqns, false)
}

// LockPendingByFFQNsAuto implements core.DbExecutor.
func (s *Service) LockPendingByFFQNsAuto(ctx context.Context, req core.LockRequest, ffqns []core.FunctionFqn) ([]core.LockedExecution, error) {
	return s.lockPending(ctx, req, ffqns, true)
}

func (s *Service) lockPending(ctx context.Context, req core.LockRequest, ffqns []core.FunctionFqn, auto bool) ([]core.LockedExecution, error) {
	if err := req.ValidateExpiry(); err != nil {
		return []core.LockedExecution{}, err
	}
	var skip *core.ComponentDigest
	if auto {
		d := req.ComponentID.ComponentDigest
		skip = &d
	}
	var cands []candidate
	for _, ffqn := range ffqns {
		if req.BatchSize == 0 {
			break
		}
		ids, err := s.b.PendingByFFQN(ctx, ffqn, req.PendingAtOrSooner, overFetch(int(req.BatchSize)), skip)
		if err != nil {
			return []core.LockedExecution{}, fmt.Errorf("store: pending %s: %w", ffqn, err)
		}
		ffqn := ffqn
		matches := func(h *core.ExecutionState) bool {
			return h.FFQN == ffqn && (!auto || h.IncompatibleDigest == nil || *h.IncompatibleDigest != req.ComponentID.ComponentDigest)
		}
		for _, id := range ids {
			cands = append(cands, candidate{id, matches})
		}
	}
	return s.lockCandidates(ctx, req, cands, auto)
}

// LockPendingByComponentDigest implements core.DbExecutor.
func (s *Service) LockPendingByComponentDigest(ctx context.Context, req core.LockRequest) ([]core.LockedExecution, error) {
	if err := req.ValidateExpiry(); err != nil {
		return []core.LockedExecution{}, err
	}
	if req.BatchSize == 0 {
		return []core.LockedExecution{}, nil
	}
	digest := req.ComponentID.ComponentDigest
	ids, err := s.b.PendingByDigest(ctx, digest, req.PendingAtOrSooner, overFetch(int(req.BatchSize)))
	if err != nil {
		return []core.LockedExecution{}, fmt.Errorf("store: pending by digest: %w", err)
	}
	cands := make([]candidate, len(ids))
	for i, id := range ids {
		cands[i] = candidate{id, func(h *core.ExecutionState) bool { return h.ComponentDigest == digest }}
	}
	return s.lockCandidates(ctx, req, cands, false)
}

// candidate is an index hit to re-check under a transaction before locking.
type candidate struct {
	id      core.ExecutionId
	matches func(*core.ExecutionState) bool
}

// overFetch is how many index candidates a lock call reads for n free slots:
// concurrent lockers read the same oldest candidates, and a lost race is a
// skip, so reading a few more keeps batches full under contention. Selection
// order (by scheduled time) is preserved.
func overFetch(n int) int {
	if n <= 0 {
		return 0
	}
	return min(4*n, n+64)
}

// lockCandidates locks candidates in order until the batch is full; stale
// index hits and lost races are skipped, never returned.
func (s *Service) lockCandidates(ctx context.Context, req core.LockRequest, cands []candidate, auto bool) ([]core.LockedExecution, error) {
	out := []core.LockedExecution{}
	limit := int(req.BatchSize)
	if len(cands) == 0 {
		// Nothing pending: no transaction (under load most lock calls of
		// long-polling workers find nothing, and SQLite's would queue at
		// its single writer).
		s.lockCall(ctx, limit, 0)
		return out, nil
	}
	if s.caps.batchLock {
		err := s.updateAs(ctx, OpLock, func(t *txn) error {
			out = out[:0]
			for _, c := range cands {
				if len(out) >= limit {
					break
				}
				le, ok, err := s.lockCandidateIn(t, req, c, auto)
				if err != nil {
					return err
				}
				if ok {
					out = append(out, le)
				}
			}
			return nil
		})
		if err != nil {
			s.lockCall(ctx, limit, 0)
			return []core.LockedExecution{}, fmt.Errorf("store: lock batch: %w", err)
		}
		s.lockCall(ctx, limit, len(out))
		return out, nil
	}
	for start := 0; start < len(cands) && len(out) < limit; {
		// The candidates are taken in order, as many at a time as slots are
		// left, so a lease lists only candidates this call will try.
		chunk := cands[start:min(len(cands), start+limit-len(out))]
		start += len(chunk)
		lctx, lease, leased := s.openLease(ctx, req, chunk)
		var locked []core.ExecutionId
		for _, c := range chunk {
			var le core.LockedExecution
			ok := false
			err := s.updateAs(lctx, OpLock, func(t *txn) error {
				var err error
				le, ok, err = s.lockCandidateIn(t, req, c, auto)
				return err
			})
			if err != nil {
				// The lease stays open: an Update that failed may still
				// land, so the sweep keeps the lease until its lag passed.
				s.lockCall(ctx, limit, len(out))
				return out, fmt.Errorf("store: lock %s: %w", c.id, err)
			}
			if ok {
				out = append(out, le)
				locked = append(locked, c.id)
			}
		}
		if leased {
			s.lease.record(len(locked))
			if err := s.caps.leaser.CloseLockLease(context.WithoutCancel(ctx), lease, locked); err != nil {
				// Not an error of the call: its locks are taken and an open
				// lease only lives longer (the sweep reaps it after its lag).
				s.log.WarnContext(ctx, "close lock lease", core.LogKeyErr, err)
			}
		}
	}
	s.lockCall(ctx, limit, len(out))
	return out, nil
}

// minLeaseMembers is the smallest lock chunk worth a lease: a lease costs
// its item's put, close and delete and its index entry in and out (5 write
// units on DynamoDB) where each leased execution saves its own lock-expiry
// entry in and out (2).
const minLeaseMembers = 3

// openLease opens a lock lease for chunk when the backend has leases and the
// chunk is large enough; ctx then carries it (WithLockLease). A lease that
// cannot be opened is not an error: the locks index their own expiry.
func (s *Service) openLease(ctx context.Context, req core.LockRequest, chunk []candidate) (context.Context, LockLease, bool) {
	if s.caps.leaser == nil || len(chunk) < minLeaseMembers || !s.lease.worthIt() {
		return ctx, LockLease{}, false
	}
	ids := make([]core.ExecutionId, len(chunk))
	for i, c := range chunk {
		ids[i] = c.id
	}
	l, err := s.caps.leaser.OpenLockLease(ctx, ids, req.LockExpiresAt)
	if err != nil {
		s.log.WarnContext(ctx, "open lock lease", core.LogKeyErr, err)
		return ctx, LockLease{}, false
	}
	return WithLockLease(ctx, l), l, true
}

// leaseProbeEvery is how often, while leases do not pay, a lock chunk
// still takes one to find out whether they pay again.
const leaseProbeEvery = 8

// leaseYield decides whether lock chunks take leases. Under contention —
// lockers racing for the same oldest candidates — a lease locks few of its
// candidates and costs more than it saves (bench/cost -contended-locks:
// 17.0 → 18.0 WRU per activity with a lease on every chunk). After a lease
// that locked fewer than minLeaseMembers, chunks take no lease but every
// leaseProbeEvery-th, until a lease pays again.
type leaseYield struct {
	misses atomic.Int64 // leases in a row that did not pay
	probe  atomic.Int64
}

func (y *leaseYield) worthIt() bool {
	return y.misses.Load() == 0 || y.probe.Add(1)%leaseProbeEvery == 0
}

func (y *leaseYield) record(locked int) {
	if locked < minLeaseMembers {
		y.misses.Add(1)
	} else {
		y.misses.Store(0)
	}
}

type lockLeaseKey struct{}

// WithLockLease returns ctx carrying l: the lock Updates run under it may
// index their lock expiry through the lease (LockLeaser) instead of the
// locked head.
func WithLockLease(ctx context.Context, l LockLease) context.Context {
	return context.WithValue(ctx, lockLeaseKey{}, l)
}

// LockLeaseOf returns the lease ctx carries (WithLockLease), if any.
func LockLeaseOf(ctx context.Context) (LockLease, bool) {
	l, ok := ctx.Value(lockLeaseKey{}).(LockLease)
	return l, ok
}

// lockCandidateIn locks one candidate inside t if it still matches; a stale
// index hit or a lost race reports ok=false without error.
func (s *Service) lockCandidateIn(t *txn, req core.LockRequest, c candidate, auto bool) (core.LockedExecution, bool, error) {
	h, err := t.head(c.id)
	if errors.Is(err, core.ErrNotFound) {
		return core.LockedExecution{}, false, nil
	} else if err != nil {
		return core.LockedExecution{}, false, err
	}
	if !h.IsPendingActive(req.PendingAtOrSooner) || !c.matches(h) {
		return core.LockedExecution{}, false, nil
	}
	le, err := s.lockIn(t, req, c.id, h.NextVersion(), auto)
	if err != nil {
		if core.IsNonRetriable(err) {
			return core.LockedExecution{}, false, nil // e.g. not yet pending at created_at
		}
		return core.LockedExecution{}, false, err
	}
	return le, true, nil
}

// lockIn appends the Locked event and assembles the LockedExecution.
func (s *Service) lockIn(t *txn, req core.LockRequest, id core.ExecutionId, version core.Version, auto bool) (core.LockedExecution, error) {
	if err := s.drainIn(t, id, req.CreatedAt); err != nil {
		return core.LockedExecution{}, err
	}
	locked := req.LockedEvent()
	res, err := s.appendIn(t, id, version, []core.AppendRequest{{CreatedAt: req.CreatedAt, Event: locked}}, req.CreatedAt, core.AppendOptions{KeepComponent: auto})
	if err != nil {
		return core.LockedExecution{}, err
	}
	created, err := t.tx.Event(id, 0)
	if err != nil {
		return core.LockedExecution{}, fmt.Errorf("read created event: %w", err)
	}
	c, ok := created.Event.(*core.Created)
	if !ok {
		return core.LockedExecution{}, fmt.Errorf("execution log of %s must start with Created", id)
	}
	le := core.LockedExecution{
		ExecutionID: id, NextVersion: res.NextVersion, Metadata: c.Metadata,
		ComponentDigest: res.State.ComponentDigest, LockedEvent: *locked, FFQN: c.FFQN, Params: c.Params,
		Parent: c.Parent, IntermittentEventCount: res.State.IntermittentEventCount, ComponentType: c.ComponentID.ComponentType,
	}
	if req.SkipHistory {
		return le, nil
	}
	history, err := t.tx.Events(id, 1, version)
	if err != nil {
		return core.LockedExecution{}, err
	}
	h := t.heads[id]
	if le.Responses, err = t.tx.Responses(id, 1, h.MaxCursor+1); err != nil {
		return core.LockedExecution{}, err
	}
	le.EventHistory = core.EventHistoryOf(history)
	return le, nil
}

// LockOne implements core.DbExecutor.
func (s *Service) LockOne(ctx context.Context, req core.LockRequest, id core.ExecutionId, version core.Version) (core.LockedExecution, error) {
	var le core.LockedExecution
	err := s.updateAs(ctx, OpLock, func(t *txn) error {
		var err error
		le, err = s.lockIn(t, req, id, version, false)
		return err
	})
	granted := 0
	if err == nil {
		granted = 1
	}
	s.lockCall(ctx, 1, granted)
	return le, err
}

// lockCall reports a lock request to the Observer.
func (s *Service) lockCall(ctx context.Context, requested, granted int) {
	if s.obs != nil {
		s.obs.LockCall(ctx, requested, granted)
	}
}

// WaitForPendingByFFQN implements core.DbExecutor.
func (s *Service) WaitForPendingByFFQN(ctx context.Context, at core.Timestamp, ffqns []core.FunctionFqn, currentDigest *core.ComponentDigest) {
	keys := make([]string, len(ffqns))
	for i, f := range ffqns {
		keys[i] = pendingFFQNKey(f)
	}
	s.waitLoop(ctx, keys, func() (bool, error) {
		for _, f := range ffqns {
			ids, err := s.b.PendingByFFQN(ctx, f, at, 1, currentDigest)
			if err != nil || len(ids) > 0 {
				return len(ids) > 0, err
			}
		}
		return false, nil
	})
}

// WaitForPendingByComponentDigest implements core.DbExecutor.
func (s *Service) WaitForPendingByComponentDigest(ctx context.Context, at core.Timestamp, digest core.ComponentDigest) {
	s.waitLoop(ctx, []string{pendingDigestKey(digest)}, func() (bool, error) {
		ids, err := s.b.PendingByDigest(ctx, digest, at, 1)
		return len(ids) > 0, err
	})
}

// waitLoop registers for keys, then checks (docs/spec/semantics.md §4.2.7): it returns when
// check reports true, when a notification for a key arrives (the caller
// re-checks, so a notification need not be re-verified here), or when ctx is
// done. Between notifications it re-checks every poll interval, which is what
// makes waits work across processes. Check failures wait for the next poll.
func (s *Service) waitLoop(ctx context.Context, keys []string, check func() (bool, error)) {
	w := s.hub.register(keys)
	defer s.hub.unregister(w)
	ticker := time.NewTicker(s.poll)
	defer ticker.Stop()
	for {
		if ok, err := check(); ok && err == nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-w.ch:
			return
		case <-ticker.C:
		}
	}
}

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
		var locked []core.LockedExecution
		var err error
		if req.ByComponentDigest {
			locked, err = s.LockPendingByComponentDigest(lctx, req)
		} else {
			locked, err = s.LockPendingByFFQNs(lctx, req, ffqns)
		}
		if err != nil || len(locked) > 0 || wait <= 0 {
			return locked, err
		}
		remaining := wait - time.Since(start)
		if remaining <= 0 || ctx.Err() != nil {
			return locked, nil
		}
		wctx, wcancel := context.WithTimeout(ctx, min(remaining, lockWaitSlice))
		if req.ByComponentDigest {
			s.WaitForPendingByComponentDigest(wctx, s.clock.Now(), req.ComponentID.ComponentDigest)
		} else {
			s.WaitForPendingByFFQN(wctx, s.clock.Now(), ffqns, nil)
		}
		wcancel()
		if ctx.Err() != nil {
			return nil, nil
		}
		now := s.clock.Now()
		req.CreatedAt, req.PendingAtOrSooner, req.LockExpiresAt = now, now, now.Add(lease)
	}
}
