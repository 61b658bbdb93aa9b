package worker

import (
	"context"

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

// eagerPlan is what one create-children write asks to lock: the locks and
// the slots taken for them.
type eagerPlan struct {
	ec    core.EagerChildCreator
	locks []core.EagerLock
	slots int
}

// planEager takes free slots for the children of children this worker
// would run and returns the locks to ask for them; nil when eager dispatch
// is off, the connection cannot lock eagerly, the worker is stopping, no
// child is of a registered function or no slot is free.
func (w *Worker) planEager(children []core.CreateRequest) *eagerPlan {
	gp := w.eager.Load()
	if gp == nil || w.stopping == nil || w.stopping.Err() != nil {
		return nil
	}
	ec, ok := w.conn.(core.EagerChildCreator)
	if !ok {
		return nil
	}
	now := w.clock.Now()
	var order []*lockGroup
	count := map[*lockGroup]int{}
	want := 0
	for i := range children {
		c := &children[i]
		g := (*gp)[c.FFQN]
		if g == nil || c.Paused || core.IsSignalStub(*c) || c.ScheduledAt.After(now) {
			continue
		}
		if w.opts.Pinned && c.ComponentID.ComponentDigest != g.component.ComponentDigest {
			continue
		}
		if count[g] == 0 {
			order = append(order, g)
		}
		count[g]++
		want++
	}
	if want == 0 {
		return nil
	}
	n := w.slots.tryAcquire(want)
	if n == 0 {
		return nil
	}
	p := &eagerPlan{ec: ec, slots: n}
	left := n
	for _, g := range order {
		k := min(count[g], left)
		if k == 0 {
			break
		}
		left -= k
		req := w.request(g, k)
		p.locks = append(p.locks, core.EagerLock{Request: req, FFQNs: g.ffqns})
	}
	return p
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
	if len(locked) > p.slots { // never more than asked; run only what has a slot
		for _, le := range locked[p.slots:] {
			w.release(le.ExecutionID, le.NextVersion, "no free slot")
		}
		locked = locked[:p.slots]
	}
	w.slots.release(p.slots - len(locked))
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
