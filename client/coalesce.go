package client

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stela-dev/stela/core"
)

// maxManyItems is the most items of one many-write. The server runs 8
// items of a many-write at once (and accepts up to wire.MaxAppendMany):
// in a larger request the first items would wait for the last ones' commits
// (W1 measured: 100 items per request, 2 in flight, raised the activities'
// p50 latency from 26 to 38 ms for no gain in throughput or CPU).
const maxManyItems = 8

// minManyInFlight is how many write requests a client keeps in flight
// before the writes queue: one that arrives while that many are on the
// wire waits and goes with the others queued in the next request. More
// requests start (up to maxManyInFlight) only for a full many-write
// (maxManyItems queued), as under a burst of finishes.
//
// Measured on `stela dev` (issue 23, A/B pairs, 3 rounds): 2 against 8 —
// W1 activities at concurrency 8 and 64 +4–15 % throughput at 4–13 % less
// CPU per step; W2 at concurrency 8 p50 −6 to −10 %, 5–17 % less CPU;
// W1 workflows +4–6 %; W2 at 64 and W3 unchanged. A flat bound of 2 made
// W2 at 64 slower (its 64 finishes came in 2 requests at a time).
const minManyInFlight = 2

// maxManyInFlight bounds a client's write requests in flight.
const maxManyInFlight = 8

// routes are the single write routes and the many-write a coalescer sends
// by (the Client's own, uncoalesced).
type routes interface {
	appendRoute(ctx context.Context, id core.ExecutionId, version core.Version, req core.AppendRequest) (core.Version, error)
	appendBatchRoute(ctx context.Context, currentTime core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, version core.Version) (core.Version, error)
	respondToParentRoute(ctx context.Context, events core.AppendEventsToExecution, resp core.AppendResponseToExecution, currentTime core.Timestamp) (core.Version, core.ResponseCursor, error)
	AppendMany(ctx context.Context, items []AppendItem) ([]AppendResult, error)
}

// coalescer sends the version-guarded writes of a Client (Append,
// AppendBatch, AppendBatchRespondToParent): alone, by their own route,
// while fewer than minManyInFlight requests are on the wire; otherwise they
// queue, and each request that returns takes the queue along (up to
// maxManyItems) as one many-write (AppendMany); a full many-write queued
// starts a request of its own, up to maxManyInFlight. Under load a worker thus
// pays one request (and one connection) for many runs' writes instead of
// one each; when idle, nothing changes. Each caller still gets its own
// write's outcome, the error its single route would have answered.
type coalescer struct {
	routes routes
	mu     sync.Mutex
	// queue holds the writes not sent yet; inflight counts the senders.
	queue    []*pendingWrite
	inflight int
	// single is set when the server has no many-write route (an older
	// server): every write then goes by its own route.
	single atomic.Bool
}

// pendingWrite is one write waiting for its outcome.
type pendingWrite struct {
	item AppendItem
	// one: the write is a single event appended by Append (the item's
	// CurrentTime is the event's CreatedAt).
	one bool
	// ctx is the caller's: its values and deadline bound the request that
	// carries the write, its cancellation only the caller's wait.
	ctx    context.Context
	next   core.Version
	cursor core.ResponseCursor // a response's cursor in the parent, when the server told
	err    error
	done   chan struct{}
}

func newCoalescer(r routes) *coalescer { return &coalescer{routes: r} }

