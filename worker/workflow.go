package worker

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"strings"
	"time"

	"github.com/stela-dev/stela/core"
)

// Context is a workflow execution's handle on its durable history: every
// call, join, sleep, schedule, random value and time a workflow uses goes
// through it, so that a replay of the same program from the execution's
// history takes the same decisions. It is passed to the workflow function
// and is only valid on that function's goroutine.
//
// A run writes the events Obelisk's workflow worker writes for the same
// program: JoinSetCreate, JoinSetRequest (child execution or delay),
// JoinNext (JoinNextTooMany when nothing is left to await), Persist and
// Schedule, with ids derived by core.IdCounter as Obelisk derives them.
// Events that need no answer are buffered and
// written together with the next event that waits for one.
type Context struct {
	w      *Worker
	f      *function
	id     core.ExecutionId
	parent *core.Parent
	params core.Params
	// trace is the execution's trace context (its "tracing:" metadata),
	// copied into every execution the workflow creates.
	trace core.ExecutionMetadata
	// childMeta is added to the metadata of the next child created (a
	// Call's options, see callWith); nil for none.
	childMeta core.ExecutionMetadata
	l         *lease // l.mu guards every field below and every write

	// hist is the execution's history events: the persisted ones (from the
	// lock) followed by the ones this run wrote or buffered; cur of them
	// were matched by the program so far.
	hist  []core.HistoryEventWithVersion
	cur   int
	resps []core.ResponseWithCursor
	sets  map[core.JoinSetId]*joinSetState
	order []*joinSetState // join sets in creation order

	// buf holds events not written yet (at versions l.next, l.next+1, …)
	// and children the write creates.
	buf      []core.AppendRequest
	children []core.CreateRequest

	// size estimates the memory the run holds (see memSize).
	size int64

	// ids counts the join sets, children and delays of the history the
	// program went through, to derive the next ids.
	ids core.IdCounter
	rng *rand.Rand

	// active is false while the run is parked (its lock given up).
	active bool
	// awaiting is true while the run waits in memory for a response.
	awaiting bool
	// slot is the concurrency slot of the current run.
	slot *slot
	// fenced is set by the lease keeper when another writer took over.
	fenced bool
	// cancelled is set once the run learns that the execution's
	// cancellation was requested: nothing is written any more (the
	// store's cancellation driver finishes the execution), and the calls
	// that would write return an error wrapping ErrCancelled.
	cancelled bool
	// poison re-raises a signal in every later call once one was raised,
	// so a workflow that recovers it cannot carry on.
	poison any
	// replay is set for a replay check (Worker.Replay, replay.go): the run
	// ends, writing nothing, at its first new event or divergence.
	replay *replayCheck

	resumeCh chan bool // true: resume; false: unwind
	yieldCh  chan yieldKind

	// fire is the delay a run awaited in memory and went on after at its
	// expiry, as if it had fired (fire-and-continue, fire.go): the next
	// write of the run's events fires it in the same commit. Zero when
	// none is pending.
	fire core.DelayId
	// fireLost is set when that delay did not fire (fire.go): the events
	// after it are never written, and the execution was given back.
	fireLost bool

	// inbox receives the responses this worker hands the run in memory
	// while it is active (inbox.go); nil when parked, or when the
	// connection cannot tell cursors.
	inbox *localInbox
}

type yieldKind uint8

const (
	yieldParked yieldKind = iota + 1
	yieldDone
)

// joinSetState is what the run knows of one join set.
type joinSetState struct {
	id      core.JoinSetId
	created bool
	oneOff  bool
	closed  bool
	// arrived are indexes into Context.resps of this set's responses, in
	// cursor order; the first consumed of them were taken by JoinNexts.
	arrived   []int
	consumed  int
	joinNexts int // JoinNext events (closing included)
	submitted int // JoinSetRequest events
	// members are the submitted children and delays whose response was
	// not consumed yet, in creation order.
	members []member
	// goOn is set on the set of a sleep whose delay the run's next write
	// fires (Context.fire): the JoinNext takes its response as fired
	// without waiting for it.
	goOn bool
}

type member struct {
	child core.ExecutionId
	delay core.DelayId
	kind  core.ComponentType
	ffqn  core.FunctionFqn
}

func (m member) answers(r core.JoinSetResponse) bool {
	switch r := r.(type) {
	case *core.ChildExecutionFinished:
		return !m.child.IsZero() && m.child == r.ChildExecutionID.ExecutionId
	case *core.DelayFinished:
		return !m.delay.IsZero() && m.delay == r.DelayID
	}
	return false
}

// --- driver --------------------------------------------------------------------------

// runWorkflow runs one locked workflow execution until it finishes, fails
// or parks at a join whose response has not arrived.
func (w *Worker) runWorkflow(le core.LockedExecution, f *function, sl *slot) {
	id := le.ExecutionID
	wf := w.cache.take(id)
	var hist []core.HistoryEventWithVersion
	var resps []core.ResponseWithCursor
	if wf != nil {
		resumed, h, r, err := wf.resumeFrom(le)
		switch {
		case err != nil:
			wf.abort()
			w.log.Warn("cannot read the history delta; releasing the execution", "execution_id", id.String(), "err", err)
			w.release(id, le.NextVersion, "history unavailable")
			return
		case !resumed:
			wf.abort()
			wf, hist, resps = nil, h, r
		}
	}
	if wf == nil {
		if hist == nil {
			var err error
			if hist, resps, err = w.history(le); err != nil {
				w.log.Warn("cannot read the history; releasing the execution", "execution_id", id.String(), "err", err)
				w.release(id, le.NextVersion, "history unavailable")
				return
			}
		}
		wf = newContext(w, f, le, hist, resps)
		wf.slot = sl
		w.openInbox(wf)
		go wf.main()
	} else {
		wf.slot = sl
		w.openInbox(wf)
		wf.resumeCh <- true
	}
	stop := w.keepLease(wf.extendLease, func(err error) {
		cancelled := isFenced(err) && w.executionCancelled(id)
		wf.l.mu.Lock()
		if cancelled {
			wf.setCancelled()
		} else {
			wf.fenced = true
		}
		wf.l.mu.Unlock()
	})
	y := <-wf.yieldCh
	stop()
	w.closeInbox(wf)
	if y == yieldParked {
		w.cache.put(wf)
	} else {
		w.cache.unpause(id)
	}
}

