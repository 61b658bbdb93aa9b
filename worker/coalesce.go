package worker

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/core"
)

// manyAppender is the HTTP transport's many-write: appends to (or finishes
// and responds from) many executions in one request, each item atomic and
// answered on its own (client.Client.AppendMany).
type manyAppender interface {
	AppendMany(ctx context.Context, items []client.AppendItem) ([]client.AppendResult, error)
}

// maxManyItems is the most items of one many-write. The server runs 8
// items of a many-write at once (and accepts up to wire.MaxAppendMany):
// in a larger request the first items would wait for the last ones' commits
// (W1 measured: 100 items per request, 2 in flight, raised the activities'
// p50 latency from 26 to 38 ms for no gain in throughput or CPU).
const maxManyItems = 8

// maxManyInFlight bounds a worker's write requests in flight: the writes
// of its runs that arrive while they are on the wire wait and go together
// in the next request.
const maxManyInFlight = 8

// coalescer sends the result writes of a worker's runs (appends,
// Finished with the response to a parent) over HTTP: alone, by their own
// route, while fewer than maxManyInFlight requests are on the wire;
// otherwise they queue, and each request that returns takes the queue
// along (up to maxManyItems) as one many-write. Under load a worker thus pays one request (and
// one connection) for many runs' writes instead of one each; when idle,
// nothing changes. Each caller still gets its own write's outcome, the
// error its single route would have answered.
type coalescer struct {
	conn Conn
	many manyAppender
	mu   sync.Mutex
	// queue holds the writes not sent yet; inflight counts the senders.
	queue    []*pendingWrite
	inflight int
	// single is set when the server has no many-write route (an older
	// server): every write then goes by its own route.
	single atomic.Bool
	// timeout bounds one request (the worker's ioContext bound).
	timeout func() (context.Context, context.CancelFunc)
}

// pendingWrite is one write waiting for its outcome.
type pendingWrite struct {
	item client.AppendItem
	// one: the write is a single event appended by Conn.Append (the
	// item's CurrentTime is the event's CreatedAt).
	one  bool
	next core.Version
	err  error
	done chan struct{}
}

// newCoalescer returns a coalescer over conn, or nil when conn has no
// many-write (in-process transports: nothing to save).
func newCoalescer(conn Conn, timeout func() (context.Context, context.CancelFunc)) *coalescer {
	m, ok := conn.(manyAppender)
	if !ok {
		return nil
	}
	return &coalescer{conn: conn, many: m, timeout: timeout}
}

// write performs p's write and returns its next version, as its own route
// would. ctx bounds the wait.
func (c *coalescer) write(ctx context.Context, p *pendingWrite) (core.Version, error) {
	if c.single.Load() {
		return c.sendOne(ctx, p)
	}
	p.done = make(chan struct{})
	c.mu.Lock()
	c.queue = append(c.queue, p)
	if c.inflight < maxManyInFlight {
		c.inflight++
		go c.drain()
	}
	c.mu.Unlock()
	select {
	case <-p.done:
		return p.next, p.err
	case <-ctx.Done():
	}
	c.mu.Lock()
	for i, q := range c.queue {
		if q == p { // not sent: withdrawn
			c.queue = append(c.queue[:i], c.queue[i+1:]...)
			c.mu.Unlock()
			return 0, ctx.Err()
		}
	}
	c.mu.Unlock()
	// On the wire: like a single request that timed out, its outcome is
	// unknown to the caller.
	return 0, ctx.Err()
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

// send writes batch: one write by its own route, several as a many-write
// (one by one if the server refuses the request as a whole).
func (c *coalescer) send(batch []*pendingWrite) {
	ctx, cancel := c.timeout()
	defer cancel()
	if len(batch) == 1 || c.single.Load() {
		for _, p := range batch {
			p.next, p.err = c.sendOne(ctx, p)
			close(p.done)
		}
		return
	}
	items := make([]client.AppendItem, len(batch))
	for i, p := range batch {
		items[i] = p.item
	}
	results, err := c.many.AppendMany(ctx, items)
	var ce *client.Error
	if errors.As(err, &ce) && ce.Status >= 400 && ce.Status < 500 &&
		ce.Status != http.StatusUnauthorized && ce.Status != http.StatusForbidden && ce.Status != http.StatusTooManyRequests {
		// The request as a whole was refused (no such route on an older
		// server, too large, an item the body check rejects): each write
		// gets its own route's answer.
		if ce.Status == http.StatusNotFound || ce.Status == http.StatusMethodNotAllowed {
			c.single.Store(true)
		}
		for _, p := range batch {
			p.next, p.err = c.sendOne(ctx, p)
			close(p.done)
		}
		return
	}
	for i, p := range batch {
		if err != nil {
			p.err = err
		} else {
			p.next, p.err = results[i].NextVersion, results[i].Err
		}
		close(p.done)
	}
}

// sendOne writes p by its own route.
func (c *coalescer) sendOne(ctx context.Context, p *pendingWrite) (core.Version, error) {
	it := p.item
	switch {
	case p.one:
		return c.conn.Append(ctx, it.ExecutionID, it.Version, it.Batch[0])
	case it.Response != nil:
		return c.conn.AppendBatchRespondToParent(ctx,
			core.AppendEventsToExecution{ExecutionID: it.ExecutionID, Version: it.Version, Batch: it.Batch}, *it.Response, it.CurrentTime)
	}
	return c.conn.AppendBatch(ctx, it.CurrentTime, it.Batch, it.ExecutionID, it.Version)
}

// appendBatch appends batch to id at version (Conn.AppendBatch), coalesced
// with other runs' writes over HTTP.
func (w *Worker) appendBatch(ctx context.Context, now core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, version core.Version) (core.Version, error) {
	if w.writes == nil {
		return w.conn.AppendBatch(ctx, now, batch, id, version)
	}
	return w.writes.write(ctx, &pendingWrite{item: client.AppendItem{ExecutionID: id, Version: version, Batch: batch, CurrentTime: now}})
}

// appendOne appends one event (Conn.Append: at its own CreatedAt),
// coalesced like appendBatch.
func (w *Worker) appendOne(ctx context.Context, id core.ExecutionId, version core.Version, req core.AppendRequest) (core.Version, error) {
	if w.writes == nil {
		return w.conn.Append(ctx, id, version, req)
	}
	return w.writes.write(ctx, &pendingWrite{one: true,
		item: client.AppendItem{ExecutionID: id, Version: version, Batch: []core.AppendRequest{req}, CurrentTime: req.CreatedAt}})
}

// respondToParent appends a child's batch with its response to the parent
// (Conn.AppendBatchRespondToParent), coalesced like appendBatch.
func (w *Worker) respondToParent(ctx context.Context, events core.AppendEventsToExecution, resp core.AppendResponseToExecution, now core.Timestamp) (core.Version, error) {
	if w.writes == nil {
		return w.conn.AppendBatchRespondToParent(ctx, events, resp, now)
	}
	return w.writes.write(ctx, &pendingWrite{item: client.AppendItem{ExecutionID: events.ExecutionID, Version: events.Version,
		Batch: events.Batch, CurrentTime: now, Response: &resp}})
}
