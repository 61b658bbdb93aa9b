package client_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/httpapi"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/store/mem"
)

// storeMethods are the methods of core.DbConnection that the worker routes
// serve, plus ReadHistory: the HTTP client has them with the store's names,
// semantics and errors, so code written against the in-process store runs
// over HTTP unchanged.
type storeMethods interface {
	LockPendingByFFQNs(ctx context.Context, req core.LockRequest, ffqns []core.FunctionFqn) ([]core.LockedExecution, error)
	LockPendingByFFQNsAuto(ctx context.Context, req core.LockRequest, ffqns []core.FunctionFqn) ([]core.LockedExecution, error)
	LockPendingByComponentDigest(ctx context.Context, req core.LockRequest) ([]core.LockedExecution, error)
	LockOne(ctx context.Context, req core.LockRequest, id core.ExecutionId, version core.Version) (core.LockedExecution, error)
	Append(ctx context.Context, id core.ExecutionId, version core.Version, req core.AppendRequest) (core.Version, error)
	AppendBatch(ctx context.Context, currentTime core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, version core.Version) (core.Version, error)
	AppendBatchCreateNewExecution(ctx context.Context, currentTime core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, version core.Version, children []core.CreateRequest, backtraces []core.BacktraceInfo) (core.Version, error)
	AppendBatchRespondToParent(ctx context.Context, events core.AppendEventsToExecution, resp core.AppendResponseToExecution, currentTime core.Timestamp) (core.Version, error)
	AppendBatchWithDelayResponse(ctx context.Context, currentTime core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, version core.Version, js core.JoinSetId, delay core.DelayId) (core.Version, error)
	UpsertStubResponse(ctx context.Context, id core.ExecutionIdDerived, version core.Version, req core.AppendRequest, resp core.AppendResponseToExecution, currentTime core.Timestamp) error
	Create(ctx context.Context, req core.CreateRequest) (core.Version, error)
	Get(ctx context.Context, id core.ExecutionId) (*core.ExecutionLog, error)
	GetExecutionEvent(ctx context.Context, id core.ExecutionId, version core.Version) (core.ExecutionEvent, error)
	GetLastExecutionEvent(ctx context.Context, id core.ExecutionId) (core.ExecutionEvent, error)
	GetCreateRequest(ctx context.Context, id core.ExecutionId) (core.CreateRequest, error)
	GetPendingState(ctx context.Context, id core.ExecutionId) (core.ExecutionWithState, error)
	GetExpiredTimers(ctx context.Context, at core.Timestamp) ([]core.ExpiredTimer, error)
	GetCancelling(ctx context.Context, batchSize uint32) ([]core.ExecutionId, error)
	SubscribeToNextResponses(ctx context.Context, id core.ExecutionId, lastResponse core.ResponseCursor) ([]core.ResponseWithCursor, error)
	WaitForFinishedResult(ctx context.Context, id core.ExecutionId) (core.ReturnValue, error)
	ReadHistory(ctx context.Context, id core.ExecutionId, fromVersion core.Version, afterCursor core.ResponseCursor) (core.HistoryDelta, error)
	AppendBacktrace(ctx context.Context, bt core.BacktraceInfo) error
	AppendBacktraceBatch(ctx context.Context, batch []core.BacktraceInfo) (int, error)
	AppendLog(ctx context.Context, row core.LogInfoAppendRow) error
	AppendLogBatch(ctx context.Context, rows []core.LogInfoAppendRow) error
}

var (
	_ storeMethods = (*store.Service)(nil)
	_ storeMethods = (*client.Client)(nil)
)

