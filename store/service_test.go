package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/store/mem"
)

type fixedClock struct{ t core.Timestamp }

func (c *fixedClock) Now() core.Timestamp { return c.t }

func mustParse[T any](t *testing.T, f func(string) (T, error), s string) T {
	t.Helper()
	v, err := f(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestActivityRoundTripAndChildUnblocksParent(t *testing.T) {
	ctx := context.Background()
	t0 := core.UnixEpoch
	svc := store.New(mem.New(), store.Options{Clock: &fixedClock{t0}})
	ffqn := mustParse(t, core.ParseFunctionFqn, "ns:pkg/ifc.fn")
	comp := core.ComponentId{ComponentType: core.ComponentTypeWorkflow}
	parent := mustParse(t, core.ParseExecutionId, "E_01KBNHM5FQW81KP5Y3XMNX31K4")
	dep := core.DeploymentId{}
	if v, err := svc.Create(ctx, core.CreateRequest{CreatedAt: t0, ExecutionID: parent, FFQN: ffqn, ScheduledAt: t0, ComponentID: comp, DeploymentID: dep}); err != nil || v != 1 {
		t.Fatalf("create: v=%d err=%v", v, err)
	}
	exr := mustParse(t, core.ParseExecutorId, "Exr_01KBNJ2T3D8W7H3X6Q4M9R5V1A")
	run := mustParse(t, core.ParseRunId, "Run_01KBNJ2V0P6C4Y8N2B7K3T5W9E")
	req := core.LockRequest{BatchSize: 5, PendingAtOrSooner: t0, CreatedAt: t0, ComponentID: comp, ExecutorID: exr, RunID: run, LockExpiresAt: t0.Add(time.Second), RetryConfig: core.RetryConfigZero()}
	locked, err := svc.LockPendingByFFQNs(ctx, req, []core.FunctionFqn{ffqn})
	if err != nil || len(locked) != 1 || locked[0].NextVersion != 2 {
		t.Fatalf("lock: %+v err=%v", locked, err)
	}
	js := mustParse(t, core.ParseJoinSetId, "g:1")
	child := parent.NextLevel(js)
	batch := []core.AppendRequest{
		{CreatedAt: t0, Event: &core.HistoryEventRequest{Event: &core.JoinSetCreate{JoinSetID: js}}},
		{CreatedAt: t0, Event: &core.HistoryEventRequest{Event: &core.JoinSetRequestEvent{JoinSetID: js, Request: &core.ChildExecutionRequest{ChildExecutionID: core.ExecutionIdDerived{ExecutionId: child}, TargetFFQN: ffqn}}}},
		{CreatedAt: t0, Event: &core.HistoryEventRequest{Event: &core.JoinNext{JoinSetID: js, RunExpiresAt: t0}}},
	}
	next, err := svc.AppendBatchCreateNewExecution(ctx, t0, batch, parent, 2, []core.CreateRequest{{CreatedAt: t0, ExecutionID: child, FFQN: ffqn, Parent: &core.Parent{ExecutionID: parent, JoinSetID: js}, ScheduledAt: t0, ComponentID: comp, DeploymentID: dep}}, nil)
	if err != nil || next != 5 {
		t.Fatalf("append batch create: next=%d err=%v", next, err)
	}
	ps, _ := svc.GetPendingState(ctx, parent)
	if ps.PendingState.Status() != "blocked_by_join_set" {
		t.Fatalf("parent state = %s, want blocked", ps.PendingState.Status())
	}
	// A stale version is a VersionConflict with the expected version.
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
	if got := log.PendingState; got.State != core.StatePendingAt || !got.PendingAt.ScheduledAt.Equal(t1) || len(log.Responses) != 1 || log.NextVersion != 5 {
		t.Fatalf("parent after response: state=%v at=%v responses=%d next=%d", got.Status(), got.PendingAt, len(log.Responses), log.NextVersion)
	}
	rv, err := svc.WaitForFinishedResult(ctx, child)
	if err != nil || rv.Kind != core.ReturnOk {
		t.Fatalf("child result: %+v %v", rv, err)
	}
}

func TestGCGraceZeroIsTheDefaultAndNegativeIsNone(t *testing.T) {
	for _, c := range []struct{ in, want time.Duration }{
		{0, store.DefaultGCGrace},
		{-1, 0},
		{-time.Hour, 0},
		{5 * time.Minute, 5 * time.Minute},
	} {
		if got := store.GCGraceOf(c.in); got != c.want {
			t.Errorf("gcGrace(%v)=%v, want %v", c.in, got, c.want)
		}
	}
}
