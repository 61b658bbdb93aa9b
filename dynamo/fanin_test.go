package dynamo_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/dynamo"
	"github.com/stela-dev/stela/dynamo/dynamometer"
	"github.com/stela-dev/stela/store"
)

// Tests of the fan-in design (doc.go, "Fan-in"): sibling responses write
// disjoint items, and every window a crash can leave open is closed by a
// later reader, the sweep or the child's retry.

var fanJS = mustV(core.ParseJoinSetId("g:fan"))

// fanInParent creates a locked workflow with n children of fanJS (and a
// JoinNext of fanJS when await is set), locks the children and returns
// them with the parent's next version.
func fanInParent(t *testing.T, svc *store.Service, n int, await bool) (core.ExecutionId, []core.LockedExecution, core.Version) {
	t.Helper()
	ctx := context.Background()
	parent := newID()
	v := lockedWorkflow(t, svc, parent)
	batch, children := fanOut(parent, n)
	if await {
		batch = append(batch, core.AppendRequest{CreatedAt: t0, Event: hist(&core.JoinNext{JoinSetID: fanJS, RunExpiresAt: t0})})
	}
	v = must(svc.AppendBatchCreateNewExecution(ctx, t0, batch, parent, v, children, nil))(t)
	var locked []core.LockedExecution
	for _, c := range children {
		req := lockReq(t0, compAct)
		req.RetryConfig = core.ComponentRetryConfig{MaxRetries: ptr(uint32(3)), RetryExpBackoff: core.DurationOf(time.Second)}
		locked = append(locked, must(svc.LockOne(ctx, req, c.ExecutionID, 1))(t))
	}
	return parent, locked, v
}

// finish appends Finished to a locked child and responds to its parent.
func finish(ctx context.Context, svc *store.Service, le core.LockedExecution, value string) error {
	parent, js, _ := le.ExecutionID.SplitToParts()
	rv := core.RetOk(&core.WastValWithType{Type: "string", Value: []byte(`"` + value + `"`)})
	_, err := svc.AppendBatchRespondToParent(ctx,
		core.AppendEventsToExecution{ExecutionID: le.ExecutionID, Version: le.NextVersion,
			Batch: []core.AppendRequest{{CreatedAt: t0, Event: &core.Finished{Retval: rv}}}},
		core.AppendResponseToExecution{ParentExecutionID: parent, CreatedAt: t0, JoinSetID: js,
			ChildExecutionID: core.ExecutionIdDerived{ExecutionId: le.ExecutionID}, FinishedVersion: le.NextVersion, Result: rv}, t0)
	return err
}

// wantResponses checks that parent has one response per child of want,
// with cursors 1..n.
func wantResponses(t *testing.T, svc *store.Service, parent core.ExecutionId, want ...core.ExecutionId) {
	t.Helper()
	l := must(svc.Get(context.Background(), parent))(t)
	got := map[core.ExecutionId]int{}
	for i, r := range l.Responses {
		if r.Cursor != core.ResponseCursor(i+1) {
			t.Fatalf("response %d has cursor %d", i, r.Cursor)
		}
		got[r.Event.Event.Event.(*core.ChildExecutionFinished).ChildExecutionID.ExecutionId]++
	}
	if len(l.Responses) != len(want) {
		t.Fatalf("%d responses, want %d", len(l.Responses), len(want))
	}
	for _, c := range want {
		if got[c] != 1 {
			t.Fatalf("child %s answered %d times", c, got[c])
		}
	}
}

func wantStatus(t *testing.T, svc *store.Service, id core.ExecutionId, want core.StateKind) {
	t.Helper()
	ps := must(svc.GetPendingState(context.Background(), id))(t)
	if ps.PendingState.State != want {
		t.Fatalf("%s is %s, want state %d", id, ps.PendingState.Status(), want)
	}
}

func childIDs(ls []core.LockedExecution) []core.ExecutionId {
	out := make([]core.ExecutionId, len(ls))
	for i, l := range ls {
		out[i] = l.ExecutionID
	}
	return out
}

