package worker

import (
	"context"
	"sync"
	"time"

	"github.com/stela-dev/stela/core"
)

// Responses in memory (docs/worker.md "Responses in memory"): when this
// worker runs both a workflow and the child it awaits, the child's
// respond-to-parent write tells the cursor its response got in the parent
// (core.ResponseCursorReporter), and the worker hands that response to the
// waiting run itself: the run needs no request to read it. A sleep the
// worker fires (core.DelayFirer) is handed over the same way. The store
// stays the only authority: a handed response is exactly the one stored
// (same event, same cursor), and the run takes only responses that follow
// the last one it has without a gap; any gap (a response written by
// someone else: a timer, another worker, the cancellation driver), and any
// local child that ended without handing its response, sends the run back
// to the store (SubscribeToNextResponses) as before.

// localInbox is what one active workflow run is handed in memory, and the
// children this worker runs whose response it waits to hand over.
type localInbox struct {
	mu sync.Mutex
	// kids are the run's children this worker holds (locked to it) whose
	// response was not handed over yet.
	kids map[core.ExecutionId]bool
	// rs are the responses handed over and not taken by the run yet.
	rs []core.ResponseWithCursor
	// wake is signalled when a response is handed over or a kid ends
	// without one.
	wake chan struct{}
}

func newLocalInbox() *localInbox {
	return &localInbox{kids: map[core.ExecutionId]bool{}, wake: make(chan struct{}, 1)}
}

func (ib *localInbox) signal() {
	select {
	case ib.wake <- struct{}{}:
	default:
	}
}

// localWaitCap bounds one wait of a run for a response handed in memory;
// after it the run asks the store (a long poll the store answers at once
// when anything arrived there meanwhile, e.g. the cancellation of a child
// whose local run goes on).
const localWaitCap = 2 * time.Second

// openInbox gives wf, about to run, a fresh inbox that the children this
// worker holds hand their responses to (until closeInbox). A connection
// that cannot tell cursors gets none.
func (w *Worker) openInbox(wf *Context) {
	if _, ok := w.conn.(core.ResponseCursorReporter); !ok || wf.replay != nil {
		return
	}
	wf.inbox = newLocalInbox()
	w.inboxes.Store(wf.id, wf.inbox)
}

// closeInbox ends the handing over to wf's run (it parked or ended): what
// its children hand over later is dropped, the store has it.
func (w *Worker) closeInbox(wf *Context) {
	if wf.inbox == nil {
		return
	}
	w.inboxes.CompareAndDelete(wf.id, wf.inbox)
	wf.inbox = nil
}

// adopt records that this worker holds le, a child whose parent may be a
// run of this worker waiting for it: that run may then wait for the
// child's response in memory.
func (w *Worker) adopt(le core.LockedExecution) {
	if le.Parent == nil {
		return
	}
	if v, ok := w.inboxes.Load(le.Parent.ExecutionID); ok {
		ib := v.(*localInbox)
		ib.mu.Lock()
		ib.kids[le.ExecutionID] = true
		ib.mu.Unlock()
	}
}

// disown records that this worker no longer holds child (its run ended,
// or its lock was given up) without handing its response over: the
// parent's run, if it waits for it in memory, asks the store.
func (w *Worker) disown(parent *core.Parent, child core.ExecutionId) {
	if parent == nil {
		return
	}
	if v, ok := w.inboxes.Load(parent.ExecutionID); ok {
		ib := v.(*localInbox)
		ib.mu.Lock()
		_, held := ib.kids[child]
		delete(ib.kids, child)
		ib.mu.Unlock()
		if held {
			ib.signal()
		}
	}
}

// handOver gives the run of id, if this worker runs it, the response r
// just stored (r.Cursor is the store's). child, when set, is the child
// whose response it is (no longer held).
func (w *Worker) handOver(id core.ExecutionId, child core.ExecutionId, r core.ResponseWithCursor) {
	v, ok := w.inboxes.Load(id)
	if !ok {
		return
	}
	ib := v.(*localInbox)
	ib.mu.Lock()
	if !child.IsZero() {
		delete(ib.kids, child)
	}
	ib.rs = append(ib.rs, r)
	ib.mu.Unlock()
	ib.signal()
}

