package client

import (
	"context"
	"errors"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
)

// manyConn is a server's routes with a many-write whose single writes wait
// at gate; it records every request.
type manyConn struct {
	gate    chan struct{}
	entered chan struct{} // a single write reached the gate
	// manyErr, if set, answers every many-write; conflict names the
	// execution whose item is answered with a version conflict.
	manyErr  error
	conflict core.ExecutionId
	// manyGate, if set, holds every many-write (after recording it) until
	// closed.
	manyGate chan struct{}

	mu      sync.Mutex
	singles []core.ExecutionId
	manys   [][]core.ExecutionId
}

func (c *manyConn) single(id core.ExecutionId, v core.Version, n int) (core.Version, error) {
	if c.gate != nil {
		c.entered <- struct{}{}
		<-c.gate
	}
	c.mu.Lock()
	c.singles = append(c.singles, id)
	c.mu.Unlock()
	if id == c.conflict {
		return 0, &core.VersionConflictError{Expected: v + 1, Requested: v}
	}
	return v + core.Version(n), nil
}

func (c *manyConn) appendBatchRoute(_ context.Context, _ core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, v core.Version) (core.Version, error) {
	return c.single(id, v, len(batch))
}

func (c *manyConn) appendRoute(_ context.Context, id core.ExecutionId, v core.Version, _ core.AppendRequest) (core.Version, error) {
	return c.single(id, v, 1)
}

func (c *manyConn) respondToParentRoute(_ context.Context, ev core.AppendEventsToExecution, _ core.AppendResponseToExecution, _ core.Timestamp) (core.Version, core.ResponseCursor, error) {
	next, err := c.single(ev.ExecutionID, ev.Version, len(ev.Batch))
	return next, 0, err
}

func (c *manyConn) AppendMany(_ context.Context, items []AppendItem) ([]AppendResult, error) {
	ids := make([]core.ExecutionId, len(items))
	out := make([]AppendResult, len(items))
	for i, it := range items {
		ids[i] = it.ExecutionID
		out[i].NextVersion = it.Version + core.Version(len(it.Batch))
		if it.ExecutionID == c.conflict {
			out[i] = AppendResult{Err: &core.VersionConflictError{Expected: it.Version + 1, Requested: it.Version}}
		}
	}
	c.mu.Lock()
	c.manys = append(c.manys, ids)
	c.mu.Unlock()
	if c.manyGate != nil {
		<-c.manyGate
	}
	if c.manyErr != nil {
		return nil, c.manyErr
	}
	return out, nil
}

func testIDs(t *testing.T, n int) []core.ExecutionId {
	ids := make([]core.ExecutionId, n)
	for i := range ids {
		id, err := core.NewExecutionId(uint64(i+1), nil)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	return ids
}

// queued waits (without sleeping) until n writes wait in c's queue.
func queued(t *testing.T, c *coalescer, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c.mu.Lock()
		got := len(c.queue)
		c.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d writes queued, want %d", got, n)
		}
		runtime.Gosched()
	}
}

// busy starts minManyInFlight writes one after the other, each once the
// previous one waits at conn's gate: then every sender is busy and the
// queue is empty.
func busy(c *coalescer, conn *manyConn, ids []core.ExecutionId) []chan writeOutcome {
	var outs []chan writeOutcome
	for _, id := range ids[:minManyInFlight] {
		outs = append(outs, startWrites(c, []core.ExecutionId{id})...)
		<-conn.entered
	}
	return outs
}

type writeOutcome struct {
	next core.Version
	err  error
}

// startWrites starts one write per id (a 2-event batch at version 10 each)
// and returns their outcomes' channels.
func startWrites(c *coalescer, ids []core.ExecutionId) []chan writeOutcome {
	outs := make([]chan writeOutcome, len(ids))
	for i, id := range ids {
		outs[i] = make(chan writeOutcome, 1)
		go func() {
			batch := []core.AppendRequest{{}, {}}
			next, _, err := c.write(context.Background(), &pendingWrite{item: AppendItem{ExecutionID: id, Version: 10, Batch: batch}})
			outs[i] <- writeOutcome{next, err}
		}()
	}
	return outs
}

// TestCoalescerSendsQueuedWritesTogether: while minManyInFlight writes are
// on the wire, the next ones wait and go as one many-write; each caller
// gets its own item's outcome (here one version conflict).
func TestCoalescerSendsQueuedWritesTogether(t *testing.T) {
	ids := testIDs(t, minManyInFlight+5)
	conn := &manyConn{gate: make(chan struct{}), entered: make(chan struct{}, minManyInFlight+8), conflict: ids[4]}
	c := newCoalescer(conn)
	first := busy(c, conn, ids)
	rest := startWrites(c, ids[minManyInFlight:])
	queued(t, c, 5)
	close(conn.gate)
	for i, ch := range append(first, rest...) {
		o := <-ch
		switch {
		case ids[i] == conn.conflict:
			if !errors.Is(o.err, core.ErrVersionConflict) {
				t.Errorf("write %d: %v, want its version conflict", i, o.err)
			}
		case o.err != nil || o.next != 12:
			t.Errorf("write %d: next %d, %v", i, o.next, o.err)
		}
	}
	if len(conn.singles) != minManyInFlight || len(conn.manys) != 1 || len(conn.manys[0]) != 5 {
		t.Fatalf("singles %d, many-writes %v: want the first ones alone and the 5 others together", len(conn.singles), conn.manys)
	}
}

