package httpapi

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/wire"
)

// testWorkerChildChecks: create-children and respond-to-parent write into
// another execution, so the routes check the request against the parent's
// log in the same write (core/children.go, docs/http-api.md §4.1). Every
// rejection answers its status and message and writes nothing (rejectAll
// compares a snapshot of every execution, its events and responses).
func testWorkerChildChecks(t *testing.T, fresh func(*testing.T, ...envOption) *env) {
	t.Run("CreateChildren", func(t *testing.T) { testCreateChildrenChecks(t, fresh(t)) })
	t.Run("RespondToParent", func(t *testing.T) { testRespondToParentChecks(t, fresh(t)) })
	t.Run("CreateChildrenEager", func(t *testing.T) { testCreateChildrenEager(t, fresh(t)) })
}

// testCreateChildrenEager: create-children's `lock` (docs/http-api.md
// §4.1a) creates the children it takes locked and answers them in
// `locked`; the same request again answers the same locks; a malformed
// entry is 400 naming it and writes nothing.
func testCreateChildrenEager(t *testing.T, e *env) {
	p := e.submit(ffqnWorkflow, core.ComponentTypeWorkflow, "[]")
	e.lock(p, core.ComponentTypeWorkflow)
	g1 := mustJS("g:1")
	c1 := p.NextLevel(g1)
	c2 := c1.Incremented()
	const path = "/v1/worker/append-batch/create-children"
	lock := func(batch int, ffqns ...core.FunctionFqn) map[string]any {
		l := lockParams(core.ComponentTypeActivity, t0.Add(time.Minute))
		l["batch_size"], l["ffqns"] = batch, append([]core.FunctionFqn{}, ffqns...)
		return l
	}
	body := func(locks ...map[string]any) map[string]any {
		return map[string]any{"execution_id": p, "version": 2,
			"batch":    []core.AppendRequest{jscEvent(g1), creqEvent(g1, c1, ffqnActivity), creqEvent(g1, c2, ffqnActivity)},
			"children": []core.CreateRequest{childReq(p, g1, c1, ffqnActivity), childReq(p, g1, c2, ffqnActivity)}, "lock": locks}
	}
	e.rejectAll(t, []badReq{
		{name: "ZeroBatchSizeIs400", method: "POST", path: path, body: body(lock(0, ffqnActivity)),
			status: 400, msg: "`lock[0].batch_size` must be 1..90"},
		{name: "NoFFQNsIs400", method: "POST", path: path, body: body(lock(1)),
			status: 400, msg: "`lock[0].ffqns` must name at least one function"},
	})
	var first, again wire.CreateChildrenAnswer
	e.do("POST", path, body(lock(1, ffqnActivity))).want(http.StatusOK).decode(&first)
	if first.NextVersion != 5 || len(first.Locked) != 1 || first.Locked[0].ExecutionID != c1 || first.Locked[0].NextVersion != 2 ||
		first.Locked[0].LockedEvent.RunID != testRun {
		t.Fatalf("eager create-children answered %+v, want next_version 5 and %s locked by the request's run at next_version 2", first, c1)
	}
	var st struct {
		PendingState core.PendingState `json:"pending_state"`
	}
	for id, want := range map[core.ExecutionId]core.StateKind{c1: core.StateLocked, c2: core.StatePendingAt} {
		e.do("GET", "/v1/executions/"+id.String()+"/status", nil).want(http.StatusOK).decode(&st)
		if st.PendingState.State != want {
			t.Fatalf("%s is %s, want %s", id, st.PendingState.State, want)
		}
	}
	e.do("POST", path, body(lock(1, ffqnActivity))).want(http.StatusOK).decode(&again)
	if again.NextVersion != first.NextVersion || len(again.Locked) != 1 || again.Locked[0].ExecutionID != c1 {
		t.Fatalf("the retry answered %+v, want the first answer %+v", again, first)
	}
}

func childReq(parent core.ExecutionId, js core.JoinSetId, id core.ExecutionId, ffqn core.FunctionFqn) core.CreateRequest {
	return core.CreateRequest{CreatedAt: t0, ExecutionID: id, FFQN: ffqn, Params: core.Params{},
		Parent: &core.Parent{ExecutionID: parent, JoinSetID: js}, ScheduledAt: t0,
		ComponentID: unmanagedComponent(core.ComponentTypeActivity), Metadata: core.ExecutionMetadata{}}
}

func creqEvent(js core.JoinSetId, child core.ExecutionId, target core.FunctionFqn) core.AppendRequest {
	return core.AppendRequest{CreatedAt: t0, Event: hist(&core.JoinSetRequestEvent{JoinSetID: js, Request: &core.ChildExecutionRequest{
		ChildExecutionID: core.ExecutionIdDerived{ExecutionId: child}, TargetFFQN: target, Params: core.Params{}}})}
}

