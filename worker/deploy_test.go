package worker_test

import (
	"context"
	"testing"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/worker"
	"github.com/stela-dev/stela/worker/workertest"
)

const pinFFQN = "test:pin/wf.run"

// build registers the workflow pinFFQN on w, answering its build's name.
func build(w *worker.Worker, answer string) {
	worker.Workflow(w, pinFFQN, func(wf *worker.Context, _ worker.Unit) (string, error) { return answer, nil })
}

// TestWorkerRecordsItsDeployment: a worker records its components (type,
// digest from the build id, exports with WIT types) as the current
// deployment when it starts, once.
func TestWorkerRecordsItsDeployment(t *testing.T) {
	e := workertest.New(t, worker.Options{BuildID: "v1"})
	worker.Activity(e.Worker, "test:pin/acts.add", func(ctx context.Context, p []int) (int, error) { return p[0] + p[1], nil })
	build(e.Worker, "v1")
	e.Run()
	e.Run()
	ctx := context.Background()
	deps, err := e.Store.ListDeployments(ctx, core.Pagination[*core.DeploymentId]{Direction: core.OlderThan, Length: 10})
	if err != nil || len(deps) != 1 {
		t.Fatalf("deployments %+v, %v (want exactly one: registration is idempotent)", deps, err)
	}
	if deps[0].Status != core.DeploymentActive || e.Worker.DeploymentID() != deps[0].DeploymentID {
		t.Fatalf("deployment %+v, worker's %s", deps[0], e.Worker.DeploymentID())
	}
	comps, err := e.Store.ListDeploymentComponents(ctx, deps[0].DeploymentID)
	if err != nil || len(comps) != 2 {
		t.Fatalf("components %+v, %v", comps, err)
	}
	digests := e.Worker.ComponentDigests()
	for _, c := range comps {
		if len(c.Exports) != 1 {
			t.Fatalf("component %+v", c)
		}
		ex := c.Exports[0]
		if digests[ex.FFQN.String()] != c.ComponentID.ComponentDigest {
			t.Fatalf("%s: digest %s, worker's %s", ex.FFQN, c.ComponentID.ComponentDigest, digests[ex.FFQN.String()])
		}
		switch c.ComponentID.ComponentType {
		case core.ComponentTypeActivity:
			if ex.ReturnType != "s64" || len(ex.ParameterTypes) != 1 || ex.ParameterTypes[0].WitType != "list<s64>" {
				t.Fatalf("activity metadata %+v", ex)
			}
		case core.ComponentTypeWorkflow:
			if ex.ReturnType != "string" || len(ex.ParameterTypes) != 0 {
				t.Fatalf("workflow metadata %+v", ex)
			}
		}
		if c.Wit == "" {
			t.Fatalf("no WIT for %s", c.ComponentID.Name)
		}
	}
	if _, _, err := e.Store.FunctionComponent(ctx, core.FunctionFqn{IfcFqn: "test:pin/wf", FunctionName: "run"}); err != nil {
		t.Fatalf("the workflow is not exported by the current deployment: %v", err)
	}
}

// TestPinnedWorkersLockOnlyTheirOwnDigest: two pinned workers of different
// builds over one store serving the same workflow each run only the
// executions created for their build; the newer build's deployment is
// current.
func TestPinnedWorkersLockOnlyTheirOwnDigest(t *testing.T) {
	e := workertest.New(t, worker.Options{BuildID: "v1", Pinned: true})
	v1 := e.Worker
	build(v1, "v1")
	e.Run() // v1 records its deployment
	old := e.Submit(pinFFQN, nil)

	v2 := e.NewWorker(nil, worker.Options{BuildID: "v2", Pinned: true})
	build(v2, "v2")
	ctx := context.Background()
	if err := v2.RunUntilIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if st := e.Status(old); st.Finished != nil {
		t.Fatalf("the v2 worker ran the v1 execution: %s", st)
	}
	cur, err := e.Store.GetCurrentDeployment(ctx)
	if err != nil || cur.DeploymentID != v2.DeploymentID() || v1.DeploymentID() == v2.DeploymentID() {
		t.Fatalf("current %s (%v), v1 %s, v2 %s", cur.DeploymentID, err, v1.DeploymentID(), v2.DeploymentID())
	}
	newer, err := v2.Submit(ctx, pinFFQN, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.Run() // v1
	if got, err := workertest.Result[string](e, old); err != nil || got != "v1" {
		t.Fatalf("old execution: %q, %v", got, err)
	}
	if st := e.Status(newer); st.Finished != nil {
		t.Fatalf("the v1 worker ran the v2 execution: %s", st)
	}
	if err := v2.RunUntilIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := workertest.Result[string](e, newer); err != nil || got != "v2" {
		t.Fatalf("new execution: %q, %v", got, err)
	}
}

// TestUnpinnedWorkerTakesEveryDigest: without Pinned a worker of another
// build locks every pending execution of its functions (today's
// behaviour) and moves it to its own digest.
func TestUnpinnedWorkerTakesEveryDigest(t *testing.T) {
	e := workertest.New(t, worker.Options{BuildID: "v1"})
	build(e.Worker, "v1")
	id := e.Submit(pinFFQN, nil)
	v2 := e.NewWorker(nil, worker.Options{BuildID: "v2"})
	build(v2, "v2")
	if err := v2.RunUntilIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, err := workertest.Result[string](e, id); err != nil || got != "v2" {
		t.Fatalf("%q, %v", got, err)
	}
}
