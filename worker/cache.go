package worker

import (
	"container/list"
	"sync"

	"github.com/stela-dev/stela/core"
)

// runCache keeps workflows suspended at a join (their goroutine parked,
// their history and responses in memory) so that the next lock resumes them
// without a replay and reads only what changed. Least recently parked runs
// are evicted beyond max; an evicted run is unwound (it is safe in the store:
// a later lock replays it).
type runCache struct {
	mu  sync.Mutex
	max int
	lru *list.List // of *Context, front = most recent
	m   map[core.ExecutionId]*list.Element
}

func newRunCache(max int) *runCache {
	return &runCache{max: max, lru: list.New(), m: map[core.ExecutionId]*list.Element{}}
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
	return e.Value.(*Context)
}

// put caches a parked run, evicting the oldest beyond the limit.
func (c *runCache) put(wf *Context) {
	c.mu.Lock()
	var evicted []*Context
	if old, ok := c.m[wf.id]; ok { // cannot happen: a run is taken before it runs
		c.lru.Remove(old)
		evicted = append(evicted, old.Value.(*Context))
	}
	c.m[wf.id] = c.lru.PushFront(wf)
	for c.lru.Len() > c.max {
		e := c.lru.Back()
		c.lru.Remove(e)
		old := e.Value.(*Context)
		delete(c.m, old.id)
		evicted = append(evicted, old)
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
		all = append(all, e.Value.(*Context))
	}
	c.lru.Init()
	c.m = map[core.ExecutionId]*list.Element{}
	c.mu.Unlock()
	for _, wf := range all {
		wf.abort()
	}
}
