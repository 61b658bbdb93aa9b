package storetest

import (
	"context"
	"flag"
	"math"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
)

// Store is what the suite tests: the full public API plus the test back door
// (Obelisk's DbConnectionTest::append_response).
type Store interface {
	core.DbExternalApi
	core.ResponseAppender
}

// NewStore returns a fresh, empty, isolated store driven by clock. It is
// called once per subtest; the implementation registers its own cleanup with
// t.Cleanup.
type NewStore func(t *testing.T, clock core.Clock) Store

// RunOptions tunes the suite for slower backends.
type RunOptions struct {
	// Scale multiplies the sizes of the race tests and of the randomized model
	// test (goroutines are not scaled, rounds and operations are). Zero means 1.
	// DynamoDB Local may use e.g. 0.2.
	Scale float64
	// Timeout bounds each subtest's context. Zero means one minute.
	Timeout time.Duration
	// GCGrace is the grace period the store's gc_orphan_files was
	// configured with. Zero means the backends' default, one hour
	// (cas.DefaultGCGrace); negative means none.
	GCGrace time.Duration
}

func (o RunOptions) scale() float64 {
	if o.Scale <= 0 {
		return 1
	}
	return o.Scale
}

// scaled returns max(min, round(n*Scale)).
func (o RunOptions) scaled(n, min int) int {
	v := int(math.Round(float64(n) * o.scale()))
	if v < min {
		return min
	}
	return v
}

func (o RunOptions) timeout() time.Duration {
	if o.Timeout <= 0 {
		return time.Minute
	}
	return o.Timeout
}

// Flags of the randomized model test.
var (
	flagSeeds = flag.Int("storetest.seeds", 20, "number of seeds of the randomized model test (scaled by RunOptions.Scale)")
	flagOps   = flag.Int("storetest.ops", 200, "operations per seed of the randomized model test (scaled by RunOptions.Scale)")
	flagSeed  = flag.Int64("storetest.seed", 0, "replay only this seed of the randomized model test (0 = seeds 1..storetest.seeds)")
)

// contractTest is one named check run against a fresh store.
type contractTest struct {
	name string
	fn   func(h *harness)
}

// Run runs every contract test as subtests, each against a fresh store from newStore.
func Run(t *testing.T, newStore NewStore) { RunWith(t, newStore, RunOptions{}) }

// RunWith is Run with options.
func RunWith(t *testing.T, newStore NewStore, opts RunOptions) {
	groups := []struct {
		name  string
		tests []contractTest
	}{
		{"Scenarios", scenarioTests()},
		{"EdgeCases", edgeCaseTests()},
		{"Races", raceTests()},
		{"Deployments", deploymentTests()},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, ct := range g.tests {
				t.Run(ct.name, func(t *testing.T) {
					ct.fn(newHarness(t, newStore, opts))
				})
			}
		})
	}
	t.Run("Model", func(t *testing.T) { runModel(t, newStore, opts) })
}

// harness carries one subtest's store, clock and context.
type harness struct {
	t        *testing.T
	ctx      context.Context
	db       Store
	clock    *SimClock
	opts     RunOptions
	newStore NewStore
}

func newHarness(t *testing.T, newStore NewStore, opts RunOptions) *harness {
	t.Helper()
	clock := NewSimClock(core.UnixEpoch)
	db := newStore(t, clock)
	ctx, cancel := context.WithTimeout(context.Background(), opts.timeout())
	t.Cleanup(cancel)
	return &harness{t: t, ctx: ctx, db: db, clock: clock, opts: opts, newStore: newStore}
}

// fresh runs fn as a subtest against a fresh store and clock.
func (h *harness) fresh(name string, fn func(h *harness)) {
	h.t.Helper()
	h.t.Run(name, func(t *testing.T) { fn(newHarness(t, h.newStore, h.opts)) })
}