func jscEvent(js core.JoinSetId) core.AppendRequest {
	return core.AppendRequest{CreatedAt: t0, Event: hist(&core.JoinSetCreate{JoinSetID: js})}
}

func testCreateChildrenChecks(t *testing.T, e *env) {
	p := e.submit(ffqnWorkflow, core.ComponentTypeWorkflow, "[]")
	e.lock(p, core.ComponentTypeWorkflow)
	q := e.submit(ffqnWorkflow, core.ComponentTypeWorkflow, "[]")
	g1, g2, g9 := mustJS("g:1"), mustJS("g:2"), mustJS("g:9")
	c1, c9, cq := p.NextLevel(g1), p.NextLevel(g9), q.NextLevel(g1)
	top, _ := core.NewExecutionId(uint64(t0.UnixMilli()), nil)
	const path = "/v1/worker/append-batch/create-children"
	body := func(batch []core.AppendRequest, children ...core.CreateRequest) map[string]any {
		return map[string]any{"execution_id": p, "version": 2, "batch": batch, "children": children}
	}
	topWithParent := childReq(p, g1, top, ffqnActivity)
	failed := creqEvent(g1, c1, ffqnActivity)
	failed.Event.(*core.HistoryEventRequest).Event.(*core.JoinSetRequestEvent).Request.(*core.ChildExecutionRequest).Result = core.HistoryResult{Err: "function_not_found"}
	e.rejectAll(t, []badReq{
		{name: "JoinSetNeverCreatedIs422", method: "POST", path: path,
			body:   body([]core.AppendRequest{creqEvent(g9, c9, ffqnActivity)}, childReq(p, g9, c9, ffqnActivity)),
			status: 422, msg: "join set g:9 was not created on " + p.String()},
		{name: "NoJoinSetRequestIs422", method: "POST", path: path,
			body:   body([]core.AppendRequest{jscEvent(g1)}, childReq(p, g1, c1, ffqnActivity)),
			status: 422, msg: p.String() + " has no child_execution_request for " + c1.String() + " in join set g:1"},
		{name: "RequestInAnotherJoinSetIs422", method: "POST", path: path,
			body:   body([]core.AppendRequest{jscEvent(g1), jscEvent(g2), creqEvent(g2, c1, ffqnActivity)}, childReq(p, g1, c1, ffqnActivity)),
			status: 422, msg: p.String() + " has no child_execution_request for " + c1.String() + " in join set g:1"},
		{name: "RequestBeforeJoinSetCreateIs422", method: "POST", path: path,
			body:   body([]core.AppendRequest{creqEvent(g1, c1, ffqnActivity), jscEvent(g1)}, childReq(p, g1, c1, ffqnActivity)),
			status: 422, msg: p.String() + " has no child_execution_request for " + c1.String() + " in join set g:1"},
		{name: "FailedRequestIs422", method: "POST", path: path,
			body:   body([]core.AppendRequest{jscEvent(g1), failed}, childReq(p, g1, c1, ffqnActivity)),
			status: 422, msg: p.String() + " has no child_execution_request for " + c1.String() + " in join set g:1"},
		{name: "ClosedJoinSetIs422", method: "POST", path: path,
			body: body([]core.AppendRequest{jscEvent(g1),
				{CreatedAt: t0, Event: hist(&core.JoinNext{JoinSetID: g1, RunExpiresAt: t0, Closing: true})},
				creqEvent(g1, c1, ffqnActivity)}, childReq(p, g1, c1, ffqnActivity)),
			status: 422, msg: "join set g:1 of " + p.String() + " is closed"},
		{name: "OtherFunctionThanRequestedIs422", method: "POST", path: path,
			body:   body([]core.AppendRequest{jscEvent(g1), creqEvent(g1, c1, ffqnActivity)}, childReq(p, g1, c1, ffqnStub)),
			status: 422, msg: "child " + c1.String() + " has ffqn " + ffqnStub.String() + ", its child_execution_request targets " + ffqnActivity.String()},
		{name: "ChildOfAnotherExecutionIs400", method: "POST", path: path,
			body:   body([]core.AppendRequest{jscEvent(g1), creqEvent(g1, cq, ffqnActivity)}, childReq(q, g1, cq, ffqnActivity)),
			status: 400, msg: "child " + cq.String() + " is not derived from " + p.String()},
		{name: "ParentFieldDisagreesWithIDIs400", method: "POST", path: path,
			body:   body([]core.AppendRequest{jscEvent(g1), creqEvent(g1, c1, ffqnActivity)}, childReq(p, g2, c1, ffqnActivity)),
			status: 400, msg: "child " + c1.String() + " must have parent " + p.String() + " and join set g:1"},
		{name: "TopLevelWithParentIs400", method: "POST", path: path,
			body:   body([]core.AppendRequest{jscEvent(g1)}, topWithParent),
			status: 400, msg: "top-level execution " + top.String() + " cannot have a parent"},
	})

	t.Run("RequestEarlierInTheLogIsAccepted", func(t *testing.T) {
		next := e.appendBatch(p, 2, jscEvent(g1).Event, creqEvent(g1, c1, ffqnActivity).Event)
		persist := core.AppendRequest{CreatedAt: t0, Event: hist(&core.JoinSetCreate{JoinSetID: g2})}
		var out wire.NextVersionJSON
		e.do("POST", path, map[string]any{"execution_id": p, "version": next, "batch": []core.AppendRequest{persist},
			"children": []core.CreateRequest{childReq(p, g1, c1, ffqnActivity)}}).want(http.StatusOK).decode(&out)
		if out.NextVersion != next+1 {
			t.Fatalf("next_version %d, want %d", out.NextVersion, next+1)
		}
		e.do("GET", "/v1/executions/"+c1.String()+"/status", nil).want(http.StatusOK)
	})

	// The later chunks of a large fan-out: the join set was created (or
	// closed) by an earlier append, the batch holds only the requests.
	t.Run("JoinSetCreatedEarlierInTheLogIsAccepted", func(t *testing.T) {
		r := e.submit(ffqnWorkflow, core.ComponentTypeWorkflow, "[]")
		e.lock(r, core.ComponentTypeWorkflow)
		g3, g4 := mustJS("g:3"), mustJS("g:4")
		next := e.appendBatch(r, 2, jscEvent(g3).Event, jscEvent(g4).Event, creqEvent(g3, r.NextLevel(g3), ffqnActivity).Event)
		c3, c4 := r.NextLevel(g3).Incremented(), r.NextLevel(g4)
		var out wire.NextVersionJSON
		e.do("POST", path, map[string]any{"execution_id": r, "version": next,
			"batch":    []core.AppendRequest{creqEvent(g3, c3, ffqnActivity), creqEvent(g4, c4, ffqnActivity)},
			"children": []core.CreateRequest{childReq(r, g3, c3, ffqnActivity), childReq(r, g4, c4, ffqnActivity)}}).
			want(http.StatusOK).decode(&out)
		if out.NextVersion != next+2 {
			t.Fatalf("next_version %d, want %d", out.NextVersion, next+2)
		}
		for _, c := range []core.ExecutionId{c3, c4} {
			e.do("GET", "/v1/executions/"+c.String()+"/status", nil).want(http.StatusOK)
		}
	})
	t.Run("JoinSetClosedEarlierInTheLogIs422", func(t *testing.T) {
		r := e.submit(ffqnWorkflow, core.ComponentTypeWorkflow, "[]")
		e.lock(r, core.ComponentTypeWorkflow)
		g5, g6 := mustJS("g:5"), mustJS("g:6")
		next := e.appendBatch(r, 2, jscEvent(g5).Event, jscEvent(g6).Event,
			hist(&core.JoinNext{JoinSetID: g5, RunExpiresAt: t0, Closing: true}))
		c5, c6 := r.NextLevel(g5), r.NextLevel(g6)
		e.rejectAll(t, []badReq{{name: "ClosedInTheLog", method: "POST", path: path,
			body: map[string]any{"execution_id": r, "version": next,
				"batch":    []core.AppendRequest{creqEvent(g6, c6, ffqnActivity), creqEvent(g5, c5, ffqnActivity)},
				"children": []core.CreateRequest{childReq(r, g6, c6, ffqnActivity), childReq(r, g5, c5, ffqnActivity)}},
			status: 422, msg: "join set g:5 of " + r.String() + " is closed"}})
	})
}

