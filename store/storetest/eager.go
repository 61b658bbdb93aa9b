package storetest

import (
	"errors"
	"time"

	"github.com/stela-dev/stela/core"
)

// Eager dispatch (core.EagerLock, core.EagerChildCreator): a create-children
// write that also locks some of its children to the caller, in the same
// commit, with the history [Created, Locked].
func eagerScenarios() []contractTest {
	return []contractTest{
		{"EA01_EagerChildIsCreatedLockedAndNotLockableByAPoll", eager01},
		{"EA02_EagerLockExpiresLikeAnyLock", eager02},
		{"EA03_EagerRetryAfterALostAnswerAnswersTheSameLocks", eager03},
		{"EA04_EagerWriteAtAWrongVersionWritesNothing", eager04},
		{"EA05_EagerLockTakesOnlyWhatALockWould", eager05},
		{"EA06_EagerStartCreatesATopLevelExecutionLocked", eager06},
		{"EA07_EagerStartBatchCreatesEachOnItsOwn", eager07},
	}
}

// eagerParent is a parent P locked by a fresh run (next version 2) and the
// batch creating a one-off join set with n children of ffqnChild and one
// of ffqnF, and a JoinNext; it returns the batch, the children's requests
// (ffqnChild ones first) and the join set.
func eagerParent(h *harness, n int) (p core.ExecutionId, batch []core.AppendRequest, children []core.CreateRequest, js core.JoinSetId) {
	h.t.Helper()
	p = h.create(withComp(compWF))
	h.mustLock(newExr(), newRun(), h.now().Add(time.Minute))
	js = mustJS("o:")
	now := h.now()
	batch = []core.AppendRequest{{CreatedAt: now, Event: jsc(js)}}
	c := p.NextLevel(js)
	for i := range n + 1 {
		if i > 0 {
			c = c.Incremented()
		}
		f := ffqnChild
		if i == n {
			f = ffqnF
		}
		batch = append(batch, core.AppendRequest{CreatedAt: now, Event: creqTo(js, c, f)})
		children = append(children, h.createReq(c, withFFQN(f), withParent(p, js)))
	}
	batch = append(batch, core.AppendRequest{CreatedAt: now, Event: jn(js, now.Add(time.Minute))})
	return p, batch, children, js
}

// eagerLock is a lock of up to n children of ffqnChild for (exr, run), expiring at exp.
func (h *harness) eagerLock(n uint32, exr core.ExecutorId, run core.RunId, exp core.Timestamp) core.EagerLock {
	req := h.lockReq(exr, run, exp)
	req.BatchSize = n
	return core.EagerLock{Request: req, FFQNs: []core.FunctionFqn{ffqnChild}}
}

func (h *harness) eagerCreator() core.EagerChildCreator {
	h.t.Helper()
	ec, ok := h.db.(core.EagerChildCreator)
	if !ok {
		h.t.Fatalf("%T does not implement core.EagerChildCreator", h.db)
	}
	return ec
}

// createEager writes batch to p at version 2 with children and locks and
// checks the next version.
func (h *harness) createEager(p core.ExecutionId, batch []core.AppendRequest, children []core.CreateRequest, locks ...core.EagerLock) []core.LockedExecution {
	h.t.Helper()
	next, locked, err := h.eagerCreator().AppendBatchCreateNewExecutionLocked(h.ctx, h.now(), batch, p, 2, children, nil, locks)
	h.wantNoErr("append_batch_create_new_execution with eager locks", err)
	if want := 2 + core.Version(len(batch)); next != want {
		h.t.Fatalf("next version %d, want %d", next, want)
	}
	return locked
}

// wantEagerLocked checks that le is c locked by lk at version 1.
func (h *harness) wantEagerLocked(le core.LockedExecution, c core.CreateRequest, lk core.EagerLock) {
	h.t.Helper()
	if le.ExecutionID != c.ExecutionID || le.NextVersion != 2 || le.FFQN != c.FFQN || le.Parent == nil || *le.Parent != *c.Parent {
		h.t.Fatalf("eager lock %s next %d ffqn %s parent %v, want %s next 2 ffqn %s parent %v",
			le.ExecutionID, le.NextVersion, le.FFQN, le.Parent, c.ExecutionID, c.FFQN, c.Parent)
	}
	h.wantJSON("eager Locked event", le.LockedEvent, *lk.Request.LockedEvent())
	h.wantEventsTail(c.ExecutionID, "created", "locked")
	h.wantNextVersion(c.ExecutionID, 2)
	h.wantState(c.ExecutionID, psLocked(lockedBy(lk.Request.ExecutorID, lk.Request.RunID), lk.Request.LockExpiresAt))
	h.wantLastEvent(c.ExecutionID, lk.Request.LockedEvent())
}

