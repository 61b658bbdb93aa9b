package worker_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/worker"
	"github.com/stela-dev/stela/worker/workertest"
)

const tickFFQN = "demo:test/activity.tick"

func countTicks(n *atomic.Int32, w *worker.Worker) {
	worker.Activity(w, tickFFQN, func(context.Context, string) (int, error) { return int(n.Add(1)), nil })
}

func ticksOf(t *testing.T, env *workertest.Env, sched core.ExecutionId) []core.ExecutionId {
	t.Helper()
	var ids []core.ExecutionId
	for _, e := range env.Log(sched).EventHistory() {
		if s, ok := e.Event.(*core.Schedule); ok {
			ids = append(ids, s.ExecutionID)
		}
	}
	return ids
}

// TestScheduleTicksOnceAcrossWorkersAndReplays: an hourly schedule served
// by two workers in turn, each forgetting its run (so every step replays
// the schedule's history), creates exactly one execution per tick, at the
// tick's time.
func TestScheduleTicksOnceAcrossWorkersAndReplays(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	worker.RegisterSchedules(env.Worker)
	var n atomic.Int32
	countTicks(&n, env.Worker)
	ctx := context.Background()
	id, err := worker.CreateSchedule(ctx, env.Worker, worker.ScheduleSpec{Cron: "0 * * * *", FFQN: tickFFQN, Params: core.Params{[]byte(`"x"`)}})
	if err != nil {
		t.Fatal(err)
	}
	other := env.NewWorker(nil, worker.Options{})
	worker.RegisterSchedules(other)
	countTicks(&n, other)
	env.Run()
	for hour := 1; hour <= 4; hour++ {
		env.Worker.Close() // forget the parked run
		env.Clock.Advance(time.Hour)
		env.Sweep()
		w := env.Worker
		if hour%2 == 0 {
			w = other
		}
		if err := w.RunUntilIdle(ctx); err != nil {
			t.Fatal(err)
		}
		other.Close()
		env.Run()
		var last worker.ScheduleTick
		if !env.State(id, "last-tick", &last) || !last.At.Equal(workertest.Start.Add(time.Duration(hour)*time.Hour).Time) {
			t.Fatalf("hour %d: last tick %+v", hour, last)
		}
	}
	ticks := ticksOf(t, env, id)
	seen := map[core.ExecutionId]bool{}
	for _, tk := range ticks {
		seen[tk] = true
		if st := env.Status(tk); st.State != core.StateFinished {
			t.Errorf("tick %s: %v, want finished", tk, st)
		}
	}
	if len(ticks) != 4 || len(seen) != 4 {
		t.Fatalf("%d ticks (%d distinct), want 4", len(ticks), len(seen))
	}
	if n.Load() != 4 {
		t.Fatalf("the tick function ran %d times, want 4", n.Load())
	}
}

// TestScheduleTimeZoneOverlapPauseDelete: a daily 09:00 New York schedule
// ticks at 14:00 UTC in January; with skip, a tick while the previous one
// runs is skipped; a paused schedule creates nothing; a deleted (cancelled)
// one stops.
func TestScheduleTimeZoneOverlapPauseDelete(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	worker.RegisterSchedules(env.Worker)
	const slow = "demo:test/workflow.slow-tick"
	worker.Workflow(env.Worker, slow, func(wf *worker.Context, _ struct{}) (worker.Unit, error) {
		_, err := worker.WaitSignal[worker.Unit](wf, "done")
		return worker.Unit{}, err
	})
	ctx := context.Background()
	id, err := worker.CreateSchedule(ctx, env.Worker, worker.ScheduleSpec{Cron: "0 9 * * *", TimeZone: "America/New_York", FFQN: slow})
	if err != nil {
		t.Fatal(err)
	}
	env.Run()
	env.Advance(14 * time.Hour) // 2026-01-01 09:00 EST
	ticks := ticksOf(t, env, id)
	if len(ticks) != 1 || ticks[0].ULID().Time() != uint64(workertest.Start.Add(14*time.Hour).UnixMilli()) {
		t.Fatalf("first tick %v, want one at 14:00 UTC", ticks)
	}
	env.Advance(24 * time.Hour) // the first tick still waits: skipped
	var last worker.ScheduleTick
	if !env.State(id, "last-tick", &last) || !last.Skipped || len(ticksOf(t, env, id)) != 1 {
		t.Fatalf("second day: %+v, %d ticks; want skipped", last, len(ticksOf(t, env, id)))
	}
	env.Signal(ticks[0], "done", nil)
	env.Run()
	if _, err := env.Store.PauseExecution(ctx, id, env.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	env.Advance(48 * time.Hour)
	if n := len(ticksOf(t, env, id)); n != 1 {
		t.Fatalf("paused schedule created ticks: %d", n)
	}
	if _, err := env.Store.UnpauseExecution(ctx, id, env.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	env.Advance(0) // the missed tick runs once, late
	if n := len(ticksOf(t, env, id)); n != 2 {
		t.Fatalf("after unpausing: %d ticks, want 2 (one late tick)", n)
	}
	if _, err := env.Store.Cancel(ctx, id); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		env.Advance(0)
	}
	if rv := env.ReturnValue(id); rv.Failure == nil || rv.Failure.Kind != core.FailureCancelled {
		t.Fatalf("deleted schedule: %+v, want cancelled", rv)
	}
	env.Advance(72 * time.Hour)
	if n := len(ticksOf(t, env, id)); n != 2 {
		t.Fatalf("deleted schedule created ticks: %d", n)
	}
}

// TestScheduleSpecValidation: bad specs are refused before anything is created.
func TestScheduleSpecValidation(t *testing.T) {
	for _, s := range []worker.ScheduleSpec{
		{Cron: "not cron", FFQN: tickFFQN},
		{Cron: "@hourly", TimeZone: "Mars/Olympus", FFQN: tickFFQN},
		{Cron: "@hourly", FFQN: "nope"},
		{Cron: "@hourly", FFQN: tickFFQN, Overlap: "sometimes"},
	} {
		if err := s.Validate(); err == nil {
			t.Errorf("%+v accepted", s)
		}
	}
	if err := (worker.ScheduleSpec{Cron: "@every 10m", FFQN: tickFFQN}).Validate(); err != nil {
		t.Errorf("@every: %v", err)
	}
}
