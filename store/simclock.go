package store

import (
	"sync"
	"time"

	"github.com/stela-dev/stela/core"
)

// SimClock is a manually advanced clock (Obelisk's SimClock), the tests'
// Options.Clock beside SystemClock: it starts where it is told to and moves
// only when a test calls Advance or Set. It is safe for concurrent use.
type SimClock struct {
	mu  sync.Mutex
	now core.Timestamp
}

var _ core.Clock = (*SimClock)(nil)

// NewSimClock returns a clock reading start (use core.UnixEpoch for t0).
func NewSimClock(start core.Timestamp) *SimClock { return &SimClock{now: start} }

// Now returns the current simulated time.
func (c *SimClock) Now() core.Timestamp {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d and returns the new time.
func (c *SimClock) Advance(d time.Duration) core.Timestamp {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

// Set moves the clock to ts (forwards or backwards).
func (c *SimClock) Set(ts core.Timestamp) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = ts
}