// history returns the whole history of a freshly locked workflow: from the
// lock itself, or read when the lock skipped it.
func (w *Worker) history(le core.LockedExecution) ([]core.HistoryEventWithVersion, []core.ResponseWithCursor, error) {
	if le.NextVersion <= 2 {
		return []core.HistoryEventWithVersion{}, nil, nil // Created, then this lock: nothing to read
	}
	ctx, cancel := w.ioContext()
	defer cancel()
	d, err := w.conn.ReadHistory(ctx, le.ExecutionID, 0, 0)
	return d.Events, d.Responses, err
}

func newContext(w *Worker, f *function, le core.LockedExecution, hist []core.HistoryEventWithVersion, resps []core.ResponseWithCursor) *Context {
	seed := sha256.Sum256([]byte(le.ExecutionID.String()))
	wf := &Context{w: w, f: f, id: le.ExecutionID, parent: le.Parent, params: le.Params, trace: traceMetadata(le.Metadata), l: newLease(w, le),
		hist: hist, sets: map[core.JoinSetId]*joinSetState{},
		rng:    rand.New(rand.NewChaCha8(seed)),
		active: true, resumeCh: make(chan bool), yieldCh: make(chan yieldKind)}
	wf.size = itemOverhead
	for _, p := range le.Params {
		wf.size += int64(len(p))
	}
	for _, h := range hist {
		wf.size += eventSize(h.Event)
	}
	wf.addResponses(resps)
	return wf
}

// itemOverhead is the memory a kept run holds per history event or
// response besides their payloads (measured: a workflow of 100 calls kept
// in memory held about 1.2 KB per call, i.e. per 3 events and a response).
const itemOverhead = 300

// eventSize estimates the memory of a history event.
func eventSize(h core.HistoryEvent) int64 {
	n := int64(itemOverhead)
	switch e := h.(type) {
	case *core.JoinSetRequestEvent:
		if c, ok := e.Request.(*core.ChildExecutionRequest); ok {
			for _, p := range c.Params {
				n += int64(len(p))
			}
		}
	case *core.Persist:
		n += int64(len(e.Value))
	}
	return n
}

// responseSize estimates the memory of a response.
func responseSize(r core.ResponseWithCursor) int64 {
	n := int64(itemOverhead)
	if c, ok := r.Event.Event.Event.(*core.ChildExecutionFinished); ok && c.Result.Value != nil {
		n += int64(len(c.Result.Value.Value))
	}
	return n
}

// memSize is the estimated memory of a parked run (Options.MaxCachedBytes):
// its history events and responses, their payloads and its parameters.
func (wf *Context) memSize() int64 { return wf.size }

// resumeFrom prepares a parked run for the lock le: it may resume only if
// nobody else appended history since it parked; it then learns the new
// responses (reading only them: the lock skipped the history).
// Otherwise it returns the whole history, the run's plus what was added,
// for a replay.
func (wf *Context) resumeFrom(le core.LockedExecution) (bool, []core.HistoryEventWithVersion, []core.ResponseWithCursor, error) {
	wf.l.mu.Lock()
	defer wf.l.mu.Unlock()
	last := core.ResponseCursor(0)
	if n := len(wf.resps); n > 0 {
		last = wf.resps[n-1].Cursor
	}
	ctx, cancel := wf.w.ioContext()
	d, err := wf.w.conn.ReadHistory(ctx, wf.id, wf.l.next, last)
	cancel()
	if err != nil {
		return false, nil, nil, err
	}
	added, fresh := d.Events, d.Responses
	if len(added) > 0 { // another run wrote history: replay
		return false, append(wf.hist[:len(wf.hist):len(wf.hist)], added...), append(wf.resps[:len(wf.resps):len(wf.resps)], fresh...), nil
	}
	wf.addResponses(fresh)
	wf.l.next = le.NextVersion
	wf.l.locked = le.LockedEvent
	wf.active = true
	return true, nil, nil, nil
}

// addResponses routes responses (in cursor order) to their join sets.
func (wf *Context) addResponses(rs []core.ResponseWithCursor) {
	for _, r := range rs {
		js := wf.set(r.Event.Event.JoinSetID)
		js.arrived = append(js.arrived, len(wf.resps))
		wf.resps = append(wf.resps, r)
		wf.size += responseSize(r)
	}
}

func (wf *Context) set(id core.JoinSetId) *joinSetState {
	s, ok := wf.sets[id]
	if !ok {
		s = &joinSetState{id: id}
		wf.sets[id] = s
	}
	return s
}

// abort unwinds a parked run's goroutine (it was evicted or is stale).
func (wf *Context) abort() { wf.resumeCh <- false }