func testRespondToParentChecks(t *testing.T, e *env) {
	ctx := context.Background()
	p, c := e.workflowWithChild(core.ComponentTypeActivity) // c = p.g:1_1, requested in g:1
	q := e.submit(ffqnWorkflow, core.ComponentTypeWorkflow, "[]")
	g1, g2, g5 := mustJS("g:1"), mustJS("g:2"), mustJS("g:5")
	// Executions the storage API can create with derived ids but without
	// being that parent's child in that join set (no parent; another join
	// set): the routes must not answer for them. (A child created through
	// create-children always has its parent and join set, and that route
	// checked the parent's request for it.)
	notRequested, noJoinSet := c.Incremented(), p.NextLevel(g5)
	orphan := childReq(p, g5, noJoinSet, ffqnActivity)
	orphan.Parent = nil
	elsewhere := childReq(p, g2, notRequested, ffqnActivity)
	for _, req := range []core.CreateRequest{elsewhere, orphan} {
		if _, err := e.db.Create(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []core.ExecutionId{c, notRequested, noJoinSet} {
		e.lock(id, core.ComponentTypeActivity)
	}
	const path = "/v1/worker/append-batch/respond-to-parent"
	finish := func(child core.ExecutionId, rv core.ReturnValue, events ...core.ExecutionRequest) core.AppendEventsToExecution {
		batch := []core.AppendRequest{}
		for _, ev := range events {
			batch = append(batch, core.AppendRequest{CreatedAt: t0, Event: ev})
		}
		batch = append(batch, core.AppendRequest{CreatedAt: t0, Event: &core.Finished{Retval: rv}})
		return core.AppendEventsToExecution{ExecutionID: child, Version: 2, Batch: batch}
	}
	response := func(parent core.ExecutionId, js core.JoinSetId, child core.ExecutionId, v core.Version, rv core.ReturnValue) core.AppendResponseToExecution {
		return core.AppendResponseToExecution{ParentExecutionID: parent, CreatedAt: t0, JoinSetID: js,
			ChildExecutionID: core.ExecutionIdDerived{ExecutionId: child}, FinishedVersion: v, Result: rv}
	}
	body := func(ev core.AppendEventsToExecution, resp core.AppendResponseToExecution) map[string]any {
		return map[string]any{"events": ev, "response": resp}
	}
	ok := okString("c")
	e.rejectAll(t, []badReq{
		{name: "ExecutionWithoutParentIs422", method: "POST", path: path,
			body:   body(finish(noJoinSet, ok), response(p, g5, noJoinSet, 2, ok)),
			status: 422, msg: noJoinSet.String() + " was not created as a child of " + p.String() + " in join set g:5"},
		{name: "ChildOfAnotherJoinSetIs422", method: "POST", path: path,
			body:   body(finish(notRequested, ok), response(p, g1, notRequested, 2, ok)),
			status: 422, msg: notRequested.String() + " was not created as a child of " + p.String() + " in join set g:1"},
		{name: "ResponseForAnotherChildIs400", method: "POST", path: path,
			body:   body(finish(c, ok), response(p, g1, notRequested, 2, ok)),
			status: 400, msg: "`child_execution_id` " + notRequested.String() + " must be the execution the events are appended to (" + c.String() + ")"},
		{name: "OtherParentIs400", method: "POST", path: path,
			body:   body(finish(c, ok), response(q, g1, c, 2, ok)),
			status: 400, msg: "child " + c.String() + " is not derived from parent " + q.String() + " and join set g:1"},
		{name: "OtherJoinSetIs400", method: "POST", path: path,
			body:   body(finish(c, ok), response(p, g2, c, 2, ok)),
			status: 400, msg: "child " + c.String() + " is not derived from parent " + p.String() + " and join set g:2"},
		{name: "FinishedVersionNotTheBatchsIs400", method: "POST", path: path,
			body:   body(finish(c, ok), response(p, g1, c, 7, ok)),
			status: 400, msg: "`finished_version` 7 is not the version of the batch's `finished` event (2)"},
		{name: "ResultNotTheBatchsIs400", method: "POST", path: path,
			body:   body(finish(c, ok), response(p, g1, c, 2, okString("other"))),
			status: 400, msg: "the response's `result` differs from the batch's `finished` event"},
		{name: "BatchWithoutFinishedIs400", method: "POST", path: path,
			body: body(core.AppendEventsToExecution{ExecutionID: c, Version: 2, Batch: []core.AppendRequest{
				{CreatedAt: t0, Event: &core.Unlocked{UnlockedAt: t0, Reason: "x"}}}}, response(p, g1, c, 2, ok)),
			status: 400, msg: "the batch must end with the child's `finished` event"},
	})

	t.Run("ClosingJoinNextStillTakesTheResponse", func(t *testing.T) {
		// The parent's closing await blocks until the child answers.
		e.appendBatch(p, 4, hist(&core.JoinNext{JoinSetID: g1, RunExpiresAt: t0.Add(time.Second), Closing: true}))
		e.do("POST", path, body(finish(c, ok), response(p, g1, c, 2, ok))).want(http.StatusOK)
		var page core.ListResponsesResponse
		e.do("GET", "/v1/executions/"+p.String()+"/responses", nil).want(http.StatusOK).decode(&page)
		if len(page.Responses) != 1 {
			t.Fatalf("responses %+v", page)
		}
		var st core.ExecutionWithState
		e.do("GET", "/v1/executions/"+p.String()+"/status", nil).want(http.StatusOK).decode(&st)
		if got := st.PendingState.Status(); got != "pending_at" {
			t.Fatalf("parent is %s, want pending_at again", got)
		}
	})
}
