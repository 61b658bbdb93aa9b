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

// TestReadHistoryAndSkipHistory: a lock with SkipHistory carries no history
// and no responses, and ReadHistory returns exactly the part a worker lacks:
// history events from a version on and responses after a cursor.
func TestReadHistoryAndSkipHistory(t *testing.T) {
	ctx := context.Background()
	t0 := core.UnixEpoch
	svc := store.New(mem.New(), store.Options{Clock: &fixedClock{t0}})
	ffqn := mustParse(t, core.ParseFunctionFqn, "ns:pkg/ifc.fn")
	comp := core.ComponentId{ComponentType: core.ComponentTypeWorkflow}
	parent := mustParse(t, core.ParseExecutionId, "E_01KBNHM5FQW81KP5Y3XMNX31K4")
	if _, err := svc.Create(ctx, core.CreateRequest{CreatedAt: t0, ExecutionID: parent, FFQN: ffqn, ScheduledAt: t0, ComponentID: comp}); err != nil {
		t.Fatal(err)
	}
	exr := mustParse(t, core.ParseExecutorId, "Exr_01KBNJ2T3D8W7H3X6Q4M9R5V1A")
	run := mustParse(t, core.ParseRunId, "Run_01KBNJ2V0P6C4Y8N2B7K3T5W9E")
	req := core.LockRequest{BatchSize: 1, PendingAtOrSooner: t0, CreatedAt: t0, ComponentID: comp, ExecutorID: exr, RunID: run,
		LockExpiresAt: t0.Add(time.Second), RetryConfig: core.RetryConfigZero()}
	if _, err := svc.LockPendingByFFQNs(ctx, req, []core.FunctionFqn{ffqn}); err != nil {
		t.Fatal(err)
	}
	js := mustParse(t, core.ParseJoinSetId, "g:1")
	hist := func(h core.HistoryEvent) core.AppendRequest {
		return core.AppendRequest{CreatedAt: t0, Event: &core.HistoryEventRequest{Event: h}}
	}
	var batch []core.AppendRequest
	var children []core.CreateRequest
	batch = append(batch, hist(&core.JoinSetCreate{JoinSetID: js}))
	child := parent.NextLevel(js)
	for range 2 {
		batch = append(batch, hist(&core.JoinSetRequestEvent{JoinSetID: js, Request: &core.ChildExecutionRequest{
			ChildExecutionID: core.ExecutionIdDerived{ExecutionId: child}, TargetFFQN: ffqn, Params: core.Params{}}}))
		children = append(children, core.CreateRequest{CreatedAt: t0, ExecutionID: child, FFQN: ffqn, Params: core.Params{},
			Parent: &core.Parent{ExecutionID: parent, JoinSetID: js}, ScheduledAt: t0, ComponentID: comp})
		child = child.Incremented()
	}
	batch = append(batch, hist(&core.JoinNext{JoinSetID: js, RunExpiresAt: t0}))
	if _, err := svc.AppendBatchCreateNewExecution(ctx, t0, batch, parent, 2, children, nil); err != nil {
		t.Fatal(err) // versions 2 (create), 3-4 (requests), 5 (join next)
	}
	for _, c := range children {
		id := core.ExecutionIdDerived{ExecutionId: c.ExecutionID}
		if _, err := svc.AppendBatchRespondToParent(ctx,
			core.AppendEventsToExecution{ExecutionID: c.ExecutionID, Version: 1, Batch: []core.AppendRequest{{CreatedAt: t0, Event: &core.Finished{Retval: core.RetOk(nil)}}}},
			core.AppendResponseToExecution{ParentExecutionID: parent, CreatedAt: t0, JoinSetID: js, ChildExecutionID: id, FinishedVersion: 1, Result: core.RetOk(nil)}, t0); err != nil {
			t.Fatal(err)
		}
	}
	full := req
	full.RunID = mustParse(t, core.ParseRunId, "Run_01KBNJ2V0P6C4Y8N2B7K3T5W9F")
	full.ExecutorID = exr
	skip := full
	skip.SkipHistory = true

	locked, err := svc.LockPendingByFFQNs(ctx, skip, []core.FunctionFqn{ffqn})
	if err != nil || len(locked) != 1 {
		t.Fatalf("lock with skip_history: %v %v", locked, err)
	}
	l := locked[0]
	if len(l.EventHistory) != 0 || len(l.Responses) != 0 || l.NextVersion != 7 || l.FFQN != ffqn || l.ExecutionID != parent {
		t.Fatalf("skip_history lock = next %d, %d history events, %d responses", l.NextVersion, len(l.EventHistory), len(l.Responses))
	}
	// The whole history, as a full lock would have carried it.
	all, err := svc.ReadHistory(ctx, parent, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Events) != 4 || all.Events[0].Version != 2 || all.Events[3].Version != 5 || len(all.Responses) != 2 || all.NextVersion != 7 {
		t.Fatalf("ReadHistory(0, 0) = %+v", all)
	}
	// The part a worker holding versions < 4 and response 1 lacks.
	d, err := svc.ReadHistory(ctx, parent, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Events) != 2 || d.Events[0].Version != 4 || d.Events[1].Version != 5 || len(d.Responses) != 1 || d.Responses[0].Cursor != 2 {
		t.Fatalf("ReadHistory(4, 1) = %+v", d)
	}
	if _, ok := d.Events[1].Event.(*core.JoinNext); !ok {
		t.Fatalf("event at version 5 = %T, want JoinNext", d.Events[1].Event)
	}
	// Up to date: nothing.
	if d, err := svc.ReadHistory(ctx, parent, 7, 2); err != nil || len(d.Events) != 0 || len(d.Responses) != 0 || d.NextVersion != 7 {
		t.Fatalf("ReadHistory(7, 2) = %+v, %v", d, err)
	}
	if _, err := svc.ReadHistory(ctx, mustParse(t, core.ParseExecutionId, "E_01KBNHM5FQW81KP5Y3XMNX31K5"), 0, 0); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("ReadHistory of an unknown execution: %v, want ErrNotFound", err)
	}
	// A full lock (same holder extends) carries the same history and responses.
	full.CreatedAt = t0.Add(time.Millisecond)
	full.LockExpiresAt = t0.Add(2 * time.Second)
	le, err := svc.LockOne(ctx, full, parent, 7)
	if err != nil {
		t.Fatal(err)
	}
	if len(le.EventHistory) != len(all.Events) || len(le.Responses) != len(all.Responses) {
		t.Fatalf("full lock: %d events, %d responses; ReadHistory: %d, %d", len(le.EventHistory), len(le.Responses), len(all.Events), len(all.Responses))
	}
}

