package httpapi

// JSON Schemas (OpenAPI 3.1 = JSON Schema 2020-12) of core's persisted types
// as they travel on the wire: events, history events, join set requests and
// responses, return values, pending states. Closed objects list every field
// core writes; externally tagged enums are objects with exactly one key (or a
// bare string for unit variants), internally tagged ones carry a `type` or
// `status` const. The test in openapi_test.go validates real answers of the
// handler against them.

import (
	"fmt"

	"github.com/stela-dev/stela/core"
)

// variant is a closed object with a const tag field plus fields.
func variant(tagKey, tag string, required []string, props map[string]any) map[string]any {
	p := map[string]any{tagKey: map[string]any{"const": tag}}
	for k, v := range props {
		p[k] = v
	}
	o := obj(append([]string{tagKey}, required...), p)
	o["additionalProperties"] = false
	return o
}

// tagged is {"<key>": value}, exactly that key.
func tagged(key string, value any) map[string]any {
	o := obj([]string{key}, map[string]any{key: value})
	o["additionalProperties"] = false
	return o
}

// closedObj is obj without other properties.
func closedObj(required []string, props map[string]any) map[string]any {
	o := obj(required, props)
	o["additionalProperties"] = false
	return o
}

func oneOf(schemas ...any) map[string]any { return map[string]any{"oneOf": schemas} }

func pattern(p, d string) map[string]any {
	return map[string]any{"type": "string", "pattern": p, "description": d}
}

// bounded is pattern with a maximal length (docs/http-api.md §1, Limits;
// JSON Schema counts characters, the server bytes).
func bounded(p, d string, maxBytes int) map[string]any {
	m := pattern(p, fmt.Sprintf("%s; at most %d bytes", d, maxBytes))
	m["maxLength"] = maxBytes
	return m
}

const ulidPattern = "[0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{26}"

