package core

import (
	"context"
	"fmt"
)

// Checks of the worker routes that write into another execution
// (POST /v1/worker/append-batch/create-children and …/respond-to-parent,
// docs/http-api.md §4.1). Storage itself does not validate join-set
// semantics (docs/spec/semantics.md §3.9) and Obelisk's own storage scenarios create children
// and responses without the events a workflow would write, so these checks
// are not part of the store contract: store.Service evaluates them, inside
// the same Update as the write, only for callers that ask for them
// (ChildWriteChecker). Inconsistencies within the request are validation
// errors; disagreement with the stored log is an illegal state.

// ChildWriteChecker is implemented by stores that can run the checks of
// CheckCreateChildren and CheckRespondToParent atomically with the write
// (store.Service). The HTTP worker routes require it.
type ChildWriteChecker interface {
	// AppendBatchCreateNewExecutionChecked is AppendBatchCreateNewExecution
	// that also rejects children CheckCreateChildren rejects.
	AppendBatchCreateNewExecutionChecked(ctx context.Context, currentTime Timestamp, batch []AppendRequest, id ExecutionId, version Version, children []CreateRequest, backtraces []BacktraceInfo) (Version, error)
	// AppendBatchRespondToParentChecked is AppendBatchRespondToParent that
	// also rejects responses CheckRespondToParent rejects.
	// It also returns the response's cursor, as
	// ResponseCursorReporter.AppendBatchRespondToParentAt does.
	AppendBatchRespondToParentChecked(ctx context.Context, events AppendEventsToExecution, resp AppendResponseToExecution, currentTime Timestamp) (Version, ResponseCursor, error)
}

// ResponseCursorReporter is implemented by connections whose child writes
// tell where the child's response landed among its parent's responses
// (store.Service; client.Client against a server that answers
// response_cursor). A worker that runs both a workflow and the child it
// awaits hands the response to the waiting run in memory, so the run needs
// no request to read it (docs/worker.md "Responses in memory").
type ResponseCursorReporter interface {
	// AppendBatchRespondToParentAt is AppendBatchRespondToParent that also
	// returns the response's cursor in the parent: 0 when the store recorded
	// the response without numbering it yet (a deferred response, numbered
	// when the parent's lock ends) or does not tell.
	AppendBatchRespondToParentAt(ctx context.Context, events AppendEventsToExecution, resp AppendResponseToExecution, currentTime Timestamp) (Version, ResponseCursor, error)
}

// joinSetLog follows the join sets of one execution's log in version order.
type joinSetLog struct {
	created map[JoinSetId]bool
	closed  map[JoinSetId]bool
	// children maps a requested child to its join set and target function.
	children map[ExecutionId]childRequest
}

type childRequest struct {
	js     JoinSetId
	target FunctionFqn
}

func newJoinSetLog() *joinSetLog {
	return &joinSetLog{created: map[JoinSetId]bool{}, closed: map[JoinSetId]bool{},
		children: map[ExecutionId]childRequest{}}
}

// add records one event. A child request counts only in a join set created
// before it, still open, and with result Ok (an Err result means the child
// was not created).
func (l *joinSetLog) add(ev ExecutionRequest) {
	h, ok := ev.(*HistoryEventRequest)
	if !ok {
		return
	}
	switch e := h.Event.(type) {
	case *JoinSetCreate:
		l.created[e.JoinSetID] = true
	case *JoinNext:
		if e.Closing {
			l.closed[e.JoinSetID] = true
		}
	case *JoinSetRequestEvent:
		r, ok := e.Request.(*ChildExecutionRequest)
		if ok && r.Result.IsOk() && l.created[e.JoinSetID] && !l.closed[e.JoinSetID] {
			l.children[r.ChildExecutionID.ExecutionId] = childRequest{e.JoinSetID, r.TargetFFQN}
		}
	}
}

func joinSetsOf(history []ExecutionEvent, batch []AppendRequest) *joinSetLog {
	l := newJoinSetLog()
	for _, ev := range history {
		l.add(ev.Event)
	}
	for _, req := range batch {
		l.add(req.Event)
	}
	return l
}

