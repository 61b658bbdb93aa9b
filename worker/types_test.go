package worker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/internal/apitest"
	"github.com/stela-dev/stela/internal/backendtest"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/worker"
	"github.com/stela-dev/stela/worker/workertest"
)

const (
	childWFFFQN  = "demo:c/workflow.child"
	parentWFFFQN = "demo:p/workflow.parent"
	nowhereFFQN  = "demo:x/nowhere.fn"
)

// TestUnknownCalleeIsAnErrorAtTheCallSite: a workflow calling a function no
// one registered, declared or deployed gets an error naming it and telling
// to Declare it, before anything is recorded; it used to create the child
// as an activity (a guess) and wait for it forever. w.Submit refuses it too.
func TestUnknownCalleeIsAnErrorAtTheCallSite(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	var callErr error
	worker.Workflow(env.Worker, parentWFFFQN, func(wf *worker.Context, _ worker.Unit) (string, error) {
		_, callErr = worker.Call[string](wf, nowhereFFQN, nil)
		if callErr == nil {
			return "called", nil
		}
		js := wf.NewJoinSet()
		if _, err := js.Submit(nowhereFFQN, nil); !errors.Is(err, worker.ErrUnknownFunction) {
			return "", errors.New("JoinSet.Submit did not refuse the unknown function")
		}
		if _, err := wf.Schedule(nowhereFFQN, nil, worker.Now()); !errors.Is(err, worker.ErrUnknownFunction) {
			return "", errors.New("Schedule did not refuse the unknown function")
		}
		return "", callErr
	})
	id := env.Submit(parentWFFFQN, nil)
	env.Run()
	if !errors.Is(callErr, worker.ErrUnknownFunction) || !strings.Contains(callErr.Error(), `w.Declare("`+nowhereFFQN+`"`) {
		t.Fatalf("Call: %v; want ErrUnknownFunction telling to Declare %s (workflow %s)", callErr, nowhereFFQN, env.Status(id))
	}
	if _, err := workertest.Result[string](env, id); err == nil || !strings.Contains(err.Error(), nowhereFFQN) {
		t.Fatalf("the workflow's result: %v", err)
	}
	for _, h := range env.Log(id).EventHistory() {
		if r, ok := h.Event.(*core.JoinSetRequestEvent); ok {
			t.Fatalf("a child of an unknown function was recorded: %+v", r.Request)
		}
	}
	if _, err := env.Worker.Submit(context.Background(), nowhereFFQN, nil); !errors.Is(err, worker.ErrUnknownFunction) {
		t.Fatalf("Submit of an unknown function: %v", err)
	}
}

