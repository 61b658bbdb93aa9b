package core

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// sampleRecord is a blocked workflow with every field of a record set.
func sampleRecord(t *testing.T) ExecutionRecord {
	t.Helper()
	id := mustParseExecID(t, "E_01KBNJ2T3D8W7H3X6Q4M9R5V1A")
	js, err := ParseJoinSetId("g:1")
	if err != nil {
		t.Fatal(err)
	}
	at := TS(time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC))
	exr, _ := ParseExecutorId("Exr_01KBNJ2T3D8W7H3X6Q4M9R5V1A")
	run, _ := ParseRunId("Run_01KBNJ2V0P6C4Y8N2B7K3T5W9E")
	ffqn, _ := ParseFunctionFqn("ns:pkg/ifc.fn")
	child := id.NextLevel(js)
	delay := NewDelayId(id, js, 1)
	lv, mr, rb := Version(1), uint32(3), uint64(1000)
	inc := ComponentDigest{Digest: Digest{7}}
	return ExecutionRecord{
		Head: ExecutionState{ExecutionID: id, FFQN: ffqn, CreatedAt: at, FirstScheduledAt: at, ComponentType: ComponentTypeWorkflow,
			ComponentDigest: ComponentDigest{Digest: Digest{1}}, IncompatibleDigest: &inc, Version: 3, State: StateBlockedByJoinSet,
			Lifecycle: LifecycleActive, At: at.Add(time.Hour), LastLock: &LockedBy{ExecutorID: exr, RunID: run},
			LastLockVersion: &lv, MaxRetries: &mr, RetryExpBackoffMillis: &rb, JoinSetID: &js, IntermittentEventCount: 2, MaxCursor: 1},
		Events: []ExecutionEvent{
			{CreatedAt: at, Version: 0, Event: &Created{FFQN: ffqn, Params: Params{json.RawMessage(`{"b":1, "a":1e3}`)}, ScheduledAt: at,
				ComponentID: ComponentId{ComponentType: ComponentTypeWorkflow}, Metadata: ExecutionMetadata{}}},
			{CreatedAt: at, Version: 1, Event: &Locked{ComponentID: ComponentId{ComponentType: ComponentTypeWorkflow},
				ExecutorID: exr, RunID: run, LockExpiresAt: at.Add(time.Hour), RetryConfig: RetryConfigZero()}},
			{CreatedAt: at, Version: 2, Event: &HistoryEventRequest{Event: &JoinSetCreate{JoinSetID: js}}},
			{CreatedAt: at, Version: 3, Event: &HistoryEventRequest{Event: &JoinNext{JoinSetID: js, RunExpiresAt: at}}},
		},
		Responses: []ResponseWithCursor{{Cursor: 1, Event: JoinSetResponseEventOuter{CreatedAt: at, Event: JoinSetResponseEvent{
			JoinSetID: js, Event: &ChildExecutionFinished{ChildExecutionID: ExecutionIdDerived{ExecutionId: child}, FinishedVersion: 1,
				Result: RetOk(nil)}}}}},
		Delays: []DelayTimer{{ExecutionID: id, JoinSetID: js, DelayID: delay, ExpiresAt: at, Paused: true}},
		Backtraces: []BacktraceInfo{{ExecutionID: id, ComponentID: ComponentId{ComponentType: ComponentTypeWorkflow},
			VersionMinIncluding: 2, VersionMaxExcluding: 4, WasmBacktrace: WasmBacktrace{Frames: []FrameInfo{{Module: "m", FuncName: "f",
				Symbols: []FrameSymbol{}}}}}},
	}
}