// E01: of three children of F_CHILD and one of F, an eager lock of two
// F_CHILD children creates the first two locked (answered as a lock
// answers them) and the others pending; a poll by ffqns or by digest then
// finds only the pending ones.
func eager01(h *harness) {
	h.forEachLockStrategy(func(h *harness, ls lockStrategy) {
		p, batch, children, js := eagerParent(h, 3)
		lk := h.eagerLock(2, newExr(), newRun(), h.now().Add(time.Second))
		locked := h.createEager(p, batch, children, lk)
		if len(locked) != 2 {
			h.t.Fatalf("eager write locked %d children, want 2", len(locked))
		}
		for i, le := range locked {
			h.wantEagerLocked(le, children[i], lk)
		}
		h.wantState(children[2].ExecutionID, psPendingAt(t0, nil))
		h.wantState(children[3].ExecutionID, psPendingAt(t0, nil))
		h.wantState(p, psBlocked(js, h.now().Add(time.Minute), false))
		got, err := ls.lock(h, h.lockReqN(10), ffqnChild, ffqnF)
		h.wantNoErr("lock "+ls.name, err)
		if ids := lockedIDs(got); len(ids) != 2 || ids[0] != children[2].ExecutionID || ids[1] != children[3].ExecutionID {
			h.t.Fatalf("a poll %s locked %v, want the two pending children %s %s", ls.name, ids, children[2].ExecutionID, children[3].ExecutionID)
		}
	})
}

func (h *harness) lockReqN(n uint32) core.LockRequest {
	req := h.lockReq(newExr(), newRun(), h.now().Add(time.Second))
	req.BatchSize = n
	return req
}

func lockedIDs(les []core.LockedExecution) []core.ExecutionId {
	out := make([]core.ExecutionId, len(les))
	for i, le := range les {
		out[i] = le.ExecutionID
	}
	return out
}

// E02: nobody runs an eagerly locked child; at its expiry the sweep
// handles it as any expired lock (RETRY0: finished timed out, its parent
// gets the response).
func eager02(h *harness) {
	p, batch, children, js := eagerParent(h, 1)
	lk := h.eagerLock(1, newExr(), newRun(), h.now().Add(time.Second))
	if locked := h.createEager(p, batch, children, lk); len(locked) != 1 {
		h.t.Fatalf("eager write locked %d children, want 1", len(locked))
	}
	if locks, _ := h.sweep(h.now()); locks != 0 {
		h.t.Fatalf("sweep before the expiry handled %d locks, want 0", locks)
	}
	at := h.advance(time.Second)
	if locks, _ := h.sweep(at); locks != 1 {
		h.t.Fatalf("sweep at the expiry handled %d expired locks, want 1", locks)
	}
	c := children[0].ExecutionID
	rv := core.RetFailure(core.FailureTimedOut, nil, nil)
	h.wantNextVersion(c, 2)
	h.wantLastEvent(c, finished(rv))
	pl := h.get(p)
	if len(pl.Responses) != 1 {
		h.t.Fatalf("parent has %d responses, want 1", len(pl.Responses))
	}
	h.wantJSON("parent response", pl.Responses[0], core.ResponseWithCursor{Cursor: 1,
		Event: core.JoinSetResponseEventOuter{CreatedAt: at, Event: childResp(js, c, 2, rv)}})
}