// extendLease extends a running workflow's lease: the buffered events are
// written first, with the Locked event when they fit in one append, else
// alone before it (as writeFinished does: a full buffer plus the Locked
// event is more than an append may carry). A fenced write ends the run; a
// write the store refuses finishes the execution with an execution failure
// (refuse); a transient failure is retried at the next tick.
func (wf *Context) extendLease() error {
	wf.l.mu.Lock()
	defer wf.l.mu.Unlock()
	if !wf.active || wf.awaiting || wf.fenced || wf.cancelled || wf.poison != nil {
		return nil
	}
	now := wf.w.clock.Now()
	if !wf.l.due(now) {
		return nil
	}
	var err error
	if len(wf.buf) > 0 && len(wf.buf)+len(wf.children)+1 > MaxAppendItems {
		err = wf.writeBatch(wf.buf, wf.children)
	}
	ext := wf.l.extension(now)
	if err == nil {
		err = wf.writeBatch(append(wf.buf, ext), wf.children)
	}
	switch {
	case err == nil:
		wf.l.locked = *ext.Event.(*core.Locked)
		return nil
	case isFenced(err), errors.Is(err, errFireLost):
		return err
	case isRefused(err):
		wf.refuse(err)
		return err
	}
	wf.w.log.Debug("lease extension failed, will retry", "execution_id", wf.id.String(), "err", err)
	return nil
}

// --- the workflow goroutine ---------------------------------------------------------

// signals raised (with panic) inside SDK calls and recovered by main.
type (
	abortSig struct {
		parked   bool // raised in a parked run: nobody waits for a yield
		shutdown bool // the worker stops: release the lock
	}
	failSig struct{ rv core.ReturnValue }
	// cancelSig: a write found the execution cancelled; the SDK call
	// that made it returns an error wrapping ErrCancelled (guard).
	cancelSig struct{}
)

// outcome is how the workflow function ended.
type outcome struct {
	rv    core.ReturnValue
	err   error
	fail  *core.ReturnValue // an execution failure to record as is
	abort *abortSig
	// replayEnd ends a replay check (replay.go).
	replayEnd *replayEndSig
	// diverged is a divergence found by a pinned worker (upgrade.go).
	diverged *NondeterminismError
}

func (wf *Context) main() {
	out := wf.runUser()
	if out.abort == nil && out.fail == nil && out.diverged == nil && !wf.isCancelled() {
		out = wf.finishOutcome(out)
	}
	switch {
	case out.abort != nil && out.abort.parked:
		return
	case wf.isCancelled():
		// The store's cancellation driver cancels what is open and
		// finishes the execution as cancelled.
		wf.w.log.Info("workflow cancelled; the store finishes its cancellation", "execution_id", wf.id.String())
	case out.diverged != nil:
		wf.pauseDiverged(out.diverged)
	case out.abort != nil:
		if out.abort.shutdown {
			wf.w.release(wf.id, wf.l.next, reasonExecutorClose)
		}
	default:
		rv := out.rv
		if out.fail != nil {
			rv = *out.fail
		} else if out.err != nil {
			rv = core.RetErr(errorValue(out.err))
		}
		// The workflow's code is done: its slot is lent out before the
		// write of its result, so that the writes of many finishing runs
		// (W3's 500 timers firing together) share the store's commits
		// instead of queueing for the slots one round trip each.
		wf.slot.release()
		wf.writeFinished(rv)
	}
	wf.yieldCh <- yieldDone
}

// runUser calls the workflow function and classifies how it ended.
func (wf *Context) runUser() (out outcome) {
	defer func() {
		p := recover()
		if p == nil {
			return
		}
		out = wf.classify(p)
	}()
	rv, err := wf.f.workflow(wf, wf.params)
	if wf.poison != nil { // the workflow swallowed a signal
		return wf.classify(wf.poison)
	}
	var fatal *fatalError
	if errors.As(err, &fatal) {
		reason := err.Error()
		f := core.RetFailure(core.FailureUncategorized, &reason, nil)
		return outcome{fail: &f}
	}
	return outcome{rv: rv, err: err}
}

// finishOutcome closes the open join sets and checks that the program
// consumed the whole history before the result is written.
func (wf *Context) finishOutcome(out outcome) (res outcome) {
	defer func() {
		if p := recover(); p != nil {
			res = wf.classify(p)
		}
	}()
	wf.closeAll()
	wf.l.mu.Lock()
	defer wf.l.mu.Unlock()
	wf.skipPatchMarkers()
	if wf.cur < len(wf.hist) {
		h := wf.hist[wf.cur]
		wf.nondeterminism(h.Version, fmt.Sprintf("the workflow finished but the history continues at version %d with %s", h.Version, describe(h.Event)))
	}
	return out
}

func (wf *Context) classify(p any) outcome {
	switch s := p.(type) {
	case abortSig:
		return outcome{abort: &s}
	case failSig:
		return outcome{fail: &s.rv}
	case cancelSig: // raised while closing join sets: nothing more is written
		return outcome{}
	case replayEndSig:
		return outcome{replayEnd: &s}
	case divergedSig:
		return outcome{diverged: s.err}
	}
	reason := fmt.Sprintf("workflow panicked: %v", p)
	stack := string(debug.Stack())
	f := core.RetFailure(core.FailureUncategorized, &reason, &stack)
	return outcome{fail: &f}
}

// raise panics with sig and remembers it (see poison). mu must be held.
func (wf *Context) raise(sig any) {
	if wf.poison == nil {
		wf.poison = sig
	}
	panic(sig)
}

// nondeterminism records a replay divergence: the execution is finished
// with an execution failure of kind nondeterminism_detected.
func (wf *Context) nondeterminism(version core.Version, detail string) {
	err := &NondeterminismError{Version: version, Detail: detail}
	if wf.replay != nil {
		wf.raise(replayEndSig{divergence: err})
	}
	if wf.w.opts.Pinned {
		wf.w.log.Error("nondeterminism detected; pausing the execution", "execution_id", wf.id.String(), "version", version, "detail", detail)
		wf.raise(divergedSig{err: err})
	}
	wf.w.log.Error("nondeterminism detected", "execution_id", wf.id.String(), "version", version, "detail", detail)
	wf.raise(failSig{rv: core.RetFailure(core.FailureNondeterminismDetected, nil, &err.Detail)})
}

