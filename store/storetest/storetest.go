package storetest

import (
	"context"
	"flag"
	"math"
	"testing"
	"time"

	"github.com/stela-dev/stela/cas"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
)

// Store is what the suite tests: the full public API plus the test back door
// (Obelisk's DbConnectionTest::append_response). The suite builds it as a
// store.Service over the backend under test.
type Store interface {
	core.DbExternalApi
	core.ResponseAppender
}

// NewBackend returns a fresh, empty, isolated backend driven by clock. It is
// called once per subtest. blobs is that subtest's CAS: the service keeps
// the deployment blobs in it, and a backend that offloads payloads to a CAS
// should use it too. The suite closes the backend (through the service);
// anything else the implementation registers with t.Cleanup.
type NewBackend func(t *testing.T, clock core.Clock, blobs core.Cas) store.Backend

// RunOptions tunes the suite for slower backends.
type RunOptions struct {
	// Scale multiplies the sizes of the race tests and of the randomized model
	// test (goroutines are not scaled, rounds and operations are). Zero means 1.
	// DynamoDB Local may use e.g. 0.2.
	Scale float64
	// Timeout bounds each subtest's context. Zero means one minute.
	Timeout time.Duration
	// GCGrace is the grace period the service's gc_orphan_files is
	// configured with (store.Options.GCGrace). Zero means the default, one
	// hour (store.DefaultGCGrace); negative means none.
	GCGrace time.Duration
	// PollInterval is the service's store.Options.PollInterval (zero: its
	// default).
	PollInterval time.Duration
	// NewCas returns the CAS of one subtest (e.g. an S3 emulator). Nil means
	// a cas.Dir in t.TempDir(): the deployment scenarios always have one.
	NewCas func(t *testing.T) core.Cas
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

// Run runs every contract test as subtests, each against a fresh backend
// from newBackend.
func Run(t *testing.T, newBackend NewBackend) { RunWith(t, newBackend, RunOptions{}) }

// RunWith is Run with options.
func RunWith(t *testing.T, newBackend NewBackend, opts RunOptions) {
	groups := []struct {
		name  string
		tests []contractTest
	}{
		{"Scenarios", scenarioTests()},
		{"EdgeCases", edgeCaseTests()},
		{"Races", raceTests()},
		{"Deployments", deploymentTests()},
		{"Paging", pagingTests()},
	}
	for _, g := range groups {
		runGroup(t, g.name, g.tests, newBackend, opts)
	}
	runRetention(t, newBackend, opts)
	runTransfer(t, newBackend, opts)
	t.Run("Model", func(t *testing.T) { runModel(t, newBackend, opts) })
}

// RunDeployments runs only the deployment scenarios (the ones that use the
// CAS), e.g. to run them once more with another kind of CAS.
func RunDeployments(t *testing.T, newBackend NewBackend, opts RunOptions) {
	runGroup(t, "Deployments", deploymentTests(), newBackend, opts)
}

func runGroup(t *testing.T, name string, tests []contractTest, newBackend NewBackend, opts RunOptions) {
	t.Run(name, func(t *testing.T) {
		for _, ct := range tests {
			t.Run(ct.name, func(t *testing.T) {
				ct.fn(newHarness(t, newBackend, opts))
			})
		}
	})
}

// harness carries one subtest's store, CAS, clock and context.
type harness struct {
	t          *testing.T
	ctx        context.Context
	db         Store
	svc        *store.Service // db, for what only the service offers (retention)
	backend    store.Backend  // svc's backend
	blobs      core.Cas
	clock      *SimClock
	opts       RunOptions
	newBackend NewBackend
}

func newHarness(t *testing.T, newBackend NewBackend, opts RunOptions) *harness {
	t.Helper()
	return newHarnessWith(t, newBackend, opts, nil)
}

// newHarnessWith is newHarness with the service options adjusted by mod.
func newHarnessWith(t *testing.T, newBackend NewBackend, opts RunOptions, mod func(*store.Options)) *harness {
	t.Helper()
	clock := NewSimClock(core.UnixEpoch)
	var blobs core.Cas
	if opts.NewCas != nil {
		blobs = opts.NewCas(t)
	} else {
		dir, err := cas.NewDir(t.TempDir())
		if err != nil {
			t.Fatalf("CAS: %v", err)
		}
		blobs = dir
	}
	so := store.Options{Clock: clock, PollInterval: opts.PollInterval, Cas: blobs, GCGrace: opts.GCGrace}
	if mod != nil {
		mod(&so)
	}
	b := newBackend(t, clock, blobs)
	s := store.New(b, so)
	t.Cleanup(func() { _ = s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), opts.timeout())
	t.Cleanup(cancel)
	return &harness{t: t, ctx: ctx, db: s, svc: s, backend: b, blobs: blobs, clock: clock, opts: opts, newBackend: newBackend}
}

// fresh runs fn as a subtest against a fresh store and clock.
func (h *harness) fresh(name string, fn func(h *harness)) {
	h.t.Helper()
	h.t.Run(name, func(t *testing.T) { fn(newHarness(t, h.newBackend, h.opts)) })
}