// CheckCreateChildren checks the executions an append_batch_create_new_execution
// of parent creates, given the parent's stored events (history, ascending)
// and the batch appended with them. A derived child must be derived from
// parent (ExecutionId.SplitToParts), name parent and that join set as its
// Parent, and have a ChildExecutionRequest for it with result Ok and its
// ffqn as target, in that join set, created on parent (JoinSetCreate) and
// not yet closed (closing JoinNext) before the request — in the history or
// earlier in the batch. A top-level execution (a -schedule target) must have
// no parent.
func CheckCreateChildren(parent ExecutionId, history []ExecutionEvent, batch []AppendRequest, children []CreateRequest) error {
	var log *joinSetLog
	for i := range children {
		c := &children[i]
		id := c.ExecutionID
		if id.IsTopLevel() {
			if c.Parent != nil {
				return invalid(fmt.Sprintf("top-level execution %s cannot have a parent", id))
			}
			continue
		}
		p, js, ok := id.SplitToParts()
		if !ok || p != parent {
			return invalid(fmt.Sprintf("child %s is not derived from %s", id, parent))
		}
		if c.Parent == nil || c.Parent.ExecutionID != parent || c.Parent.JoinSetID != js {
			return invalid(fmt.Sprintf("child %s must have parent %s and join set %s", id, parent, js))
		}
		if log == nil {
			log = joinSetsOf(history, batch)
		}
		switch req, ok := log.children[id]; {
		case !log.created[js]:
			return illegal(fmt.Sprintf("join set %s was not created on %s", js, parent))
		case (!ok || req.js != js) && log.closed[js]:
			return illegal(fmt.Sprintf("join set %s of %s is closed", js, parent))
		case !ok || req.js != js:
			return illegal(fmt.Sprintf("%s has no child_execution_request for %s in join set %s", parent, id, js))
		case req.target != c.FFQN:
			return illegal(fmt.Sprintf("child %s has ffqn %s, its child_execution_request targets %s", id, c.FFQN, req.target))
		}
	}
	return nil
}

// CheckRespondToParentRequest checks the request of
// append_batch_respond_to_parent on its own: the response names the
// execution the events are appended to as the child, that child is derived
// from the response's parent and join set, and the batch ends with the
// child's Finished event at finished_version with the response's result.
func CheckRespondToParentRequest(events AppendEventsToExecution, resp AppendResponseToExecution) error {
	if err := ValidateRespondToParent(events, resp); err != nil {
		return err
	}
	child := resp.ChildExecutionID.ExecutionId
	if child != events.ExecutionID {
		return invalid(fmt.Sprintf("`child_execution_id` %s must be the execution the events are appended to (%s)", child, events.ExecutionID))
	}
	p, js, ok := child.SplitToParts()
	if !ok || p != resp.ParentExecutionID || js != resp.JoinSetID {
		return invalid(fmt.Sprintf("child %s is not derived from parent %s and join set %s", child, resp.ParentExecutionID, resp.JoinSetID))
	}
	last := events.Batch[len(events.Batch)-1]
	f, ok := last.Event.(*Finished)
	if !ok {
		return invalid("the batch must end with the child's `finished` event")
	}
	if v := events.Version + Version(len(events.Batch)-1); v != resp.FinishedVersion {
		return invalid(fmt.Sprintf("`finished_version` %d is not the version of the batch's `finished` event (%d)", resp.FinishedVersion, v))
	}
	if !f.Retval.Equal(resp.Result) {
		return invalid("the response's `result` differs from the batch's `finished` event")
	}
	return nil
}

// CheckRespondToParent checks a respond_to_parent request (see
// CheckRespondToParentRequest) against the child's own creation (created,
// its version-0 event): the child was created as a child of the response's
// parent in the response's join set. Over the worker routes a child gets
// that parent only through create-children, whose checks (CheckCreateChildren)
// require the parent's join set and its child_execution_request, so this
// one read replaces a scan of the parent's log — which made every response
// cost O(children) and a fan-out O(children²). A child created through the
// store's Go API is trusted as storage trusts it. A join set whose closing
// JoinNexts were appended still takes the responses they await, and a
// finished parent still takes them (its lock may have expired with children
// running), as in storage.
func CheckRespondToParent(events AppendEventsToExecution, resp AppendResponseToExecution, created *Created) error {
	if err := CheckRespondToParentRequest(events, resp); err != nil {
		return err
	}
	parent, js, child := resp.ParentExecutionID, resp.JoinSetID, resp.ChildExecutionID.ExecutionId
	if created == nil || created.Parent == nil || created.Parent.ExecutionID != parent || created.Parent.JoinSetID != js {
		return illegal(fmt.Sprintf("%s was not created as a child of %s in join set %s", child, parent, js))
	}
	return nil
}

