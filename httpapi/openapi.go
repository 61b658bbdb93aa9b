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

// schemas returns components.schemas: the top-level bodies exactly, nested
// core types as documented objects.
func schemas() map[string]any {
	str := func(d string) map[string]any { return typ("string", d) }
	integer := func(d string) map[string]any { return typ("integer", d) }
	boolean := func(d string) map[string]any { return typ("boolean", d) }
	lockParams := map[string]any{
		"created_at":      str("RFC 3339; default: server clock"),
		"component_id":    ref("ComponentId"),
		"deployment_id":   str("Dep_<ULID>"),
		"executor_id":     str("Exr_<ULID>"),
		"run_id":          str("Run_<ULID>"),
		"lock_expires_at": str("RFC 3339"),
		"retry_config":    ref("RetryConfig"),
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
	batchProps := map[string]any{
		"current_time": str("RFC 3339; default: server clock"),
		"batch":        arr(ref("AppendRequest")),
		"execution_id": str("execution id"),
		"version":      integer("version to append at"),
	}
	closed := func(s map[string]any) map[string]any {
		s["additionalProperties"] = false
		return s
	}
	return map[string]any{
		"OpenAPI":         typ("object", "an OpenAPI 3.1 document"),
		"Err":             obj([]string{"err"}, map[string]any{"err": str("error message")}),
		"Ok":              obj([]string{"ok"}, map[string]any{"ok": str("success message or execution id")}),
		"ExecutionId":     str("E_<ULID> (text/plain: bare; JSON: a string)"),
		"DeploymentId":    str("Dep_<ULID> (text/plain: bare; JSON: a string)"),
		"ExecutionIdList": arr(str("execution id")),
		"ComponentId": obj([]string{"component_type", "name", "component_digest"}, map[string]any{
			"component_type":   map[string]any{"type": "string", "enum": []string{"activity", "activity_stub", "workflow", "webhook_endpoint", "cron"}},
			"name":             str(""),
			"component_digest": str("sha256:<hex>"),
		}),
		"RetryConfig": obj([]string{"retry_exp_backoff"}, map[string]any{
			"max_retries":       nullable(integer("null = retry forever")),
			"retry_exp_backoff": ref("Duration"),
		}),
		"Duration": obj([]string{"secs", "nanos"}, map[string]any{"secs": integer(""), "nanos": integer("")}),
		"PendingState": desc("internally tagged by status: locked, pending_at, blocked_by_join_set, paused, cancelling, finished",
			obj([]string{"status"}, map[string]any{"status": map[string]any{"type": "string",
				"enum": []string{"locked", "pending_at", "blocked_by_join_set", "paused", "cancelling", "finished"}}})),
		"ExecutionWithState": obj([]string{"execution_id", "ffqn", "pending_state", "created_at", "first_scheduled_at", "component_digest", "component_type", "deployment_id"},
			map[string]any{
				"execution_id": str(""), "ffqn": str(""), "pending_state": ref("PendingState"), "created_at": str("RFC 3339"),
				"first_scheduled_at": str("RFC 3339"), "component_digest": str(""), "component_type": str(""), "deployment_id": str(""),
			}),
		"ExecutionWithStateList": arr(ref("ExecutionWithState")),
		"ExecutionCounts": obj([]string{"counts", "total", "complete"}, map[string]any{
			"counts": desc("executions per state: locked, pending, scheduled, blocked, paused, cancelling, finished_ok, finished_error, finished_execution_failure",
				map[string]any{"type": "object", "additionalProperties": integer("")}),
			"total":    integer("executions counted (at most limit)"),
			"complete": boolean("false when more executions match than were counted (the counts cover the newest total)"),
		}),
		"SubmitRequest": closed(obj([]string{"ffqn", "params"}, map[string]any{
			"ffqn":           str("ns:pkg/ifc.fn"),
			"params":         arr(map[string]any{}),
			"paused":         boolean("create paused (default false)"),
			"component_type": str("unmanaged mode only (no deployment in storage); default activity"),
		})),
		"RetVal": desc("untyped result: {\"ok\": v|null}, {\"err\": v|null} or {\"execution_failed\": {kind, reason?, detail?}}",
			typ("object", "")),
		"ReturnValue": desc("storage return value: {\"ok\": {\"type\",\"value\"}|null}, {\"err\": …} or {\"execution_failure\": {kind, reason?, detail?}}",
			typ("object", "")),
		"ExecutionRequest": desc("externally tagged event payload (created, locked, unlocked, finished, history_event, …) or the strings paused, unpaused, cancellation_requested",
			map[string]any{"oneOf": []any{typ("object", ""), typ("string", "")}}),
		"HistoryEvent": desc("internally tagged by type (persist, join_set_create, join_set_request, join_next, …)", typ("object", "")),
		"ExecutionEvent": obj([]string{"created_at", "event", "version"}, map[string]any{
			"created_at": str("RFC 3339"), "event": ref("ExecutionRequest"), "backtrace_id": integer("when requested"), "version": integer(""),
		}),
		"AppendRequest": obj([]string{"created_at", "event"}, map[string]any{"created_at": str("RFC 3339"), "event": ref("ExecutionRequest")}),
		"ListExecutionEventsResponse": obj([]string{"events", "max_version"}, map[string]any{
			"events": arr(ref("ExecutionEvent")), "max_version": integer(""),
		}),
		"ResponseWithCursor": obj([]string{"event", "cursor"}, map[string]any{
			"event":  desc("{created_at, event: {join_set_id, event: {type: child_execution_finished|delay_finished, …}}}", typ("object", "")),
			"cursor": integer("per-execution, 1-based"),
		}),
		"ListResponsesResponse": obj([]string{"responses", "max_cursor", "scan_cursor"}, map[string]any{
			"responses": arr(ref("ResponseWithCursor")), "max_cursor": integer(""), "scan_cursor": integer(""),
		}),
		"LogEntry": obj([]string{"cursor", "run_id", "execution_id", "type", "created_at"}, map[string]any{
			"cursor": str("opaque"), "run_id": str(""), "execution_id": str(""), "type": map[string]any{"type": "string", "enum": []string{"log", "stream"}},
			"created_at": str("RFC 3339"), "level": str("log only"), "message": str("log only"), "payload": str("stream only, base64"),
			"stream_type": str("stream only"),
		}),
		"LogEntryList": arr(ref("LogEntry")),
		"BacktraceInfo": obj([]string{"execution_id", "component_id", "version_min_including", "version_max_excluding", "wasm_backtrace"}, map[string]any{
			"execution_id": str(""), "component_id": ref("ComponentId"), "version_min_including": integer(""),
			"version_max_excluding": integer(""), "wasm_backtrace": typ("object", "{frames: [{module, func_name, symbols: [{func_name, file, line, col}]}]}"),
		}),
		"UpgradeRequest": closed(obj([]string{"old", "new"}, map[string]any{
			"old": str("sha256:<hex>"), "new": str("sha256:<hex>"), "skip_determinism_check": boolean("must be true on this server"),
		})),
		"DeploymentState": obj([]string{"deployment_id", "digest", "status", "created_at"}, map[string]any{
			"deployment_id": str(""), "description": nullable(str("")), "digest": str(""), "status": str("inactive|enqueued|active"),
			"created_at": str(""), "last_active_at": nullable(str("")), "locked": integer(""), "pending": integer(""), "scheduled": integer(""),
			"blocked": integer(""), "paused": integer(""), "cancelling": integer(""), "finished_ok": integer(""), "finished_error": integer(""),
			"finished_execution_failure": integer(""), "component_summary": nullable(typ("object", "{components: [{component_type, count}]}")),
		}),
		"DeploymentStateList": arr(ref("DeploymentState")),
		"Deployment": obj([]string{"deployment_id", "digest", "status", "created_at", "deployment_toml", "files"}, map[string]any{
			"deployment_id": str(""), "description": nullable(str("")), "digest": str(""), "status": str(""), "created_at": str(""),
			"last_active_at": nullable(str("")), "deployment_toml": str(""), "files": arr(typ("object", "{path, digest, size}")),
		}),
		"Component": obj([]string{"component_id", "files"}, map[string]any{
			"component_id": ref("ComponentId"), "files": arr(typ("object", "{file: {path, digest, size}, role}")),
			"exports": arr(ref("FunctionMetadata")), "imports": arr(ref("FunctionMetadata")),
		}),
		"FunctionMetadata": obj([]string{"ffqn", "parameter_types", "return_type", "submittable"}, map[string]any{
			"ffqn": str(""), "parameter_types": arr(typ("object", "{name, wit_type}")), "return_type": str(""),
			"extension": str("omitted when none"), "submittable": boolean(""),
		}),
		"ComponentList": arr(ref("Component")),
		"CreateRequest": obj([]string{"created_at", "execution_id", "ffqn", "params", "scheduled_at", "component_id", "deployment_id", "metadata"}, map[string]any{
			"created_at": str(""), "execution_id": str(""), "ffqn": str(""), "params": arr(map[string]any{}), "parent": nullable(arr(str("[execution_id, join_set_id]"))),
			"scheduled_at": str(""), "component_id": ref("ComponentId"), "deployment_id": str(""), "metadata": typ("object", "string map"),
			"scheduled_by": nullable(str("")), "paused": boolean("default false"),
		}),
		"AppendResponseToExecution": obj([]string{"parent_execution_id", "created_at", "join_set_id", "child_execution_id", "finished_version", "result"}, map[string]any{
			"parent_execution_id": str(""), "created_at": str(""), "join_set_id": str(""), "child_execution_id": str(""),
			"finished_version": integer(""), "result": ref("ReturnValue"),
		}),
		// worker bodies
		"LockPendingRequest": closed(obj(append([]string{"batch_size"}, lockReq...), with(lockParams, map[string]any{
			"batch_size":           integer("1..25"),
			"pending_at_or_sooner": str("RFC 3339; default: created_at"),
			"ffqns":                arr(str("function name; required except for pending-by-component-digest, where it must be absent")),
			"wait_ms":              integer("if nothing is pending, wait (bounded) and try once more"),
		}))),
		"LockOneRequest": closed(obj(append([]string{"execution_id", "version"}, lockReq...), with(lockParams, map[string]any{
			"execution_id": str(""), "version": integer(""),
		}))),
		"HistoryEventWithVersion": obj([]string{"event", "version"}, map[string]any{"event": ref("HistoryEvent"), "version": integer("")}),
		"LockedExecution": obj([]string{"execution_id", "next_version", "metadata", "component_digest", "locked_event", "ffqn", "params",
			"event_history", "responses", "parent", "intermittent_event_count"}, map[string]any{
			"execution_id": str(""), "next_version": integer(""), "metadata": typ("object", "string map"), "component_digest": str(""),
			"locked_event": typ("object", "the Locked event payload"), "ffqn": str(""), "params": arr(map[string]any{}),
			"event_history": arr(ref("HistoryEventWithVersion")), "responses": arr(ref("ResponseWithCursor")),
			"parent": nullable(arr(str("[execution_id, join_set_id]"))), "intermittent_event_count": integer(""),
		}),
		"LockedExecutionList": arr(ref("LockedExecution")),
		"AppendBody": closed(obj([]string{"execution_id", "version", "req"}, map[string]any{
			"execution_id": str(""), "version": integer(""), "req": ref("AppendRequest"),
		})),
		"AppendBatchBody": closed(obj([]string{"batch", "execution_id", "version"}, batchProps)),
		"CreateChildrenBody": closed(obj([]string{"batch", "execution_id", "version", "children"}, with(batchProps, map[string]any{
			"children": arr(ref("CreateRequest")), "backtraces": arr(ref("BacktraceInfo")),
		}))),
		"DelayResponseBody": closed(obj([]string{"batch", "execution_id", "version", "join_set_id", "delay_id"}, with(batchProps, map[string]any{
			"join_set_id": str(""), "delay_id": str(""),
		}))),
		"RespondToParentBody": closed(obj([]string{"events", "response"}, map[string]any{
			"events":       obj([]string{"execution_id", "version", "batch"}, map[string]any{"execution_id": str(""), "version": integer(""), "batch": arr(ref("AppendRequest"))}),
			"response":     ref("AppendResponseToExecution"),
			"current_time": str("RFC 3339; default: server clock"),
		})),
		"StubResponseBody": closed(obj([]string{"execution_id", "version", "req", "response"}, map[string]any{
			"execution_id": str("derived id"), "version": integer(""), "req": ref("AppendRequest"),
			"response": ref("AppendResponseToExecution"), "current_time": str("RFC 3339; default: server clock"),
		})),
		"NextVersion": obj([]string{"next_version"}, map[string]any{"next_version": integer("")}),
		"ExecutionLog": obj([]string{"execution_id", "events", "responses", "next_version", "pending_state", "component_digest", "component_type", "deployment_id"},
			map[string]any{
				"execution_id": str(""), "events": arr(ref("ExecutionEvent")), "responses": arr(ref("ResponseWithCursor")),
				"next_version": integer(""), "pending_state": ref("PendingState"), "component_digest": str(""),
				"component_type": str(""), "deployment_id": str(""),
			}),
		"Responses":      obj([]string{"responses"}, map[string]any{"responses": arr(ref("ResponseWithCursor"))}),
		"AppendLogsBody": closed(obj([]string{"logs"}, map[string]any{"logs": arr(ref("LogRow"))})),
		"LogRow": obj([]string{"execution_id", "run_id", "created_at", "type"}, map[string]any{
			"execution_id": str(""), "run_id": str(""), "created_at": str(""), "type": map[string]any{"type": "string", "enum": []string{"log", "stream"}},
			"level": str("log: trace|debug|info|warn|error"), "message": str("log"), "stream_type": str("stream: stdout|stderr"), "payload": str("stream: base64"),
		}),
		"AppendBacktracesBody": closed(obj([]string{"backtraces"}, map[string]any{"backtraces": arr(ref("BacktraceInfo"))})),
		"Inserted":             obj([]string{"inserted"}, map[string]any{"inserted": integer("")}),
		"ExpiredTimer": desc("{type: lock, execution_id, locked_at_version, next_version, intermittent_event_count, max_retries, retry_exp_backoff, locked_by} or {type: delay, execution_id, join_set_id, delay_id}",
			obj([]string{"type", "execution_id"}, map[string]any{"type": map[string]any{"type": "string", "enum": []string{"lock", "delay"}}, "execution_id": str("")})),
		"ExpiredTimerList": arr(ref("ExpiredTimer")),
		"SweepBody":        closed(obj(nil, map[string]any{"at": str("RFC 3339; default: server clock")})),
		"SweepResult":      typ("object", "whatever the configured sweep reports"),
	}
}
