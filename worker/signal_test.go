package worker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/worker"
	"github.com/stela-dev/stela/worker/workertest"
)

const signalWF = "demo:test/workflow.signals"

// collect waits for n signals "item" (after a sleep, so that signals can be
// sent before the first wait) and returns them joined.
func collect(wf *worker.Context, n int) (string, error) {
	if err := wf.Sleep(time.Minute); err != nil {
		return "", err
	}
	var got []string
	for range n {
		v, err := worker.WaitSignal[string](wf, "item")
		if err != nil {
			return "", err
		}
		got = append(got, v)
	}
	return strings.Join(got, ","), nil
}

// TestSignalSentBeforeTheWaitIsNotLost: signals sent before the workflow
// ran at all, and while it sleeps, are received in the order sent, each
// once; one sent after it waits wakes it up.
func TestSignalSentBeforeTheWaitIsNotLost(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	worker.Workflow(env.Worker, signalWF, collect)
	id := env.Submit(signalWF, 3)
	if seq := env.Signal(id, "item", "a"); seq != 1 { // before the first run
		t.Fatalf("first signal got sequence %d, want 1", seq)
	}
	env.Run()
	env.Signal(id, "item", "b") // while it sleeps
	env.Advance(time.Minute)
	if st := env.Status(id); st.State != core.StateBlockedByJoinSet {
		t.Fatalf("after two signals the workflow is %v, want blocked on the third", st)
	}
	env.Signal(id, "item", "c") // while it waits
	env.Run()
	got, err := workertest.Result[string](env, id)
	if err != nil || got != "a,b,c" {
		t.Fatalf("result %q, %v; want a,b,c", got, err)
	}
}

// TestSignalRetriedWithTheSameKeyIsDeliveredOnce: a send repeated with its
// idempotency key (a client retrying after a timeout) is not a second
// signal; another send with the same value is.
func TestSignalRetriedWithTheSameKeyIsDeliveredOnce(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	worker.Workflow(env.Worker, signalWF, collect)
	id := env.Submit(signalWF, 2)
	env.Run()
	for range 3 {
		if seq, err := env.TrySignal(id, "item", "x", "key-1"); err != nil || seq != 1 {
			t.Fatalf("send with key-1: seq %d, %v; want 1", seq, err)
		}
	}
	if seq, err := env.TrySignal(id, "item", "x", "key-2"); err != nil || seq != 2 {
		t.Fatalf("send with key-2: seq %d, %v; want 2", seq, err)
	}
	env.Advance(time.Minute)
	if got, err := workertest.Result[string](env, id); err != nil || got != "x,x" {
		t.Fatalf("result %q, %v; want x,x", got, err)
	}
}

// TestSignalsSurviveAReplay: a workflow replayed from its history by
// another worker (the first one forgot it) receives the signals in the
// same order and the later ones too.
func TestSignalsSurviveAReplay(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	worker.Workflow(env.Worker, signalWF, collect)
	id := env.Submit(signalWF, 3)
	env.Run()
	env.Advance(time.Minute)
	env.Signal(id, "item", "a")
	env.Run()
	env.Worker.Close() // forget the parked run: the next lock replays
	env.Signal(id, "item", "b")
	env.Signal(id, "item", "c")
	env.Run()
	if got, err := workertest.Result[string](env, id); err != nil || got != "a,b,c" {
		t.Fatalf("result %q, %v; want a,b,c", got, err)
	}
}

// TestWaitSignalTimeout: a wait that times out returns ok=false; the
// signal sent after it is not lost but received by the next wait.
func TestWaitSignalTimeout(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	const ffqn = "demo:test/workflow.timeout"
	worker.Workflow(env.Worker, ffqn, func(wf *worker.Context, _ struct{}) (string, error) {
		v, ok, err := worker.WaitSignalTimeout[string](wf, "go", time.Hour)
		if err != nil {
			return "", err
		}
		if ok {
			return "early " + v, nil
		}
		v, ok, err = worker.WaitSignalTimeout[string](wf, "go", time.Hour)
		if err != nil || !ok {
			return "", errors.Join(err, errors.New("second wait timed out"))
		}
		return "late " + v, nil
	})
	id := env.Submit(ffqn, nil)
	env.Run()
	env.Advance(time.Hour) // the first wait times out, its stub is cancelled
	env.Advance(0)         // the store's cancellation driver finishes the stub
	if st := env.Status(id); st.State != core.StateBlockedByJoinSet || st.Blocked.JoinSetID.String() != "n:signal/go/2" {
		t.Fatalf("after the timeout the workflow is %v, want waiting for its second signal", st)
	}
	if seq := env.Signal(id, "go", "v"); seq != 2 {
		t.Fatalf("the signal after the timeout got sequence %d, want 2 (the first stub is cancelled)", seq)
	}
	env.Run()
	got, err := workertest.Result[string](env, id)
	if err != nil || got != "late v" {
		t.Fatalf("result %q, %v; want %q", got, err, "late v")
	}
}

