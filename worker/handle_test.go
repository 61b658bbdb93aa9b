package worker_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/worker"
	"github.com/stela-dev/stela/worker/workertest"
)

// Typed handles of the tests: a two-parameter activity (WIT add(a: s64,
// b: s64) -> s64), an activity that fails, and a workflow using them.
var (
	addFn     = worker.DefineActivity[worker.Params2[int, int], int]("demo:typed/math.add")
	refuseFn  = worker.DefineActivity[string, worker.Unit]("demo:typed/math.refuse")
	sumFn     = worker.DefineWorkflow[[]int, int]("demo:typed/workflow.sum")
	failingFn = worker.DefineWorkflow[string, string]("demo:typed/workflow.failing")
)

func add(_ context.Context, p worker.Params2[int, int]) (int, error) { return p.P1 + p.P2, nil }

// sum adds xs pairwise: the first pair with Call, the rest submitted into a
// join set and read with the children's typed Result.
func sum(wf *worker.Context, xs []int) (int, error) {
	if len(xs) < 2 {
		return 0, worker.Permanent(errors.New("need two numbers"))
	}
	total, err := addFn.Call(wf, worker.Params2[int, int]{P1: xs[0], P2: xs[1]})
	if err != nil {
		return 0, err
	}
	js := wf.NewJoinSet()
	var kids []worker.Child[int]
	for _, x := range xs[2:] {
		c, err := addFn.Submit(js, worker.Params2[int, int]{P1: x, P2: 0})
		if err != nil {
			return 0, err
		}
		kids = append(kids, c)
	}
	for range kids {
		r, err := js.Next()
		if err != nil {
			return 0, err
		}
		var v int
		for _, c := range kids {
			if c.Is(r) {
				if v, err = c.Result(r); err != nil {
					return 0, err
				}
			}
		}
		total += v
	}
	// The untyped call of a several-parameter function reaches the same Go function.
	one, err := worker.Call[int](wf, addFn.String(), worker.Args{1, 0})
	if err != nil {
		return 0, err
	}
	return total + one, nil
}

func registerTyped(w *worker.Worker) {
	addFn.Register(w, add)
	refuseFn.Register(w, func(_ context.Context, why string) (worker.Unit, error) {
		return worker.Unit{}, worker.Permanent(errors.New(why))
	})
	sumFn.Register(w, sum)
	failingFn.Register(w, func(wf *worker.Context, why string) (string, error) {
		_, err := refuseFn.Call(wf, why)
		return "", err
	})
}

// TestTypedHandles: a workflow registered, started and awaited through its
// handle calls a two-parameter activity through its handle (Call, Submit
// into a join set, the child's typed Result) and by name with Args; the
// params array is positional.
func TestTypedHandles(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	registerTyped(env.Worker)
	ctx := testCtx(t)
	id, err := sumFn.Start(ctx, env.Worker, []int{1, 2, 3, 4})
	if err != nil {
		t.Fatal(err)
	}
	env.Run()
	if got, err := sumFn.Await(ctx, env.Worker, id); err != nil || got != 11 {
		t.Fatalf("sum: %d, %v", got, err)
	}
	for _, h := range env.Log(id).EventHistory() {
		if r, ok := h.Event.(*core.JoinSetRequestEvent); ok {
			c := r.Request.(*core.ChildExecutionRequest)
			if len(c.Params) != 2 || c.TargetFFQN != addFn.FFQN() {
				t.Fatalf("child %s: params %s, want a two-element array", c.ChildExecutionID, c.Params)
			}
		}
	}
	if sumFn.ComponentType() != core.ComponentTypeWorkflow || addFn.ComponentType() != core.ComponentTypeActivity {
		t.Fatal("component types of the handles")
	}
}

