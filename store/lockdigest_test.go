package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
)

// TestLockPendingByComponentDigestWaitsForItsDigest: a pinned worker's
// long poll (LockRequest.ByComponentDigest) ignores a pending execution of
// another digest, wakes when one of its digest is created and locks only it.
func TestLockPendingByComponentDigestWaitsForItsDigest(t *testing.T) {
	svc, clock, req, ffqn := lockPendingSetup(t)
	ctx := context.Background()
	mine := core.ComponentDigest{Digest: core.SHA256Digest([]byte("v2"))}
	other := core.ComponentDigest{Digest: core.SHA256Digest([]byte("v1"))}
	req.ComponentID.ComponentDigest = mine
	req.ByComponentDigest = true
	create := func(id string, d core.ComponentDigest, at core.Timestamp) core.ExecutionId {
		t.Helper()
		eid := mustParse(t, core.ParseExecutionId, id)
		comp := req.ComponentID
		comp.ComponentDigest = d
		if _, err := svc.Create(ctx, core.CreateRequest{CreatedAt: at, ExecutionID: eid, FFQN: ffqn, Params: core.Params{},
			ScheduledAt: at, ComponentID: comp}); err != nil {
			t.Fatal(err)
		}
		return eid
	}
	old := create("E_01KBNHM5FQW81KP5Y3XMNX31K4", other, clock.Now())
	got := make(chan []core.LockedExecution, 1)
	go func() {
		locked, err := svc.LockPending(ctx, req, []core.FunctionFqn{ffqn}, time.Minute)
		if err != nil {
			t.Error(err)
		}
		got <- locked
	}()
	later := clock.Advance(time.Second)
	id := create("E_01KBNHM5FQW81KP5Y3XMNX31K5", mine, later)
	select {
	case locked := <-got:
		if len(locked) != 1 || locked[0].ExecutionID != id {
			t.Fatalf("locked %+v, want only %s (not %s of another digest)", locked, id, old)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the long poll did not lock the execution of its digest")
	}
	if st, err := svc.GetPendingState(ctx, old); err != nil || st.PendingState.Locked != nil {
		t.Fatalf("the other digest's execution: %+v, %v", st.PendingState, err)
	}
}
