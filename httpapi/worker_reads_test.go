package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/wire"
)

// testWorkerSDKRoutes covers the routes and options added for SDK workers:
// compact answers, skip_history, the history delta, the typed result and create.
func testWorkerSDKRoutes(t *testing.T, fresh func(t *testing.T, opts ...envOption) *env) {
	e := fresh(t)
	parent, child := e.workflowWithChild(core.ComponentTypeActivityStub)
	e.appendBatch(parent, 4, hist(&core.JoinNext{JoinSetID: mustJS("g:1"), RunExpiresAt: t0}))
	e.do("PUT", "/v1/executions/"+child.String()+"/stub", `{"ok":{"type":"string","value":"x"}}`).want(http.StatusOK)

	t.Run("WorkerAnswersAreCompactPublicOnesPretty", func(t *testing.T) {
		w := e.do("GET", "/v1/worker/executions/"+parent.String()+"/log", nil).want(http.StatusOK)
		if bytes.ContainsAny(w.Body.Bytes(), "\n") {
			t.Fatalf("worker answer is not compact: %s", w.Body.String())
		}
		var compacted bytes.Buffer
		if err := json.Compact(&compacted, w.Body.Bytes()); err != nil || compacted.Len() != w.Body.Len() {
			t.Fatalf("worker answer has insignificant whitespace (%d bytes, %d compacted)", w.Body.Len(), compacted.Len())
		}
		p := e.do("GET", "/v1/executions/"+parent.String()+"/status", nil).want(http.StatusOK)
		if !bytes.Contains(p.Body.Bytes(), []byte("\n  \"")) {
			t.Fatalf("public answer is not pretty-printed: %s", p.Body.String())
		}
	})
	t.Run("LockWithSkipHistoryCarriesNoHistory", func(t *testing.T) {
		body := lockParams(core.ComponentTypeWorkflow, t0.Add(time.Minute))
		body["execution_id"], body["version"], body["skip_history"] = parent, 5, true
		r := e.do("POST", "/v1/worker/lock/one", body).want(http.StatusOK)
		var l wire.LockedExecutionJSON
		r.decode(&l)
		if l.NextVersion != 6 || l.EventHistory == nil || len(l.EventHistory) != 0 || l.Responses == nil || len(l.Responses) != 0 || l.FFQN != ffqnWorkflow {
			t.Fatalf("locked %+v", l)
		}
	})
	t.Run("HistoryDelta", func(t *testing.T) {
		var all wire.HistoryDeltaJSON
		e.do("GET", "/v1/worker/executions/"+parent.String()+"/history", nil).want(http.StatusOK).decode(&all)
		if len(all.Events) != 3 || all.Events[0].Version != 2 || len(all.Responses) != 1 || all.NextVersion != 6 {
			t.Fatalf("whole history %+v", all)
		}
		var d wire.HistoryDeltaJSON
		e.do("GET", "/v1/worker/executions/"+parent.String()+"/history?from_version=4&after_cursor=1", nil).want(http.StatusOK).decode(&d)
		if len(d.Events) != 1 || d.Events[0].Version != 4 || d.Responses == nil || len(d.Responses) != 0 || d.NextVersion != 6 {
			t.Fatalf("delta %+v", d)
		}
		if _, ok := d.Events[0].Event.(*core.JoinNext); !ok {
			t.Fatalf("event %T, want JoinNext", d.Events[0].Event)
		}
	})
	t.Run("ResultIsTheStorageReturnValue", func(t *testing.T) {
		var rv core.ReturnValue
		e.do("GET", "/v1/worker/executions/"+child.String()+"/result", nil).want(http.StatusOK).decode(&rv)
		if !rv.Equal(okString("x")) {
			t.Fatalf("result %+v", rv)
		}
		r := e.do("GET", "/v1/worker/executions/"+parent.String()+"/result", nil).wantErr(http.StatusTooEarly, "not finished yet")
		if r.Header().Get("Retry-After") != "0" {
			t.Fatalf("Retry-After %q", r.Header().Get("Retry-After"))
		}
		short := fresh(t, func(o *Options) { o.FollowWait = 20 * time.Millisecond })
		id := short.submit(ffqnActivity, core.ComponentTypeActivity, "[]")
		short.do("GET", "/v1/worker/executions/"+id.String()+"/result?wait_ms=5000", nil).wantErr(http.StatusTooEarly, "not finished yet")
	})
	t.Run("CreateTakesACreateRequest", func(t *testing.T) {
		id, _ := core.NewExecutionId(uint64(t0.UnixMilli()), bytes.NewReader(make([]byte, 10)))
		req := core.CreateRequest{CreatedAt: t0, ExecutionID: id, FFQN: ffqnActivity, Params: core.Params{json.RawMessage(`1`)},
			ScheduledAt: t0.Add(time.Hour), ComponentID: unmanagedComponent(core.ComponentTypeActivity), Metadata: core.ExecutionMetadata{}}
		var nv wire.NextVersionJSON
		e.do("POST", "/v1/worker/create", req).want(http.StatusOK).decode(&nv)
		if nv.NextVersion != 1 {
			t.Fatalf("next %d", nv.NextVersion)
		}
		var st core.ExecutionWithState
		e.do("GET", "/v1/executions/"+id.String()+"/status", nil).want(http.StatusOK).decode(&st)
		if st.PendingState.Status() != "pending_at" || !st.PendingState.PendingAt.ScheduledAt.Equal(t0.Add(time.Hour)) {
			t.Fatalf("status %+v", st)
		}
		e.rejectAll(t, []badReq{{name: "ExistingIdIs409", method: "POST", path: "/v1/worker/create", body: req, status: 409, msg: "conflict"}})
	})
	unknown, _ := core.NewExecutionId(14, nil)
	e.rejectAll(t, []badReq{
		{name: "UnknownHistoryIs404", method: "GET", path: "/v1/worker/executions/" + unknown.String() + "/history", status: 404, msg: "not found"},
		{name: "UnknownResultIs404", method: "GET", path: "/v1/worker/executions/" + unknown.String() + "/result", status: 404, msg: "not found"},
		{name: "BadFromVersionIs400", method: "GET", path: "/v1/worker/executions/" + parent.String() + "/history?from_version=-1", status: 400, msg: "invalid query parameter `from_version`…"},
		{name: "BadAfterCursorIs400", method: "GET", path: "/v1/worker/executions/" + parent.String() + "/history?after_cursor=x", status: 400, msg: "invalid query parameter `after_cursor`…"},
		{name: "CreateMissingFieldIs422", method: "POST", path: "/v1/worker/create", body: `{"created_at":"2026-01-01T00:00:00Z"}`, status: 422, msg: "invalid request body: missing field `execution_id`"},
		{name: "LockUnknownFieldIs422", method: "POST", path: "/v1/worker/lock/one", body: `{"skip_history":true,"bogus":1}`, status: 422, msg: "invalid request body: …"},
	})
}
