package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/store/mem"
)

// newMemDB returns the in-memory reference store.
func newMemDB(t *testing.T) core.DbExternalApi {
	svc := store.New(mem.New(), store.Options{Clock: &testClock{now: t0}, PollInterval: 10 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { _ = svc.Close() })
	return svc
}

// sweepOnce backs Options.Sweep in the tests.
func sweepOnce(ctx context.Context, db core.DbConnection, at core.Timestamp) (any, error) {
	return store.Sweep(ctx, db, at)
}

func TestRoutesOnMemStore(t *testing.T) {
	runRouteTests(t, newMemDB)
}

// sampleValues fill path wildcards in the route inventory tests.
var sampleValues = map[string]string{
	"execution_id":  "E_01KJ3ZC4Q5W8X7V6T5R4Q3P2N1",
	"delay_id":      "Delay_01KJ3ZC4Q5W8X7V6T5R4Q3P2N1.o:1_1",
	"name":          "approve",
	"deployment_id": "Dep_01KJ3ZC4Q5W8X7V6T5R4Q3P2N1",
	"digest":        "sha256:" + strings.Repeat("0", 64),
}

func samplePath(rt *route) string {
	p := rt.path
	for _, name := range rt.pathParams() {
		p = strings.Replace(p, "{"+name+"}", sampleValues[name], 1)
	}
	return p
}

func TestRouteTable(t *testing.T) {
	s := New(newMemDB(t), nil, Options{Authorizer: AllowAll()}).(*server)
	t.Run("EveryEntryIsRegisteredOnTheMux", func(t *testing.T) {
		for i := range routes {
			rt := &routes[i]
			req := httptest.NewRequest(rt.method, samplePath(rt), nil)
			if _, pattern := s.mux.Handler(req); pattern != rt.pattern() {
				t.Errorf("%s %s: mux pattern %q, want %q", rt.method, samplePath(rt), pattern, rt.pattern())
			}
		}
	})
	t.Run("EntriesAreUniqueAndComplete", func(t *testing.T) {
		ops, patterns := map[string]bool{}, map[string]bool{}
		for _, rt := range routes {
			if ops[rt.op] || patterns[rt.pattern()] {
				t.Errorf("duplicate %s / %s", rt.op, rt.pattern())
			}
			ops[rt.op], patterns[rt.pattern()] = true, true
			if rt.handle == nil || rt.summary == "" || rt.tag == "" || rt.format == 0 || len(rt.resp) == 0 {
				t.Errorf("%s: incomplete entry", rt.pattern())
			}
			for _, name := range rt.pathParams() {
				if _, ok := sampleValues[name]; !ok || pathParamDesc[name] == "" {
					t.Errorf("%s: path parameter %q lacks a sample value or description", rt.pattern(), name)
				}
			}
		}
	})
	t.Run("EscapedSlashesStayInOneSegment", func(t *testing.T) {
		req := httptest.NewRequest("GET", "/v1/executions/E_01KJ3ZC4Q5W8X7V6T5R4Q3P2N1.n:a%2Fb_1/status", nil)
		if _, pattern := s.mux.Handler(req); pattern != "GET /v1/executions/{execution_id}/status" {
			t.Fatalf("pattern %q", pattern)
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/executions/E_01KJ3ZC4Q5W8X7V6T5R4Q3P2N1.n:a%2Fb_x/status", nil))
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `n:a/b_x`) {
			t.Fatalf("status %d body %s", rec.Code, rec.Body.String())
		}
	})
}

func TestOpenAPI(t *testing.T) {
	e := newEnv(t, newMemDB(t))
	r := e.do("GET", "/openapi.json", nil).want(http.StatusOK)
	var doc struct {
		OpenAPI    string                               `json:"openapi"`
		Paths      map[string]map[string]map[string]any `json:"paths"`
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	r.decode(&doc)
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi %q", doc.OpenAPI)
	}
	t.Run("EveryRouteIsDocumented", func(t *testing.T) {
		for _, rt := range routes {
			op, ok := doc.Paths[rt.path][strings.ToLower(rt.method)]
			if !ok {
				t.Errorf("%s is not documented", rt.pattern())
				continue
			}
			if op["operationId"] != rt.op {
				t.Errorf("%s: operationId %v", rt.pattern(), op["operationId"])
			}
			declared := map[string]bool{}
			params, _ := op["parameters"].([]any)
			for _, p := range params {
				pm := p.(map[string]any)
				if pm["in"] == "path" {
					declared[pm["name"].(string)] = true
				}
			}
			for _, name := range rt.pathParams() {
				if !declared[name] {
					t.Errorf("%s: path parameter %s not declared", rt.pattern(), name)
				}
			}
			responses, _ := op["responses"].(map[string]any)
			for _, want := range rt.resp {
				if _, ok := responses[strconv.Itoa(want.status)]; !ok {
					t.Errorf("%s: response %d not documented", rt.pattern(), want.status)
				}
			}
			if rt.body != "" && op["requestBody"] == nil {
				t.Errorf("%s: request body not documented", rt.pattern())
			}
		}
	})
	t.Run("NothingElseIsDocumented", func(t *testing.T) {
		n := 0
		for path, item := range doc.Paths {
			for method := range item {
				n++
				found := false
				for _, rt := range routes {
					found = found || (rt.path == path && strings.ToLower(rt.method) == method)
				}
				if !found {
					t.Errorf("%s %s is documented but not routed", method, path)
				}
			}
		}
		if n != len(routes) {
			t.Errorf("%d documented operations, %d routes", n, len(routes))
		}
	})
	t.Run("EveryReferenceResolves", func(t *testing.T) {
		var walk func(v any)
		walk = func(v any) {
			switch v := v.(type) {
			case map[string]any:
				for k, x := range v {
					if k == "$ref" {
						name := strings.TrimPrefix(x.(string), "#/components/schemas/")
						if _, ok := doc.Components.Schemas[name]; !ok {
							t.Errorf("unresolved $ref %s", x)
						}
					}
					walk(x)
				}
			case []any:
				for _, x := range v {
					walk(x)
				}
			}
		}
		var all any
		_ = json.Unmarshal(r.Body.Bytes(), &all)
		walk(all)
	})
	t.Run("UndocumentedPathsAre404JSON", func(t *testing.T) {
		for _, p := range []string{"/v1", "/v1/", "/v2/executions", "/openapi.yaml", "/v1/worker", "/v1/worker/lock",
			"/v1/executions/E_01KJ3ZC4Q5W8X7V6T5R4Q3P2N1/nope", "/v1/executions/E_01KJ3ZC4Q5W8X7V6T5R4Q3P2N1/status/extra",
			"/v1/executions/", "/v1/delays/Delay_01KJ3ZC4Q5W8X7V6T5R4Q3P2N1.o:1_1"} {
			if _, ok := doc.Paths[p]; ok {
				t.Errorf("%s is documented", p)
			}
			e.do("GET", p, nil).wantErr(http.StatusNotFound, "not found")
		}
	})
	t.Run("WrongMethodIs405JSONWithAllow", func(t *testing.T) {
		r := e.do("DELETE", "/v1/executions/E_01KJ3ZC4Q5W8X7V6T5R4Q3P2N1", nil).wantErr(http.StatusMethodNotAllowed, "method not allowed")
		if allow := r.Header().Get("Allow"); !strings.Contains(allow, "GET") || !strings.Contains(allow, "PUT") {
			t.Fatalf("Allow=%q", allow)
		}
	})
}

func TestAuth(t *testing.T) {
	db := newMemDB(t)
	serve := func(auth Authorizer, hdr ...string) *httptest.ResponseRecorder {
		h := New(db, nil, Options{Authorizer: auth})
		req := httptest.NewRequest("GET", "/v1/execution-id", nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	deny := func(t *testing.T, rec *httptest.ResponseRecorder) {
		t.Helper()
		if rec.Code != http.StatusUnauthorized || rec.Header().Get("WWW-Authenticate") != "Bearer" || rec.Body.String() != unauthorizedBody {
			t.Fatalf("status %d, WWW-Authenticate %q, body %q", rec.Code, rec.Header().Get("WWW-Authenticate"), rec.Body.String())
		}
	}
	token := BearerToken("s3cret")
	t.Run("MissingHeaderIs401", func(t *testing.T) { deny(t, serve(token)) })
	t.Run("WrongTokenIs401", func(t *testing.T) { deny(t, serve(token, "Authorization", "Bearer nope")) })
	t.Run("OtherSchemeIs401", func(t *testing.T) { deny(t, serve(token, "Authorization", "Basic s3cret")) })
	t.Run("MalformedIs401", func(t *testing.T) { deny(t, serve(token, "Authorization", "Bearers3cret")) })
	t.Run("CorrectTokenPasses", func(t *testing.T) {
		if rec := serve(token, "Authorization", "bearer  s3cret "); rec.Code != http.StatusOK {
			t.Fatalf("status %d", rec.Code)
		}
	})
	t.Run("EmptyTokenAcceptsNothing", func(t *testing.T) { deny(t, serve(BearerToken(""), "Authorization", "Bearer ")) })
	t.Run("NilAuthorizerFailsClosed", func(t *testing.T) { deny(t, serve(nil)) })
	t.Run("AllowAllPasses", func(t *testing.T) {
		if rec := serve(AllowAll()); rec.Code != http.StatusOK {
			t.Fatalf("status %d", rec.Code)
		}
	})
	t.Run("OpenAPIIsProtectedToo", func(t *testing.T) {
		h := New(db, nil, Options{Authorizer: token})
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/openapi.json", nil))
		deny(t, rec)
	})
}

// failingDB fails GetPendingState with an unclassified error.
type failingDB struct{ core.DbExternalApi }

func (failingDB) GetPendingState(context.Context, core.ExecutionId) (core.ExecutionWithState, error) {
	return core.ExecutionWithState{}, errors.New("disk on fire")
}

// unavailableDB fails GetPendingState as the store does when its retry
// loop gives up (contention or throttling that outlasted every attempt).
type unavailableDB struct{ core.DbExternalApi }

func (unavailableDB) GetPendingState(ctx context.Context, _ core.ExecutionId) (core.ExecutionWithState, error) {
	return core.ExecutionWithState{}, store.Retry(ctx, "test: read", 1, func(int) error {
		return store.Again(errors.New("throttled"))
	})
}

func TestStoreGivingUpIs503WithRetryAfter(t *testing.T) {
	e := newEnv(t, unavailableDB{newMemDB(t)})
	r := e.do("GET", "/v1/executions/E_01KJ3ZC4Q5W8X7V6T5R4Q3P2N1/status", nil)
	r.wantErr(http.StatusServiceUnavailable, "temporarily unavailable, retry later")
	if got := r.Header().Get("Retry-After"); got != "1" {
		t.Fatalf("Retry-After=%q, want 1", got)
	}
	if status, _ := errorStatus(fmt.Errorf("dynamo: update gave up: %w: %w", core.ErrUnavailable, core.ErrConflict)); status != http.StatusServiceUnavailable {
		t.Fatalf("a give-up whose last error is a conflict maps to %d, want 503", status)
	}
}

// panickingDB panics in GetPendingState.
type panickingDB struct{ core.DbExternalApi }

func (panickingDB) GetPendingState(context.Context, core.ExecutionId) (core.ExecutionWithState, error) {
	panic("boom")
}

func TestPanicsBecome500(t *testing.T) {
	buf := &syncBuffer{}
	e := newEnv(t, panickingDB{newMemDB(t)}, func(o *Options) { o.Logger = slog.New(slog.NewJSONHandler(buf, nil)) })
	e.do("GET", "/v1/executions/E_01KJ3ZC4Q5W8X7V6T5R4Q3P2N1/status", nil).wantErr(http.StatusInternalServerError, "internal server error")
	if !strings.Contains(buf.String(), `"msg":"handler panicked"`) || !strings.Contains(buf.String(), `"status":500`) {
		t.Fatalf("logs %s", buf.String())
	}
}

// logLines parses JSON log lines.
func logLines(t *testing.T, buf *syncBuffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(buf.String()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func testLogging(t *testing.T, newDB func(t *testing.T) core.DbExternalApi) {
	buf := &syncBuffer{}
	logger := slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	db := newDB(t)
	e := newEnv(t, db, func(o *Options) { o.Logger = logger })
	id := e.submit(ffqnActivity, core.ComponentTypeActivity, "[]")
	t.Run("AccessLogCarriesRequestAndExecutionIDs", func(t *testing.T) {
		r := e.do("PUT", "/v1/executions/"+id.String()+"/pause", nil, "X-Request-Id", "req-abc").want(http.StatusOK)
		if r.Header().Get(headerRequestID) != "req-abc" {
			t.Fatalf("X-Request-Id=%q", r.Header().Get(headerRequestID))
		}
		found := false
		for _, l := range logLines(t, buf) {
			if l["msg"] == "http request" && l[logKeyRequestID] == "req-abc" {
				found = l[logKeyExecutionID] == id.String() && l[logKeyStatus] == float64(200) &&
					l[logKeyRoute] == "PUT /v1/executions/{execution_id}/pause"
			}
		}
		if !found {
			t.Fatalf("no matching access log line in\n%s", buf.String())
		}
	})
	t.Run("RequestIDIsGeneratedWhenAbsentOrInvalid", func(t *testing.T) {
		for _, hdr := range [][]string{nil, {"X-Request-Id", "bad id with spaces"}} {
			r := e.do("GET", "/v1/execution-id", nil, hdr...)
			if got := r.Header().Get(headerRequestID); !strings.HasPrefix(got, "req-") || len(got) != 24 {
				t.Fatalf("X-Request-Id=%q", got)
			}
		}
	})
	t.Run("UnclassifiedErrorsAre500AndLogged", func(t *testing.T) {
		e2 := newEnv(t, failingDB{db}, func(o *Options) { o.Logger = logger })
		e2.do("GET", "/v1/executions/"+id.String()+"/status", nil, "X-Request-Id", "req-fire").wantErr(http.StatusInternalServerError, "internal server error")
		found := false
		for _, l := range logLines(t, buf) {
			found = found || (l["msg"] == "request failed" && l[logKeyRequestID] == "req-fire" && l[logKeyErr] == "disk on fire" &&
				l[logKeyExecutionID] == id.String() && l["level"] == "ERROR")
		}
		if !found {
			t.Fatalf("no error log line in\n%s", buf.String())
		}
	})
}

// fakeDeployments serves deployment data in memory on top of any store, so
// the route suite can cover the deployment-dependent routes on backends that
// do not store deployments yet.
type fakeDeployments struct {
	core.DbExternalApi
	mu      sync.Mutex
	dep     *core.DeploymentRecord
	comps   []core.DeploymentComponentDetail
	sources map[string]core.ContentDigest
}

func newFakeDeployments(db core.DbExternalApi) *fakeDeployments {
	return &fakeDeployments{DbExternalApi: db, sources: map[string]core.ContentDigest{}}
}

// addDeployment installs an active deployment with an activity component
// (add, a non-submittable extension and a -schedule extension) and a stub.
func (f *fakeDeployments) addDeployment(t *testing.T) core.DeploymentId {
	t.Helper()
	dep, err := core.ParseDeploymentId("Dep_01KJ3Z8R2H7Y6X5W4V3T2S1R0Q")
	if err != nil {
		t.Fatal(err)
	}
	get, sched := "get", "schedule"
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dep = &core.DeploymentRecord{DeploymentID: dep, Digest: core.ContentDigestOf([]byte("toml")), CreatedAt: t0,
		Status: core.DeploymentActive, DeploymentToml: "[[activity]]\n",
		Files: []core.DeploymentFileRecord{{Path: "add.js", Digest: core.ContentDigestOf([]byte("js")), Size: 2}}}
	f.comps = []core.DeploymentComponentDetail{
		{ComponentID: core.ComponentId{ComponentType: core.ComponentTypeActivityStub, Name: "stub", ComponentDigest: core.ComponentDigest{Digest: core.SHA256Digest([]byte("stub"))}},
			Exports: []core.PersistedFunctionMetadata{{FFQN: ffqnStub, ReturnType: "result<string>", Submittable: false}}},
		{ComponentID: core.ComponentId{ComponentType: core.ComponentTypeActivity, Name: "add", ComponentDigest: testDigest},
			Exports: []core.PersistedFunctionMetadata{
				{FFQN: ffqnActivity, ParameterTypes: []core.PersistedParameterType{{Name: "a", WitType: "u64"}}, ReturnType: "result<u64>", Submittable: true},
				{FFQN: mustFFQN("testing:integration/activity.internal"), ReturnType: "result", Extension: &get},
				{FFQN: mustFFQN("testing:integration-obelisk-schedule/activity.add-schedule"), ReturnType: "result<execution-id>", Extension: &sched, Submittable: true},
			},
			Files: []core.DeploymentComponentFileDetail{{File: core.DeploymentFileRecord{Path: "add.js", Digest: core.ContentDigestOf([]byte("js")), Size: 2}, Role: core.RoleJsEntrypoint}}},
	}
	return dep
}

func (f *fakeDeployments) GetCurrentDeployment(context.Context) (core.DeploymentRecord, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dep == nil {
		return core.DeploymentRecord{}, core.ErrNotFound
	}
	return *f.dep, nil
}

func (f *fakeDeployments) GetDeployment(_ context.Context, id core.DeploymentId) (core.DeploymentRecord, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dep == nil || f.dep.DeploymentID != id {
		return core.DeploymentRecord{}, core.ErrNotFound
	}
	return *f.dep, nil
}

func (f *fakeDeployments) ListDeploymentComponents(_ context.Context, id core.DeploymentId) ([]core.DeploymentComponentDetail, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dep == nil || f.dep.DeploymentID != id {
		return nil, nil
	}
	return f.comps, nil
}

func (f *fakeDeployments) GetDeploymentComponentWit(_ context.Context, id core.DeploymentId, d core.ComponentDigest) (string, error) {
	if f.dep == nil || f.dep.DeploymentID != id || d != testDigest {
		return "", core.ErrNotFound
	}
	return "package testing:integration;", nil
}

func (f *fakeDeployments) ListDeploymentStates(context.Context, core.Timestamp, core.Pagination[*core.DeploymentId], bool, core.DeploymentExecutionCounts) ([]core.DeploymentState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dep == nil {
		return nil, nil
	}
	d := f.dep
	return []core.DeploymentState{{DeploymentID: d.DeploymentID, Digest: d.Digest, Pending: 2, CreatedAt: d.CreatedAt, Status: d.Status}}, nil
}

func (f *fakeDeployments) ResolveSourceDigest(_ context.Context, _ core.ComponentDigest, file string) (core.ContentDigest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, ok := f.sources[file]
	if !ok {
		return core.ContentDigest{}, core.ErrNotFound
	}
	return d, nil
}
