package httpapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/wire"
)

// t0 is the handler clock's start in every test.
var t0 = core.TS(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))

// testClock is a settable clock.
type testClock struct {
	mu  sync.Mutex
	now core.Timestamp
}

func (c *testClock) Now() core.Timestamp {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Set(t core.Timestamp) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// memCas is an in-memory core.Cas.
type memCas struct {
	mu    sync.Mutex
	blobs map[core.ContentDigest][]byte
}

func newMemCas() *memCas { return &memCas{blobs: map[core.ContentDigest][]byte{}} }

func (m *memCas) WriteBlob(_ context.Context, data []byte) (core.ContentDigest, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := core.ContentDigestOf(data)
	m.blobs[d] = bytes.Clone(data)
	return d, nil
}

func (m *memCas) ReadBlob(_ context.Context, d core.ContentDigest) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.blobs[d]
	if !ok {
		return nil, core.ErrNotFound
	}
	return bytes.Clone(b), nil
}

func (m *memCas) ContainsBlob(_ context.Context, d core.ContentDigest) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.blobs[d]
	return ok, nil
}

// env is one handler over one fresh store.
type env struct {
	t     *testing.T
	db    core.DbExternalApi
	cas   *memCas
	clock *testClock
	h     http.Handler
	logs  *bytes.Buffer
}

type envOption func(*Options)

func newEnv(t *testing.T, db core.DbExternalApi, opts ...envOption) *env {
	t.Helper()
	e := &env{t: t, db: db, cas: newMemCas(), clock: &testClock{now: t0}}
	o := Options{Clock: e.clock, Authorizer: AllowAll(), FollowWait: 5 * time.Second, UpgradeCheckWait: 100 * time.Millisecond}
	for _, f := range opts {
		f(&o)
	}
	e.h = New(db, e.cas, o)
	return e
}

// res is a recorded response.
type res struct {
	t *testing.T
	*httptest.ResponseRecorder
	desc string
}

// do sends a request. body is nil, a string (sent verbatim as JSON), []byte
// (verbatim, no content type) or a value encoded with core.MarshalJSON.
// hdr are header name/value pairs.
func (e *env) do(method, path string, body any, hdr ...string) res {
	e.t.Helper()
	var rd io.Reader
	contentType := ""
	switch b := body.(type) {
	case nil:
	case string:
		rd, contentType = strings.NewReader(b), "application/json"
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := core.MarshalJSON(b)
		if err != nil {
			e.t.Fatalf("encode body: %v", err)
		}
		rd, contentType = bytes.NewReader(raw), "application/json"
	}
	req := httptest.NewRequest(method, path, rd)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	return res{t: e.t, ResponseRecorder: rec, desc: method + " " + path}
}

// want checks the status and returns the response.
func (r res) want(status int) res {
	r.t.Helper()
	if r.Code != status {
		r.t.Fatalf("%s: status=%d, want %d; body: %s", r.desc, r.Code, status, r.Body.String())
	}
	return r
}

// decode decodes the JSON body into v.
func (r res) decode(v any) {
	r.t.Helper()
	if ct := r.Header().Get("Content-Type"); ct != contentTypeJSON {
		r.t.Fatalf("%s: Content-Type=%q, want JSON; body: %s", r.desc, ct, r.Body.String())
	}
	if err := json.Unmarshal(r.Body.Bytes(), v); err != nil {
		r.t.Fatalf("%s: decode %T: %v; body: %s", r.desc, v, err, r.Body.String())
	}
}

// wantErr checks status and the {"err": msg} body (msg "" = any message).
func (r res) wantErr(status int, msg string) res {
	r.t.Helper()
	r.want(status)
	var b map[string]string
	r.decode(&b)
	if _, ok := b["err"]; !ok || len(b) != 1 {
		r.t.Fatalf("%s: body %s is not {\"err\": …}", r.desc, r.Body.String())
	}
	if msg != "" && b["err"] != msg {
		r.t.Fatalf("%s: err=%q, want %q", r.desc, b["err"], msg)
	}
	return r
}

// wantErrPrefix checks status and that the error message starts with prefix.
func (r res) wantErrPrefix(status int, prefix string) res {
	r.t.Helper()
	r.wantErr(status, "")
	var b map[string]string
	r.decode(&b)
	if !strings.HasPrefix(b["err"], prefix) {
		r.t.Fatalf("%s: err=%q, want prefix %q", r.desc, b["err"], prefix)
	}
	return r
}

// wantOk checks status and the {"ok": msg} body.
func (r res) wantOk(status int, msg string) res {
	r.t.Helper()
	r.want(status)
	var b map[string]string
	r.decode(&b)
	if b["ok"] != msg || len(b) != 1 {
		r.t.Fatalf("%s: body %s, want {\"ok\": %q}", r.desc, r.Body.String(), msg)
	}
	return r
}

