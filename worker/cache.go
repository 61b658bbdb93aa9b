package worker

import (
	"container/list"
	"sync"
	"time"

	"github.com/stela-dev/stela/core"
)

// runCache keeps workflows suspended at a join (their goroutine parked,
// their history and responses in memory) so that the next lock resumes them
// without a replay and reads only what changed. Least recently parked runs
// are evicted beyond max; an evicted run is unwound (it is safe in the store:
// a later lock replays it), and so are runs parked longer than ttl (another
// worker may have taken their execution over: nothing tells this one).
type runCache struct {
	mu  sync.Mutex
	max int
	ttl time.Duration
	lru *list.List // of *cached, front = most recent
	m   map[core.ExecutionId]*list.Element
	now func() time.Time
}

type cached struct {
	wf     *Context
	parked time.Time
}

func newRunCache(max int, ttl time.Duration) *runCache {
	return &runCache{max: max, ttl: ttl, lru: list.New(), m: map[core.ExecutionId]*list.Element{}, now: time.Now}
}

// take removes and returns the run of id, if cached.
func (c *runCache) take(id core.ExecutionId) *Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[id]
	if !ok {
		return nil
	}
	delete(c.m, id)
	c.lru.Remove(e)
	return e.Value.(*cached).wf
}

// put caches a parked run, evicting the oldest beyond the limit.
func (c *runCache) put(wf *Context) {
	c.mu.Lock()
	var evicted []*Context
	if old, ok := c.m[wf.id]; ok { // cannot happen: a run is taken before it runs
		c.lru.Remove(old)
		evicted = append(evicted, old.Value.(*cached).wf)
	}
	now := c.now()
	c.m[wf.id] = c.lru.PushFront(&cached{wf: wf, parked: now})
	for c.lru.Len() > 0 {
		e := c.lru.Back()
		old := e.Value.(*cached)
		if c.lru.Len() <= c.max && now.Sub(old.parked) <= c.ttl {
			break
		}
		c.lru.Remove(e)
		delete(c.m, old.wf.id)
		evicted = append(evicted, old.wf)
	}
	c.mu.Unlock()
	for _, old := range evicted {
		old.abort()
	}
}

// len returns the number of cached runs.
func (c *runCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// dropAll unwinds every cached run.
func (c *runCache) dropAll() {
	c.mu.Lock()
	var all []*Context
	for e := c.lru.Front(); e != nil; e = e.Next() {
		all = append(all, e.Value.(*cached).wf)
	}
	c.lru.Init()
	c.m = map[core.ExecutionId]*list.Element{}
	c.mu.Unlock()
	for _, wf := range all {
		wf.abort()
	}
}
