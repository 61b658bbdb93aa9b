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
// are evicted beyond max runs or maxBytes (their estimated memory, see
// Context.size); an evicted run is unwound (it is safe in the store: a later
// lock replays it), and so are runs parked longer than ttl (another worker
// may have taken their execution over: nothing tells this one), by a timer
// armed for the oldest run's expiry (on the worker's clock, so a simulated
// clock drives it).
//
// A run is marked pausing before it writes the wait that lets its execution
// be locked again, and stays so until it is put (or ends without parking):
// a lock of the same execution meanwhile (its response arrived at once)
// waits for the run to be put and resumes it, instead of missing the cache
// and replaying while the parked copy lands in the cache as a stale entry.
type runCache struct {
	mu       sync.Mutex
	max      int
	maxBytes int64
	bytes    int64 // the cached runs' sizes
	ttl      time.Duration
	lru      *list.List // of *cached, front = most recent
	m        map[core.ExecutionId]*list.Element
	pausing  map[core.ExecutionId]chan struct{} // closed when the run is put or ends
	now      func() time.Time
	// afterFunc runs f after d (the worker's clock); timer stops the timer
	// armed for the oldest run's expiry (nil: none armed).
	afterFunc func(d time.Duration, f func()) (stop func() bool)
	timer     func() bool
	// onWait, if set (tests), is called when a take waits for a pausing run;
	// onPut when a run was parked in the cache.
	onWait func(core.ExecutionId)
	onPut  func(core.ExecutionId)
}

type cached struct {
	wf     *Context
	parked time.Time
	size   int64
}

func newRunCache(max int, maxBytes int64, ttl time.Duration) *runCache {
	return &runCache{max: max, maxBytes: maxBytes, ttl: ttl, lru: list.New(), m: map[core.ExecutionId]*list.Element{},
		pausing: map[core.ExecutionId]chan struct{}{}, now: time.Now,
		afterFunc: func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }}
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
	c.removeLocked(e)
	return e.Value.(*cached).wf
}

// removeLocked removes e from the cache. mu is held.
func (c *runCache) removeLocked(e *list.Element) {
	entry := e.Value.(*cached)
	delete(c.m, entry.wf.id)
	c.lru.Remove(e)
	c.bytes -= entry.size
}

// put caches a parked run, evicting the oldest beyond the limits, and
// clears its pausing mark.
func (c *runCache) put(wf *Context) {
	c.mu.Lock()
	c.unpauseLocked(wf.id)
	var evicted []*Context
	if old, ok := c.m[wf.id]; ok { // a run is taken before it runs, so only a stale copy
		c.removeLocked(old)
		evicted = append(evicted, old.Value.(*cached).wf)
	}
	now := c.now()
	size := wf.memSize()
	c.m[wf.id] = c.lru.PushFront(&cached{wf: wf, parked: now, size: size})
	c.bytes += size
	evicted = append(evicted, c.evictLocked(now)...)
	c.armLocked(now)
	onPut := c.onPut
	c.mu.Unlock()
	for _, old := range evicted {
		old.abort()
	}
	if onPut != nil {
		onPut(wf.id)
	}
}

// evictLocked removes the least recently parked runs beyond the limits and
// those parked longer than ttl, and returns them. mu is held.
func (c *runCache) evictLocked(now time.Time) []*Context {
	var evicted []*Context
	for c.lru.Len() > 0 {
		e := c.lru.Back()
		old := e.Value.(*cached)
		if c.lru.Len() <= c.max && c.bytes <= c.maxBytes && now.Sub(old.parked) < c.ttl {
			break
		}
		c.removeLocked(e)
		evicted = append(evicted, old.wf)
	}
	return evicted
}

// armLocked arms the expiry timer for the oldest run, unless one is armed.
// mu is held.
func (c *runCache) armLocked(now time.Time) {
	if c.timer != nil || c.lru.Len() == 0 {
		return
	}
	due := c.lru.Back().Value.(*cached).parked.Add(c.ttl)
	c.timer = c.afterFunc(max(due.Sub(now), 0), c.expire)
}

// expire is the timer: it evicts the runs parked longer than ttl and arms
// the timer for the next oldest.
func (c *runCache) expire() {
	c.mu.Lock()
	c.timer = nil
	now := c.now()
	evicted := c.evictLocked(now)
	c.armLocked(now)
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

// size returns the cached runs' estimated memory.
func (c *runCache) size() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
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
	c.bytes = 0
	if c.timer != nil {
		c.timer()
		c.timer = nil
	}
	c.mu.Unlock()
	for _, wf := range all {
		wf.abort()
	}
}
