package worker_test

import (
	"context"
	"testing"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/worker"
	"github.com/stela-dev/stela/worker/workertest"
)

const stateWF = "demo:test/workflow.state"

type progress struct {
	Step string
	N    int
}

// publishing sets progress before and after an activity, then waits for a
// signal (so the test reads the state while it runs) and sets it once more.
func registerPublishing(w *worker.Worker) {
	worker.Activity(w, "demo:test/activity.work", func(_ context.Context, n int) (int, error) { return n * 2, nil })
	worker.Workflow(w, stateWF, func(wf *worker.Context, n int) (int, error) {
		if err := wf.SetState("progress", progress{"started", n}); err != nil {
			return 0, err
		}
		m, err := worker.Call[int](wf, "demo:test/activity.work", n)
		if err != nil {
			return 0, err
		}
		if err := wf.SetState("progress", progress{"worked", m}); err != nil {
			return 0, err
		}
		if _, err := worker.WaitSignal[struct{}](wf, "finish"); err != nil {
			return 0, err
		}
		return m, wf.SetState("progress", progress{"done", m})
	})
}

func statePersists(log *core.ExecutionLog) int {
	n := 0
	for _, e := range log.EventHistory() {
		if p, ok := e.Event.(*core.Persist); ok && p.Kind.Type == core.PersistKindState {
			n++
		}
	}
	return n
}

// TestPublishedStateWhileRunningAndAfter: the latest value is readable
// while the workflow waits and after it finished; a replay (another
// worker, the first forgot the run) publishes nothing twice.
func TestPublishedStateWhileRunningAndAfter(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	registerPublishing(env.Worker)
	id := env.Submit(stateWF, 21)
	var p progress
	if env.State(id, "progress", &p) {
		t.Fatalf("state before the first run: %+v", p)
	}
	env.Run()
	if !env.State(id, "progress", &p) || p != (progress{"worked", 42}) {
		t.Fatalf("state while waiting: %+v, want worked 42", p)
	}
	env.Worker.Close() // the next lock replays both SetState calls
	env.Signal(id, "finish", nil)
	env.Run()
	if got, err := workertest.Result[int](env, id); err != nil || got != 42 {
		t.Fatalf("result %d, %v", got, err)
	}
	if !env.State(id, "progress", &p) || p != (progress{"done", 42}) {
		t.Fatalf("state after the finish: %+v, want done 42", p)
	}
	if n := statePersists(env.Log(id)); n != 3 {
		t.Fatalf("%d state events after a replay, want 3 (each SetState once)", n)
	}
}

// TestSetStateRefusesBadKeysAndBigValues: nothing is recorded.
func TestSetStateRefusesBadKeysAndBigValues(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	const ffqn = "demo:test/workflow.bad-state"
	worker.Workflow(env.Worker, ffqn, func(wf *worker.Context, _ struct{}) (string, error) {
		e1 := wf.SetState("bad key", 1)
		e2 := wf.SetState("big", make([]byte, core.MaxStateValueBytes))
		if e1 == nil || e2 == nil {
			return "accepted", nil
		}
		return "refused", nil
	})
	id := env.Submit(ffqn, nil)
	env.Run()
	if got, _ := workertest.Result[string](env, id); got != "refused" {
		t.Fatalf("got %q, want refused", got)
	}
	if n := statePersists(env.Log(id)); n != 0 {
		t.Fatalf("%d state events, want 0", n)
	}
}
