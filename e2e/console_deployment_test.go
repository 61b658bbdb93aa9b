package e2e_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stela-dev/stela/cas"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/httpapi"
	"github.com/stela-dev/stela/sqlite"
	"github.com/stela-dev/stela/store"
)

// sourceLines is a workflow's source file; line 12 is where its backtrace points.
var sourceLines = func() string {
	var b strings.Builder
	for i := 1; i <= 20; i++ {
		if i == 12 {
			b.WriteString("  const paid = await charge(order); // line twelve\n")
			continue
		}
		b.WriteString("  // filler\n")
	}
	return b.String()
}()

// A deployment with a component, its WIT, a file that is a source mapping,
// and an execution of it with a backtrace: seeded directly into an embedded
// store (there is no HTTP route to create deployments without the engine),
// served by httpapi in-process.
func TestConsoleShowsDeploymentsAndBacktraceSources(t *testing.T) {
	chromiumPath(t)
	ctx := context.Background()
	dir := t.TempDir()
	blobs, err := cas.NewDir(filepath.Join(dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	backend, err := sqlite.Open(filepath.Join(dir, "stela.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	svc := store.New(backend, store.Options{Cas: blobs})
	t.Cleanup(func() { _ = svc.Close() })

	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	src, err := blobs.WriteBlob(ctx, []byte(sourceLines))
	must(err)
	dep, err := core.NewDeploymentId(uint64(time.Now().UnixMilli()), nil)
	must(err)
	comp := core.ComponentDigest{Digest: core.SHA256Digest([]byte("orders component"))}
	ffqn := mustFFQN(t, "shop:orders/workflow.place")
	desc := "orders v2"
	must(svc.InsertDeploymentWithComponents(ctx,
		core.DeploymentRecord{DeploymentID: dep, Description: &desc, Digest: core.ContentDigestOf([]byte("toml")), CreatedAt: now(),
			Status: core.DeploymentInactive, DeploymentToml: "[[workflow_js]]\nname = \"orders\"\n", ObeliskVersion: "1",
			Files: []core.DeploymentFileRecord{{Path: "workflow.js", Digest: src}}},
		[]core.ComponentMetadataRecord{{ComponentDigest: comp, WitOrigin: core.WitOriginAuthored,
			Wit: "package shop:orders;\ninterface workflow {\n  place: func(order: string) -> result<string>;\n}\n",
			Exports: []core.PersistedFunctionMetadata{{FFQN: ffqn, ParameterTypes: []core.PersistedParameterType{{Name: "order", WitType: "string"}},
				ReturnType: "result<string>", Submittable: true}}}},
		[]core.DeploymentComponentRecord{{DeploymentID: dep, ComponentName: "orders", ComponentDigest: comp, ComponentType: core.ComponentTypeWorkflow}},
		[]core.DeploymentComponentFileRecord{{ComponentName: "orders", Path: "workflow.js", Role: core.RoleJsEntrypoint}}))
	must(svc.ActivateDeployment(ctx, dep, now()))
	must(svc.UpsertSourceMapping(ctx, comp, "/workflow.js", true, src))

	h := httpapi.New(svc, blobs, httpapi.Options{Authorizer: httpapi.AllowAll()})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	// An execution of the deployment's workflow, with a backtrace into workflow.js.
	id, err := core.NewExecutionId(uint64(time.Now().UnixMilli()), nil)
	must(err)
	compID := core.ComponentId{ComponentType: core.ComponentTypeWorkflow, Name: "orders", ComponentDigest: comp}
	t1 := now()
	_, err = svc.Create(ctx, core.CreateRequest{CreatedAt: t1, ExecutionID: id, FFQN: ffqn, Params: core.Params{json.RawMessage(`"order-7"`)},
		ScheduledAt: t1, ComponentID: compID, DeploymentID: dep, Metadata: core.ExecutionMetadata{}})
	must(err)
	w := newWorker(t, nil)
	l, err := svc.LockOne(ctx, core.LockRequest{CreatedAt: t1, ComponentID: compID, DeploymentID: dep, ExecutorID: w.exr, RunID: w.run,
		LockExpiresAt: t1.Add(time.Minute), RetryConfig: core.ComponentRetryConfig{}}, id, 1)
	must(err)
	js, _ := core.NewJoinSetId(core.JoinSetKindOneOff, "pay")
	next, err := svc.AppendBatch(ctx, now(), []core.AppendRequest{history(&core.JoinSetCreate{JoinSetID: js})}, id, l.NextVersion)
	must(err)
	line := uint32(12)
	file, fn := "src/workflow.js", "place"
	_, err = svc.AppendBacktraceBatch(ctx, []core.BacktraceInfo{{ExecutionID: id, ComponentID: compID,
		VersionMinIncluding: l.NextVersion, VersionMaxExcluding: next,
		WasmBacktrace: core.WasmBacktrace{Frames: []core.FrameInfo{{Module: "orders.wasm", FuncName: "place",
			Symbols: []core.FrameSymbol{{FuncName: &fn, File: &file, Line: &line}}}}}}})
	must(err)

	b := newTab(t, srv.URL)
	t.Run("DeploymentsListAndDetail", func(t *testing.T) {
		b.t = t
		b.open("/console/deployments")
		b.waitFor("the deployment row", `document.querySelector('#deployments a[href="/console/deployments/`+dep.String()+`"]')`)
		if row := b.str(`document.querySelector('#deployments tbody tr').textContent`); !strings.Contains(row, "active") || !strings.Contains(row, "1 workflow") || !strings.Contains(row, "orders v2") {
			t.Errorf("deployment row = %q", row)
		}
		b.click(`#deployments a[href="/console/deployments/` + dep.String() + `"]`)
		b.waitFor("the component", `document.querySelector('.component table.functions')`)
		if got := b.str(`document.querySelector('.component table.functions').textContent`); !strings.Contains(got, ffqn.String()) || !strings.Contains(got, "order: string") {
			t.Errorf("exports = %q", got)
		}
		b.click(`.component details.wit summary`)
		b.waitFor("the WIT", `document.querySelector('.component details.wit pre') && document.querySelector('.component details.wit pre').textContent.includes('package shop:orders;')`)
		b.click(`.card table.files button`) // view workflow.js
		b.waitFor("the file", `document.querySelector('.file-view pre') && document.querySelector('.file-view pre').textContent.includes('line twelve')`)
		b.screenshot(screenshotDir(t), "deployment.png")
		b.noErrors()
	})
	t.Run("SubmitSuggestsTheSubmittableExports", func(t *testing.T) {
		b.t = t
		b.open("/console/submit")
		b.waitFor("the suggestion", `document.querySelector('#s-ffqns option[value="`+ffqn.String()+`"]')`)
		// The component type is the deployment's: nothing to choose.
		b.waitFor("the deployment check", `document.querySelector('#s-type').dataset.managed === 'true'`)
		if !b.bool(`document.querySelector('#s-type').disabled`) {
			t.Errorf("the component type can be chosen although the deployment decides it")
		}
	})
	t.Run("BacktraceShowsTheSourceLine", func(t *testing.T) {
		b.t = t
		b.open(execPath(id))
		b.click(`#events tr[data-version="2"] button`)
		b.waitFor("the frames", `document.querySelector('#backtrace .symbol button')`)
		b.click(`#backtrace .symbol button`)
		b.waitFor("the source", `document.querySelector('#backtrace .src-hit')`)
		if got := b.str(`document.querySelector('#backtrace .src-hit').textContent`); !strings.Contains(got, "12") || !strings.Contains(got, "line twelve") {
			t.Errorf("highlighted line = %q", got)
		}
		if !b.bodyContains("orders") {
			t.Errorf("page lacks the component name")
		}
		b.noErrors()
	})
}