// okValue returns the "ok" string of a {"ok": …} body.
func (r res) okValue() string {
	r.t.Helper()
	var b map[string]string
	r.decode(&b)
	return b["ok"]
}

func (r res) text() string { return r.Body.String() }

// snapshot captures everything observable about the store's executions:
// the full logs, log rows and the due timers. Used to prove that rejected
// requests write nothing.
func (e *env) snapshot() string {
	e.t.Helper()
	ctx := context.Background()
	var b strings.Builder
	list, err := e.db.ListExecutions(ctx, core.ListExecutionsFilter{ShowDerived: true},
		core.ExecutionListPagination{ExecutionID: &core.Pagination[*core.ExecutionId]{Direction: core.OlderThan, Length: math.MaxUint16}})
	if err != nil {
		e.t.Fatalf("snapshot: list: %v", err)
	}
	for _, ex := range list {
		l, err := e.db.Get(ctx, ex.ExecutionID)
		if err != nil {
			e.t.Fatalf("snapshot: get %s: %v", ex.ExecutionID, err)
		}
		raw, err := core.MarshalJSON(wire.ExecutionLogJSON(*l))
		if err != nil {
			e.t.Fatalf("snapshot: encode: %v", err)
		}
		b.Write(raw)
		logs, err := e.db.ListLogs(ctx, ex.ExecutionID, false, core.LogFilter{ShowLogs: true, ShowStreams: true},
			core.Pagination[core.LogCursor]{Direction: core.NewerThan, Length: math.MaxUint16, Cursor: core.LogCursorMin})
		if err != nil {
			e.t.Fatalf("snapshot: logs: %v", err)
		}
		b.WriteString(compactJSON(len(logs.Items)))
	}
	timers, err := e.db.GetExpiredTimers(ctx, t0.Add(1000*time.Hour))
	if err != nil {
		e.t.Fatalf("snapshot: timers: %v", err)
	}
	for _, tm := range timers {
		b.WriteString(compactJSON(wire.ExpiredTimerJSON(tm)))
	}
	return b.String()
}

// badRequest describes a request that must be rejected without writing.
type badReq struct {
	name   string
	method string
	path   string
	body   any
	status int
	msg    string // exact message; prefix match when it ends with "…"
	hdr    []string
}

