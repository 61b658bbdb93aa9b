package httpapi

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/stela-dev/stela/core"
)

// GET /openapi.json
func (s *server) openapi(c *call) error {
	c.w.Header().Set("Content-Type", contentTypeJSON)
	c.w.WriteHeader(http.StatusOK)
	_, _ = c.w.Write(s.openapiDoc)
	return nil
}

// buildOpenAPI renders the OpenAPI 3.1 document of the route table.
func buildOpenAPI(table []route) ([]byte, error) {
	paths := map[string]map[string]any{}
	for i := range table {
		rt := &table[i]
		item := paths[rt.path]
		if item == nil {
			item = map[string]any{}
			paths[rt.path] = item
		}
		item[strings.ToLower(rt.method)] = operation(rt)
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":   "Stela REST API",
			"version": "1.0.0",
			"description": "Obelisk's web API v1 (storage routes) plus Stela's worker routes, served by one handler. " +
				"Errors are {\"err\": message} (or the bare message as text/plain).",
		},
		"tags": []any{
			map[string]any{"name": tagExecutions}, map[string]any{"name": tagDelays}, map[string]any{"name": tagComponents},
			map[string]any{"name": tagFunctions}, map[string]any{"name": tagDeployments}, map[string]any{"name": tagWorker},
			map[string]any{"name": tagMeta},
		},
		"security": []any{map[string]any{"bearer": []any{}}},
		"paths":    paths,
		"components": map[string]any{
			"schemas": schemas(),
			"securitySchemes": map[string]any{
				"bearer": map[string]any{"type": "http", "scheme": "bearer"},
			},
		},
	}
	b, err := core.MarshalJSONIndent(doc)
	if err != nil {
		return nil, fmt.Errorf("httpapi: render openapi: %w", err)
	}
	return b, nil
}

func operation(rt *route) map[string]any {
	op := map[string]any{"operationId": rt.op, "summary": rt.summary, "tags": []any{rt.tag}}
	var params []any
	for _, name := range rt.pathParams() {
		params = append(params, map[string]any{"name": name, "in": "path", "required": true,
			"schema": map[string]any{"type": "string"}, "description": pathParamDesc[name]})
	}
	for _, p := range rt.query {
		schema := map[string]any{"type": p.typ}
		if p.typ == "array" {
			item := map[string]any{"type": "string"}
			if p.enum != nil {
				item["enum"] = p.enum
			}
			schema["items"] = item
		} else if p.enum != nil {
			schema["enum"] = p.enum
		}
		param := map[string]any{"name": p.name, "in": "query", "required": false, "schema": schema, "description": p.desc}
		if p.repeat {
			param["explode"] = true
			param["style"] = "form"
		}
		params = append(params, param)
	}
	if params != nil {
		op["parameters"] = params
	}
	if rt.body != "" {
		op["requestBody"] = map[string]any{
			"required": !rt.bodyOptional,
			"content":  map[string]any{contentTypeJSON: map[string]any{"schema": ref(rt.body)}},
		}
	}
	responses := map[string]any{}
	for _, r := range rt.resp {
		responses[strconv.Itoa(r.status)] = responseDoc(rt, r)
	}
	common := []response{{http.StatusUnauthorized, schemaText, "missing or invalid API token"},
		{http.StatusInternalServerError, "Err", "internal server error"}}
	if len(rt.pathParams()) > 0 || len(rt.query) > 0 || rt.body != "" {
		common = append(common, response{http.StatusBadRequest, "Err", "invalid path parameter, query or body"})
	}
	if rt.body != "" {
		common = append(common,
			response{http.StatusRequestEntityTooLarge, "Err", "request body too large"},
			response{http.StatusUnsupportedMediaType, "Err", "Content-Type is not application/json"},
			response{http.StatusUnprocessableEntity, "Err", "body does not match the schema"})
	}
	if rt.format == jsonDefault || rt.format == textDefault {
		common = append(common, response{http.StatusNotAcceptable, "Err", "Accept names no supported type"})
	}
	for _, r := range common {
		if _, ok := responses[strconv.Itoa(r.status)]; !ok {
			responses[strconv.Itoa(r.status)] = responseDoc(rt, r)
		}
	}
	op["responses"] = responses
	return op
}

