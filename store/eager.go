package store

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/stela-dev/stela/core"
)

// Eager dispatch (core.EagerLock): a create-children write may create some
// of its children already locked to the calling worker, in the same
// commit, with the history [Created, Locked]. The head is created in state
// Locked, so every backend derives from it what a lock leaves — no pending
// index entry, the lock-expiry entry — and the child never needs a lock
// request. Nothing here is backend-specific: the backends' CreateHead
// already takes a head with two events (a child created paused).

// createChildrenLocked is createChildrenOnce with eager locks, validated
// first. A version conflict that is the retry of a write that committed (a
// lost answer) answers what the write answered (answerAgain).
func (s *Service) createChildrenLocked(ctx context.Context, currentTime core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, version core.Version, children []core.CreateRequest, backtraces []core.BacktraceInfo, locks []core.EagerLock, check bool) (core.Version, []core.LockedExecution, error) {
	for i := range locks {
		if err := locks[i].Validate(); err != nil {
			return 0, nil, err
		}
	}
	lctx, lease, leased := s.openEagerLease(ctx, children, locks)
	next, locked, err := s.createChildrenOnce(lctx, currentTime, batch, id, version, children, backtraces, locks, check, false)
	if leased && err == nil {
		var ids []core.ExecutionId // the members it locked
		for _, le := range locked {
			if slices.Contains(lease.Members, le.ExecutionID) {
				ids = append(ids, le.ExecutionID)
			}
		}
		if cerr := s.caps.leaser.CloseLockLease(context.WithoutCancel(ctx), lease, ids); cerr != nil {
			// As after a lock call: the children are locked, an open lease
			// only lives longer (the sweep reaps it after its lag).
			s.log.WarnContext(ctx, "close lock lease", core.LogKeyErr, cerr)
		}
	}
	// A write that failed leaves its lease open: it may still land (the
	// sweep keeps the lease until its lag passed, as for a lock call).
	if err != nil && len(locks) > 0 && errors.Is(err, core.ErrVersionConflict) {
		if n, again, ok := s.answerAgain(ctx, id, version, batch, children, locks); ok {
			return n, again, nil
		}
	}
	if err != nil {
		return 0, nil, err
	}
	if len(locked) > 0 {
		s.lockCall(ctx, len(locked), len(locked))
	}
	if locked == nil {
		locked = []core.LockedExecution{}
	}
	return next, locked, nil
}

// openEagerLease opens a lock lease (LockLeaser) for the children a
// create-children write will create locked, as a lock call does for its
// chunk: the children the locks take, in the order the write takes them,
// whose lock expires when the first lock's does (the locks of different
// groups may differ by the time between their requests; a child of another
// expiry, or one the write does not lock after all, keeps its own entry:
// the backend leases only a member locked with the lease's expiry). None
// when the backend has no leases or fewer than minLeaseMembers children
// qualify. ctx then carries the lease (WithLockLease).
func (s *Service) openEagerLease(ctx context.Context, children []core.CreateRequest, locks []core.EagerLock) (context.Context, LockLease, bool) {
	if s.caps.leaser == nil || len(locks) == 0 {
		return ctx, LockLease{}, false
	}
	expiry := locks[0].Request.LockExpiresAt
	taken := make([]int, len(locks))
	var ids []core.ExecutionId
	for i := range children {
		if lk := eagerLockFor(locks, taken, &children[i]); lk != nil && lk.Request.LockExpiresAt.Equal(expiry) {
			ids = append(ids, children[i].ExecutionID)
		}
	}
	if len(ids) < minLeaseMembers {
		return ctx, LockLease{}, false
	}
	l, err := s.caps.leaser.OpenLockLease(ctx, ids, expiry)
	if err != nil {
		s.log.WarnContext(ctx, "open lock lease", core.LogKeyErr, err)
		return ctx, LockLease{}, false
	}
	return WithLockLease(ctx, l), l, true
}

