package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/internal/apitest"
	"github.com/stela-dev/stela/internal/backendtest"
	"github.com/stela-dev/stela/store"
)

// submitted returns the component type of every execution stored in svc.
func submitted(t *testing.T, svc *store.Service) map[string]core.ComponentType {
	t.Helper()
	list, err := svc.ListExecutions(context.Background(), core.ListExecutionsFilter{}, core.DefaultExecutionListPagination())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]core.ComponentType{}
	for _, e := range list {
		out[e.FFQN.String()] = e.ComponentType
	}
	return out
}

// deployWorkflow makes a current deployment whose component "wf" is a
// workflow exporting ffqn.
func deployWorkflow(t *testing.T, svc *store.Service, ffqn core.FunctionFqn) core.DeploymentId {
	t.Helper()
	ctx := context.Background()
	dep, err := core.NewDeploymentId(uint64(time.Now().UnixMilli()), strings.NewReader(strings.Repeat("d", 10)))
	if err != nil {
		t.Fatal(err)
	}
	digest := core.ComponentDigest{Digest: core.SHA256Digest([]byte("wf"))}
	if err := svc.InsertDeploymentWithComponents(ctx,
		core.DeploymentRecord{DeploymentID: dep, Digest: core.ContentDigestOf([]byte("toml")), CreatedAt: core.TS(time.Now()),
			Status: core.DeploymentInactive, DeploymentToml: "[[workflow]]\n", ObeliskVersion: "1"},
		[]core.ComponentMetadataRecord{{ComponentDigest: digest, Wit: "package test:wf;", WitOrigin: core.WitOriginAuthored,
			Exports: []core.PersistedFunctionMetadata{{FFQN: ffqn, ReturnType: "result", Submittable: true}}}},
		[]core.DeploymentComponentRecord{{DeploymentID: dep, ComponentName: "wf", ComponentDigest: digest, ComponentType: core.ComponentTypeWorkflow}},
		nil); err != nil {
		t.Fatal(err)
	}
	if err := svc.ActivateDeployment(ctx, dep, core.TS(time.Now())); err != nil {
		t.Fatal(err)
	}
	return dep
}

// TestSubmitComponentType: `stela execution submit` never stores a workflow
// as an activity by default. With a deployment the type is the deployment's
// (a contradicting --component-type is refused); without one the server
// cannot know it, so the command refuses to guess and says what to pass.
func TestSubmitComponentType(t *testing.T) {
	t.Run("WithoutADeploymentItMustBeGiven", func(t *testing.T) {
		svc := backendtest.SQLite(t)
		url := apitest.Server(t, svc)
		code, out, errOut := run("execution", "submit", "demo:app/wf.main", "--url", url)
		if code != ExitUsage || !strings.Contains(errOut, "--component-type activity or --component-type workflow") {
			t.Errorf("submit without --component-type: exit %d, stdout %q, stderr %q; want %d naming the flag", code, out, errOut, ExitUsage)
		}
		if got := submitted(t, svc); len(got) != 0 {
			t.Errorf("a refused submit stored %v", got)
		}
		for _, ct := range []core.ComponentType{core.ComponentTypeWorkflow, core.ComponentTypeActivity} {
			ffqn := "demo:app/" + string(ct) + ".main"
			if code, _, errOut := run("execution", "submit", ffqn, "--component-type", string(ct), "--url", url); code != ExitOK {
				t.Fatalf("submit --component-type %s: exit %d, %s", ct, code, errOut)
			}
			if got := submitted(t, svc)[ffqn]; got != ct {
				t.Errorf("submitted with --component-type %s, stored as %q", ct, got)
			}
		}
		if code, _, errOut := run("execution", "submit", "demo:app/x.y", "--component-type", "workflw", "--url", url); code != ExitUsage ||
			!strings.Contains(errOut, `invalid --component-type "workflw"`) {
			t.Errorf("misspelt type: exit %d, stderr %q", code, errOut)
		}
	})
	t.Run("WithADeploymentItIsTheDeployments", func(t *testing.T) {
		svc := backendtest.SQLite(t)
		url := apitest.Server(t, svc)
		wf := core.FunctionFqn{IfcFqn: "demo:app/workflow", FunctionName: "main"}
		dep := deployWorkflow(t, svc, wf)
		code, _, errOut := run("execution", "submit", wf.String(), "--component-type", "activity", "--url", url)
		if code != ExitUsage || !strings.Contains(errOut, "is a workflow in the current deployment "+dep.String()) {
			t.Errorf("contradicting --component-type: exit %d, stderr %q", code, errOut)
		}
		if got := submitted(t, svc); len(got) != 0 {
			t.Errorf("a refused submit stored %v", got)
		}
		if code, _, errOut := run("execution", "submit", wf.String(), "--url", url); code != ExitOK {
			t.Fatalf("submit: exit %d, %s", code, errOut)
		}
		if got := submitted(t, svc)[wf.String()]; got != core.ComponentTypeWorkflow {
			t.Errorf("stored as %q, want the deployment's workflow", got)
		}
		code, _, errOut = run("execution", "submit", "demo:app/other.fn", "--url", url)
		if code != ExitError || !strings.Contains(errOut, "does not export demo:app/other.fn") {
			t.Errorf("ffqn the deployment lacks: exit %d, stderr %q", code, errOut)
		}
	})
}
