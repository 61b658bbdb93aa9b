package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/wire"
)

// runRouteTests exercises every route with good and bad input against the
// stores newDB returns (each call must return an empty, isolated store).
// Routes that need deployment data run over fakeDeployments wrapped around
// the store, so the suite does not depend on a backend storing deployments.
func runRouteTests(t *testing.T, newDB func(t *testing.T) core.DbExternalApi) {
	fresh := func(t *testing.T, opts ...envOption) *env {
		t.Helper()
		return newEnv(t, newDB(t), opts...)
	}
	t.Run("ExecutionID", func(t *testing.T) { testExecutionID(t, fresh(t)) })
	t.Run("Submit", func(t *testing.T) { testSubmit(t, fresh) })
	t.Run("Retval", func(t *testing.T) { testRetval(t, fresh) })
	t.Run("Status", func(t *testing.T) { testStatus(t, fresh(t)) })
	t.Run("ListExecutions", func(t *testing.T) { testListExecutions(t, fresh(t)) })
	t.Run("ListExecutionsPaging", func(t *testing.T) { testListExecutionsPaging(t, fresh(t)) })
	t.Run("ListExecutionsLink", func(t *testing.T) { testListExecutionsLink(t, fresh(t)) })
	t.Run("StatesAndCounts", func(t *testing.T) { testStatesAndCounts(t, fresh(t)) })
	t.Run("Events", func(t *testing.T) { testEvents(t, fresh(t)) })
	t.Run("Responses", func(t *testing.T) { testResponses(t, fresh(t)) })
	t.Run("Logs", func(t *testing.T) { testLogs(t, fresh(t)) })
	t.Run("Cancel", func(t *testing.T) { testCancel(t, fresh(t)) })
	t.Run("PauseUnpause", func(t *testing.T) { testPause(t, fresh(t)) })
	t.Run("Stub", func(t *testing.T) { testStub(t, fresh(t)) })
	t.Run("Backtrace", func(t *testing.T) { testBacktrace(t, fresh) })
	t.Run("Upgrade", func(t *testing.T) { testUpgrade(t, fresh(t)) })
	t.Run("Delays", func(t *testing.T) { testDelays(t, fresh) })
	t.Run("EngineRoutes", func(t *testing.T) { testEngineRoutes(t, fresh(t)) })
	t.Run("DeploymentsOnTheBareStore", func(t *testing.T) { testDeploymentsBare(t, fresh(t)) })
	t.Run("Deployments", func(t *testing.T) { testDeployments(t, newDB) })
	t.Run("WorkerDeployments", func(t *testing.T) { testWorkerDeployments(t, fresh(t)) })
	t.Run("Files", func(t *testing.T) { testFiles(t, newDB) })
	t.Run("WorkerLock", func(t *testing.T) { testWorkerLock(t, fresh) })
	t.Run("WorkerAppend", func(t *testing.T) { testWorkerAppend(t, fresh(t)) })
	t.Run("WorkerChildChecks", func(t *testing.T) { testWorkerChildChecks(t, fresh) })
	t.Run("WorkerReads", func(t *testing.T) { testWorkerReads(t, fresh(t)) })
	t.Run("WorkerTimers", func(t *testing.T) { testWorkerTimers(t, newDB) })
	t.Run("WorkerSDKRoutes", func(t *testing.T) { testWorkerSDKRoutes(t, fresh) })
	t.Run("Logging", func(t *testing.T) { testLogging(t, newDB) })
	t.Run("BadInput", func(t *testing.T) { testBadInput(t, fresh) })
	t.Run("SweepAtServerTime", func(t *testing.T) { testSweepAtServerTime(t, newDB) })
	t.Run("DrainingEndsLongPolls", func(t *testing.T) { testDraining(t, fresh) })
}

func testExecutionID(t *testing.T, e *env) {
	t.Run("DefaultsToText", func(t *testing.T) {
		r := e.do("GET", "/v1/execution-id", nil).want(http.StatusOK)
		if ct := r.Header().Get("Content-Type"); ct != contentTypeText {
			t.Fatalf("Content-Type=%q, want text", ct)
		}
		id, err := core.ParseExecutionId(r.text())
		if err != nil || !id.IsTopLevel() {
			t.Fatalf("body %q is not a top-level id: %v", r.text(), err)
		}
	})
	t.Run("IsAJSONStringWhenAsked", func(t *testing.T) {
		var s string
		e.do("GET", "/v1/execution-id", nil, "Accept", "application/json").want(http.StatusOK).decode(&s)
		if _, err := core.ParseExecutionId(s); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
	})
	t.Run("HigherQualityWins", func(t *testing.T) {
		r := e.do("GET", "/v1/execution-id", nil, "Accept", "text/plain;q=0.5, application/json")
		if ct := r.Header().Get("Content-Type"); ct != contentTypeJSON {
			t.Fatalf("Content-Type=%q, want JSON", ct)
		}
	})
	t.Run("UnsupportedAcceptIs406JSON", func(t *testing.T) {
		e.do("GET", "/v1/execution-id", nil, "Accept", "text/html").wantErrPrefix(http.StatusNotAcceptable, "not acceptable")
	})
}

