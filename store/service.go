package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/stela-dev/stela/core"
)

// Options configure a Service.
type Options struct {
	// Clock provides the server wall clock (upgrade timestamps). Default: system clock.
	Clock core.Clock
	// PollInterval bounds how long waits rely on in-process notifications
	// before re-reading the backend; it makes waits correct across processes
	// (several Lambdas, several dev servers). Default 200 ms.
	PollInterval time.Duration
	// Logger receives best-effort failures. Default: slog.Default().
	Logger *slog.Logger
	// Cas holds the blobs deployment files and source mappings refer to
	// (file sizes, missing_digests, upsert_source_mapping's check,
	// gc_orphan_files, which needs an OrphanCollector). Nil behaves as an
	// empty, read-only CAS.
	Cas core.Cas
	// GCGrace is how long after its last write a blob is safe from
	// gc_orphan_files; zero means DefaultGCGrace (one hour), a negative
	// value none (Obelisk's behaviour).
	GCGrace time.Duration
	// Observer, when set, is told about every transaction and lock call
	// (metrics, spans: package obs). Nil: nothing is measured.
	Observer Observer
	// Retention is how long a finished execution tree is kept
	// (ApplyRetention, retention.go). The zero value keeps every tree
	// forever; `stela dev` and the functions default to
	// core.DefaultRetentionPeriod.
	Retention core.Retention
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns the current UTC time.
func (SystemClock) Now() core.Timestamp { return core.TS(time.Now()) }

// Service implements core.DbExternalApi and core.ResponseAppender on a Backend.
// It is safe for concurrent use.
type Service struct {
	b     Backend
	clock core.Clock
	poll  time.Duration
	log   *slog.Logger
	hub   *hub
	cas   core.Cas
	grace time.Duration
	obs   Observer
	ret   retention
}

var (
	_ core.DbExternalApi     = (*Service)(nil)
	_ core.ChildWriteChecker = (*Service)(nil)
	_ core.ResponseAppender  = (*Service)(nil)
)

// New returns a Service on b.
func New(b Backend, opts Options) *Service {
	if opts.Clock == nil {
		opts.Clock = SystemClock{}
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = 200 * time.Millisecond
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Service{b: b, clock: opts.Clock, poll: opts.PollInterval, log: opts.Logger.WithGroup("store"), hub: newHub(),
		cas: opts.Cas, grace: gcGrace(opts.GCGrace), obs: opts.Observer, ret: retention{r: opts.Retention}}
}

// Close closes the backend and wakes every waiter.
func (s *Service) Close() error {
	s.hub.close()
	return s.b.Close()
}

// --- transaction helpers ----------------------------------------------------------

// txn wraps one run of an Update fn: it caches heads so the service never
// re-reads what it is about to write, and collects notifications to emit after
// a successful commit.
type txn struct {
	tx      Tx
	heads   map[core.ExecutionId]*core.ExecutionState
	created map[core.ExecutionId]bool
	dirty   []core.ExecutionId
	notes   []note
	// timers records delays written and answered, for TimerWatch.
	timers []timerNote
	// finished counts the executions this transaction finished (Observer).
	finished [NumOutcomes]int
}

func newTxn(tx Tx) *txn {
	return &txn{tx: tx, heads: map[core.ExecutionId]*core.ExecutionState{}, created: map[core.ExecutionId]bool{}}
}

func (t *txn) head(id core.ExecutionId) (*core.ExecutionState, error) {
	if h, ok := t.heads[id]; ok {
		return h, nil
	}
	h, err := t.tx.Head(id)
	if err != nil {
		return nil, err
	}
	t.heads[id] = &h
	return &h, nil
}

func (t *txn) setHead(st core.ExecutionState) {
	id := st.ExecutionID
	if _, ok := t.heads[id]; !ok || !t.isDirty(id) {
		t.dirty = append(t.dirty, id)
	}
	t.heads[id] = &st
}

func (t *txn) isDirty(id core.ExecutionId) bool {
	for _, d := range t.dirty {
		if d == id {
			return true
		}
	}
	return false
}

// flush writes every modified head.
func (t *txn) flush() error {
	for _, id := range t.dirty {
		if t.created[id] {
			continue
		}
		if err := t.tx.PutHead(*t.heads[id]); err != nil {
			return err
		}
	}
	return nil
}

// update runs fn in a backend transaction with head caching and
// notifications, reported to the Observer as OpOther.
func (s *Service) update(ctx context.Context, fn func(t *txn) error) error {
	return s.updateAs(ctx, OpOther, fn)
}

// updateAs is update for a transaction the Observer sees as op. When fn
// meets more deferred responses than one transaction applies
// (unsettledError), they are applied in transactions of their own first and
// fn runs again.
func (s *Service) updateAs(ctx context.Context, op Op, fn func(t *txn) error) error {
	for attempt := 0; ; attempt++ {
		err := s.update1(ctx, op, fn)
		var ue *unsettledError
		if !errors.As(err, &ue) || attempt >= 8 {
			return err
		}
		if err := s.settle(ctx, ue.id); err != nil {
			return err
		}
	}
}

func (s *Service) update1(ctx context.Context, op Op, fn func(t *txn) error) error {
	var start time.Time
	if s.obs != nil {
		start = time.Now()
	}
	var notes []note
	var timers []timerNote
	var c Commit
	err := s.b.Update(ctx, func(tx Tx) error {
		t := newTxn(tx)
		if err := fn(t); err != nil {
			return err
		}
		if err := t.flush(); err != nil {
			return err
		}
		notes, timers = t.notes, t.timers
		c.Created, c.Finished = len(t.created), t.finished
		if s.hub.watchingTimers() {
			for id := range t.heads {
				if t.created[id] || t.isDirty(id) {
					timers = append(timers, lockTimerNote(t.heads[id]))
				}
			}
		}
		return nil
	})
	if s.obs != nil {
		if err != nil {
			c = Commit{}
		}
		c.Op, c.Start, c.Duration, c.Err = op, start, time.Since(start), err
		s.obs.Commit(ctx, c)
	}
	if err != nil {
		return err
	}
	s.hub.emit(notes)
	s.hub.emitTimers(timers)
	return nil
}

// lockCall reports a lock request to the Observer.
func (s *Service) lockCall(ctx context.Context, requested, granted int) {
	if s.obs != nil {
		s.obs.LockCall(ctx, requested, granted)
	}
}

func (s *Service) view(ctx context.Context, fn func(tx ReadTx) error) error {
	return s.b.View(ctx, fn)
}

// lookup adapts ReadTx to core.JoinSetLookup, remembering the first error.
type lookup struct {
	tx  ReadTx
	id  core.ExecutionId
	err error
}

func (l *lookup) JoinNextCount(js core.JoinSetId) uint32 {
	n, err := l.tx.JoinNextCount(l.id, js)
	if err != nil && l.err == nil {
		l.err = err
	}
	return n
}

func (l *lookup) NthResponse(js core.JoinSetId, n uint32) (core.Timestamp, bool) {
	r, ok, err := l.tx.NthResponse(l.id, js, n)
	if err != nil && l.err == nil {
		l.err = err
	}
	if !ok {
		return core.Timestamp{}, false
	}
	return r.Event.CreatedAt, true
}

// appendIn appends batch to id at version inside t; currentTime drives pending notifications.
func (s *Service) appendIn(t *txn, id core.ExecutionId, version core.Version, batch []core.AppendRequest, currentTime core.Timestamp, opts core.AppendOptions) (core.AppendResult, error) {
	if err := core.ValidateAppendBatch(batch); err != nil {
		return core.AppendResult{}, err // checked before the execution is looked up (docs/spec/semantics.md §8.2)
	}
	if hasJoinNext(batch) {
		if err := s.drainIn(t, id, currentTime); err != nil {
			return core.AppendResult{}, err
		}
	}
	h, err := t.head(id)
	if err != nil {
		return core.AppendResult{}, err
	}
	lk := &lookup{tx: t.tx, id: id}
	res, err := core.AppendBatch(*h, version, batch, lk, opts)
	if lk.err != nil {
		return core.AppendResult{}, lk.err
	}
	if err != nil {
		return core.AppendResult{}, err
	}
	if rk := res.State.ResultKind; rk != nil && !h.IsFinished() && res.State.IsFinished() {
		t.finished[OutcomeOf(*rk)]++
	}
	if err := t.tx.AppendEvents(id, res.Events); err != nil {
		return core.AppendResult{}, err
	}
	if res.State.IsFinished() && !h.IsFinished() {
		if err := s.recordFinished(t, &res.State); err != nil { // retention.go
			return core.AppendResult{}, err
		}
	}
	for _, d := range res.Delays {
		if err := t.tx.PutDelay(d); err != nil {
			return core.AppendResult{}, err
		}
		if !d.Paused {
			t.timers = append(t.timers, timerNote{key: delayTimerKey(d.DelayID), at: d.ExpiresAt})
		}
	}
	t.setHead(res.State)
	t.notes = append(t.notes, stateNotes(&res.State, currentTime)...)
	return res, nil
}

// respondIn records a response for id inside t (docs/spec/semantics.md §3.12).
// A child's response carried by the Finished event t appends may be deferred
// by the backend (Inbox): t then leaves id's head alone, and the response is
// applied by the next drainIn or settle of id.
func (s *Service) respondIn(t *txn, id core.ExecutionId, createdAt core.Timestamp, ev core.JoinSetResponseEvent, currentTime core.Timestamp) error {
	if ib, ok := t.tx.(Inbox); ok && t.heads[id] == nil {
		if _, child := ev.Event.(*core.ChildExecutionFinished); child {
			deferred, err := ib.DeferResponse(id, core.JoinSetResponseEventOuter{CreatedAt: createdAt, Event: ev})
			if err != nil {
				return err
			}
			if deferred {
				t.notes = append(t.notes, note{kind: noteResponse, key: responseKey(id)})
				return nil
			}
		}
	}
	// Responses deferred earlier get their cursors first: a response that
	// completed before this one started is never numbered after it.
	if err := s.drainIn(t, id, currentTime); err != nil {
		return err
	}
	return s.applyResponseIn(t, id, createdAt, ev, currentTime)
}

// applyResponseIn applies a response to id's head inside t: the cursor and
// the unblock rule of core.ApplyResponse.
func (s *Service) applyResponseIn(t *txn, id core.ExecutionId, createdAt core.Timestamp, ev core.JoinSetResponseEvent, currentTime core.Timestamp) error {
	h, err := t.head(id)
	if err != nil {
		return err
	}
	st, cursor, unblocked := core.ApplyResponse(*h, ev.JoinSetID, createdAt)
	resp := core.ResponseWithCursor{
		Event:  core.JoinSetResponseEventOuter{CreatedAt: createdAt, Event: ev},
		Cursor: cursor,
	}
	if err := t.tx.AddResponse(id, resp); err != nil {
		return err
	}
	if d, ok := ev.Event.(*core.DelayFinished); ok {
		if err := t.tx.DeleteDelay(id, ev.JoinSetID, d.DelayID); err != nil {
			return err
		}
		t.timers = append(t.timers, timerNote{key: delayTimerKey(d.DelayID), clear: true})
	}
	t.setHead(st)
	t.notes = append(t.notes, note{kind: noteResponse, key: responseKey(id)})
	if unblocked {
		t.notes = append(t.notes, stateNotes(&st, currentTime)...)
	}
	return nil
}

// maxDrain bounds the deferred responses one transaction applies (each adds
// a few items to the backend's commit).
const maxDrain = 32

// unsettledError reports more deferred responses to id than one transaction
// applies; update applies them first (settle) and runs fn again.
type unsettledError struct{ id core.ExecutionId }

func (e *unsettledError) Error() string {
	return "store: too many deferred responses to " + e.id.String() + " for one transaction"
}

// drainIn applies id's deferred responses (Inbox) inside t, in the order
// the backend returns them: what a read of id's responses or a JoinNext must
// see first.
func (s *Service) drainIn(t *txn, id core.ExecutionId, currentTime core.Timestamp) error {
	ib, ok := t.tx.(Inbox)
	if !ok {
		return nil
	}
	rs, err := ib.DeferredResponses(id)
	if err != nil || len(rs) == 0 {
		return err
	}
	if len(rs) > maxDrain {
		return &unsettledError{id}
	}
	for _, r := range rs {
		if err := s.applyResponseIn(t, id, r.CreatedAt, r.Event, currentTime); err != nil {
			return err
		}
	}
	return nil
}

// settle applies id's deferred responses (Inbox) in transactions of their
// own, maxDrain at a time, so that a read of its responses that follows sees
// them. A no-op on backends without Inbox.
func (s *Service) settle(ctx context.Context, id core.ExecutionId) error {
	ib, ok := s.b.(InboxBackend)
	if !ok {
		return nil
	}
	for {
		pending, err := ib.HasDeferredResponses(ctx, id)
		if err != nil || !pending {
			return err
		}
		applied := 0
		err = s.update1(ctx, OpOther, func(t *txn) error {
			inbox, ok := t.tx.(Inbox)
			if !ok {
				return nil
			}
			rs, err := inbox.DeferredResponses(id)
			if err != nil {
				return err
			}
			rs = rs[:min(len(rs), maxDrain)]
			applied = len(rs)
			now := s.clock.Now()
			for _, r := range rs {
				if err := s.applyResponseIn(t, id, r.CreatedAt, r.Event, now); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil || applied < maxDrain {
			return err
		}
	}
}

// SettleResponses applies the deferred responses to id (see Inbox); the
// sweep calls it for the parent of a derived execution whose lock expired,
// so that a parent whose elected responder died is unblocked by the
// responses already there. A no-op on backends without Inbox.
func (s *Service) SettleResponses(ctx context.Context, id core.ExecutionId) error {
	return s.settle(ctx, id)
}

// hasJoinNext reports whether batch appends a JoinNext (whose lookup must
// see every response of its join set).
func hasJoinNext(batch []core.AppendRequest) bool {
	for _, r := range batch {
		if h, ok := r.Event.(*core.HistoryEventRequest); ok {
			if _, ok := h.Event.(*core.JoinNext); ok {
				return true
			}
		}
	}
	return false
}

// --- DbExecutor ---------------------------------------------------------------------

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

// BatchLocker is an optional Backend capability: backends whose transactions
// are cheap and never abort on contention (SQLite's single writer) lock a
// whole batch in one Update; the others (DynamoDB) lock each candidate in its
// own conditional transaction so one contended item cannot abort the batch.
type BatchLocker interface {
	LockBatchInOneUpdate() bool
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
	if bl, ok := s.b.(BatchLocker); ok && bl.LockBatchInOneUpdate() {
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
	for _, c := range cands {
		if len(out) >= limit {
			break
		}
		var le core.LockedExecution
		locked := false
		err := s.updateAs(ctx, OpLock, func(t *txn) error {
			var err error
			le, locked, err = s.lockCandidateIn(t, req, c, auto)
			return err
		})
		if err != nil {
			s.lockCall(ctx, limit, len(out))
			return out, fmt.Errorf("store: lock %s: %w", c.id, err)
		}
		if locked {
			out = append(out, le)
		}
	}
	s.lockCall(ctx, limit, len(out))
	return out, nil
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
		Parent: c.Parent, IntermittentEventCount: res.State.IntermittentEventCount,
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

// ReadHistory returns, in one consistent read, the history events of id with
// version >= fromVersion, its responses with cursor > afterCursor and its next
// version: what a worker that locked with core.LockRequest.SkipHistory and
// holds the history below fromVersion lacks. core.ErrNotFound for an unknown
// execution.
func (s *Service) ReadHistory(ctx context.Context, id core.ExecutionId, fromVersion core.Version, afterCursor core.ResponseCursor) (core.HistoryDelta, error) {
	out := core.HistoryDelta{Events: []core.HistoryEventWithVersion{}, Responses: []core.ResponseWithCursor{}}
	if err := s.settle(ctx, id); err != nil {
		return out, err
	}
	err := s.view(ctx, func(tx ReadTx) error {
		h, err := tx.Head(id)
		if err != nil {
			return err
		}
		out.NextVersion = h.NextVersion()
		if fromVersion <= h.Version {
			events, err := tx.Events(id, fromVersion, h.Version+1)
			if err != nil {
				return err
			}
			if hist := core.EventHistoryOf(events); hist != nil {
				out.Events = hist
			}
		}
		if afterCursor < h.MaxCursor {
			if out.Responses, err = tx.Responses(id, afterCursor+1, h.MaxCursor+1); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
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

// Append implements core.DbExecutor.
func (s *Service) Append(ctx context.Context, id core.ExecutionId, version core.Version, req core.AppendRequest) (core.Version, error) {
	return s.AppendBatch(ctx, req.CreatedAt, []core.AppendRequest{req}, id, version)
}

// AppendBatch implements core.DbConnection.
func (s *Service) AppendBatch(ctx context.Context, currentTime core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, version core.Version) (core.Version, error) {
	var next core.Version
	err := s.updateAs(ctx, OpAppend, func(t *txn) error {
		res, err := s.appendIn(t, id, version, batch, currentTime, core.AppendOptions{})
		next = res.NextVersion
		return err
	})
	return next, err
}

// AppendBatchRespondToParent implements core.DbExecutor.
func (s *Service) AppendBatchRespondToParent(ctx context.Context, events core.AppendEventsToExecution, resp core.AppendResponseToExecution, currentTime core.Timestamp) (core.Version, error) {
	if err := core.ValidateRespondToParent(events, resp); err != nil {
		return 0, err
	}
	return s.respondToParent(ctx, events, resp, currentTime, false)
}

// AppendBatchRespondToParentChecked implements core.ChildWriteChecker: the
// request is checked on its own first, then, in the same Update as the
// write, against the child's creation (core.CheckRespondToParent: one
// read, whatever the number of siblings).
func (s *Service) AppendBatchRespondToParentChecked(ctx context.Context, events core.AppendEventsToExecution, resp core.AppendResponseToExecution, currentTime core.Timestamp) (core.Version, error) {
	if err := core.CheckRespondToParentRequest(events, resp); err != nil {
		return 0, err
	}
	return s.respondToParent(ctx, events, resp, currentTime, true)
}

func (s *Service) respondToParent(ctx context.Context, events core.AppendEventsToExecution, resp core.AppendResponseToExecution, currentTime core.Timestamp, check bool) (core.Version, error) {
	var next core.Version
	err := s.updateAs(ctx, OpAppend, func(t *txn) error {
		res, err := s.appendIn(t, events.ExecutionID, events.Version, events.Batch, currentTime, core.AppendOptions{})
		if err != nil {
			return err
		}
		next = res.NextVersion
		if check {
			ev, err := t.tx.Event(events.ExecutionID, 0)
			if err != nil {
				return err
			}
			created, _ := ev.Event.(*core.Created)
			if err := core.CheckRespondToParent(events, resp, created); err != nil {
				return err
			}
		}
		return s.respondIn(t, resp.ParentExecutionID, resp.CreatedAt, core.JoinSetResponseEvent{
			JoinSetID: resp.JoinSetID,
			Event: &core.ChildExecutionFinished{ChildExecutionID: resp.ChildExecutionID,
				FinishedVersion: resp.FinishedVersion, Result: resp.Result},
		}, currentTime)
	})
	if err != nil {
		s.settleAfterFailure(ctx, resp.ParentExecutionID)
	}
	return next, err
}

// settleAfterFailure settles parent after a failed response to it: the
// failed transaction may have been the one elected to unblock it (Inbox),
// and the siblings' deferred responses must not wait for its retry. Best
// effort (the sweep does it again when the child's lock expires).
func (s *Service) settleAfterFailure(ctx context.Context, parent core.ExecutionId) {
	if _, ok := s.b.(InboxBackend); !ok {
		return
	}
	if err := s.settle(context.WithoutCancel(ctx), parent); err != nil && !errors.Is(err, core.ErrNotFound) {
		s.log.Warn("settling deferred responses failed", core.LogKeyExecutionID, parent.String(), core.LogKeyErr, err)
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

// CancelWorkflow implements core.DbExecutor.
func (s *Service) CancelWorkflow(ctx context.Context, id core.ExecutionId, cancelledAt core.Timestamp) (core.CancelOutcome, error) {
	var out core.CancelOutcome
	err := s.updateAs(ctx, OpCancel, func(t *txn) error {
		h, err := t.head(id)
		if err != nil {
			return err
		}
		o, req, err := core.PlanCancelWorkflow(h, cancelledAt)
		if err != nil {
			return err
		}
		out = o
		if req == nil {
			return nil
		}
		_, err = s.appendIn(t, id, h.NextVersion(), []core.AppendRequest{*req}, cancelledAt, core.AppendOptions{})
		return err
	})
	return out, err
}

// AppendActivityCancellationRequested implements core.DbExecutor.
func (s *Service) AppendActivityCancellationRequested(ctx context.Context, id core.ExecutionId, cancelledAt core.Timestamp) (core.CancelOutcome, error) {
	var out core.CancelOutcome
	err := s.updateAs(ctx, OpCancel, func(t *txn) error {
		h, err := t.head(id)
		if err != nil {
			return err
		}
		o, req := core.PlanCancelActivity(h, cancelledAt)
		out = o
		if req == nil {
			return nil
		}
		_, err = s.appendIn(t, id, h.NextVersion(), []core.AppendRequest{*req}, cancelledAt, core.AppendOptions{})
		return err
	})
	return out, err
}

// GetLastExecutionEvent implements core.DbExecutor.
func (s *Service) GetLastExecutionEvent(ctx context.Context, id core.ExecutionId) (core.ExecutionEvent, error) {
	var ev core.ExecutionEvent
	err := s.view(ctx, func(tx ReadTx) error {
		h, err := tx.Head(id)
		if err != nil {
			return err
		}
		ev, err = tx.Event(id, h.Version)
		return err
	})
	return ev, err
}

// --- DbConnection -------------------------------------------------------------------

// Get implements core.DbConnection.
func (s *Service) Get(ctx context.Context, id core.ExecutionId) (*core.ExecutionLog, error) {
	var log *core.ExecutionLog
	if err := s.settle(ctx, id); err != nil {
		return nil, err
	}
	err := s.view(ctx, func(tx ReadTx) error {
		h, err := tx.Head(id)
		if err != nil {
			return err
		}
		events, err := tx.Events(id, 0, h.Version+1)
		if err != nil {
			return err
		}
		responses, err := tx.Responses(id, 1, h.MaxCursor+1)
		if err != nil {
			return err
		}
		log = &core.ExecutionLog{
			ExecutionID: id, Events: events, Responses: responses, NextVersion: h.NextVersion(),
			PendingState: h.PendingState(), ComponentDigest: h.ComponentDigest,
			ComponentType: h.ComponentType, DeploymentID: h.DeploymentID,
		}
		return nil
	})
	return log, err
}

// GetCancelling implements core.DbConnection.
func (s *Service) GetCancelling(ctx context.Context, batchSize uint32) ([]core.ExecutionId, error) {
	return s.b.Cancelling(ctx, int(batchSize))
}

// AppendDelayResponse implements core.DbConnection.
func (s *Service) AppendDelayResponse(ctx context.Context, createdAt core.Timestamp, id core.ExecutionId, js core.JoinSetId, delay core.DelayId, success bool) (core.AppendDelayResponseOutcome, error) {
	err := s.updateAs(ctx, OpRespond, func(t *txn) error {
		return s.respondIn(t, id, createdAt, core.JoinSetResponseEvent{JoinSetID: js,
			Event: &core.DelayFinished{DelayID: delay, Result: core.UnitResult(success)}}, createdAt)
	})
	if err == nil {
		return core.DelayResponseSuccess, nil
	}
	if !errors.Is(err, core.ErrConflict) {
		return 0, err
	}
	var ok, found bool
	if verr := s.view(ctx, func(tx ReadTx) error {
		var err error
		ok, found, err = tx.DelayOutcome(delay)
		return err
	}); verr != nil {
		return 0, verr
	}
	if !found {
		return 0, err
	}
	if ok {
		return core.DelayResponseAlreadyFinished, nil
	}
	return core.DelayResponseAlreadyCancelled, nil
}

// AppendBatchWithDelayResponse implements core.DbConnection.
func (s *Service) AppendBatchWithDelayResponse(ctx context.Context, currentTime core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, version core.Version, js core.JoinSetId, delay core.DelayId) (core.Version, error) {
	var next core.Version
	err := s.updateAs(ctx, OpAppend, func(t *txn) error {
		res, err := s.appendIn(t, id, version, batch, currentTime, core.AppendOptions{})
		if err != nil {
			return err
		}
		next = res.NextVersion
		return s.respondIn(t, id, currentTime, core.JoinSetResponseEvent{JoinSetID: js,
			Event: &core.DelayFinished{DelayID: delay, Result: true}}, currentTime)
	})
	return next, err
}

// AppendBatchCreateNewExecution implements core.DbConnection.
func (s *Service) AppendBatchCreateNewExecution(ctx context.Context, currentTime core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, version core.Version, children []core.CreateRequest, backtraces []core.BacktraceInfo) (core.Version, error) {
	return s.createChildren(ctx, currentTime, batch, id, version, children, backtraces, false)
}

// AppendBatchCreateNewExecutionChecked implements core.ChildWriteChecker:
// the children are checked against the parent's stored log and the batch
// (core.CheckCreateChildren) in the same Update as the write.
func (s *Service) AppendBatchCreateNewExecutionChecked(ctx context.Context, currentTime core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, version core.Version, children []core.CreateRequest, backtraces []core.BacktraceInfo) (core.Version, error) {
	return s.createChildren(ctx, currentTime, batch, id, version, children, backtraces, true)
}

func (s *Service) createChildren(ctx context.Context, currentTime core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, version core.Version, children []core.CreateRequest, backtraces []core.BacktraceInfo, check bool) (core.Version, error) {
	var next core.Version
	err := s.updateAs(ctx, OpAppend, func(t *txn) error {
		res, err := s.appendIn(t, id, version, batch, currentTime, core.AppendOptions{})
		if err != nil {
			return err
		}
		next = res.NextVersion
		if check && len(children) > 0 {
			// Most batches carry their own JoinSetCreate and requests, so
			// the log is read only when the batch alone does not justify
			// its children: events 1 … version-1, the log before the batch
			// (some backends read their own writes). The one thing the fast
			// path cannot see — a batch that creates again a join set its
			// log already closed — only affects the worker's own execution,
			// whose version it holds; the children stay derived from it.
			if core.CheckCreateChildren(id, nil, batch, children) != nil {
				history, err := t.tx.Events(id, 1, version)
				if err != nil {
					return err
				}
				if err := core.CheckCreateChildren(id, history, batch, children); err != nil {
					return err
				}
			}
		}
		for _, c := range children {
			if err := s.createIn(t, c); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if len(backtraces) > 0 {
		if _, berr := s.b.AppendBacktraces(ctx, backtraces); berr != nil {
			s.log.Warn("append backtraces failed", core.LogKeyExecutionID, id.String(), core.LogKeyErr, berr)
		}
	}
	return next, nil
}

func (s *Service) createIn(t *txn, req core.CreateRequest) error {
	st, events, _, err := core.NewExecution(req)
	if err != nil {
		return err
	}
	if err := t.tx.CreateHead(st, events); err != nil {
		return err
	}
	t.created[st.ExecutionID] = true
	t.heads[st.ExecutionID] = &st
	if !req.Paused {
		t.notes = append(t.notes, stateNotes(&st, req.CreatedAt)...)
	}
	return nil
}

// GetExecutionEvent implements core.DbConnection.
func (s *Service) GetExecutionEvent(ctx context.Context, id core.ExecutionId, version core.Version) (core.ExecutionEvent, error) {
	var ev core.ExecutionEvent
	err := s.view(ctx, func(tx ReadTx) error {
		var err error
		ev, err = tx.Event(id, version)
		return err
	})
	return ev, err
}

// UpsertStubResponse implements core.DbConnection.
func (s *Service) UpsertStubResponse(ctx context.Context, id core.ExecutionIdDerived, version core.Version, req core.AppendRequest, resp core.AppendResponseToExecution, currentTime core.Timestamp) error {
	err := s.updateAs(ctx, OpAppend, func(t *txn) error {
		if _, err := s.appendIn(t, id.ExecutionId, version, []core.AppendRequest{req}, currentTime, core.AppendOptions{}); err != nil {
			return err
		}
		return s.respondIn(t, resp.ParentExecutionID, resp.CreatedAt, core.JoinSetResponseEvent{
			JoinSetID: resp.JoinSetID,
			Event: &core.ChildExecutionFinished{ChildExecutionID: resp.ChildExecutionID,
				FinishedVersion: resp.FinishedVersion, Result: resp.Result},
		}, currentTime)
	})
	if err != nil {
		s.settleAfterFailure(ctx, resp.ParentExecutionID)
	}
	if !errors.Is(err, core.ErrAlreadyFinished) {
		return err
	}
	ev, rerr := s.GetExecutionEvent(ctx, id.ExecutionId, version)
	if rerr == nil {
		if f, ok := ev.Event.(*core.Finished); ok && f.Retval.Equal(resp.Result) {
			return nil
		}
	}
	return core.ErrStubConflict
}

// GetCreateRequest implements core.DbConnection.
func (s *Service) GetCreateRequest(ctx context.Context, id core.ExecutionId) (core.CreateRequest, error) {
	ev, err := s.GetExecutionEvent(ctx, id, 0)
	if err != nil {
		return core.CreateRequest{}, err
	}
	c, ok := ev.Event.(*core.Created)
	if !ok {
		return core.CreateRequest{}, fmt.Errorf("store: execution log of %s must start with creation", id)
	}
	return core.CreateRequestFrom(id, ev.CreatedAt, c), nil
}

// GetPendingState implements core.DbConnection.
func (s *Service) GetPendingState(ctx context.Context, id core.ExecutionId) (core.ExecutionWithState, error) {
	var out core.ExecutionWithState
	err := s.view(ctx, func(tx ReadTx) error {
		h, err := tx.Head(id)
		if err != nil {
			return err
		}
		out = h.WithState()
		return nil
	})
	return out, err
}

// GetExpiredTimers implements core.DbConnection: due unpaused delays, then
// expired locks of active executions.
func (s *Service) GetExpiredTimers(ctx context.Context, at core.Timestamp) ([]core.ExpiredTimer, error) {
	delays, err := s.b.ExpiredDelays(ctx, at)
	if err != nil {
		return nil, fmt.Errorf("store: expired delays: %w", err)
	}
	locks, err := s.b.ExpiredLocks(ctx, at)
	if err != nil {
		return nil, fmt.Errorf("store: expired locks: %w", err)
	}
	out := make([]core.ExpiredTimer, 0, len(delays)+len(locks))
	for i := range delays {
		out = append(out, core.ExpiredTimer{Delay: &delays[i]})
	}
	for i := range locks {
		if l, ok := core.ExpiredLockOf(&locks[i], at); ok {
			out = append(out, core.ExpiredTimer{Lock: &l})
		}
	}
	return out, nil
}

// Create implements core.DbConnection.
func (s *Service) Create(ctx context.Context, req core.CreateRequest) (core.Version, error) {
	if err := req.Validate(); err != nil {
		return 0, err
	}
	var next core.Version = 1
	if req.Paused {
		next = 2
	}
	err := s.updateAs(ctx, OpCreate, func(t *txn) error { return s.createIn(t, req) })
	if err != nil {
		return 0, err
	}
	return next, nil
}

// SubscribeToNextResponses implements core.DbConnection. Responses already
// stored are returned even when ctx is already done (docs/spec/semantics.md
// §4.3.13): only the waiting races the deadline.
func (s *Service) SubscribeToNextResponses(ctx context.Context, id core.ExecutionId, last core.ResponseCursor) ([]core.ResponseWithCursor, error) {
	w := s.hub.register([]string{responseKey(id)})
	defer s.hub.unregister(w)
	ticker := time.NewTicker(s.poll)
	defer ticker.Stop()
	for first := true; ; first = false {
		var out []core.ResponseWithCursor
		if err := s.settleReady(ctx, first, id); err != nil {
			if ctx.Err() != nil {
				return nil, timeoutErr(ctx)
			}
			return nil, err
		}
		err := s.readReady(ctx, first, func(tx ReadTx) error {
			h, err := tx.Head(id)
			if errors.Is(err, core.ErrNotFound) {
				return nil
			} else if err != nil {
				return err
			}
			if h.MaxCursor <= last {
				return nil
			}
			out, err = tx.Responses(id, last+1, h.MaxCursor+1)
			return err
		})
		if err != nil {
			if ctx.Err() != nil {
				return nil, timeoutErr(ctx)
			}
			return nil, err
		}
		if len(out) > 0 {
			return out, nil
		}
		select {
		case <-ctx.Done():
			return nil, timeoutErr(ctx)
		case <-w.ch:
		case <-ticker.C:
		}
	}
}

// WaitForFinishedResult implements core.DbConnection. A finished result is
// returned even when ctx is already done (docs/spec/semantics.md §4.3.14:
// get_finished_result is this wait with an immediately-ready timeout); only
// the waiting races the deadline.
func (s *Service) WaitForFinishedResult(ctx context.Context, id core.ExecutionId) (core.ReturnValue, error) {
	w := s.hub.register([]string{finishedKey(id)})
	defer s.hub.unregister(w)
	ticker := time.NewTicker(s.poll)
	defer ticker.Stop()
	for first := true; ; first = false {
		var rv *core.ReturnValue
		err := s.readReady(ctx, first, func(tx ReadTx) error {
			h, err := tx.Head(id)
			if err != nil {
				return err
			}
			if !h.IsFinished() {
				return nil
			}
			ev, err := tx.Event(id, h.Version)
			if err != nil {
				return err
			}
			f, ok := ev.Event.(*core.Finished)
			if !ok {
				return fmt.Errorf("store: event %d of %s is not Finished", h.Version, id)
			}
			rv = &f.Retval
			return nil
		})
		if err != nil {
			if ctx.Err() != nil && !errors.Is(err, core.ErrNotFound) {
				return core.ReturnValue{}, timeoutErr(ctx)
			}
			return core.ReturnValue{}, err
		}
		if rv != nil {
			return *rv, nil
		}
		select {
		case <-ctx.Done():
			return core.ReturnValue{}, timeoutErr(ctx)
		case <-w.ch:
		case <-ticker.C:
		}
	}
}

// AppendBacktrace implements core.DbConnection (best effort: failures are logged).
func (s *Service) AppendBacktrace(ctx context.Context, bt core.BacktraceInfo) error {
	if _, err := s.b.AppendBacktraces(ctx, []core.BacktraceInfo{bt}); err != nil {
		s.log.Warn("append backtrace failed", core.LogKeyExecutionID, bt.ExecutionID.String(), core.LogKeyErr, err)
	}
	return nil
}

// AppendBacktraceBatch implements core.DbConnection.
func (s *Service) AppendBacktraceBatch(ctx context.Context, batch []core.BacktraceInfo) (int, error) {
	return s.b.AppendBacktraces(ctx, batch)
}

// AppendLog implements core.DbConnection.
func (s *Service) AppendLog(ctx context.Context, row core.LogInfoAppendRow) error {
	return s.b.AppendLogs(ctx, []core.LogInfoAppendRow{row})
}

// AppendLogBatch implements core.DbConnection.
func (s *Service) AppendLogBatch(ctx context.Context, rows []core.LogInfoAppendRow) error {
	if len(rows) == 0 {
		return nil
	}
	return s.b.AppendLogs(ctx, rows)
}

// AppendResponse implements core.ResponseAppender (the test back door).
func (s *Service) AppendResponse(ctx context.Context, createdAt core.Timestamp, id core.ExecutionId, resp core.JoinSetResponseEvent) error {
	return s.updateAs(ctx, OpRespond, func(t *txn) error { return s.respondIn(t, id, createdAt, resp, createdAt) })
}

// firstReadBound bounds the first read of a wait whose context is already
// done: that read ignores the wait's deadline, not the need to finish.
const firstReadBound = 10 * time.Second

// readReady runs one read of a wait loop. The first read runs whatever the
// state of ctx (a deadline bounds the waiting, never the check for data
// that is already there), detached from ctx's cancellation and bounded by
// firstReadBound; later reads use ctx.
func (s *Service) readReady(ctx context.Context, first bool, fn func(tx ReadTx) error) error {
	if !first {
		return s.view(ctx, fn)
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), firstReadBound)
	defer cancel()
	return s.view(rctx, fn)
}

// settleReady is settle for one read of a wait loop, bounded like readReady.
func (s *Service) settleReady(ctx context.Context, first bool, id core.ExecutionId) error {
	if !first {
		return s.settle(ctx, id)
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), firstReadBound)
	defer cancel()
	return s.settle(rctx, id)
}

// timeoutErr reports a wait that ended because ctx was done.
func timeoutErr(ctx context.Context) error {
	return fmt.Errorf("%w: %w", core.ErrTimeout, ctx.Err())
}
