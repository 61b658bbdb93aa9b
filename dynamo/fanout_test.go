package dynamo_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/dynamo"
	"github.com/stela-dev/stela/store"
)

// fanOut returns the batch and the child creations of a workflow submitting
// n children into one join set.
func fanOut(parent core.ExecutionId, n int) ([]core.AppendRequest, []core.CreateRequest) {
	js := mustV(core.ParseJoinSetId("g:fan"))
	batch := []core.AppendRequest{{CreatedAt: t0, Event: hist(&core.JoinSetCreate{JoinSetID: js})}}
	var children []core.CreateRequest
	child := parent.NextLevel(js)
	for i := 0; i < n; i++ {
		batch = append(batch, core.AppendRequest{CreatedAt: t0, Event: hist(&core.JoinSetRequestEvent{JoinSetID: js,
			Request: &core.ChildExecutionRequest{ChildExecutionID: core.ExecutionIdDerived{ExecutionId: child}, TargetFFQN: ffqnAct}})})
		c := createReq(child, ffqnAct, compAct, t0)
		c.Parent = &core.Parent{ExecutionID: parent, JoinSetID: js}
		children = append(children, c)
		child = child.Incremented()
	}
	return batch, children
}

func TestFanOutOf250ChildrenCommitsAtomically(t *testing.T) {
	ctx := context.Background()
	svc, b := newService(t, &fixedClock{t0}, dynamo.Options{})
	parent := newID()
	v := lockedWorkflow(t, svc, parent)
	batch, children := fanOut(parent, 250)
	next, err := svc.AppendBatchCreateNewExecution(ctx, t0, batch, parent, v, children, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := v + core.Version(len(batch)); next != want {
		t.Fatalf("next = %d, want %d", next, want)
	}
	if st := b.Stats(); st.Deferred == 0 || st.Materialised < st.Deferred {
		t.Fatalf("stats %+v: expected deferred children, all materialised", st)
	}
	for _, c := range children {
		ps, err := svc.GetPendingState(ctx, c.ExecutionID)
		if err != nil || ps.PendingState.State != core.StatePendingAt {
			t.Fatalf("child %s: %v %v", c.ExecutionID, ps.PendingState.Status(), err)
		}
	}
	locked := must(svc.LockPendingByFFQNs(ctx, func() core.LockRequest { r := lockReq(t0, compAct); r.BatchSize = 300; return r }(), []core.FunctionFqn{ffqnAct}))(t)
	if len(locked) != 250 {
		t.Fatalf("locked %d children, want 250", len(locked))
	}
	items := must(b.RawPartition(ctx, "E#"+parent.String()))(t)
	for _, it := range items {
		if sk := it[dynamo.AttrSK]; sk != nil {
			if s := skOf(it); len(s) > 2 && s[:2] == "O#" {
				t.Fatalf("outbox item %s left behind", s)
			}
		}
	}
}

func TestInterruptedFanOutIsFinishedByTheNextReader(t *testing.T) {
	ctx := context.Background()
	b, _ := newBackend(t, dynamo.Options{})
	svc := store.New(b, store.Options{Clock: &fixedClock{t0}})
	parent := newID()
	v := lockedWorkflow(t, svc, parent)
	batch, children := fanOut(parent, 150)
	b.SetSkipAfterCommit(true)
	if _, err := svc.AppendBatchCreateNewExecution(ctx, t0, batch, parent, v, children, nil); err != nil {
		t.Fatal(err)
	}
	b.SetSkipAfterCommit(false)
	if b.Stats().Materialised != 0 {
		t.Fatal("children were materialised despite the simulated crash")
	}
	// Reading a missing child finishes the fan-out through its parent.
	last := children[len(children)-1].ExecutionID
	if _, err := svc.GetPendingState(ctx, last); err != nil {
		t.Fatalf("reading the last child: %v", err)
	}
	if st := b.Stats(); st.Deferred == 0 || st.Materialised != st.Deferred {
		t.Fatalf("materialised %d of %d deferred children", st.Materialised, st.Deferred)
	}
	for _, c := range children {
		if _, err := svc.GetPendingState(ctx, c.ExecutionID); err != nil {
			t.Fatalf("child %s: %v", c.ExecutionID, err)
		}
	}
	// The parent carries on normally.
	if _, err := svc.Append(ctx, parent, v+core.Version(len(batch)), core.AppendRequest{CreatedAt: t0, Event: &core.Finished{Retval: core.RetOk(nil)}}); err != nil {
		t.Fatal(err)
	}
}

func TestInterruptedFanOutIsFinishedBeforeTheParentIsRead(t *testing.T) {
	ctx := context.Background()
	b, _ := newBackend(t, dynamo.Options{})
	svc := store.New(b, store.Options{Clock: &fixedClock{t0}})
	parent := newID()
	v := lockedWorkflow(t, svc, parent)
	batch, children := fanOut(parent, 120)
	b.SetSkipAfterCommit(true)
	must(svc.AppendBatchCreateNewExecution(ctx, t0, batch, parent, v, children, nil))(t)
	b.SetSkipAfterCommit(false)
	must(svc.Get(ctx, parent))(t)
	if got, want := b.Stats().Materialised, b.Stats().Deferred; got != want {
		t.Fatalf("materialised %d of %d deferred children", got, want)
	}
}

func TestFanOutWithAnExistingChildFailsAsAWhole(t *testing.T) {
	ctx := context.Background()
	svc, b := newService(t, &fixedClock{t0}, dynamo.Options{})
	parent := newID()
	v := lockedWorkflow(t, svc, parent)
	batch, children := fanOut(parent, 200)
	must(svc.Create(ctx, children[180]))(t)
	_, err := svc.AppendBatchCreateNewExecution(ctx, t0, batch, parent, v, children, nil)
	if !errors.Is(err, core.ErrConflict) {
		t.Fatalf("err = %v, want conflict", err)
	}
	if ps := must(svc.GetPendingState(ctx, parent))(t); ps.PendingState.State != core.StateLocked {
		t.Fatalf("parent changed: %s", ps.PendingState.Status())
	}
	if _, err := svc.GetPendingState(ctx, children[0].ExecutionID); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("first child: %v, want not found", err)
	}
	if b.Stats().Commits == 0 {
		t.Fatal("no commits at all?")
	}
}
