package worker_test

import (
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/worker"
	"github.com/stela-dev/stela/worker/workertest"
)

// TestScheduleChainIdsCarryTheirSchedulingTime: a workflow that reschedules
// itself every hour. Each id it schedules carries the time it was
// scheduled (its ULID's time part), not the chain's first run's: every id
// used to show the first execution's timestamp, however late in the chain.
// A replay of a run returns the id it recorded.
func TestScheduleChainIdsCarryTheirSchedulingTime(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	const tickFFQN = "demo:test/workflow.tick"
	next := make(chan core.ExecutionId, 8)
	replayed := make(chan core.ExecutionId, 8)
	worker.Workflow(env.Worker, tickFFQN, func(wf *worker.Context, n int) (int, error) {
		if n == 3 {
			return n, nil
		}
		id, err := wf.Schedule(tickFFQN, n+1, worker.In(time.Hour))
		if err != nil {
			return 0, err
		}
		if wf.IsReplaying() {
			replayed <- id
		} else {
			next <- id
		}
		return n, wf.Sleep(time.Minute) // a replay after the sleep must return the same id
	})
	first := env.Submit(tickFFQN, 0)
	seen := map[core.ExecutionId]bool{first: true}
	for hour := range 3 {
		env.Run()
		scheduled := <-next
		if want := workertest.Start.Add(time.Duration(hour) * time.Hour); scheduled.ULID().Time() != uint64(want.UnixMilli()) {
			t.Errorf("step %d: %s carries %s, want the time it was scheduled, %s", hour+1, scheduled,
				time.UnixMilli(int64(scheduled.ULID().Time())).UTC(), want)
		}
		if seen[scheduled] {
			t.Fatalf("id %s scheduled twice", scheduled)
		}
		seen[scheduled] = true
		env.Worker.Close() // forget the run: its end is a replay
		env.Advance(time.Minute)
		if again := <-replayed; again != scheduled {
			t.Fatalf("step %d: the replay scheduled %s, the run %s", hour+1, again, scheduled)
		}
		env.Advance(time.Hour - time.Minute)
	}
	env.Run()
	for id := range seen {
		if _, err := workertest.Result[int](env, id); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
}