// TestWaitSignalTimeoutSignalFirst: a signal before the timeout is
// returned and the delay cancelled (the workflow finishes at once).
func TestWaitSignalTimeoutSignalFirst(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	const ffqn = "demo:test/workflow.timeout-first"
	worker.Workflow(env.Worker, ffqn, func(wf *worker.Context, _ struct{}) (int, error) {
		v, ok, err := worker.WaitSignalTimeout[int](wf, "n", time.Hour)
		if err != nil || !ok {
			return 0, errors.Join(err, errors.New("timed out"))
		}
		return v, nil
	})
	id := env.Submit(ffqn, nil)
	env.Signal(id, "n", 42)
	env.Run()
	if got, err := workertest.Result[int](env, id); err != nil || got != 42 {
		t.Fatalf("result %d, %v; want 42", got, err)
	}
}

// TestSignalRefused: a signal to an unknown execution, to an activity, to
// a finished workflow, or with a bad name is refused and writes nothing.
func TestSignalRefused(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	const act = "demo:test/activity.noop"
	worker.Activity(env.Worker, act, func(_ context.Context, _ struct{}) (int, error) { return 1, nil })
	worker.Workflow(env.Worker, signalWF, collect)
	unknown := core.ExecutionIdDeterministicAtUnixEpoch([32]byte{1})
	if _, err := env.TrySignal(unknown, "item", 1, ""); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("unknown execution: %v, want not found", err)
	}
	a := env.Submit(act, nil)
	env.Run()
	if _, err := env.TrySignal(a, "item", 1, ""); !errors.Is(err, core.ErrValidation) {
		t.Errorf("activity: %v, want a validation error", err)
	}
	w := env.Submit(signalWF, 0)
	if _, err := env.TrySignal(w, "bad name", 1, ""); !errors.Is(err, core.ErrValidation) {
		t.Errorf("bad name: %v, want a validation error", err)
	}
	env.Run()
	env.Advance(time.Minute)
	if _, err := env.TrySignal(w, "item", 1, ""); !errors.Is(err, core.ErrAlreadyFinished) {
		t.Errorf("finished workflow: %v, want already finished", err)
	}
	if n := len(env.Log(w).Responses); n != 1 { // the sleep's
		t.Errorf("finished workflow has %d responses, want only its sleep's", n)
	}
}

// TestWaitSignalTimeoutRaceKeepsTheSignal: the timer fires and the signal
// arrives before the workflow runs again (the delay's response first): the
// wait returns the signal rather than dropping it with the cancelled stub.
func TestWaitSignalTimeoutRaceKeepsTheSignal(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	const ffqn = "demo:test/workflow.timeout-race"
	worker.Workflow(env.Worker, ffqn, func(wf *worker.Context, _ struct{}) (string, error) {
		v, ok, err := worker.WaitSignalTimeout[string](wf, "go", time.Hour)
		if err != nil || !ok {
			return "timed out", err
		}
		return "got " + v, nil
	})
	id := env.Submit(ffqn, nil)
	env.Run()
	env.Clock.Advance(time.Hour)
	env.Sweep() // the delay's response is written, the workflow not run yet
	if seq := env.Signal(id, "go", "v"); seq != 1 {
		t.Fatalf("signal got sequence %d, want 1 (the stub was not cancelled yet)", seq)
	}
	env.Run()
	if got, err := workertest.Result[string](env, id); err != nil || got != "got v" {
		t.Fatalf("result %q, %v; want %q", got, err, "got v")
	}
}

// TestCancellingAWorkflowWaitingForASignal: the store's cancellation
// driver cancels the stub it waits on and finishes it as cancelled; a
// signal after that is refused.
func TestCancellingAWorkflowWaitingForASignal(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	const ffqn = "demo:test/workflow.wait-cancellable"
	worker.Workflow(env.Worker, ffqn, func(wf *worker.Context, _ struct{}) (string, error) {
		return worker.WaitSignal[string](wf, "go")
	})
	id := env.Submit(ffqn, nil)
	env.Run()
	if _, err := env.Store.Cancel(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	for range 3 { // driver passes: cancel the stub, finish it, finish the workflow
		env.Advance(0)
	}
	rv := env.ReturnValue(id)
	if rv.Failure == nil || rv.Failure.Kind != core.FailureCancelled {
		t.Fatalf("result %+v, want cancelled", rv)
	}
	if _, err := env.TrySignal(id, "go", "late", ""); !errors.Is(err, core.ErrAlreadyFinished) {
		t.Fatalf("signal after the cancellation: %v, want already finished", err)
	}
}
