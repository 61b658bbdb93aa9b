package worker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/worker"
	"github.com/stela-dev/stela/worker/workertest"
)

const (
	greetFFQN = "demo:hello/greeter.greet"
	twiceFFQN = "demo:hello/workflow.greet-twice"
)

func greet(_ context.Context, name string) (string, error) { return "Hello, " + name + "!", nil }

func twice(wf *worker.Context, name string) (string, error) {
	a, err := worker.Call[string](wf, greetFFQN, name)
	if err != nil {
		return "", err
	}
	if err := wf.Sleep(time.Second); err != nil {
		return "", err
	}
	return worker.Call[string](wf, greetFFQN, a)
}

func TestActivityHello(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	worker.Activity(env.Worker, greetFFQN, greet)
	id := env.Submit(greetFFQN, "World")
	env.Run()
	got, err := workertest.Result[string](env, id)
	if err != nil || got != "Hello, World!" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestWorkflowCallSleepCall(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	worker.Activity(env.Worker, greetFFQN, greet)
	worker.Workflow(env.Worker, twiceFFQN, twice)
	id := env.Submit(twiceFFQN, "World")
	env.Run()
	if st := env.Status(id); st.State != core.StateBlockedByJoinSet {
		t.Fatalf("after the first call the workflow must wait for its sleep, got %s", st)
	}
	env.Advance(time.Second)
	got, err := workertest.Result[string](env, id)
	if err != nil || got != "Hello, Hello, World!!" {
		t.Fatalf("got %q, %v", got, err)
	}
	for _, e := range env.Log(id).Events {
		b, _ := core.EncodeExecutionRequest(e.Event)
		t.Logf("v%d %s", e.Version, b)
	}
}

func TestActivityErrorRetriedThenRecorded(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	calls := 0
	worker.Activity(env.Worker, "demo:x/y.fail", func(_ context.Context, _ worker.Unit) (int, error) {
		calls++
		return 0, errors.New("boom")
	}, worker.RetryPolicy(2, time.Second))
	id := env.Submit("demo:x/y.fail", nil)
	env.Run()
	env.Advance(time.Second)
	env.Advance(2 * time.Second)
	_, err := workertest.Result[int](env, id)
	var re *worker.ResultError
	if !errors.As(err, &re) || re.Result.Kind != core.ReturnErr || calls != 3 {
		t.Fatalf("err %v, calls %d", err, calls)
	}
}
