package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/core"
)

// AppendMany answers each item as its single method would: a success, a
// version conflict and a child's finish with its response to the parent
// in one request, each on its own.
func TestAppendManyAnswersEachItem(t *testing.T) {
	ctx := context.Background()
	svc := newService(t)
	c := newClient(t, serve(t, svc))
	now := core.TS(time.Now())
	a, b := lockedWorkflow(t, svc), lockedWorkflow(t, svc)
	js := core.GeneratedJoinSetId(1)
	child := core.NewChildExecutionId(a, js, 1)
	if _, err := svc.AppendBatchCreateNewExecution(ctx, now, []core.AppendRequest{
		hist(now, &core.JoinSetCreate{JoinSetID: js}),
		hist(now, &core.JoinSetRequestEvent{JoinSetID: js, Request: &core.ChildExecutionRequest{
			ChildExecutionID: core.ExecutionIdDerived{ExecutionId: child}, TargetFFQN: ffqnActivity, Params: core.Params{}}}),
	}, a, 2, []core.CreateRequest{createReq(now, child, ffqnActivity, core.ComponentTypeActivity, &core.Parent{ExecutionID: a, JoinSetID: js})}, nil); err != nil {
		t.Fatal(err)
	}
	rv := okString("child")
	results, err := c.AppendMany(ctx, []client.AppendItem{
		{ExecutionID: b, Version: 2, Batch: []core.AppendRequest{{CreatedAt: now, Event: &core.Finished{Retval: okString("b")}}}},
		{ExecutionID: b, Version: 7, Batch: []core.AppendRequest{hist(now, &core.Persist{Value: core.Bytes{1}, Kind: core.PersistKind{Type: "execution_id"}})}},
		{ExecutionID: child, Version: 1, Batch: []core.AppendRequest{{CreatedAt: now, Event: &core.Finished{Retval: rv}}},
			Response: &core.AppendResponseToExecution{ParentExecutionID: a, CreatedAt: now, JoinSetID: js,
				ChildExecutionID: core.ExecutionIdDerived{ExecutionId: child}, FinishedVersion: 1, Result: rv}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if results[0].Err != nil || results[0].NextVersion != 2 {
		t.Errorf("finish b: %+v, want next version 2", results[0])
	}
	if !errors.Is(results[1].Err, core.ErrAlreadyFinished) && !errors.Is(results[1].Err, core.ErrVersionConflict) {
		t.Errorf("stale append to b: %v, want a 409", results[1].Err)
	}
	if client.StatusOf(results[1].Err) != 409 {
		t.Errorf("stale append to b: status %d, want 409", client.StatusOf(results[1].Err))
	}
	if results[2].Err != nil || results[2].NextVersion != 1 {
		t.Errorf("child finish: %+v, want next version 1", results[2])
	}
	l, err := svc.Get(ctx, a)
	if err != nil || len(l.Responses) != 1 {
		t.Fatalf("parent has %d responses (%v), want the child's", len(l.Responses), err)
	}
	if _, err := c.AppendMany(ctx, nil); client.StatusOf(err) != 400 {
		t.Errorf("no items: %v, want 400", err)
	}
}

// An item that committed although the answer was lost is recognised on the
// retry (its 409 resolved by reading its events back), like a single write.
func TestAppendManyResolvesALostAnswer(t *testing.T) {
	ctx := context.Background()
	svc := newService(t)
	f := &faultyHandler{next: handlerOf(svc), match: "/v1/worker/append-batch/many", status: 502, fail: 1, commit: true}
	c := faultyServer(t, f)
	id := lockedWorkflow(t, svc)
	now := core.TS(time.Now())
	results, err := c.AppendMany(ctx, []client.AppendItem{{ExecutionID: id, Version: 2,
		Batch: []core.AppendRequest{{CreatedAt: now, Event: &core.Finished{Retval: okString("x")}}}}})
	if err != nil || results[0].Err != nil || results[0].NextVersion != 2 {
		t.Fatalf("AppendMany = %+v, %v; want next version 2 after the lost answer", results, err)
	}
	if f.hits.Load() != 2 {
		t.Fatalf("%d attempts, want 2", f.hits.Load())
	}
}
