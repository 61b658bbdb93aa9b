package httpapi

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/wire"
)

// hotRouteBodies returns W1-shaped bodies of the hot worker routes, encoded
// as the client encodes them (core.MarshalJSON of the wire body), with the
// type each route decodes into.
func hotRouteBodies(tb testing.TB) []struct {
	route string
	body  []byte
	typ   reflect.Type
} {
	parent, _ := core.NewExecutionId(uint64(t0.UnixMilli()), bytes.NewReader(make([]byte, 10)))
	js := mustJS("g:1")
	child := parent.NextLevel(js)
	component := core.ComponentId{ComponentType: core.ComponentTypeActivity, Name: "activity", ComponentDigest: testDigest}
	wfComponent := core.ComponentId{ComponentType: core.ComponentTypeWorkflow, Name: "workflow", ComponentDigest: testDigest}
	params := core.Params{json.RawMessage(`"World"`), json.RawMessage(`{"n":1,"tags":["a","b"]}`)}
	now := t0.Add(1500 * time.Millisecond)
	ev := func(h core.HistoryEvent) core.AppendRequest {
		return core.AppendRequest{CreatedAt: now, Event: &core.HistoryEventRequest{Event: h}}
	}
	lock := wire.EagerLockJSON{LockParams: wire.LockParams{ComponentID: component, ExecutorID: testExecutor, RunID: testRun,
		LockExpiresAt: t0.Add(time.Minute), RetryConfig: core.RetryConfigZero(), SkipHistory: true},
		BatchSize: 1, FFQNs: []core.FunctionFqn{ffqnActivity}}
	rv := core.RetOk(&core.WastValWithType{Type: "string", Value: json.RawMessage(`"Hello, World!"`)})
	finished := core.AppendRequest{CreatedAt: now, Event: &core.Finished{Retval: rv}}
	appendBatch := wire.AppendBatchBody{CurrentTime: &now, ExecutionID: parent, Version: 7, Batch: []core.AppendRequest{
		ev(&core.JoinNext{JoinSetID: js, RunExpiresAt: t0.Add(time.Minute)}), finished}}
	respond := wire.RespondToParentBody{CurrentTime: &now,
		Events: core.AppendEventsToExecution{ExecutionID: child, Version: 3, Batch: []core.AppendRequest{finished}},
		Response: core.AppendResponseToExecution{ParentExecutionID: parent, CreatedAt: now, JoinSetID: js,
			ChildExecutionID: core.ExecutionIdDerived{ExecutionId: child}, FinishedVersion: 3, Result: rv}}
	createReq := core.CreateRequest{CreatedAt: now, ExecutionID: child, FFQN: ffqnActivity, Params: params,
		Parent: &core.Parent{ExecutionID: parent, JoinSetID: js}, ScheduledAt: now, ComponentID: component,
		Metadata: core.ExecutionMetadata{}}
	createChildren := wire.CreateChildrenBody{
		AppendBatchBody: wire.AppendBatchBody{CurrentTime: &now, ExecutionID: parent, Version: 2, Batch: []core.AppendRequest{
			ev(&core.JoinSetCreate{JoinSetID: js}),
			ev(&core.JoinSetRequestEvent{JoinSetID: js, Request: &core.ChildExecutionRequest{
				ChildExecutionID: core.ExecutionIdDerived{ExecutionId: child}, TargetFFQN: ffqnActivity, Params: params}}),
			ev(&core.JoinNext{JoinSetID: js, RunExpiresAt: t0.Add(time.Minute)}),
		}},
		Children: []core.CreateRequest{createReq},
		Lock:     []wire.EagerLockJSON{lock},
	}
	wfLock := lock
	wfLock.ComponentID = wfComponent
	wfLock.FFQNs = []core.FunctionFqn{ffqnWorkflow}
	top := createReq
	top.Parent, top.FFQN, top.ComponentID = nil, ffqnWorkflow, wfComponent
	createLocked := wire.CreateLockedBody{Request: &top, Lock: wfLock}
	many := wire.AppendManyBody{Items: []wire.AppendManyItem{{Append: &appendBatch}, {RespondToParent: &respond}, {RespondToParent: &respond}}}

	out := []struct {
		route string
		body  []byte
		typ   reflect.Type
	}{
		{"create-children", nil, reflect.TypeFor[wire.CreateChildrenBody]()},
		{"append-batch", nil, reflect.TypeFor[wire.AppendBatchBody]()},
		{"respond-to-parent", nil, reflect.TypeFor[wire.RespondToParentBody]()},
		{"many", nil, reflect.TypeFor[wire.AppendManyBody]()},
		{"create-locked", nil, reflect.TypeFor[wire.CreateLockedBody]()},
	}
	for i, v := range []any{createChildren, appendBatch, respond, many, createLocked} {
		b, err := core.MarshalJSON(v)
		if err != nil {
			tb.Fatal(err)
		}
		out[i].body = b
	}
	return out
}

// BenchmarkDecodeHotRoutes decodes the bodies of the hot worker routes as
// their handlers do (decodeJSON into the route's wire type).
//
//	go test ./httpapi -run '^$' -bench DecodeHotRoutes -benchmem -count 5
func BenchmarkDecodeHotRoutes(b *testing.B) {
	for _, r := range hotRouteBodies(b) {
		b.Run(r.route, func(b *testing.B) {
			b.SetBytes(int64(len(r.body)))
			b.ReportAllocs()
			for b.Loop() {
				dst := reflect.New(r.typ).Interface()
				if err := decodeJSON(r.body, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestHotRouteBodiesDecode pins that the benchmark's bodies decode and
// round-trip (what the server reads is what the client sent).
func TestHotRouteBodiesDecode(t *testing.T) {
	for _, r := range hotRouteBodies(t) {
		dst := reflect.New(r.typ).Interface()
		if err := decodeJSON(r.body, dst); err != nil {
			t.Fatalf("%s: %v", r.route, err)
		}
		again, err := core.MarshalJSON(dst)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, r.body) {
			t.Fatalf("%s: round trip\n got %s\nwant %s", r.route, again, r.body)
		}
	}
}
