package httpapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/wire"
)

// schemaValidator checks JSON values against the JSON Schema subset the
// OpenAPI document uses ($ref, type, enum, const, pattern, format date-time,
// properties, required, additionalProperties, items, prefixItems,
// min/maxItems, minimum/maximum, oneOf, anyOf). An unknown keyword is an
// error, so the subset cannot silently ignore a constraint. It records which
// oneOf branch of a named schema each value matched.
type schemaValidator struct {
	schemas  map[string]any
	branches map[string]map[int]bool
}

var ignoredKeywords = map[string]bool{"description": true, "title": true, "contentMediaType": true}

func newSchemaValidator(t *testing.T, doc []byte) *schemaValidator {
	t.Helper()
	var d struct {
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&d); err != nil {
		t.Fatal(err)
	}
	return &schemaValidator{schemas: d.Components.Schemas, branches: map[string]map[int]bool{}}
}

func decodeJSONNumbers(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

func jsonType(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if strings.ContainsAny(v.String(), ".eE") {
			return "number"
		}
		return "integer"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func (v *schemaValidator) validate(schema any, val any, path string) error {
	s, ok := schema.(map[string]any)
	if !ok {
		return fmt.Errorf("%s: schema is %T", path, schema)
	}
	if r, ok := s["$ref"].(string); ok {
		name := strings.TrimPrefix(r, "#/components/schemas/")
		target, ok := v.schemas[name]
		if !ok {
			return fmt.Errorf("%s: unresolved $ref %s", path, r)
		}
		if alts, ok := target.(map[string]any)["oneOf"].([]any); ok {
			for i, alt := range alts {
				if v.validate(alt, val, path) == nil {
					if v.branches[name] == nil {
						v.branches[name] = map[int]bool{}
					}
					v.branches[name][i] = true
				}
			}
		}
		return v.validate(target, val, path+"<"+name+">")
	}
	for k, kv := range s {
		var err error
		switch k {
		case "type":
			types := []string{}
			switch t := kv.(type) {
			case string:
				types = append(types, t)
			case []any:
				for _, x := range t {
					types = append(types, x.(string))
				}
			}
			got := jsonType(val)
			if !slices.Contains(types, got) && !(got == "integer" && slices.Contains(types, "number")) {
				err = fmt.Errorf("%s: %s, want %v", path, got, types)
			}
		case "enum":
			found := false
			for _, e := range kv.([]any) {
				found = found || fmt.Sprint(e) == fmt.Sprint(val) && jsonType(e) == jsonType(val)
			}
			if !found {
				err = fmt.Errorf("%s: %v not in %v", path, val, kv)
			}
		case "const":
			if fmt.Sprint(kv) != fmt.Sprint(val) || jsonType(kv) != jsonType(val) {
				err = fmt.Errorf("%s: %v, want %v", path, val, kv)
			}
		case "pattern":
			if str, ok := val.(string); ok && !regexp.MustCompile(kv.(string)).MatchString(str) {
				err = fmt.Errorf("%s: %q does not match %s", path, str, kv)
			}
		case "format":
			if kv != "date-time" {
				err = fmt.Errorf("%s: unsupported format %v", path, kv)
			} else if str, ok := val.(string); ok {
				if _, perr := time.Parse(time.RFC3339Nano, str); perr != nil {
					err = fmt.Errorf("%s: %q is not a date-time", path, str)
				}
			}
		case "maxLength":
			lim, _ := kv.(json.Number).Int64()
			if str, ok := val.(string); ok && int64(utf8.RuneCountInString(str)) > lim {
				err = fmt.Errorf("%s: %d characters, more than maxLength %d", path, utf8.RuneCountInString(str), lim)
			}
		case "minimum", "maximum":
			if n, ok := val.(json.Number); ok {
				x, _ := n.Float64()
				lim, _ := kv.(json.Number).Float64()
				if (k == "minimum" && x < lim) || (k == "maximum" && x > lim) {
					err = fmt.Errorf("%s: %v outside %s %v", path, x, k, lim)
				}
			}
		case "required":
			if obj, ok := val.(map[string]any); ok {
				for _, r := range kv.([]any) {
					if _, ok := obj[r.(string)]; !ok {
						err = fmt.Errorf("%s: missing %s", path, r)
						break
					}
				}
			}
		case "properties":
			if obj, ok := val.(map[string]any); ok {
				props := kv.(map[string]any)
				for name, pv := range obj {
					if ps, ok := props[name]; ok {
						if err = v.validate(ps, pv, path+"."+name); err != nil {
							break
						}
					}
				}
			}
		case "additionalProperties":
			if obj, ok := val.(map[string]any); ok {
				props, _ := s["properties"].(map[string]any)
				for name, pv := range obj {
					if _, declared := props[name]; declared {
						continue
					}
					if kv == false {
						err = fmt.Errorf("%s: unexpected property %s", path, name)
						break
					}
					if sub, ok := kv.(map[string]any); ok {
						if err = v.validate(sub, pv, path+"."+name); err != nil {
							break
						}
					}
				}
			}
		case "items":
			if arr, ok := val.([]any); ok {
				for i, x := range arr {
					if err = v.validate(kv, x, path+"["+strconv.Itoa(i)+"]"); err != nil {
						break
					}
				}
			}
		case "prefixItems":
			if arr, ok := val.([]any); ok {
				for i, ps := range kv.([]any) {
					if i < len(arr) {
						if err = v.validate(ps, arr[i], path+"["+strconv.Itoa(i)+"]"); err != nil {
							break
						}
					}
				}
			}
		case "minItems", "maxItems":
			if arr, ok := val.([]any); ok {
				n, _ := strconv.Atoi(kv.(json.Number).String())
				if (k == "minItems" && len(arr) < n) || (k == "maxItems" && len(arr) > n) {
					err = fmt.Errorf("%s: %d items, %s %d", path, len(arr), k, n)
				}
			}
		case "oneOf", "anyOf":
			matched := 0
			var errs []string
			for _, alt := range kv.([]any) {
				if e := v.validate(alt, val, path); e == nil {
					matched++
				} else {
					errs = append(errs, e.Error())
				}
			}
			if matched == 0 || (k == "oneOf" && matched > 1) {
				err = fmt.Errorf("%s: %d of the %s alternatives match (%s)", path, matched, k, strings.Join(errs, "; "))
			}
		default:
			if !ignoredKeywords[k] {
				err = fmt.Errorf("%s: unsupported keyword %q", path, k)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// schemaEnv sends requests through an env and validates every JSON request
// body and JSON answer against the route's schemas in /openapi.json.
type schemaEnv struct {
	*env
	v   *schemaValidator
	doc map[string]any
	n   int
}

func (s *schemaEnv) routeOf(method, path string) *route {
	segs := strings.Split(strings.SplitN(path, "?", 2)[0], "/")
	for i := range routes {
		rt := &routes[i]
		rs := strings.Split(rt.path, "/")
		if rt.method != method || len(rs) != len(segs) {
			continue
		}
		match := true
		for j := range rs {
			match = match && (rs[j] == segs[j] || strings.HasPrefix(rs[j], "{"))
		}
		if match {
			return rt
		}
	}
	return nil
}

func (s *schemaEnv) operation(rt *route) map[string]any {
	return s.doc["paths"].(map[string]any)[rt.path].(map[string]any)[strings.ToLower(rt.method)].(map[string]any)
}

// call sends the request, checks the status and validates both bodies.
func (s *schemaEnv) call(method, path string, body any, status int) res {
	s.t.Helper()
	rt := s.routeOf(method, path)
	if rt == nil {
		s.t.Fatalf("%s %s: no route", method, path)
	}
	op := s.operation(rt)
	if body != nil {
		var raw []byte
		if str, ok := body.(string); ok {
			raw = []byte(str)
		} else {
			var err error
			if raw, err = core.MarshalJSON(body); err != nil {
				s.t.Fatal(err)
			}
		}
		val, err := decodeJSONNumbers(raw)
		if err != nil {
			s.t.Fatal(err)
		}
		schema := op["requestBody"].(map[string]any)["content"].(map[string]any)[contentTypeJSON].(map[string]any)["schema"]
		if err := s.v.validate(schema, val, "request"); err != nil {
			s.t.Fatalf("%s %s: request body does not match its schema: %v\n%s", method, path, err, raw)
		}
	}
	r := s.do(method, path, body).want(status)
	if ct := r.Header().Get("Content-Type"); ct == contentTypeJSON && r.Body.Len() > 0 {
		doc, ok := op["responses"].(map[string]any)[strconv.Itoa(status)].(map[string]any)
		if !ok {
			s.t.Fatalf("%s %s: status %d is not documented", method, path, status)
		}
		schema := doc["content"].(map[string]any)[contentTypeJSON].(map[string]any)["schema"]
		val, err := decodeJSONNumbers(r.Body.Bytes())
		if err != nil {
			s.t.Fatal(err)
		}
		if err := s.v.validate(schema, val, "answer"); err != nil {
			s.t.Fatalf("%s %s → %d: answer does not match its schema: %v\n%s", method, path, status, err, r.Body.String())
		}
		s.n++
	}
	return r
}

// TestSchemasValidateRealAnswers drives executions through every event,
// history event, response and state, and validates every request and answer
// against /openapi.json; every branch of the event schemas must be exercised.
func TestSchemasValidateRealAnswers(t *testing.T) {
	db := newMemDB(t)
	base := newEnv(t, db, func(o *Options) {
		o.Sweep = func(ctx context.Context, at core.Timestamp) (any, error) { return sweepOnce(ctx, db, at) }
		o.FollowWait = 50 * time.Millisecond
		o.MaxClockSkew, o.MaxEventAge = -1, -1 // event times up to hours from the clock
	})
	docBytes := base.do("GET", "/openapi.json", nil).want(http.StatusOK).Body.Bytes()
	var doc map[string]any
	if err := json.Unmarshal(docBytes, &doc); err != nil {
		t.Fatal(err)
	}
	s := &schemaEnv{env: base, v: newSchemaValidator(t, docBytes), doc: doc}
	ev := func(at core.Timestamp, r core.ExecutionRequest) core.AppendRequest {
		return core.AppendRequest{CreatedAt: at, Event: r}
	}
	h := func(e core.HistoryEvent) core.AppendRequest { return ev(t0, hist(e)) }
	lockBody := func(ct core.ComponentType, id core.ExecutionId, version core.Version, created core.Timestamp, maxRetries uint32) map[string]any {
		b := lockParams(ct, created.Add(time.Minute))
		b["created_at"], b["execution_id"], b["version"] = created, id, version
		b["retry_config"] = core.ComponentRetryConfig{MaxRetries: &maxRetries, RetryExpBackoff: core.DurationOf(time.Second)}
		return b
	}
	submit := func(f core.FunctionFqn, ct core.ComponentType) core.ExecutionId {
		id, err := core.NewExecutionId(uint64(t0.UnixMilli()), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		s.call("PUT", "/v1/executions/"+id.String(), `{"ffqn":"`+f.String()+`","params":[1,"a"],"component_type":"`+string(ct)+`"}`, http.StatusCreated)
		return id
	}
	var nv wire.NextVersionJSON
	appendBatch := func(id core.ExecutionId, version core.Version, batch ...core.AppendRequest) core.Version {
		s.call("POST", "/v1/worker/append-batch", wire.AppendBatchBody{Batch: batch, ExecutionID: id, Version: version}, http.StatusOK).decode(&nv)
		return nv.NextVersion
	}
	status := func(id core.ExecutionId) { s.call("GET", "/v1/executions/"+id.String()+"/status", nil, http.StatusOK) }

	// A workflow writing every history event.
	wf := submit(ffqnWorkflow, core.ComponentTypeWorkflow)
	status(wf)
	s.call("POST", "/v1/worker/lock/one", lockBody(core.ComponentTypeWorkflow, wf, 1, t0, 0), http.StatusOK)
	status(wf)
	var ids core.IdCounter
	g1 := ids.NextGeneratedJoinSet()
	sleep, _ := ids.NextOneOffJoinSet("sleep")
	named, _ := core.NamedJoinSetId("signals")
	d1, d2 := core.NewDelayId(wf, sleep, 1), core.NewDelayId(wf, named, 1)
	v := appendBatch(wf, 2,
		h(&core.Persist{Value: core.Bytes{0, 0, 0, 0, 0, 0, 0, 7}, Kind: core.PersistKind{Type: "random_u64", MaxInclusive: 10}}),
		h(&core.Persist{Value: core.Bytes("abc"), Kind: core.PersistKind{Type: "random_string", MinLength: 1, MaxLengthExclusive: 10}}),
		h(&core.Persist{Value: core.Bytes(make([]byte, 16)), Kind: core.PersistKind{Type: "execution_id"}}),
		h(&core.JoinSetCreate{JoinSetID: g1}), h(&core.JoinSetCreate{JoinSetID: sleep}), h(&core.JoinSetCreate{JoinSetID: named}),
		h(&core.JoinSetRequestEvent{JoinSetID: sleep, Request: &core.DelayRequest{DelayID: d1, ExpiresAt: t0.Add(time.Hour), ScheduleAt: core.ScheduleAt{Kind: "in", In: core.DurationOf(time.Hour)}}}),
		h(&core.JoinSetRequestEvent{JoinSetID: named, Request: &core.DelayRequest{DelayID: d2, ExpiresAt: t0.Add(time.Hour), ScheduleAt: core.ScheduleAt{Kind: "at", At: t0.Add(time.Hour)}}}),
		h(&core.JoinNextTry{JoinSetID: g1, Outcome: core.JoinNextTryPending}),
		h(&core.JoinNextTooMany{JoinSetID: g1, RequestedFFQN: &ffqnActivity}),
		h(&core.Stub{TargetExecutionID: core.ExecutionIdDerived{ExecutionId: core.NewChildExecutionId(wf, named, 9)}, RetvalHash: core.RetOk(nil).StubRetValHash(), Result: core.HistoryResult{Err: "execution_not_found"}}),
	)
	var children []core.CreateRequest
	var batch []core.AppendRequest
	kids := map[string]core.ExecutionId{}
	for _, k := range []struct {
		name string
		ct   core.ComponentType
	}{{"failing", core.ComponentTypeActivity}, {"crashing", core.ComponentTypeActivity}, {"stub", core.ComponentTypeActivityStub}} {
		c := ids.NextChild(wf, g1)
		kids[k.name] = c
		req := &core.ChildExecutionRequest{ChildExecutionID: core.ExecutionIdDerived{ExecutionId: c}, TargetFFQN: ffqnActivity, Params: core.Params{}}
		batch = append(batch, h(&core.JoinSetRequestEvent{JoinSetID: g1, Request: req}))
		ids.Observe(&core.JoinSetRequestEvent{JoinSetID: g1, Request: req})
		children = append(children, core.CreateRequest{CreatedAt: t0, ExecutionID: c, FFQN: ffqnActivity, Params: core.Params{},
			Parent: &core.Parent{ExecutionID: wf, JoinSetID: g1}, ScheduledAt: t0, ComponentID: unmanagedComponent(k.ct), Metadata: core.ExecutionMetadata{"k": "v"}})
	}
	scheduled, _ := core.NewExecutionId(uint64(t0.UnixMilli()), rand.Reader)
	batch = append(batch, h(&core.Schedule{ExecutionID: scheduled, ScheduleAt: core.ScheduleAt{Kind: "now"}}))
	children = append(children, core.CreateRequest{CreatedAt: t0, ExecutionID: scheduled, FFQN: ffqnActivity, Params: core.Params{},
		ScheduledAt: t0.Add(time.Hour), ComponentID: unmanagedComponent(core.ComponentTypeActivity), Metadata: core.ExecutionMetadata{}, ScheduledBy: &wf})
	s.call("POST", "/v1/worker/append-batch/create-children", wire.CreateChildrenBody{AppendBatchBody: wire.AppendBatchBody{Batch: batch, ExecutionID: wf, Version: v}, Children: children}, http.StatusOK).decode(&nv)
	v = appendBatch(wf, nv.NextVersion, h(&core.JoinNext{JoinSetID: g1, RunExpiresAt: t0}))
	status(wf) // blocked

	// Children: a temporary failure then an error, an execution failure, a stub.
	fail := kids["failing"]
	s.call("POST", "/v1/worker/lock/one", lockBody(core.ComponentTypeActivity, fail, 1, t0, 1), http.StatusOK)
	detail := "connection reset"
	s.call("POST", "/v1/worker/append", wire.AppendBody{ExecutionID: fail, Version: 2, Req: ev(t0, &core.TemporarilyFailed{BackoffExpiresAt: t0.Add(time.Second), Reason: "io", Detail: &detail,
		HTTPClientTraces: &[]core.HttpClientTrace{{Req: core.RequestTrace{SentAt: t0, URI: "https://example.com", Method: "GET"}, Resp: &core.ResponseTrace{FinishedAt: t0, Status: core.StatusResult{Code: 503}}},
			{Req: core.RequestTrace{SentAt: t0, URI: "https://example.com", Method: "POST"}}}})}, http.StatusOK)
	s.call("POST", "/v1/worker/lock/one", lockBody(core.ComponentTypeActivity, fail, 3, t0.Add(2*time.Second), 1), http.StatusOK)
	respond := func(id core.ExecutionId, version core.Version, rv core.ReturnValue) {
		s.call("POST", "/v1/worker/append-batch/respond-to-parent", wire.RespondToParentBody{
			Events: core.AppendEventsToExecution{ExecutionID: id, Version: version, Batch: []core.AppendRequest{ev(t0, &core.Finished{Retval: rv})}},
			Response: core.AppendResponseToExecution{ParentExecutionID: wf, CreatedAt: t0, JoinSetID: g1, ChildExecutionID: core.ExecutionIdDerived{ExecutionId: id},
				FinishedVersion: version, Result: rv}}, http.StatusOK)
	}
	respond(fail, 4, core.RetErr(&core.WastValWithType{Type: "string", Value: json.RawMessage(`"boom"`)}))
	crash := kids["crashing"]
	s.call("POST", "/v1/worker/lock/one", lockBody(core.ComponentTypeActivity, crash, 1, t0, 0), http.StatusOK)
	reason := "trap"
	respond(crash, 2, core.RetFailure(core.FailureUncategorized, &reason, &detail))
	s.call("PUT", "/v1/executions/"+kids["stub"].String()+"/stub", `{"ok":null}`, http.StatusOK)
	s.call("GET", "/v1/worker/executions/"+wf.String()+"/next-responses", nil, http.StatusOK)

	// Delays: one cancelled ({"Err":null}), one fired by the sweep ({"Ok":null}).
	s.call("PUT", "/v1/delays/"+d2.String()+"/cancel", nil, http.StatusOK)
	s.clock.Set(t0.Add(2 * time.Hour)) // a sweep runs at the server's time
	s.call("POST", "/v1/worker/sweep", wire.SweepBody{At: new(t0.Add(2 * time.Hour))}, http.StatusOK)
	s.clock.Set(t0)

	// Activities through unlock, pause, upgrade, timeout, cancellation.
	act := submit(ffqnActivity, core.ComponentTypeActivity)
	s.call("POST", "/v1/worker/lock/one", lockBody(core.ComponentTypeActivity, act, 1, t0, 2), http.StatusOK)
	status(act) // locked
	s.call("POST", "/v1/worker/append", wire.AppendBody{ExecutionID: act, Version: 2, Req: ev(t0, &core.Unlocked{UnlockedAt: t0, Reason: "released"})}, http.StatusOK)
	s.call("PUT", "/v1/executions/"+act.String()+"/pause", nil, http.StatusOK)
	status(act) // paused, pending
	s.call("PUT", "/v1/executions/"+act.String()+"/unpause", nil, http.StatusOK)
	s.call("PUT", "/v1/executions/"+act.String()+"/upgrade", map[string]any{"old": core.ComponentDigest{}, "new": testDigest, "skip_determinism_check": true}, http.StatusOK)
	s.call("POST", "/v1/worker/lock/one", lockBody(core.ComponentTypeActivity, act, 6, t0, 2), http.StatusOK)
	s.clock.Set(t0.Add(3 * time.Hour))
	s.call("POST", "/v1/worker/sweep", wire.SweepBody{}, http.StatusOK) // temporarily timed out
	s.clock.Set(t0)
	s.call("POST", "/v1/worker/lock/one", lockBody(core.ComponentTypeActivity, act, 8, t0.Add(4*time.Hour), 2), http.StatusOK)
	s.call("POST", "/v1/worker/append", wire.AppendBody{ExecutionID: act, Version: 9, Req: ev(t0, &core.Finished{Retval: okString("x")})}, http.StatusOK)
	cancelled := submit(ffqnActivity, core.ComponentTypeActivity)
	s.call("PUT", "/v1/executions/"+cancelled.String()+"/cancel", nil, http.StatusOK)
	status(cancelled) // cancelling, pending
	lockedCancel := submit(ffqnActivity, core.ComponentTypeActivity)
	s.call("POST", "/v1/worker/lock/one", lockBody(core.ComponentTypeActivity, lockedCancel, 1, t0, 0), http.StatusOK)
	s.call("PUT", "/v1/executions/"+lockedCancel.String()+"/cancel", nil, http.StatusOK)
	status(lockedCancel) // cancelling, locked
	for _, pause := range []bool{true, false} {
		w := submit(ffqnCancel, core.ComponentTypeWorkflow)
		s.call("POST", "/v1/worker/lock/one", lockBody(core.ComponentTypeWorkflow, w, 1, t0, 0), http.StatusOK)
		js := core.GeneratedJoinSetId(1)
		appendBatch(w, 2, h(&core.JoinSetCreate{JoinSetID: js}),
			h(&core.JoinSetRequestEvent{JoinSetID: js, Request: &core.DelayRequest{DelayID: core.NewDelayId(w, js, 1), ExpiresAt: t0.Add(time.Hour), ScheduleAt: core.ScheduleAt{Kind: "now"}}}),
			h(&core.JoinNext{JoinSetID: js, RunExpiresAt: t0, Closing: true}))
		if pause {
			s.call("PUT", "/v1/executions/"+w.String()+"/pause", nil, http.StatusOK)
		} else {
			s.call("PUT", "/v1/executions/"+w.String()+"/cancel", nil, http.StatusOK)
		}
		status(w) // paused / cancelling, blocked
	}

	// Every read of every execution.
	s.call("GET", "/v1/worker/expired-timers?at="+t0.Add(10*time.Hour).String(), nil, http.StatusOK)
	s.call("GET", "/v1/worker/cancelling", nil, http.StatusOK)
	var all []core.ExecutionWithState
	s.call("GET", "/v1/executions?show_derived=true&length=100", nil, http.StatusOK).decode(&all)
	for _, x := range all {
		id := x.ExecutionID.String()
		s.call("GET", "/v1/worker/executions/"+id+"/log", nil, http.StatusOK)
		s.call("GET", "/v1/worker/executions/"+id+"/history", nil, http.StatusOK)
		s.call("GET", "/v1/worker/executions/"+id+"/next-responses", nil, http.StatusOK)
		s.call("GET", "/v1/executions/"+id+"/events?length=100", nil, http.StatusOK)
		s.call("GET", "/v1/executions/"+id+"/responses", nil, http.StatusOK)
		s.call("GET", "/v1/executions/"+id+"/history", nil, http.StatusOK)
		status(x.ExecutionID)
		if x.PendingState.State == core.StateFinished {
			s.call("GET", "/v1/worker/executions/"+id+"/result", nil, http.StatusOK)
			s.call("GET", "/v1/executions/"+id, nil, http.StatusOK)
		} else {
			s.call("GET", "/v1/worker/executions/"+id+"/result", nil, http.StatusTooEarly)
		}
	}
	s.call("POST", "/v1/worker/lock/pending-by-ffqns", map[string]any{"component_id": unmanagedComponent(core.ComponentTypeActivity),
		"deployment_id": core.DeploymentId{}, "executor_id": testExecutor, "run_id": testRun, "lock_expires_at": t0.Add(20 * time.Hour),
		"created_at": t0.Add(10 * time.Hour), "retry_config": core.RetryConfigZero(), "batch_size": 5, "ffqns": []core.FunctionFqn{ffqnActivity}}, http.StatusOK)
	s.call("POST", "/v1/worker/append", wire.AppendBody{ExecutionID: wf, Version: 1, Req: ev(t0, &core.Paused{})}, http.StatusConflict)
	if s.n < 100 {
		t.Fatalf("only %d answers validated", s.n)
	}

	// A batch of eager starts: one created locked, one created pending
	// (scheduled later: the lock does not take it), an id that exists.
	lk := lockParams(core.ComponentTypeActivity, t0.Add(time.Minute))
	lk["batch_size"], lk["ffqns"] = 3, []core.FunctionFqn{ffqnActivity}
	startReq := func(id core.ExecutionId, at core.Timestamp) core.CreateRequest {
		return core.CreateRequest{CreatedAt: t0, ExecutionID: id, FFQN: ffqnActivity, Params: core.Params{}, ScheduledAt: at,
			ComponentID: unmanagedComponent(core.ComponentTypeActivity), Metadata: core.ExecutionMetadata{}}
	}
	newStartID := func() core.ExecutionId {
		id, err := core.NewExecutionId(uint64(t0.UnixMilli()), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	var many wire.CreateLockedManyAnswer
	s.call("POST", wire.PathWorkerCreateLocked, map[string]any{"requests": []core.CreateRequest{
		startReq(newStartID(), t0), startReq(newStartID(), t0.Add(time.Hour)), startReq(fail, t0)}, "lock": lk}, http.StatusOK).decode(&many)
	if len(many.Results) != 3 || many.Results[0].Locked == nil || many.Results[1].Locked != nil || many.Results[1].NextVersion == nil || many.Results[2].Status != http.StatusConflict {
		t.Errorf("create-locked batch answered %+v, want locked, pending, conflict", many.Results)
	}

	// Every branch of the event schemas was exercised.
	for name, want := range map[string]int{"HistoryEvent": 8, "ExecutionRequest": 9, "JoinSetRequest": 2, "JoinSetResponse": 2,
		"ReturnValue": 3, "UnitResult": 2, "PendingState": 6, "ScheduleAt": 3, "PersistKind": 3} {
		if got := len(s.v.branches[name]); got != want {
			t.Errorf("%s: %d of %d alternatives seen in real answers (%v)", name, got, want, s.v.branches[name])
		}
	}

	// The schemas reject what core would not write.
	for _, bad := range []struct{ schema, value string }{
		{"HistoryEvent", `{"type":"join_next","join_set_id":"g:1","run_expires_at":"2026-01-01T00:00:00Z","requested_ffqn":null}`}, // closing missing
		{"HistoryEvent", `{"type":"sleep","join_set_id":"g:1"}`},
		{"ReturnValue", `{"Ok":null}`},
		{"UnitResult", `{"ok":null}`},
		{"ExecutionRequest", `{"paused":null,"finished":{}}`},
		{"ExecutionRequest", `"finished"`},
		{"JoinSetId", `"x:1"`},
		{"LockedExecution", `{"execution_id":"E_01KJ3ZC4Q5W8X7V6T5R4Q3P2N1"}`},
		{"Timestamp", `"yesterday"`},
		{"PendingState", `{"status":"paused","Locked":{"locked_by":{"executor_id":"Exr_01KJ3ZC4Q5W8X7V6T5R4Q3P2N1","run_id":"Run_01KJ3ZC4Q5W8X7V6T5R4Q3P2N1"},"lock_expires_at":"2026-01-01T00:00:00Z"}}`},
	} {
		val, err := decodeJSONNumbers([]byte(bad.value))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.v.validate(ref(bad.schema), val, bad.schema); err == nil {
			t.Errorf("%s accepts %s", bad.schema, bad.value)
		}
	}
	names := make([]string, 0, len(s.v.schemas))
	for n := range s.v.schemas {
		names = append(names, n)
	}
	sort.Strings(names)
	t.Logf("%d answers validated against %d schemas", s.n, len(names))
}