// rejectAll runs each bad request and checks its status, message and that
// the store is unchanged afterwards.
func (e *env) rejectAll(t *testing.T, reqs []badReq) {
	t.Helper()
	for _, br := range reqs {
		t.Run(br.name, func(t *testing.T) {
			before := e.snapshot()
			r := e.do(br.method, br.path, br.body, br.hdr...)
			r.t = t
			if msg, ok := strings.CutSuffix(br.msg, "…"); ok {
				r.wantErrPrefix(br.status, msg)
			} else {
				r.wantErr(br.status, br.msg)
			}
			if after := e.snapshot(); after != before {
				t.Fatalf("store changed by a rejected request:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// --- fixtures -------------------------------------------------------------------------

var (
	testExecutor = mustExecutor("Exr_01KJ3ZC4Q5W8X7V6T5R4Q3P2N1")
	testRun      = mustRun("Run_01KJ3ZC4Q5W8X7V6T5R4Q3P2N1")
	testDigest   = core.ComponentDigest{Digest: core.SHA256Digest([]byte("component"))}
	ffqnActivity = mustFFQN("testing:integration/activity.add")
	ffqnWorkflow = mustFFQN("testing:integration/workflow.run")
	ffqnCancel   = mustFFQN("testing:integration/workflow.run-cancellable")
	ffqnStub     = mustFFQN("testing:integration/stub.get")
)

func mustExecutor(s string) core.ExecutorId {
	id, err := core.ParseExecutorId(s)
	if err != nil {
		panic(err)
	}
	return id
}

func mustRun(s string) core.RunId {
	id, err := core.ParseRunId(s)
	if err != nil {
		panic(err)
	}
	return id
}

func mustFFQN(s string) core.FunctionFqn {
	f, err := core.ParseFunctionFqn(s)
	if err != nil {
		panic(err)
	}
	return f
}

func mustJS(s string) core.JoinSetId {
	js, err := core.ParseJoinSetId(s)
	if err != nil {
		panic(err)
	}
	return js
}

// unmanagedComponent is the component of executions submitted without a deployment.
func unmanagedComponent(t core.ComponentType) core.ComponentId {
	return core.ComponentId{ComponentType: t}
}

// submit creates an execution through PUT and returns its id.
func (e *env) submit(ffqn core.FunctionFqn, typ core.ComponentType, params string) core.ExecutionId {
	e.t.Helper()
	id, err := core.NewExecutionId(uint64(t0.UnixMilli()), rand.Reader)
	if err != nil {
		e.t.Fatal(err)
	}
	body := `{"ffqn":"` + ffqn.String() + `","params":` + params + `,"component_type":"` + string(typ) + `"}`
	e.do("PUT", "/v1/executions/"+id.String(), body).wantOk(http.StatusCreated, id.String())
	return id
}

// lockParams returns the JSON fields of a lock request for component typ.
func lockParams(typ core.ComponentType, expires core.Timestamp) map[string]any {
	return map[string]any{
		"component_id":    unmanagedComponent(typ),
		"deployment_id":   core.DeploymentId{},
		"executor_id":     testExecutor,
		"run_id":          testRun,
		"created_at":      t0,
		"lock_expires_at": expires,
		"retry_config":    json.RawMessage(`{"max_retries":0,"retry_exp_backoff":{"secs":0,"nanos":0}}`),
	}
}

// lock locks id at version 1 through the worker route.
func (e *env) lock(id core.ExecutionId, typ core.ComponentType) wire.LockedExecutionJSON {
	e.t.Helper()
	body := lockParams(typ, t0.Add(time.Minute))
	body["execution_id"], body["version"] = id, 1
	var out wire.LockedExecutionJSON
	e.do("POST", "/v1/worker/lock/one", body).want(http.StatusOK).decode(&out)
	return out
}

// appendBatch appends events at version through the worker route.
func (e *env) appendBatch(id core.ExecutionId, version core.Version, events ...core.ExecutionRequest) core.Version {
	e.t.Helper()
	batch := make([]core.AppendRequest, len(events))
	for i, ev := range events {
		batch[i] = core.AppendRequest{CreatedAt: t0, Event: ev}
	}
	var out wire.NextVersionJSON
	e.do("POST", "/v1/worker/append-batch", map[string]any{"execution_id": id, "version": version, "batch": batch}).
		want(http.StatusOK).decode(&out)
	return out.NextVersion
}

func okString(s string) core.ReturnValue {
	return core.RetOk(&core.WastValWithType{Type: "string", Value: json.RawMessage(`"` + s + `"`)})
}

// finish locks and finishes an activity with retval.
func (e *env) finish(id core.ExecutionId, rv core.ReturnValue) {
	e.t.Helper()
	e.lock(id, core.ComponentTypeActivity)
	e.appendBatch(id, 2, &core.Finished{Retval: rv})
}

func hist(h core.HistoryEvent) core.ExecutionRequest { return &core.HistoryEventRequest{Event: h} }

// workflowWithDelay returns a workflow blocked on a one-off join set with a
// delay expiring at t0+1h.
func (e *env) workflowWithDelay() (core.ExecutionId, core.DelayId) {
	e.t.Helper()
	id := e.submit(ffqnWorkflow, core.ComponentTypeWorkflow, "[]")
	e.lock(id, core.ComponentTypeWorkflow)
	js := mustJS("o:1")
	delay := core.NewDelayId(id, js, 1)
	e.appendBatch(id, 2,
		hist(&core.JoinSetCreate{JoinSetID: js}),
		hist(&core.JoinSetRequestEvent{JoinSetID: js, Request: &core.DelayRequest{DelayID: delay, ExpiresAt: t0.Add(time.Hour),
			ScheduleAt: core.ScheduleAt{Kind: "in", In: core.DurationOf(time.Hour)}}}),
		hist(&core.JoinNext{JoinSetID: js, RunExpiresAt: t0.Add(time.Minute)}),
	)
	return id, delay
}

// workflowWithChild returns a locked workflow with one created child of type childType.
func (e *env) workflowWithChild(childType core.ComponentType) (parent, child core.ExecutionId) {
	e.t.Helper()
	parent = e.submit(ffqnWorkflow, core.ComponentTypeWorkflow, "[]")
	e.lock(parent, core.ComponentTypeWorkflow)
	js := mustJS("g:1")
	child = parent.NextLevel(js)
	body := map[string]any{
		"execution_id": parent, "version": 2,
		"batch": []core.AppendRequest{
			{CreatedAt: t0, Event: hist(&core.JoinSetCreate{JoinSetID: js})},
			{CreatedAt: t0, Event: hist(&core.JoinSetRequestEvent{JoinSetID: js, Request: &core.ChildExecutionRequest{
				ChildExecutionID: core.ExecutionIdDerived{ExecutionId: child}, TargetFFQN: ffqnStub, Params: core.Params{}}})},
		},
		"children": []core.CreateRequest{{
			CreatedAt: t0, ExecutionID: child, FFQN: ffqnStub, Params: core.Params{}, Parent: &core.Parent{ExecutionID: parent, JoinSetID: js},
			ScheduledAt: t0, ComponentID: unmanagedComponent(childType), Metadata: core.ExecutionMetadata{},
		}},
	}
	e.do("POST", "/v1/worker/append-batch/create-children", body).want(http.StatusOK)
	return parent, child
}