func newService(t *testing.T) *store.Service {
	t.Helper()
	svc := store.New(mem.New(), store.Options{PollInterval: 10 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { _ = svc.Close() })
	return svc
}

// serve runs the real handler over db and returns its URL.
func serve(t *testing.T, db core.DbExternalApi, opts ...func(*httpapi.Options)) string {
	t.Helper()
	o := httpapi.Options{Authorizer: httpapi.AllowAll(), FollowWait: 2 * time.Second,
		Sweep: func(ctx context.Context, at core.Timestamp) (any, error) { return store.Sweep(ctx, db, at) }}
	for _, f := range opts {
		f(&o)
	}
	srv := httptest.NewServer(httpapi.New(db, nil, o))
	t.Cleanup(srv.Close)
	return srv.URL
}

func newClient(t *testing.T, url string, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestStoreContractOverBothTransports runs one executor scenario against the
// in-process store and against the client over the real handler: the same
// calls give the same results and the same errors.
func TestStoreContractOverBothTransports(t *testing.T) {
	t.Run("InProcess", func(t *testing.T) { runStoreScenario(t, newService(t)) })
	t.Run("HTTP", func(t *testing.T) { runStoreScenario(t, newClient(t, serve(t, newService(t)))) })
}

var (
	ffqnWorkflow = mustFFQN("test:sdk/ifc.workflow")
	ffqnActivity = mustFFQN("test:sdk/ifc.activity")
	ffqnStub     = mustFFQN("test:sdk/ifc.stub")
	testDigest   = core.ComponentDigest{Digest: core.SHA256Digest([]byte("client test component"))}
)

func mustFFQN(s string) core.FunctionFqn {
	f, err := core.ParseFunctionFqn(s)
	if err != nil {
		panic(err)
	}
	return f
}

func newID(t *testing.T) core.ExecutionId {
	t.Helper()
	id, err := core.NewExecutionId(uint64(time.Now().UnixMilli()), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func hist(at core.Timestamp, h core.HistoryEvent) core.AppendRequest {
	return core.AppendRequest{CreatedAt: at, Event: &core.HistoryEventRequest{Event: h}}
}

func okString(s string) core.ReturnValue {
	return core.RetOk(&core.WastValWithType{Type: "string", Value: json.RawMessage(`"` + s + `"`)})
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := core.MarshalJSON(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func createReq(now core.Timestamp, id core.ExecutionId, f core.FunctionFqn, ct core.ComponentType, parent *core.Parent) core.CreateRequest {
	return core.CreateRequest{CreatedAt: now, ExecutionID: id, FFQN: f, Params: core.Params{json.RawMessage(`"World"`)}, Parent: parent,
		ScheduledAt: now, ComponentID: core.ComponentId{ComponentType: ct, Name: "c", ComponentDigest: testDigest},
		Metadata: core.ExecutionMetadata{"k": "v"}}
}

func runStoreScenario(t *testing.T, s storeMethods) {
	ctx := context.Background()
	now := core.TS(time.Now())
	exr, _ := core.NewExecutorId(uint64(now.UnixMilli()), rand.Reader)
	run, _ := core.NewRunId(uint64(now.UnixMilli()), rand.Reader)
	lockReq := func(ct core.ComponentType, batch uint32) core.LockRequest {
		return core.LockRequest{BatchSize: batch, PendingAtOrSooner: now, CreatedAt: now,
			ComponentID: core.ComponentId{ComponentType: ct, Name: "c", ComponentDigest: testDigest},
			ExecutorID:  exr, RunID: run, LockExpiresAt: now.Add(time.Minute), RetryConfig: core.RetryConfigZero()}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	// Create, read it back.
	wf := newID(t)
	wfReq := createReq(now, wf, ffqnWorkflow, core.ComponentTypeWorkflow, nil)
	if v, err := s.Create(ctx, wfReq); err != nil || v != 1 {
		t.Fatalf("Create = %d, %v", v, err)
	}
	if _, err := s.Create(ctx, wfReq); !errors.Is(err, core.ErrConflict) {
		t.Fatalf("Create of an existing id: %v, want ErrConflict", err)
	}
	cr, err := s.GetCreateRequest(ctx, wf)
	must(err)
	if jsonOf(t, cr) != jsonOf(t, wfReq) {
		t.Fatalf("GetCreateRequest = %s, want %s", jsonOf(t, cr), jsonOf(t, wfReq))
	}
	if st, err := s.GetPendingState(ctx, wf); err != nil || st.PendingState.Status() != "pending_at" || st.FFQN != ffqnWorkflow {
		t.Fatalf("GetPendingState = %+v, %v", st, err)
	}

	// Lock the workflow; nothing else is pending.
	locked, err := s.LockPendingByFFQNs(ctx, lockReq(core.ComponentTypeWorkflow, 5), []core.FunctionFqn{ffqnWorkflow})
	must(err)
	if len(locked) != 1 || locked[0].ExecutionID != wf || locked[0].NextVersion != 2 || locked[0].Metadata["k"] != "v" ||
		string(locked[0].Params[0]) != `"World"` || locked[0].LockedEvent.ExecutorID != exr {
		t.Fatalf("LockPendingByFFQNs = %+v", locked)
	}
	if again, err := s.LockPendingByFFQNs(ctx, lockReq(core.ComponentTypeWorkflow, 5), []core.FunctionFqn{ffqnWorkflow}); err != nil || len(again) != 0 {
		t.Fatalf("second lock = %+v, %v", again, err)
	}

	// Fan out to two children (ids derived as Obelisk does) and block.
	js := core.GeneratedJoinSetId(1)
	c1, c2 := core.NewChildExecutionId(wf, js, 1), core.NewChildExecutionId(wf, js, 2)
	batch := []core.AppendRequest{hist(now, &core.JoinSetCreate{JoinSetID: js})}
	var children []core.CreateRequest
	for _, c := range []core.ExecutionId{c1, c2} {
		batch = append(batch, hist(now, &core.JoinSetRequestEvent{JoinSetID: js, Request: &core.ChildExecutionRequest{
			ChildExecutionID: core.ExecutionIdDerived{ExecutionId: c}, TargetFFQN: ffqnActivity, Params: core.Params{}}}))
		children = append(children, createReq(now, c, ffqnActivity, core.ComponentTypeActivity, &core.Parent{ExecutionID: wf, JoinSetID: js}))
	}
	batch = append(batch, hist(now, &core.JoinNext{JoinSetID: js, RunExpiresAt: now}))
	if next, err := s.AppendBatchCreateNewExecution(ctx, now, batch, wf, 2, children, nil); err != nil || next != 6 {
		t.Fatalf("AppendBatchCreateNewExecution = %d, %v", next, err)
	}

	// Errors map to core's taxonomy.
	var vc *core.VersionConflictError
	if _, err := s.Append(ctx, wf, 2, core.AppendRequest{CreatedAt: now, Event: &core.Paused{}}); !errors.As(err, &vc) || vc.Expected != 6 || vc.Requested != 2 {
		t.Fatalf("stale Append: %v, want VersionConflictError{6, 2}", err)
	}
	if _, err := s.Append(ctx, newID(t), 1, core.AppendRequest{CreatedAt: now, Event: &core.Paused{}}); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("Append to an unknown execution: %v, want ErrNotFound", err)
	}
	var ill *core.IllegalStateError
	if _, err := s.Append(ctx, wf, 6, core.AppendRequest{CreatedAt: now, Event: &core.Unpaused{}}); !errors.As(err, &ill) || ill.Reason != "cannot unpause, execution is not paused" {
		t.Fatalf("Unpaused when active: %v, want IllegalStateError", err)
	}
	var unl *core.UnlockedCannotBeAppendedError
	if _, err := s.Append(ctx, c1, 1, core.AppendRequest{CreatedAt: now, Event: &core.Unlocked{UnlockedAt: now, Reason: "x"}}); !errors.As(err, &unl) || unl.State != "pending" {
		t.Fatalf("Unlocked when pending: %v, want UnlockedCannotBeAppendedError(pending)", err)
	}
	bad := lockReq(core.ComponentTypeActivity, 1)
	bad.LockExpiresAt = now
	var ve *core.ValidationError
	if _, err := s.LockOne(ctx, bad, c1, 1); !errors.As(err, &ve) || ve.Reason != "invalid expiry date" {
		t.Fatalf("LockOne with a past expiry: %v, want ValidationError", err)
	}

	// Children: locked by ffqn (one with LockOne), finished with a response to the parent.
	childLock := lockReq(core.ComponentTypeActivity, 1)
	childLock.SkipHistory = true
	cl, err := s.LockPendingByFFQNs(ctx, childLock, []core.FunctionFqn{ffqnActivity})
	must(err)
	if len(cl) != 1 || cl[0].ExecutionID != c1 || cl[0].Parent == nil || cl[0].Parent.ExecutionID != wf || cl[0].Parent.JoinSetID != js {
		t.Fatalf("child lock = %+v", cl)
	}
	cl2, err := s.LockOne(ctx, lockReq(core.ComponentTypeActivity, 1), c2, 1)
	must(err)
	if cl2.ExecutionID != c2 || cl2.NextVersion != 2 {
		t.Fatalf("LockOne = %+v", cl2)
	}
	for i, c := range []core.ExecutionId{c1, c2} {
		rv := okString("child")
		fin, err := s.AppendBatchRespondToParent(ctx,
			core.AppendEventsToExecution{ExecutionID: c, Version: 2, Batch: []core.AppendRequest{{CreatedAt: now, Event: &core.Finished{Retval: rv}}}},
			core.AppendResponseToExecution{ParentExecutionID: wf, CreatedAt: now, JoinSetID: js, ChildExecutionID: core.ExecutionIdDerived{ExecutionId: c}, FinishedVersion: 2, Result: rv}, now)
		if err != nil || fin != 2 {
			t.Fatalf("AppendBatchRespondToParent = %d, %v", fin, err)
		}
		if i == 0 {
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			rs, err := s.SubscribeToNextResponses(wctx, wf, 0)
			cancel()
			if err != nil || len(rs) != 1 || rs[0].Cursor != 1 {
				t.Fatalf("SubscribeToNextResponses = %+v, %v", rs, err)
			}
		}
	}
	if _, err := s.Append(ctx, c1, 2, core.AppendRequest{CreatedAt: now, Event: &core.Paused{}}); !errors.Is(err, core.ErrAlreadyFinished) {
		t.Fatalf("Append to a finished execution: %v, want ErrAlreadyFinished", err)
	}
	if rv, err := s.WaitForFinishedResult(ctx, c2); err != nil || !rv.Equal(okString("child")) {
		t.Fatalf("WaitForFinishedResult = %+v, %v", rv, err)
	}

	// The parent's history, whole and as a delta.
	d, err := s.ReadHistory(ctx, wf, 0, 0)
	must(err)
	if len(d.Events) != 4 || d.Events[0].Version != 2 || len(d.Responses) != 2 || d.NextVersion != 6 {
		t.Fatalf("ReadHistory(0, 0) = %+v", d)
	}
	d, err = s.ReadHistory(ctx, wf, 5, 1)
	must(err)
	if len(d.Events) != 1 || d.Events[0].Version != 5 || len(d.Responses) != 1 || d.Responses[0].Cursor != 2 {
		t.Fatalf("ReadHistory(5, 1) = %+v", d)
	}
	if _, ok := d.Events[0].Event.(*core.JoinNext); !ok {
		t.Fatalf("event 5 = %T", d.Events[0].Event)
	}
	l, err := s.Get(ctx, wf)
	must(err)
	if len(l.Events) != 6 || len(l.Responses) != 2 || l.NextVersion != 6 || l.PendingState.Status() != "pending_at" {
		t.Fatalf("Get = %d events, %d responses, next %d, %s", len(l.Events), len(l.Responses), l.NextVersion, l.PendingState.Status())
	}
	if ev, err := s.GetExecutionEvent(ctx, wf, 5); err != nil || ev.Version != 5 {
		t.Fatalf("GetExecutionEvent = %+v, %v", ev, err)
	}
	if _, err := s.GetExecutionEvent(ctx, wf, 99); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("GetExecutionEvent(99): %v, want ErrNotFound", err)
	}
	if ev, err := s.GetLastExecutionEvent(ctx, wf); err != nil || ev.Version != 5 {
		t.Fatalf("GetLastExecutionEvent = %+v, %v", ev, err)
	}

	// Relock the parent (full history this time), join and finish.
	relock := lockReq(core.ComponentTypeWorkflow, 1)
	relock.RunID, _ = core.NewRunId(uint64(now.UnixMilli()), rand.Reader)
	le, err := s.LockOne(ctx, relock, wf, 6)
	must(err)
	if len(le.EventHistory) != 4 || len(le.Responses) != 2 || le.NextVersion != 7 {
		t.Fatalf("relock = %d events, %d responses, next %d", len(le.EventHistory), len(le.Responses), le.NextVersion)
	}
	fin, err := s.AppendBatch(ctx, now, []core.AppendRequest{
		hist(now, &core.JoinNext{JoinSetID: js, RunExpiresAt: now}),
		{CreatedAt: now, Event: &core.Finished{Retval: okString("done")}},
	}, wf, 7)
	if err != nil || fin != 8 {
		t.Fatalf("AppendBatch finishing = %d, %v", fin, err)
	}
	if rv, err := s.WaitForFinishedResult(ctx, wf); err != nil || !rv.Equal(okString("done")) {
		t.Fatalf("WaitForFinishedResult(parent) = %+v, %v", rv, err)
	}

	// Waits end with ErrTimeout; an unknown execution's result is ErrNotFound.
	pending := newID(t)
	_, err = s.Create(ctx, createReq(now, pending, ffqnActivity, core.ComponentTypeActivity, nil))
	must(err)
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	if _, err := s.WaitForFinishedResult(wctx, pending); !errors.Is(err, core.ErrTimeout) {
		t.Fatalf("WaitForFinishedResult of a pending execution: %v, want ErrTimeout", err)
	}
	cancel()
	wctx, cancel = context.WithTimeout(ctx, 200*time.Millisecond)
	if _, err := s.SubscribeToNextResponses(wctx, newID(t), 0); !errors.Is(err, core.ErrTimeout) {
		t.Fatalf("SubscribeToNextResponses of an unknown execution: %v, want ErrTimeout", err)
	}
	cancel()
	if _, err := s.WaitForFinishedResult(ctx, newID(t)); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("WaitForFinishedResult of an unknown execution: %v, want ErrNotFound", err)
	}

	// Lock by digest and auto-upgrade locking; an expired lock is a timer.
	byDigest, err := s.LockPendingByComponentDigest(ctx, lockReq(core.ComponentTypeActivity, 1))
	must(err)
	if len(byDigest) != 1 || byDigest[0].ExecutionID != pending || byDigest[0].ComponentDigest != testDigest {
		t.Fatalf("LockPendingByComponentDigest = %+v", byDigest)
	}
	auto := newID(t)
	_, err = s.Create(ctx, createReq(now, auto, ffqnWorkflow, core.ComponentTypeWorkflow, nil))
	must(err)
	if got, err := s.LockPendingByFFQNsAuto(ctx, lockReq(core.ComponentTypeWorkflow, 1), []core.FunctionFqn{ffqnWorkflow}); err != nil || len(got) != 1 || got[0].ExecutionID != auto {
		t.Fatalf("LockPendingByFFQNsAuto = %+v, %v", got, err)
	}
	timers, err := s.GetExpiredTimers(ctx, now.Add(2*time.Minute))
	must(err)
	expired := map[core.ExecutionId]bool{}
	for _, tm := range timers {
		if tm.Lock != nil {
			expired[tm.Lock.ExecutionID] = true
		}
	}
	if !expired[pending] || !expired[auto] {
		t.Fatalf("GetExpiredTimers = %+v", timers)
	}
	if ids, err := s.GetCancelling(ctx, 10); err != nil || len(ids) != 0 {
		t.Fatalf("GetCancelling = %v, %v", ids, err)
	}

	// A due delay answered together with a batch.
	sleeper := newID(t)
	_, err = s.Create(ctx, createReq(now, sleeper, ffqnWorkflow, core.ComponentTypeWorkflow, nil))
	must(err)
	_, err = s.LockOne(ctx, lockReq(core.ComponentTypeWorkflow, 1), sleeper, 1)
	must(err)
	var ids core.IdCounter
	sleepJS, err := ids.NextOneOffJoinSet("sleep")
	must(err)
	delay := ids.NextDelay(sleeper, sleepJS)
	next, err := s.AppendBatchWithDelayResponse(ctx, now, []core.AppendRequest{
		hist(now, &core.JoinSetCreate{JoinSetID: sleepJS}),
		hist(now, &core.JoinSetRequestEvent{JoinSetID: sleepJS, Request: &core.DelayRequest{DelayID: delay, ExpiresAt: now,
			ScheduleAt: core.ScheduleAt{Kind: "now"}}}),
	}, sleeper, 2, sleepJS, delay)
	if err != nil || next != 4 {
		t.Fatalf("AppendBatchWithDelayResponse = %d, %v", next, err)
	}
	if d, err := s.ReadHistory(ctx, sleeper, 4, 0); err != nil || len(d.Responses) != 1 || len(d.Events) != 0 {
		t.Fatalf("delay response = %+v, %v", d, err)
	}

	// A stub child: idempotent, a different value is ErrStubConflict.
	stubParent := newID(t)
	_, err = s.Create(ctx, createReq(now, stubParent, ffqnWorkflow, core.ComponentTypeWorkflow, nil))
	must(err)
	_, err = s.LockOne(ctx, lockReq(core.ComponentTypeWorkflow, 1), stubParent, 1)
	must(err)
	stubJS := core.GeneratedJoinSetId(1)
	stub := core.NewChildExecutionId(stubParent, stubJS, 1)
	_, err = s.AppendBatchCreateNewExecution(ctx, now, []core.AppendRequest{
		hist(now, &core.JoinSetCreate{JoinSetID: stubJS}),
		hist(now, &core.JoinSetRequestEvent{JoinSetID: stubJS, Request: &core.ChildExecutionRequest{
			ChildExecutionID: core.ExecutionIdDerived{ExecutionId: stub}, TargetFFQN: ffqnStub, Params: core.Params{}}}),
	}, stubParent, 2, []core.CreateRequest{createReq(now, stub, ffqnStub, core.ComponentTypeActivityStub, &core.Parent{ExecutionID: stubParent, JoinSetID: stubJS})}, nil)
	must(err)
	upsert := func(rv core.ReturnValue) error {
		return s.UpsertStubResponse(ctx, core.ExecutionIdDerived{ExecutionId: stub}, 1, core.AppendRequest{CreatedAt: now, Event: &core.Finished{Retval: rv}},
			core.AppendResponseToExecution{ParentExecutionID: stubParent, CreatedAt: now, JoinSetID: stubJS,
				ChildExecutionID: core.ExecutionIdDerived{ExecutionId: stub}, FinishedVersion: 1, Result: rv}, now)
	}
	must(upsert(okString("a")))
	must(upsert(okString("a")))
	if err := upsert(okString("b")); !errors.Is(err, core.ErrStubConflict) {
		t.Fatalf("UpsertStubResponse with another value: %v, want ErrStubConflict", err)
	}

	// Logs and backtraces.
	must(s.AppendLogBatch(ctx, []core.LogInfoAppendRow{
		{ExecutionID: wf, RunID: run, Entry: core.LogEntry{CreatedAt: now, Level: core.LogInfo, Message: "hello"}},
		{ExecutionID: wf, RunID: run, Entry: core.LogEntry{CreatedAt: now, StreamType: core.StreamStdout, Payload: []byte("out\n")}},
	}))
	must(s.AppendLog(ctx, core.LogInfoAppendRow{ExecutionID: wf, RunID: run, Entry: core.LogEntry{CreatedAt: now, Level: core.LogWarn, Message: "w"}}))
	bt := core.BacktraceInfo{ExecutionID: wf, ComponentID: wfReq.ComponentID, VersionMinIncluding: 2, VersionMaxExcluding: 6,
		WasmBacktrace: core.WasmBacktrace{Frames: []core.FrameInfo{{Module: "m", FuncName: "f", Symbols: []core.FrameSymbol{}}}}}
	if n, err := s.AppendBacktraceBatch(ctx, []core.BacktraceInfo{bt}); err != nil || n != 1 {
		t.Fatalf("AppendBacktraceBatch = %d, %v", n, err)
	}
	if n, err := s.AppendBacktraceBatch(ctx, []core.BacktraceInfo{bt}); err != nil || n != 0 {
		t.Fatalf("AppendBacktraceBatch again = %d, %v", n, err)
	}
	must(s.AppendBacktrace(ctx, bt))
	if bytes.Contains([]byte(jsonOf(t, l.Events)), []byte(`"backtrace_id"`)) {
		t.Fatal("Get must not carry backtrace ids")
	}
}

// TestFireDelayOfAnUnknownDelayKeepsTheRoute: the route answers an unknown
// delay with a 404 naming it, which FireDelay returns as core.ErrNotFound
// and which does not make the client stop asking the route (only the
// mux's "not found" of a server without it does).
func TestFireDelayOfAnUnknownDelayKeepsTheRoute(t *testing.T) {
	c := newClient(t, serve(t, newService(t)))
	js, err := core.ParseJoinSetId("g:1")
	if err != nil {
		t.Fatal(err)
	}
	unknown := core.NewDelayId(newID(t), js, 1)
	for range 2 {
		if _, err := c.FireDelay(context.Background(), unknown); !errors.Is(err, core.ErrNotFound) {
			t.Fatalf("FireDelay of an unknown delay: %v, want an error wrapping core.ErrNotFound (both times)", err)
		}
	}
}
