package dynamo_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/dynamo"
)

func TestActivityRoundTripAndChildUnblocksParent(t *testing.T) {
	ctx := context.Background()
	svc, _ := newService(t, &fixedClock{t0}, dynamo.Options{})
	parent := newID()
	if v, err := svc.Create(ctx, createReq(parent, ffqnWf, compWf, t0)); err != nil || v != 1 {
		t.Fatalf("create: v=%d err=%v", v, err)
	}
	locked, err := svc.LockPendingByFFQNs(ctx, lockReq(t0, compWf), []core.FunctionFqn{ffqnWf})
	if err != nil || len(locked) != 1 || locked[0].NextVersion != 2 {
		t.Fatalf("lock: %+v err=%v", locked, err)
	}
	if got := string(locked[0].Params[0]); got != `"hello"` {
		t.Fatalf("locked params[0] = %s", got)
	}
	js := mustV(core.ParseJoinSetId("g:1"))
	child := parent.NextLevel(js)
	batch := []core.AppendRequest{
		{CreatedAt: t0, Event: &core.HistoryEventRequest{Event: &core.JoinSetCreate{JoinSetID: js}}},
		{CreatedAt: t0, Event: &core.HistoryEventRequest{Event: &core.JoinSetRequestEvent{JoinSetID: js, Request: &core.ChildExecutionRequest{ChildExecutionID: core.ExecutionIdDerived{ExecutionId: child}, TargetFFQN: ffqnAct}}}},
		{CreatedAt: t0, Event: &core.HistoryEventRequest{Event: &core.JoinNext{JoinSetID: js, RunExpiresAt: t0}}},
	}
	creq := createReq(child, ffqnAct, compAct, t0)
	creq.Parent = &core.Parent{ExecutionID: parent, JoinSetID: js}
	next, err := svc.AppendBatchCreateNewExecution(ctx, t0, batch, parent, 2, []core.CreateRequest{creq}, nil)
	if err != nil || next != 5 {
		t.Fatalf("append batch create: next=%d err=%v", next, err)
	}
	ps, err := svc.GetPendingState(ctx, parent)
	if err != nil || ps.PendingState.Status() != "blocked_by_join_set" {
		t.Fatalf("parent state = %s (%v), want blocked", ps.PendingState.Status(), err)
	}
	_, err = svc.Append(ctx, parent, 4, core.AppendRequest{CreatedAt: t0, Event: &core.Paused{}})
	var vc *core.VersionConflictError
	if !errors.As(err, &vc) || vc.Expected != 5 || vc.Requested != 4 {
		t.Fatalf("stale append err = %v", err)
	}
	t1 := t0.Add(10 * time.Millisecond)
	fin, err := svc.AppendBatchRespondToParent(ctx,
		core.AppendEventsToExecution{ExecutionID: child, Version: 1, Batch: []core.AppendRequest{{CreatedAt: t1, Event: &core.Finished{Retval: core.RetOk(nil)}}}},
		core.AppendResponseToExecution{ParentExecutionID: parent, CreatedAt: t1, JoinSetID: js, ChildExecutionID: core.ExecutionIdDerived{ExecutionId: child}, FinishedVersion: 1, Result: core.RetOk(nil)}, t1)
	if err != nil || fin != 1 {
		t.Fatalf("finish child: %d %v", fin, err)
	}
	log, err := svc.Get(ctx, parent)
	if err != nil {
		t.Fatal(err)
	}
	if got := log.PendingState; got.State != core.StatePendingAt || !got.PendingAt.ScheduledAt.Equal(t1) || len(log.Responses) != 1 || log.NextVersion != 5 || len(log.Events) != 5 {
		t.Fatalf("parent after response: state=%v at=%v responses=%d next=%d events=%d", got.Status(), got.PendingAt, len(log.Responses), log.NextVersion, len(log.Events))
	}
	rv, err := svc.WaitForFinishedResult(ctx, child)
	if err != nil || rv.Kind != core.ReturnOk {
		t.Fatalf("child result: %+v %v", rv, err)
	}
	// A second response for the same child is a conflict.
	_, err = svc.AppendBatchRespondToParent(ctx,
		core.AppendEventsToExecution{ExecutionID: child, Version: 1, Batch: []core.AppendRequest{{CreatedAt: t1, Event: &core.Finished{Retval: core.RetOk(nil)}}}},
		core.AppendResponseToExecution{ParentExecutionID: parent, CreatedAt: t1, JoinSetID: js, ChildExecutionID: core.ExecutionIdDerived{ExecutionId: child}, FinishedVersion: 1, Result: core.RetOk(nil)}, t1)
	if !errors.Is(err, core.ErrAlreadyFinished) {
		t.Fatalf("second finish err = %v, want already finished", err)
	}
	err = svc.AppendResponse(ctx, t1, parent, core.JoinSetResponseEvent{JoinSetID: js,
		Event: &core.ChildExecutionFinished{ChildExecutionID: core.ExecutionIdDerived{ExecutionId: child}, FinishedVersion: 1, Result: core.RetOk(nil)}})
	if !errors.Is(err, core.ErrConflict) {
		t.Fatalf("duplicate child response err = %v, want conflict", err)
	}
}
