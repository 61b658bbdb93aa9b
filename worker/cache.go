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
//
// A run is marked pausing before it writes the wait that lets its execution
// be locked again, and stays so until it is put (or ends without parking):
// a lock of the same execution meanwhile (its response arrived at once)
// waits for the run to be put and resumes it, instead of missing the cache
// and replaying while the parked copy lands in the cache as a stale entry.
type runCache struct {
	mu      sync.Mutex
	max     int
	ttl     time.Duration
	lru     *list.List // of *cached, front = most recent
	m       map[core.ExecutionId]*list.Element
	pausing map[core.ExecutionId]chan struct{} // closed when the run is put or ends
	now     func() time.Time
	// onWait, if set (tests), is called when a take waits for a pausing run;
	// onPut when a run was parked in the cache.
	onWait func(core.ExecutionId)
	onPut  func(core.ExecutionId)
}

type cached struct {
	wf     *Context
	parked time.Time
}

func newRunCache(max int, ttl time.Duration) *runCache {
	return &runCache{max: max, ttl: ttl, lru: list.New(), m: map[core.ExecutionId]*list.Element{},
		pausing: map[core.ExecutionId]chan struct{}{}, now: time.Now}
}

// pause marks the run of id as pausing: it is about to write its wait and
// then be put (or unpaused if it ends instead).
func (c *runCache) pause(id core.ExecutionId) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.pausing[id]; !ok {
		c.pausing[id] = make(chan struct{})
	}
}

// unpauseLocked clears the pausing mark of id, waking the takes waiting
// for it. mu is held.
func (c *runCache) unpauseLocked(id core.ExecutionId) {
	if ch, ok := c.pausing[id]; ok {
		delete(c.pausing, id)
		close(ch)
	}
}

// unpause clears the pausing mark of a run that ended without parking (its
// wait was not written, or it finished).
func (c *runCache) unpause(id core.ExecutionId) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unpauseLocked(id)
}

// take removes and returns the run of id, if cached; if the run is
// pausing, it waits until it is put or has ended.
func (c *runCache) take(id core.ExecutionId) *Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		ch, ok := c.pausing[id]
		if !ok {
			break
		}
		c.mu.Unlock()
		if c.onWait != nil {
			c.onWait(id)
		}
		<-ch
		c.mu.Lock()
	}
	e, ok := c.m[id]
	if !ok {
		return nil
	}
	delete(c.m, id)
	c.lru.Remove(e)
	return e.Value.(*cached).wf
}

// put caches a parked run, evicting the oldest beyond the limit, and
// clears its pausing mark.
func (c *runCache) put(wf *Context) {
	c.mu.Lock()
	c.unpauseLocked(wf.id)
	var evicted []*Context
	if old, ok := c.m[wf.id]; ok { // a run is taken before it runs, so only a stale copy
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
	onPut := c.onPut
	c.mu.Unlock()
	for _, old := range evicted {
		old.abort()
	}
	if onPut != nil {
		onPut(wf.id)
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
