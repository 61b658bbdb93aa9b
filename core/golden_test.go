package core_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
)

// The golden files under testdata/golden are the project's own record of the
// wire format (docs/spec/semantics.md §2): each shape Obelisk's snapshot
// fixtures cover, and every variant of the enums inside them, written from
// the Go values below. NAME.json is the pretty form (serde_json's
// to_string_pretty), NAME.compact.json the compact form (to_string); each file
// ends with one newline that is not part of the form. The files are checked
// in and reviewed; `go test ./core -run TestGolden -update` rewrites them
// from the values after a deliberate format change.
var updateGolden = flag.Bool("update", false, "rewrite core/testdata/golden from the Go values of golden_test.go")

const goldenDir = "testdata/golden"

// golden is one golden file: a Go value of the type the bytes must decode into.
type golden struct {
	name  string
	value any
}

func TestGolden(t *testing.T) {
	gs := goldens()
	names := map[string]bool{}
	for _, g := range gs {
		if names[g.name] {
			t.Fatalf("golden %q defined twice", g.name)
		}
		names[g.name] = true
		t.Run(g.name, func(t *testing.T) {
			compact, err := core.MarshalJSON(g.value)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			pretty, err := core.MarshalJSONIndent(g.value)
			if err != nil {
				t.Fatalf("encode pretty: %v", err)
			}
			compactPath := filepath.Join(goldenDir, g.name+".compact.json")
			prettyPath := filepath.Join(goldenDir, g.name+".json")
			if *updateGolden {
				writeGolden(t, compactPath, compact)
				writeGolden(t, prettyPath, pretty)
			}
			wantCompact, wantPretty := readGolden(t, compactPath), readGolden(t, prettyPath)
			// Go value → bytes.
			if !bytes.Equal(compact, wantCompact) {
				t.Fatalf("the value encodes differently from %s (run with -update after a deliberate change)\n got: %s\nwant: %s", compactPath, compact, wantCompact)
			}
			if !bytes.Equal(pretty, wantPretty) {
				t.Fatalf("the value encodes differently from %s\n got: %s\nwant: %s", prettyPath, pretty, wantPretty)
			}
			// Bytes → our types → the same bytes, from either form.
			for _, src := range [][]byte{wantCompact, wantPretty} {
				if err := core.CheckJSONText(src); err != nil {
					t.Fatalf("golden file is not strict JSON: %v", err)
				}
				v := reflect.New(reflect.TypeOf(g.value))
				if err := json.Unmarshal(src, v.Interface()); err != nil {
					t.Fatalf("decode: %v", err)
				}
				got, err := core.MarshalJSON(v.Elem().Interface())
				if err != nil {
					t.Fatalf("re-encode: %v", err)
				}
				if !bytes.Equal(got, wantCompact) {
					t.Fatalf("round trip differs\n got: %s\nwant: %s", got, wantCompact)
				}
				gotPretty, err := core.MarshalJSONIndent(v.Elem().Interface())
				if err != nil || !bytes.Equal(gotPretty, wantPretty) {
					t.Fatalf("pretty round trip differs (%v)\n got: %s\nwant: %s", err, gotPretty, wantPretty)
				}
			}
		})
	}
	t.Run("NoStrayFiles", func(t *testing.T) {
		files, _ := filepath.Glob(filepath.Join(goldenDir, "*.json"))
		for _, f := range files {
			name := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(f), ".json"), ".compact")
			if !names[name] {
				t.Errorf("%s has no Go value in goldens()", f)
			}
		}
	})
}

func writeGolden(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(append([]byte{}, b...), '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readGolden(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run `go test ./core -run TestGolden -update` to create it)", err)
	}
	if !bytes.HasSuffix(b, []byte("\n")) || bytes.HasSuffix(b, []byte("\n\n")) {
		t.Fatalf("%s must end with exactly one newline", path)
	}
	return bytes.TrimSuffix(b, []byte("\n"))
}