// eagerLockFor returns the first of locks that takes c and has room left
// (taken counts each lock's children so far), counting c against it; nil
// when none does.
func eagerLockFor(locks []core.EagerLock, taken []int, c *core.CreateRequest) *core.EagerLock {
	for i := range locks {
		if taken[i] < int(locks[i].Request.BatchSize) && locks[i].Takes(c) {
			taken[i]++
			return &locks[i]
		}
	}
	return nil
}

// createLockedIn creates c inside t with the history [Created, Locked by
// req] and returns it as a lock answers it. A child the lock cannot take
// after all (core's lock rules, e.g. its created_at after the lock's) is
// created pending instead and reported with a zero ExecutionID.
func (s *Service) createLockedIn(t *txn, c core.CreateRequest, req *core.LockRequest) (core.LockedExecution, error) {
	st, events, _, err := core.NewExecution(c)
	if err != nil {
		return core.LockedExecution{}, err
	}
	locked := req.LockedEvent()
	res, err := core.AppendBatch(st, st.Version+1, []core.AppendRequest{{CreatedAt: req.CreatedAt, Event: locked}}, nil, core.AppendOptions{})
	if err != nil {
		if core.IsNonRetriable(err) {
			return core.LockedExecution{}, s.createIn(t, c)
		}
		return core.LockedExecution{}, err
	}
	if err := t.createHead(res.State, append(events, res.Events...)); err != nil {
		return core.LockedExecution{}, err
	}
	t.created[st.ExecutionID] = true
	t.heads[st.ExecutionID] = &res.State
	// A lock at version 1 has no history (the Created event is not a
	// history event) and no responses: EventHistory and Responses stay nil,
	// what lockIn answers for it.
	return eagerLocked(c, &res.State, *locked, res.NextVersion), nil
}

// eagerLocked is the LockedExecution of a child created locked: what
// lockIn answers for an execution locked at version 1.
func eagerLocked(c core.CreateRequest, st *core.ExecutionState, locked core.Locked, next core.Version) core.LockedExecution {
	return core.LockedExecution{
		ExecutionID: c.ExecutionID, NextVersion: next, Metadata: c.Metadata,
		ComponentDigest: st.ComponentDigest, LockedEvent: locked, FFQN: c.FFQN, Params: c.Params,
		Parent: c.Parent, IntermittentEventCount: st.IntermittentEventCount, ComponentType: c.ComponentID.ComponentType,
	}
}

// answerAgain answers the retry of an eager create-children write that
// committed before (its answer was lost): the parent's events from version
// on are the batch, so the answer is the next version the write returned
// and the children the write locked that are still locked by it (Locked at
// version 1 by the request's executor and run id, nothing appended since).
// A child whose lock expired and was taken by another run is not answered:
// its new holder runs it. ok is false when the events are not the batch
// (a real conflict).
func (s *Service) answerAgain(ctx context.Context, id core.ExecutionId, version core.Version, batch []core.AppendRequest, children []core.CreateRequest, locks []core.EagerLock) (core.Version, []core.LockedExecution, bool) {
	var out []core.LockedExecution
	ok := false
	err := s.view(ctx, func(tx ReadTx) error {
		evs, err := tx.Events(id, version, version+core.Version(len(batch)))
		if err != nil || len(evs) != len(batch) {
			return err
		}
		for i, ev := range evs {
			if ev.Version != version+core.Version(i) || !sameRequest(core.AppendRequest{CreatedAt: ev.CreatedAt, Event: ev.Event}, batch[i]) {
				return nil
			}
		}
		ok = true
		taken := make([]int, len(locks))
		for i := range children {
			c := &children[i]
			lk := eagerLockFor(locks, taken, c)
			if lk == nil {
				continue
			}
			h, err := tx.Head(c.ExecutionID)
			if errors.Is(err, core.ErrNotFound) {
				continue
			} else if err != nil {
				return err
			}
			if h.State != core.StateLocked || h.Version != 1 || h.LastLock == nil ||
				h.LastLock.ExecutorID != lk.Request.ExecutorID || h.LastLock.RunID != lk.Request.RunID {
				continue
			}
			ev, err := tx.Event(c.ExecutionID, 1)
			if err != nil {
				return err
			}
			l, isLock := ev.Event.(*core.Locked)
			if !isLock {
				continue
			}
			out = append(out, eagerLocked(*c, &h, *l, 2))
		}
		return nil
	})
	if err != nil || !ok {
		if err != nil {
			s.log.Warn("reading back an eager create-children write failed", core.LogKeyExecutionID, id.String(), core.LogKeyErr, err)
		}
		return 0, nil, false
	}
	next := version + core.Version(len(batch))
	if _, fin := batch[len(batch)-1].Event.(*core.Finished); fin {
		next--
	}
	if out == nil {
		out = []core.LockedExecution{}
	}
	return next, out, true
}

