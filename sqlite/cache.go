package sqlite

import (
	"context"
	"fmt"

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
	c.CreatedAt, c.FirstScheduledAt, c.At = normTS(c.CreatedAt), normTS(c.FirstScheduledAt), normTS(c.At)
	if c.ResultKind != nil && !c.ResultKind.IsErr {
		c.ResultKind.Failure = ""
	}
	return c
}

func normTS(ts core.Timestamp) core.Timestamp {
	t := ts.Time.UTC()
	if t.Before(tsMin) {
		t = tsMin
	} else if t.After(tsMax) {
		t = tsMax
	}
	return core.TS(t)
}
