package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/worker"
	"github.com/stela-dev/stela/worker/workertest"
)

// TestChildrenInheritTheTraceContext: the executions a workflow creates
// carry its "tracing:" metadata (Obelisk's convention), and nothing else of
// it, so one trace follows the workflow and what it spawns.
func TestChildrenInheritTheTraceContext(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	worker.Activity(env.Worker, greetFFQN, greet)
	worker.Workflow(env.Worker, twiceFFQN, twice)
	id, err := core.NewExecutionId(uint64(env.Clock.Now().UnixMilli()), nil)
	if err != nil {
		t.Fatal(err)
	}
	ffqn, err := core.ParseFunctionFqn(twiceFFQN)
	if err != nil {
		t.Fatal(err)
	}
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	now := env.Clock.Now()
	if _, err := env.Store.Create(context.Background(), core.CreateRequest{CreatedAt: now, ExecutionID: id, FFQN: ffqn,
		Params: core.Params{[]byte(`"World"`)}, ScheduledAt: now,
		ComponentID: core.ComponentId{ComponentType: core.ComponentTypeWorkflow},
		Metadata:    core.ExecutionMetadata{"tracing:traceparent": tp, "tracing:tracestate": "k=v", "owner": "ops"}}); err != nil {
		t.Fatal(err)
	}
	env.Run()
	env.Advance(time.Second)
	if _, err := workertest.Result[string](env, id); err != nil {
		t.Fatal(err)
	}
	children := 0
	for _, r := range env.Log(id).Responses {
		fin, ok := r.Event.Event.Event.(*core.ChildExecutionFinished)
		if !ok {
			continue
		}
		children++
		child := fin.ChildExecutionID.ExecutionId
		c := env.Log(child).Created()
		if c == nil {
			t.Fatalf("%s has no Created event", child)
		}
		want := core.ExecutionMetadata{"tracing:traceparent": tp, "tracing:tracestate": "k=v"}
		if len(c.Metadata) != len(want) || c.Metadata["tracing:traceparent"] != tp || c.Metadata["tracing:tracestate"] != "k=v" {
			t.Errorf("child %s metadata = %v, want %v", child, c.Metadata, want)
		}
	}
	if children != 2 {
		t.Fatalf("%d child responses, want 2", children)
	}
}