// TestCoalescerFallsBackToSingleWrites: a many-write refused as a whole
// sends its items one by one; a server without the route (404) is not
// asked again.
func TestCoalescerFallsBackToSingleWrites(t *testing.T) {
	for _, tc := range []struct {
		status int
		single bool
	}{{http.StatusNotFound, true}, {http.StatusUnprocessableEntity, false}, {http.StatusRequestEntityTooLarge, false}} {
		ids := testIDs(t, minManyInFlight+3)
		conn := &manyConn{gate: make(chan struct{}), entered: make(chan struct{}, minManyInFlight+8), manyErr: &Error{Status: tc.status, Message: "refused"}}
		c := newCoalescer(conn)
		outs := busy(c, conn, ids)
		outs = append(outs, startWrites(c, ids[minManyInFlight:])...)
		queued(t, c, 3)
		close(conn.gate)
		for i, ch := range outs {
			if o := <-ch; o.err != nil || o.next != 12 {
				t.Errorf("%d: write %d: next %d, %v", tc.status, i, o.next, o.err)
			}
		}
		if len(conn.singles) != minManyInFlight+3 || len(conn.manys) != 1 || c.single.Load() != tc.single {
			t.Errorf("%d: singles %d, many-writes %d, single %v", tc.status, len(conn.singles), len(conn.manys), c.single.Load())
		}
	}
}

// TestCoalescerWithdrawsAWriteWhoseCallerGaveUp: a queued write whose
// context ends is never sent.
func TestCoalescerWithdrawsAWriteWhoseCallerGaveUp(t *testing.T) {
	ids := testIDs(t, minManyInFlight+1)
	conn := &manyConn{gate: make(chan struct{}), entered: make(chan struct{}, minManyInFlight+8)}
	c := newCoalescer(conn)
	outs := busy(c, conn, ids)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, _, err := c.write(ctx, &pendingWrite{item: AppendItem{ExecutionID: ids[minManyInFlight], Version: 1, Batch: []core.AppendRequest{{}}}})
		done <- err
	}()
	queued(t, c, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	close(conn.gate)
	for _, ch := range outs {
		<-ch
	}
	if len(conn.singles) != minManyInFlight || len(conn.manys) != 0 {
		t.Fatalf("singles %v, many-writes %v: the withdrawn write was sent", conn.singles, conn.manys)
	}
}

// TestCoalescerStartsARequestForAFullBatch: with minManyInFlight writes on
// the wire, the writes after them queue while fewer than maxManyItems
// wait; a full many-write starts a request of its own at once, without
// waiting for the ones on the wire, and so on up to maxManyInFlight
// requests; past that a full batch waits like any other.
func TestCoalescerStartsARequestForAFullBatch(t *testing.T) {
	extra := maxManyInFlight - minManyInFlight
	ids := testIDs(t, minManyInFlight+(extra+1)*maxManyItems)
	conn := &manyConn{gate: make(chan struct{}), entered: make(chan struct{}, len(ids)), manyGate: make(chan struct{})}
	c := newCoalescer(conn)
	manys := func() int {
		conn.mu.Lock()
		defer conn.mu.Unlock()
		return len(conn.manys)
	}
	sent := func(n int) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for manys() != n {
			if time.Now().After(deadline) {
				t.Fatalf("%d many-writes sent, want %d", manys(), n)
			}
			runtime.Gosched()
		}
	}
	outs := busy(c, conn, ids)
	next := ids[minManyInFlight:]
	outs = append(outs, startWrites(c, next[:maxManyItems-1])...)
	queued(t, c, maxManyItems-1)
	if n := manys(); n != 0 {
		t.Fatalf("%d many-writes sent with %d writes queued, want none before a full batch", n, maxManyItems-1)
	}
	// The 8th write makes a full batch: sent while the first two still
	// wait at the gate; then each full batch at once, up to the bound.
	outs = append(outs, startWrites(c, next[maxManyItems-1:maxManyItems])...)
	sent(1)
	for i := 1; i <= extra; i++ {
		outs = append(outs, startWrites(c, next[i*maxManyItems:(i+1)*maxManyItems])...)
		if i < extra {
			sent(i + 1)
		}
	}
	queued(t, c, maxManyItems) // maxManyInFlight on the wire: the last batch waits
	if n := manys(); n != extra {
		t.Fatalf("%d many-writes sent, want %d", n, extra)
	}
	close(conn.gate)
	close(conn.manyGate)
	for i, ch := range outs {
		if o := <-ch; o.err != nil || o.next != 12 {
			t.Errorf("write %d: next %d, %v", i, o.next, o.err)
		}
	}
	if len(conn.singles) != minManyInFlight || len(conn.manys) != extra+1 {
		t.Fatalf("%d single writes and %d many-writes, want %d and %d", len(conn.singles), len(conn.manys), minManyInFlight, extra+1)
	}
	for _, m := range conn.manys {
		if len(m) != maxManyItems {
			t.Errorf("many-write of %d items, want full batches of %d", len(m), maxManyItems)
		}
	}
}