// enter starts an SDK call: it takes the run's lock and re-raises a signal
// if the run cannot go on.
func (wf *Context) enter() {
	wf.l.mu.Lock()
	switch {
	case wf.poison != nil:
		p := wf.poison
		wf.l.mu.Unlock()
		panic(p)
	case wf.fenced:
		wf.poison = abortSig{}
		wf.l.mu.Unlock()
		panic(abortSig{})
	case wf.replay == nil && wf.w.hardStop.Err() != nil:
		wf.poison = abortSig{shutdown: true}
		wf.l.mu.Unlock()
		panic(abortSig{shutdown: true})
	}
}

func (wf *Context) leave() { wf.l.mu.Unlock() }

// --- history ---------------------------------------------------------------------------

// replaying reports whether persisted history remains to be matched.
func (wf *Context) replaying() bool { return wf.cur < len(wf.hist) }

// match consumes the next persisted history event if the program is
// replaying: same reports whether it is the event the program asks for (a
// mismatch is a nondeterminism). It returns nil when the call is new.
func (wf *Context) match(want core.HistoryEvent, same func(got core.HistoryEvent) bool) core.HistoryEvent {
	wf.skipPatchMarkers()
	if !wf.replaying() {
		return nil
	}
	h := wf.hist[wf.cur]
	if !same(h.Event) {
		wf.nondeterminism(h.Version, fmt.Sprintf("the workflow asked for %s but the history has %s at version %d",
			describe(want), describe(h.Event), h.Version))
	}
	wf.cur++
	wf.ids.Observe(h.Event)
	return h.Event
}

// room makes sure n more items (events plus children) fit in the buffer.
func (wf *Context) room(n int) {
	if len(wf.buf)+len(wf.children)+n > MaxAppendItems {
		wf.flush()
	}
}

// record buffers a new history event (and the execution it creates).
func (wf *Context) record(ev core.HistoryEvent, child *core.CreateRequest) {
	if wf.replay != nil {
		wf.raise(replayEndSig{next: ev})
	}
	cost := 1
	if child != nil {
		cost = 2
	}
	wf.room(cost)
	now := wf.w.clock.Now()
	version := wf.l.next + core.Version(len(wf.buf))
	wf.buf = append(wf.buf, core.AppendRequest{CreatedAt: now, Event: &core.HistoryEventRequest{Event: ev}})
	if child != nil {
		wf.children = append(wf.children, *child)
	}
	wf.hist = append(wf.hist, core.HistoryEventWithVersion{Event: ev, Version: version})
	wf.size += eventSize(ev)
	wf.cur = len(wf.hist)
	wf.ids.Observe(ev)
}

// flush writes the buffered events (drops them once the execution is
// cancelled: nothing is written any more).
func (wf *Context) flush() {
	if wf.cancelled {
		wf.buf, wf.children = wf.buf[:0], nil
	}
	if len(wf.buf) == 0 {
		return
	}
	wf.check(wf.writeBatch(wf.buf, wf.children))
}

// writeBatch appends batch at l.next, creating children in the same
// transaction, and clears the buffer on success.
func (wf *Context) writeBatch(batch []core.AppendRequest, children []core.CreateRequest) error {
	if wf.fireLost {
		return errFireLost
	}
	if !wf.fire.IsZero() {
		if len(children) == 0 {
			return wf.writeFiring(batch) // fire.go
		}
		if err := wf.settleFire(); err != nil {
			return err
		}
	}
	var eager *eagerPlan
	var locked []core.LockedExecution
	if len(children) > 0 {
		eager = wf.w.planEager(children, batch) // eager.go
	}
	err := wf.w.retryWrite(wf.l, func(ctx context.Context) error {
		now := wf.w.clock.Now()
		var next core.Version
		var err error
		if eager != nil {
			// The same locks on every attempt: a retry after a lost
			// answer is answered the locks the first attempt took.
			next, locked, err = eager.write(ctx, now, batch, wf.id, wf.l.next, children)
		} else if len(children) > 0 {
			next, err = wf.w.conn.AppendBatchCreateNewExecution(ctx, now, batch, wf.id, wf.l.next, children, nil)
		} else {
			next, err = wf.w.conn.AppendBatch(ctx, now, batch, wf.id, wf.l.next)
		}
		if err == nil {
			wf.l.next = next
		}
		return err
	})
	if eager != nil {
		if err != nil {
			locked = nil
		}
		wf.w.startEager(eager, locked)
	}
	if err == nil {
		wf.buf = wf.buf[:0]
		wf.children = nil
	}
	return err
}

// check turns a failed write into the end of the run: fenced (another
// writer owns the execution), refused by the store (the execution is
// finished with an execution failure naming the refusal: a replay would
// only make the same write again), or unreachable store (the lease will
// expire and the timers hand the execution to another run).
func (wf *Context) check(err error) {
	if err == nil {
		return
	}
	switch {
	case errors.Is(err, errFireLost):
		// Given back already (fire.go); the next run replays the store's.
	case isFenced(err):
		if wf.w.executionCancelled(wf.id) {
			wf.setCancelled()
			panic(cancelSig{})
		}
	case isRefused(err):
		wf.refuse(err)
	default:
		wf.w.log.Warn("workflow write failed; giving the execution up", "execution_id", wf.id.String(), "err", err)
	}
	wf.raise(abortSig{})
}

// setCancelled enters the cancelled mode (see Context.cancelled): the
// buffered events are dropped. mu is held.
func (wf *Context) setCancelled() {
	wf.cancelled = true
	wf.buf, wf.children = wf.buf[:0], nil
	wf.fire = core.DelayId{} // the cancellation driver answers the delay
}