// E03: the same request again (its answer was lost) answers the same next
// version and the same locks, and writes nothing; once a child's lock
// expired and another run holds it, the retry no longer answers it.
func eager03(h *harness) {
	p, batch, children, _ := eagerParent(h, 2)
	lk := h.eagerLock(2, newExr(), newRun(), h.now().Add(time.Second))
	lk.Request.RetryConfig = retryForever(0)
	first := h.createEager(p, batch, children, lk)
	before := jsonOrErr(h.get(p))
	again := h.createEager(p, batch, children, lk)
	h.wantJSON("locks answered to the retry", again, first)
	if after := jsonOrErr(h.get(p)); after != before {
		h.t.Fatalf("the retry changed the parent:\n%s\nwant\n%s", after, before)
	}
	for i, le := range first {
		h.wantEagerLocked(le, children[i], lk)
	}
	// A different batch at the same version is a conflict, not a retry.
	other := append([]core.AppendRequest{}, batch...)
	other[len(other)-1] = core.AppendRequest{CreatedAt: h.now(), Event: jn(mustJS("o:"), h.now().Add(2*time.Minute))}
	_, _, err := h.eagerCreator().AppendBatchCreateNewExecutionLocked(h.ctx, h.now(), other, p, 2, children, nil, []core.EagerLock{lk})
	h.wantVersionConflict("another batch at a stale version", err, 2+core.Version(len(batch)), 2)
	// The locks expire (retried forever: pending again) and a poll takes one.
	h.advance(time.Second)
	h.sweep(h.now())
	h.wantStatus(children[1].ExecutionID, core.StatePendingAt, core.LifecycleActive)
	got, err := h.db.LockPendingByFFQNs(h.ctx, h.lockReqN(1), []core.FunctionFqn{ffqnChild})
	h.wantNoErr("lock the expired child", err)
	if len(got) != 1 {
		h.t.Fatalf("poll after the expiry locked %d, want 1", len(got))
	}
	late := h.createEager(p, batch, children, lk)
	if len(late) != 0 {
		h.t.Fatalf("a retry after the locks expired answered %v, want no lock", lockedIDs(late))
	}
}

// E04: at a wrong version nothing is written: no parent event, no child.
func eager04(h *harness) {
	p, batch, children, _ := eagerParent(h, 1)
	lk := h.eagerLock(1, newExr(), newRun(), h.now().Add(time.Second))
	before := jsonOrErr(h.get(p))
	_, locked, err := h.eagerCreator().AppendBatchCreateNewExecutionLocked(h.ctx, h.now(), batch, p, 3, children, nil, []core.EagerLock{lk})
	h.wantVersionConflict("eager write at a wrong version", err, 2, 3)
	if len(locked) != 0 {
		h.t.Fatalf("a refused write answered locks %v", lockedIDs(locked))
	}
	if after := jsonOrErr(h.get(p)); after != before {
		h.t.Fatalf("a refused write changed the parent")
	}
	for _, c := range children {
		if _, err := h.db.Get(h.ctx, c.ExecutionID); !errors.Is(err, core.ErrNotFound) {
			h.t.Fatalf("child %s after a refused write: %v, want not found", c.ExecutionID, err)
		}
	}
	// An expiry at or before the lock's time is refused before anything.
	bad := lk
	bad.Request.LockExpiresAt = bad.Request.CreatedAt
	_, _, err = h.eagerCreator().AppendBatchCreateNewExecutionLocked(h.ctx, h.now(), batch, p, 2, children, nil, []core.EagerLock{bad})
	h.wantValidation("eager lock expiring at its creation", err, "")
	if after := jsonOrErr(h.get(p)); after != before {
		h.t.Fatalf("a refused eager lock changed the parent")
	}
}

// E05: an eager lock takes only what a lock could: a pinned lock
// (ByComponentDigest) only children of its digest, never a paused child
// nor one scheduled later.
func eager05(h *harness) {
	p, batch, children, _ := eagerParent(h, 3)
	own := core.ComponentId{ComponentType: core.ComponentTypeActivity, ComponentDigest: mustDigest(0xaa)}
	children[0].ComponentID = own
	children[1].Paused = true
	children[1].ComponentID = own
	children[2].ScheduledAt = h.now().Add(time.Hour)
	children[2].ComponentID = own
	lk := h.eagerLock(3, newExr(), newRun(), h.now().Add(time.Second))
	lk.Request.ByComponentDigest = true
	lk.Request.ComponentID = core.ComponentId{ComponentType: core.ComponentTypeActivity, ComponentDigest: mustDigest(0xbb)}
	other := lk
	other.Request.ExecutorID, other.Request.RunID = newExr(), newRun()
	other.Request.ComponentID = own
	locked := h.createEager(p, batch, children, lk, other)
	if len(locked) != 1 {
		h.t.Fatalf("eager write locked %v, want only child 0 (by the lock of its digest)", lockedIDs(locked))
	}
	h.wantEagerLocked(locked[0], children[0], other)
	h.wantStatus(children[1].ExecutionID, core.StatePendingAt, core.LifecyclePaused)
	h.wantState(children[2].ExecutionID, psPendingAt(h.now().Add(time.Hour), nil))
}