func testSubmit(t *testing.T, fresh func(*testing.T, ...envOption) *env) {
	t.Run("PostCreatesWith201AndUnmanagedDefaults", func(t *testing.T) {
		e := fresh(t)
		id := e.do("POST", "/v1/executions", `{"ffqn":"testing:integration/activity.add","params":[3,5]}`).want(http.StatusCreated).okValue()
		var st core.ExecutionWithState
		e.do("GET", "/v1/executions/"+id+"/status", nil).want(http.StatusOK).decode(&st)
		if st.PendingState.Status() != "pending_at" || st.ComponentType != core.ComponentTypeActivity ||
			!st.ComponentDigest.IsZero() || st.DeploymentID != (core.DeploymentId{}) || !st.CreatedAt.Equal(t0) {
			t.Fatalf("state = %+v", st)
		}
		cr, err := e.db.GetCreateRequest(context.Background(), st.ExecutionID)
		if err != nil || string(cr.Params[0]) != "3" || string(cr.Params[1]) != "5" {
			t.Fatalf("create request = %+v, %v", cr, err)
		}
	})
	t.Run("PutIsIdempotentForStructurallyEqualParams", func(t *testing.T) {
		e := fresh(t)
		id := e.submit(ffqnActivity, core.ComponentTypeActivity, `[{"a":1,"b":2}]`)
		e.do("PUT", "/v1/executions/"+id.String(), `{"ffqn":"testing:integration/activity.add","params":[{"b":2,"a":1}]}`).
			wantOk(http.StatusOK, id.String())
	})
	t.Run("PausedCreatesAPausedExecution", func(t *testing.T) {
		e := fresh(t)
		id := e.do("POST", "/v1/executions", `{"ffqn":"testing:integration/activity.add","params":[],"paused":true}`).want(http.StatusCreated).okValue()
		var st core.ExecutionWithState
		e.do("GET", "/v1/executions/"+id+"/status", nil).want(http.StatusOK).decode(&st)
		if st.PendingState.Status() != "paused" {
			t.Fatalf("status %q, want paused", st.PendingState.Status())
		}
	})
	t.Run("UnmanagedModeHonoursComponentType", func(t *testing.T) {
		e := fresh(t)
		id := e.submit(ffqnWorkflow, core.ComponentTypeWorkflow, "[]")
		st, _ := e.db.GetPendingState(context.Background(), id)
		if st.ComponentType != core.ComponentTypeWorkflow {
			t.Fatalf("component type %q", st.ComponentType)
		}
	})
	t.Run("TraceparentBecomesMetadata", func(t *testing.T) {
		// Obelisk's convention: propagation keys prefixed with "tracing:".
		e := fresh(t)
		const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		id := e.do("POST", "/v1/executions", `{"ffqn":"testing:integration/activity.add","params":[]}`,
			"traceparent", tp, "tracestate", "vendor=x").want(http.StatusCreated).okValue()
		eid, _ := core.ParseExecutionId(id)
		cr, _ := e.db.GetCreateRequest(context.Background(), eid)
		want := core.ExecutionMetadata{"tracing:traceparent": tp, "tracing:tracestate": "vendor=x"}
		if !reflect.DeepEqual(cr.Metadata, want) {
			t.Fatalf("metadata %v, want %v", cr.Metadata, want)
		}
	})
	t.Run("InvalidTraceparentIsIgnored", func(t *testing.T) {
		e := fresh(t)
		id := e.do("POST", "/v1/executions", `{"ffqn":"testing:integration/activity.add","params":[]}`,
			"traceparent", "00-nothex-00f067aa0ba902b7-01").want(http.StatusCreated).okValue()
		eid, _ := core.ParseExecutionId(id)
		cr, _ := e.db.GetCreateRequest(context.Background(), eid)
		if len(cr.Metadata) != 0 {
			t.Fatalf("metadata %v, want none", cr.Metadata)
		}
	})
	t.Run("FollowReturnsTheRetvalOfAFinishedExecution", func(t *testing.T) {
		e := fresh(t)
		id := e.submit(ffqnActivity, core.ComponentTypeActivity, "[]")
		e.finish(id, okString("hi"))
		r := e.do("PUT", "/v1/executions/"+id.String()+"?follow=true", `{"ffqn":"testing:integration/activity.add","params":[]}`).want(http.StatusOK)
		if got := strings.TrimSpace(r.text()); got != "{\n  \"ok\": \"hi\"\n}" {
			t.Fatalf("body %q", got)
		}
	})
	t.Run("FollowWaitsForAConcurrentFinish", func(t *testing.T) {
		e := fresh(t)
		id := e.submit(ffqnActivity, core.ComponentTypeActivity, "[]")
		done := make(chan *httptest.ResponseRecorder)
		go func() {
			req := httptest.NewRequest("PUT", "/v1/executions/"+id.String()+"?follow=true",
				strings.NewReader(`{"ffqn":"testing:integration/activity.add","params":[]}`))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			e.h.ServeHTTP(rec, req)
			done <- rec
		}()
		e.finish(id, core.RetErr(nil))
		rec := <-done
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"err": null`) {
			t.Fatalf("status %d body %s", rec.Code, rec.Body.String())
		}
	})
	t.Run("FollowWithAnExpiredWaitStillReturnsAFinishedResult", func(t *testing.T) {
		// docs/spec/semantics.md §4.3.14: the result is read before the
		// follow bound is raced, so even a bound that has already passed
		// answers a finished execution's result.
		e := fresh(t, func(o *Options) { o.FollowWait = time.Nanosecond })
		id := e.submit(ffqnActivity, core.ComponentTypeActivity, "[]")
		e.finish(id, okString("hi"))
		r := e.do("PUT", "/v1/executions/"+id.String()+"?follow=true", `{"ffqn":"testing:integration/activity.add","params":[]}`).want(http.StatusOK)
		if got := strings.TrimSpace(r.text()); got != "{\n  \"ok\": \"hi\"\n}" {
			t.Fatalf("body %q", got)
		}
		r = e.do("GET", "/v1/executions/"+id.String()+"?follow=true", nil).want(http.StatusOK)
		if got := strings.TrimSpace(r.text()); got != "{\n  \"ok\": \"hi\"\n}" {
			t.Fatalf("GET ?follow body %q", got)
		}
	})
	t.Run("FollowTimeoutIs202WithLocation", func(t *testing.T) {
		e := fresh(t, func(o *Options) { o.FollowWait = 20 * time.Millisecond })
		r := e.do("POST", "/v1/executions?follow=true", `{"ffqn":"testing:integration/activity.add","params":[]}`).want(http.StatusAccepted)
		id := r.okValue()
		if loc := r.Header().Get("Location"); loc != "/v1/executions/"+id {
			t.Fatalf("Location=%q", loc)
		}
		if r.Header().Get("Retry-After") == "" {
			t.Fatal("missing Retry-After")
		}
	})
	t.Run("RejectsBadInputWithoutWriting", func(t *testing.T) {
		e := fresh(t, func(o *Options) { o.MaxBodyBytes = 256 })
		id := e.submit(ffqnActivity, core.ComponentTypeActivity, "[1]")
		good := `{"ffqn":"testing:integration/activity.add","params":[]}`
		deep := `{"ffqn":"testing:integration/activity.add","params":[` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `]}`
		e.rejectAll(t, []badReq{
			{name: "DifferentParamsIs409", method: "PUT", path: "/v1/executions/" + id.String(), body: `{"ffqn":"testing:integration/activity.add","params":[2]}`,
				status: 409, msg: msgSubmitConflict},
			{name: "DerivedIDIs400", method: "PUT", path: "/v1/executions/" + id.NextLevel(mustJS("g:1")).String(), body: good, status: 400, msg: msgMustBeTopLevel},
			{name: "InvalidIDIs400", method: "PUT", path: "/v1/executions/nope", body: good, status: 400, msg: `invalid execution id "nope": wrong prefix`},
			{name: "MissingContentTypeIs415", method: "POST", path: "/v1/executions", body: []byte(good), status: 415, msg: "expected request with `Content-Type: application/json`"},
			{name: "MalformedJSONIs400", method: "POST", path: "/v1/executions", body: `{"ffqn":`, status: 400, msg: "invalid JSON: …"},
			{name: "EmptyBodyIs400", method: "POST", path: "/v1/executions", body: ` `, status: 400, msg: "missing request body"},
			{name: "TrailingDataIs400", method: "POST", path: "/v1/executions", body: good + `{}`, status: 400, msg: "invalid JSON…"},
			{name: "MissingFFQNIs422", method: "POST", path: "/v1/executions", body: `{"params":[]}`, status: 422, msg: "invalid request body: missing field `ffqn`"},
			{name: "MissingParamsIs422", method: "POST", path: "/v1/executions", body: `{"ffqn":"testing:integration/activity.add"}`, status: 422, msg: "invalid request body: missing field `params`"},
			{name: "NullParamsIs422", method: "POST", path: "/v1/executions", body: `{"ffqn":"testing:integration/activity.add","params":null}`, status: 422, msg: "invalid request body: …"},
			{name: "ParamsNotAnArrayIs422", method: "POST", path: "/v1/executions", body: `{"ffqn":"testing:integration/activity.add","params":{}}`, status: 422, msg: "invalid request body: …"},
			{name: "UnknownFieldIs422", method: "POST", path: "/v1/executions", body: `{"ffqn":"testing:integration/activity.add","params":[],"pasued":true}`, status: 422, msg: "invalid request body: unknown field…"},
			{name: "InvalidFFQNIs422", method: "POST", path: "/v1/executions", body: `{"ffqn":"nope","params":[]}`, status: 422, msg: "invalid request body: …"},
			{name: "UnknownComponentTypeIs422", method: "POST", path: "/v1/executions", body: `{"ffqn":"testing:integration/activity.add","params":[],"component_type":"lambda"}`, status: 422, msg: "invalid request body: …"},
			{name: "BadFollowIs400", method: "POST", path: "/v1/executions?follow=yes", body: good, status: 400, msg: "invalid query parameter `follow`: expected `true` or `false`"},
			{name: "TooDeepIs400", method: "POST", path: "/v1/executions", body: deep, status: 400, msg: "invalid JSON: nesting deeper than 64 levels"},
			{name: "InvalidUTF8Is400", method: "POST", path: "/v1/executions", body: `{"ffqn":"testing:integration/activity.add","params":["a` + "\xff" + `"]}`,
				status: 400, msg: "invalid JSON: not valid UTF-8 (byte offset 55)"},
			{name: "InvalidUTF8InAKeyIs400", method: "POST", path: "/v1/executions", body: `{"ffqn":"testing:integration/activity.add","params":[{"` + "\xc3" + `":1}]}`,
				status: 400, msg: "invalid JSON: not valid UTF-8…"},
			{name: "LoneHighSurrogateIs400", method: "POST", path: "/v1/executions", body: `{"ffqn":"testing:integration/activity.add","params":["\ud800"]}`,
				status: 400, msg: "invalid JSON: lone surrogate `\\ud800` in a string at `params[0]`"},
			{name: "LoneLowSurrogateIs400", method: "POST", path: "/v1/executions", body: `{"ffqn":"testing:integration/activity.add","params":[{"a":"x\udc00"}]}`,
				status: 400, msg: "invalid JSON: lone surrogate `\\udc00` in a string at `params[0].a`"},
			{name: "LoneSurrogateInAFieldIs400", method: "POST", path: "/v1/executions", body: `{"ffqn":"testing:integration/activity.add\ud800","params":[]}`,
				status: 400, msg: "invalid JSON: lone surrogate `\\ud800` in a string at `ffqn`"},
			{name: "DuplicateKeyIs400", method: "POST", path: "/v1/executions", body: `{"ffqn":"testing:integration/activity.add","params":[],"params":[1]}`,
				status: 400, msg: "invalid JSON: duplicate key `params`"},
			{name: "DuplicateKeyInParamsIs400", method: "POST", path: "/v1/executions", body: `{"ffqn":"testing:integration/activity.add","params":[{"a":1,"a":2}]}`,
				status: 400, msg: "invalid JSON: duplicate key `a` at `params[0]`"},
			{name: "DuplicateKeyDeepInParamsIs400", method: "POST", path: "/v1/executions", body: `{"ffqn":"testing:integration/activity.add","params":[1,[{"x":{"b":1,"\u0062":1}}]]}`,
				status: 400, msg: "invalid JSON: duplicate key `b` at `params[1][0].x`"},
			{name: "InvalidUTF8InTheQueryIs400", method: "POST", path: "/v1/executions?follow=%ff", body: good, status: 400, msg: "invalid query string: not valid UTF-8"},
			{name: "TooLargeIs413", method: "POST", path: "/v1/executions", body: `{"ffqn":"testing:integration/activity.add","params":["` + strings.Repeat("x", 300) + `"]}`, status: 413, msg: "request body too large"},
			{name: "WrongMethodIs405", method: "DELETE", path: "/v1/executions", status: 405, msg: "method not allowed"},
		})
	})
}

func testRetval(t *testing.T, fresh func(*testing.T, ...envOption) *env) {
	e := fresh(t, func(o *Options) { o.FollowWait = 20 * time.Millisecond })
	pending := e.submit(ffqnActivity, core.ComponentTypeActivity, "[]")
	t.Run("NotFinishedIs425", func(t *testing.T) {
		e.do("GET", "/v1/executions/"+pending.String(), nil).wantErr(http.StatusTooEarly, "not finished yet")
	})
	t.Run("FollowTimeoutIs425WithRetryAfter", func(t *testing.T) {
		r := e.do("GET", "/v1/executions/"+pending.String()+"?follow=true", nil).wantErr(http.StatusTooEarly, "not finished yet")
		if r.Header().Get("Retry-After") == "" {
			t.Fatal("missing Retry-After")
		}
	})
	t.Run("UnknownIs404", func(t *testing.T) {
		id, _ := core.NewExecutionId(1, nil)
		e.do("GET", "/v1/executions/"+id.String(), nil).wantErr(http.StatusNotFound, "not found")
	})
	t.Run("BadIDIs400", func(t *testing.T) {
		e.do("GET", "/v1/executions/E_1", nil).wantErrPrefix(http.StatusBadRequest, `invalid execution id "E_1"`)
	})
	for _, tc := range []struct {
		name string
		rv   core.ReturnValue
		want string
	}{
		{"OkIsTheUntypedValue", okString("hi"), `{"ok":"hi"}`},
		{"OkWithoutValueIsNull", core.RetOk(nil), `{"ok":null}`},
		{"ErrIsTheUntypedValue", core.RetErr(&core.WastValWithType{Type: "u8", Value: json.RawMessage("7")}), `{"err":7}`},
		{"FailureIsExecutionFailed", core.RetFailure(core.FailureTimedOut, nil, nil), `{"execution_failed":{"kind":"timed_out"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := e.submit(ffqnActivity, core.ComponentTypeActivity, "[]")
			e.finish(id, tc.rv)
			r := e.do("GET", "/v1/executions/"+id.String(), nil, "Accept", "text/plain").want(http.StatusOK)
			var got any
			r.decode(&got)
			if c := compactJSON(got); c != tc.want {
				t.Fatalf("body %s, want %s", c, tc.want)
			}
		})
	}
}

func testStatus(t *testing.T, e *env) {
	id := e.submit(ffqnActivity, core.ComponentTypeActivity, "[]")
	t.Run("JSONIsExecutionWithState", func(t *testing.T) {
		r := e.do("GET", "/v1/executions/"+id.String()+"/status", nil).want(http.StatusOK)
		st, _ := e.db.GetPendingState(context.Background(), id)
		want, _ := core.MarshalJSONIndent(st)
		if r.text() != string(want) {
			t.Fatalf("body\n%s\nwant\n%s", r.text(), want)
		}
	})
	t.Run("TextIsTheStateLine", func(t *testing.T) {
		r := e.do("GET", "/v1/executions/"+id.String()+"/status", nil, "Accept", "text/plain").want(http.StatusOK)
		if r.text() != "Pending at 2026-01-01T00:00:00Z" {
			t.Fatalf("text %q", r.text())
		}
	})
	t.Run("FinishedTextNamesTheFailureKind", func(t *testing.T) {
		f := e.submit(ffqnActivity, core.ComponentTypeActivity, "[]")
		e.finish(f, core.RetFailure(core.FailureOutOfFuel, nil, nil))
		r := e.do("GET", "/v1/executions/"+f.String()+"/status", nil, "Accept", "text/plain").want(http.StatusOK)
		if r.text() != "Finished: Execution failure (OutOfFuel)" {
			t.Fatalf("text %q", r.text())
		}
	})
	t.Run("UnknownIs404", func(t *testing.T) {
		other, _ := core.NewExecutionId(5, nil)
		e.do("GET", "/v1/executions/"+other.String()+"/status", nil).wantErr(http.StatusNotFound, "not found")
	})
	t.Run("BadIDIs400", func(t *testing.T) {
		e.do("GET", "/v1/executions/E_01KJ3ZC4Q5W8X7V6T5R4Q3P2N1.x/status", nil).wantErrPrefix(http.StatusBadRequest, "invalid execution id")
	})
}

func testListExecutions(t *testing.T, e *env) {
	a := e.submit(ffqnActivity, core.ComponentTypeActivity, "[]")
	e.clock.Set(t0.Add(time.Second))
	b := e.submit(ffqnWorkflow, core.ComponentTypeWorkflow, "[]")
	e.clock.Set(t0)
	e.finish(a, okString("x"))
	ids := func(r res) []string {
		var list []core.ExecutionWithState
		r.want(http.StatusOK).decode(&list)
		out := []string{}
		for _, x := range list {
			out = append(out, x.ExecutionID.String())
		}
		return out
	}
	check := func(t *testing.T, query string, want ...core.ExecutionId) {
		t.Helper()
		got := ids(e.do("GET", "/v1/executions"+query, nil))
		ws := []string{}
		for _, w := range want {
			ws = append(ws, w.String())
		}
		if strings.Join(got, ",") != strings.Join(ws, ",") {
			t.Fatalf("%s: got %v, want %v", query, got, ws)
		}
	}
	t.Run("NewestFirst", func(t *testing.T) { check(t, "", b, a) })
	t.Run("FiltersByFFQNPrefix", func(t *testing.T) { check(t, "?ffqn_prefix=testing:integration/workflow", b) })
	t.Run("HidesFinished", func(t *testing.T) { check(t, "?hide_finished=true", b) })
	t.Run("PagesByLength", func(t *testing.T) { check(t, "?length=1", b) })
	t.Run("PagesByTimestampCursor", func(t *testing.T) {
		check(t, "?cursor="+t0.Add(time.Second).String(), a)
		check(t, "?cursor="+t0.String()+"&direction=newer", b)
	})
	t.Run("PagesByExecutionIDCursor", func(t *testing.T) {
		first, second := a, b
		if first.Compare(second) > 0 {
			first, second = second, first
		}
		check(t, "?order=execution_id&cursor="+second.String(), first)
		// An execution-id page is newest first by id.
		check(t, "?order=execution_id&cursor="+second.String()+"&including_cursor=true", second, first)
		check(t, "?order=execution_id", second, first)
	})
	t.Run("ExcludesChildrenUnlessShowDerived", func(t *testing.T) {
		e2 := newEnv(t, e.db)
		parent, child := e2.workflowWithChild(core.ComponentTypeActivity)
		got := ids(e.do("GET", "/v1/executions?show_derived=true&execution_id_prefix="+parent.String(), nil))
		if len(got) != 2 || got[0] != child.String() && got[1] != child.String() {
			t.Fatalf("got %v", got)
		}
		if got := ids(e.do("GET", "/v1/executions?execution_id_prefix="+parent.String(), nil)); len(got) != 1 {
			t.Fatalf("got %v", got)
		}
	})
	t.Run("TextHasOneLinePerExecution", func(t *testing.T) {
		r := e.do("GET", "/v1/executions?deployment_id="+core.DeploymentId{}.String()+"&component_digest="+testDigest.String(), nil, "Accept", "text/plain").want(http.StatusOK)
		if r.text() != "" {
			t.Fatalf("text %q, want empty (no execution has that digest)", r.text())
		}
		r = e.do("GET", "/v1/executions?length=1", nil, "Accept", "text/plain").want(http.StatusOK)
		if !strings.HasPrefix(r.text(), b.String()+" `Pending at ") {
			t.Fatalf("text %q", r.text())
		}
	})
	e.rejectAll(t, []badReq{
		{name: "ZeroLength", method: "GET", path: "/v1/executions?length=0", status: 400, msg: "invalid query parameter `length`: must be non-zero"},
		{name: "HugeLength", method: "GET", path: "/v1/executions?length=70000", status: 400, msg: "invalid query parameter `length`…"},
		{name: "BadDirection", method: "GET", path: "/v1/executions?direction=up", status: 400, msg: "invalid query parameter `direction`: expected `older` or `newer`"},
		{name: "BadCursor", method: "GET", path: "/v1/executions?cursor=yesterday", status: 400, msg: "invalid query parameter `cursor`…"},
		{name: "BadDigest", method: "GET", path: "/v1/executions?component_digest=md5:1", status: 400, msg: "invalid query parameter `component_digest`…"},
		{name: "BadDeployment", method: "GET", path: "/v1/executions?deployment_id=x", status: 400, msg: "invalid query parameter `deployment_id`…"},
		{name: "BadBool", method: "GET", path: "/v1/executions?show_derived=1", status: 400, msg: "invalid query parameter `show_derived`…"},
		{name: "BadQueryString", method: "GET", path: "/v1/executions?length=%zz", status: 400, msg: "invalid query string…"},
	})
}

func testEvents(t *testing.T, e *env) {
	id := e.submit(ffqnActivity, core.ComponentTypeActivity, "[]")
	e.lock(id, core.ComponentTypeActivity)
	versions := func(t *testing.T, query string) []core.Version {
		t.Helper()
		var page core.ListExecutionEventsResponse
		e.do("GET", "/v1/executions/"+id.String()+"/events"+query, nil).want(http.StatusOK).decode(&page)
		var out []core.Version
		for _, ev := range page.Events {
			out = append(out, ev.Version)
		}
		if page.MaxVersion != 1 {
			t.Fatalf("max_version %d", page.MaxVersion)
		}
		return out
	}
	t.Run("NewerExcludesCreatedByDefault", func(t *testing.T) {
		if got := versions(t, ""); len(got) != 1 || got[0] != 1 {
			t.Fatalf("versions %v", got)
		}
	})
	t.Run("IncludingCursorIncludesCreated", func(t *testing.T) {
		if got := versions(t, "?including_cursor=true&version=0"); len(got) != 2 {
			t.Fatalf("versions %v", got)
		}
	})
	t.Run("OlderIsStillAscending", func(t *testing.T) {
		if got := versions(t, "?direction=older&length=5"); len(got) != 2 || got[0] != 0 {
			t.Fatalf("versions %v", got)
		}
	})
	t.Run("TextHasOneLinePerEvent", func(t *testing.T) {
		r := e.do("GET", "/v1/executions/"+id.String()+"/events", nil, "Accept", "text/plain").want(http.StatusOK)
		if !strings.HasPrefix(r.text(), "1 `2026-01-01T00:00:00Z` {\"locked\":") {
			t.Fatalf("text %q", r.text())
		}
	})
	other, _ := core.NewExecutionId(9, nil)
	e.rejectAll(t, []badReq{
		{name: "UnknownIs404", method: "GET", path: "/v1/executions/" + other.String() + "/events", status: 404, msg: "not found"},
		{name: "BadVersion", method: "GET", path: "/v1/executions/" + id.String() + "/events?version=-1", status: 400, msg: "invalid query parameter `version`…"},
		{name: "BadDirection", method: "GET", path: "/v1/executions/" + id.String() + "/events?direction=x", status: 400, msg: "invalid query parameter `direction`…"},
		{name: "BadBacktraceFlag", method: "GET", path: "/v1/executions/" + id.String() + "/events?include_backtrace_id=y", status: 400, msg: "invalid query parameter `include_backtrace_id`…"},
	})
}

func testResponses(t *testing.T, e *env) {
	parent, child := e.workflowWithChild(core.ComponentTypeActivityStub)
	e.do("PUT", "/v1/executions/"+child.String()+"/stub", `{"ok":{"type":"string","value":"s"}}`).wantOk(http.StatusOK, "stubbed")
	t.Run("ListsTheChildResponse", func(t *testing.T) {
		var page core.ListResponsesResponse
		e.do("GET", "/v1/executions/"+parent.String()+"/responses", nil).want(http.StatusOK).decode(&page)
		if len(page.Responses) != 1 || page.MaxCursor != 1 || page.Responses[0].Cursor != 1 {
			t.Fatalf("page %+v", page)
		}
		f, ok := page.Responses[0].Event.Event.Event.(*core.ChildExecutionFinished)
		if !ok || f.ChildExecutionID.ExecutionId != child {
			t.Fatalf("response %+v", page.Responses[0])
		}
	})
	t.Run("FiltersByNamedJoinSet", func(t *testing.T) {
		var page core.ListResponsesResponse
		e.do("GET", "/v1/executions/"+parent.String()+"/responses?join_set=other", nil).want(http.StatusOK).decode(&page)
		if len(page.Responses) != 0 || page.MaxCursor != 1 {
			t.Fatalf("page %+v", page)
		}
	})
	t.Run("UnknownExecutionIsAnEmptyPage", func(t *testing.T) {
		other, _ := core.NewExecutionId(9, nil)
		var page core.ListResponsesResponse
		e.do("GET", "/v1/executions/"+other.String()+"/responses", nil).want(http.StatusOK).decode(&page)
		if page.Responses == nil || len(page.Responses) != 0 {
			t.Fatalf("page %+v", page)
		}
	})
	t.Run("TextHasOneLinePerResponse", func(t *testing.T) {
		r := e.do("GET", "/v1/executions/"+parent.String()+"/responses", nil, "Accept", "text/plain").want(http.StatusOK)
		if !strings.HasPrefix(r.text(), "1 `2026-01-01T00:00:00Z` g:1 {\"type\":\"child_execution_finished\"") {
			t.Fatalf("text %q", r.text())
		}
	})
	e.rejectAll(t, []badReq{
		{name: "BadJoinSetName", method: "GET", path: "/v1/executions/" + parent.String() + "/responses?join_set=a_b", status: 400, msg: "invalid query parameter `join_set`: invalid join set name"},
		{name: "EmptyJoinSetName", method: "GET", path: "/v1/executions/" + parent.String() + "/responses?join_set=", status: 400, msg: "invalid query parameter `join_set`: must not be empty"},
		{name: "NulJoinSetName", method: "GET", path: "/v1/executions/" + parent.String() + "/responses?join_set=%00", status: 400, msg: "invalid query parameter `join_set`: invalid join set name"},
		{name: "BadCursor", method: "GET", path: "/v1/executions/" + parent.String() + "/responses?cursor=x", status: 400, msg: "invalid query parameter `cursor`…"},
	})
}

func testLogs(t *testing.T, e *env) {
	id := e.submit(ffqnActivity, core.ComponentTypeActivity, "[]")
	e.do("POST", "/v1/worker/logs", map[string]any{"logs": []map[string]any{
		{"execution_id": id, "run_id": testRun, "created_at": t0, "type": "log", "level": "info", "message": "hello"},
		{"execution_id": id, "run_id": testRun, "created_at": t0.Add(time.Second), "type": "stream", "stream_type": "stdout", "payload": []byte("out\n")},
	}}).want(http.StatusNoContent)
	list := func(t *testing.T, query string) []wire.LogEntryJSON {
		t.Helper()
		var items []wire.LogEntryJSON
		e.do("GET", "/v1/executions/"+id.String()+"/logs"+query, nil).want(http.StatusOK).decode(&items)
		return items
	}
	t.Run("ListsLogsAndStreams", func(t *testing.T) {
		items := list(t, "")
		if len(items) != 2 || items[0].Type != "log" || *items[0].Message != "hello" || items[0].Level != "info" ||
			items[1].Type != "stream" || *items[1].Payload != "b3V0Cg==" || items[1].StreamType != "stdout" {
			t.Fatalf("items %+v", items)
		}
	})
	t.Run("PagesByOpaqueCursor", func(t *testing.T) {
		first := list(t, "")[0]
		items := list(t, "?cursor="+first.Cursor)
		if len(items) != 1 || items[0].Type != "stream" {
			t.Fatalf("items %+v", items)
		}
	})
	t.Run("OlderIsNewestFirst", func(t *testing.T) {
		items := list(t, "?direction=older")
		if len(items) != 2 || items[0].Type != "stream" {
			t.Fatalf("items %+v", items)
		}
	})
	t.Run("FiltersByLevelAndShowFlags", func(t *testing.T) {
		if items := list(t, "?level=error&show_streams=false"); len(items) != 0 {
			t.Fatalf("items %+v", items)
		}
		if items := list(t, "?show_logs=false"); len(items) != 1 || items[0].Type != "stream" {
			t.Fatalf("items %+v", items)
		}
	})
	t.Run("LegacyTimestampCursorBoundsCreatedAt", func(t *testing.T) {
		if items := list(t, "?cursor="+t0.String()); len(items) != 1 || items[0].Type != "stream" {
			t.Fatalf("items %+v", items)
		}
	})
	t.Run("TextFormatsLevelAndMessage", func(t *testing.T) {
		r := e.do("GET", "/v1/executions/"+id.String()+"/logs?show_run_id=true", nil, "Accept", "text/plain").want(http.StatusOK)
		want := "2026-01-01T00:00:00.000000000Z [INFO  ] [" + testRun.String() + "] hello\n"
		if !strings.HasPrefix(r.text(), want) {
			t.Fatalf("text %q, want prefix %q", r.text(), want)
		}
	})
	e.rejectAll(t, []badReq{
		{name: "NoLogsNoStreams", method: "GET", path: "/v1/executions/" + id.String() + "/logs?show_logs=false&show_streams=false", status: 400, msg: "at least one of `show_logs`, `show_streams` must be set"},
		{name: "BadCursor", method: "GET", path: "/v1/executions/" + id.String() + "/logs?cursor=%21%21", status: 400, msg: "invalid log cursor"},
		{name: "BadLevel", method: "GET", path: "/v1/executions/" + id.String() + "/logs?level=loud", status: 400, msg: "invalid query parameter `level`…"},
		{name: "BadStreamType", method: "GET", path: "/v1/executions/" + id.String() + "/logs?stream_type=stdin", status: 400, msg: "invalid query parameter `stream_type`…"},
		{name: "BadAfter", method: "GET", path: "/v1/executions/" + id.String() + "/logs?after=now", status: 400, msg: "invalid query parameter `after`…"},
		{name: "WorkerLogBadType", method: "POST", path: "/v1/worker/logs", body: map[string]any{"logs": []map[string]any{
			{"execution_id": id, "run_id": testRun, "created_at": t0, "type": "trace", "message": "x"}}}, status: 422, msg: "invalid request body: logs[0]: unknown row type…"},
		{name: "WorkerLogMixedFields", method: "POST", path: "/v1/worker/logs", body: map[string]any{"logs": []map[string]any{
			{"execution_id": id, "run_id": testRun, "created_at": t0, "type": "log", "level": "info", "message": "x", "payload": "eA=="}}}, status: 422, msg: "invalid request body: logs[0]: a log row needs…"},
		{name: "WorkerLogMissingRunID", method: "POST", path: "/v1/worker/logs", body: map[string]any{"logs": []map[string]any{
			{"execution_id": id, "created_at": t0, "type": "log", "level": "info", "message": "x"}}}, status: 422, msg: "invalid request body: missing field `logs[0].run_id`"},
		{name: "WorkerLogsEmpty", method: "POST", path: "/v1/worker/logs", body: `{"logs":[]}`, status: 400, msg: "`logs` must have between 1 and 1000 entries, got 0"},
	})
}

func testCancel(t *testing.T, e *env) {
	put := func(id core.ExecutionId) res { return e.do("PUT", "/v1/executions/"+id.String()+"/cancel", nil) }
	t.Run("ActivityIsCancellable", func(t *testing.T) {
		id := e.submit(ffqnActivity, core.ComponentTypeActivity, "[]")
		put(id).wantOk(http.StatusOK, "cancellation requested")
		st, _ := e.db.GetPendingState(context.Background(), id)
		if st.PendingState.Status() != "cancelling" {
			t.Fatalf("status %s", st.PendingState.Status())
		}
		put(id).wantOk(http.StatusOK, "cancellation requested")
	})
	t.Run("CancellableWorkflowThenAlreadyCancelling", func(t *testing.T) {
		id := e.submit(ffqnCancel, core.ComponentTypeWorkflow, "[]")
		put(id).wantOk(http.StatusOK, "cancellation requested")
		put(id).wantErr(http.StatusConflict, "already cancelling")
	})
	t.Run("FinishedIsAlreadyFinished", func(t *testing.T) {
		id := e.submit(ffqnActivity, core.ComponentTypeActivity, "[]")
		e.finish(id, okString("x"))
		put(id).wantErr(http.StatusConflict, "already finished")
	})
	plain := e.submit(ffqnWorkflow, core.ComponentTypeWorkflow, "[]")
	webhook := e.submit(ffqnWorkflow, core.ComponentTypeWebhookEndpoint, "[]")
	unknown, _ := core.NewExecutionId(7, nil)
	e.rejectAll(t, []badReq{
		{name: "PlainWorkflowIs422", method: "PUT", path: "/v1/executions/" + plain.String() + "/cancel", status: 422, msg: "cannot cancel, execution is not a cancellable workflow"},
		{name: "WebhookIs422", method: "PUT", path: "/v1/executions/" + webhook.String() + "/cancel", status: 422, msg: "cancelled execution must be an activity or cancellable workflow"},
		{name: "UnknownIs404", method: "PUT", path: "/v1/executions/" + unknown.String() + "/cancel", status: 404, msg: "not found"},
		{name: "BadIDIs400", method: "PUT", path: "/v1/executions/x/cancel", status: 400, msg: `invalid execution id "x": wrong prefix`},
		{name: "GetIs405", method: "GET", path: "/v1/executions/" + plain.String() + "/cancel", status: 405, msg: "method not allowed"},
	})
}

func testPause(t *testing.T, e *env) {
	id := e.submit(ffqnActivity, core.ComponentTypeActivity, "[]")
	pause := "/v1/executions/" + id.String() + "/pause"
	unpause := "/v1/executions/" + id.String() + "/unpause"
	t.Run("PauseThenUnpause", func(t *testing.T) {
		e.do("PUT", pause, nil).wantOk(http.StatusOK, "paused")
		e.do("PUT", unpause, nil).wantOk(http.StatusOK, "unpaused")
	})
	t.Run("TextBodyIsTheBareMessage", func(t *testing.T) {
		r := e.do("PUT", pause, nil, "Accept", "text/plain").want(http.StatusOK)
		if r.text() != "paused" {
			t.Fatalf("text %q", r.text())
		}
		e.do("PUT", unpause, nil).want(http.StatusOK)
	})
	locked := e.submit(ffqnActivity, core.ComponentTypeActivity, "[]")
	e.lock(locked, core.ComponentTypeActivity)
	finished := e.submit(ffqnActivity, core.ComponentTypeActivity, "[]")
	e.finish(finished, okString("x"))
	paused := e.submit(ffqnActivity, core.ComponentTypeActivity, "[]")
	e.do("PUT", "/v1/executions/"+paused.String()+"/pause", nil).want(http.StatusOK)
	unknown, _ := core.NewExecutionId(7, nil)
	e.rejectAll(t, []badReq{
		{name: "AlreadyPausedIs422", method: "PUT", path: "/v1/executions/" + paused.String() + "/pause", status: 422, msg: "cannot pause, execution is already paused"},
		{name: "NotPausedIs422", method: "PUT", path: unpause, status: 422, msg: "cannot unpause, execution is not paused"},
		{name: "RunningActivityIs422", method: "PUT", path: "/v1/executions/" + locked.String() + "/pause", status: 422, msg: "cannot pause a running activity; cancel it instead"},
		{name: "FinishedIs409", method: "PUT", path: "/v1/executions/" + finished.String() + "/pause", status: 409, msg: "already finished"},
		{name: "FinishedUnpauseIs409", method: "PUT", path: "/v1/executions/" + finished.String() + "/unpause", status: 409, msg: "already finished"},
		{name: "UnknownIs404", method: "PUT", path: "/v1/executions/" + unknown.String() + "/pause", status: 404, msg: "not found"},
		{name: "UnknownUnpauseIs404", method: "PUT", path: "/v1/executions/" + unknown.String() + "/unpause", status: 404, msg: "not found"},
	})
	t.Run("TextErrorBody", func(t *testing.T) {
		r := e.do("PUT", "/v1/executions/"+unknown.String()+"/pause", nil, "Accept", "text/plain").want(http.StatusNotFound)
		if r.text() != "not found" {
			t.Fatalf("text %q", r.text())
		}
	})
}

func testStub(t *testing.T, e *env) {
	parent, child := e.workflowWithChild(core.ComponentTypeActivityStub)
	stub := "/v1/executions/" + child.String() + "/stub"
	t.Run("StubsThenIsIdempotent", func(t *testing.T) {
		e.do("PUT", stub, `{"ok":{"type":"string","value":"stub-ok"}}`).wantOk(http.StatusOK, "stubbed")
		e.do("PUT", stub, `{"ok":{"value":"stub-ok","type":"string"}}`).wantOk(http.StatusOK, "stubbed")
		var page core.ListResponsesResponse
		e.do("GET", "/v1/executions/"+parent.String()+"/responses", nil).want(http.StatusOK).decode(&page)
		if len(page.Responses) != 1 {
			t.Fatalf("responses %+v", page)
		}
		var rv any
		e.do("GET", "/v1/executions/"+child.String(), nil).want(http.StatusOK).decode(&rv)
		if compactJSON(rv) != `{"ok":"stub-ok"}` {
			t.Fatalf("retval %s", compactJSON(rv))
		}
	})
	_, activityChild := e.workflowWithChild(core.ComponentTypeActivity)
	unknownChild, _ := core.ParseExecutionId(parent.String() + ".g:9_1")
	e.rejectAll(t, []badReq{
		{name: "DifferentValueIs409", method: "PUT", path: stub, body: `{"ok":{"type":"string","value":"other"}}`, status: 409, msg: "conflict"},
		{name: "TopLevelIDIs400", method: "PUT", path: "/v1/executions/" + parent.String() + "/stub", body: `{"ok":null}`, status: 400,
			msg: `invalid execution id "` + parent.String() + `": must be a derived execution id`},
		{name: "UntypedValueIs422", method: "PUT", path: stub, body: `{"ok":"stub-ok"}`, status: 422, msg: "invalid request body: …"},
		{name: "NotAStubIs404", method: "PUT", path: "/v1/executions/" + activityChild.String() + "/stub", body: `{"ok":null}`, status: 404, msg: "function not found"},
		{name: "UnknownChildIs404", method: "PUT", path: "/v1/executions/" + unknownChild.String() + "/stub", body: `{"ok":null}`, status: 404, msg: "not found"},
		{name: "NoContentTypeIs415", method: "PUT", path: stub, body: []byte(`{"ok":null}`), status: 415, msg: "expected request with `Content-Type: application/json`"},
	})
}

func testBacktrace(t *testing.T, fresh func(*testing.T, ...envOption) *env) {
	e := fresh(t)
	id := e.submit(ffqnWorkflow, core.ComponentTypeWorkflow, "[]")
	file, line := "src/lib.rs", uint32(7)
	bt := core.BacktraceInfo{ExecutionID: id, ComponentID: unmanagedComponent(core.ComponentTypeWorkflow), VersionMinIncluding: 1, VersionMaxExcluding: 3,
		WasmBacktrace: core.WasmBacktrace{Frames: []core.FrameInfo{{Module: "m", FuncName: "f", Symbols: []core.FrameSymbol{{File: &file, Line: &line}}}}}}
	t.Run("WorkerStoresOnce", func(t *testing.T) {
		var ins wire.InsertedJSON
		e.do("POST", "/v1/worker/backtraces", map[string]any{"backtraces": []core.BacktraceInfo{bt}}).want(http.StatusOK).decode(&ins)
		if ins.Inserted != 1 {
			t.Fatalf("inserted %d", ins.Inserted)
		}
		e.do("POST", "/v1/worker/backtraces", map[string]any{"backtraces": []core.BacktraceInfo{bt}}).want(http.StatusOK).decode(&ins)
		if ins.Inserted != 0 {
			t.Fatalf("second insert %d", ins.Inserted)
		}
	})
	for _, v := range []string{"", "?version=last", "?version=first", "?version=1"} {
		t.Run("GetsTheBacktrace"+v, func(t *testing.T) {
			var got core.BacktraceInfo
			e.do("GET", "/v1/executions/"+id.String()+"/backtrace"+v, nil).want(http.StatusOK).decode(&got)
			if compactJSON(got) != compactJSON(bt) {
				t.Fatalf("got %s", compactJSON(got))
			}
		})
	}
	t.Run("TextListsFrames", func(t *testing.T) {
		r := e.do("GET", "/v1/executions/"+id.String()+"/backtrace", nil, "Accept", "text/plain").want(http.StatusOK)
		if !strings.Contains(r.text(), "version: 1..3\n  m:f\n    ? (src/lib.rs:7:?)\n") {
			t.Fatalf("text %q", r.text())
		}
	})
	t.Run("SourceComesFromTheCAS", func(t *testing.T) {
		fd := newFakeDeployments(e.db)
		e2 := newEnv(t, fd)
		digest, _ := e2.cas.WriteBlob(context.Background(), []byte("fn main() {}\n"))
		fd.sources[file] = digest
		r := e2.do("GET", "/v1/executions/"+id.String()+"/backtrace/source?file=src/lib.rs", nil).want(http.StatusOK)
		if r.text() != "fn main() {}\n" || r.Header().Get("Content-Type") != contentTypeText {
			t.Fatalf("source %q", r.text())
		}
		var s string
		e2.do("GET", "/v1/executions/"+id.String()+"/backtrace/source?file=src/lib.rs", nil, "Accept", "application/json").want(http.StatusOK).decode(&s)
		e2.do("GET", "/v1/executions/"+id.String()+"/backtrace/source?file=other.rs", nil).want(http.StatusNotFound)
	})
	plain := e.submit(ffqnWorkflow, core.ComponentTypeWorkflow, "[]")
	e.rejectAll(t, []badReq{
		{name: "BogusVersionIs400", method: "GET", path: "/v1/executions/" + id.String() + "/backtrace?version=bogus", status: 400, msg: "invalid version value `bogus`"},
		{name: "NoneIs404", method: "GET", path: "/v1/executions/" + plain.String() + "/backtrace", status: 404, msg: "backtrace not found"},
		{name: "SourceNeedsFile", method: "GET", path: "/v1/executions/" + id.String() + "/backtrace/source", status: 400, msg: "missing query parameter `file`",
			hdr: []string{"Accept", "application/json"}},
		{name: "WorkerEmptyBatchIs400", method: "POST", path: "/v1/worker/backtraces", body: `{"backtraces":[]}`, status: 400, msg: "`backtraces` must have between 1 and 90 entries, got 0"},
		{name: "WorkerMissingFieldIs422", method: "POST", path: "/v1/worker/backtraces",
			body:   `{"backtraces":[{"execution_id":"` + id.String() + `","component_id":{"component_type":"workflow","name":"","component_digest":"` + testDigest.String() + `"},"version_min_including":1,"version_max_excluding":2}]}`,
			status: 422, msg: "invalid request body: missing field `wasm_backtrace` at `backtraces[0]`"},
	})
}

func testUpgrade(t *testing.T, e *env) {
	id := e.submit(ffqnWorkflow, core.ComponentTypeWorkflow, "[]")
	zero := core.ComponentDigest{}
	up := "/v1/executions/" + id.String() + "/upgrade"
	body := func(old, new core.ComponentDigest, skip bool) map[string]any {
		return map[string]any{"old": old, "new": new, "skip_determinism_check": skip}
	}
	t.Run("ForcedUpgradeSwitchesTheDigest", func(t *testing.T) {
		e.do("PUT", up, body(zero, testDigest, true)).wantOk(http.StatusOK, "upgraded")
		st, _ := e.db.GetPendingState(context.Background(), id)
		if st.ComponentDigest != testDigest {
			t.Fatalf("digest %s", st.ComponentDigest)
		}
	})
	t.Run("CheckWithoutAWorkerIs404AndCancelled", func(t *testing.T) {
		r := e.do("PUT", up, body(testDigest, zero, false)).wantErrPrefix(http.StatusNotFound, "new component not found: no worker of component digest "+zero.String())
		check, err := core.ParseExecutionId(r.Header().Get("Stela-Upgrade-Check"))
		if err != nil {
			t.Fatal(err)
		}
		st, err := e.db.GetPendingState(context.Background(), check)
		if err != nil || st.FFQN.String() != core.UpgradeCheckFFQN || st.ComponentDigest != zero || st.PendingState.Lifecycle != core.LifecycleCancelling {
			t.Fatalf("the check: %+v, %v; want a cancelling check of the new digest", st, err)
		}
		if st, _ := e.db.GetPendingState(context.Background(), id); st.ComponentDigest != testDigest {
			t.Fatalf("digest %s", st.ComponentDigest)
		}
	})
	finished := e.submit(ffqnActivity, core.ComponentTypeActivity, "[]")
	e.finish(finished, okString("x"))
	e.rejectAll(t, []badReq{
		{name: "CheckOfWrongOldIs404", method: "PUT", path: up, body: body(zero, testDigest, false), status: 404, msg: "not found"},
		{name: "WrongOldIs404", method: "PUT", path: up, body: body(zero, testDigest, true), status: 404, msg: "not found"},
		{name: "FinishedIs409", method: "PUT", path: "/v1/executions/" + finished.String() + "/upgrade", body: body(zero, testDigest, true), status: 409, msg: "already finished"},
		{name: "MissingNewIs422", method: "PUT", path: up, body: `{"old":"` + zero.String() + `"}`, status: 422, msg: "invalid request body: missing field `new`"},
	})
}

func testDelays(t *testing.T, fresh func(*testing.T, ...envOption) *env) {
	var sweepDB core.DbExternalApi
	e := fresh(t, func(o *Options) {
		o.Sweep = func(ctx context.Context, at core.Timestamp) (any, error) { return sweepOnce(ctx, sweepDB, at) }
	})
	sweepDB = e.db
	_, delay := e.workflowWithDelay()
	d := "/v1/delays/" + delay.String()
	due := func() int {
		n := 0
		timers, _ := e.db.GetExpiredTimers(context.Background(), t0.Add(2*time.Hour))
		for _, tm := range timers {
			if tm.Delay != nil && tm.Delay.DelayID == delay {
				n++
			}
		}
		return n
	}
	t.Run("PauseHidesTheTimer", func(t *testing.T) {
		e.do("PUT", d+"/pause", nil).wantOk(http.StatusOK, "paused")
		e.do("PUT", d+"/pause", nil).wantOk(http.StatusOK, "paused")
		if n := due(); n != 0 {
			t.Fatalf("paused delay is due %d times", n)
		}
		e.do("PUT", d+"/unpause", nil).wantOk(http.StatusOK, "unpaused")
		if n := due(); n != 1 {
			t.Fatalf("unpaused delay is due %d times", n)
		}
	})
	t.Run("CancelIsIdempotent", func(t *testing.T) {
		e.do("PUT", d+"/cancel", nil).wantOk(http.StatusOK, "cancelled")
		e.do("PUT", d+"/cancel", nil).wantOk(http.StatusOK, "cancelled")
	})
	_, fired := e.workflowWithDelay()
	e.clock.Set(t0.Add(2 * time.Hour)) // a sweep runs at the server's time
	e.do("POST", "/v1/worker/sweep", map[string]any{"at": t0.Add(2 * time.Hour)}).want(http.StatusOK)
	e.clock.Set(t0)
	other, _ := core.NewExecutionId(3, nil)
	unknown := core.NewDelayId(other, mustJS("o:1"), 1)
	e.rejectAll(t, []badReq{
		{name: "CancelFiredIs409", method: "PUT", path: "/v1/delays/" + fired.String() + "/cancel", status: 409, msg: "already finished"},
		{name: "PauseCancelledIs404", method: "PUT", path: d + "/pause", status: 404, msg: "not found"},
		{name: "UnpauseCancelledIs404", method: "PUT", path: d + "/unpause", status: 404, msg: "not found"},
		{name: "CancelUnknownIs404", method: "PUT", path: "/v1/delays/" + unknown.String() + "/cancel", status: 404, msg: "not found"},
		{name: "BadIDIs400", method: "PUT", path: "/v1/delays/E_01KJ3ZC4Q5W8X7V6T5R4Q3P2N1.o:1_1/cancel", status: 400, msg: `invalid delay id "E_01KJ3ZC4Q5W8X7V6T5R4Q3P2N1.o:1_1": wrong prefix`},
	})
}

func testEngineRoutes(t *testing.T, e *env) {
	id := e.submit(ffqnWorkflow, core.ComponentTypeWorkflow, "[]")
	for _, r := range []struct{ method, path string }{
		{"PUT", "/v1/executions/" + id.String() + "/replay"},
		{"PUT", "/v1/executions/" + id.String() + "/advance"},
		{"PUT", "/v1/executions/" + id.String() + "/backtrace/persist"},
		{"GET", "/v1/functions"},
		{"GET", "/v1/functions/wit"},
		{"PUT", "/v1/deployments/Dep_01KJ3ZC4Q5W8X7V6T5R4Q3P2N1/switch"},
	} {
		t.Run(r.method+r.path, func(t *testing.T) {
			res := e.do(r.method, r.path, nil)
			if r.path == "/v1/functions/wit" { // text-only route: the error is text too
				if res.Code != http.StatusNotImplemented || res.text() != "not implemented: this route needs the Obelisk engine" {
					t.Fatalf("status %d body %q", res.Code, res.text())
				}
				return
			}
			res.wantErr(http.StatusNotImplemented, "not implemented: this route needs the Obelisk engine")
		})
	}
}

// testDeploymentsBare checks that deployment routes answer sensibly on the
// store as it is: 200/404, or 501 where the backend has no deployments yet.
func testDeploymentsBare(t *testing.T, e *env) {
	for _, p := range []string{"/v1/deployments", "/v1/deployment-id", "/v1/deployments/Dep_01KJ3ZC4Q5W8X7V6T5R4Q3P2N1",
		"/v1/components", "/v1/components/" + testDigest.String() + "/wit"} {
		t.Run(p, func(t *testing.T) {
			r := e.do("GET", p, nil, "Accept", "application/json")
			switch r.Code {
			case http.StatusOK, http.StatusNotFound:
			case http.StatusNotImplemented:
				if p != "/v1/components/"+testDigest.String()+"/wit" {
					r.wantErr(http.StatusNotImplemented, "not implemented")
				}
			default:
				t.Fatalf("status %d body %s", r.Code, r.text())
			}
		})
	}
	t.Run("SubmitFallsBackToUnmanagedMode", func(t *testing.T) {
		e.do("POST", "/v1/executions", `{"ffqn":"testing:integration/activity.add","params":[]}`).want(http.StatusCreated)
	})
}

func testDeployments(t *testing.T, newDB func(t *testing.T) core.DbExternalApi) {
	fd := newFakeDeployments(newDB(t))
	e := newEnv(t, fd)
	dep := fd.addDeployment(t)
	t.Run("CurrentDeploymentIDIsText", func(t *testing.T) {
		r := e.do("GET", "/v1/deployment-id", nil).want(http.StatusOK)
		if r.text() != dep.String() {
			t.Fatalf("text %q", r.text())
		}
		var s string
		e.do("GET", "/v1/deployment-id", nil, "Accept", "application/json").want(http.StatusOK).decode(&s)
		if s != dep.String() {
			t.Fatalf("json %q", s)
		}
	})
	t.Run("ListsDeploymentsWithSummary", func(t *testing.T) {
		var list []map[string]any
		e.do("GET", "/v1/deployments?include_component_summary=true", nil).want(http.StatusOK).decode(&list)
		if len(list) != 1 || list[0]["deployment_id"] != dep.String() || list[0]["pending"] != float64(2) ||
			compactJSON(list[0]["component_summary"]) != `{"components":[{"component_type":"activity","count":1},{"component_type":"activity_stub","count":1}]}` {
			t.Fatalf("list %v", list)
		}
		e.do("GET", "/v1/deployments", nil).want(http.StatusOK).decode(&list)
		if list[0]["component_summary"] != nil {
			t.Fatalf("summary without asking: %v", list[0])
		}
		r := e.do("GET", "/v1/deployments", nil, "Accept", "text/plain").want(http.StatusOK)
		if !strings.HasPrefix(r.text(), dep.String()+" locked=0 pending=2 ") {
			t.Fatalf("text %q", r.text())
		}
	})
	t.Run("GetsADeployment", func(t *testing.T) {
		var d map[string]any
		e.do("GET", "/v1/deployments/"+dep.String()+"?include_generated_metadata=false", nil).want(http.StatusOK).decode(&d)
		if d["deployment_toml"] != "[[activity]]\n" || d["status"] != "active" || compactJSON(d["files"]) == "null" {
			t.Fatalf("deployment %v", d)
		}
	})
	t.Run("ListsComponents", func(t *testing.T) {
		var cs []map[string]any
		e.do("GET", "/v1/components", nil).want(http.StatusOK).decode(&cs)
		if len(cs) != 2 || cs[0]["exports"] != nil {
			t.Fatalf("components %v", cs)
		}
		e.do("GET", "/v1/components?exports=true&type=activity", nil).want(http.StatusOK).decode(&cs)
		if len(cs) != 1 || compactJSON(cs[0]["exports"]) != `[{"ffqn":"testing:integration/activity.add","parameter_types":[{"name":"a","wit_type":"u64"}],"return_type":"result<u64>","submittable":true}]` {
			t.Fatalf("components %v", cs)
		}
		e.do("GET", "/v1/components?exports=true&extensions=true&ffqn=testing:integration/activity.add", nil).want(http.StatusOK).decode(&cs)
		if len(cs) != 1 || len(cs[0]["exports"].([]any)) != 3 {
			t.Fatalf("components %v", cs)
		}
		e.do("GET", "/v1/components?deployment_id="+dep.String()+"&name=nope", nil).want(http.StatusOK).decode(&cs)
		if len(cs) != 0 {
			t.Fatalf("components %v", cs)
		}
	})
	t.Run("GetsWIT", func(t *testing.T) {
		r := e.do("GET", "/v1/components/"+testDigest.String()+"/wit", nil).want(http.StatusOK)
		if r.text() != "package testing:integration;" || r.Header().Get("Content-Type") != contentTypeText {
			t.Fatalf("wit %q", r.text())
		}
	})
	t.Run("SubmitResolvesTheComponent", func(t *testing.T) {
		id := e.do("POST", "/v1/executions", `{"ffqn":"testing:integration/activity.add","params":[1]}`).want(http.StatusCreated).okValue()
		eid, _ := core.ParseExecutionId(id)
		st, _ := fd.GetPendingState(context.Background(), eid)
		if st.ComponentDigest != testDigest || st.DeploymentID != dep || st.ComponentType != core.ComponentTypeActivity {
			t.Fatalf("state %+v", st)
		}
	})
	t.Run("SubmitScheduleExtension", func(t *testing.T) {
		body := `{"ffqn":"testing:integration-obelisk-schedule/activity.add-schedule","params":[{"in":{"seconds":60}},1]}`
		id := e.do("POST", "/v1/executions", body).want(http.StatusCreated).okValue()
		eid, _ := core.ParseExecutionId(id)
		cr, _ := fd.GetCreateRequest(context.Background(), eid)
		if cr.FFQN != ffqnActivity || !cr.ScheduledAt.Equal(t0.Add(time.Minute)) || len(cr.Params) != 1 {
			t.Fatalf("create request %+v", cr)
		}
	})
	e.rejectAll(t, []badReq{
		{name: "UnknownFFQNIs404", method: "POST", path: "/v1/executions", body: `{"ffqn":"testing:integration/activity.nope","params":[]}`, status: 404, msg: msgFFQNNotFound},
		{name: "NotSubmittableIs404", method: "POST", path: "/v1/executions", body: `{"ffqn":"testing:integration/activity.internal","params":[]}`, status: 404, msg: msgFFQNNotFound},
		{name: "BadScheduleAtIs400", method: "POST", path: "/v1/executions", body: `{"ffqn":"testing:integration-obelisk-schedule/activity.add-schedule","params":[{"in":{"weeks":1}}]}`,
			status: 400, msg: "argument `params` invalid - invalid schedule-at duration"},
		{name: "UnknownDeploymentIs404", method: "GET", path: "/v1/deployments/Dep_01KJ3ZC4Q5W8X7V6T5R4Q3P2N1", status: 404, msg: "deployment not found"},
		{name: "BadDeploymentIDIs400", method: "GET", path: "/v1/deployments/Dep_x", status: 400, msg: `invalid deployment id "Dep_x": cannot parse ulid`},
		{name: "BadComponentTypeIs400", method: "GET", path: "/v1/components?type=lambda", status: 400, msg: "invalid query parameter `type`…"},
		{name: "BadFFQNIs400", method: "GET", path: "/v1/components?ffqn=x", status: 400, msg: "invalid query parameter `ffqn`: invalid function name"},
		{name: "BadCursorFromIs400", method: "GET", path: "/v1/deployments?cursor_from=x", status: 400, msg: "invalid query parameter `cursor_from`: expected Dep_<ULID>"},
	})
	t.Run("WITErrorsAreText", func(t *testing.T) {
		r := e.do("GET", "/v1/components/"+core.ComponentDigest{}.String()+"/wit", nil).want(http.StatusNotFound)
		if r.text() != "component not found" {
			t.Fatalf("text %q", r.text())
		}
	})
}

func testFiles(t *testing.T, newDB func(t *testing.T) core.DbExternalApi) {
	e := newEnv(t, newDB(t))
	d, _ := e.cas.WriteBlob(context.Background(), []byte{0, 1, 2})
	t.Run("ReturnsTheBytes", func(t *testing.T) {
		r := e.do("GET", "/v1/files/"+d.String(), nil).want(http.StatusOK)
		if r.Body.String() != "\x00\x01\x02" || r.Header().Get("Content-Type") != contentTypeBytes {
			t.Fatalf("body %q type %q", r.Body.String(), r.Header().Get("Content-Type"))
		}
	})
	t.Run("MissingIs404", func(t *testing.T) {
		e.do("GET", "/v1/files/"+core.ContentDigestOf([]byte("x")).String(), nil).wantErr(http.StatusNotFound, "file not found")
	})
	t.Run("BadDigestIs400", func(t *testing.T) {
		e.do("GET", "/v1/files/sha256:zz", nil).wantErr(http.StatusBadRequest, `invalid digest "sha256:zz": invalid digest length`)
	})
	t.Run("NoCASIs501", func(t *testing.T) {
		h := New(e.db, nil, Options{Authorizer: AllowAll()})
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/files/"+d.String(), nil))
		if rec.Code != http.StatusNotImplemented {
			t.Fatalf("status %d", rec.Code)
		}
	})
}

func testWorkerLock(t *testing.T, fresh func(*testing.T, ...envOption) *env) {
	e := fresh(t)
	a := e.submit(ffqnActivity, core.ComponentTypeActivity, "[1]")
	b := e.submit(ffqnActivity, core.ComponentTypeActivity, "[2]")
	pending := func(extra map[string]any) map[string]any {
		m := lockParams(core.ComponentTypeActivity, t0.Add(time.Minute))
		m["batch_size"], m["ffqns"] = 1, []core.FunctionFqn{ffqnActivity}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	t.Run("LocksOneAtATime", func(t *testing.T) {
		seen := map[core.ExecutionId]bool{}
		for range 2 {
			var locked []wire.LockedExecutionJSON
			e.do("POST", "/v1/worker/lock/pending-by-ffqns", pending(nil)).want(http.StatusOK).decode(&locked)
			if len(locked) != 1 {
				t.Fatalf("locked %d", len(locked))
			}
			l := locked[0]
			if l.NextVersion != 2 || l.FFQN != ffqnActivity || len(l.Params) != 1 || l.LockedEvent.ExecutorID != testExecutor ||
				l.EventHistory == nil || l.Responses == nil || l.Parent != nil {
				t.Fatalf("locked %+v", l)
			}
			seen[l.ExecutionID] = true
		}
		if !seen[a] || !seen[b] {
			t.Fatalf("locked %v", seen)
		}
		var locked []wire.LockedExecutionJSON
		e.do("POST", "/v1/worker/lock/pending-by-ffqns", pending(nil)).want(http.StatusOK).decode(&locked)
		if locked == nil || len(locked) != 0 {
			t.Fatalf("locked %+v, want []", locked)
		}
	})
	t.Run("WaitReturnsEmptyWhenNothingBecomesPending", func(t *testing.T) {
		e2 := fresh(t, func(o *Options) { o.FollowWait = 20 * time.Millisecond })
		var locked []wire.LockedExecutionJSON
		e2.do("POST", "/v1/worker/lock/pending-by-ffqns", pending(map[string]any{"wait_ms": 60000})).want(http.StatusOK).decode(&locked)
		if len(locked) != 0 {
			t.Fatalf("locked %+v", locked)
		}
	})
	t.Run("WaitPicksUpAConcurrentSubmit", func(t *testing.T) {
		e2 := fresh(t)
		done := make(chan []wire.LockedExecutionJSON)
		go func() {
			body, _ := core.MarshalJSON(pending(map[string]any{"wait_ms": 5000, "pending_at_or_sooner": t0.Add(time.Hour)}))
			req := httptest.NewRequest("POST", "/v1/worker/lock/pending-by-ffqns", strings.NewReader(string(body)))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			e2.h.ServeHTTP(rec, req)
			var out []wire.LockedExecutionJSON
			_ = json.Unmarshal(rec.Body.Bytes(), &out)
			done <- out
		}()
		id := e2.submit(ffqnActivity, core.ComponentTypeActivity, "[]")
		locked := <-done
		if len(locked) == 0 {
			// The lock ran before the submit and the wait ended; the execution is still pending.
			var again []wire.LockedExecutionJSON
			e2.do("POST", "/v1/worker/lock/pending-by-ffqns", pending(nil)).want(http.StatusOK).decode(&again)
			locked = again
		}
		if len(locked) != 1 || locked[0].ExecutionID != id {
			t.Fatalf("locked %+v", locked)
		}
	})
	t.Run("AutoLocksWorkflows", func(t *testing.T) {
		e2 := fresh(t)
		id := e2.submit(ffqnWorkflow, core.ComponentTypeWorkflow, "[]")
		m := lockParams(core.ComponentTypeWorkflow, t0.Add(time.Minute))
		m["batch_size"], m["ffqns"] = 5, []core.FunctionFqn{ffqnWorkflow}
		var locked []wire.LockedExecutionJSON
		e2.do("POST", "/v1/worker/lock/pending-by-ffqns-auto", m).want(http.StatusOK).decode(&locked)
		if len(locked) != 1 || locked[0].ExecutionID != id {
			t.Fatalf("locked %+v", locked)
		}
	})
	t.Run("ByComponentDigest", func(t *testing.T) {
		e2 := fresh(t)
		id := e2.submit(ffqnActivity, core.ComponentTypeActivity, "[]")
		m := lockParams(core.ComponentTypeActivity, t0.Add(time.Minute))
		m["batch_size"] = 5
		var locked []wire.LockedExecutionJSON
		other := lockParams(core.ComponentTypeActivity, t0.Add(time.Minute))
		other["batch_size"], other["component_id"] = 5, core.ComponentId{ComponentType: core.ComponentTypeActivity, ComponentDigest: testDigest}
		e2.do("POST", "/v1/worker/lock/pending-by-component-digest", other).want(http.StatusOK).decode(&locked)
		if len(locked) != 0 {
			t.Fatalf("locked by another digest: %+v", locked)
		}
		e2.do("POST", "/v1/worker/lock/pending-by-component-digest", m).want(http.StatusOK).decode(&locked)
		if len(locked) != 1 || locked[0].ExecutionID != id {
			t.Fatalf("locked %+v", locked)
		}
	})
	t.Run("LockOneLocksAtAVersion", func(t *testing.T) {
		e2 := fresh(t)
		id := e2.submit(ffqnActivity, core.ComponentTypeActivity, "[]")
		l := e2.lock(id, core.ComponentTypeActivity)
		if l.ExecutionID != id || l.NextVersion != 2 {
			t.Fatalf("locked %+v", l)
		}
	})
	e3 := fresh(t)
	c := e3.submit(ffqnActivity, core.ComponentTypeActivity, "[]")
	one := func(extra map[string]any, drop ...string) map[string]any {
		m := lockParams(core.ComponentTypeActivity, t0.Add(time.Minute))
		m["execution_id"], m["version"] = c, 1
		for k, v := range extra {
			m[k] = v
		}
		for _, k := range drop {
			delete(m, k)
		}
		return m
	}
	unknown, _ := core.NewExecutionId(11, nil)
	e3.rejectAll(t, []badReq{
		{name: "BatchSizeZero", method: "POST", path: "/v1/worker/lock/pending-by-ffqns", body: pending(map[string]any{"batch_size": 0}), status: 400, msg: "`batch_size` must be between 1 and 25"},
		{name: "BatchSizeTooBig", method: "POST", path: "/v1/worker/lock/pending-by-ffqns", body: pending(map[string]any{"batch_size": 26}), status: 400, msg: "`batch_size` must be between 1 and 25"},
		{name: "NoFFQNs", method: "POST", path: "/v1/worker/lock/pending-by-ffqns", body: pending(map[string]any{"ffqns": []string{}}), status: 400, msg: "`ffqns` must have between 1 and 90 entries, got 0"},
		{name: "FFQNsOnDigestRoute", method: "POST", path: "/v1/worker/lock/pending-by-component-digest", body: pending(nil), status: 422, msg: "invalid request body: unknown field `ffqns`"},
		{name: "UnknownField", method: "POST", path: "/v1/worker/lock/pending-by-ffqns", body: pending(map[string]any{"state": "locked"}), status: 422, msg: "invalid request body: unknown field `state`"},
		{name: "MissingExecutor", method: "POST", path: "/v1/worker/lock/one", body: one(nil, "executor_id"), status: 422, msg: "invalid request body: missing field `executor_id`"},
		{name: "MissingBatchSize", method: "POST", path: "/v1/worker/lock/pending-by-ffqns", body: func() map[string]any { m := pending(nil); delete(m, "batch_size"); return m }(),
			status: 422, msg: "invalid request body: missing field `batch_size`"},
		{name: "MissingBackoff", method: "POST", path: "/v1/worker/lock/one", body: one(map[string]any{"retry_config": json.RawMessage(`{"max_retries":1}`)}), status: 422,
			msg: "invalid request body: …"},
		{name: "ExpiryNotAfterCreation", method: "POST", path: "/v1/worker/lock/one", body: one(map[string]any{"lock_expires_at": t0}), status: 400, msg: "invalid expiry date"},
		// The lock-pending routes answer an expiry that is not after created_at
		// (by default the server's now) like lock/one, even with c pending.
		{name: "ExpiryNotAfterCreationByFFQNs", method: "POST", path: "/v1/worker/lock/pending-by-ffqns", body: pending(map[string]any{"lock_expires_at": t0}), status: 400, msg: "invalid expiry date"},
		{name: "ExpiryBeforeCreationByFFQNsAuto", method: "POST", path: "/v1/worker/lock/pending-by-ffqns-auto", body: pending(map[string]any{"lock_expires_at": t0.Add(-time.Second)}), status: 400, msg: "invalid expiry date"},
		{name: "ExpiryNotAfterCreationByDigest", method: "POST", path: "/v1/worker/lock/pending-by-component-digest", body: func() map[string]any {
			m := pending(map[string]any{"lock_expires_at": t0})
			delete(m, "ffqns")
			return m
		}(), status: 400, msg: "invalid expiry date"},
		{name: "ExpiryBeforeServerNowWithWait", method: "POST", path: "/v1/worker/lock/pending-by-ffqns", body: func() map[string]any {
			m := pending(map[string]any{"lock_expires_at": t0.Add(-time.Hour), "wait_ms": 1000})
			delete(m, "created_at")
			return m
		}(), status: 400, msg: "invalid expiry date"},
		{name: "DuplicateKeyIs400", method: "POST", path: "/v1/worker/lock/pending-by-ffqns", body: `{"batch_size":1,"batch_size":2}`, status: 400, msg: "invalid JSON: duplicate key `batch_size`"},
		{name: "StaleVersion", method: "POST", path: "/v1/worker/lock/one", body: one(map[string]any{"version": 5}), status: 409, msg: "version conflict…"},
		{name: "UnknownExecution", method: "POST", path: "/v1/worker/lock/one", body: one(map[string]any{"execution_id": unknown}), status: 404, msg: "not found"},
		{name: "NotJSON", method: "POST", path: "/v1/worker/lock/one", body: []byte(`{}`), status: 415, msg: "expected request with `Content-Type: application/json`"},
		{name: "GetIs405", method: "GET", path: "/v1/worker/lock/one", status: 405, msg: "method not allowed"},
	})
}

func testWorkerAppend(t *testing.T, e *env) {
	id := e.submit(ffqnActivity, core.ComponentTypeActivity, "[]")
	e.lock(id, core.ComponentTypeActivity)
	t.Run("AppendFinishes", func(t *testing.T) {
		body := map[string]any{"execution_id": id, "version": 2, "req": core.AppendRequest{CreatedAt: t0, Event: &core.Finished{Retval: okString("done")}}}
		var nv wire.NextVersionJSON
		e.do("POST", "/v1/worker/append", body).want(http.StatusOK).decode(&nv)
		if nv.NextVersion != 2 {
			t.Fatalf("next %d", nv.NextVersion)
		}
		e.do("GET", "/v1/executions/"+id.String(), nil).want(http.StatusOK)
	})
	t.Run("RespondToParentDeliversTheResult", func(t *testing.T) {
		parent, child := e.workflowWithChild(core.ComponentTypeActivity)
		e.lock(child, core.ComponentTypeActivity)
		js := mustJS("g:1")
		body := map[string]any{
			"events":   core.AppendEventsToExecution{ExecutionID: child, Version: 2, Batch: []core.AppendRequest{{CreatedAt: t0, Event: &core.Finished{Retval: okString("c")}}}},
			"response": core.AppendResponseToExecution{ParentExecutionID: parent, CreatedAt: t0, JoinSetID: js, ChildExecutionID: core.ExecutionIdDerived{ExecutionId: child}, FinishedVersion: 2, Result: okString("c")},
		}
		e.do("POST", "/v1/worker/append-batch/respond-to-parent", body).want(http.StatusOK)
		var page core.ListResponsesResponse
		e.do("GET", "/v1/executions/"+parent.String()+"/responses", nil).want(http.StatusOK).decode(&page)
		if len(page.Responses) != 1 {
			t.Fatalf("responses %+v", page)
		}
	})
	t.Run("DelayResponseIsAtomicWithTheBatch", func(t *testing.T) {
		wf := e.submit(ffqnWorkflow, core.ComponentTypeWorkflow, "[]")
		e.lock(wf, core.ComponentTypeWorkflow)
		js := mustJS("o:2")
		delay := core.NewDelayId(wf, js, 1)
		body := map[string]any{"execution_id": wf, "version": 2, "join_set_id": js, "delay_id": delay, "batch": []core.AppendRequest{
			{CreatedAt: t0, Event: hist(&core.JoinSetCreate{JoinSetID: js})},
			{CreatedAt: t0, Event: hist(&core.JoinSetRequestEvent{JoinSetID: js, Request: &core.DelayRequest{DelayID: delay, ExpiresAt: t0, ScheduleAt: core.ScheduleAt{Kind: "now"}}})},
		}}
		var nv wire.NextVersionJSON
		e.do("POST", "/v1/worker/append-batch/delay-response", body).want(http.StatusOK).decode(&nv)
		if nv.NextVersion != 4 {
			t.Fatalf("next %d", nv.NextVersion)
		}
		var page core.ListResponsesResponse
		e.do("GET", "/v1/executions/"+wf.String()+"/responses", nil).want(http.StatusOK).decode(&page)
		if len(page.Responses) != 1 {
			t.Fatalf("responses %+v", page)
		}
	})
	t.Run("FireAppendFiresTheDelayWithTheBatch", func(t *testing.T) {
		// A workflow blocked on a sleep due at the store's time (t0), as a
		// run that awaited it in memory leaves it, then writes what follows.
		wf := e.submit(ffqnWorkflow, core.ComponentTypeWorkflow, "[]")
		e.lock(wf, core.ComponentTypeWorkflow)
		js := mustJS("o:3")
		delay := core.NewDelayId(wf, js, 1)
		e.appendBatch(wf, 2,
			hist(&core.JoinSetCreate{JoinSetID: js}),
			hist(&core.JoinSetRequestEvent{JoinSetID: js, Request: &core.DelayRequest{DelayID: delay, ExpiresAt: t0, ScheduleAt: core.ScheduleAt{Kind: "now"}}}),
			hist(&core.JoinNext{JoinSetID: js, RunExpiresAt: t0.Add(time.Minute)}),
		)
		persist := core.AppendRequest{CreatedAt: t0, Event: hist(&core.Persist{Value: core.Bytes{1}, Kind: core.PersistKind{Type: "execution_id"}})}
		body := func(v core.Version) map[string]any {
			return map[string]any{"execution_id": wf, "version": v, "delay_id": delay, "batch": []core.AppendRequest{persist}}
		}
		var fired map[string]json.RawMessage
		e.do("POST", wire.PathWorkerFireAppend, body(5)).want(http.StatusOK).decode(&fired)
		if len(fired) != 4 || string(fired["outcome"]) != `"fired"` || string(fired["next_version"]) != "6" ||
			string(fired["fired_at"]) != `"`+t0.String()+`"` || string(fired["response_cursor"]) != "1" {
			t.Fatalf("fired: %v", fired)
		}
		var page core.ListResponsesResponse
		e.do("GET", "/v1/executions/"+wf.String()+"/responses", nil).want(http.StatusOK).decode(&page)
		if len(page.Responses) != 1 || page.Responses[0].Cursor != 1 || !page.Responses[0].Event.CreatedAt.Equal(t0) {
			t.Fatalf("responses %+v", page)
		}
		if d, ok := page.Responses[0].Event.Event.Event.(*core.DelayFinished); !ok || d.DelayID != delay || !bool(d.Result) {
			t.Fatalf("response %+v, want DelayFinished(Ok) of %s", page.Responses[0].Event.Event.Event, delay)
		}
		var ev core.ListExecutionEventsResponse
		e.do("GET", "/v1/executions/"+wf.String()+"/events?version=5&including_cursor=true", nil).want(http.StatusOK).decode(&ev)
		if len(ev.Events) != 1 || ev.Events[0].Version != 5 {
			t.Fatalf("events from version 5: %+v", ev.Events)
		}
		// Fired already (the same delay, the next write): the batch alone.
		var answered map[string]json.RawMessage
		e.do("POST", wire.PathWorkerFireAppend, body(6)).want(http.StatusOK).decode(&answered)
		if len(answered) != 2 || string(answered["outcome"]) != `"answered"` || string(answered["next_version"]) != "7" {
			t.Fatalf("answered: %v", answered)
		}
	})
	t.Run("FireAppendWritesNothingWhenTheDelayDidNotFire", func(t *testing.T) {
		wf, delay := e.workflowWithDelay() // expires at t0+1h, the store's time is t0
		persist := core.AppendRequest{CreatedAt: t0, Event: hist(&core.Persist{Value: core.Bytes{2}, Kind: core.PersistKind{Type: "execution_id"}})}
		body := map[string]any{"execution_id": wf, "version": 5, "delay_id": delay, "batch": []core.AppendRequest{persist}}
		for _, c := range []struct{ name, want string }{{"NotDue", "not_due"}, {"Cancelled", "cancelled"}} {
			if c.want == "cancelled" {
				e.do("PUT", "/v1/delays/"+delay.String()+"/cancel", nil).want(http.StatusOK)
			}
			before := e.snapshot()
			var ans map[string]json.RawMessage
			e.do("POST", wire.PathWorkerFireAppend, body).want(http.StatusOK).decode(&ans)
			if len(ans) != 1 || string(ans["outcome"]) != `"`+c.want+`"` {
				t.Fatalf("%s: %v, want only outcome %q", c.name, ans, c.want)
			}
			if after := e.snapshot(); after != before {
				t.Fatalf("%s: the store changed:\nbefore %s\nafter  %s", c.name, before, after)
			}
		}
	})
	t.Run("StubResponseIsIdempotent", func(t *testing.T) {
		parent, child := e.workflowWithChild(core.ComponentTypeActivityStub)
		body := func(rv core.ReturnValue) map[string]any {
			return map[string]any{"execution_id": child, "version": 1, "req": core.AppendRequest{CreatedAt: t0, Event: &core.Finished{Retval: rv}},
				"response": core.AppendResponseToExecution{ParentExecutionID: parent, CreatedAt: t0, JoinSetID: mustJS("g:1"),
					ChildExecutionID: core.ExecutionIdDerived{ExecutionId: child}, FinishedVersion: 1, Result: rv}}
		}
		e.do("POST", "/v1/worker/stub-response", body(okString("a"))).want(http.StatusNoContent)
		e.do("POST", "/v1/worker/stub-response", body(okString("a"))).want(http.StatusNoContent)
		e.rejectAll(t, []badReq{{name: "DifferentValueIs409", method: "POST", path: "/v1/worker/stub-response", body: body(okString("b")), status: 409, msg: "conflict"}})
	})
	wf := e.submit(ffqnWorkflow, core.ComponentTypeWorkflow, "[]")
	e.lock(wf, core.ComponentTypeWorkflow)
	pendingOne := e.submit(ffqnActivity, core.ComponentTypeActivity, "[]")
	ev := func(r core.ExecutionRequest) core.AppendRequest { return core.AppendRequest{CreatedAt: t0, Event: r} }
	many := make([]core.AppendRequest, wire.MaxAppendBatch+1)
	for i := range many {
		many[i] = ev(hist(&core.Persist{Value: core.Bytes{1}, Kind: core.PersistKind{Type: "execution_id"}}))
	}
	unknown, _ := core.NewExecutionId(12, nil)
	parentJS := mustJS("g:1")
	// due is blocked on a delay due at the store's time: a refused
	// fire-append leaves it unfired (rejectAll's snapshot has the timers).
	due := e.submit(ffqnWorkflow, core.ComponentTypeWorkflow, "[]")
	e.lock(due, core.ComponentTypeWorkflow)
	dueJS := mustJS("o:4")
	dueDelay := core.NewDelayId(due, dueJS, 1)
	e.appendBatch(due, 2,
		hist(&core.JoinSetCreate{JoinSetID: dueJS}),
		hist(&core.JoinSetRequestEvent{JoinSetID: dueJS, Request: &core.DelayRequest{DelayID: dueDelay, ExpiresAt: t0, ScheduleAt: core.ScheduleAt{Kind: "now"}}}),
		hist(&core.JoinNext{JoinSetID: dueJS, RunExpiresAt: t0.Add(time.Minute)}),
	)
	fireAppend := func(id core.ExecutionId, v core.Version, delay core.DelayId, batch []core.AppendRequest) map[string]any {
		return map[string]any{"execution_id": id, "version": v, "delay_id": delay, "batch": batch}
	}
	e.rejectAll(t, []badReq{
		{name: "StaleVersionIs409", method: "POST", path: "/v1/worker/append", body: map[string]any{"execution_id": wf, "version": 1, "req": ev(&core.Unlocked{UnlockedAt: t0, Reason: "x"})},
			status: 409, msg: "version conflict: expected: 2, got: 1"},
		{name: "UnknownIs404", method: "POST", path: "/v1/worker/append", body: map[string]any{"execution_id": unknown, "version": 1, "req": ev(&core.Paused{})}, status: 404, msg: "not found"},
		{name: "FinishedIs409", method: "POST", path: "/v1/worker/append", body: map[string]any{"execution_id": id, "version": 2, "req": ev(&core.Paused{})}, status: 409, msg: "already finished"},
		{name: "UnlockPendingIs409", method: "POST", path: "/v1/worker/append", body: map[string]any{"execution_id": pendingOne, "version": 1, "req": ev(&core.Unlocked{UnlockedAt: t0, Reason: "x"})},
			status: 409, msg: "illegal state: `Unlocked` cannot be appended…"},
		{name: "UnknownVariantIs422", method: "POST", path: "/v1/worker/append", body: `{"execution_id":"` + wf.String() + `","version":2,"req":{"created_at":"2026-01-01T00:00:00Z","event":{"exploded":{}}}}`,
			status: 422, msg: "invalid request body: …"},
		{name: "MissingReqIs422", method: "POST", path: "/v1/worker/append", body: map[string]any{"execution_id": wf, "version": 2}, status: 422, msg: "invalid request body: missing field `req`"},
		{name: "DuplicateKeyInTheEventIs400", method: "POST", path: "/v1/worker/append",
			body:   `{"execution_id":"` + wf.String() + `","version":2,"req":{"created_at":"2026-01-01T00:00:00Z","event":{"finished":{"retval":{"ok":{"type":"string","value":"a","value":"b"}},"http_client_traces":null}}}}`,
			status: 400, msg: "invalid JSON: duplicate key `value` at `req.event.finished.retval.ok`"},
		{name: "LoneSurrogateInARetvalIs400", method: "POST", path: "/v1/worker/append",
			body:   `{"execution_id":"` + wf.String() + `","version":2,"req":{"created_at":"2026-01-01T00:00:00Z","event":{"finished":{"retval":{"ok":{"type":"string","value":"\udfff"}},"http_client_traces":null}}}}`,
			status: 400, msg: "invalid JSON: lone surrogate `\\udfff` in a string at `req.event.finished.retval.ok.value`"},
		{name: "InvalidUTF8InARetvalIs400", method: "POST", path: "/v1/worker/append",
			body:   `{"execution_id":"` + wf.String() + `","version":2,"req":{"created_at":"2026-01-01T00:00:00Z","event":{"finished":{"retval":{"ok":{"type":"string","value":"` + "\xfe" + `"}},"http_client_traces":null}}}}`,
			status: 400, msg: "invalid JSON: not valid UTF-8…"},
		{name: "EmptyBatchIs400", method: "POST", path: "/v1/worker/append-batch", body: map[string]any{"execution_id": wf, "version": 2, "batch": []core.AppendRequest{}},
			status: 400, msg: "`batch` must have between 1 and 90 entries, got 0"},
		{name: "HugeBatchIs400", method: "POST", path: "/v1/worker/append-batch", body: map[string]any{"execution_id": wf, "version": 2, "batch": many},
			status: 400, msg: "`batch` must have between 1 and 90 entries, got 91"},
		{name: "ChildrenMissingIs422", method: "POST", path: "/v1/worker/append-batch/create-children", body: map[string]any{"execution_id": wf, "version": 2, "batch": many[:1]},
			status: 422, msg: "invalid request body: missing field `children`"},
		{name: "ChildMissingMetadataIs422", method: "POST", path: "/v1/worker/append-batch/create-children",
			body:   `{"execution_id":"` + wf.String() + `","version":2,"batch":[],"children":[{"created_at":"2026-01-01T00:00:00Z"}]}`,
			status: 422, msg: "invalid request body: missing field `execution_id` at `children[0]`"},
		{name: "RespondToSelfIs400", method: "POST", path: "/v1/worker/append-batch/respond-to-parent", body: map[string]any{
			"events":   core.AppendEventsToExecution{ExecutionID: wf, Version: 2, Batch: many[:1]},
			"response": core.AppendResponseToExecution{ParentExecutionID: wf, CreatedAt: t0, JoinSetID: parentJS, ChildExecutionID: core.ExecutionIdDerived{ExecutionId: wf.NextLevel(parentJS)}, FinishedVersion: 2, Result: okString("x")}},
			status: 400, msg: "Parameters `execution_id` and `parent_execution_id` cannot be the same"},
		{name: "RespondMissingResultIs422", method: "POST", path: "/v1/worker/append-batch/respond-to-parent",
			body:   `{"events":{"execution_id":"` + wf.String() + `","version":2,"batch":[]},"response":{"parent_execution_id":"` + wf.String() + `"}}`,
			status: 422, msg: "invalid request body: missing field `created_at` at `response`"},
		{name: "StubTopLevelIs422", method: "POST", path: "/v1/worker/stub-response", body: `{"execution_id":"` + wf.String() + `"}`, status: 422, msg: "invalid request body: …"},
		{name: "DelayResponseMissingDelayIs422", method: "POST", path: "/v1/worker/append-batch/delay-response",
			body: map[string]any{"execution_id": wf, "version": 2, "batch": many[:1], "join_set_id": parentJS}, status: 422, msg: "invalid request body: missing field `delay_id`"},
		{name: "FireAppendMissingDelayIs422", method: "POST", path: wire.PathWorkerFireAppend,
			body: map[string]any{"execution_id": due, "version": 5, "batch": many[:1]}, status: 422, msg: "invalid request body: missing field `delay_id`"},
		{name: "FireAppendJoinSetIDIs422", method: "POST", path: wire.PathWorkerFireAppend,
			body:   map[string]any{"execution_id": due, "version": 5, "batch": many[:1], "delay_id": dueDelay, "join_set_id": dueJS},
			status: 422, msg: "invalid request body: unknown field `join_set_id`"},
		{name: "FireAppendNotADelayIDIs422", method: "POST", path: wire.PathWorkerFireAppend,
			body: map[string]any{"execution_id": due, "version": 5, "batch": many[:1], "delay_id": due.String()}, status: 422,
			msg: `invalid request body: invalid delay id "` + due.String() + "\": first delimiter not found at `delay_id`"},
		{name: "FireAppendDelayOfAnotherExecutionIs400", method: "POST", path: wire.PathWorkerFireAppend, body: fireAppend(wf, 2, dueDelay, many[:1]),
			status: 400, msg: "delay_id: " + dueDelay.String() + " is not a delay of execution_id " + wf.String()},
		{name: "FireAppendUnknownExecutionIs404", method: "POST", path: wire.PathWorkerFireAppend, body: fireAppend(unknown, 2, core.NewDelayId(unknown, dueJS, 1), many[:1]),
			status: 404, msg: "execution or delay not found"},
		{name: "FireAppendUnknownDelayIs404", method: "POST", path: wire.PathWorkerFireAppend, body: fireAppend(due, 5, core.NewDelayId(due, dueJS, 9), many[:1]),
			status: 404, msg: "execution or delay not found"},
		{name: "FireAppendStaleVersionIs409AndDoesNotFire", method: "POST", path: wire.PathWorkerFireAppend, body: fireAppend(due, 2, dueDelay, many[:1]),
			status: 409, msg: "version conflict: expected: 5, got: 2"},
		{name: "FireAppendIllegalBatchIs422AndDoesNotFire", method: "POST", path: wire.PathWorkerFireAppend,
			body: fireAppend(due, 5, dueDelay, []core.AppendRequest{ev(&core.Unpaused{})}), status: 422, msg: "cannot unpause, execution is not paused"},
		{name: "FireAppendEmptyBatchIs400", method: "POST", path: wire.PathWorkerFireAppend, body: fireAppend(due, 5, dueDelay, []core.AppendRequest{}),
			status: 400, msg: "`batch` must have between 1 and 90 entries, got 0"},
		{name: "FireAppendHugeBatchIs400", method: "POST", path: wire.PathWorkerFireAppend, body: fireAppend(due, 5, dueDelay, many),
			status: 400, msg: "`batch` must have between 1 and 90 entries, got 91"},
		{name: "FireAppendNotJSONIs415", method: "POST", path: wire.PathWorkerFireAppend, body: []byte(`{}`), status: 415, msg: "expected request with `Content-Type: application/json`"},
	})
	t.Run("FireAppendAfterTheRefusedOnesFires", func(t *testing.T) {
		var ans wire.FireAppendAnswer
		e.do("POST", wire.PathWorkerFireAppend, fireAppend(due, 5, dueDelay, many[:1])).want(http.StatusOK).decode(&ans)
		if ans.Outcome != "fired" || ans.NextVersion == nil || *ans.NextVersion != 6 || ans.ResponseCursor == nil || *ans.ResponseCursor != 1 ||
			ans.FiredAt == nil || !ans.FiredAt.Equal(t0) {
			t.Fatalf("answer %+v", ans)
		}
	})
}

func testWorkerReads(t *testing.T, e *env) {
	parent, child := e.workflowWithChild(core.ComponentTypeActivityStub)
	t.Run("LogIsTheWholeExecution", func(t *testing.T) {
		var l wire.ExecutionLogJSON
		e.do("GET", "/v1/worker/executions/"+parent.String()+"/log", nil).want(http.StatusOK).decode(&l)
		if l.ExecutionID != parent || len(l.Events) != 4 || l.NextVersion != 4 || l.PendingState.Status() != "locked" ||
			l.ComponentType != core.ComponentTypeWorkflow || l.Responses == nil {
			t.Fatalf("log %+v", l)
		}
	})
	t.Run("NextResponsesWithoutWait", func(t *testing.T) {
		var r wire.ResponsesJSON
		e.do("GET", "/v1/worker/executions/"+parent.String()+"/next-responses", nil).want(http.StatusOK).decode(&r)
		if r.Responses == nil || len(r.Responses) != 0 {
			t.Fatalf("responses %+v", r)
		}
	})
	t.Run("NextResponsesWaitTimesOutEmpty", func(t *testing.T) {
		e2 := newEnv(t, e.db, func(o *Options) { o.FollowWait = 20 * time.Millisecond })
		var r wire.ResponsesJSON
		e2.do("GET", "/v1/worker/executions/"+parent.String()+"/next-responses?wait_ms=1000", nil).want(http.StatusOK).decode(&r)
		if len(r.Responses) != 0 {
			t.Fatalf("responses %+v", r)
		}
	})
	t.Run("NextResponsesAfterACursor", func(t *testing.T) {
		e.do("PUT", "/v1/executions/"+child.String()+"/stub", `{"ok":null}`).want(http.StatusOK)
		var r wire.ResponsesJSON
		e.do("GET", "/v1/worker/executions/"+parent.String()+"/next-responses?wait_ms=1000", nil).want(http.StatusOK).decode(&r)
		if len(r.Responses) != 1 || r.Responses[0].Cursor != 1 {
			t.Fatalf("responses %+v", r)
		}
		e.do("GET", "/v1/worker/executions/"+parent.String()+"/next-responses?last_response=1", nil).want(http.StatusOK).decode(&r)
		if len(r.Responses) != 0 {
			t.Fatalf("responses %+v", r)
		}
	})
	t.Run("NextResponsesWithAnExpiredWaitReturnsStoredResponses", func(t *testing.T) {
		// The wait is clamped to a follow bound that has already passed:
		// responses already stored still come back (docs/spec/semantics.md §4.3.13).
		e2 := newEnv(t, e.db, func(o *Options) { o.FollowWait = time.Nanosecond })
		var r wire.ResponsesJSON
		e2.do("GET", "/v1/worker/executions/"+parent.String()+"/next-responses?wait_ms=1000", nil).want(http.StatusOK).decode(&r)
		if len(r.Responses) != 1 || r.Responses[0].Cursor != 1 {
			t.Fatalf("responses %+v", r)
		}
	})
	unknown, _ := core.NewExecutionId(13, nil)
	e.rejectAll(t, []badReq{
		{name: "UnknownLogIs404", method: "GET", path: "/v1/worker/executions/" + unknown.String() + "/log", status: 404, msg: "not found"},
		{name: "BadIDIs400", method: "GET", path: "/v1/worker/executions/E_/log", status: 400, msg: `invalid execution id "E_": cannot parse ulid`},
		{name: "BadLastResponseIs400", method: "GET", path: "/v1/worker/executions/" + parent.String() + "/next-responses?last_response=-1", status: 400, msg: "invalid query parameter `last_response`…"},
		{name: "BadWaitIs400", method: "GET", path: "/v1/worker/executions/" + parent.String() + "/next-responses?wait_ms=soon", status: 400, msg: "invalid query parameter `wait_ms`…"},
	})
}

func testWorkerTimers(t *testing.T, newDB func(t *testing.T) core.DbExternalApi) {
	db := newDB(t)
	e := newEnv(t, db, func(o *Options) {
		o.Sweep = func(ctx context.Context, at core.Timestamp) (any, error) { return sweepOnce(ctx, db, at) }
	})
	locked := e.submit(ffqnActivity, core.ComponentTypeActivity, "[]")
	e.lock(locked, core.ComponentTypeActivity)
	_, delay := e.workflowWithDelay()
	t.Run("ExpiredTimersListsLocksAndDelays", func(t *testing.T) {
		var timers []wire.ExpiredTimerJSON
		e.do("GET", "/v1/worker/expired-timers?at="+t0.Add(2*time.Hour).String(), nil).want(http.StatusOK).decode(&timers)
		var sawLock, sawDelay bool
		for _, tm := range timers {
			sawLock = sawLock || (tm.Lock != nil && tm.Lock.ExecutionID == locked && tm.Lock.LockedAtVersion == 1 && tm.Lock.LockedBy.ExecutorID == testExecutor)
			sawDelay = sawDelay || (tm.Delay != nil && tm.Delay.DelayID == delay)
		}
		if !sawLock || !sawDelay {
			t.Fatalf("timers %+v", timers)
		}
		e.do("GET", "/v1/worker/expired-timers", nil).want(http.StatusOK).decode(&timers)
		if len(timers) != 0 {
			t.Fatalf("timers due at t0: %+v", timers)
		}
	})
	t.Run("SweepResolvesThem", func(t *testing.T) {
		var res map[string]int
		e.clock.Set(t0.Add(2 * time.Hour)) // a sweep runs at the server's time
		defer e.clock.Set(t0)
		e.do("POST", "/v1/worker/sweep", map[string]any{"at": t0.Add(2 * time.Hour)}).want(http.StatusOK).decode(&res)
		if res["expired_locks"] < 1 || res["expired_delays"] != 1 {
			t.Fatalf("sweep %v", res)
		}
		e.do("POST", "/v1/worker/sweep", nil).want(http.StatusOK)
		e.do("POST", "/v1/worker/sweep", "").want(http.StatusOK)
	})
	t.Run("CancellingListsCancellingExecutions", func(t *testing.T) {
		id := e.submit(ffqnCancel, core.ComponentTypeWorkflow, "[]")
		e.do("PUT", "/v1/executions/"+id.String()+"/cancel", nil).want(http.StatusOK)
		var ids []core.ExecutionId
		e.do("GET", "/v1/worker/cancelling?batch_size=100", nil).want(http.StatusOK).decode(&ids)
		if len(ids) != 1 || ids[0] != id {
			t.Fatalf("ids %v", ids)
		}
	})
	t.Run("SweepWithoutSweeperIs501", func(t *testing.T) {
		newEnv(t, db).do("POST", "/v1/worker/sweep", nil).wantErr(http.StatusNotImplemented, "not implemented")
	})
	e.rejectAll(t, []badReq{
		{name: "BadAtIs400", method: "GET", path: "/v1/worker/expired-timers?at=later", status: 400, msg: "invalid query parameter `at`: expected an RFC 3339 timestamp"},
		{name: "ZeroBatchIs400", method: "GET", path: "/v1/worker/cancelling?batch_size=0", status: 400, msg: "invalid query parameter `batch_size`: must be between 1 and 100"},
		{name: "SweepNotJSONIs415", method: "POST", path: "/v1/worker/sweep", body: []byte(`{}`), status: 415, msg: "expected request with `Content-Type: application/json`"},
		{name: "SweepUnknownFieldIs422", method: "POST", path: "/v1/worker/sweep", body: `{"when":"now"}`, status: 422, msg: "invalid request body: unknown field `when`"},
	})
}