// isCancelled reports whether the run knows the execution is cancelled.
func (wf *Context) isCancelled() bool {
	wf.l.mu.Lock()
	defer wf.l.mu.Unlock()
	return wf.cancelled
}

// cancelledErr returns, once the execution is cancelled, the error of an
// SDK call that would have recorded what (nil otherwise). mu is held.
func (wf *Context) cancelledErr(what string) error {
	if !wf.cancelled {
		return nil
	}
	return fmt.Errorf("worker: %s not done: %w (the store cancels what the workflow started and finishes it)", what, ErrCancelled)
}

// guard ends every SDK call: a cancellation found by one of its writes
// (cancelSig) becomes the call's error (when it has one) instead of
// unwinding the workflow. Deferred after enter, so mu is held.
func (wf *Context) guard(what string, err *error) {
	p := recover()
	if p == nil {
		return
	}
	if _, ok := p.(cancelSig); !ok {
		panic(p)
	}
	if err != nil {
		*err = wf.cancelledErr(what)
	}
}

// executionCancelled reports whether the execution's cancellation was
// requested (cancelling, or already finished as cancelled by the store's
// driver): what a fenced write of a workflow means when it is not another
// worker taking over.
func (w *Worker) executionCancelled(id core.ExecutionId) bool {
	ctx, cancel := w.ioContext()
	defer cancel()
	st, err := w.conn.GetPendingState(ctx, id)
	if err != nil {
		return false
	}
	ps := st.PendingState
	return ps.Lifecycle == core.LifecycleCancelling ||
		(ps.Finished != nil && ps.Finished.ResultKind.Failure == core.FailureCancelled)
}

// refuse records a write the store refused (a 4xx over HTTP: a validation
// error, a non-fencing conflict): it is logged at ERROR and the execution
// is finished with an uncategorized execution failure naming the refusal,
// without the refused events; the run then unwinds. Never retried: the
// same write would be refused again, in a loop nobody sees. mu is held.
func (wf *Context) refuse(err error) {
	wf.w.log.Error("the store refused a workflow write; finishing the execution with an execution failure",
		"execution_id", wf.id.String(), "err", err)
	wf.buf, wf.children = wf.buf[:0], nil
	reason := refusalReason(err)
	if ferr := wf.finishLocked(core.RetFailure(core.FailureUncategorized, &reason, nil)); ferr != nil {
		wf.w.log.Error("cannot record the refused write on the execution", "execution_id", wf.id.String(), "err", ferr)
	}
	if wf.poison == nil {
		wf.poison = abortSig{}
	}
}

// refusalReason is the execution failure's reason of a refused write.
func refusalReason(err error) string { return "the store refused a write: " + err.Error() }

// park writes the buffer (ending with a JoinNext nobody answered yet),
// gives the lock up and waits until a later lock resumes the run. The run
// is marked pausing first: once the JoinNext is written, this worker may
// lock the execution again before the run is in the cache. mu is held on
// entry and on return.
func (wf *Context) park() {
	wf.w.cache.pause(wf.id)
	wf.flush()
	wf.active = false
	wf.l.mu.Unlock()
	wf.yieldCh <- yieldParked
	ok := <-wf.resumeCh
	wf.l.mu.Lock()
	if !ok {
		wf.raise(abortSig{parked: true})
	}
}

// waitResponses waits, holding the lock, for responses the history says
// exist but the run has not seen (a JoinNext replayed before its response
// reached this worker). mu is held on entry and on return.
func (wf *Context) waitResponses() {
	if wf.replay != nil {
		wf.raise(replayEndSig{missingResponse: true})
	}
	if n := len(wf.resps); !wf.takeLocal() && len(wf.resps) > n {
		return // handed over in memory; the caller checks whether it was the one awaited
	}
	last := wf.lastCursor()
	wf.l.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), wf.w.opts.LockExpiry/2)
	rs, err := wf.w.conn.SubscribeToNextResponses(ctx, wf.id, last)
	cancel()
	wf.l.mu.Lock()
	if err != nil && !errors.Is(err, core.ErrTimeout) {
		wf.check(err)
	}
	wf.addResponses(rs)
}

// awaitNext performs a JoinNext on js: it returns the next response of the
// set, writing and waiting as needed. requested is the ffqn of a direct
// call (recorded as requested_ffqn); until, when set, is when the awaited
// delay fires. A new JoinNext whose response is already known is buffered
// with run_expires_at = the lease's expiry (the run keeps the execution).
// Otherwise the buffer is written and the run either waits in memory (see
// Options.AwaitWindow: run_expires_at = the lease's expiry, so nobody else
// locks the execution meanwhile) or parks (run_expires_at = now: the
// execution blocks, and any worker may lock it as soon as the response
// arrives).
func (wf *Context) awaitNext(js *joinSetState, requested *core.FunctionFqn, closing bool, until core.Timestamp) core.ResponseWithCursor {
	want := &core.JoinNext{JoinSetID: js.id, RequestedFFQN: requested, Closing: closing}
	replayed := wf.match(want, func(got core.HistoryEvent) bool {
		j, ok := got.(*core.JoinNext)
		return ok && j.JoinSetID == js.id && j.Closing == closing && sameFFQN(j.RequestedFFQN, requested)
	})
	js.joinNexts++
	if replayed == nil {
		switch {
		case js.consumed < len(js.arrived):
			want.RunExpiresAt = wf.l.locked.LockExpiresAt
			wf.record(want, nil)
		case wf.mayAwait(until):
			want.RunExpiresAt = wf.l.locked.LockExpiresAt
			wf.record(want, nil)
			// The run waits from here on: its slot is lent out before
			// the write's round trip, not after (see awaitInMemory,
			// which writes the buffer and gives back the MaxAwaiting
			// place mayAwait took).
			wf.slot.release()
			if !wf.awaitInMemory(js, until) {
				wf.park()
			}
		default:
			want.RunExpiresAt = wf.w.clock.Now()
			wf.record(want, nil)
			wf.park()
		}
	}
	var r core.ResponseWithCursor
	if js.goOn {
		// Fire-and-continue: the run's next write fires the delay (fire.go);
		// its response reaches the run later, as this set's only one.
		js.goOn = false
		r = core.ResponseWithCursor{Event: core.JoinSetResponseEventOuter{CreatedAt: wf.w.clock.Now(),
			Event: core.JoinSetResponseEvent{JoinSetID: js.id, Event: &core.DelayFinished{DelayID: wf.fire, Result: true}}}}
	} else {
		for js.consumed >= len(js.arrived) {
			wf.waitResponses()
		}
		r = wf.resps[js.arrived[js.consumed]]
	}
	js.consumed++
	if !closing && !wf.cancelled && cancelledResponse(r) && wf.w.executionCancelled(wf.id) {
		// The store's cancellation driver cancelled this member: from now
		// on the workflow's writing calls report the cancellation.
		wf.setCancelled()
	}
	for i, m := range js.members {
		if m.answers(r.Event.Event.Event) {
			js.members = append(js.members[:i:i], js.members[i+1:]...)
			break
		}
	}
	return r
}