// E06 (eager start, core.EagerCreator): a top-level create with an eager
// lock creates the execution locked ([Created, Locked], answered as a lock
// answers it), which no poll then finds; the same request again (a lost
// answer) answers the same lock and writes nothing; once the lock expired
// and another run holds it, the retry is the id's conflict. A create the
// lock does not take (scheduled later, paused, another function) is
// created as Create creates it, with no lock.
func eager06(h *harness) {
	ec, ok := h.db.(core.EagerCreator)
	if !ok {
		h.t.Fatalf("%T does not implement core.EagerCreator", h.db)
	}
	lk := h.eagerLock(1, newExr(), newRun(), h.now().Add(time.Second))
	lk.Request.RetryConfig = retryForever(0)
	req := h.createReq(newExecID(), withFFQN(ffqnChild))
	next, locked, err := ec.CreateLocked(h.ctx, req, lk)
	h.wantNoErr("create locked", err)
	if next != 2 || len(locked) != 1 {
		h.t.Fatalf("create locked answered next %d and %d locks, want 2 and 1", next, len(locked))
	}
	le := locked[0]
	if le.ExecutionID != req.ExecutionID || le.NextVersion != 2 || le.FFQN != ffqnChild || le.Parent != nil {
		h.t.Fatalf("eager start lock %s next %d ffqn %s parent %v, want %s next 2 ffqn %s no parent",
			le.ExecutionID, le.NextVersion, le.FFQN, le.Parent, req.ExecutionID, ffqnChild)
	}
	h.wantJSON("eager start Locked event", le.LockedEvent, *lk.Request.LockedEvent())
	h.wantEventsTail(req.ExecutionID, "created", "locked")
	h.wantState(req.ExecutionID, psLocked(lockedBy(lk.Request.ExecutorID, lk.Request.RunID), lk.Request.LockExpiresAt))
	got, err := h.db.LockPendingByFFQNs(h.ctx, h.lockReqN(10), []core.FunctionFqn{ffqnChild})
	h.wantNoErr("poll", err)
	if len(got) != 0 {
		h.t.Fatalf("a poll locked %v, want nothing: the execution was created locked", lockedIDs(got))
	}
	before := jsonOrErr(h.get(req.ExecutionID))
	next2, again, err := ec.CreateLocked(h.ctx, req, lk)
	h.wantNoErr("the same create locked again (lost answer)", err)
	if next2 != 2 {
		h.t.Fatalf("the retry answered next %d, want 2", next2)
	}
	h.wantJSON("lock answered to the retry", again, locked)
	if after := jsonOrErr(h.get(req.ExecutionID)); after != before {
		h.t.Fatalf("the retry changed the execution:\n%s\nwant\n%s", after, before)
	}
	// Another run's request for the same id is the id's conflict.
	other := h.eagerLock(1, newExr(), newRun(), h.now().Add(time.Second))
	_, _, err = ec.CreateLocked(h.ctx, req, other)
	h.wantErr("another run's create of the same id", err, core.ErrConflict)
	// The lock expires (retried forever: pending again), a poll takes it;
	// the retry no longer answers a lock.
	h.advance(time.Second)
	h.sweep(h.now())
	got, err = h.db.LockPendingByFFQNs(h.ctx, h.lockReqN(1), []core.FunctionFqn{ffqnChild})
	h.wantNoErr("lock the expired execution", err)
	if len(got) != 1 {
		h.t.Fatalf("poll after the expiry locked %d, want 1", len(got))
	}
	_, _, err = ec.CreateLocked(h.ctx, req, lk)
	h.wantErr("the retry after the lock expired and was taken", err, core.ErrConflict)
	// What the lock does not take is created pending, with no lock.
	lk2 := h.eagerLock(1, newExr(), newRun(), h.now().Add(time.Second))
	for name, r := range map[string]core.CreateRequest{
		"scheduled later":  h.createReq(newExecID(), withFFQN(ffqnChild), withSched(h.now().Add(time.Minute))),
		"another function": h.createReq(newExecID()),
		"paused":           h.createReq(newExecID(), withFFQN(ffqnChild), withPaused()),
	} {
		_, locked, err := ec.CreateLocked(h.ctx, r, lk2)
		h.wantNoErr("create locked, "+name, err)
		if len(locked) != 0 {
			h.t.Fatalf("%s: locked %v, want no lock", name, lockedIDs(locked))
		}
		if st := h.get(r.ExecutionID).PendingState.State; st == core.StateLocked {
			h.t.Fatalf("%s: the execution is locked", name)
		}
	}
}

