package worker_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/worker"
	"github.com/stela-dev/stela/worker/workertest"
)

// TestCacheTTLIsEnforcedByATimer: workflows kept in memory are dropped once
// they were kept CacheTTL, by a timer (here the simulated clock's), not
// only when another run is parked: 500 parked goroutines used to stay past
// the TTL when nothing else parked. A dropped run is safe in the store: its
// next lock replays it.
func TestCacheTTLIsEnforcedByATimer(t *testing.T) {
	env := workertest.New(t, worker.Options{CacheTTL: time.Minute})
	var runs atomic.Int32 // the two workflows run at once
	worker.Workflow(env.Worker, "demo:test/workflow.nap", func(wf *worker.Context, _ worker.Unit) (int, error) {
		return int(runs.Add(1)), wf.Sleep(time.Hour)
	})
	ids := []core.ExecutionId{env.Submit("demo:test/workflow.nap", nil), env.Submit("demo:test/workflow.nap", nil)}
	env.Run()
	if n := env.Worker.Stats().Cached; n != 2 {
		t.Fatalf("%d workflows kept, want 2", n)
	}
	env.Clock.Advance(59 * time.Second)
	if n := env.Worker.Stats().Cached; n != 2 {
		t.Fatalf("%d workflows kept before the TTL, want 2", n)
	}
	env.Clock.Advance(time.Second) // nothing else parks meanwhile
	if st := env.Worker.Stats(); st.Cached != 0 || st.CachedBytes != 0 {
		t.Fatalf("kept past the TTL: %+v", st)
	}
	env.Advance(time.Hour) // the sleeps end: the dropped runs are replayed
	for _, id := range ids {
		if _, err := workertest.Result[int](env, id); err != nil {
			t.Fatal(err)
		}
	}
	if n := runs.Load(); n != 4 {
		t.Fatalf("the function ran %d times, want 4 (twice each: the first runs were dropped)", n)
	}
}

// TestCacheIsBoundedByBytes: Options.MaxCachedBytes bounds the workflows
// kept in memory by their estimated size, not only by their number; the
// dropped ones are replayed when they resume.
func TestCacheIsBoundedByBytes(t *testing.T) {
	const limit = 20_000
	env := workertest.New(t, worker.Options{MaxCachedBytes: limit})
	worker.Workflow(env.Worker, "demo:test/workflow.nap", func(wf *worker.Context, blob string) (int, error) {
		return len(blob), wf.Sleep(time.Hour)
	})
	blob := strings.Repeat("x", 5_000)
	var ids []core.ExecutionId
	for range 10 {
		ids = append(ids, env.Submit("demo:test/workflow.nap", blob))
	}
	env.Run()
	st := env.Worker.Stats()
	if st.Cached == 0 || st.Cached > limit/5_000 || st.CachedBytes > limit {
		t.Fatalf("kept %+v, want at most %d bytes (%d workflows of %d-byte params)", st, limit, limit/5_000, len(blob))
	}
	env.Advance(time.Hour)
	for _, id := range ids {
		if got, err := workertest.Result[int](env, id); err != nil || got != len(blob) {
			t.Fatalf("got %d, %v", got, err)
		}
	}
}
