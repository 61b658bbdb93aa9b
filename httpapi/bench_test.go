package httpapi

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/store/mem"
	"github.com/stela-dev/stela/wire"
)

// BenchmarkLockAnswerBytes reports the size of lock answers, the figure
// behind compact worker JSON and skip_history (issue 11): an activity's lock,
// and the lock of a workflow that fanned out to 100 children, all answered —
// the pretty-printed answer the worker routes used to send, the compact one,
// and with skip_history plus the history delta a worker holding everything
// but the responses reads.
//
//	go test ./httpapi -run '^$' -bench LockAnswerBytes -benchtime 20x
func BenchmarkLockAnswerBytes(b *testing.B) {
	ctx := context.Background()
	svc := store.New(mem.New(), store.Options{Clock: &testClock{now: t0}, Logger: slog.New(slog.DiscardHandler)})
	defer svc.Close()
	h := New(svc, nil, Options{Clock: &testClock{now: t0}, Authorizer: AllowAll()})
	create := func(id core.ExecutionId, ffqn core.FunctionFqn, typ core.ComponentType, parent *core.Parent) core.CreateRequest {
		return core.CreateRequest{CreatedAt: t0, ExecutionID: id, FFQN: ffqn, Params: core.Params{[]byte(`"World"`)}, Parent: parent,
			ScheduledAt: t0, ComponentID: unmanagedComponent(typ), Metadata: core.ExecutionMetadata{}}
	}
	lockReq := func(typ core.ComponentType) core.LockRequest {
		return core.LockRequest{BatchSize: 1, PendingAtOrSooner: t0, CreatedAt: t0, ComponentID: unmanagedComponent(typ),
			ExecutorID: testExecutor, RunID: testRun, LockExpiresAt: t0.Add(time.Hour), RetryConfig: core.RetryConfigZero()}
	}
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	// The fan-out parent: 100 children created and finished, one JoinNext each.
	parent, _ := core.NewExecutionId(1, bytes.NewReader(make([]byte, 10)))
	_, err := svc.Create(ctx, create(parent, ffqnWorkflow, core.ComponentTypeWorkflow, nil))
	must(err)
	_, err = svc.LockOne(ctx, lockReq(core.ComponentTypeWorkflow), parent, 1)
	must(err)
	js := mustJS("g:1")
	next := core.Version(2)
	ev := func(h core.HistoryEvent) core.AppendRequest {
		return core.AppendRequest{CreatedAt: t0, Event: &core.HistoryEventRequest{Event: h}}
	}
	child := parent.NextLevel(js)
	var children []core.ExecutionId
	for chunk := 0; chunk < 4; chunk++ {
		var batch []core.AppendRequest
		var reqs []core.CreateRequest
		if chunk == 0 {
			batch = append(batch, ev(&core.JoinSetCreate{JoinSetID: js}))
		}
		for range 25 {
			batch = append(batch, ev(&core.JoinSetRequestEvent{JoinSetID: js, Request: &core.ChildExecutionRequest{
				ChildExecutionID: core.ExecutionIdDerived{ExecutionId: child}, TargetFFQN: ffqnActivity, Params: core.Params{[]byte(`"World"`)}}}))
			reqs = append(reqs, create(child, ffqnActivity, core.ComponentTypeActivity, &core.Parent{ExecutionID: parent, JoinSetID: js}))
			children = append(children, child)
			child = child.Incremented()
		}
		next, err = svc.AppendBatchCreateNewExecution(ctx, t0, batch, parent, next, reqs, nil)
		must(err)
	}
	var activityPretty, activityCompact int
	for i, c := range children {
		le, err := svc.LockOne(ctx, lockReq(core.ComponentTypeActivity), c, 1)
		must(err)
		if i == 0 {
			raw, err := core.MarshalJSONIndent(wire.NewLockedExecutionJSON(le))
			must(err)
			activityPretty = len(raw)
			raw, err = core.MarshalJSON(wire.NewLockedExecutionJSON(le))
			must(err)
			activityCompact = len(raw)
		}
		rv := core.RetOk(&core.WastValWithType{Type: "string", Value: []byte(`"Hello, World!"`)})
		_, err = svc.AppendBatchRespondToParent(ctx,
			core.AppendEventsToExecution{ExecutionID: c, Version: 2, Batch: []core.AppendRequest{{CreatedAt: t0, Event: &core.Finished{Retval: rv}}}},
			core.AppendResponseToExecution{ParentExecutionID: parent, CreatedAt: t0, JoinSetID: js, ChildExecutionID: core.ExecutionIdDerived{ExecutionId: c}, FinishedVersion: 2, Result: rv}, t0)
		must(err)
	}
	var batch []core.AppendRequest
	for range children {
		batch = append(batch, ev(&core.JoinNext{JoinSetID: js, RunExpiresAt: t0}))
	}
	next, err = svc.AppendBatch(ctx, t0, batch[:90], parent, next)
	must(err)
	next, err = svc.AppendBatch(ctx, t0, batch[90:], parent, next)
	must(err)
	full, err := svc.LockOne(ctx, lockReq(core.ComponentTypeWorkflow), parent, next)
	must(err)
	next++
	pretty, err := core.MarshalJSONIndent(wire.NewLockedExecutionJSON(full))
	must(err)

	get := func(method, path string, body any) int {
		var rd *bytes.Reader
		if body != nil {
			raw, err := core.MarshalJSON(body)
			must(err)
			rd = bytes.NewReader(raw)
		} else {
			rd = bytes.NewReader(nil)
		}
		req := httptest.NewRequest(method, path, rd)
		req.Header.Set("Content-Type", contentTypeJSON)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body.String())
		}
		return rec.Body.Len()
	}
	lockBody := func(skip bool) map[string]any {
		body := lockParams(core.ComponentTypeWorkflow, t0.Add(time.Hour))
		body["execution_id"], body["version"], body["skip_history"] = parent, next, skip
		next++
		return body
	}
	var compactFull, compactSkip, delta int
	b.ResetTimer()
	for range b.N {
		compactFull = get("POST", "/v1/worker/lock/one", lockBody(false))
		compactSkip = get("POST", "/v1/worker/lock/one", lockBody(true))
		delta = get("GET", "/v1/worker/executions/"+parent.String()+"/history?from_version="+strconv.Itoa(int(next))+"&after_cursor=0", nil)
	}
	b.ReportMetric(float64(activityPretty), "activity-lock-pretty-B")
	b.ReportMetric(float64(activityCompact), "activity-lock-compact-B")
	b.ReportMetric(float64(len(pretty)), "fanout100-lock-pretty-B")
	b.ReportMetric(float64(compactFull), "fanout100-lock-compact-B")
	b.ReportMetric(float64(compactSkip), "fanout100-lock-skip-B")
	b.ReportMetric(float64(delta), "fanout100-responses-delta-B")
}

