package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/sqlite"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/store/storetest"
)

// BenchmarkPurge measures the retention purge of the embedded store at its
// default durability (fsync): per op, 500 finished activities (create,
// lock, two log rows, finish: 6 rows each) and 20 finished workflows with
// 10 child activities each (55 rows per tree) are written, then timed:
// retention passes until every tree is gone. It reports trees/s and rows/s
// of the purge.
//
//	go test ./sqlite -run '^$' -bench Purge -benchtime 3x
func BenchmarkPurge(b *testing.B) {
	ctx := context.Background()
	const activities, workflows = 500, 20
	var trees, rows int
	var spent time.Duration
	for b.Loop() {
		b.StopTimer()
		clock := storetest.NewSimClock(core.UnixEpoch)
		be, err := sqlite.Open(filepath.Join(b.TempDir(), "stela.db"), sqlite.Options{})
		if err != nil {
			b.Fatal(err)
		}
		svc := store.New(be, store.Options{Clock: clock, Retention: core.RetainFor(time.Hour)})
		for range workflows {
			if err := finishedWorkflow(ctx, svc, 10); err != nil {
				b.Fatal(err)
			}
		}
		for i := range activities {
			id := newID()
			_, err := svc.Create(ctx, core.CreateRequest{CreatedAt: t0, ExecutionID: id, FFQN: ffqnA, ScheduledAt: t0,
				ComponentID: core.ComponentId{ComponentType: core.ComponentTypeActivity}, Params: core.Params{}})
			if err == nil {
				_, err = svc.LockOne(ctx, core.LockRequest{CreatedAt: t0, PendingAtOrSooner: t0,
					ComponentID: core.ComponentId{ComponentType: core.ComponentTypeActivity}, ExecutorID: lockedBy(1).ExecutorID,
					RunID: lockedBy(uint64(i)).RunID, LockExpiresAt: t0.Add(time.Hour), RetryConfig: core.RetryConfigZero()}, id, 1)
			}
			if err == nil {
				err = svc.AppendLogBatch(ctx, []core.LogInfoAppendRow{
					{ExecutionID: id, RunID: lockedBy(1).RunID, Entry: core.LogEntry{CreatedAt: t0, Level: core.LogInfo, Message: "start"}},
					{ExecutionID: id, RunID: lockedBy(1).RunID, Entry: core.LogEntry{CreatedAt: t0, Level: core.LogInfo, Message: "done"}}})
			}
			if err == nil {
				_, err = svc.Append(ctx, id, 2, core.AppendRequest{CreatedAt: t0, Event: &core.Finished{Retval: core.RetOk(nil)}})
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		clock.Advance(2 * time.Hour)
		b.StartTimer()
		start := time.Now()
		for {
			res, err := svc.ApplyRetention(ctx, clock.Now())
			if err != nil {
				b.Fatal(err)
			}
			trees += res.Expired
			rows += res.Items
			if res.Trees == 0 {
				break
			}
		}
		spent += time.Since(start)
		b.StopTimer()
		if err := svc.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	if trees != b.N*(activities+workflows) {
		b.Fatalf("purged %d trees, want %d", trees, b.N*(activities+workflows))
	}
	b.ReportMetric(float64(trees)/spent.Seconds(), "trees/s")
	b.ReportMetric(float64(rows)/spent.Seconds(), "rows/s")
}

// finishedWorkflow writes a workflow that created n child activities, each
// of which finished and answered, then finished itself.
func finishedWorkflow(ctx context.Context, svc *store.Service, n int) error {
	wf := core.ComponentId{ComponentType: core.ComponentTypeWorkflow}
	act := core.ComponentId{ComponentType: core.ComponentTypeActivity}
	id := newID()
	if _, err := svc.Create(ctx, core.CreateRequest{CreatedAt: t0, ExecutionID: id, FFQN: ffqnB, ScheduledAt: t0,
		ComponentID: wf, Params: core.Params{}}); err != nil {
		return err
	}
	if _, err := svc.LockOne(ctx, core.LockRequest{CreatedAt: t0, PendingAtOrSooner: t0, ComponentID: wf,
		ExecutorID: lockedBy(1).ExecutorID, RunID: lockedBy(2).RunID, LockExpiresAt: t0.Add(time.Hour),
		RetryConfig: core.RetryConfigZero()}, id, 1); err != nil {
		return err
	}
	js := mustJS("g:1")
	batch := []core.AppendRequest{{CreatedAt: t0, Event: &core.HistoryEventRequest{Event: &core.JoinSetCreate{JoinSetID: js}}}}
	var children []core.CreateRequest
	child := id.NextLevel(js)
	for range n {
		batch = append(batch, core.AppendRequest{CreatedAt: t0, Event: &core.HistoryEventRequest{Event: &core.JoinSetRequestEvent{
			JoinSetID: js, Request: &core.ChildExecutionRequest{ChildExecutionID: core.ExecutionIdDerived{ExecutionId: child},
				TargetFFQN: ffqnA, Params: core.Params{}}}}})
		children = append(children, core.CreateRequest{CreatedAt: t0, ExecutionID: child, FFQN: ffqnA, ScheduledAt: t0,
			ComponentID: act, Params: core.Params{}, Parent: &core.Parent{ExecutionID: id, JoinSetID: js}})
		child = child.Incremented()
	}
	v, err := svc.AppendBatchCreateNewExecution(ctx, t0, batch, id, 2, children, nil)
	if err != nil {
		return err
	}
	for _, c := range children {
		rv := core.RetOk(nil)
		if _, err := svc.AppendBatchRespondToParent(ctx,
			core.AppendEventsToExecution{ExecutionID: c.ExecutionID, Version: 1, Batch: []core.AppendRequest{{CreatedAt: t0, Event: &core.Finished{Retval: rv}}}},
			core.AppendResponseToExecution{ParentExecutionID: id, CreatedAt: t0, JoinSetID: js,
				ChildExecutionID: core.ExecutionIdDerived{ExecutionId: c.ExecutionID}, FinishedVersion: 1, Result: rv}, t0); err != nil {
			return err
		}
	}
	_, err = svc.Append(ctx, id, v, core.AppendRequest{CreatedAt: t0, Event: &core.Finished{Retval: core.RetOk(nil)}})
	return err
}
