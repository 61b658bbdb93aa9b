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

// Service implements core.DbExternalApi, core.ResponseAppender and
// core.WorkerConn on a Backend. It is safe for concurrent use. Its methods
// stand by lifecycle: lock.go (locks, and the waits for pending work),
// append.go (appends, responses, creation, cancellation, logs), reads.go
// (reads, and the waits for responses and results), deployments.go,
// retention.go, sweep.go; this file holds the transactions they share.
type Service struct {
	b     Backend
	caps  capabilities
	casc  casCapabilities
	clock core.Clock
	poll  time.Duration
	log   *slog.Logger
	hub   *hub
	cas   core.Cas
	grace time.Duration
	obs   Observer
	ret   retention
	lease leaseYield // lock.go
}

var (
	_ core.DbExternalApi          = (*Service)(nil)
	_ core.ChildWriteChecker      = (*Service)(nil)
	_ core.ResponseCursorReporter = (*Service)(nil)
	_ core.ResponseAppender       = (*Service)(nil)
	_ core.WorkerConn             = (*Service)(nil) // worker.New(svc, …): workers without HTTP
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
	return &Service{b: b, caps: capabilitiesOf(b), casc: casCapabilitiesOf(opts.Cas), clock: opts.Clock, poll: opts.PollInterval, log: opts.Logger.WithGroup("store"), hub: newHub(),
		cas: opts.Cas, grace: gcGrace(opts.GCGrace), obs: opts.Observer, ret: retention{r: opts.Retention}}
}

// Close closes the backend and wakes every waiter.
func (s *Service) Close() error {
	s.hub.close()
	return s.b.Close()
}

// txn wraps one run of an Update fn: it caches heads so the service never
// re-reads what it is about to write, and collects notifications to emit after
// a successful commit.
type txn struct {
	tx      Tx
	caps    txCapabilities
	heads   map[core.ExecutionId]*core.ExecutionState
	created map[core.ExecutionId]bool
	dirty   []core.ExecutionId
	notes   []note
	// timers records delays written and answered, for TimerWatch.
	timers []timerNote
	// finished counts the executions this transaction finished (Observer).
	finished [NumOutcomes]int
	// cursor is the cursor of the response respondIn recorded last; 0 when
	// it deferred it (the inbox numbers it later).
	cursor core.ResponseCursor
	// creates holds the executions createHead deferred (deferCreates, a
	// HeadsCreator) until flushCreates writes them together.
	creates      []NewHead
	deferCreates bool
}

// createHead creates st with events now, or defers it to flushCreates
// while deferCreates is set. Either way t.heads and t.created know it at
// once, so that the fn's reads of it never reach the backend.
func (t *txn) createHead(st core.ExecutionState, events []core.ExecutionEvent) error {
	if t.deferCreates {
		t.creates = append(t.creates, NewHead{State: st, Events: events})
		return nil
	}
	return t.tx.CreateHead(st, events)
}

// flushCreates writes the deferred creates (one CreateHeads) and stops
// deferring.
func (t *txn) flushCreates() error {
	t.deferCreates = false
	if len(t.creates) == 0 {
		return nil
	}
	hc, ok := t.tx.(HeadsCreator)
	if !ok {
		return fmt.Errorf("store: %d creates deferred by a backend without CreateHeads", len(t.creates))
	}
	err := hc.CreateHeads(t.creates)
	t.creates = nil
	return err
}

func newTxn(tx Tx) *txn {
	return &txn{tx: tx, caps: txCapabilitiesOf(tx), heads: map[core.ExecutionId]*core.ExecutionState{}, created: map[core.ExecutionId]bool{}}
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
