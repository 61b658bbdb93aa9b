package worker

import (
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
)

// parkedRun is a Context whose goroutine waits to be resumed or unwound,
// reporting an unwind on aborted.
func parkedRun(t *testing.T, n uint64, aborted chan<- core.ExecutionId) *Context {
	t.Helper()
	id, err := core.NewExecutionId(n, nil)
	if err != nil {
		t.Fatal(err)
	}
	wf := &Context{id: id, resumeCh: make(chan bool)}
	go func() {
		if !<-wf.resumeCh {
			aborted <- id
		}
	}()
	return wf
}

func TestRunCacheEvictsTheOldestBeyondItsSizeAndTTL(t *testing.T) {
	aborted := make(chan core.ExecutionId, 8)
	c := newRunCache(2, 1<<40, time.Hour)
	a, b, d := parkedRun(t, 1, aborted), parkedRun(t, 2, aborted), parkedRun(t, 3, aborted)
	c.put(a)
	c.put(b)
	c.put(d) // evicts a, the least recently parked
	if got := <-aborted; got != a.id {
		t.Fatalf("evicted %s, want %s", got, a.id)
	}
	if c.take(a.id) != nil || c.take(b.id) != b || c.len() != 1 {
		t.Fatal("the cache must hold b and d, and hand b out once")
	}

	c = newRunCache(10, 1<<40, time.Minute)
	now := time.Unix(0, 0)
	c.now = func() time.Time { return now }
	c.afterFunc = func(time.Duration, func()) func() bool { return func() bool { return true } } // expiry on insert only here
	old := parkedRun(t, 4, aborted)
	c.put(old)
	now = now.Add(2 * time.Minute)
	c.put(parkedRun(t, 5, aborted))
	if got := <-aborted; got != old.id {
		t.Fatalf("evicted %s, want the expired %s", got, old.id)
	}
	c.dropAll()
	<-aborted
	if c.len() != 0 {
		t.Fatal("dropAll left runs")
	}
}

// TestRunCacheIsBoundedByBytes: beyond MaxCachedBytes the least recently
// parked runs are evicted, whatever their number (a few long histories
// would otherwise hold gigabytes under a count limit).
func TestRunCacheIsBoundedByBytes(t *testing.T) {
	aborted := make(chan core.ExecutionId, 8)
	c := newRunCache(100, 10_000, time.Hour)
	var runs []*Context
	for i := range 4 {
		wf := parkedRun(t, uint64(i+1), aborted)
		wf.size = 4_000
		runs = append(runs, wf)
		c.put(wf)
	}
	evicted := map[core.ExecutionId]bool{<-aborted: true, <-aborted: true} // the runs unwind concurrently
	if !evicted[runs[0].id] || !evicted[runs[1].id] {                      // 4 × 4,000 > 10,000: the two oldest go
		t.Fatalf("evicted %v, want the two oldest, %s and %s", evicted, runs[0].id, runs[1].id)
	}
	if c.len() != 2 || c.size() != 8_000 {
		t.Fatalf("the cache holds %d runs, %d bytes; want 2, 8000", c.len(), c.size())
	}
	if c.take(runs[3].id) != runs[3] || c.size() != 4_000 {
		t.Fatalf("take must release the run's bytes: %d", c.size())
	}
	c.dropAll()
	<-aborted
}