// deployWorkflowComponent stores an active deployment whose workflow
// component "children" exports ffqn.
func deployWorkflowComponent(t *testing.T, svc *store.Service, ffqn string) {
	t.Helper()
	ctx := context.Background()
	f, err := core.ParseFunctionFqn(ffqn)
	if err != nil {
		t.Fatal(err)
	}
	dep, err := core.NewDeploymentId(uint64(time.Now().UnixMilli()), strings.NewReader(strings.Repeat("d", 10)))
	if err != nil {
		t.Fatal(err)
	}
	digest := core.ComponentDigest{Digest: core.SHA256Digest([]byte("children"))}
	if err := svc.InsertDeploymentWithComponents(ctx,
		core.DeploymentRecord{DeploymentID: dep, Digest: core.ContentDigestOf([]byte("toml")), CreatedAt: core.TS(time.Now()),
			Status: core.DeploymentInactive, DeploymentToml: "[[workflow]]\n", ObeliskVersion: "1"},
		[]core.ComponentMetadataRecord{{ComponentDigest: digest, Wit: "package demo:c;", WitOrigin: core.WitOriginAuthored,
			Exports: []core.PersistedFunctionMetadata{{FFQN: f, ReturnType: "result<string>", Submittable: true}}}},
		[]core.DeploymentComponentRecord{{DeploymentID: dep, ComponentName: "children", ComponentDigest: digest,
			ComponentType: core.ComponentTypeWorkflow}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := svc.ActivateDeployment(ctx, dep, core.TS(time.Now())); err != nil {
		t.Fatal(err)
	}
}

// TestCalleeTypeComesFromTheDeployment: a workflow submits a child workflow
// served by another worker, without declaring it, and closes its join set.
// The child's type comes from the store's current deployment: it is created
// as a workflow, so closing the set awaits it (it is not cancellable)
// instead of cancelling it as an activity, on both transports.
func TestCalleeTypeComesFromTheDeployment(t *testing.T) {
	svc := backendtest.SQLite(t)
	backendtest.Timers(t, svc, 20*time.Millisecond)
	deployWorkflowComponent(t, svc, childWFFFQN)
	httpConn, err := client.New(apitest.Server(t, svc))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		conn worker.Conn
	}{{"in-process", svc}, {"http", httpConn}} {
		t.Run(tc.name, func(t *testing.T) {
			parent := worker.New(tc.conn, worker.Options{PollWait: 200 * time.Millisecond, Name: "parents-" + tc.name})
			var child core.ExecutionId
			worker.Workflow(parent, parentWFFFQN+"-"+tc.name, func(wf *worker.Context, _ worker.Unit) (string, error) {
				js := wf.NewJoinSet()
				var err error
				if child, err = js.Submit(childWFFFQN, nil); err != nil {
					return "", err
				}
				js.Close()
				return "closed", nil
			})
			children := worker.New(tc.conn, worker.Options{PollWait: 200 * time.Millisecond, Name: "children-" + tc.name})
			worker.Workflow(children, childWFFFQN, func(wf *worker.Context, _ worker.Unit) (string, error) { return "child done", nil })
			runFor(t, parent)
			runFor(t, children)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			id, err := parent.Submit(ctx, parentWFFFQN+"-"+tc.name, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := worker.Await[string](ctx, parent, id); err != nil || got != "closed" {
				t.Fatalf("parent: %q, %v", got, err)
			}
			st, err := svc.GetPendingState(ctx, child)
			if err != nil {
				t.Fatal(err)
			}
			if st.ComponentType != core.ComponentTypeWorkflow {
				t.Errorf("the child was created as %s, want workflow (the deployment's)", st.ComponentType)
			}
			if got, err := worker.Await[string](ctx, parent, child); err != nil || got != "child done" {
				t.Errorf("child: %q, %v (closing the join set must not cancel a workflow)", got, err)
			}
		})
	}
}

// TestMismatchedComponentTypeIsRefused: an execution of a registered
// workflow stored as an activity (the CLI's old default) is not run: it
// finishes at once with an execution failure saying so. It used to run,
// then be listed, cancelled and closed by its parent as an activity.
func TestMismatchedComponentTypeIsRefused(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	ran := 0
	worker.Workflow(env.Worker, parentWFFFQN, func(wf *worker.Context, _ worker.Unit) (string, error) {
		ran++
		return "ran", nil
	})
	f, err := core.ParseFunctionFqn(parentWFFFQN)
	if err != nil {
		t.Fatal(err)
	}
	id, err := core.NewExecutionId(uint64(env.Clock.Now().UnixMilli()), nil)
	if err != nil {
		t.Fatal(err)
	}
	now := env.Clock.Now()
	if _, err := env.Store.Create(context.Background(), core.CreateRequest{CreatedAt: now, ExecutionID: id, FFQN: f,
		Params: core.Params{}, ScheduledAt: now, ComponentID: core.ComponentId{ComponentType: core.ComponentTypeActivity, Name: "cli"},
		Metadata: core.ExecutionMetadata{}}); err != nil {
		t.Fatal(err)
	}
	env.Run()
	rv := env.ReturnValue(id)
	want := "component type mismatch: the execution was created as activity but " + parentWFFFQN + " is registered as workflow"
	if rv.Kind != core.ReturnExecutionFailure || rv.Failure.Reason == nil || !strings.HasPrefix(*rv.Failure.Reason, want) {
		t.Errorf("want an execution failure %q…, got %+v", want, rv)
	}
	if ran != 0 {
		t.Errorf("the workflow ran %d times", ran)
	}
}

// stateCountingConn counts the worker's state reads; with oldServer it
// answers locks as a server that predates LockedExecution.ComponentType.
type stateCountingConn struct {
	*store.Service
	oldServer bool
	reads     atomic.Int32
}

func (c *stateCountingConn) GetPendingState(ctx context.Context, id core.ExecutionId) (core.ExecutionWithState, error) {
	c.reads.Add(1)
	return c.Service.GetPendingState(ctx, id)
}

func (c *stateCountingConn) LockPending(ctx context.Context, req core.LockRequest, ffqns []core.FunctionFqn, wait time.Duration) ([]core.LockedExecution, error) {
	locked, err := c.Service.LockPending(ctx, req, ffqns, wait)
	if c.oldServer {
		for i := range locked {
			locked[i].ComponentType = ""
		}
	}
	return locked, err
}

// TestComponentTypeCheckReadsNoState: the stored component type comes with
// the lock, so a top-level workflow is checked (a mismatch refused, a
// match run) without reading its state; against a server whose locks do
// not carry it the worker reads the state once, as it used to. Before the
// lock carried the type, every top-level workflow cost a state read.
func TestComponentTypeCheckReadsNoState(t *testing.T) {
	for _, old := range []bool{false, true} {
		t.Run(fmt.Sprintf("oldServer=%v", old), func(t *testing.T) {
			env := workertest.New(t, worker.Options{})
			conn := &stateCountingConn{Service: env.Store, oldServer: old}
			w := env.NewWorker(conn, worker.Options{})
			ran := 0
			worker.Workflow(w, parentWFFFQN, func(wf *worker.Context, _ worker.Unit) (string, error) {
				ran++
				return "ran", nil
			})
			good := env.Submit(parentWFFFQN, worker.Unit{})
			f, err := core.ParseFunctionFqn(parentWFFFQN)
			if err != nil {
				t.Fatal(err)
			}
			bad, err := core.NewExecutionId(uint64(env.Clock.Now().UnixMilli()), nil)
			if err != nil {
				t.Fatal(err)
			}
			now := env.Clock.Now()
			if _, err := env.Store.Create(context.Background(), core.CreateRequest{CreatedAt: now, ExecutionID: bad, FFQN: f,
				Params: core.Params{}, ScheduledAt: now, ComponentID: core.ComponentId{ComponentType: core.ComponentTypeActivity, Name: "cli"},
				Metadata: core.ExecutionMetadata{}}); err != nil {
				t.Fatal(err)
			}
			if err := w.RunUntilIdle(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got, err := workertest.Result[string](env, good); err != nil || got != "ran" || ran != 1 {
				t.Errorf("well-typed workflow: %q, %v, ran %d times", got, err, ran)
			}
			if rv := env.ReturnValue(bad); rv.Kind != core.ReturnExecutionFailure {
				t.Errorf("mistyped workflow: want an execution failure, got %+v", rv)
			}
			want := int32(0)
			if old {
				want = 2
			}
			if got := conn.reads.Load(); got != want {
				t.Errorf("%d state reads, want %d", got, want)
			}
		})
	}
}