// EagerLock asks a create-children write (EagerChildCreator) to lock some of
// the children it creates to the calling worker in the same commit (eager
// dispatch, docs/worker.md "Eager dispatch"): each child of FFQNs, in
// request order, up to Request.BatchSize of them, is created with the
// history [Created, Locked] — the Locked event Request stands for
// (LockRequest.LockedEvent), as a lock by ffqns would append — and is
// answered as a LockedExecution, so that it never enters the pending index
// and needs no lock request. Only a child a lock could take at
// Request.CreatedAt is locked: not paused, not a signal stub, scheduled at
// or before it; with Request.ByComponentDigest (a pinned worker) only one
// created with Request.ComponentID's digest. The others are created pending
// as without the request. Request.PendingAtOrSooner is not used.
type EagerLock struct {
	Request LockRequest
	FFQNs   []FunctionFqn
}

// Validate checks the lock's expiry (LockRequest.ValidateExpiry) and that
// it names at least one function.
func (e *EagerLock) Validate() error {
	if err := e.Request.ValidateExpiry(); err != nil {
		return err
	}
	if len(e.FFQNs) == 0 {
		return invalid("eager lock without ffqns")
	}
	return nil
}

// Takes reports whether the eager lock e may take the child c (see
// EagerLock): its function is one of e's, it is neither paused nor a signal
// stub, it is due at the lock's time and, for a pinned lock, of its digest.
func (e *EagerLock) Takes(c *CreateRequest) bool {
	if c.Paused || IsSignalStub(*c) || c.ScheduledAt.After(e.Request.CreatedAt) {
		return false
	}
	if e.Request.ByComponentDigest && c.ComponentID.ComponentDigest != e.Request.ComponentID.ComponentDigest {
		return false
	}
	for _, f := range e.FFQNs {
		if f == c.FFQN {
			return true
		}
	}
	return false
}

// EagerChildCreator is implemented by connections that can lock children
// to the caller in the commit that creates them (store.Service, and
// client.Client against a server that knows the request field). A worker
// uses it when it serves a child's function and has free slots.
type EagerChildCreator interface {
	// AppendBatchCreateNewExecutionLocked is AppendBatchCreateNewExecution
	// that also locks children as locks asks (EagerLock) and returns them,
	// in creation order. Retried after a lost answer (the write committed),
	// the same request answers the same next version and the children still
	// locked by the request's executor and run id, so no lock is left to
	// nobody. A connection whose server cannot lock eagerly answers no
	// locks (the children are then pending).
	AppendBatchCreateNewExecutionLocked(ctx context.Context, currentTime Timestamp, batch []AppendRequest, id ExecutionId, version Version, children []CreateRequest, backtraces []BacktraceInfo, locks []EagerLock) (Version, []LockedExecution, error)
}

// EagerCreator is implemented by connections that can create a top-level
// execution already locked to the caller, in the commit that creates it
// (eager start: store.Service, and client.Client against a server that
// knows the route). A worker uses it when it submits a function it serves
// and has a free slot.
type EagerCreator interface {
	// CreateLocked is Create that also locks the execution as lock asks
	// (history [Created, Locked]) when lock takes it (EagerLock.Takes), and
	// returns it as a lock answers it (none when it was created pending).
	// Retried after a lost answer (the create committed), the same request
	// answers the same lock while the execution is still locked by lock's
	// executor and run id at version 1, so no lock is left to nobody.
	CreateLocked(ctx context.Context, req CreateRequest, lock EagerLock) (Version, []LockedExecution, error)
}

// CreateLockedResult is one request's outcome of
// EagerBatchCreator.CreateLockedMany: the execution created locked
// (Locked set, NextVersion its next version), created pending because the
// lock did not take it (Locked nil), or the error its own CreateLocked
// would have returned (Err, e.g. ErrConflict for an id that exists).
type CreateLockedResult struct {
	NextVersion Version
	Locked      *LockedExecution
	Err         error
}

// EagerBatchCreator is implemented by connections that can create several
// top-level executions locked to the caller by one lock (store.Service,
// and client.Client, which falls back to one CreateLocked per request
// against a server that predates batches). A worker uses it for the
// submissions that queued while its previous create-locked request was in
// flight.
type EagerBatchCreator interface {
	// CreateLockedMany is CreateLocked of each of reqs with the same lock
	// (at most lock.Request.BatchSize of them locked, in order): each
	// request is created in its own commit and answered on its own, in
	// reqs' order, so one request's failure does not fail the others. The
	// error is the call's own (an invalid lock, a transport failure), with
	// no results. Retried after a lost answer, each request answers as
	// CreateLocked's retry does.
	CreateLockedMany(ctx context.Context, reqs []CreateRequest, lock EagerLock) ([]CreateLockedResult, error)
}
