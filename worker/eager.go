package worker

import (
	"context"
	"time"

	"github.com/stela-dev/stela/core"
)

// Eager dispatch (docs/worker.md "Eager dispatch"): when a workflow creates
// children whose function this worker serves and slots are free, its
// create-children write asks the store to create up to that many of them
// already locked to this worker (core.EagerLock), in the same commit; the
// answer carries them as a lock would, and they start at once, with no
// lock request and no poll. Each lock group gets the lock its own poll
// would ask (component, retry policy, lease; a pinned worker only its
// digest). A lock the store granted is run, or released when the worker is
// stopping; a lock whose answer never arrived expires and the store
// retries the child, as after any lost lock.

// eagerGroups maps the registered functions to their lock groups while
// the worker runs (begin), nil otherwise.
type eagerGroups map[core.FunctionFqn]*lockGroup

// setEagerGroups records gs for eager dispatch (nil: none).
func (w *Worker) setEagerGroups(gs []*lockGroup) {
	if gs == nil || w.opts.NoEagerDispatch {
		w.eager.Store(nil)
		return
	}
	m := eagerGroups{}
	for _, g := range gs {
		for _, f := range g.ffqns {
			m[f] = g
		}
	}
	w.eager.Store(&m)
}

// eagerPlan is what one create-children write asks to lock: the locks, the
// slots taken for them and whether one more child waits for the slot its
// parent is about to give up (borrow).
type eagerPlan struct {
	ec     core.EagerChildCreator
	locks  []core.EagerLock
	slots  int
	borrow bool
	waits  int // places of Worker.startWaits taken (takeWaits)
	lease  time.Duration
}

// planEager takes free slots for the children of children this worker
// would run and returns the locks to ask for them; nil when eager dispatch
// is off, the connection cannot lock eagerly, the worker is stopping, no
// child is of a registered function or no slot is free.
//
// A batch that ends with a JoinNext is followed by the workflow waiting,
// which gives its slot up (awaitInMemory, park): one more child than the
// free slots is then asked for, to run on that slot (the W1 shape, a
// workflow calling one activity, on a busy worker).
func (w *Worker) planEager(children []core.CreateRequest, batch []core.AppendRequest) *eagerPlan {
	gp := w.eager.Load()
	if gp == nil || w.stopping == nil || w.stopping.Err() != nil {
		return nil
	}
	ec, ok := w.conn.(core.EagerChildCreator)
	if !ok {
		return nil
	}
	now := w.clock.Now()
	type share struct {
		g *lockGroup
		n int
	}
	var shares []share // the groups of the children, in order of appearance
	want := 0
	for i := range children {
		c := &children[i]
		g := (*gp)[c.FFQN]
		if g == nil || c.Paused || core.IsSignalStub(*c) || c.ScheduledAt.After(now) ||
			(w.opts.Pinned && c.ComponentID.ComponentDigest != g.component.ComponentDigest) {
			continue
		}
		want++
		j := 0
		for j < len(shares) && shares[j].g != g {
			j++
		}
		if j == len(shares) {
			shares = append(shares, share{g: g})
		}
		shares[j].n++
	}
	n := w.slots.tryAcquire(want)
	borrow := n < want && endsWithJoinNext(batch)
	left := n
	if borrow {
		left++
	}
	waits := 0
	if !w.opts.NoPrefetch && left < want {
		waits = w.takeWaits(want - left) // prefetched: they wait for a slot
	}
	left += waits
	if left == 0 {
		return nil
	}
	p := &eagerPlan{ec: ec, slots: n, borrow: borrow, waits: waits}
	for _, sh := range shares {
		k := min(sh.n, left)
		if k == 0 {
			break
		}
		left -= k
		p.locks = append(p.locks, core.EagerLock{Request: w.request(sh.g, k), FFQNs: sh.g.ffqns})
		if l := sh.g.lease(w.opts.LockExpiry); p.lease == 0 || l < p.lease {
			p.lease = l
		}
	}
	return p
}

// endsWithJoinNext reports whether batch ends with a JoinNext (the
// workflow waits next).
func endsWithJoinNext(batch []core.AppendRequest) bool {
	if len(batch) == 0 {
		return false
	}
	h, ok := batch[len(batch)-1].Event.(*core.HistoryEventRequest)
	if !ok {
		return false
	}
	_, ok = h.Event.(*core.JoinNext)
	return ok
}

// write is the create-children write of p: the next version and the
// children created locked.
func (p *eagerPlan) write(ctx context.Context, now core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, version core.Version, children []core.CreateRequest) (core.Version, []core.LockedExecution, error) {
	return p.ec.AppendBatchCreateNewExecutionLocked(ctx, now, batch, id, version, children, nil, p.locks)
}

// startEager runs the children the store locked to this worker (each on
// one of the slots p took; the others are given back) or, when the worker
// is stopping, releases them at once so that another worker takes them.
func (w *Worker) startEager(p *eagerPlan, locked []core.LockedExecution) {
	held := min(len(locked), p.slots)
	w.slots.release(p.slots - held)
	extra := locked[held:]
	locked = locked[:held]
	if len(extra) > 0 && p.borrow {
		w.startBorrowed(extra[0], p.lease)
		extra = extra[1:]
	}
	k := min(len(extra), p.waits)
	w.giveWaits(p.waits - k)
	for _, le := range extra[:k] {
		w.startWaiting(le, p.lease, true, true)
	}
	for _, le := range extra[k:] { // never more than asked
		w.release(le.ExecutionID, le.NextVersion, reasonNoSlot)
	}
	for _, le := range locked {
		if w.stopping.Err() != nil {
			w.release(le.ExecutionID, le.NextVersion, reasonExecutorClose)
			w.slots.release(1)
			continue
		}
		w.eagerRuns.Add(1)
		w.start(le)
	}
}

