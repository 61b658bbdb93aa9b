package httpapi

import (
	"crypto/sha256"
	"net/http"
	"strings"
	"testing"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/wire"
)

// workerDeployment is what an SDK worker of build posts: one workflow
// component serving ffqns.
func workerDeployment(name, build string, ffqns ...string) core.WorkerDeployment {
	c := core.WorkerComponent{Name: name, Type: core.ComponentTypeWorkflow,
		Digest: core.ComponentDigest{Digest: sha256.Sum256([]byte(build + name))}, Wit: "interface x {}"}
	for _, f := range ffqns {
		c.Exports = append(c.Exports, core.PersistedFunctionMetadata{FFQN: mustFFQN(f), ParameterTypes: []core.PersistedParameterType{},
			ReturnType: "string", Submittable: true})
	}
	return core.WorkerDeployment{BuildID: build, Description: "worker " + build, Components: []core.WorkerComponent{c}}
}

// testWorkerDeployments: POST /v1/deployments records an SDK worker's
// components idempotently; a new build becomes current, an old build
// restarting does not; components of other workers are kept; submit then
// validates ffqns against the current deployment.
func testWorkerDeployments(t *testing.T, e *env) {
	post := func(wd core.WorkerDeployment) core.DeploymentId {
		t.Helper()
		var id core.DeploymentId
		e.do("POST", "/v1/deployments", wd).want(http.StatusOK).decode(&id)
		return id
	}
	current := func() string {
		t.Helper()
		return strings.TrimSpace(e.do("GET", "/v1/deployment-id", nil, "Accept", "text/plain").want(http.StatusOK).text())
	}
	v1 := workerDeployment("wf", "v1", "ns:pkg/ifc.order")
	d1 := post(v1)
	if again := post(v1); again != d1 {
		t.Fatalf("second registration: %s, want %s (idempotent)", again, d1)
	}
	if cur := current(); cur != d1.String() {
		t.Fatalf("current %s, want %s", cur, d1)
	}
	var list []wire.DeploymentStateJSON
	e.do("GET", "/v1/deployments", nil).want(http.StatusOK).decode(&list)
	if len(list) != 1 || list[0].Status != core.DeploymentActive {
		t.Fatalf("deployments %+v", list)
	}
	var comps []wire.ComponentJSON
	e.do("GET", "/v1/components?exports=true", nil).want(http.StatusOK).decode(&comps)
	if len(comps) != 1 || comps[0].ComponentID.ComponentDigest != v1.Components[0].Digest || comps[0].Exports == nil ||
		len(*comps[0].Exports) != 1 || (*comps[0].Exports)[0].ReturnType != "string" {
		t.Fatalf("components %+v", comps)
	}
	wit := e.do("GET", "/v1/components/"+v1.Components[0].Digest.String()+"/wit", nil).want(http.StatusOK).text()
	if wit != "interface x {}" {
		t.Fatalf("wit %q", wit)
	}

	t.Run("SubmitValidatesAgainstTheWorkersDeployment", func(t *testing.T) {
		e.do("POST", "/v1/executions", map[string]any{"ffqn": "ns:pkg/ifc.unknown", "params": []any{}}).wantErr(http.StatusNotFound, msgFFQNNotFound)
		var id string
		r := e.do("POST", "/v1/executions", map[string]any{"ffqn": "ns:pkg/ifc.order", "params": []any{}}).want(http.StatusCreated)
		id = r.okValue()
		eid, err := core.ParseExecutionId(id)
		if err != nil {
			t.Fatal(err)
		}
		cr, err := e.db.GetCreateRequest(t.Context(), eid)
		if err != nil {
			t.Fatal(err)
		}
		if cr.ComponentID.ComponentType != core.ComponentTypeWorkflow || cr.ComponentID.ComponentDigest != v1.Components[0].Digest || cr.DeploymentID != d1 {
			t.Fatalf("created for %+v in %s", cr.ComponentID, cr.DeploymentID)
		}
	})

	// Another worker (another component, other functions) joins: one deployment holds both.
	other := workerDeployment("acts", "v1", "ns:pkg/acts.charge")
	other.Components[0].Type = core.ComponentTypeActivity
	both := post(other)
	if both == d1 || current() != both.String() {
		t.Fatalf("joined deployment %s (v1 %s), current %s", both, d1, current())
	}
	e.do("GET", "/v1/components", nil).want(http.StatusOK).decode(&comps)
	if len(comps) != 2 {
		t.Fatalf("components after join: %+v", comps)
	}
	// A new build of the workflow component supersedes the old one.
	v2 := workerDeployment("wf", "v2", "ns:pkg/ifc.order")
	d2 := post(v2)
	if d2 == both || current() != d2.String() {
		t.Fatalf("v2 deployment %s, current %s", d2, current())
	}
	e.do("GET", "/v1/components", nil).want(http.StatusOK).decode(&comps)
	if len(comps) != 2 || !((comps[0].ComponentID.ComponentDigest == v2.Components[0].Digest) != (comps[1].ComponentID.ComponentDigest == v2.Components[0].Digest)) {
		t.Fatalf("components after v2: %+v", comps)
	}
	// The v1 worker restarting gets its old deployment back; v2 stays current.
	if again := post(v1); again == d2 {
		t.Fatalf("v1 restart got v2's deployment")
	}
	if current() != d2.String() {
		t.Fatalf("v1 restart made itself current: %s, want %s", current(), d2)
	}

	e.rejectAll(t, []badReq{
		{name: "NoComponentsIs422", method: "POST", path: "/v1/deployments", body: `{"components":[]}`, status: 422,
			msg: "invalid request body: components: at least one component is required"},
		{name: "BadTypeIs422", method: "POST", path: "/v1/deployments",
			body:   `{"components":[{"name":"a","component_type":"cron","component_digest":"` + v1.Components[0].Digest.String() + `","exports":[],"wit":""}]}`,
			status: 422, msg: "invalid request body: components[0].component_type: activity or workflow"},
	})
}
