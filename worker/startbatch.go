package worker

import (
	"context"
	"errors"
	"sync"

	"github.com/stela-dev/stela/core"
)

// Batched eager starts (issue 26): concurrent Submits of one lock group
// share create-locked requests with no timer delay. The first sends its
// own request at once; the submissions that arrive while a request of the
// group is in flight queue up (each holding the slot planEagerStart took)
// and go together in the next request when it returns — natural batching,
// bounded by the free slots (and the submissions that wait for one). A batch is created with one lock
// (core.EagerBatchCreator), so on DynamoDB three or more executions share
// one lock lease instead of an index entry each. Each Submit still
// returns its own outcome.

// maxStartBatch bounds the submissions of one create-locked request (the
// route's limit, wire.MaxCreateLocked).
const maxStartBatch = 100

// startQueues holds a startQueue per lock group.
type startQueues struct {
	mu sync.Mutex
	m  map[*lockGroup]*startQueue
}

func (qs *startQueues) of(g *lockGroup) *startQueue {
	qs.mu.Lock()
	defer qs.mu.Unlock()
	if qs.m == nil {
		qs.m = map[*lockGroup]*startQueue{}
	}
	q := qs.m[g]
	if q == nil {
		q = &startQueue{}
		qs.m[g] = q
	}
	return q
}

// startQueue is one lock group's eager starts: whether a create-locked
// request is in flight and the submissions waiting for the next one.
type startQueue struct {
	mu      sync.Mutex
	busy    bool
	waiting []*queuedStart
}

// queuedStart is a submission waiting in a startQueue with its plan (the
// slot it holds, or its wait for one); done is closed once err holds its
// outcome (its execution, if created locked, started).
type queuedStart struct {
	ctx  context.Context
	p    *eagerStart
	req  core.CreateRequest
	err  error
	done chan struct{}
}

// submitLocked creates req locked to this worker by p (eager start) and
// starts it; the slot p took (or its wait for one) is given back when the
// create fails. A request of p's lock group in flight queues req for the
// next one.
func (w *Worker) submitLocked(ctx context.Context, p *eagerStart, req core.CreateRequest) error {
	q := w.starts.of(p.g)
	q.mu.Lock()
	if q.busy {
		qs := &queuedStart{ctx: ctx, p: p, req: req, done: make(chan struct{})}
		q.waiting = append(q.waiting, qs)
		q.mu.Unlock()
		select {
		case <-qs.done:
			return qs.err
		case <-ctx.Done():
		}
		q.mu.Lock()
		for i, o := range q.waiting {
			if o == qs { // not sent yet: leave the queue
				q.waiting = append(q.waiting[:i], q.waiting[i+1:]...)
				q.mu.Unlock()
				w.unplanStart(p)
				return ctx.Err()
			}
		}
		q.mu.Unlock()
		<-qs.done // in flight: its outcome comes with its request's answer
		return qs.err
	}
	q.busy = true
	q.mu.Unlock()
	_, locked, err := p.ec.CreateLocked(ctx, req, p.lock)
	w.startedOne(p, locked, err)
	w.nextStarts(q, p)
	return err
}

// unplanStart gives back what planEagerStart took for p: its slot, or its
// place among the submissions waiting for one.
func (w *Worker) unplanStart(p *eagerStart) {
	if p.waits {
		w.startWaits.Add(-1)
	} else {
		w.slots.release(1)
	}
}

// startedOne ends the eager start p: what it took back when the create
// failed, else the execution run on p's slot (or its slot back when it was
// created pending) or, when p waits, on the first slot that frees.
func (w *Worker) startedOne(p *eagerStart, locked []core.LockedExecution, err error) {
	if err != nil {
		w.unplanStart(p)
		return
	}
	if p.waits {
		w.startWaits.Add(-1)
		w.startEager(&eagerPlan{borrow: true, lease: p.lease}, locked)
		return
	}
	w.startEager(&eagerPlan{slots: 1}, locked)
}

// nextStarts hands the submissions queued while a request of q was in
// flight to a goroutine that sends them, batch after batch, until none is
// left; with none, q is idle again.
func (w *Worker) nextStarts(q *startQueue, p *eagerStart) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiting) == 0 {
		q.busy = false
		return
	}
	go func() {
		for {
			q.mu.Lock()
			n := min(len(q.waiting), maxStartBatch)
			if n == 0 {
				q.busy = false
				q.mu.Unlock()
				return
			}
			batch := append([]*queuedStart(nil), q.waiting[:n]...)
			q.waiting = append(q.waiting[:0], q.waiting[n:]...)
			q.mu.Unlock()
			w.sendStarts(p, batch)
		}
	}()
}

// sendStarts creates batch locked to this worker by one lock of p's group
// (one create-locked request, core.EagerBatchCreator, when the connection
// has it) and answers each submission. The request does not end with the
// first submission's context: the others wait for it too (each may stop
// waiting on its own context).
func (w *Worker) sendStarts(p *eagerStart, batch []*queuedStart) {
	ctx := context.WithoutCancel(batch[0].ctx)
	if bc, ok := p.ec.(core.EagerBatchCreator); ok && len(batch) > 1 {
		reqs := make([]core.CreateRequest, len(batch))
		for i, qs := range batch {
			reqs[i] = qs.req
		}
		lock := core.EagerLock{Request: w.request(p.g, len(batch)), FFQNs: p.g.ffqns}
		res, err := bc.CreateLockedMany(ctx, reqs, lock)
		if err == nil && len(res) != len(batch) {
			err = errStartAnswers
		}
		if err == nil {
			w.startBatches.Add(1)
		}
		for i, qs := range batch {
			var locked []core.LockedExecution
			ierr := err
			if err == nil {
				ierr = res[i].Err
				if res[i].Locked != nil {
					locked = []core.LockedExecution{*res[i].Locked}
				}
			}
			w.startedOne(qs.p, locked, ierr)
			qs.err = ierr
			close(qs.done)
		}
		return
	}
	for _, qs := range batch {
		lock := core.EagerLock{Request: w.request(p.g, 1), FFQNs: p.g.ffqns}
		_, locked, err := p.ec.CreateLocked(ctx, qs.req, lock)
		w.startedOne(qs.p, locked, err)
		qs.err = err
		close(qs.done)
	}
}

// errStartAnswers is a batch of eager starts answered with another
// number of results than requests.
var errStartAnswers = errors.New("worker: create-locked batch answered another number of results than requests")