// cancelledResponse reports whether r tells of a member cancelled (a child
// finished as cancelled, a delay cancelled): possibly by the store's
// cancellation driver, cancelling this workflow.
func cancelledResponse(r core.ResponseWithCursor) bool {
	switch e := r.Event.Event.Event.(type) {
	case *core.ChildExecutionFinished:
		return e.Result.Failure != nil && e.Result.Failure.Kind == core.FailureCancelled
	case *core.DelayFinished:
		return !bool(e.Result)
	}
	return false
}

// subscribeLead is how long before a sleep's end a run waiting for it in
// memory subscribes to its response when its connection cannot fire the
// delay (no core.DelayFirer): about a request's round trip, so the long
// poll is usually waiting when the timer fires (a later one finds the
// response at once). W3 measured 5, 10 and 20 ms: the longer leads only
// held more long polls at once, for a later median wake-up.
const subscribeLead = 5 * time.Millisecond

// awaitMargin is how long before the lease's end a wait in memory gives up.
func (w *Worker) awaitMargin() time.Duration { return w.opts.LockExpiry / 10 }

// mayAwait reports whether a JoinNext may wait in memory: under Run, with
// room among the waiting runs, and (for a sleep) a delay due before the
// wait would end. When it may, it takes one of the Options.MaxAwaiting
// places at once — before the JoinNext's write, during which other runs
// decide too — and the caller gives it back. mu is held.
func (wf *Context) mayAwait(until core.Timestamp) bool {
	w := wf.w
	if !w.awaitOK.Load() {
		return false
	}
	end := wf.awaitEnd()
	if !until.IsZero() && until.After(end) {
		return false
	}
	if !end.After(w.clock.Now()) {
		return false
	}
	for {
		n := w.awaiting.Load()
		if n >= int64(w.opts.MaxAwaiting) {
			return false
		}
		if w.awaiting.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// awaitEnd is when a wait in memory must end: within the window and
// before the lease's end. mu is held.
func (wf *Context) awaitEnd() core.Timestamp {
	w := wf.w
	end := wf.l.locked.LockExpiresAt.Add(-w.awaitMargin())
	if limit := w.clock.Now().Add(w.opts.AwaitWindow); limit.Before(end) {
		end = limit
	}
	return end
}

// awaitInMemory writes the buffer (ending with the JoinNext), gives back
// on return the Options.MaxAwaiting place mayAwait took, and subscribes
// to the execution's responses until js has one
// (true) or the wait must end (false): the window is over, or the worker
// stops. The run's concurrency slot is lent out meanwhile. The execution is
// blocked in the store until the lease's expiry, so nobody else takes it;
// when the wait ends without a response, the execution is given back
// (giveBack) before returning false. until, when set, is when js's only
// member, a delay, fires: nothing answers it before (only this run could
// cancel it), so the run holds no long poll (nor the server's re-checks)
// for the whole sleep: at until it fires the delay itself (fireOwnDelay)
// and then subscribes, which finds the response at once — or, with a
// connection that cannot fire, subscribes just before until
// (subscribeLead) and waits for the sweep. mu is held on entry and on
// return.
func (wf *Context) awaitInMemory(js *joinSetState, until core.Timestamp) bool {
	w := wf.w
	defer w.awaiting.Add(-1) // the place mayAwait took, even if the write fails
	wf.flush()
	wf.awaiting = true
	defer func() { wf.awaiting = false }()
	wait := wf.awaitEnd().Sub(w.clock.Now().Time)
	deadline := time.Now().Add(wait)
	wf.slot.release()
	if w.onAwait != nil {
		w.onAwait(wf.id)
	}
	if !until.IsZero() {
		firer, delay := w.delayFirer(js)
		lead := subscribeLead
		if firer != nil {
			lead = 0 // wake at the expiry itself and fire the delay
		}
		if d := min(until.Sub(w.clock.Now().Time)-lead, wait); d > 0 {
			wf.l.mu.Unlock()
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-w.stopping.Done():
			}
			t.Stop()
			wf.l.mu.Lock()
		}
		if firer != nil && w.stopping.Err() == nil && !until.After(w.clock.Now()) {
			if wf.mayGoOn(js, delay) { // fire.go
				wf.l.mu.Unlock()
				wf.slot.reacquire()
				wf.l.mu.Lock()
				return true
			}
			wf.l.mu.Unlock()
			w.fireOwnDelay(firer, wf.id, delay)
			wf.l.mu.Lock()
		}
	}
	got := false
	localUntil := time.Now().Add(localWaitCap)
	for !got {
		remaining := time.Until(deadline)
		if remaining <= 0 || w.stopping.Err() != nil {
			break
		}
		// Responses handed over in memory first (inbox.go): while every
		// member js still waits for is a child this worker runs, nothing
		// else can answer it, and the run waits for the child to hand its
		// response over (at most localWaitCap) instead of asking the store.
		gap := wf.takeLocal()
		if got = js.consumed < len(js.arrived); got {
			break
		}
		if local := min(remaining, time.Until(localUntil)); !gap && local > 0 && wf.holdsAll(js) {
			wf.waitLocal(local)
			continue
		}
		last := wf.lastCursor()
		wf.l.mu.Unlock()
		ctx, cancel := context.WithTimeout(w.stopping, remaining)
		rs, err := w.conn.SubscribeToNextResponses(ctx, wf.id, last)
		cancel()
		wf.l.mu.Lock()
		if err != nil && !errors.Is(err, core.ErrTimeout) && ctx.Err() == nil {
			w.log.Debug("response subscription failed", "execution_id", wf.id.String(), "err", err)
			break
		}
		wf.addResponses(rs)
		got = js.consumed < len(js.arrived)
	}
	if got {
		wf.l.mu.Unlock()
		wf.slot.reacquire()
		wf.l.mu.Lock()
		return true
	}
	reason := reasonAwaitWindow
	if w.stopping.Err() != nil {
		reason = reasonExecutorClose
	}
	wf.giveBack(reason)
	return false
}

// delayFirer returns the connection's core.DelayFirer and js's delay when
// js's only member is a delay (a sleep) and the connection can fire it
// (nil otherwise: the store's timers sweep fires it).
func (w *Worker) delayFirer(js *joinSetState) (core.DelayFirer, core.DelayId) {
	f, ok := w.conn.(core.DelayFirer)
	if !ok || len(js.members) != 1 || js.members[0].delay.IsZero() {
		return nil, core.DelayId{}
	}
	return f, js.members[0].delay
}

// fireDelayRetries bounds how often fireOwnDelay asks again when the store
// answers not_due (its clock is behind the worker's, or the delay is
// paused); the pauses double from fireDelayPause. After them the sweep
// fires the delay.
const (
	fireDelayRetries = 4
	fireDelayPause   = 5 * time.Millisecond
)

// fireOwnDelay asks the store to fire delay, which a run of id awaits in
// memory, at its expiry (core.DelayFirer): the sleep then ends at its
// deadline instead of at the timers sweep's next pass (on AWS once a
// minute). The store decides with its own clock. A fire whose answer tells
// the response's cursor hands the response to the run (handOver); else the
// run's subscription that follows picks it up (at once when fired or
// answered). Best effort: a failure leaves the delay to the sweep.
func (w *Worker) fireOwnDelay(f core.DelayFirer, id core.ExecutionId, delay core.DelayId) {
	pause := fireDelayPause
	for attempt := 0; ; attempt++ {
		ctx, cancel := w.ioContext()
		out, err := f.FireDelay(ctx, delay)
		cancel()
		switch {
		case err != nil:
			w.log.Debug("firing an awaited delay failed; the sweep fires it", "execution_id", id.String(), "delay_id", delay.String(), "err", err)
			return
		case out.Outcome != core.DelayFireNotDue:
			if out.Outcome == core.DelayFired {
				w.delaysFired.Add(1)
				if out.Cursor != 0 {
					_, js := delay.SplitToParts()
					w.handOver(id, core.ExecutionId{}, core.ResponseWithCursor{Cursor: out.Cursor,
						Event: core.JoinSetResponseEventOuter{CreatedAt: out.FiredAt, Event: core.JoinSetResponseEvent{
							JoinSetID: js, Event: &core.DelayFinished{DelayID: delay, Result: true}}}})
				}
			}
			return
		case attempt >= fireDelayRetries:
			return
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-w.stopping.Done():
			t.Stop()
			return
		}
		pause *= 2
	}
}

// giveBack ends a wait in memory without its response: the JoinNext kept
// the execution until the lease's expiry, so Unlocked(now) pulls the
// block's deadline in (the store's rule: blocked with deadline now, or
// pending now if the response arrived meanwhile) and any worker may lock
// the execution as soon as the response is there (Obelisk's executor does
// the same when it closes). The run is marked pausing first: this worker
// may lock the execution again before the run is parked. Unlocked refused
// by the state (the execution is cancelling or paused, which the store
// handles) or by a writer that took over is fine: the execution is not
// held by this run any more either way. mu is held.
func (wf *Context) giveBack(reason string) {
	w := wf.w
	w.cache.pause(wf.id)
	ctx, cancel := w.ioContext()
	defer cancel()
	now := w.clock.Now()
	next, err := w.conn.Append(ctx, wf.id, wf.l.next,
		core.AppendRequest{CreatedAt: now, Event: &core.Unlocked{UnlockedAt: now, Reason: reason}})
	switch {
	case err == nil:
		wf.l.next = next
	case errors.Is(err, core.ErrUnlockedCannotBeAppended) || isFenced(err):
	default:
		// The lease still ends the block; the response then makes the
		// execution pending for any worker.
		w.log.Warn("cannot give the execution back; it waits for its lease to expire",
			"execution_id", wf.id.String(), "err", err)
	}
}

// writeFinished appends Finished (after the buffered events), responding to
// the parent when the workflow is a child. A result the store refuses is
// replaced by an execution failure naming the refusal.
func (wf *Context) writeFinished(rv core.ReturnValue) {
	wf.l.mu.Lock()
	defer wf.l.mu.Unlock()
	err := wf.finishLocked(rv)
	switch {
	case err == nil, errors.Is(err, errFireLost):
	case isRefused(err):
		wf.refuse(err)
	default:
		wf.w.log.Warn("workflow result not recorded", "execution_id", wf.id.String(), "err", err)
	}
}

// finishLocked appends Finished (see writeFinished) and reports it. mu is held.
func (wf *Context) finishLocked(rv core.ReturnValue) error {
	now := wf.w.clock.Now()
	fin := core.AppendRequest{CreatedAt: now, Event: &core.Finished{Retval: rv}}
	var err error
	if wf.parent == nil {
		if len(wf.buf)+len(wf.children)+1 > MaxAppendItems {
			err = wf.writeBatch(wf.buf, wf.children)
		}
		if err == nil {
			err = wf.writeBatch(append(wf.buf, fin), wf.children)
		}
	} else {
		if len(wf.children) > 0 || len(wf.buf)+1 > MaxAppendItems {
			err = wf.writeBatch(wf.buf, wf.children)
		}
		if err == nil {
			err = wf.settleFire() // respond-to-parent cannot carry it
		}
		if err == nil {
			batch := append(wf.buf, fin)
			err = wf.w.retryWrite(wf.l, func(ctx context.Context) error {
				finished := wf.l.next + core.Version(len(batch)-1)
				_, err := wf.w.respondToParent(ctx,
					core.AppendEventsToExecution{ExecutionID: wf.id, Version: wf.l.next, Batch: batch},
					core.AppendResponseToExecution{ParentExecutionID: wf.parent.ExecutionID, CreatedAt: now,
						JoinSetID: wf.parent.JoinSetID, ChildExecutionID: core.ExecutionIdDerived{ExecutionId: wf.id},
						FinishedVersion: finished, Result: rv}, now)
				return err
			})
		}
	}
	if err != nil {
		return err
	}
	wf.w.log.Debug("workflow done", "execution_id", wf.id.String(), "result", rv.ResultKind())
	wf.w.reportFinished(wf.id, rv)
	return nil
}

// closeAll closes the join sets the workflow left open, newest first
// (Obelisk's finalize): each unawaited member is cancelled or awaited.
func (wf *Context) closeAll() {
	for wf.closeNewestOpen() {
	}
}

// closeNewestOpen closes the newest open join set with unawaited members;
// it reports false when there is none.
func (wf *Context) closeNewestOpen() bool {
	wf.enter()
	defer wf.leave()
	if wf.cancelled {
		return false // the store's cancellation driver closes them
	}
	for i := len(wf.order) - 1; i >= 0; i-- {
		if s := wf.order[i]; !s.oneOff && !s.closed && len(s.members) > 0 {
			wf.closeSet(s)
			return true
		}
	}
	return false
}

// closeSet closes js: its unanswered activities and delays are cancelled
// (newest first) and its cancellable child workflows are asked to cancel,
// then one closing JoinNext per unawaited member waits for each response.
// mu is held.
func (wf *Context) closeSet(js *joinSetState) {
	js.closed = true
	n := len(js.members)
	if n == 0 {
		return
	}
	if !wf.replaying() {
		wf.flush() // children must exist before they can be cancelled
		wf.cancelMembers(js)
	}
	for range n {
		wf.awaitNext(js, nil, true, core.Timestamp{})
	}
}

// cancelMembers cancels js's members whose response has not arrived.
func (wf *Context) cancelMembers(js *joinSetState) {
	answered := func(m member) bool {
		for _, i := range js.arrived[js.consumed:] {
			if m.answers(wf.resps[i].Event.Event.Event) {
				return true
			}
		}
		return false
	}
	ctx, cancel := wf.w.ioContext()
	defer cancel()
	for i := len(js.members) - 1; i >= 0; i-- {
		m := js.members[i]
		if answered(m) {
			continue
		}
		var err error
		if !m.delay.IsZero() {
			_, err = wf.w.conn.CancelDelay(ctx, m.delay)
		} else {
			var kind core.ComponentType
			if kind, err = wf.memberKind(ctx, m); err == nil {
				if kind.IsActivity() || m.ffqn.IsCancellable() {
					err = cancelChild(ctx, wf.w.conn, m.child)
				}
			}
		}
		if err != nil && !core.IsNonRetriable(err) && !errors.Is(err, core.ErrNotFound) {
			wf.check(err)
		}
	}
}

// memberKind returns the component type of a child member: the one it was
// created with, or (a child created by an earlier run this one replayed,
// of a function the worker cannot tell) the stored execution's.
func (wf *Context) memberKind(ctx context.Context, m member) (core.ComponentType, error) {
	if m.kind != "" {
		return m.kind, nil
	}
	st, err := wf.w.conn.GetPendingState(ctx, m.child)
	return st.ComponentType, err
}

func sameFFQN(a, b *core.FunctionFqn) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// describe renders a history event for nondeterminism details.
func describe(h core.HistoryEvent) string {
	b, err := core.EncodeHistoryEvent(h)
	if err != nil {
		return fmt.Sprintf("%T", h)
	}
	return string(b)
}

// timeOf converts a Timestamp for the workflow's user.
func timeOf(ts core.Timestamp) time.Time { return ts.Time }

// tracingPrefix prefixes the metadata keys of an execution's trace context
// (Obelisk's convention, obs/tracemeta: "tracing:traceparent",
// "tracing:tracestate"). The SDK copies them into the executions a workflow
// creates, so one trace follows a workflow and everything it spawns,
// without linking OpenTelemetry into user programs.
const tracingPrefix = "tracing:"

// traceMetadata returns md's trace-context entries (never nil: the wire form
// of metadata is an object).
func traceMetadata(md core.ExecutionMetadata) core.ExecutionMetadata {
	out := core.ExecutionMetadata{}
	for k, v := range md {
		if strings.HasPrefix(k, tracingPrefix) {
			out[k] = v
		}
	}
	return out
}