func mustFFQN(t *testing.T, s string) FunctionFqn {
	t.Helper()
	f, err := ParseFunctionFqn(s)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func mustParseExecID(t *testing.T, s string) ExecutionId {
	t.Helper()
	id, err := ParseExecutionId(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestExecutionRecordRoundTrip: a record decodes to what encodes to the
// same bytes (the params' JSON verbatim), so its digest is stable.
func TestExecutionRecordRoundTrip(t *testing.T) {
	rec := sampleRecord(t)
	if err := rec.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	b, err := rec.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `{"b":1,"a":1e3}`) { // key order and number literal kept
		t.Fatalf("params not kept verbatim: %s", b)
	}
	var back ExecutionRecord
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("decode: %v", err)
	}
	b2, err := back.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if string(b2) != string(b) {
		t.Fatalf("round trip changed the record:\n got %s\nwant %s", b2, b)
	}
	d1, _ := rec.Digest()
	d2, _ := back.Digest()
	if d1 != d2 || d1 != ContentDigestOf(b) {
		t.Fatalf("digests %s, %s; want %s", d1, d2, ContentDigestOf(b))
	}
	at := rec.Head.At.Add(time.Nanosecond)
	back.FinishRecordedAt = &at
	if d3, _ := back.Digest(); d3 == d1 {
		t.Fatal("the digest does not cover the finish time")
	}
}

// TestExecutionRecordDecodeIsStrict: unknown fields, missing fields and
// unknown names are refused.
func TestExecutionRecordDecodeIsStrict(t *testing.T) {
	rec := sampleRecord(t)
	b, err := rec.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func(string) string{
		"unknown top-level field": func(s string) string { return strings.Replace(s, `{"execution_id"`, `{"x":1,"execution_id"`, 1) },
		"unknown head field":      func(s string) string { return strings.Replace(s, `"head":{`, `"head":{"x":1,`, 1) },
		"missing events":          func(s string) string { return strings.Replace(s, `"events":`, `"evts":`, 1) },
		"unknown state":           func(s string) string { return strings.Replace(s, `"blocked_by_join_set"`, `"sleeping"`, 1) },
		"unknown lifecycle":       func(s string) string { return strings.Replace(s, `"lifecycle":"active"`, `"lifecycle":"gone"`, 1) },
		"missing version":         func(s string) string { return strings.Replace(s, `"version":3,`, ``, 1) },
	} {
		var r ExecutionRecord
		if err := json.Unmarshal([]byte(mutate(string(b))), &r); err == nil {
			t.Errorf("%s: decoded, want an error", name)
		}
	}
}

// TestExecutionRecordValidate: an incomplete or inconsistent record is refused.
func TestExecutionRecordValidate(t *testing.T) {
	for name, mutate := range map[string]func(r *ExecutionRecord){
		"event missing":      func(r *ExecutionRecord) { r.Events = r.Events[:3] },
		"event out of place": func(r *ExecutionRecord) { r.Events[2].Version = 7 },
		"first not created":  func(r *ExecutionRecord) { r.Events[0].Event = &Paused{} },
		"response missing":   func(r *ExecutionRecord) { r.Responses = nil },
		"response cursor":    func(r *ExecutionRecord) { r.Responses[0].Cursor = 2 },
		"foreign delay":      func(r *ExecutionRecord) { r.Delays[0].ExecutionID = mustParseExecID(t, "E_01KBNJ2V0P6C4Y8N2B7K3T5W9E") },
		"foreign backtrace": func(r *ExecutionRecord) {
			r.Backtraces[0].ExecutionID = mustParseExecID(t, "E_01KBNJ2V0P6C4Y8N2B7K3T5W9E")
		},
		"empty backtrace":      func(r *ExecutionRecord) { r.Backtraces[0].VersionMaxExcluding = 2 },
		"invalid state":        func(r *ExecutionRecord) { r.Head.JoinSetID = nil },
		"finish time, running": func(r *ExecutionRecord) { at := r.Head.At; r.FinishRecordedAt = &at },
		"delays out of order": func(r *ExecutionRecord) {
			js, _ := ParseJoinSetId("g:0")
			r.Delays = append(r.Delays, DelayTimer{ExecutionID: r.Head.ExecutionID, JoinSetID: js, DelayID: NewDelayId(r.Head.ExecutionID, js, 1)})
		},
	} {
		r := sampleRecord(t)
		mutate(&r)
		if err := r.Validate(); err == nil {
			t.Errorf("%s: valid, want an error", name)
		}
	}
}

// TestTreeLogsRoundTrip: log lines and stream chunks keep what the format
// keeps; a row that is neither, or of another tree, is refused.
func TestTreeLogsRoundTrip(t *testing.T) {
	root := mustParseExecID(t, "E_01KBNJ2T3D8W7H3X6Q4M9R5V1A")
	js, _ := ParseJoinSetId("g:1")
	run, _ := ParseRunId("Run_01KBNJ2V0P6C4Y8N2B7K3T5W9E")
	at := TS(time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC))
	logs := TreeLogs{Root: root, Rows: []LogInfoAppendRow{
		{ExecutionID: root, RunID: run, Entry: LogEntry{CreatedAt: at, Level: LogWarn, Message: "héllo\n"}},
		{ExecutionID: root.NextLevel(js), RunID: run, Entry: LogEntry{CreatedAt: at, StreamType: StreamStderr, Payload: []byte{0, 1, 2}}},
		{ExecutionID: root, RunID: run, Entry: LogEntry{CreatedAt: at, StreamType: StreamStdout}},
	}}
	b, err := logs.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var back TreeLogs
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	if err := back.Validate(); err != nil {
		t.Fatal(err)
	}
	for i := range logs.Rows {
		if !SameLogRow(logs.Rows[i], back.Rows[i]) {
			t.Fatalf("row %d: got %+v, want %+v", i, back.Rows[i], logs.Rows[i])
		}
	}
	if b2, _ := back.MarshalJSON(); string(b2) != string(b) {
		t.Fatalf("round trip changed the logs:\n got %s\nwant %s", b2, b)
	}
	for name, s := range map[string]string{
		"both":    strings.Replace(string(b), `"level":4,`, `"level":4,"stream_type":1,`, 1),
		"neither": strings.Replace(string(b), `,"level":4,"message":"héllo\n"`, ``, 1),
		"unknown": strings.Replace(string(b), `"rows":`, `"x":1,"rows":`, 1),
	} {
		if err := json.Unmarshal([]byte(s), &back); err == nil {
			t.Errorf("%s: decoded %s, want an error", name, s)
		}
	}
	other := TreeLogs{Root: mustParseExecID(t, "E_01KBNJ2V0P6C4Y8N2B7K3T5W9E"), Rows: logs.Rows}
	if err := other.Validate(); err == nil {
		t.Error("logs of another tree: valid, want an error")
	}
}