// reasonNoSlot is the Unlocked reason of an eager lock the worker has no
// slot for.
const reasonNoSlot = "no free slot"

// startBorrowed runs le on the slot its parent gives up when it waits:
// it waits for a free slot (counted as running meanwhile, so RunUntilIdle
// does not end), for at most half the lease; if none frees, or the worker
// stops, the lock is released so that any worker takes the child.
func (w *Worker) startBorrowed(le core.LockedExecution, lease time.Duration) {
	w.startWaiting(le, lease, false, true)
}

// startWaiting is startBorrowed; with counted, le holds one of the places
// of Worker.startWaits (takeWaits), given back once it has a slot or is
// released; eager counts its run in Stats.Eager.
func (w *Worker) startWaiting(le core.LockedExecution, lease time.Duration, counted, eager bool) {
	w.inflight.Add(1)
	w.wg.Add(1)
	w.adopt(le) // its parent may wait for it in memory meanwhile (inbox.go)
	go func() {
		defer func() {
			w.inflight.Add(-1)
			w.wg.Done()
			// A RunUntilIdle pass that saw it in flight waits for this
			// (a release with no run would otherwise never wake it).
			select {
			case w.finished <- struct{}{}:
			default:
			}
		}()
		ctx, cancel := context.WithTimeout(w.stopping, max(lease/2, time.Millisecond))
		_, err := w.slots.acquire(ctx, 1)
		cancel()
		if counted {
			w.giveWaits(1)
		}
		if err != nil {
			reason := reasonNoSlot
			if w.stopping.Err() != nil {
				reason = reasonExecutorClose
			}
			w.disown(le.Parent, le.ExecutionID)
			w.release(le.ExecutionID, le.NextVersion, reason)
			return
		}
		if w.stopping.Err() != nil {
			w.slots.release(1)
			w.disown(le.Parent, le.ExecutionID)
			w.release(le.ExecutionID, le.NextVersion, reasonExecutorClose)
			return
		}
		if eager {
			w.eagerRuns.Add(1)
		}
		w.start(le)
	}()
}

// maxBeginWait bounds how long a Submit waits for a Run that is beginning
// (planEagerStart) before it creates the execution pending.
const maxBeginWait = 2 * time.Second

// eagerStart is the lock a Submit asks for (eager start) and the
// connection that takes it.
type eagerStart struct {
	ec   core.EagerCreator
	lock core.EagerLock
	// waits is set when no slot was free: the execution is created locked
	// all the same and runs on the first slot that frees (startBorrowed),
	// one of Options.Concurrency such waits at most (Worker.startWaits).
	waits bool
	lease time.Duration // the lock's lease (the wait for a slot takes at most half)
	g     *lockGroup    // the lock group (startbatch.go queues by it)
}

// planEagerStart takes a free slot for req when this worker, running,
// serves req's function (a pinned worker: of req's digest) and its
// connection can create locked (core.EagerCreator), and returns the lock
// to create req with: the lock its own poll would ask. nil otherwise (the
// execution is created pending and found by a poll, as without eager
// dispatch). The caller gives the slot back if the create fails.
func (w *Worker) planEagerStart(ctx context.Context, req *core.CreateRequest) *eagerStart {
	gp := w.eager.Load()
	if ch := w.starting.Load(); gp == nil && ch != nil {
		// Run is beginning (recording the deployment): wait for it rather
		// than create pending what its lock loop would poll for next.
		t := time.NewTimer(maxBeginWait)
		select {
		case <-*ch:
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		gp = w.eager.Load()
	}
	if gp == nil || w.stopping == nil || w.stopping.Err() != nil {
		return nil
	}
	g := (*gp)[req.FFQN]
	if g == nil || (w.opts.Pinned && req.ComponentID.ComponentDigest != g.component.ComponentDigest) {
		return nil
	}
	ec, ok := w.conn.(core.EagerCreator)
	if !ok {
		return nil
	}
	p := &eagerStart{ec: ec, lock: core.EagerLock{Request: w.request(g, 1), FFQNs: g.ffqns}, lease: g.lease(w.opts.LockExpiry), g: g}
	if w.slots.tryAcquire(1) == 1 {
		return p
	}
	if w.takeWaits(1) == 0 {
		return nil
	}
	p.waits = true
	return p
}

// takeWaits takes up to k of the places of Worker.startWaits (at most
// Options.Concurrency locked executions waiting for a slot) and returns
// how many it took; giveWaits gives places back.
func (w *Worker) takeWaits(k int) int {
	for k > 0 {
		n := w.startWaits.Load()
		t := min(int64(k), int64(w.opts.Concurrency)-n)
		if t <= 0 {
			return 0
		}
		if w.startWaits.CompareAndSwap(n, n+t) {
			return int(t)
		}
	}
	return 0
}

func (w *Worker) giveWaits(n int) {
	if n > 0 {
		w.startWaits.Add(int64(-n))
	}
}