// respondToParent appends a child's batch with its response to the parent
// and hands the response, when the store told its cursor, to the parent's
// run if this worker runs it (handOver). It returns the child's next
// version.
func (w *Worker) respondToParent(ctx context.Context, events core.AppendEventsToExecution, resp core.AppendResponseToExecution, now core.Timestamp) (core.Version, error) {
	r, ok := w.conn.(core.ResponseCursorReporter)
	if !ok {
		return w.conn.AppendBatchRespondToParent(ctx, events, resp, now)
	}
	next, cursor, err := r.AppendBatchRespondToParentAt(ctx, events, resp, now)
	if err != nil || cursor == 0 {
		return next, err
	}
	w.handOver(resp.ParentExecutionID, events.ExecutionID, core.ResponseWithCursor{Cursor: cursor,
		Event: core.JoinSetResponseEventOuter{CreatedAt: resp.CreatedAt, Event: core.JoinSetResponseEvent{
			JoinSetID: resp.JoinSetID,
			Event: &core.ChildExecutionFinished{ChildExecutionID: resp.ChildExecutionID,
				FinishedVersion: resp.FinishedVersion, Result: resp.Result}}}})
	return next, nil
}

// takeLocal adds to the run the responses handed over that follow its
// last one without a gap; it reports whether a handed response lies
// beyond a gap (the store holds one the run has not seen: ask it). mu is
// held.
func (wf *Context) takeLocal() (gap bool) {
	ib := wf.inbox
	if ib == nil {
		return false
	}
	ib.mu.Lock()
	rs := ib.rs
	ib.rs = nil
	ib.mu.Unlock()
	if len(rs) == 0 {
		return false
	}
	for i := 1; i < len(rs); i++ { // by cursor (a handful, mostly in order already)
		for j := i; j > 0 && rs[j].Cursor < rs[j-1].Cursor; j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
	last := wf.lastCursor()
	var keep []core.ResponseWithCursor
	for _, r := range rs {
		switch {
		case r.Cursor <= last: // the run has it already (from the store)
		case r.Cursor == last+1:
			wf.addResponses([]core.ResponseWithCursor{r})
			wf.w.localResponses.Add(1)
			last++
		default:
			keep = append(keep, r)
		}
	}
	if len(keep) > 0 {
		ib.mu.Lock()
		ib.rs = append(keep, ib.rs...)
		ib.mu.Unlock()
		return true
	}
	return false
}

// lastCursor is the cursor of the run's last response (0: none). mu is
// held.
func (wf *Context) lastCursor() core.ResponseCursor {
	if n := len(wf.resps); n > 0 {
		return wf.resps[n-1].Cursor
	}
	return 0
}

// holdsAll reports whether every member of js still to answer is a child
// this worker holds: nothing but this worker can then answer js, and the
// run may wait for the answer in memory. mu is held.
func (wf *Context) holdsAll(js *joinSetState) bool {
	ib := wf.inbox
	if ib == nil || len(js.members) == 0 {
		return false
	}
	ib.mu.Lock()
	defer ib.mu.Unlock()
	for _, m := range js.members {
		if m.child.IsZero() || !ib.kids[m.child] {
			return false
		}
	}
	return true
}

// waitLocal waits, mu released, until something is handed over to the
// run's inbox, d passes or the worker stops. mu is held on entry and on
// return.
func (wf *Context) waitLocal(d time.Duration) {
	t := time.NewTimer(d)
	wf.l.mu.Unlock()
	select {
	case <-wf.inbox.wake:
	case <-t.C:
	case <-wf.w.stopping.Done():
	}
	t.Stop()
	wf.l.mu.Lock()
}