// sameRequest compares two append requests in core's JSON, the form the
// store keeps.
func sameRequest(a, b core.AppendRequest) bool {
	ja, err1 := core.MarshalJSON(a)
	jb, err2 := core.MarshalJSON(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

var _ core.EagerChildCreator = (*Service)(nil)

// CreateLocked implements core.EagerCreator: Create, with the execution
// locked by lock in the same commit when lock takes it (eager start). The
// retry of a create that committed (its answer was lost) finds the id taken
// and answers the same lock while the execution is still Locked at version
// 1 by lock's executor and run id (a run id is unique to one request, so
// that execution is this request's); otherwise the conflict stands.
func (s *Service) CreateLocked(ctx context.Context, req core.CreateRequest, lock core.EagerLock) (core.Version, []core.LockedExecution, error) {
	if err := req.Validate(); err != nil {
		return 0, nil, err
	}
	if err := lock.Validate(); err != nil {
		return 0, nil, err
	}
	if !lock.Takes(&req) {
		next, err := s.Create(ctx, req)
		return next, []core.LockedExecution{}, err
	}
	next, le, _, err := s.createLockedOne(ctx, req, &lock)
	if err != nil {
		return 0, nil, err
	}
	if le == nil {
		return next, []core.LockedExecution{}, nil
	}
	s.lockCall(ctx, 1, 1)
	return next, []core.LockedExecution{*le}, nil
}

// createLockedOne creates req, which lock takes, locked by it in a commit
// of its own (under ctx's lock lease, if any) and returns its next version
// and the execution as a lock answers it: nil when the lock could not take
// it after all (created pending), or when its retry finds it no longer
// locked by lock. answered is set when the execution was created by an
// earlier attempt (createLockedAgain), not by this commit.
func (s *Service) createLockedOne(ctx context.Context, req core.CreateRequest, lock *core.EagerLock) (next core.Version, locked *core.LockedExecution, answered bool, err error) {
	var le core.LockedExecution
	err = s.updateAs(ctx, OpCreate, func(t *txn) error {
		var err error
		le, err = s.createLockedIn(t, req, &lock.Request)
		return err
	})
	if errors.Is(err, core.ErrConflict) {
		if again, ok := s.createLockedAgain(ctx, req, lock); ok {
			return again.NextVersion, &again, true, nil
		}
	}
	if err != nil {
		return 0, nil, false, err
	}
	if le.ExecutionID.IsZero() { // the lock could not take it after all: created pending
		return 1, nil, false, nil
	}
	return le.NextVersion, &le, false, nil
}

var _ core.EagerBatchCreator = (*Service)(nil)

// createLockedManyParallelism bounds the creates of one CreateLockedMany
// in flight.
const createLockedManyParallelism = 8

// CreateLockedMany implements core.EagerBatchCreator: CreateLocked of each
// of reqs with lock, each in its own commit (not one transaction: on
// DynamoDB a transaction doubles the write units), answered on its own.
// When at least minLeaseMembers of them are taken by the lock and the
// backend has lock leases, one lease is opened before their creates and
// closed after with the ones they locked, as for the children of one
// create-children write (openEagerLease): the executions then share one
// lock-expiry index entry. A create that failed leaves the lease open (it
// may still land; the sweep reaps the lease after its lag). Fewer
// requests, or no leases: each is created as CreateLocked creates it.
func (s *Service) CreateLockedMany(ctx context.Context, reqs []core.CreateRequest, lock core.EagerLock) ([]core.CreateLockedResult, error) {
	if err := lock.Validate(); err != nil {
		return nil, err
	}
	out := make([]core.CreateLockedResult, len(reqs))
	takes := make([]bool, len(reqs))
	var ids []core.ExecutionId // the requests the lock takes, in order
	for i := range reqs {
		if err := reqs[i].Validate(); err != nil {
			out[i].Err = err
			continue
		}
		if len(ids) < int(lock.Request.BatchSize) && lock.Takes(&reqs[i]) {
			takes[i] = true
			ids = append(ids, reqs[i].ExecutionID)
		}
	}
	lctx, lease, leased := ctx, LockLease{}, false
	if s.caps.leaser != nil && len(ids) >= minLeaseMembers {
		l, err := s.caps.leaser.OpenLockLease(ctx, ids, lock.Request.LockExpiresAt)
		if err != nil {
			s.log.WarnContext(ctx, "open lock lease", core.LogKeyErr, err)
		} else {
			lctx, lease, leased = WithLockLease(ctx, l), l, true
		}
	}
	var mu sync.Mutex
	var members []core.ExecutionId // the executions this call's commits locked
	failed := false
	var wg sync.WaitGroup
	sem := make(chan struct{}, createLockedManyParallelism)
	for i := range reqs {
		if out[i].Err != nil {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			r := &out[i]
			if !takes[i] {
				r.NextVersion, r.Err = s.Create(ctx, reqs[i])
				return
			}
			next, le, answered, err := s.createLockedOne(lctx, reqs[i], &lock)
			r.NextVersion, r.Locked, r.Err = next, le, err
			mu.Lock()
			defer mu.Unlock()
			if err != nil || answered {
				failed = true // it may have landed under the lease, or an earlier one's commit did
			} else if le != nil {
				members = append(members, le.ExecutionID)
			}
		}()
	}
	wg.Wait()
	if leased && !failed {
		if err := s.caps.leaser.CloseLockLease(context.WithoutCancel(ctx), lease, members); err != nil {
			// As after a lock call: the executions are locked, an open
			// lease only lives longer (the sweep reaps it after its lag).
			s.log.WarnContext(ctx, "close lock lease", core.LogKeyErr, err)
		}
	}
	n := 0
	for i := range out {
		if out[i].Locked != nil {
			n++
		}
	}
	if n > 0 {
		s.lockCall(ctx, n, n)
	}
	return out, nil
}

// createLockedAgain is the answer to the retry of a CreateLocked that
// committed: req's execution Locked at version 1 by lock's executor and run
// id, nothing appended since.
func (s *Service) createLockedAgain(ctx context.Context, req core.CreateRequest, lock *core.EagerLock) (core.LockedExecution, bool) {
	var out core.LockedExecution
	ok := false
	err := s.view(ctx, func(tx ReadTx) error {
		h, err := tx.Head(req.ExecutionID)
		if err != nil {
			return err
		}
		if h.State != core.StateLocked || h.Version != 1 || h.LastLock == nil ||
			h.LastLock.ExecutorID != lock.Request.ExecutorID || h.LastLock.RunID != lock.Request.RunID {
			return nil
		}
		ev, err := tx.Event(req.ExecutionID, 1)
		if err != nil {
			return err
		}
		l, isLock := ev.Event.(*core.Locked)
		if !isLock {
			return nil
		}
		out, ok = eagerLocked(req, &h, *l, 2), true
		return nil
	})
	if err != nil {
		s.log.Warn("reading back an eager create failed", core.LogKeyExecutionID, req.ExecutionID.String(), core.LogKeyErr, err)
		return core.LockedExecution{}, false
	}
	return out, ok
}