// TestTimerWatch: the watch follows delays and locks written through the
// service — set when written, gone when answered or released — and signals
// only deadlines earlier than the one last reported.
func TestTimerWatch(t *testing.T) {
	ctx := context.Background()
	t0 := core.UnixEpoch
	svc := store.New(mem.New(), store.Options{Clock: &fixedClock{t0}})
	w := svc.WatchTimers()
	changed := func() bool {
		select {
		case <-w.Changed():
			return true
		default:
			return false
		}
	}
	next := func(after core.Timestamp) string {
		if d, ok := w.Next(after); ok {
			return d.Sub(t0.Time).String()
		}
		return "none"
	}
	if got := next(t0); got != "none" || changed() {
		t.Fatalf("empty watch: next %s", got)
	}
	ffqn := mustParse(t, core.ParseFunctionFqn, "ns:pkg/ifc.fn")
	exr := mustParse(t, core.ParseExecutorId, "Exr_01KBNJ2T3D8W7H3X6Q4M9R5V1A")
	run := mustParse(t, core.ParseRunId, "Run_01KBNJ2V0P6C4Y8N2B7K3T5W9E")
	start := func(id string, ct core.ComponentType, expires time.Duration) core.ExecutionId {
		eid := mustParse(t, core.ParseExecutionId, id)
		if _, err := svc.Create(ctx, core.CreateRequest{CreatedAt: t0, ExecutionID: eid, FFQN: ffqn, ScheduledAt: t0, ComponentID: core.ComponentId{ComponentType: ct}}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.LockOne(ctx, core.LockRequest{CreatedAt: t0, ComponentID: core.ComponentId{ComponentType: ct}, ExecutorID: exr, RunID: run,
			LockExpiresAt: t0.Add(expires), RetryConfig: core.RetryConfigZero()}, eid, 1); err != nil {
			t.Fatal(err)
		}
		return eid
	}
	act := start("E_01KBNHM5FQW81KP5Y3XMNX31K4", core.ComponentTypeActivity, time.Minute)
	if !changed() || next(t0) != "1m0s" {
		t.Fatalf("after a lock: next %s", next(t0))
	}
	wf := start("E_01KBNHM5FQW81KP5Y3XMNX31K5", core.ComponentTypeWorkflow, time.Hour)
	if changed() {
		t.Fatal("a later deadline must not signal")
	}
	js := mustParse(t, core.ParseJoinSetId, "o:1-sleep")
	delay := core.NewDelayId(wf, js, 1)
	if _, err := svc.AppendBatch(ctx, t0, []core.AppendRequest{
		{CreatedAt: t0, Event: &core.HistoryEventRequest{Event: &core.JoinSetCreate{JoinSetID: js}}},
		{CreatedAt: t0, Event: &core.HistoryEventRequest{Event: &core.JoinSetRequestEvent{JoinSetID: js, Request: &core.DelayRequest{DelayID: delay, ExpiresAt: t0.Add(10 * time.Second), ScheduleAt: core.ScheduleAt{Kind: "now"}}}}},
		{CreatedAt: t0, Event: &core.HistoryEventRequest{Event: &core.JoinNext{JoinSetID: js, RunExpiresAt: t0}}},
	}, wf, 2); err != nil {
		t.Fatal(err)
	}
	if !changed() || next(t0) != "10s" {
		t.Fatalf("after a delay: next %s", next(t0))
	}
	if got := next(t0.Add(10 * time.Second)); got != "1m0s" {
		t.Fatalf("a deadline a sweep covered is dropped: next %s", got)
	}
	if got := next(t0); got != "1m0s" {
		t.Fatalf("and stays dropped: next %s", got)
	}
	if _, err := svc.Append(ctx, act, 2, core.AppendRequest{CreatedAt: t0, Event: &core.Finished{Retval: core.RetOk(nil)}}); err != nil {
		t.Fatal(err)
	}
	if got := next(t0); got != "none" {
		t.Fatalf("after the lock's release (the workflow is blocked, not locked): next %s", got)
	}
	// A delay answered before it is due (cancelled) is gone too.
	delay2 := core.NewDelayId(wf, js, 2)
	if _, err := svc.AppendBatch(ctx, t0, []core.AppendRequest{
		{CreatedAt: t0, Event: &core.HistoryEventRequest{Event: &core.JoinSetRequestEvent{JoinSetID: js, Request: &core.DelayRequest{DelayID: delay2, ExpiresAt: t0.Add(20 * time.Second), ScheduleAt: core.ScheduleAt{Kind: "now"}}}}},
	}, wf, 5); err != nil {
		t.Fatal(err)
	}
	if !changed() || next(t0) != "20s" {
		t.Fatalf("after a second delay: next %s", next(t0))
	}
	if _, err := core.CancelDelay(ctx, svc, delay2, t0); err != nil {
		t.Fatal(err)
	}
	if got := next(t0); got != "none" {
		t.Fatalf("after the delay's cancellation: next %s", got)
	}
	w.Close()
	start("E_01KBNHM5FQW81KP5Y3XMNX31K6", core.ComponentTypeActivity, time.Second)
	if changed() || next(t0) != "none" {
		t.Fatal("a closed watch records nothing")
	}
}

// TestResponseWakesItsSubscriber: a response wakes SubscribeToNextResponses
// at once through the hub, not at the next poll (here: never, the poll
// interval being an hour). Regression: responses were announced under the
// bare execution id while subscribers listened on the response key.
func TestResponseWakesItsSubscriber(t *testing.T) {
	ctx := context.Background()
	t0 := core.UnixEpoch
	svc := store.New(mem.New(), store.Options{Clock: &fixedClock{t0}, PollInterval: time.Hour})
	ffqn := mustParse(t, core.ParseFunctionFqn, "ns:pkg/ifc.fn")
	id := mustParse(t, core.ParseExecutionId, "E_01KBNHM5FQW81KP5Y3XMNX31K4")
	if _, err := svc.Create(ctx, core.CreateRequest{CreatedAt: t0, ExecutionID: id, FFQN: ffqn, ScheduledAt: t0, ComponentID: core.ComponentId{ComponentType: core.ComponentTypeWorkflow}}); err != nil {
		t.Fatal(err)
	}
	js := mustParse(t, core.ParseJoinSetId, "o:1-sleep")
	got := make(chan error, 1)
	subscribed := make(chan struct{})
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		close(subscribed)
		rs, err := svc.SubscribeToNextResponses(wctx, id, 0)
		if err == nil && len(rs) != 1 {
			err = errors.New("want one response")
		}
		got <- err
	}()
	<-subscribed
	// Registered already (then woken by the hub) or not yet (then its first
	// read finds the response): either way it returns without polling.
	if err := svc.AppendResponse(ctx, t0, id, core.JoinSetResponseEvent{JoinSetID: js,
		Event: &core.DelayFinished{DelayID: core.NewDelayId(id, js, 1), Result: true}}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second): // a failure deadline, not a synchronisation delay
		t.Fatal("the subscriber was never woken by the response")
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
