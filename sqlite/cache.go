package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sync"

	"github.com/stela-dev/stela/core"
)

// headCacheSize bounds the writer's head cache (entries, ~0.3 KB each).
const headCacheSize = 16384

// headCache is the writer's cache of execution heads. It holds exactly what
// the writer would read from the database: committed holds heads as of the
// last commit, batch the heads written by the fns of the current group-commit
// transaction that succeeded so far (dropped if the transaction aborts). A
// commit by another connection (another process sharing the file) is
// detected with PRAGMA data_version at the start of each batch and empties
// the cache. Only the writer goroutine uses it.
type headCache struct {
	committed   map[core.ExecutionId]core.ExecutionState
	batch       map[core.ExecutionId]core.ExecutionState
	dataVersion int64
	known       bool // dataVersion was read before
}

func newHeadCache() *headCache {
	return &headCache{
		committed: make(map[core.ExecutionId]core.ExecutionState),
		batch:     make(map[core.ExecutionId]core.ExecutionState),
	}
}

// begin is called inside BEGIN IMMEDIATE: while the write lock is held no other
// connection can commit, so a data_version equal to the previous batch's
// means the committed heads are current.
func (c *headCache) begin(ctx context.Context, w *conn) error {
	rows, err := w.query(ctx, "PRAGMA data_version")
	if err != nil {
		return fmt.Errorf("read data_version: %w", err)
	}
	var v int64
	if rows.Next() {
		err = rows.Scan(&v)
	}
	if cerr := rows.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("read data_version: %w", err)
	}
	if !c.known || v != c.dataVersion {
		clear(c.committed)
	}
	c.dataVersion, c.known = v, true
	clear(c.batch)
	return nil
}

func (c *headCache) get(id core.ExecutionId) (core.ExecutionState, bool) {
	if st, ok := c.batch[id]; ok {
		return st, true
	}
	st, ok := c.committed[id]
	return st, ok
}

// stage records the heads written by a successful fn.
func (c *headCache) stage(heads map[core.ExecutionId]core.ExecutionState) {
	for id, st := range heads {
		c.batch[id] = st
	}
}

// loaded records a head read from the database that no fn of the batch has
// written: it is committed state.
func (c *headCache) loaded(st core.ExecutionState) {
	c.committed[st.ExecutionID] = st
	c.evict()
}

// commit makes the batch's heads committed.
func (c *headCache) commit() {
	for id, st := range c.batch {
		c.committed[id] = st
	}
	clear(c.batch)
	c.evict()
}

// abort forgets the batch's heads.
func (c *headCache) abort() { clear(c.batch) }

func (c *headCache) evict() {
	for id := range c.committed {
		if len(c.committed) <= headCacheSize {
			return
		}
		delete(c.committed, id)
	}
}

// normalizeHead returns a deep copy of st as the database would return it
// after a write: timestamps in UTC within the stored range, result kinds in
// their canonical form.
func normalizeHead(st core.ExecutionState) core.ExecutionState {
	c := st.Clone()
	c.CreatedAt, c.FirstScheduledAt, c.At = c.CreatedAt.Sortable(), c.FirstScheduledAt.Sortable(), c.At.Sortable()
	if c.ResultKind != nil && !c.ResultKind.IsErr {
		c.ResultKind.Failure = ""
	}
	return c
}

// Created events are immutable once committed and are read back by every
// lock (to hand the worker its parameters). Decoding them costs more than the
// rest of the lock, so the writer keeps the encoded Created events of recently
// created executions, registered when the creating batch commits. The
// pending-execution queries (PendingByFFQN, PendingByDigest), which precede
// a lock, decode the candidates' events on the caller's goroutine, off the
// writer; the writer decodes an entry itself if nobody did, and reads the
// database if the entry was evicted. Decoding uses core.DecodeExecutionRequest
// on the stored bytes, exactly what a read from the database does.
const (
	createdCacheEntries = 8192
	createdCacheBytes   = 16 << 20
)

type createdEntry struct {
	id        core.ExecutionId
	createdAt core.Timestamp
	size      int

	once sync.Once
	body []byte        // encoded event, dropped once decoded
	ev   *core.Created // nil if decoding failed
}

func (e *createdEntry) decode() {
	e.once.Do(func() {
		req, err := core.DecodeExecutionRequest(e.body)
		e.body = nil
		if c, ok := req.(*core.Created); err == nil && ok {
			e.ev = c
		}
	})
}

// createdCache maps execution ids to their committed Created events.
type createdCache struct {
	mu    sync.Mutex
	m     map[core.ExecutionId]*createdEntry
	bytes int
}

func newCreatedCache() *createdCache {
	return &createdCache{m: make(map[core.ExecutionId]*createdEntry)}
}

// add registers committed entries (writer, after COMMIT).
func (c *createdCache) add(es []*createdEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range es {
		if old, ok := c.m[e.id]; ok {
			c.bytes -= old.size
		}
		c.m[e.id] = e
		c.bytes += e.size
	}
	for id, old := range c.m {
		if len(c.m) <= createdCacheEntries && c.bytes <= createdCacheBytes {
			break
		}
		delete(c.m, id)
		c.bytes -= old.size
	}
}

func (c *createdCache) entry(id core.ExecutionId) *createdEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[id]
}

// prefetch decodes the cached Created events of ids on the calling goroutine.
func (c *createdCache) prefetch(ids []core.ExecutionId) {
	for _, id := range ids {
		if e := c.entry(id); e != nil {
			e.decode()
		}
	}
}

// get returns a private copy of the Created event of id, if cached.
func (c *createdCache) get(id core.ExecutionId) (core.ExecutionEvent, bool) {
	e := c.entry(id)
	if e == nil {
		return core.ExecutionEvent{}, false
	}
	e.decode()
	if e.ev == nil {
		return core.ExecutionEvent{}, false
	}
	return core.ExecutionEvent{CreatedAt: e.createdAt, Event: cloneCreated(e.ev), Version: 0}, true
}

// cloneCreated deep-copies c so that callers cannot alter the cached event.
func cloneCreated(c *core.Created) *core.Created {
	d := *c
	if c.Params != nil {
		d.Params = make(core.Params, len(c.Params))
		for i, p := range c.Params {
			d.Params[i] = append(json.RawMessage(nil), p...)
		}
	}
	if c.Parent != nil {
		p := *c.Parent
		d.Parent = &p
	}
	if c.Metadata != nil {
		d.Metadata = maps.Clone(c.Metadata)
	}
	if c.ScheduledBy != nil {
		s := *c.ScheduledBy
		d.ScheduledBy = &s
	}
	return &d
}