var pathParamDesc = map[string]string{
	"execution_id":  "E_<ULID> or a derived id E_<ULID>.<join set>_<n>…",
	"delay_id":      "Delay_<ULID>.<join set>_<n>…",
	"name":          "a signal name: 1…64 ASCII letters, digits or '-'",
	"deployment_id": "Dep_<ULID>",
	"digest":        "sha256:<64 hex digits>",
}

func responseDoc(rt *route, r response) map[string]any {
	out := map[string]any{"description": r.desc}
	if r.schema == "" {
		return out
	}
	if r.status == http.StatusUnauthorized {
		out["content"] = map[string]any{"text/plain": map[string]any{"schema": map[string]any{"type": "string"}}}
		return out
	}
	content := map[string]any{}
	switch {
	case r.schema == "Bytes":
		content[contentTypeBytes] = map[string]any{"schema": map[string]any{"type": "string", "contentMediaType": contentTypeBytes}}
	case r.schema == schemaText:
		content["text/plain"] = map[string]any{"schema": map[string]any{"type": "string"}}
		if rt.format != textOnly {
			content[contentTypeJSON] = map[string]any{"schema": map[string]any{"type": "string"}}
		}
	default:
		if rt.format != textOnly {
			content[contentTypeJSON] = map[string]any{"schema": ref(r.schema)}
		}
		if rt.format != jsonOnly && rt.format != bytesOnly {
			content["text/plain"] = map[string]any{"schema": map[string]any{"type": "string"}}
		}
	}
	out["content"] = content
	return out
}

// --- schema helpers -----------------------------------------------------------------

func ref(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }

func obj(required []string, props map[string]any) map[string]any {
	o := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

func typ(t, desc string) map[string]any {
	m := map[string]any{"type": t}
	if desc != "" {
		m["description"] = desc
	}
	return m
}

func arr(items any) map[string]any { return map[string]any{"type": "array", "items": items} }

func nullable(s map[string]any) map[string]any {
	return map[string]any{"oneOf": []any{s, map[string]any{"type": "null"}}}
}

func desc(d string, s map[string]any) map[string]any {
	s["description"] = d
	return s
}

// schemas returns components.schemas: the routes' bodies and answers, and
// core's wire types (coreSchemas), all typed.
func schemas() map[string]any {
	str := func(d string) map[string]any { return typ("string", d) }
	integer := func(d string) map[string]any { return typ("integer", d) }
	uint := func(d string) map[string]any {
		m := typ("integer", d)
		m["minimum"] = 0
		return m
	}
	boolean := func(d string) map[string]any { return typ("boolean", d) }
	ts := ref("Timestamp")
	lockParams := map[string]any{
		"created_at":      desc("default: server clock", ref("Timestamp")),
		"component_id":    ref("ComponentId"),
		"deployment_id":   ref("DeploymentId"),
		"executor_id":     ref("ExecutorId"),
		"run_id":          ref("RunId"),
		"lock_expires_at": ts,
		"retry_config":    ref("RetryConfig"),
		"skip_history":    boolean("answer with empty event_history and responses (read them with the history route)"),
	}
	lockReq := []string{"component_id", "deployment_id", "executor_id", "run_id", "lock_expires_at", "retry_config"}
	with := func(base map[string]any, extra map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range base {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	batch := desc("events, at most 90 per request (with create-children: events + children)", arr(ref("AppendRequest")))
	batchProps := map[string]any{
		"current_time": desc("default: server clock", ref("Timestamp")),
		"batch":        batch,
		"execution_id": ref("ExecutionId"),
		"version":      desc("the version to append at (the fencing token)", ref("Version")),
	}
	fileRecord := closedObj([]string{"path", "digest", "size"}, map[string]any{"path": str(""), "digest": ref("Digest"), "size": uint("")})
	out := map[string]any{
		"OpenAPI":         typ("object", "an OpenAPI 3.1 document"),
		"Err":             closedObj([]string{"err"}, map[string]any{"err": str("error message")}),
		"Ok":              closedObj([]string{"ok"}, map[string]any{"ok": str("success message or execution id")}),
		"ExecutionIdList": arr(ref("ExecutionId")),
		"SignalBody": closedObj([]string{"value"}, map[string]any{
			"value": desc("the signal's value, any JSON", map[string]any{}),
			"key":   desc("idempotency key (≤128 bytes): a retry with the same key and value is delivered once", str("")),
		}),
		"SignalResponse": closedObj([]string{"seq", "stub_execution_id"}, map[string]any{
			"seq":               uint("the signal's sequence number among those of its name"),
			"stub_execution_id": ref("ExecutionId"),
		}),
		"ExecutionWithState": closedObj([]string{"execution_id", "ffqn", "pending_state", "created_at", "first_scheduled_at", "component_digest", "component_type", "deployment_id"},
			map[string]any{
				"execution_id": ref("ExecutionId"), "ffqn": ref("FunctionFqn"), "pending_state": ref("PendingState"), "created_at": ts,
				"first_scheduled_at": ts, "component_digest": ref("Digest"), "component_type": str(""), "deployment_id": ref("DeploymentId"),
			}),
		"ExecutionWithStateList": arr(ref("ExecutionWithState")),
		"ExecutionCounts": obj([]string{"counts", "total", "complete"}, map[string]any{
			"counts": desc("executions per state: locked, pending, scheduled, blocked, paused, cancelling, finished_ok, finished_error, finished_execution_failure",
				map[string]any{"type": "object", "additionalProperties": integer("")}),
			"total":    integer("executions counted (at most limit)"),
			"complete": boolean("false when more executions match than were counted (the counts cover the newest total)"),
		}),
		"SubmitRequest": closedObj([]string{"ffqn", "params"}, map[string]any{
			"ffqn":           ref("FunctionFqn"),
			"params":         ref("Params"),
			"paused":         boolean("create paused (default false)"),
			"component_type": str("unmanaged mode only (no deployment in storage); default activity"),
		}),
		"ListExecutionEventsResponse": closedObj([]string{"events", "max_version"}, map[string]any{
			"events": arr(ref("ExecutionEvent")), "max_version": ref("Version"),
		}),
		"ListResponsesResponse": closedObj([]string{"responses", "max_cursor", "scan_cursor"}, map[string]any{
			"responses": arr(ref("ResponseWithCursor")), "max_cursor": uint(""), "scan_cursor": uint(""),
		}),
		"LogEntry": closedObj([]string{"cursor", "run_id", "execution_id", "type", "created_at"}, map[string]any{
			"cursor": str("opaque"), "run_id": ref("RunId"), "execution_id": ref("ExecutionId"), "type": map[string]any{"type": "string", "enum": []string{"log", "stream"}},
			"created_at": ts, "level": map[string]any{"type": "string", "enum": []string{"trace", "debug", "info", "warn", "error"}, "description": "log only"},
			"message": str("log only"), "payload": str("stream only, base64"),
			"stream_type": map[string]any{"type": "string", "enum": []string{"stdout", "stderr"}, "description": "stream only"},
		}),
		"LogEntryList": arr(ref("LogEntry")),
		"ExecutionHistory": closedObj([]string{"format", "execution_id", "ffqn", "component_digest", "deployment_id", "events", "responses"}, map[string]any{
			"format": map[string]any{"type": "string", "const": core.HistoryFormat}, "execution_id": ref("ExecutionId"), "ffqn": str("an ffqn"),
			"component_digest": ref("Digest"), "deployment_id": ref("DeploymentId"),
			"events": arr(ref("ExecutionEvent")), "responses": arr(ref("ResponseWithCursor")),
		}),
		"UpgradeRequest": closedObj([]string{"old", "new"}, map[string]any{
			"old": ref("Digest"), "new": ref("Digest"), "skip_determinism_check": boolean("move without the replay check (default false: a worker of `new` replays the history first)"),
		}),
		"DeploymentState": closedObj([]string{"deployment_id", "digest", "status", "created_at"}, map[string]any{
			"deployment_id": ref("DeploymentId"), "description": nullable(str("")), "digest": ref("Digest"),
			"status":     map[string]any{"type": "string", "enum": []string{"inactive", "enqueued", "active"}},
			"created_at": ts, "last_active_at": nullable(ts), "locked": uint(""), "pending": uint(""), "scheduled": uint(""),
			"blocked": uint(""), "paused": uint(""), "cancelling": uint(""), "finished_ok": uint(""), "finished_error": uint(""),
			"finished_execution_failure": uint(""),
			"component_summary": nullable(closedObj([]string{"components"}, map[string]any{"components": arr(closedObj([]string{"component_type", "count"},
				map[string]any{"component_type": str(""), "count": uint("")}))})),
		}),
		"DeploymentStateList": arr(ref("DeploymentState")),
		"WorkerDeployment": closedObj([]string{"components"}, map[string]any{
			"build_id": str("the worker's build id"), "description": str(""),
			"components": arr(closedObj([]string{"name", "component_type", "component_digest", "exports"}, map[string]any{
				"name": str(""), "component_type": map[string]any{"type": "string", "enum": []string{"activity", "workflow"}},
				"component_digest": ref("Digest"), "exports": arr(ref("FunctionMetadata")), "wit": str("WIT generated from the Go types"),
			})),
		}),
		"Deployment": closedObj([]string{"deployment_id", "digest", "status", "created_at", "deployment_toml", "files"}, map[string]any{
			"deployment_id": ref("DeploymentId"), "description": nullable(str("")), "digest": ref("Digest"),
			"status": map[string]any{"type": "string", "enum": []string{"inactive", "enqueued", "active"}}, "created_at": ts,
			"last_active_at": nullable(ts), "deployment_toml": str(""), "files": arr(fileRecord),
		}),
		"Component": closedObj([]string{"component_id", "files"}, map[string]any{
			"component_id": ref("ComponentId"), "files": arr(closedObj([]string{"file", "role"}, map[string]any{"file": fileRecord, "role": str("")})),
			"exports": arr(ref("FunctionMetadata")), "imports": arr(ref("FunctionMetadata")),
		}),
		"FunctionMetadata": closedObj([]string{"ffqn", "parameter_types", "return_type", "submittable"}, map[string]any{
			"ffqn": ref("FunctionFqn"), "parameter_types": arr(closedObj([]string{"name", "wit_type"}, map[string]any{"name": str(""), "wit_type": str("")})),
			"return_type": str(""), "extension": str("omitted when none"), "submittable": boolean(""),
		}),
		"ComponentList": arr(ref("Component")),
		// worker bodies
		"LockPendingRequest": closedObj(append([]string{"batch_size"}, lockReq...), with(lockParams, map[string]any{
			"batch_size":           integer("1..25"),
			"pending_at_or_sooner": desc("default: created_at", ref("Timestamp")),
			"ffqns":                desc("required except for pending-by-component-digest, where it must be absent", arr(ref("FunctionFqn"))),
			"wait_ms":              uint("if nothing is pending, wait (bounded) and try once more"),
		})),
		"LockOneRequest": closedObj(append([]string{"execution_id", "version"}, lockReq...), with(lockParams, map[string]any{
			"execution_id": ref("ExecutionId"), "version": ref("Version"),
		})),
		"LockedExecution": closedObj([]string{"execution_id", "next_version", "metadata", "component_digest", "locked_event", "ffqn", "params",
			"event_history", "responses", "parent", "intermittent_event_count"}, map[string]any{
			"execution_id": ref("ExecutionId"), "next_version": desc("the version to append at next", ref("Version")), "metadata": ref("Metadata"),
			"component_digest": ref("Digest"), "locked_event": ref("Locked"), "ffqn": ref("FunctionFqn"), "params": ref("Params"),
			"event_history": desc("empty with skip_history", arr(ref("HistoryEventWithVersion"))),
			"responses":     desc("empty with skip_history", arr(ref("ResponseWithCursor"))),
			"parent":        nullable(ref("Parent")), "intermittent_event_count": uint(""),
			"component_type": str("the type the execution was created with (Stela extension; absent from older servers)"),
		}),
		"LockedExecutionList": arr(ref("LockedExecution")),
		"AppendBody": closedObj([]string{"execution_id", "version", "req"}, map[string]any{
			"execution_id": ref("ExecutionId"), "version": ref("Version"), "req": ref("AppendRequest"),
		}),
		"AppendBatchBody": closedObj([]string{"batch", "execution_id", "version"}, batchProps),
		"CreateChildrenBody": closedObj([]string{"batch", "execution_id", "version", "children"}, with(batchProps, map[string]any{
			"children": arr(ref("CreateRequest")), "backtraces": arr(ref("BacktraceInfo")),
			"lock": desc("eager dispatch: children to create locked to the caller, answered in `locked` (a server that predates it answers 422 unknown field)",
				arr(ref("EagerLock"))),
		})),
		"EagerLock": closedObj(append([]string{"batch_size", "ffqns"}, lockReq...), with(lockParams, map[string]any{
			"batch_size":          integer("1..90: at most this many of the children, in request order"),
			"ffqns":               desc("the functions whose children this lock takes", arr(ref("FunctionFqn"))),
			"by_component_digest": boolean("a pinned worker: only children created with component_id's digest"),
		})),
		"FireDelayAnswer": closedObj([]string{"outcome"}, map[string]any{
			"outcome":         map[string]any{"type": "string", "enum": []string{"fired", "answered", "not_due"}, "description": "what the call did"},
			"fired_at":        desc("outcome fired: the created_at of the DelayFinished response recorded (the store's time)", ref("Timestamp")),
			"response_cursor": uint("outcome fired: that response's cursor among the owner's responses (absent when not known)"),
		}),
		"CreateLockedBody": closedObj([]string{"lock"}, map[string]any{
			"request":  desc("exactly one of request and requests: one execution, answered by a CreateChildrenAnswer", ref("CreateRequest")),
			"requests": desc("1..100 executions, each created in its own commit under the one lock and answered on its own (CreateLockedResults; a server that predates it answers 422 unknown field)", arr(ref("CreateRequest"))),
			"lock":     desc("the lock to create them with when it takes them (batch_size 1 with request, the number of requests with requests)", ref("EagerLock")),
		}),
		"CreateLockedAnswer": oneOf(ref("CreateChildrenAnswer"), ref("CreateLockedResults")),
		"CreateLockedResults": closedObj([]string{"results"}, map[string]any{
			"results": arr(closedObj(nil, map[string]any{
				"next_version": desc("the request's execution was created", ref("Version")),
				"locked":       desc("it was created locked to the caller (absent: created pending)", ref("LockedExecution")),
				"status":       uint("the request failed: the HTTP status its single request would have answered"),
				"err":          str("the request failed: the message its single request would have answered"),
			})),
		}),
		"CreateChildrenAnswer": closedObj([]string{"next_version"}, map[string]any{
			"next_version": ref("Version"),
			"locked":       desc("the children created locked (only when the body asked for eager locks)", arr(ref("LockedExecution"))),
		}),
		"FireAppendBody": closedObj([]string{"batch", "execution_id", "version", "delay_id"}, with(batchProps, map[string]any{
			"delay_id": desc("a delay of execution_id: fired with the batch, or nothing is written", ref("DelayId")),
		})),
		"FireAppendAnswer": closedObj([]string{"outcome"}, map[string]any{
			"outcome":         map[string]any{"type": "string", "enum": []string{"fired", "answered", "not_due", "cancelled"}, "description": "fired or answered (it had fired already): the batch was appended; not_due (not due at the store's time, or paused) or cancelled: nothing written"},
			"next_version":    desc("outcome fired or answered: the version after the batch", ref("Version")),
			"fired_at":        desc("outcome fired: the created_at of the DelayFinished response recorded (the store's time)", ref("Timestamp")),
			"response_cursor": uint("outcome fired: that response's cursor among the owner's responses"),
		}),
		"DelayResponseBody": closedObj([]string{"batch", "execution_id", "version", "join_set_id", "delay_id"}, with(batchProps, map[string]any{
			"join_set_id": ref("JoinSetId"), "delay_id": ref("DelayId"),
		})),
		"RespondToParentBody": closedObj([]string{"events", "response"}, map[string]any{
			"events": closedObj([]string{"execution_id", "version", "batch"}, map[string]any{
				"execution_id": ref("DerivedExecutionId"), "version": ref("Version"), "batch": batch}),
			"response":     ref("AppendResponseToExecution"),
			"current_time": desc("default: server clock", ref("Timestamp")),
		}),
		"AppendManyBody": closedObj([]string{"items"}, map[string]any{
			"items": desc("1..100 writes, each to its own execution", arr(closedObj(nil, map[string]any{
				"append":            desc("exactly one of append and respond_to_parent", ref("AppendBatchBody")),
				"respond_to_parent": ref("RespondToParentBody"),
			}))),
		}),
		"AppendManyResults": closedObj([]string{"results"}, map[string]any{
			"results": arr(closedObj(nil, map[string]any{
				"next_version":    desc("the item committed", ref("Version")),
				"response_cursor": uint("a respond_to_parent item committed: its response's cursor in the parent (absent when deferred)"),
				"status":          uint("the item failed: the HTTP status its own route would have answered"),
				"err":             str("the item failed: the message its own route would have answered"),
			})),
		}),
		"StubResponseBody": closedObj([]string{"execution_id", "version", "req", "response"}, map[string]any{
			"execution_id": ref("DerivedExecutionId"), "version": ref("Version"), "req": ref("AppendRequest"),
			"response": ref("AppendResponseToExecution"), "current_time": desc("default: server clock", ref("Timestamp")),
		}),
		"NextVersion": closedObj([]string{"next_version"}, map[string]any{"next_version": ref("Version")}),
		"RespondToParentAnswer": closedObj([]string{"next_version"}, map[string]any{
			"next_version":    ref("Version"),
			"response_cursor": uint("the cursor the response got among the parent's responses (absent when the store deferred it: it is numbered when the parent's lock ends)"),
		}),
		"ExecutionLog": closedObj([]string{"execution_id", "events", "responses", "next_version", "pending_state", "component_digest", "component_type", "deployment_id"},
			map[string]any{
				"execution_id": ref("ExecutionId"), "events": arr(ref("ExecutionEvent")), "responses": arr(ref("ResponseWithCursor")),
				"next_version": ref("Version"), "pending_state": ref("PendingState"), "component_digest": ref("Digest"),
				"component_type": str(""), "deployment_id": ref("DeploymentId"),
			}),
		"HistoryDelta": closedObj([]string{"events", "responses", "next_version"}, map[string]any{
			"events":    desc("history events with version >= from_version", arr(ref("HistoryEventWithVersion"))),
			"responses": desc("responses with cursor > after_cursor", arr(ref("ResponseWithCursor"))), "next_version": ref("Version"),
		}),
		"Responses":      closedObj([]string{"responses"}, map[string]any{"responses": arr(ref("ResponseWithCursor"))}),
		"AppendLogsBody": closedObj([]string{"logs"}, map[string]any{"logs": arr(ref("LogRow"))}),
		"LogRow": closedObj([]string{"execution_id", "run_id", "created_at", "type"}, map[string]any{
			"execution_id": ref("ExecutionId"), "run_id": ref("RunId"), "created_at": ts, "type": map[string]any{"type": "string", "enum": []string{"log", "stream"}},
			"level": str("log: trace|debug|info|warn|error"), "message": str("log"), "stream_type": str("stream: stdout|stderr"), "payload": str("stream: base64"),
		}),
		"AppendBacktracesBody": closedObj([]string{"backtraces"}, map[string]any{"backtraces": arr(ref("BacktraceInfo"))}),
		"Inserted":             closedObj([]string{"inserted"}, map[string]any{"inserted": uint("")}),
		"ExpiredTimer": oneOf(
			variant("type", "lock", []string{"execution_id", "locked_at_version", "next_version", "intermittent_event_count", "max_retries", "retry_exp_backoff", "locked_by", "lock_expires_at"},
				map[string]any{"execution_id": ref("ExecutionId"), "locked_at_version": ref("Version"), "next_version": ref("Version"),
					"intermittent_event_count": uint(""), "max_retries": nullable(uint("")), "retry_exp_backoff": ref("Duration"), "locked_by": ref("LockedBy"),
					"lock_expires_at": desc("when the lock expired", ref("Timestamp"))}),
			variant("type", "delay", []string{"execution_id", "join_set_id", "delay_id", "expires_at"}, map[string]any{
				"execution_id": ref("ExecutionId"), "join_set_id": ref("JoinSetId"), "delay_id": ref("DelayId"),
				"expires_at": desc("the delay's deadline", ref("Timestamp"))})),
		"ExpiredTimerList": arr(ref("ExpiredTimer")),
		"SweepBody":        closedObj(nil, map[string]any{"at": desc("default: server clock", ref("Timestamp"))}),
		"SweepResult":      typ("object", "whatever the configured sweep reports"),
	}
	for k, v := range coreSchemas() {
		if _, dup := out[k]; dup {
			panic("httpapi: schema " + k + " defined twice")
		}
		out[k] = v
	}
	return out
}