// TestTypedHandleNeedsNoDeclare: a workflow calls, through its handle, an
// activity served by another worker and declared nowhere (an untyped call
// by name fails there with ErrUnknownFunction); the handle's component type
// is the child's.
func TestTypedHandleNeedsNoDeclare(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	pair := worker.DefineWorkflow[[]int, int]("demo:typed/workflow.pair")
	pair.Register(env.Worker, func(wf *worker.Context, xs []int) (int, error) {
		return addFn.Call(wf, worker.Params2[int, int]{P1: xs[0], P2: xs[1]})
	})
	other := env.NewWorker(nil, worker.Options{Name: "math"})
	addFn.Register(other, add)
	id := env.Submit(pair.String(), []int{5, 6})
	for range 4 {
		env.Run()
		if err := other.RunUntilIdle(testCtx(t)); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := workertest.Result[int](env, id); err != nil || got != 11 {
		t.Fatalf("sum: %d, %v", got, err)
	}
	child := id.NextLevel(core.JoinSetId{Kind: core.JoinSetKindOneOff, Name: "1-add"})
	st, err := env.Store.GetPendingState(testCtx(t), child)
	if err != nil || st.ComponentType != core.ComponentTypeActivity {
		t.Fatalf("child %s: %+v, %v", child, st, err)
	}
}

// TestTypedChildError: a child's error reaches the parent as a
// *ResultError with the child's id, kind and message as fields and the
// message alone as text; the parent that returns it passes the message on.
func TestTypedChildError(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	registerTyped(env.Worker)
	var seen *worker.ResultError
	worker.Workflow(env.Worker, "demo:typed/workflow.inspect", func(wf *worker.Context, _ worker.Unit) (string, error) {
		_, err := refuseFn.Call(wf, "out of stock")
		if !errors.As(err, &seen) {
			return "", worker.Permanent(errors.New("not a ResultError"))
		}
		_, err = sumFn.Call(wf, []int{1})
		return "", err
	})
	id := env.Submit("demo:typed/workflow.inspect", nil)
	env.Run()
	child := id.NextLevel(core.JoinSetId{Kind: core.JoinSetKindOneOff, Name: "1-refuse"})
	if seen == nil || seen.ID != child || seen.Kind != core.ReturnErr || seen.Message != "out of stock" ||
		seen.Error() != "out of stock" || seen.FailureKind() != "" {
		t.Fatalf("child error %#v (%v), want id %s, kind err, message %q", seen, seen, child, "out of stock")
	}
	_, err := workertest.Result[string](env, id)
	var re *worker.ResultError
	if !errors.As(err, &re) || re.ID != id || re.Message != "need two numbers" || strings.Contains(err.Error(), "E_") {
		t.Fatalf("the parent's error: %v (%#v)", err, re)
	}

	failed := env.Submit(failingFn.String(), "no")
	env.Run()
	if _, err := workertest.Result[string](env, failed); err == nil || err.Error() != "no" {
		t.Fatalf("a workflow returning its child's error: %v, want the child's message alone", err)
	}
}

// TestResultErrorOfAFailure: an execution failure keeps its kind and reason.
func TestResultErrorOfAFailure(t *testing.T) {
	reason := "activity panicked: boom"
	_, err := worker.Decode[int](core.ExecutionId{}, core.RetFailure(core.FailureUncategorized, &reason, nil))
	var re *worker.ResultError
	if !errors.As(err, &re) || re.Kind != core.ReturnExecutionFailure || re.FailureKind() != core.FailureUncategorized ||
		re.Message != reason || err.Error() != "the execution failed (uncategorized): activity panicked: boom" {
		t.Fatalf("%#v: %v", re, err)
	}
}

// TestTypedHandlesOverHTTP: the handles' calls over the HTTP transport.
func TestTypedHandlesOverHTTP(t *testing.T) {
	w := worker.New(httpConn(t), worker.Options{Name: "typed-http"})
	registerTyped(w)
	runFor(t, w)
	ctx := testCtx(t)
	id, err := sumFn.Start(ctx, w, []int{1, 2, 3, 4, 5})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := sumFn.Await(ctx, w, id); err != nil || got != 16 {
		t.Fatalf("sum: %d, %v", got, err)
	}
	id, err = failingFn.Start(ctx, w, "declined")
	if err != nil {
		t.Fatal(err)
	}
	_, err = failingFn.Await(ctx, w, id)
	var re *worker.ResultError
	if !errors.As(err, &re) || re.ID != id || re.Message != "declined" || err.Error() != "declined" {
		t.Fatalf("failing: %v", err)
	}
}