// goldenFiles returns the golden files' contents (for seeding fuzz tests).
func goldenFiles() [][]byte {
	files, _ := filepath.Glob(filepath.Join(goldenDir, "*.json"))
	sort.Strings(files)
	var out [][]byte
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil {
			out = append(out, b)
		}
	}
	return out
}

// --- the values ----------------------------------------------------------------------

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func ptr[T any](v T) *T { return &v }

func wast(typ, value string) *core.WastValWithType {
	return &core.WastValWithType{Type: typ, Value: json.RawMessage(value)}
}

var (
	gT0       = core.TS(time.Date(2026, 8, 22, 10, 0, 0, 0, time.UTC))
	gTop      = must(core.ParseExecutionId("E_01KBNHM5FQW81KP5Y3XMNX31K4"))
	gJS1      = must(core.ParseJoinSetId("g:1"))
	gJSOneOff = must(core.ParseJoinSetId("o:1-sleep"))
	gJSNamed  = must(core.ParseJoinSetId("n:session/events-2"))
	gChild    = gTop.NextLevel(gJS1)
	gChild2   = gChild.Incremented()
	gDelay    = core.NewDelayId(gTop, gJSOneOff, 1)
	gDep      = must(core.ParseDeploymentId("Dep_01KBNJ0ZQ7YF9V3X6M2T8R4C5D"))
	gExr      = must(core.ParseExecutorId("Exr_01KBNJ2T3D8W7H3X6Q4M9R5V1A"))
	gRun      = must(core.ParseRunId("Run_01KBNJ2V0P6C4Y8N2B7K3T5W9E"))
	gDigest   = must(core.ParseComponentDigest("sha256:" + strings.Repeat("0123456789abcdef", 4)))
	gFileDig  = must(core.ParseContentDigest("sha256:" + strings.Repeat("fedcba9876543210", 4)))
	gWorkflow = core.ComponentId{ComponentType: core.ComponentTypeWorkflow, Name: "fibo_workflow", ComponentDigest: gDigest}
	gActivity = core.ComponentId{ComponentType: core.ComponentTypeActivity, Name: "test_greet_activity", ComponentDigest: gDigest}
	gFFQNWf   = must(core.ParseFunctionFqn("testing:fibo-workflow/workflow.fibow"))
	gFFQNAct  = must(core.ParseFunctionFqn("testing:integration/activity-greet.greet"))
	gRetry5   = core.ComponentRetryConfig{MaxRetries: ptr(uint32(5)), RetryExpBackoff: core.DurationFromMillis(100)}
	gRetryInf = core.ComponentRetryConfig{RetryExpBackoff: core.Duration{}}
)

func at(d time.Duration) core.Timestamp { return gT0.Add(d) }

func ev(v core.Version, t core.Timestamp, r core.ExecutionRequest) core.ExecutionEvent {
	return core.ExecutionEvent{CreatedAt: t, Event: r, Version: v}
}

func hev(v core.Version, t core.Timestamp, h core.HistoryEvent) core.ExecutionEvent {
	return ev(v, t, &core.HistoryEventRequest{Event: h})
}

