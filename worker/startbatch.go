package worker

import (
	"context"
	"errors"
	"sync"

	"github.com/stela-dev/stela/core"
)

// Batched eager starts (issue 26): concurrent Submits of one lock group
// share create-locked requests with no timer delay. Up to
// maxStartsInFlight requests of a group are in flight at once, each sent as
// soon as its Submit comes; the submissions that arrive while that many are
// in flight queue up (each holding the slot planEagerStart took) and go
// together in the next request when one returns — natural batching,
// bounded by the free slots (and the submissions that wait for one). More
// than one in flight keeps a Submit from waiting for another's round trip
// before its own (measured on `stela dev`, 8 submitters: +10–20 % W1
// throughput at 4 in flight against 1, issue 23); under a burst the
// batches still form. A batch is created with one lock
// (core.EagerBatchCreator), so on DynamoDB three or more executions share
// one lock lease instead of an index entry each. Each Submit still
// returns its own outcome.

// maxStartBatch bounds the submissions of one create-locked request (the
// route's limit, wire.MaxCreateLocked).
const maxStartBatch = 100

// maxStartsInFlight bounds the create-locked requests of one lock group in
// flight at once (startQueues.limit overrides it in tests).
const maxStartsInFlight = 4

// startQueues holds a startQueue per lock group.
type startQueues struct {
	mu    sync.Mutex
	m     map[*lockGroup]*startQueue
	limit int // requests in flight per group; 0: maxStartsInFlight
}

func (qs *startQueues) of(g *lockGroup) *startQueue {
	qs.mu.Lock()
	defer qs.mu.Unlock()
	if qs.m == nil {
		qs.m = map[*lockGroup]*startQueue{}
	}
	q := qs.m[g]
	if q == nil {
		q = &startQueue{limit: qs.limit}
		if q.limit <= 0 {
			q.limit = maxStartsInFlight
		}
		qs.m[g] = q
	}
	return q
}

// startQueue is one lock group's eager starts: how many create-locked
// requests are in flight and the submissions waiting for the next one.
type startQueue struct {
	mu       sync.Mutex
	limit    int // requests in flight at most
	inflight int // requests in flight, each sending its submissions' batches until none waits
	waiting  []*queuedStart
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
// create fails. With q.limit requests of p's lock group in flight, req
// waits for the next one.
func (w *Worker) submitLocked(ctx context.Context, p *eagerStart, req core.CreateRequest) error {
	q := w.starts.of(p.g)
	q.mu.Lock()
	if q.inflight >= q.limit {
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
	q.inflight++
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
		w.giveWaits(1)
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
		w.giveWaits(1)
		w.startEager(&eagerPlan{borrow: true, lease: p.lease}, locked)
		return
	}
	w.startEager(&eagerPlan{slots: 1}, locked)
}

// nextStarts hands the submissions queued while q's requests were in
// flight to a goroutine that sends them, batch after batch, until none is
// left; with none, the request that just returned leaves q's count.
func (w *Worker) nextStarts(q *startQueue, p *eagerStart) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiting) == 0 {
		q.inflight--
		return
	}
	go func() {
		for {
			q.mu.Lock()
			n := min(len(q.waiting), maxStartBatch)
			if n == 0 {
				q.inflight--
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
