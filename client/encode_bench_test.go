package client

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/wire"
)

// w1 holds the request bodies of benchmark W1's hot worker routes, built as
// the client builds them: a workflow that calls one activity (eager
// dispatch), the activity's finish with its response to the parent, and
// eager starts of one and of 4 executions.
type w1 struct {
	createChildren  wire.CreateChildrenBody
	appendBatch     wire.AppendBatchBody
	respondToParent wire.RespondToParentBody
	many            wire.AppendManyBody
	createLocked    wire.CreateLockedBody
	createLocked4   wire.CreateLockedBody
	// locked answers create-children (and create-locked) with the child
	// created locked to the caller.
	locked wire.CreateChildrenAnswer
}

func mustW1(tb testing.TB) w1 {
	tb.Helper()
	must := func(err error) {
		if err != nil {
			tb.Fatal(err)
		}
	}
	t0 := core.TS(time.Date(2026, 12, 2, 19, 0, 0, 123456789, time.UTC))
	parent, err := core.ParseExecutionId("E_01KBFZ7A2XQ3M4N5P6R7S8T9VW")
	must(err)
	js, err := core.NewJoinSetId(core.JoinSetKindOneOff, "1")
	must(err)
	child := core.ExecutionIdDerived{ExecutionId: parent.NextLevel(js)}
	act, err := core.ParseFunctionFqn("testing:integration/activity.greet")
	must(err)
	wf, err := core.ParseFunctionFqn("testing:integration/workflow.call-greet")
	must(err)
	digest, err := core.ParseComponentDigest("sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
	must(err)
	dep, err := core.ParseDeploymentId("Dep_01KBFZ7A2XQ3M4N5P6R7S8T9VX")
	must(err)
	exr, err := core.ParseExecutorId("Exr_01KBFZ7A2XQ3M4N5P6R7S8T9VY")
	must(err)
	run, err := core.ParseRunId("Run_01KBFZ7A2XQ3M4N5P6R7S8T9VZ")
	must(err)
	actID := core.ComponentId{ComponentType: core.ComponentTypeActivity, Name: "test_greet_activity", ComponentDigest: digest}
	params := core.Params{json.RawMessage(`"world"`)}
	hist := func(ev core.HistoryEvent) core.AppendRequest {
		return core.AppendRequest{CreatedAt: t0, Event: &core.HistoryEventRequest{Event: ev}}
	}
	batch := []core.AppendRequest{
		hist(&core.JoinSetCreate{JoinSetID: js}),
		hist(&core.JoinSetRequestEvent{JoinSetID: js, Request: &core.ChildExecutionRequest{ChildExecutionID: child, TargetFFQN: act, Params: params}}),
		hist(&core.JoinNext{JoinSetID: js, RunExpiresAt: t0.Add(time.Second), RequestedFFQN: &act, Closing: false}),
	}
	p := core.Parent{ExecutionID: parent, JoinSetID: js}
	create := core.CreateRequest{CreatedAt: t0, ExecutionID: child.ExecutionId, FFQN: act, Params: params, Parent: &p,
		ScheduledAt: t0, ComponentID: actID, DeploymentID: dep, Metadata: core.ExecutionMetadata{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
		ScheduledBy: &parent}
	maxRetries := uint32(5)
	lock := core.EagerLock{Request: core.LockRequest{BatchSize: 1, CreatedAt: t0, ComponentID: actID, DeploymentID: dep,
		ExecutorID: exr, RunID: run, LockExpiresAt: t0.Add(time.Second),
		RetryConfig: core.ComponentRetryConfig{MaxRetries: &maxRetries, RetryExpBackoff: core.Duration{Secs: 0, Nanos: 100_000_000}}},
		FFQNs: []core.FunctionFqn{act}}
	var w w1
	w.createChildren = wire.CreateChildrenBody{AppendBatchBody: batchBody(t0, batch, parent, 3), Children: []core.CreateRequest{create},
		Lock: []wire.EagerLockJSON{{LockParams: lockParams(lock.Request), BatchSize: 1, FFQNs: lock.FFQNs}}}
	w.appendBatch = batchBody(t0, batch, parent, 3)
	rv := core.RetOk(&core.WastValWithType{Type: "string", Value: json.RawMessage(`"Hello, world!"`)})
	fin := []core.AppendRequest{{CreatedAt: t0, Event: &core.Finished{Retval: rv}}}
	w.respondToParent = wire.RespondToParentBody{Events: core.AppendEventsToExecution{ExecutionID: child.ExecutionId, Version: 2, Batch: fin},
		Response: core.AppendResponseToExecution{ParentExecutionID: parent, CreatedAt: t0, JoinSetID: js, ChildExecutionID: child,
			FinishedVersion: 2, Result: rv}, CurrentTime: timePtr(t0)}
	ab := batchBody(t0, fin, parent, 6)
	w.many = wire.AppendManyBody{Items: []wire.AppendManyItem{{RespondToParent: &w.respondToParent}, {Append: &ab}}}
	top := create
	top.Parent, top.ScheduledBy = nil, nil
	top.FFQN = wf
	w.createLocked = wire.CreateLockedBody{Request: &top, Lock: wire.EagerLockJSON{LockParams: lockParams(lock.Request), BatchSize: 1, FFQNs: lock.FFQNs}}
	reqs := make([]core.CreateRequest, 4)
	for i := range reqs {
		reqs[i] = top
		id, err := core.NewExecutionId(uint64(1_780_000_000_000+i), nil)
		must(err)
		reqs[i].ExecutionID = id
	}
	w.createLocked4 = wire.CreateLockedBody{Requests: reqs, Lock: wire.EagerLockJSON{LockParams: lockParams(lock.Request), BatchSize: 4, FFQNs: lock.FFQNs}}
	l := lock.Request
	w.locked = wire.CreateChildrenAnswer{NextVersion: 6, Locked: []wire.LockedExecutionJSON{{ExecutionID: child.ExecutionId, NextVersion: 2,
		Metadata: create.Metadata, ComponentDigest: digest, LockedEvent: core.Locked{ComponentID: actID, ExecutorID: exr, DeploymentID: dep,
			RunID: run, LockExpiresAt: l.LockExpiresAt, RetryConfig: l.RetryConfig}, FFQN: act, Params: params,
		EventHistory: []wire.HistoryEventJSON{}, Responses: []core.ResponseWithCursor{}, Parent: &p, ComponentType: core.ComponentTypeActivity}}}
	return w
}

func (w w1) bodies() []struct {
	name string
	body any
} {
	return []struct {
		name string
		body any
	}{
		{"create-children", w.createChildren},
		{"append-batch", w.appendBatch},
		{"respond-to-parent", w.respondToParent},
		{"many", w.many},
		{"create-locked", w.createLocked},
		{"create-locked-4", w.createLocked4},
	}
}

// BenchmarkEncodeRequest encodes each hot route's body as the client
// does before sending it (newRequest).
func BenchmarkEncodeRequest(b *testing.B) {
	for _, c := range mustW1(b).bodies() {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := newRequest("POST", "/p", nil, c.body, idempotent); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecodeAnswer decodes typical answers of the hot routes as the
// client does (call: json.Unmarshal into the route's answer type).
func BenchmarkDecodeAnswer(b *testing.B) {
	cases := []struct {
		name string
		body string
		out  func() any
	}{
		{"next-version", `{"next_version":4}`, func() any { return new(appendAnswer) }},
		{"respond-to-parent", `{"next_version":3,"response_cursor":1}`, func() any { return new(appendAnswer) }},
		{"many", `{"results":[{"next_version":3,"response_cursor":1},{"next_version":7}]}`, func() any { return new(wire.AppendManyJSON) }},
	}
	locked, err := core.MarshalJSON(mustW1(b).locked)
	if err != nil {
		b.Fatal(err)
	}
	cases = append(cases, struct {
		name string
		body string
		out  func() any
	}{"locked", string(locked), func() any { return new(appendAnswer) }})
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			body := []byte(c.body)
			for b.Loop() {
				if err := json.Unmarshal(body, c.out()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