// TestDeploymentRecordsRoundTrip: the deployment codecs are canonical
// (order of files and components) and round trip.
func TestDeploymentRecordsRoundTrip(t *testing.T) {
	dep, _ := ParseDeploymentId("Dep_01KBNJ2T3D8W7H3X6Q4M9R5V1A")
	at := TS(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	desc := "d"
	d := StoredDeployment{
		Record: DeploymentRecord{DeploymentID: dep, Description: &desc, CreatedAt: at, LastActiveAt: &at, Status: DeploymentActive,
			DeploymentToml: "x = 1", ObeliskVersion: "1", Files: []DeploymentFileRecord{{Path: "b"}, {Path: "a"}}},
		Components: []DeploymentComponentRecord{{DeploymentID: dep, ComponentName: "z", ComponentType: ComponentTypeActivity},
			{DeploymentID: dep, ComponentName: "y", ComponentType: ComponentTypeWorkflow}},
		ComponentFiles: []DeploymentComponentFileRecord{{ComponentName: "z", Path: "b", Role: RoleWasmComponent},
			{ComponentName: "y", Path: "a", Role: RoleJsModule}},
	}
	b, err := EncodeStoredDeployment(d)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeStoredDeployment(b)
	if err != nil {
		t.Fatal(err)
	}
	if b2, _ := EncodeStoredDeployment(back); string(b2) != string(b) {
		t.Fatalf("round trip:\n got %s\nwant %s", b2, b)
	}
	if strings.Index(string(b), `"path":"a"`) > strings.Index(string(b), `"path":"b"`) {
		t.Fatalf("files not in canonical order: %s", b)
	}
	if _, err := DecodeStoredDeployment([]byte(strings.Replace(string(b), `"active"`, `"on"`, 1))); err == nil {
		t.Fatal("unknown status decoded")
	}
	m := ComponentMetadataRecord{ComponentDigest: ComponentDigest{Digest: Digest{1}}, WitOrigin: WitOriginAuthored, Wit: "w",
		Exports: []PersistedFunctionMetadata{{FFQN: mustFFQN(t, "ns:pkg/ifc.fn"), ReturnType: "u32"}}}
	mb, err := EncodeComponentMetadata(m)
	if err != nil {
		t.Fatal(err)
	}
	if mm, err := DecodeComponentMetadata(mb); err != nil {
		t.Fatal(err)
	} else if mb2, _ := EncodeComponentMetadata(mm); string(mb2) != string(mb) {
		t.Fatalf("metadata round trip:\n got %s\nwant %s", mb2, mb)
	}
	sm := SourceMapping{Component: ComponentDigest{Digest: Digest{1}}, Key: SourceKey{FrameKey: "src/a.rs", IsSuffix: true}, Digest: ContentDigest{Digest: Digest{2}}}
	sb, _ := EncodeSourceMapping(sm)
	if back, err := DecodeSourceMapping(sb); err != nil || back != sm {
		t.Fatalf("source mapping round trip: %+v, %v", back, err)
	}
}