// sleepBatchBody is the append a workflow sends when it starts a sleep
// (W3): the one-off join set, its delay and the JoinNext.
func sleepBatchBody(b *testing.B) []byte {
	id, err := core.ParseExecutionId("E_01KJ3ZC4Q5W8X7V6T5R4Q3P2N1")
	if err != nil {
		b.Fatal(err)
	}
	var ids core.IdCounter
	js, err := ids.NextOneOffJoinSet("sleep")
	if err != nil {
		b.Fatal(err)
	}
	delay := ids.NextDelay(id, js)
	batch := []core.AppendRequest{
		{CreatedAt: t0, Event: &core.HistoryEventRequest{Event: &core.JoinSetCreate{JoinSetID: js}}},
		{CreatedAt: t0, Event: &core.HistoryEventRequest{Event: &core.JoinSetRequestEvent{JoinSetID: js,
			Request: &core.DelayRequest{DelayID: delay, ExpiresAt: t0.Add(time.Second), ScheduleAt: core.ScheduleAt{Kind: "in", In: core.DurationOf(time.Second)}}}}},
		{CreatedAt: t0, Event: &core.HistoryEventRequest{Event: &core.JoinNext{JoinSetID: js, RunExpiresAt: t0.Add(30 * time.Second)}}},
	}
	body, err := core.MarshalJSON(wire.AppendBatchBody{CurrentTime: &t0, Batch: batch, ExecutionID: id, Version: 3})
	if err != nil {
		b.Fatal(err)
	}
	return body
}

// BenchmarkDecodeAppendBatch measures the strict decoding of an append
// body, the largest per-request CPU cost of the worker routes.
//
//	go test ./httpapi -run '^$' -bench DecodeAppendBatch -benchmem
func BenchmarkDecodeAppendBatch(b *testing.B) {
	body := sleepBatchBody(b)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var dst wire.AppendBatchBody
		if err := decodeJSON(body, &dst); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeAppendBatch measures the client's side of the same body.
func BenchmarkEncodeAppendBatch(b *testing.B) {
	body := sleepBatchBody(b)
	var dst wire.AppendBatchBody
	if err := decodeJSON(body, &dst); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := core.MarshalJSON(dst); err != nil {
			b.Fatal(err)
		}
	}
}