// write performs p's write and returns its next version (and, for a
// response to a parent, the response's cursor when the server told), as
// its own route would. ctx bounds the wait.
func (c *coalescer) write(ctx context.Context, p *pendingWrite) (core.Version, core.ResponseCursor, error) {
	p.ctx = ctx
	if c.single.Load() {
		c.sendOne(ctx)(p)
		return p.next, p.cursor, p.err
	}
	p.done = make(chan struct{})
	c.mu.Lock()
	c.queue = append(c.queue, p)
	if c.inflight < minManyInFlight || (c.inflight < maxManyInFlight && len(c.queue) >= maxManyItems) {
		c.inflight++
		go c.drain()
	}
	c.mu.Unlock()
	select {
	case <-p.done:
		return p.next, p.cursor, p.err
	case <-ctx.Done():
	}
	c.mu.Lock()
	for i, q := range c.queue {
		if q == p { // not sent: withdrawn
			c.queue = append(c.queue[:i], c.queue[i+1:]...)
			c.mu.Unlock()
			return 0, 0, ctx.Err()
		}
	}
	c.mu.Unlock()
	// On the wire: like a single request that timed out, its outcome is
	// unknown to the caller.
	return 0, 0, ctx.Err()
}

// drain sends the queue until it is empty.
func (c *coalescer) drain() {
	for {
		c.mu.Lock()
		n := min(len(c.queue), maxManyItems)
		if n == 0 {
			c.inflight--
			c.mu.Unlock()
			return
		}
		batch := make([]*pendingWrite, n)
		copy(batch, c.queue)
		c.queue = append(c.queue[:0], c.queue[n:]...)
		c.mu.Unlock()
		c.send(batch)
	}
}

// requestContext is the context of a request carrying batch: not cancelled
// with any caller's (a write on the wire is let finish), with the values of
// the first and the latest of their deadlines (none if one has none).
func requestContext(batch []*pendingWrite) (context.Context, context.CancelFunc) {
	ctx := context.WithoutCancel(batch[0].ctx)
	var last time.Time
	for _, p := range batch {
		d, ok := p.ctx.Deadline()
		if !ok {
			return ctx, func() {}
		}
		if d.After(last) {
			last = d
		}
	}
	return context.WithDeadline(ctx, last)
}

// send writes batch: one write by its own route, several as a many-write
// (one by one if the server refuses the request as a whole).
func (c *coalescer) send(batch []*pendingWrite) {
	ctx, cancel := requestContext(batch)
	defer cancel()
	one := c.sendOne(ctx)
	if len(batch) == 1 || c.single.Load() {
		for _, p := range batch {
			one(p)
			close(p.done)
		}
		return
	}
	items := make([]AppendItem, len(batch))
	for i, p := range batch {
		items[i] = p.item
	}
	results, err := c.routes.AppendMany(ctx, items)
	var ce *Error
	if errors.As(err, &ce) && ce.Status >= 400 && ce.Status < 500 &&
		ce.Status != http.StatusUnauthorized && ce.Status != http.StatusForbidden && ce.Status != http.StatusTooManyRequests {
		// The request as a whole was refused (no such route on an older
		// server, too large, an item the body check rejects): each write
		// gets its own route's answer.
		if ce.Status == http.StatusNotFound || ce.Status == http.StatusMethodNotAllowed {
			c.single.Store(true)
		}
		for _, p := range batch {
			one(p)
			close(p.done)
		}
		return
	}
	for i, p := range batch {
		if err != nil {
			p.err = err
		} else {
			p.next, p.cursor, p.err = results[i].NextVersion, results[i].ResponseCursor, results[i].Err
		}
		close(p.done)
	}
}

// sendOne returns the function that writes a write by its own route under
// ctx, setting its outcome.
func (c *coalescer) sendOne(ctx context.Context) func(p *pendingWrite) {
	return func(p *pendingWrite) {
		it := p.item
		switch {
		case p.one:
			p.next, p.err = c.routes.appendRoute(ctx, it.ExecutionID, it.Version, it.Batch[0])
		case it.Response != nil:
			p.next, p.cursor, p.err = c.routes.respondToParentRoute(ctx,
				core.AppendEventsToExecution{ExecutionID: it.ExecutionID, Version: it.Version, Batch: it.Batch}, *it.Response, it.CurrentTime)
		default:
			p.next, p.err = c.routes.appendBatchRoute(ctx, it.CurrentTime, it.Batch, it.ExecutionID, it.Version)
		}
	}
}