// E07 (eager start in a batch, core.EagerBatchCreator): one lock creates
// several top-level executions, each answered on its own: the ones the
// lock takes are created locked ([Created, Locked], no poll finds them),
// one it does not take is created pending, an id that exists is that
// item's conflict and fails nothing else. The same batch again (a lost
// answer) answers the same locks; at the lock's expiry every lock expires
// as any lock does (a backend with lock leases indexes them through one).
func eager07(h *harness) {
	bc, ok := h.db.(core.EagerBatchCreator)
	if !ok {
		h.t.Fatalf("%T does not implement core.EagerBatchCreator", h.db)
	}
	taken := h.create(withFFQN(ffqnChild))
	lk := h.eagerLock(5, newExr(), newRun(), h.now().Add(time.Second))
	lk.Request.RetryConfig = retryForever(0)
	reqs := []core.CreateRequest{
		h.createReq(newExecID(), withFFQN(ffqnChild)),
		h.createReq(newExecID(), withFFQN(ffqnChild)),
		h.createReq(newExecID()), // another function: pending
		h.createReq(taken, withFFQN(ffqnChild)),
		h.createReq(newExecID(), withFFQN(ffqnChild)),
	}
	res, err := bc.CreateLockedMany(h.ctx, reqs, lk)
	h.wantNoErr("create locked many", err)
	if len(res) != len(reqs) {
		h.t.Fatalf("%d results for %d requests", len(res), len(reqs))
	}
	for _, i := range []int{0, 1, 4} {
		r := res[i]
		if r.Err != nil || r.Locked == nil || r.NextVersion != 2 {
			h.t.Fatalf("item %d: next %d locked %v err %v, want next 2, locked", i, r.NextVersion, r.Locked != nil, r.Err)
		}
		le := r.Locked
		if le.ExecutionID != reqs[i].ExecutionID || le.NextVersion != 2 || le.FFQN != ffqnChild || le.Parent != nil {
			h.t.Fatalf("item %d: lock %s next %d ffqn %s, want %s next 2 ffqn %s", i, le.ExecutionID, le.NextVersion, le.FFQN, reqs[i].ExecutionID, ffqnChild)
		}
		h.wantJSON("batch eager start Locked event", le.LockedEvent, *lk.Request.LockedEvent())
		h.wantEventsTail(reqs[i].ExecutionID, "created", "locked")
		h.wantState(reqs[i].ExecutionID, psLocked(lockedBy(lk.Request.ExecutorID, lk.Request.RunID), lk.Request.LockExpiresAt))
	}
	if r := res[2]; r.Err != nil || r.Locked != nil || r.NextVersion != 1 {
		h.t.Fatalf("item 2 (another function): next %d locked %v err %v, want created pending", r.NextVersion, r.Locked != nil, r.Err)
	}
	h.wantState(reqs[2].ExecutionID, psPendingAt(t0, nil))
	h.wantErr("item 3 (an id that exists)", res[3].Err, core.ErrConflict)
	got, err := h.db.LockPendingByFFQNs(h.ctx, h.lockReqN(10), []core.FunctionFqn{ffqnChild})
	h.wantNoErr("poll", err)
	if ids := lockedIDs(got); len(ids) != 1 || ids[0] != taken {
		h.t.Fatalf("a poll locked %v, want only %s: the batch created its executions locked", ids, taken)
	}
	again, err := bc.CreateLockedMany(h.ctx, reqs, lk)
	h.wantNoErr("the same batch again (lost answer)", err)
	for _, i := range []int{0, 1, 4} {
		if r := again[i]; r.Err != nil || r.Locked == nil {
			h.t.Fatalf("retried item %d: locked %v err %v, want the same lock", i, r.Locked != nil, r.Err)
		}
		h.wantJSON("lock answered to the retry", *again[i].Locked, *res[i].Locked)
	}
	h.wantErr("retried item 2 (created pending before)", again[2].Err, core.ErrConflict)
	// Nobody runs them: at the expiry each is pending again (retried
	// forever) and a poll takes all three.
	h.advance(time.Second)
	h.sweep(h.now())
	got, err = h.db.LockPendingByFFQNs(h.ctx, h.lockReqN(10), []core.FunctionFqn{ffqnChild})
	h.wantNoErr("lock the expired executions", err)
	if ids := lockedIDs(got); len(ids) != 3 {
		h.t.Fatalf("a poll after the expiry locked %v, want the 3 executions of the batch", ids)
	}
	// An invalid lock is the call's error.
	bad := lk
	bad.FFQNs = nil
	if _, err := bc.CreateLockedMany(h.ctx, []core.CreateRequest{h.createReq(newExecID(), withFFQN(ffqnChild))}, bad); err == nil {
		h.t.Fatal("a lock without ffqns was accepted")
	}
}