func goldens() []golden {
	return []golden{
		{"wast_value_record", *wast("record { field1: bool, field-2: u32 }", `{"field1":true,"field_2":1}`)},
		{"wast_values", []core.WastValWithType{
			*wast("bool", `true`),
			*wast("u64", `18446744073709551615`),
			*wast("s32", `-7`),
			*wast("f64", `1.5e300`),
			*wast("char", `"ž"`),
			*wast("string", `"Hello, World!"`),
			*wast("string", "\"quote \\\" backslash \\\\ newline \\n tab \\t control \\u0001 raw ž\u2028<>&\""),
			*wast("enum { a-a, b }", `"a_a"`),
			*wast("flags { a-a, b, c }", `["a_a","c"]`),
			*wast("option<bool>", `null`),
			*wast("option<bool>", `true`),
			*wast("result<bool>", `{"ok":true}`),
			*wast("result<option<string>, string>", `{"ok":null}`),
			*wast("result<option<string>, string>", `{"err":"boom"}`),
			*wast("result", `{"ok":null}`),
			*wast("tuple<bool, u32>", `[false,7]`),
			*wast("list<u8>", `[1,2,3]`),
			*wast("record { image: string, a: bool, b: bool }", `{"image":"img","a":true,"b":false}`),
			*wast("variant { var1(option<bool>), var2 }", `{"var1":null}`),
			*wast("variant { var1(option<bool>), var2 }", `"var2"`),
		}},
		{"events_activity", core.ListExecutionEventsResponse{MaxVersion: 6, Events: []core.ExecutionEvent{
			ev(0, gT0, &core.Created{FFQN: gFFQNAct, Params: core.Params{json.RawMessage(`"World"`), json.RawMessage(`{"b":1,"a":[1.50,-0]}`)},
				Parent: &core.Parent{ExecutionID: gTop, JoinSetID: gJS1}, ScheduledAt: at(time.Second), ComponentID: gActivity,
				DeploymentID: gDep, Metadata: core.ExecutionMetadata{"tracing:traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
				ScheduledBy: &gTop}),
			ev(1, at(time.Second), &core.Locked{ComponentID: gActivity, ExecutorID: gExr, DeploymentID: gDep, RunID: gRun,
				LockExpiresAt: at(2 * time.Second), RetryConfig: gRetry5}),
			ev(2, at(1500*time.Millisecond), &core.TemporarilyFailed{BackoffExpiresAt: at(1600 * time.Millisecond), Reason: "activity trap",
				Detail: ptr("wasm backtrace:\n  0: greet"), HTTPClientTraces: &[]core.HttpClientTrace{
					{Req: core.RequestTrace{SentAt: at(1100 * time.Microsecond), URI: "https://example.com/?a=1&b=2", Method: "GET"},
						Resp: &core.ResponseTrace{FinishedAt: at(1200 * time.Microsecond), Status: core.StatusResult{Code: 503}}},
					{Req: core.RequestTrace{SentAt: at(1300 * time.Microsecond), URI: "https://example.com/", Method: "POST"},
						Resp: &core.ResponseTrace{FinishedAt: at(1400 * time.Microsecond), Status: core.StatusResult{Err: ptr("connection refused")}}},
					{Req: core.RequestTrace{SentAt: at(1500 * time.Microsecond), URI: "https://example.com/", Method: "PUT"}},
				}}),
			ev(3, at(1600*time.Millisecond), &core.Locked{ComponentID: gActivity, ExecutorID: gExr, DeploymentID: gDep, RunID: gRun,
				LockExpiresAt: at(2600 * time.Millisecond), RetryConfig: gRetry5}),
			ev(4, at(2600*time.Millisecond+123456789), &core.TemporarilyTimedOut{BackoffExpiresAt: at(2700 * time.Millisecond)}),
			ev(5, at(2700*time.Millisecond), &core.Unlocked{UnlockedAt: at(2700 * time.Millisecond), Reason: "executor \"closing\""}),
			ev(6, at(3*time.Second), &core.Finished{Retval: core.RetOk(wast("string", `"Hello, World!"`)), HTTPClientTraces: &[]core.HttpClientTrace{}}),
		}}},
		{"events_workflow", core.ListExecutionEventsResponse{MaxVersion: 25, Events: []core.ExecutionEvent{
			ev(0, gT0, &core.Created{FFQN: gFFQNWf, Params: core.Params{json.RawMessage(`10`), json.RawMessage(`1`)},
				ScheduledAt: gT0, ComponentID: gWorkflow, DeploymentID: gDep, Metadata: core.ExecutionMetadata{}}),
			ev(1, gT0, &core.Locked{ComponentID: gWorkflow, ExecutorID: gExr, DeploymentID: gDep, RunID: gRun,
				LockExpiresAt: at(time.Second), RetryConfig: gRetryInf}),
			hev(2, gT0, &core.JoinSetCreate{JoinSetID: gJS1}),
			hev(3, gT0, &core.JoinSetRequestEvent{JoinSetID: gJS1, Request: &core.ChildExecutionRequest{
				ChildExecutionID: core.ExecutionIdDerived{ExecutionId: gChild}, TargetFFQN: gFFQNAct,
				Params: core.Params{json.RawMessage(`"some param"`)}, Result: core.HistoryResult{}}}),
			hev(4, gT0, &core.JoinSetRequestEvent{JoinSetID: gJS1, Request: &core.ChildExecutionRequest{
				ChildExecutionID: core.ExecutionIdDerived{ExecutionId: gChild2}, TargetFFQN: gFFQNAct,
				Params: core.Params{}, Result: core.HistoryResult{Err: "type_check_error", Message: "expected u64"}}}),
			hev(5, gT0, &core.JoinSetCreate{JoinSetID: gJSOneOff}),
			hev(6, gT0, &core.JoinSetRequestEvent{JoinSetID: gJSOneOff, Request: &core.DelayRequest{DelayID: gDelay,
				ExpiresAt: at(10 * time.Millisecond), ScheduleAt: core.ScheduleAt{Kind: "in", In: core.DurationFromMillis(10)}}}),
			hev(7, gT0, &core.Stub{TargetExecutionID: core.ExecutionIdDerived{ExecutionId: gChild},
				RetvalHash: core.RetOk(nil).StubRetValHash(), Result: core.HistoryResult{}}),
			hev(8, gT0, &core.Stub{TargetExecutionID: core.ExecutionIdDerived{ExecutionId: gChild},
				RetvalHash: core.RetErr(wast("string", `"x"`)).StubRetValHash(), Result: core.HistoryResult{Err: "conflict"}}),
			hev(9, gT0, &core.JoinNext{JoinSetID: gJS1, RunExpiresAt: at(time.Second)}),
			ev(10, at(20*time.Millisecond), &core.Locked{ComponentID: gWorkflow, ExecutorID: gExr, DeploymentID: gDep, RunID: gRun,
				LockExpiresAt: at(time.Second), RetryConfig: gRetryInf}),
			hev(11, at(20*time.Millisecond), &core.JoinNext{JoinSetID: gJSOneOff, RunExpiresAt: at(time.Second), RequestedFFQN: &gFFQNAct, Closing: true}),
			hev(12, at(20*time.Millisecond), &core.JoinNextTry{JoinSetID: gJS1, Outcome: core.JoinNextTryFound}),
			hev(13, at(20*time.Millisecond), &core.JoinNextTry{JoinSetID: gJS1, Outcome: core.JoinNextTryPending}),
			hev(14, at(20*time.Millisecond), &core.JoinNextTry{JoinSetID: gJS1, Outcome: core.JoinNextTryAllProcessed}),
			hev(15, at(20*time.Millisecond), &core.JoinNextTooMany{JoinSetID: gJSNamed, RequestedFFQN: &gFFQNAct}),
			hev(16, at(20*time.Millisecond), &core.Persist{Value: core.Bytes{0, 1, 255}, Kind: core.PersistKind{Type: "random_u64", Min: 1, MaxInclusive: 6}}),
			hev(17, at(20*time.Millisecond), &core.Persist{Value: core.Bytes("abc"), Kind: core.PersistKind{Type: "random_string", MinLength: 1, MaxLengthExclusive: 10}}),
			hev(18, at(20*time.Millisecond), &core.Persist{Value: core.Bytes{}, Kind: core.PersistKind{Type: "execution_id"}}),
			hev(19, at(20*time.Millisecond), &core.Schedule{ExecutionID: gTop, ScheduleAt: core.ScheduleAt{Kind: "now"}, Result: core.HistoryResult{}}),
			hev(20, at(20*time.Millisecond), &core.Schedule{ExecutionID: gTop, ScheduleAt: core.ScheduleAt{Kind: "at", At: at(time.Hour)},
				Result: core.HistoryResult{Err: "function_not_found"}}),
			ev(21, at(30*time.Millisecond), &core.Paused{}),
			ev(22, at(40*time.Millisecond), &core.Unpaused{}),
			ev(23, at(50*time.Millisecond), &core.ComponentUpgradeFinished{ComponentDigest: gDigest, DeploymentID: gDep,
				Outcome: core.ComponentUpgradeOutcome{Success: true, Reason: core.ComponentUpgradeReason{}}}),
			ev(24, at(60*time.Millisecond), &core.ComponentUpgradeFinished{ComponentDigest: gDigest, DeploymentID: gDep,
				Outcome: core.ComponentUpgradeOutcome{Success: true, Reason: core.ComponentUpgradeReason{Manual: true, Force: true}}}),
			{CreatedAt: at(70 * time.Millisecond), Event: &core.ComponentUpgradeFinished{ComponentDigest: gDigest, DeploymentID: gDep,
				Outcome: core.ComponentUpgradeOutcome{FailedReason: "nondeterminism detected"}}, BacktraceID: ptr(core.Version(23)), Version: 25},
		}}},
		{"events_cancelled", core.ListExecutionEventsResponse{MaxVersion: 3, Events: []core.ExecutionEvent{
			ev(1, gT0, &core.Paused{}),
			ev(2, at(time.Millisecond), &core.CancellationRequested{}),
			ev(3, at(2*time.Millisecond), &core.Finished{Retval: core.RetFailure(core.FailureCancelled, nil, nil)}),
		}}},
		{"responses", core.ListResponsesResponse{MaxCursor: 10, ScanCursor: 10, Responses: []core.ResponseWithCursor{
			childResponse(1, core.RetOk(wast("u64", `55`))),
			childResponse(2, core.RetOk(nil)),
			childResponse(3, core.RetErr(nil)),
			childResponse(4, core.RetErr(wast("string", `"not found"`))),
			childResponse(5, core.RetFailure(core.FailureTimedOut, nil, nil)),
			childResponse(6, core.RetFailure(core.FailureNondeterminismDetected, ptr("replay diverged"), nil)),
			childResponse(7, core.RetFailure(core.FailureOutOfFuel, nil, ptr("fuel 1000"))),
			childResponse(8, core.RetFailure(core.FailureUncategorized, ptr("trap"), ptr("wasm backtrace"))),
			{Event: core.JoinSetResponseEventOuter{CreatedAt: at(9 * time.Millisecond), Event: core.JoinSetResponseEvent{JoinSetID: gJSOneOff,
				Event: &core.DelayFinished{DelayID: gDelay, Result: core.UnitResult(true)}}}, Cursor: 9},
			{Event: core.JoinSetResponseEventOuter{CreatedAt: at(10 * time.Millisecond), Event: core.JoinSetResponseEvent{JoinSetID: gJSOneOff,
				Event: &core.DelayFinished{DelayID: core.NewDelayId(gTop, gJSOneOff, 2), Result: core.UnitResult(false)}}}, Cursor: 10},
		}}},
		{"execution_with_state", core.ExecutionWithState{ExecutionID: gTop, FFQN: gFFQNAct,
			PendingState: core.PendingState{State: core.StateFinished, Lifecycle: core.LifecycleActive,
				Finished: &core.PendingStateFinished{Version: 2, FinishedAt: at(3 * time.Second), ResultKind: core.ResultKindOk()}},
			CreatedAt: gT0, FirstScheduledAt: gT0, ComponentDigest: gDigest, ComponentType: core.ComponentTypeActivity, DeploymentID: gDep}},
		{"pending_states", pendingStates()},
		{"captured_writes", capturedWrites()},
		{"create_requests", []core.CreateRequest{
			{CreatedAt: gT0, ExecutionID: gTop, FFQN: gFFQNWf, Params: core.Params{}, ScheduledAt: gT0,
				ComponentID: gWorkflow, DeploymentID: gDep, Metadata: core.ExecutionMetadata{}},
			{CreatedAt: gT0, ExecutionID: gChild, FFQN: gFFQNAct, Params: core.Params{json.RawMessage(`[1,{"k":"v"}]`)},
				Parent: &core.Parent{ExecutionID: gTop, JoinSetID: gJS1}, ScheduledAt: at(time.Minute), ComponentID: gActivity,
				DeploymentID: gDep, Metadata: core.ExecutionMetadata{"a": "1", "b": ""}, ScheduledBy: &gTop, Paused: true},
		}},
		{"backtrace_info", core.BacktraceInfo{ExecutionID: gTop, ComponentID: gWorkflow, VersionMinIncluding: 2, VersionMaxExcluding: 4,
			WasmBacktrace: core.WasmBacktrace{Frames: []core.FrameInfo{
				{Module: "fibo_workflow", FuncName: "fibow", Symbols: []core.FrameSymbol{
					{FuncName: ptr("fibo_workflow::fibow"), File: ptr("src/lib.rs"), Line: ptr(uint32(42)), Col: ptr(uint32(9))}}},
				{Module: "fibo_workflow", FuncName: "<unknown>", Symbols: []core.FrameSymbol{{}}},
				{Module: "host", FuncName: "join_next", Symbols: []core.FrameSymbol{}},
			}}}},
		{"function_metadata", []core.PersistedFunctionMetadata{
			{FFQN: gFFQNWf, ParameterTypes: []core.PersistedParameterType{{Name: "n", WitType: "u8"}, {Name: "iterations", WitType: "u32"}},
				ReturnType: "result<u64>", Submittable: true},
			{FFQN: must(core.ParseFunctionFqn("testing:fibo-obelisk-ext/fibo.fibo-submit")), ParameterTypes: []core.PersistedParameterType{
				{Name: "join-set-id", WitType: "borrow<join-set-id>"}, {Name: "n", WitType: "u8"}},
				ReturnType: "execution-id", Extension: ptr("submit"), Submittable: false},
		}},
		{"log_snapshot", logSnapshot{ExecutionID: gTop, NextVersion: 4,
			Events: []core.ExecutionEvent{
				ev(0, gT0, &core.Created{FFQN: gFFQNWf, Params: core.Params{}, ScheduledAt: gT0, ComponentID: gWorkflow,
					DeploymentID: gDep, Metadata: core.ExecutionMetadata{}}),
				ev(1, gT0, &core.Paused{}),
				ev(2, at(time.Millisecond), &core.Unpaused{}),
				ev(3, at(2*time.Millisecond), &core.Finished{Retval: core.RetOk(wast("u64", `55`))}),
			},
			Responses: []core.JoinSetResponseEventOuter{childResponse(1, core.RetOk(wast("u64", `55`))).Event},
			PendingState: core.PendingState{State: core.StateFinished, Lifecycle: core.LifecycleActive,
				Finished: &core.PendingStateFinished{Version: 3, FinishedAt: at(2 * time.Millisecond), ResultKind: core.ResultKindOk()}},
			ComponentDigest: gDigest}},
		{"web_logs", []webLogItem{
			{Cursor: "MQ==", RunID: gRun, ExecutionID: gTop, Type: "log", CreatedAt: gT0, Level: "info", Message: "Greeting World"},
		}},
		{"web_components", []webComponent{
			{ComponentID: core.ComponentId{ComponentType: core.ComponentTypeActivity, Name: "exec-add.add", ComponentDigest: gDigest},
				Files: []core.DeploymentComponentFileDetail{{File: core.DeploymentFileRecord{Path: "exec/add.sh", Digest: gFileDig, Size: 40}, Role: core.RoleExecProgram}}},
			{ComponentID: core.ComponentId{ComponentType: core.ComponentTypeWorkflow, Name: "js-workflow", ComponentDigest: gDigest},
				Files: []core.DeploymentComponentFileDetail{
					{File: core.DeploymentFileRecord{Path: "main.js", Digest: gFileDig, Size: 1}, Role: core.RoleJsEntrypoint},
					{File: core.DeploymentFileRecord{Path: "lib/util.js", Digest: gFileDig, Size: 2}, Role: core.RoleJsModule},
					{File: core.DeploymentFileRecord{Path: "src/lib.rs", Digest: gFileDig, Size: 3}, Role: core.RoleBacktraceSource},
					{File: core.DeploymentFileRecord{Path: "wit/world.wit", Digest: gFileDig, Size: 4}, Role: core.RoleWitSource},
					{File: core.DeploymentFileRecord{Path: "component.wasm", Digest: gFileDig, Size: 5}, Role: core.RoleWasmComponent},
				}},
			{ComponentID: core.ComponentId{ComponentType: core.ComponentTypeActivityStub, Name: "stub", ComponentDigest: gDigest},
				Files: []core.DeploymentComponentFileDetail{}},
		}},
	}
}

func childResponse(cursor core.ResponseCursor, rv core.ReturnValue) core.ResponseWithCursor {
	return core.ResponseWithCursor{Cursor: cursor, Event: core.JoinSetResponseEventOuter{
		CreatedAt: at(time.Duration(cursor) * time.Millisecond),
		Event: core.JoinSetResponseEvent{JoinSetID: gJS1, Event: &core.ChildExecutionFinished{
			ChildExecutionID: core.ExecutionIdDerived{ExecutionId: gChild}, FinishedVersion: 2, Result: rv}}}}
}

// pendingStates has one ExecutionWithState per status and inner state.
func pendingStates() []core.ExecutionWithState {
	by := core.LockedBy{ExecutorID: gExr, RunID: gRun}
	locked := &core.PendingStateLocked{LockedBy: by, LockExpiresAt: at(time.Second)}
	pendingAt := &core.PendingStatePendingAt{ScheduledAt: gT0}
	blocked := &core.PendingStateBlockedByJoinSet{JoinSetID: gJS1, LockExpiresAt: at(time.Second), Closing: true}
	states := []core.PendingState{
		{State: core.StateLocked, Lifecycle: core.LifecycleActive, Locked: locked},
		{State: core.StatePendingAt, Lifecycle: core.LifecycleActive, PendingAt: pendingAt},
		{State: core.StatePendingAt, Lifecycle: core.LifecycleActive, PendingAt: &core.PendingStatePendingAt{ScheduledAt: at(time.Minute), LastLock: &by}},
		{State: core.StateBlockedByJoinSet, Lifecycle: core.LifecycleActive, Blocked: blocked},
		{State: core.StateBlockedByJoinSet, Lifecycle: core.LifecycleActive, Blocked: &core.PendingStateBlockedByJoinSet{JoinSetID: gJSNamed, LockExpiresAt: gT0}},
		{State: core.StateFinished, Lifecycle: core.LifecycleActive, Finished: &core.PendingStateFinished{Version: 5, FinishedAt: at(time.Second), ResultKind: core.ResultKindOk()}},
		{State: core.StateFinished, Lifecycle: core.LifecycleActive, Finished: &core.PendingStateFinished{Version: 5, FinishedAt: at(time.Second), ResultKind: core.ResultKindError()}},
		{State: core.StateFinished, Lifecycle: core.LifecycleActive, Finished: &core.PendingStateFinished{Version: 5, FinishedAt: at(time.Second), ResultKind: core.ResultKindFailure(core.FailureCancelled)}},
		{State: core.StatePendingAt, Lifecycle: core.LifecyclePaused, PendingAt: pendingAt},
		{State: core.StateBlockedByJoinSet, Lifecycle: core.LifecyclePaused, Blocked: blocked},
		{State: core.StateLocked, Lifecycle: core.LifecycleCancelling, Locked: locked},
		{State: core.StatePendingAt, Lifecycle: core.LifecycleCancelling, PendingAt: pendingAt},
		{State: core.StateBlockedByJoinSet, Lifecycle: core.LifecycleCancelling, Blocked: blocked},
	}
	out := make([]core.ExecutionWithState, len(states))
	for i, ps := range states {
		out[i] = core.ExecutionWithState{ExecutionID: gTop, FFQN: gFFQNWf, PendingState: ps, CreatedAt: gT0,
			FirstScheduledAt: gT0, ComponentDigest: gDigest, ComponentType: core.ComponentTypeWorkflow, DeploymentID: gDep}
	}
	return out
}

// capturedWrites has one write of each kind a replay can capture.
func capturedWrites() []core.CapturedDbWrite {
	req := func(t core.Timestamp, r core.ExecutionRequest) core.AppendRequest {
		return core.AppendRequest{CreatedAt: t, Event: r}
	}
	bts := []core.BacktraceInfo{{ExecutionID: gTop, ComponentID: gWorkflow, VersionMinIncluding: 2, VersionMaxExcluding: 3,
		WasmBacktrace: core.WasmBacktrace{Frames: []core.FrameInfo{}}}}
	return []core.CapturedDbWrite{
		{Append: &core.CapturedAppend{ExecutionID: gTop, Version: 2, Req: req(gT0, &core.HistoryEventRequest{Event: &core.JoinSetCreate{JoinSetID: gJS1}}), Backtraces: bts}},
		{AppendBatch: &core.CapturedAppendBatch{CurrentTime: gT0, ExecutionID: gTop, Version: 2, Backtraces: []core.BacktraceInfo{},
			Batch: []core.AppendRequest{req(gT0, &core.HistoryEventRequest{Event: &core.JoinNext{JoinSetID: gJS1, RunExpiresAt: at(time.Second)}})}}},
		{AppendBatchWithDelayResponse: &core.CapturedAppendBatchWithDelayResponse{CurrentTime: gT0, ExecutionID: gTop, Version: 3,
			JoinSetID: gJSOneOff, DelayID: gDelay, Backtraces: []core.BacktraceInfo{},
			Batch: []core.AppendRequest{req(gT0, &core.HistoryEventRequest{Event: &core.JoinSetCreate{JoinSetID: gJSOneOff}})}}},
		{AppendBatchCreateNewExecution: &core.CapturedAppendBatchCreateNewExecution{CurrentTime: gT0, ExecutionID: gTop, Version: 4,
			Backtraces: []core.BacktraceInfo{},
			Batch: []core.AppendRequest{req(gT0, &core.HistoryEventRequest{Event: &core.JoinSetRequestEvent{JoinSetID: gJS1,
				Request: &core.ChildExecutionRequest{ChildExecutionID: core.ExecutionIdDerived{ExecutionId: gChild}, TargetFFQN: gFFQNAct,
					Params: core.Params{}, Result: core.HistoryResult{}}}})},
			ChildReq: []core.CreateRequest{{CreatedAt: gT0, ExecutionID: gChild, FFQN: gFFQNAct, Params: core.Params{},
				Parent: &core.Parent{ExecutionID: gTop, JoinSetID: gJS1}, ScheduledAt: gT0, ComponentID: gActivity,
				DeploymentID: gDep, Metadata: core.ExecutionMetadata{}}}}},
		{AppendStubResponse: &core.CapturedAppendStubResponse{CurrentTime: gT0, Backtraces: []core.BacktraceInfo{},
			Events: core.AppendEventsToExecution{ExecutionID: gChild, Version: 0,
				Batch: []core.AppendRequest{req(gT0, &core.Finished{Retval: core.RetOk(nil)})}},
			Response: core.AppendResponseToExecution{ParentExecutionID: gTop, CreatedAt: gT0, JoinSetID: gJS1,
				ChildExecutionID: core.ExecutionIdDerived{ExecutionId: gChild}, FinishedVersion: 1, Result: core.RetOk(nil)}}},
		{AppendFinished: &core.CapturedAppendFinished{ExecutionID: gTop, Version: 5, CurrentTime: at(400 * time.Millisecond),
			Retval: core.RetOk(wast("u64", `55`))}},
		{AppendFinished: &core.CapturedAppendFinished{ExecutionID: gChild, Version: 2, CurrentTime: gT0,
			Retval: core.RetErr(nil), Parent: &core.Parent{ExecutionID: gTop, JoinSetID: gJS1}}},
	}
}