// Siblings finishing at the same moment commit without a cancelled
// transaction or a failed condition: each writes its own head (the one
// elected to unblock the parent writes the parent too), and registers in
// the parent's inbox with a single-item update.
func TestFanInSiblingsFinishingTogetherNeverConflict(t *testing.T) {
	ctx := context.Background()
	meter := dynamometer.NewCapacityMeter()
	b, _ := newBackend(t, dynamo.Options{}, meter.Register)
	svc := store.New(b, store.Options{Clock: &fixedClock{t0}})
	const n = 24
	parent, kids, _ := fanInParent(t, svc, n, true)
	wantStatus(t, svc, parent, core.StateBlockedByJoinSet)
	meter.Reset()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, k := range kids {
		wg.Go(func() { errs[i] = finish(dynamometer.WithMeterLabel(ctx, "finish"), svc, k, fmt.Sprint(i)) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("child %d: %v", i, err)
		}
	}
	u := meter.Snapshot()["finish"]
	if u.Cancelled != 0 || u.ConditionFailed != 0 {
		t.Fatalf("%d of %d transactions cancelled, %d conditions failed: siblings contended", u.Cancelled, u.Transactions, u.ConditionFailed)
	}
	if u.Transactions != 1 {
		t.Fatalf("%d transactions, want 1 (the elected response unblocking the parent)", u.Transactions)
	}
	if st := b.Stats(); st.Registered < n || st.Retries != 0 {
		t.Fatalf("stats %+v: want %d registrations and no re-run", st, n)
	}
	wantStatus(t, svc, parent, core.StatePendingAt)
	wantResponses(t, svc, parent, childIDs(kids)...)
}

// A responder elected to unblock its parent that dies before committing
// leaves the parent blocked with a sibling's response deferred; the sweep
// that resolves the dead responder's expired lock settles the parent, and
// the responder's retry later adds its own response once.
func TestFanInElectedResponderDiesTheSweepUnblocksTheParent(t *testing.T) {
	ctx := context.Background()
	svc, b := newService(t, &fixedClock{t0}, dynamo.Options{})
	parent, kids, _ := fanInParent(t, svc, 2, true)
	dead, live := kids[0], kids[1]
	elected := must(b.RegisterResponse(ctx, parent, dead.ExecutionID))(t)
	if !elected {
		t.Fatal("the first registration after the parent blocked was not elected")
	}
	noErr(t, finish(ctx, svc, live, "live"))
	wantStatus(t, svc, parent, core.StateBlockedByJoinSet) // the claim is the dead responder's
	// The dead responder's lock (one minute) expires; the sweep retries it
	// and settles its parent.
	res := must(store.Sweep(ctx, svc, t0.Add(2*time.Minute)))(t)
	if res.ExpiredLocks != 1 {
		t.Fatalf("sweep %+v, want 1 expired lock", res)
	}
	wantStatus(t, svc, parent, core.StatePendingAt)
	wantResponses(t, svc, parent, live.ExecutionID)
	// The retry of the dead responder finishes it: its response is added once.
	req := lockReq(t0.Add(3*time.Minute), compAct)
	le := must(svc.LockOne(ctx, req, dead.ExecutionID, must(svc.Get(ctx, dead.ExecutionID))(t).NextVersion))(t)
	noErr(t, finish(ctx, svc, le, "retried"))
	wantResponses(t, svc, parent, live.ExecutionID, dead.ExecutionID)
}

// A child that registered but had not committed when its parent blocked is
// fenced by the blocking commit: its commit fails, and its next run applies
// its response to the parent's head directly, so the parent cannot stay
// blocked with the response present (docs/spec/semantics.md §8.3).
func TestFanInBlockingFencesChildrenStillFinishing(t *testing.T) {
	ctx := context.Background()
	svc, b := newService(t, &fixedClock{t0}, dynamo.Options{})
	parent, kids, v := fanInParent(t, svc, 1, false)
	registered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	b.SetAfterRegister(func(core.ExecutionId) {
		once.Do(func() { close(registered); <-release })
	})
	done := make(chan error)
	go func() { done <- finish(ctx, svc, kids[0], "in flight") }()
	<-registered // the child registered; its commit waits
	must(svc.Append(ctx, parent, v, core.AppendRequest{CreatedAt: t0, Event: hist(&core.JoinNext{JoinSetID: fanJS, RunExpiresAt: t0})}))(t)
	wantStatus(t, svc, parent, core.StateBlockedByJoinSet)
	head := must(b.RawPartition(ctx, "E#"+kids[0].ExecutionID.String()))(t)
	if el, _ := head[0]["el"].(*types.AttributeValueMemberBOOL); el == nil || !el.Value {
		t.Fatalf("the in-flight child was not fenced: %v", head[0]["el"])
	}
	close(release)
	noErr(t, <-done)
	wantStatus(t, svc, parent, core.StatePendingAt)
	wantResponses(t, svc, parent, kids[0].ExecutionID)
}

// A deferred response is applied once, whatever repeats: a registration
// landing again after it was applied, a commit whose inbox clean-up never
// ran (the process died after the commit).
func TestFanInDeferredResponseIsAppliedOnce(t *testing.T) {
	ctx := context.Background()
	svc, b := newService(t, &fixedClock{t0}, dynamo.Options{})
	parent, kids, _ := fanInParent(t, svc, 2, false)
	noErr(t, finish(ctx, svc, kids[0], "a"))
	if ok := must(b.HasDeferredResponses(ctx, parent))(t); !ok {
		t.Fatal("the response was not deferred")
	}
	b.SetSkipAfterCommit(true) // the drain commits, its clean-up is lost
	wantResponses(t, svc, parent, kids[0].ExecutionID)
	b.SetSkipAfterCommit(false)
	if ok := must(b.HasDeferredResponses(ctx, parent))(t); !ok {
		t.Fatal("the key of the applied response should still be in the inbox")
	}
	must(b.RegisterResponse(ctx, parent, kids[0].ExecutionID))(t) // a late duplicate
	wantResponses(t, svc, parent, kids[0].ExecutionID)
	if ok := must(b.HasDeferredResponses(ctx, parent))(t); ok {
		t.Fatal("the stale key was not removed from the inbox")
	}
	noErr(t, finish(ctx, svc, kids[1], "b"))
	wantResponses(t, svc, parent, kids[0].ExecutionID, kids[1].ExecutionID)
}
