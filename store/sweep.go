package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stela-dev/stela/core"
)

// SweepResult counts what one timer sweep did.
type SweepResult struct {
	// ExpiredLocks is the number of expired locks resolved (unlocked, retried or finished).
	ExpiredLocks int `json:"expired_locks"`
	// ExpiredDelays is the number of delays that fired.
	ExpiredDelays int `json:"expired_delays"`
	// Skipped counts timers another sweeper or a late worker resolved first.
	Skipped int `json:"skipped"`
	// OldestDue is the deadline of the oldest timer the pass found due
	// (zero when none was): how late the sweep was is measured from it
	// (see TimerLag). Not part of the JSON answer.
	OldestDue core.Timestamp `json:"-"`
}

// sweepParallelism bounds how many timers one sweep resolves at once.
const sweepParallelism = 64

// Sweep runs one pass of the expired-timers watcher (docs/spec/semantics.md §5.2) at `at`,
// which callers set to now minus a small leeway. It is level-triggered and
// idempotent: every write is version-guarded or unique per delay, so
// overlapping, duplicate or late sweeps only produce conflicts that are
// counted as Skipped. Unexpected errors abort the pass.
//
// Timers that touch disjoint executions commute (a timer writes to its
// execution and, for a finished child, to its parent), so the pass resolves
// such groups concurrently — up to sweepParallelism at a time — and the timers
// within a group one after the other, in the order GetExpiredTimers returned
// them. Concurrent writes let a backend commit many timers together (SQLite
// then pays one fsync for a whole group commit instead of one per timer).
func Sweep(ctx context.Context, db core.DbConnection, at core.Timestamp) (SweepResult, error) {
	var res SweepResult
	timers, err := db.GetExpiredTimers(ctx, at)
	if err != nil {
		return res, err
	}
	res.OldestDue, _ = OldestDue(timers)
	groups := sweepGroups(timers)
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu         sync.Mutex
		firstErr   error
		wg         sync.WaitGroup
		incomplete atomic.Bool // a timer was left out because ctx ended
	)
	sem := make(chan struct{}, sweepParallelism)
	for _, g := range groups {
		sem <- struct{}{}
		if pctx.Err() != nil {
			<-sem
			incomplete.Store(true)
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			for _, t := range g {
				if pctx.Err() != nil {
					incomplete.Store(true)
					return
				}
				r, err := sweepOne(pctx, db, at, t)
				mu.Lock()
				res.ExpiredLocks += r.ExpiredLocks
				res.ExpiredDelays += r.ExpiredDelays
				res.Skipped += r.Skipped
				if err != nil && firstErr == nil {
					firstErr = err
					cancel()
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return res, firstErr
	}
	if incomplete.Load() {
		return res, ctx.Err()
	}
	return res, nil
}

// OldestDue returns the earliest deadline among timers (a delay's
// ExpiresAt, a lock's LockExpiresAt); ok is false when timers is empty.
func OldestDue(timers []core.ExpiredTimer) (oldest core.Timestamp, ok bool) {
	for _, t := range timers {
		var at core.Timestamp
		switch {
		case t.Delay != nil:
			at = t.Delay.ExpiresAt
		case t.Lock != nil:
			at = t.Lock.LockExpiresAt
		default:
			continue
		}
		if !ok || at.Before(oldest) {
			oldest, ok = at, true
		}
	}
	return oldest, ok
}

// TimerLag measures the sweep lag at now: now minus the deadline of the
// oldest timer due at now that no sweep has handled yet (a delay not fired,
// an expired lock not resolved), zero when there is none. It reads the
// same index the sweep reads (GetExpiredTimers) and writes nothing (but a
// backend's spent lock leases, see Queries.ExpiredLocks), so it
// reports a stopped or falling-behind sweep however the sweep is run.
func TimerLag(ctx context.Context, db core.DbConnection, now core.Timestamp) (time.Duration, error) {
	timers, err := db.GetExpiredTimers(ctx, now)
	if err != nil {
		return 0, err
	}
	oldest, ok := OldestDue(timers)
	if !ok {
		return 0, nil
	}
	return max(now.Sub(oldest.Time), 0), nil
}

// sweepGroups partitions timers into groups touching disjoint executions
// (union-find over each timer's execution and, for a lock of a derived
// execution, its parent), each in the original order.
func sweepGroups(timers []core.ExpiredTimer) [][]core.ExpiredTimer {
	parent := map[core.ExecutionId]core.ExecutionId{}
	var find func(core.ExecutionId) core.ExecutionId
	find = func(id core.ExecutionId) core.ExecutionId {
		p, ok := parent[id]
		if !ok || p == id {
			parent[id] = id
			return id
		}
		r := find(p)
		parent[id] = r
		return r
	}
	key := func(t core.ExpiredTimer) core.ExecutionId {
		if t.Delay != nil {
			return find(t.Delay.ExecutionID)
		}
		id := find(t.Lock.ExecutionID)
		if p, _, ok := t.Lock.ExecutionID.SplitToParts(); ok {
			if rp := find(p); rp != id {
				parent[id] = rp
				id = rp
			}
		}
		return id
	}
	for _, t := range timers {
		key(t)
	}
	index := map[core.ExecutionId]int{}
	var groups [][]core.ExpiredTimer
	for _, t := range timers {
		k := key(t)
		i, ok := index[k]
		if !ok {
			i = len(groups)
			index[k] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], t)
	}
	return groups
}

// sweepOne resolves one timer.
func sweepOne(ctx context.Context, db core.DbConnection, at core.Timestamp, t core.ExpiredTimer) (SweepResult, error) {
	var res SweepResult
	switch {
	case t.Delay != nil:
		d := t.Delay
		out, err := db.AppendDelayResponse(ctx, at, d.ExecutionID, d.JoinSetID, d.DelayID, true)
		switch {
		case err != nil && (errors.Is(err, core.ErrNotFound) || core.IsNonRetriable(err)):
			res.Skipped++
		case err != nil:
			return res, fmt.Errorf("sweep: delay %s: %w", d.DelayID, err)
		case out == core.DelayResponseSuccess:
			res.ExpiredDelays++
		default:
			res.Skipped++
		}
	case t.Lock != nil:
		act := core.DecideExpiredLock(*t.Lock, at)
		var err error
		if act.RespondToParent != nil {
			_, err = db.AppendBatchRespondToParent(ctx,
				core.AppendEventsToExecution{ExecutionID: t.Lock.ExecutionID, Version: act.Version, Batch: []core.AppendRequest{act.Request}},
				*act.RespondToParent, at)
		} else {
			_, err = db.Append(ctx, t.Lock.ExecutionID, act.Version, act.Request)
		}
		if parent, _, ok := t.Lock.ExecutionID.SplitToParts(); ok {
			settleParent(ctx, db, parent)
		}
		switch {
		case err == nil || errors.Is(err, core.ErrUnlockedCannotBeAppended):
			res.ExpiredLocks++
		case errors.Is(err, core.ErrNotFound) || core.IsNonRetriable(err):
			res.Skipped++ // the worker made progress or another sweep won
		default:
			return res, fmt.Errorf("sweep: lock %s: %w", t.Lock.ExecutionID, err)
		}
	}
	return res, nil
}

// responseSettler is implemented by store.Service: it applies deferred
// responses (Inbox).
type responseSettler interface {
	SettleResponses(ctx context.Context, id core.ExecutionId) error
}

// settleParent applies the deferred responses to the parent of a derived
// execution whose lock expired: if that execution's worker died holding the
// claim to unblock its parent (dynamo/doc.go, "Fan-in"), the responses its
// siblings deferred unblock the parent now rather than after its retry.
// Best effort: a failure is retried by the next sweep.
func settleParent(ctx context.Context, db core.DbConnection, parent core.ExecutionId) {
	if s, ok := db.(responseSettler); ok {
		_ = s.SettleResponses(ctx, parent)
	}
}

// DriveCancellations runs one pass of the cancellation driver (docs/spec/semantics.md §6.1)
// over up to batch cancelling executions and returns how many it finished.
// Activities are finished as cancelled unless their worker still holds an
// unexpired lock; workflows first get every open child activity and delay
// cancelled (in reverse creation order) and cancellable child workflows
// signalled, and are finished — closing JoinNexts plus Finished(cancelled) in
// one batch — once every open member has answered. Every request is
// idempotent, so overlapping drivers are safe.
func DriveCancellations(ctx context.Context, db core.DbConnection, now core.Timestamp, batch int) (int, error) {
	ids, err := db.GetCancelling(ctx, uint32(batch))
	if err != nil {
		return 0, err
	}
	finished := 0
	for _, id := range ids {
		ok, err := driveOne(ctx, db, id, now)
		if err != nil {
			if core.IsNonRetriable(err) || errors.Is(err, core.ErrNotFound) {
				continue // raced with a worker or another driver; next pass re-reads
			}
			return finished, fmt.Errorf("cancellation driver: %s: %w", id, err)
		}
		if ok {
			finished++
		}
	}
	return finished, nil
}

func driveOne(ctx context.Context, db core.DbConnection, id core.ExecutionId, now core.Timestamp) (bool, error) {
	log, err := db.Get(ctx, id)
	if err != nil {
		return false, err
	}
	ps := log.PendingState
	if ps.Lifecycle != core.LifecycleCancelling || ps.State == core.StateFinished {
		return false, nil
	}
	if log.ComponentType.IsActivity() {
		if ps.State == core.StateLocked && ps.Locked.LockExpiresAt.After(now) {
			return false, nil // the worker may still confirm the cancellation
		}
		return true, finishCancelled(ctx, db, id, log.NextVersion, nil, now)
	}
	open, err := core.ReconstructOpenJoinSets(log.EventHistory(), log.Responses)
	if err != nil {
		return false, err
	}
	type pending struct {
		m  core.JoinSetMember
		js core.JoinSetId
	}
	var unanswered []pending
	var closing []core.AppendRequest
	for i := range open {
		for _, m := range open[i].Members {
			closing = append(closing, core.AppendRequest{CreatedAt: now, Event: &core.HistoryEventRequest{Event: &core.JoinNext{
				JoinSetID: open[i].JoinSetID, RunExpiresAt: now, Closing: true}}})
			if !open[i].IsAnswered(m) {
				unanswered = append(unanswered, pending{m, open[i].JoinSetID})
			}
		}
	}
	if len(unanswered) > 0 {
		sort.Slice(unanswered, func(i, j int) bool { return unanswered[i].m.Version > unanswered[j].m.Version })
		for _, p := range unanswered {
			if err := cancelMember(ctx, db, p.m, now); err != nil {
				return false, err
			}
		}
		return false, nil // finish on a later pass, once the responses arrived
	}
	return true, finishCancelled(ctx, db, id, log.NextVersion, closing, now)
}

func cancelMember(ctx context.Context, db core.DbConnection, m core.JoinSetMember, now core.Timestamp) error {
	if m.DelayID != nil {
		_, err := core.CancelDelay(ctx, db, *m.DelayID, now)
		return err
	}
	child, err := db.GetPendingState(ctx, *m.ChildID)
	if errors.Is(err, core.ErrNotFound) {
		return nil // not created yet (or never): nothing to cancel
	} else if err != nil {
		return err
	}
	switch {
	case child.ComponentType.IsActivity():
		_, err = core.CancelActivityWithRetries(ctx, db, *m.ChildID, now)
	case child.FFQN.IsCancellable():
		_, err = core.CancelWorkflowWithRetries(ctx, db, *m.ChildID, now)
	default:
		return nil // non-cancellable child workflows are awaited
	}
	return err
}

// finishCancelled appends closing (may be empty) then Finished(cancelled),
// responding to the parent for derived executions.
func finishCancelled(ctx context.Context, db core.DbConnection, id core.ExecutionId, next core.Version, closing []core.AppendRequest, now core.Timestamp) error {
	retval := core.RetFailure(core.FailureCancelled, nil, nil)
	batch := append(closing, core.AppendRequest{CreatedAt: now, Event: &core.Finished{Retval: retval}})
	if parent, js, ok := id.SplitToParts(); ok {
		_, err := db.AppendBatchRespondToParent(ctx,
			core.AppendEventsToExecution{ExecutionID: id, Version: next, Batch: batch},
			core.AppendResponseToExecution{ParentExecutionID: parent, CreatedAt: now, JoinSetID: js,
				ChildExecutionID: core.ExecutionIdDerived{ExecutionId: id}, FinishedVersion: next + core.Version(len(closing)), Result: retval},
			now)
		return err
	}
	_, err := db.AppendBatch(ctx, now, batch, id, next)
	return err
}
