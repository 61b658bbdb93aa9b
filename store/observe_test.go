package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/store/mem"
)

// recorder is an Observer that keeps what it is told.
type recorder struct {
	mu      sync.Mutex
	commits []store.Commit
	locks   [][2]int
}

func (r *recorder) Commit(_ context.Context, c store.Commit) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.commits = append(r.commits, c)
}

func (r *recorder) LockCall(_ context.Context, requested, granted int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.locks = append(r.locks, [2]int{requested, granted})
}

func TestObserverSeesEveryTransaction(t *testing.T) {
	ctx := context.Background()
	t0 := core.UnixEpoch
	rec := &recorder{}
	svc := store.New(mem.New(), store.Options{Clock: &fixedClock{t0}, Observer: rec})
	ffqn := mustParse(t, core.ParseFunctionFqn, "ns:pkg/ifc.fn")
	act := core.ComponentId{ComponentType: core.ComponentTypeActivity}
	ids := []core.ExecutionId{
		mustParse(t, core.ParseExecutionId, "E_01KBNHM5FQW81KP5Y3XMNX31K4"),
		mustParse(t, core.ParseExecutionId, "E_01KBNHM5FQW81KP5Y3XMNX31K5"),
	}
	for _, id := range ids {
		if _, err := svc.Create(ctx, core.CreateRequest{CreatedAt: t0, ExecutionID: id, FFQN: ffqn, ScheduledAt: t0, ComponentID: act}); err != nil {
			t.Fatal(err)
		}
	}
	exr := mustParse(t, core.ParseExecutorId, "Exr_01KBNJ2T3D8W7H3X6Q4M9R5V1A")
	run := mustParse(t, core.ParseRunId, "Run_01KBNJ2V0P6C4Y8N2B7K3T5W9E")
	locked, err := svc.LockPendingByFFQNs(ctx, core.LockRequest{BatchSize: 5, PendingAtOrSooner: t0, CreatedAt: t0, ComponentID: act,
		ExecutorID: exr, RunID: run, LockExpiresAt: t0.Add(time.Minute), RetryConfig: core.RetryConfigZero()}, []core.FunctionFqn{ffqn})
	if err != nil || len(locked) != 2 {
		t.Fatalf("lock: %d %v", len(locked), err)
	}
	finish := func(id core.ExecutionId, rv core.ReturnValue) {
		t.Helper()
		if _, err := svc.Append(ctx, id, 2, core.AppendRequest{CreatedAt: t0, Event: &core.Finished{Retval: rv}}); err != nil {
			t.Fatal(err)
		}
	}
	finish(ids[0], core.RetOk(nil))
	finish(ids[1], core.RetFailure(core.FailureTimedOut, nil, nil))
	// A stale writer: a version conflict, nothing written.
	if _, err := svc.Append(ctx, ids[0], 2, core.AppendRequest{CreatedAt: t0, Event: &core.Finished{Retval: core.RetOk(nil)}}); err == nil {
		t.Fatal("append at a stale version succeeded")
	}

	var created int
	var finished [store.NumOutcomes]int
	byOp := map[store.Op]map[string]int{}
	for _, c := range rec.commits {
		created += c.Created
		for o, n := range c.Finished {
			finished[o] += n
		}
		if byOp[c.Op] == nil {
			byOp[c.Op] = map[string]int{}
		}
		byOp[c.Op][c.Result()]++
		if c.Duration < 0 || c.Start.IsZero() {
			t.Errorf("commit %+v: no timing", c)
		}
	}
	if created != 2 {
		t.Errorf("created = %d, want 2", created)
	}
	if finished[store.OutcomeOK] != 1 || finished[store.OutcomeTimeout] != 1 {
		t.Errorf("finished = %v, want one ok and one timeout", finished)
	}
	want := map[store.Op]map[string]int{
		store.OpCreate: {"ok": 2},
		store.OpLock:   {"ok": 1}, // the in-memory store locks a batch in one transaction
		store.OpAppend: {"ok": 2, "already_finished": 1},
	}
	for op, results := range want {
		for r, n := range results {
			if byOp[op][r] != n {
				t.Errorf("%s commits with result %s = %d, want %d (all: %v)", op, r, byOp[op][r], n, byOp)
			}
		}
	}
	if len(rec.locks) != 1 || rec.locks[0] != [2]int{5, 2} {
		t.Errorf("lock calls = %v, want one asking 5, granted 2", rec.locks)
	}
}

func TestTimerLag(t *testing.T) {
	ctx := context.Background()
	t0 := core.UnixEpoch
	clock := &fixedClock{t0}
	svc := store.New(mem.New(), store.Options{Clock: clock})
	ffqn := mustParse(t, core.ParseFunctionFqn, "ns:pkg/ifc.fn")
	act := core.ComponentId{ComponentType: core.ComponentTypeActivity}
	id := mustParse(t, core.ParseExecutionId, "E_01KBNHM5FQW81KP5Y3XMNX31K4")
	if _, err := svc.Create(ctx, core.CreateRequest{CreatedAt: t0, ExecutionID: id, FFQN: ffqn, ScheduledAt: t0, ComponentID: act}); err != nil {
		t.Fatal(err)
	}
	exr := mustParse(t, core.ParseExecutorId, "Exr_01KBNJ2T3D8W7H3X6Q4M9R5V1A")
	run := mustParse(t, core.ParseRunId, "Run_01KBNJ2V0P6C4Y8N2B7K3T5W9E")
	expires := t0.Add(time.Second)
	if _, err := svc.LockOne(ctx, core.LockRequest{CreatedAt: t0, ComponentID: act, ExecutorID: exr, RunID: run,
		LockExpiresAt: expires, RetryConfig: core.RetryConfigZero()}, id, 1); err != nil {
		t.Fatal(err)
	}
	lag := func(at core.Timestamp) time.Duration {
		t.Helper()
		d, err := store.TimerLag(ctx, svc, at)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if got := lag(t0); got != 0 {
		t.Errorf("lag before the lock expired = %v, want 0", got)
	}
	if got := lag(expires.Add(5 * time.Second)); got != 5*time.Second {
		t.Errorf("lag 5 s after the expiry = %v, want 5s", got)
	}
	if got := lag(expires.Add(time.Minute)); got != time.Minute {
		t.Errorf("lag 1 min after the expiry = %v, want 1m (the sweep has not run)", got)
	}
	res, err := store.Sweep(ctx, svc, expires.Add(time.Minute))
	if err != nil || res.ExpiredLocks != 1 || !res.OldestDue.Equal(expires) {
		t.Fatalf("sweep = %+v, %v; want one expired lock, oldest due at %s", res, err, expires)
	}
	if got := lag(expires.Add(time.Minute)); got != 0 {
		t.Errorf("lag after the sweep = %v, want 0", got)
	}
}