// coreSchemas returns the typed components of core's wire types.
func coreSchemas() map[string]any {
	str := func(d string) map[string]any { return typ("string", d) }
	uint := func(d string) map[string]any {
		m := typ("integer", d)
		m["minimum"] = 0
		return m
	}
	null := map[string]any{"type": "null"}
	ts := ref("Timestamp")
	ffqnOrNull := oneOf(ref("FunctionFqn"), null)
	failureKind := map[string]any{"type": "string", "enum": []string{"timed_out", "nondeterminism_detected", "out_of_fuel", "cancelled", "uncategorized"}}
	traces := oneOf(arr(ref("HttpClientTrace")), null)
	return map[string]any{
		// --- scalars ---------------------------------------------------------------------------
		"Timestamp":          map[string]any{"type": "string", "format": "date-time", "description": "RFC 3339, offset hours 00–23 and minutes 00–59, UTC years 0000–9999; answers are UTC with `Z`"},
		"ExecutionId":        bounded("^E_"+ulidPattern+`(\.[^.]+)*$`, "E_<ULID>, or a derived id E_<ULID>.<join set>_<n>… (text/plain answers: bare)", core.MaxExecutionIdBytes),
		"DerivedExecutionId": bounded("^E_"+ulidPattern+`(\.[^.]+)+$`, "E_<ULID>.<join set>_<n>…", core.MaxExecutionIdBytes),
		"DelayId":            bounded("^Delay_"+ulidPattern+`(\.[^.]+)+$`, "Delay_<ULID>.<join set>_<n>…", core.MaxDelayIdBytes),
		"JoinSetId":          bounded("^[ong]:[A-Za-z0-9/-]*$", "<kind>:<name>, kind o (one-off), n (named), g (generated)", core.MaxJoinSetIdBytes),
		"DeploymentId":       pattern("^Dep_"+ulidPattern+"$", "Dep_<ULID> (text/plain answers: bare)"),
		"ExecutorId":         pattern("^Exr_"+ulidPattern+"$", "Exr_<ULID>"),
		"RunId":              pattern("^Run_"+ulidPattern+"$", "Run_<ULID>"),
		"Digest":             pattern("^sha256:[0-9a-f]{64}$", "sha256:<64 hex digits>"),
		"FunctionFqn":        bounded(`^[^:]+:[^/]+/[^.]+\..+$`, "ns:pkg/ifc.fn", core.MaxFunctionFqnBytes),
		"Version":            uint("position in the execution log, 0 = created"),
		"Params":             desc("untyped JSON arguments", arr(map[string]any{})),
		"Metadata":           map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}},
		"Parent":             map[string]any{"type": "array", "prefixItems": []any{ref("ExecutionId"), ref("JoinSetId")}, "minItems": 2, "maxItems": 2, "description": "[execution_id, join_set_id]"},
		"Duration":           closedObj([]string{"secs", "nanos"}, map[string]any{"secs": uint(""), "nanos": uint("")}),
		"ComponentId": closedObj([]string{"component_type", "name", "component_digest"}, map[string]any{
			"component_type":   map[string]any{"type": "string", "enum": []string{"activity", "activity_stub", "workflow", "webhook_endpoint", "cron"}},
			"name":             str(""),
			"component_digest": ref("Digest"),
		}),
		"RetryConfig": closedObj([]string{"max_retries", "retry_exp_backoff"}, map[string]any{
			"max_retries":       oneOf(uint(""), desc("retry forever", typ("null", ""))),
			"retry_exp_backoff": ref("Duration"),
		}),
		"LockedBy": closedObj([]string{"executor_id", "run_id"}, map[string]any{"executor_id": ref("ExecutorId"), "run_id": ref("RunId")}),

		// --- results ------------------------------------------------------------------------------
		"UnitResult": desc(`Result<(), ()> as serde writes it — capitalised, unlike return values: {"Ok":null} (a delay fired) or {"Err":null} (cancelled)`,
			oneOf(tagged("Ok", null), tagged("Err", null))),
		"HistoryResult": desc(`Result<(), E> of child requests, schedules and stubs: {"Ok":null}, {"Err":"function_not_found|execution_not_found|conflict"} or {"Err":{"type_check_error":"…"}}`,
			oneOf(tagged("Ok", null),
				tagged("Err", map[string]any{"type": "string", "enum": []string{"function_not_found", "execution_not_found", "conflict"}}),
				tagged("Err", tagged("type_check_error", str(""))))),
		"WastValWithType": closedObj([]string{"type", "value"}, map[string]any{"type": str("WIT type, e.g. string, u64, result<string>"), "value": desc("untyped JSON value", map[string]any{})}),
		"ExecutionFailure": closedObj([]string{"kind"}, map[string]any{
			"kind":   failureKind,
			"reason": str(""), "detail": str(""),
		}),
		"ReturnValue": desc(`storage return value (lower-case tags, unlike UnitResult): {"ok": WastValWithType|null}, {"err": WastValWithType|null} or {"execution_failure": {kind, reason?, detail?}}`,
			oneOf(tagged("ok", oneOf(ref("WastValWithType"), null)), tagged("err", oneOf(ref("WastValWithType"), null)),
				tagged("execution_failure", ref("ExecutionFailure")))),
		"RetVal": desc(`Obelisk's untyped web result: {"ok": v|null}, {"err": v|null} or {"execution_failed": {kind, reason?, detail?}}`,
			oneOf(tagged("ok", map[string]any{}), tagged("err", map[string]any{}), tagged("execution_failed", ref("ExecutionFailure")))),
		"ScheduleAt": desc(`"now", {"at": timestamp} or {"in": duration}`,
			oneOf(map[string]any{"const": "now"}, tagged("at", ts), tagged("in", ref("Duration")))),

		// --- history events -----------------------------------------------------------------------
		"PersistKind": oneOf(
			variant("type", "random_u64", []string{"min", "max_inclusive"}, map[string]any{"min": uint(""), "max_inclusive": uint("")}),
			variant("type", "random_string", []string{"min_length", "max_length_exclusive"}, map[string]any{"min_length": uint(""), "max_length_exclusive": uint("")}),
			variant("type", "execution_id", nil, nil),
			variant("type", "stela_state", []string{"key"}, map[string]any{"key": str("published state key (Stela extension)")})),
		"JoinSetRequest": desc("internally tagged by type", oneOf(
			variant("type", "delay_request", []string{"delay_id", "expires_at", "schedule_at", "paused"}, map[string]any{
				"delay_id": ref("DelayId"), "expires_at": ts, "schedule_at": ref("ScheduleAt"), "paused": typ("boolean", "")}),
			variant("type", "child_execution_request", []string{"child_execution_id", "target_ffqn", "params", "result"}, map[string]any{
				"child_execution_id": ref("DerivedExecutionId"), "target_ffqn": ref("FunctionFqn"), "params": ref("Params"), "result": ref("HistoryResult")}))),
		"HistoryEvent": desc("workflow history event, internally tagged by type", oneOf(
			variant("type", "persist", []string{"value", "kind"}, map[string]any{"value": arr(map[string]any{"type": "integer", "minimum": 0, "maximum": 255}), "kind": ref("PersistKind")}),
			variant("type", "join_set_create", []string{"join_set_id"}, map[string]any{"join_set_id": ref("JoinSetId")}),
			variant("type", "join_set_request", []string{"join_set_id", "request"}, map[string]any{"join_set_id": ref("JoinSetId"), "request": ref("JoinSetRequest")}),
			variant("type", "join_next", []string{"join_set_id", "run_expires_at", "requested_ffqn", "closing"}, map[string]any{
				"join_set_id": ref("JoinSetId"), "run_expires_at": desc("when the result may be processed: \"now\" unless the worker keeps the run warm (docs/http-api.md)", ref("Timestamp")),
				"requested_ffqn": ffqnOrNull, "closing": typ("boolean", "")}),
			variant("type", "join_next_try", []string{"join_set_id", "outcome"}, map[string]any{
				"join_set_id": ref("JoinSetId"), "outcome": map[string]any{"type": "string", "enum": []string{"found", "pending", "all_processed"}}}),
			variant("type", "join_next_too_many", []string{"join_set_id", "requested_ffqn"}, map[string]any{"join_set_id": ref("JoinSetId"), "requested_ffqn": ffqnOrNull}),
			variant("type", "schedule", []string{"execution_id", "schedule_at", "result"}, map[string]any{
				"execution_id": ref("ExecutionId"), "schedule_at": ref("ScheduleAt"), "result": ref("HistoryResult")}),
			variant("type", "stub", []string{"target_execution_id", "retval_hash", "result"}, map[string]any{
				"target_execution_id": ref("DerivedExecutionId"), "retval_hash": pattern("^[0-9a-f]{66}$", ""), "result": ref("HistoryResult")}))),
		"HistoryEventWithVersion": closedObj([]string{"event", "version"}, map[string]any{"event": ref("HistoryEvent"), "version": ref("Version")}),

		// --- execution events ---------------------------------------------------------------------
		"HttpClientTrace": closedObj([]string{"req", "resp"}, map[string]any{
			"req": closedObj([]string{"sent_at", "uri", "method"}, map[string]any{"sent_at": ts, "uri": str(""), "method": str("")}),
			"resp": oneOf(null, closedObj([]string{"finished_at", "status"}, map[string]any{"finished_at": ts,
				"status": oneOf(tagged("Ok", uint("HTTP status")), tagged("Err", str("")))})),
		}),
		"Created": closedObj([]string{"ffqn", "params", "parent", "scheduled_at", "component_id", "deployment_id", "metadata", "scheduled_by"}, map[string]any{
			"ffqn": ref("FunctionFqn"), "params": ref("Params"), "parent": oneOf(ref("Parent"), null), "scheduled_at": ts,
			"component_id": ref("ComponentId"), "deployment_id": ref("DeploymentId"), "metadata": ref("Metadata"), "scheduled_by": oneOf(ref("ExecutionId"), null),
		}),
		"Locked": closedObj([]string{"component_id", "executor_id", "deployment_id", "run_id", "lock_expires_at", "retry_config"}, map[string]any{
			"component_id": ref("ComponentId"), "executor_id": ref("ExecutorId"), "deployment_id": ref("DeploymentId"), "run_id": ref("RunId"),
			"lock_expires_at": ts, "retry_config": ref("RetryConfig"),
		}),
		"ExecutionRequest": desc("event payload, externally tagged: an object with exactly one key, or the bare strings paused, unpaused, cancellation_requested", oneOf(
			map[string]any{"type": "string", "enum": []string{"paused", "unpaused", "cancellation_requested"}},
			tagged("created", ref("Created")),
			tagged("locked", ref("Locked")),
			tagged("unlocked", closedObj([]string{"backoff_expires_at", "reason"}, map[string]any{"backoff_expires_at": desc("pending again at", ref("Timestamp")), "reason": str("")})),
			tagged("component_upgrade_finished", closedObj([]string{"component_digest", "deployment_id", "outcome"}, map[string]any{
				"component_digest": ref("Digest"), "deployment_id": ref("DeploymentId"),
				"outcome": oneOf(
					variant("type", "success", []string{"reason"}, map[string]any{"reason": oneOf(variant("type", "auto", nil, nil),
						variant("type", "manual", []string{"force"}, map[string]any{"force": typ("boolean", "")}))}),
					variant("type", "failed", []string{"reason"}, map[string]any{"reason": str("")})),
			})),
			tagged("temporarily_failed", closedObj([]string{"backoff_expires_at", "reason", "detail", "http_client_traces"}, map[string]any{
				"backoff_expires_at": ts, "reason": str(""), "detail": oneOf(str(""), null), "http_client_traces": traces})),
			tagged("temporarily_timed_out", closedObj([]string{"backoff_expires_at", "http_client_traces"}, map[string]any{
				"backoff_expires_at": ts, "http_client_traces": traces})),
			tagged("finished", closedObj([]string{"retval", "http_client_traces"}, map[string]any{"retval": ref("ReturnValue"), "http_client_traces": traces})),
			tagged("history_event", closedObj([]string{"event"}, map[string]any{"event": ref("HistoryEvent")})),
		)),
		"ExecutionEvent": closedObj([]string{"created_at", "event", "version"}, map[string]any{
			"created_at": ts, "event": ref("ExecutionRequest"), "backtrace_id": desc("when requested", ref("Version")), "version": ref("Version"),
		}),
		"AppendRequest": closedObj([]string{"created_at", "event"}, map[string]any{"created_at": ts, "event": ref("ExecutionRequest")}),
		"CreateRequest": closedObj([]string{"created_at", "execution_id", "ffqn", "params", "scheduled_at", "component_id", "deployment_id", "metadata"}, map[string]any{
			"created_at": ts, "execution_id": ref("ExecutionId"), "ffqn": ref("FunctionFqn"), "params": ref("Params"),
			"parent": oneOf(ref("Parent"), null), "scheduled_at": ts, "component_id": ref("ComponentId"), "deployment_id": ref("DeploymentId"),
			"metadata": ref("Metadata"), "scheduled_by": oneOf(ref("ExecutionId"), null), "paused": typ("boolean", "default false"),
		}),

		// --- responses ------------------------------------------------------------------------------
		"JoinSetResponse": desc("internally tagged by type", oneOf(
			variant("type", "delay_finished", []string{"delay_id", "result"}, map[string]any{"delay_id": ref("DelayId"), "result": ref("UnitResult")}),
			variant("type", "child_execution_finished", []string{"child_execution_id", "finished_version", "result"}, map[string]any{
				"child_execution_id": ref("DerivedExecutionId"), "finished_version": ref("Version"), "result": ref("ReturnValue")}))),
		"JoinSetResponseEvent": closedObj([]string{"join_set_id", "event"}, map[string]any{"join_set_id": ref("JoinSetId"), "event": ref("JoinSetResponse")}),
		"ResponseWithCursor": closedObj([]string{"event", "cursor"}, map[string]any{
			"event":  closedObj([]string{"created_at", "event"}, map[string]any{"created_at": ts, "event": ref("JoinSetResponseEvent")}),
			"cursor": uint("per-execution, 1-based, gapless"),
		}),
		"AppendResponseToExecution": closedObj([]string{"parent_execution_id", "created_at", "join_set_id", "child_execution_id", "finished_version", "result"}, map[string]any{
			"parent_execution_id": ref("ExecutionId"), "created_at": ts, "join_set_id": ref("JoinSetId"), "child_execution_id": ref("DerivedExecutionId"),
			"finished_version": ref("Version"), "result": ref("ReturnValue"),
		}),

		// --- states -----------------------------------------------------------------------------------
		"PendingStateLocked":    closedObj([]string{"locked_by", "lock_expires_at"}, map[string]any{"locked_by": ref("LockedBy"), "lock_expires_at": ts}),
		"PendingStatePendingAt": closedObj([]string{"scheduled_at", "last_lock"}, map[string]any{"scheduled_at": ts, "last_lock": oneOf(ref("LockedBy"), null)}),
		"PendingStateBlocked": closedObj([]string{"join_set_id", "lock_expires_at", "closing"}, map[string]any{
			"join_set_id": ref("JoinSetId"), "lock_expires_at": ts, "closing": typ("boolean", "")}),
		"PendingState": desc("internally tagged by status; paused and cancelling wrap the inner state under its name", oneOf(
			variant("status", "locked", []string{"locked_by", "lock_expires_at"}, map[string]any{"locked_by": ref("LockedBy"), "lock_expires_at": ts}),
			variant("status", "pending_at", []string{"scheduled_at", "last_lock"}, map[string]any{"scheduled_at": ts, "last_lock": oneOf(ref("LockedBy"), null)}),
			variant("status", "blocked_by_join_set", []string{"join_set_id", "lock_expires_at", "closing"}, map[string]any{
				"join_set_id": ref("JoinSetId"), "lock_expires_at": ts, "closing": typ("boolean", "")}),
			variant("status", "finished", []string{"version", "finished_at", "result_kind"}, map[string]any{
				"version": ref("Version"), "finished_at": ts,
				"result_kind": oneOf(map[string]any{"const": "ok"}, tagged("err", map[string]any{"const": "error"}),
					tagged("err", tagged("execution_failure", failureKind)))}),
			oneOf(variant("status", "paused", []string{"PendingAt"}, map[string]any{"PendingAt": ref("PendingStatePendingAt")}),
				variant("status", "paused", []string{"BlockedByJoinSet"}, map[string]any{"BlockedByJoinSet": ref("PendingStateBlocked")})),
			oneOf(variant("status", "cancelling", []string{"PendingAt"}, map[string]any{"PendingAt": ref("PendingStatePendingAt")}),
				variant("status", "cancelling", []string{"BlockedByJoinSet"}, map[string]any{"BlockedByJoinSet": ref("PendingStateBlocked")}),
				variant("status", "cancelling", []string{"Locked"}, map[string]any{"Locked": ref("PendingStateLocked")})))),

		// --- backtraces -------------------------------------------------------------------------------
		"BacktraceInfo": closedObj([]string{"execution_id", "component_id", "version_min_including", "version_max_excluding", "wasm_backtrace"}, map[string]any{
			"execution_id": ref("ExecutionId"), "component_id": ref("ComponentId"), "version_min_including": ref("Version"), "version_max_excluding": ref("Version"),
			"wasm_backtrace": closedObj([]string{"frames"}, map[string]any{"frames": arr(closedObj([]string{"module", "func_name", "symbols"}, map[string]any{
				"module": str(""), "func_name": str(""),
				"symbols": arr(closedObj([]string{"func_name", "file", "line", "col"}, map[string]any{
					"func_name": oneOf(str(""), null), "file": oneOf(str(""), null), "line": oneOf(uint(""), null), "col": oneOf(uint(""), null)})),
			}))}),
		}),
	}
}
