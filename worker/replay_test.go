package worker_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/worker"
	"github.com/stela-dev/stela/worker/workertest"
)

const sinkFFQN = "demo:test/workflow.sink"

// sink uses every workflow call: random values, time, a generated join
// set fanning out to children and a delay, a schedule, a sleep, a direct
// call and a named join set left open (closed when the workflow returns).
func sink(wf *worker.Context, n int) (string, error) {
	r := wf.Random(1, 100)
	t0 := wf.Now()
	js := wf.NewJoinSet()
	for i := range n {
		if _, err := js.Submit(greetFFQN, fmt.Sprint(i)); err != nil {
			return "", err
		}
	}
	if _, err := js.SubmitDelay(time.Second); err != nil {
		return "", err
	}
	var got []string
	for range n + 1 {
		resp, err := js.Next()
		if err != nil {
			return "", err
		}
		if resp.DelayID.IsZero() {
			s, err := worker.Result[string](resp)
			if err != nil {
				return "", err
			}
			got = append(got, s)
		}
	}
	if _, err := js.Next(); err != worker.ErrAllProcessed {
		return "", fmt.Errorf("an exhausted join set must report ErrAllProcessed, got %v", err)
	}
	slices.Sort(got)
	sched, err := wf.Schedule(greetFFQN, "later", worker.In(time.Hour))
	if err != nil {
		return "", err
	}
	s := wf.RandomString(5, 10)
	if err := wf.Sleep(2 * time.Second); err != nil {
		return "", err
	}
	last, err := worker.Call[string](wf, greetFFQN, s)
	if err != nil {
		return "", err
	}
	named, err := wf.NewJoinSetNamed("extra")
	if err != nil {
		return "", err
	}
	if _, err := named.Submit("demo:test/never.served", nil); err != nil {
		return "", err
	}
	t1 := wf.Now()
	return fmt.Sprintf("r=%d %s sched=%s last=%s elapsed=%s", r, strings.Join(got, ","), sched, last, t1.Sub(t0)), nil
}

// runSink runs sink to completion; with replay, the worker forgets every
// suspended workflow before each step, so each step replays the history.
func runSink(t *testing.T, replay bool) (*workertest.Env, core.ExecutionId) {
	env := workertest.New(t, worker.Options{Entropy: newEntropy(1)})
	worker.Activity(env.Worker, greetFFQN, greet)
	worker.Workflow(env.Worker, sinkFFQN, sink)
	env.Worker.Declare("demo:test/never.served", core.ComponentTypeActivity)
	id := env.Submit(sinkFFQN, 5)
	step := func(d time.Duration) {
		if replay {
			env.Worker.Close()
		}
		if d == 0 {
			env.Run()
		} else {
			env.Advance(d)
		}
	}
	step(0)
	for range 10 {
		if env.Status(id).State == core.StateFinished {
			break
		}
		step(time.Second)
	}
	return env, id
}

// TestReplayIsDeterministic runs the same program twice: once kept in
// memory between steps, once replayed from its history at every step. The
// histories (and results) must be identical event for event.
func TestReplayIsDeterministic(t *testing.T) {
	kept, keptID := runSink(t, false)
	replayed, replayedID := runSink(t, true)
	if keptID != replayedID {
		t.Fatalf("ids differ: %s %s", keptID, replayedID)
	}
	a, b := historyOf(t, kept.Log(keptID)), historyOf(t, replayed.Log(replayedID))
	if !slices.Equal(a, b) {
		t.Fatalf("histories differ:\nkept:\n%s\nreplayed:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	got, err := workertest.Result[string](kept, keptID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "Hello, 0!,Hello, 1!,Hello, 2!,Hello, 3!,Hello, 4!") || !strings.Contains(got, "elapsed=3s") {
		t.Fatalf("result %q", got)
	}
	for _, want := range []string{`"join_set_id":"g:1"`, `"join_set_id":"n:extra"`, `"type":"persist"`, `"type":"schedule"`,
		`"join_set_id":"o:1-now"`, `"join_set_id":"o:2-sleep"`, `"join_set_id":"o:3-greet"`, `"type":"join_next_too_many"`,
		`"closing":true`} {
		if !strings.Contains(strings.Join(a, "\n"), want) {
			t.Errorf("history lacks %s", want)
		}
	}
	t.Logf("%d history events, result %s", len(a), got)
}

// TestNondeterminismIsRecorded changes the program between two steps: the
// replay must finish the execution with a nondeterminism failure naming the
// event that no longer matches, never continue silently.
func TestNondeterminismIsRecorded(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	var variant atomic.Int32
	worker.Activity(env.Worker, greetFFQN, greet)
	worker.Activity(env.Worker, "demo:hello/greeter.shout", func(_ context.Context, s string) (string, error) { return s + "!", nil })
	worker.Workflow(env.Worker, "demo:test/workflow.flaky", func(wf *worker.Context, _ worker.Unit) (string, error) {
		target := greetFFQN
		if variant.Load() == 1 {
			target = "demo:hello/greeter.shout"
		}
		a, err := worker.Call[string](wf, target, "x")
		if err != nil {
			return "", err
		}
		if err := wf.Sleep(time.Second); err != nil {
			return "", err
		}
		return a, nil
	})
	id := env.Submit("demo:test/workflow.flaky", nil)
	env.Run()
	env.Worker.Close() // forget the suspended run: the next step replays
	variant.Store(1)
	env.Advance(time.Second)
	rv := env.ReturnValue(id)
	if rv.Kind != core.ReturnExecutionFailure || rv.Failure.Kind != core.FailureNondeterminismDetected {
		t.Fatalf("want a nondeterminism failure, got %+v", rv)
	}
	if d := *rv.Failure.Detail; !strings.Contains(d, "version 2") || !strings.Contains(d, "o:1-greet") {
		t.Fatalf("the detail must name the diverging event: %s", d)
	}
}

// TestTrimmedReplayIsNondeterminism: a program that returns before
// consuming its history (Obelisk's "trimmed second execution").
func TestTrimmedReplayIsNondeterminism(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	var short atomic.Bool
	worker.Workflow(env.Worker, "demo:test/workflow.trim", func(wf *worker.Context, _ worker.Unit) (int, error) {
		if err := wf.Sleep(time.Second); err != nil {
			return 0, err
		}
		if short.Load() {
			return 1, nil
		}
		return 2, wf.Sleep(time.Second)
	})
	id := env.Submit("demo:test/workflow.trim", nil)
	env.Run()
	env.Advance(time.Second) // now waiting for the second sleep
	env.Worker.Close()
	short.Store(true)
	env.Advance(time.Second)
	rv := env.ReturnValue(id)
	if rv.Kind != core.ReturnExecutionFailure || rv.Failure.Kind != core.FailureNondeterminismDetected {
		t.Fatalf("want a nondeterminism failure, got %+v", rv)
	}
	t.Log(*rv.Failure.Detail)
}
