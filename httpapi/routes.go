package httpapi

import (
	"net/http"
	"strings"

	"github.com/stela-dev/stela/wire"
)

// route is one entry of the single route table: it registers the handler
// on the mux and feeds the OpenAPI document.
type route struct {
	method  string
	path    string // ServeMux path; wildcards {name} are path parameters
	op      string // OpenAPI operationId
	tag     string
	summary string
	format  formatRule
	query   []param
	body    string // schema name of the JSON request body ("" = none)
	// bodyOptional marks a body that may be omitted.
	bodyOptional bool
	// resp lists the route's own answers; the OpenAPI generator adds the
	// common ones (400, 401, 406, 413, 415, 422, 500) where they apply.
	resp   []response
	handle func(*server, *call) error
}

// param documents a query parameter.
type param struct {
	name   string
	typ    string // string | boolean | integer | array
	desc   string
	enum   []string
	repeat bool
}

// response documents an answer of a route.
type response struct {
	status int
	schema string // component schema name; "" = no body; "text" = a text/plain string
	desc   string
}

func (rt *route) pattern() string { return rt.method + " " + rt.path }

// pathParams returns the wildcard names of the path, in order.
func (rt *route) pathParams() []string {
	var out []string
	for seg := range strings.SplitSeq(rt.path, "/") {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			out = append(out, strings.TrimSuffix(strings.TrimPrefix(seg, "{"), "}"))
		}
	}
	return out
}

// routeHandler adapts a table entry to http.Handler: negotiate, run, map errors.
func (s *server) routeHandler(rt *route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, ok := negotiate(r, rt.format)
		c := &call{s: s, w: w, r: r, f: f, compact: rt.tag == tagWorker}
		if !ok {
			c.fail(httpErr(http.StatusNotAcceptable, "not acceptable: supported types are application/json and text/plain"))
			return
		}
		if err := rt.handle(s, c); err != nil {
			c.fail(err)
		}
	})
}

// Query parameters shared by several routes.
var (
	qLength    = param{name: "length", typ: "integer", desc: "page size, non-zero; default 20, values above 100 are clamped"}
	qIncluding = param{name: "including_cursor", typ: "boolean", desc: "include the cursor itself (default false)"}
	qDirection = param{name: "direction", typ: "string", enum: []string{"older", "newer"}, desc: "page direction"}
	qFollow    = param{name: "follow", typ: "boolean", desc: "long-poll for the result, bounded by the server's follow wait (default 20 s)"}
	qDeployID  = param{name: "deployment_id", typ: "string", desc: "Dep_<ULID>; default: the current deployment"}
	qWaitMs    = param{name: "wait_ms", typ: "integer", desc: "wait up to this many milliseconds (clamped to the follow wait)"}
	qBTVersion = param{name: "version", typ: "string", desc: "`first`, `last` (default) or a version number"}
	qState     = param{name: "state", typ: "array", repeat: true, enum: stateNames(),
		desc: "only executions in one of these states (Stela extension; Obelisk has it in gRPC only)"}
	// qListFilters are the filters of GET /v1/executions shared with GET /v1/execution-counts.
	qListFilters = []param{
		{name: "ffqn_prefix", typ: "string", desc: "function name prefix"},
		{name: "show_derived", typ: "boolean", desc: "include child executions (default false)"},
		{name: "hide_finished", typ: "boolean", desc: "exclude finished executions (default false)"},
		{name: "execution_id_prefix", typ: "string", desc: "execution id prefix"},
		{name: "component_digest", typ: "string", desc: "sha256:<hex>"},
		{name: "deployment_id", typ: "string", desc: "Dep_<ULID>"},
	}
)

// Tags of the OpenAPI document.
const (
	tagExecutions  = "executions"
	tagDelays      = "delays"
	tagComponents  = "components"
	tagFunctions   = "functions"
	tagDeployments = "deployments"
	tagWorker      = "worker"
	tagMeta        = "meta"
)

// Schema names used as plain text bodies.
const schemaText = "text"

// Common answers.
var (
	respNotFound    = response{http.StatusNotFound, "Err", "not found"}
	respConflict    = response{http.StatusConflict, "Err", "conflict, version conflict or already finished"}
	respIllegal     = response{http.StatusUnprocessableEntity, "Err", "illegal state (reason verbatim)"}
	respNotImpl     = response{http.StatusNotImplemented, "Err", "not implemented by this server"}
	respNoContent   = response{http.StatusNoContent, "", "done"}
	respNextVersion = response{http.StatusOK, "NextVersion", "the next version to append at"}
)

// routes is the single route table.
var routes = []route{
	{method: "GET", path: wire.PathOpenAPI, op: "openapi", tag: tagMeta, summary: "This OpenAPI 3.1 document.",
		format: jsonOnly, resp: []response{{200, "OpenAPI", "the document"}}, handle: (*server).openapi},

	// --- executions -------------------------------------------------------------
	{method: "GET", path: wire.PathExecutionID, op: "generate_execution_id", tag: tagExecutions,
		summary: "Generate a new top-level execution id (no storage access).", format: textDefault,
		resp: []response{{200, "ExecutionId", "a new id"}}, handle: (*server).generateExecutionID},
	{method: "GET", path: wire.PathExecutions, op: "list_executions", tag: tagExecutions,
		summary: "List executions, newest first.", format: jsonDefault,
		query: append(append([]param(nil), qListFilters...), qState,
			param{name: "order", typ: "string", enum: []string{"created_at", "execution_id"}, desc: "Stela extension: the key pages sort by, default created_at (then execution id); an execution-id cursor needs order=execution_id"},
			param{name: "cursor", typ: "string", desc: "RFC 3339 timestamp (order=created_at) or an execution id (order=execution_id). Every full page answers Link: <?…>; rel=\"next\", the query of the page after it"},
			param{name: "cursor_execution_id", typ: "string", desc: "Stela extension, with a timestamp cursor: the id of the cursor row, so that executions created at the same instant page without loss or repeats"},
			qLength, qIncluding, param{name: "direction", typ: "string", enum: []string{"older", "newer"}, desc: "default older"}),
		resp: []response{{200, "ExecutionWithStateList", "executions, newest first; a full page answers Link: <?query>; rel=\"next\", the query of the page after it"}}, handle: (*server).listExecutions},
	{method: "GET", path: wire.PathExecutionCounts, op: "count_executions", tag: tagExecutions,
		summary: "Count the newest executions matching the list filters, per state (Stela extension).", format: jsonDefault,
		query: append(append([]param(nil), qListFilters...),
			param{name: "limit", typ: "integer", desc: "count at most this many of the newest executions; default 1000, values above 10000 are clamped"}),
		resp: []response{{200, "ExecutionCounts", "counts per state"}}, handle: (*server).countExecutions},
	{method: "POST", path: wire.PathExecutions, op: "submit_execution", tag: tagExecutions,
		summary: "Submit an execution with a server-generated id.", format: jsonDefault, query: []param{qFollow}, body: "SubmitRequest",
		resp: []response{{201, "Ok", "created: {\"ok\":\"E_…\"}, or with follow the RetVal"}, {202, "Ok", "follow: not finished within the bound; poll Location with ?follow=true"},
			{404, "Err", "ffqn not found"}}, handle: (*server).submitPost},
	{method: "PUT", path: wire.PathExecution, op: "submit_execution_with_id", tag: tagExecutions,
		summary: "Submit an execution idempotently under a client-chosen top-level id.", format: jsonDefault, query: []param{qFollow}, body: "SubmitRequest",
		resp: []response{{201, "Ok", "created, or with follow the RetVal"}, {200, "Ok", "already exists with the same params, or with follow the RetVal"},
			{202, "Ok", "follow: not finished within the bound"}, {404, "Err", "ffqn not found"},
			{409, "Err", "exists with different params"}}, handle: (*server).submitPut},
	{method: "GET", path: wire.PathExecution, op: "get_execution_result", tag: tagExecutions,
		summary: "Get the result (RetVal) of a finished execution.", format: jsonOnly, query: []param{qFollow},
		resp: []response{{200, "RetVal", "the result"}, respNotFound, {425, "Err", "not finished yet"}}, handle: (*server).getRetval},
	{method: "GET", path: wire.PathExecutionStatus, op: "get_execution_status", tag: tagExecutions,
		summary: "Get the current state of an execution.", format: jsonDefault,
		resp: []response{{200, "ExecutionWithState", "the state"}, respNotFound}, handle: (*server).getStatus},
	{method: "GET", path: wire.PathExecutionEvents, op: "list_execution_events", tag: tagExecutions,
		summary: "List execution events, ascending by version.", format: jsonDefault,
		query: []param{{name: "version", typ: "integer", desc: "version cursor"}, qLength, qIncluding,
			{name: "direction", typ: "string", enum: []string{"older", "newer"}, desc: "default newer"},
			{name: "include_backtrace_id", typ: "boolean", desc: "add backtrace_id to events (default false)"}},
		resp: []response{{200, "ListExecutionEventsResponse", "a page of events"}, respNotFound}, handle: (*server).listEvents},
	{method: "GET", path: wire.PathExecutionResponses, op: "list_execution_responses", tag: tagExecutions,
		summary: "List join-set responses, ascending by cursor.", format: jsonDefault,
		query: []param{{name: "join_set", typ: "string", desc: "named join set name (n:<name>), non-empty"}, {name: "cursor", typ: "integer", desc: "response cursor"},
			qLength, qIncluding, {name: "direction", typ: "string", enum: []string{"older", "newer"}, desc: "default newer"}},
		resp: []response{{200, "ListResponsesResponse", "a page of responses"}}, handle: (*server).listResponses},
	{method: "GET", path: wire.PathExecutionLogs, op: "list_execution_logs", tag: tagExecutions,
		summary: "List logs and std streams of an execution.", format: jsonDefault,
		query: []param{
			{name: "level", typ: "array", repeat: true, enum: []string{"trace", "debug", "info", "warn", "error"}, desc: "levels (default all)"},
			{name: "stream_type", typ: "array", repeat: true, enum: []string{"stdout", "stderr"}, desc: "streams (default all)"},
			{name: "show_logs", typ: "boolean", desc: "default true"}, {name: "show_streams", typ: "boolean", desc: "default true"},
			{name: "show_derived", typ: "boolean", desc: "include child executions' logs (default false)"},
			{name: "show_run_id", typ: "boolean", desc: "text output only"},
			{name: "cursor", typ: "string", desc: "an item's opaque cursor, or (legacy) an RFC 3339 timestamp"},
			{name: "after", typ: "string", desc: "RFC 3339; only entries created after it"},
			qLength, qIncluding, {name: "direction", typ: "string", enum: []string{"older", "newer"}, desc: "default newer; older returns newest first"},
		},
		resp: []response{{200, "LogEntryList", "log entries"}}, handle: (*server).listLogs},
	{method: "PUT", path: wire.PathExecutionCancel, op: "cancel_execution", tag: tagExecutions,
		summary: "Request cancellation of an activity or a cancellable workflow.", format: jsonDefault,
		resp: []response{{200, "Ok", "cancellation requested"}, respNotFound, {409, "Err", "already finished / already cancelling"},
			{422, "Err", "not cancellable"}}, handle: (*server).cancelExecution},
	{method: "PUT", path: wire.PathExecutionPause, op: "pause_execution", tag: tagExecutions,
		summary: "Pause an execution.", format: jsonDefault,
		resp: []response{{200, "Ok", "paused"}, respNotFound, {409, "Err", "already finished"}, respIllegal}, handle: (*server).pauseExecution},
	{method: "PUT", path: wire.PathExecutionUnpause, op: "unpause_execution", tag: tagExecutions,
		summary: "Unpause an execution.", format: jsonDefault,
		resp: []response{{200, "Ok", "unpaused"}, respNotFound, {409, "Err", "already finished"}, respIllegal}, handle: (*server).unpauseExecution},
	{method: "PUT", path: wire.PathExecutionStub, op: "stub_execution", tag: tagExecutions,
		summary: "Give a stub child (derived id, activity_stub) its return value.", format: jsonOnly, body: "ReturnValue",
		resp:   []response{{200, "Ok", "stubbed"}, {404, "Err", "not found / function not found"}, {409, "Err", "already stubbed with a different value"}},
		handle: (*server).stubExecution},
	{method: "POST", path: wire.PathExecutionSignal, op: "signal_execution", tag: tagExecutions,
		summary: "Send a signal to a workflow execution (Stela extension): received by the workflow's next wait for that name.", format: jsonOnly, body: "SignalBody",
		resp:   []response{{200, "SignalResponse", "the signal's sequence number and stub"}, respNotFound, {409, "Err", "already finished"}},
		handle: (*server).signalExecution},
	{method: "PUT", path: wire.PathExecutionReplay, op: "replay_execution", tag: tagExecutions,
		summary: "Replay a workflow (needs the engine).", format: jsonDefault, resp: []response{respNotImpl}, handle: notImplemented},
	{method: "PUT", path: wire.PathExecutionAdvance, op: "advance_execution", tag: tagExecutions,
		summary: "Apply captured writes of a replay (needs the engine).", format: jsonDefault, resp: []response{respNotImpl}, handle: notImplemented},
	{method: "PUT", path: wire.PathBacktracePersist, op: "persist_backtraces", tag: tagExecutions,
		summary: "Persist replay backtraces (needs the engine).", format: jsonDefault, resp: []response{respNotImpl}, handle: notImplemented},
	{method: "GET", path: wire.PathBacktrace, op: "get_backtrace", tag: tagExecutions,
		summary: "Get a stored backtrace.", format: jsonDefault, query: []param{qBTVersion},
		resp: []response{{200, "BacktraceInfo", "the backtrace"}, {404, "Err", "backtrace not found"}}, handle: (*server).getBacktrace},
	{method: "GET", path: wire.PathBacktraceSource, op: "get_backtrace_source", tag: tagExecutions,
		summary: "Get a source file referenced by a backtrace.", format: textDefault,
		query:  []param{{name: "file", typ: "string", desc: "file name as in the backtrace (required)"}, qBTVersion},
		resp:   []response{{200, schemaText, "the source"}, {404, "Err", "backtrace / source file / file not found"}, respNotImpl},
		handle: (*server).getBacktraceSource},
	{method: "GET", path: wire.PathExecutionHistory, op: "export_execution_history", tag: tagExecutions,
		summary: "Export an execution's history for replay tests (Stela extension: the file of `stela execution history export`).", format: jsonOnly,
		resp: []response{{200, "ExecutionHistory", "the history, format stela-history/1"}, respNotFound}, handle: (*server).exportHistory},
	{method: "PUT", path: wire.PathExecutionUpgrade, op: "upgrade_execution", tag: tagExecutions,
		summary: "Switch an execution to another component digest, after a replay check by a worker of the new digest unless skip_determinism_check.", format: jsonDefault, body: "UpgradeRequest",
		resp: []response{{200, "Ok", "upgraded"}, {404, "Err", "not found or the current digest is not `old`; `new component not found…`: no worker of `new` took the replay check in time"},
			{409, "Err", "already finished"}, {422, "Err", "`Replay failed: version N: …`: the new code does not replay the history"}}, handle: (*server).upgradeExecution},

	// --- delays -------------------------------------------------------------------
	{method: "PUT", path: wire.PathDelayCancel, op: "cancel_delay", tag: tagDelays,
		summary: "Cancel a delay (idempotent).", format: jsonDefault,
		resp: []response{{200, "Ok", "cancelled"}, respNotFound, {409, "Err", "already finished"}}, handle: (*server).cancelDelay},
	{method: "PUT", path: wire.PathDelayPause, op: "pause_delay", tag: tagDelays,
		summary: "Pause a delay.", format: jsonDefault,
		resp: []response{{200, "Ok", "paused"}, {404, "Err", "the delay no longer exists"}}, handle: (*server).pauseDelay},
	{method: "PUT", path: wire.PathDelayUnpause, op: "unpause_delay", tag: tagDelays,
		summary: "Unpause a delay.", format: jsonDefault,
		resp: []response{{200, "Ok", "unpaused"}, {404, "Err", "the delay no longer exists"}}, handle: (*server).unpauseDelay},

	// --- components, functions, files -------------------------------------------------
	{method: "GET", path: wire.PathComponents, op: "list_components", tag: tagComponents,
		summary: "List the components of a deployment.", format: jsonDefault,
		query: []param{qDeployID,
			{name: "type", typ: "string", enum: []string{"activity", "activity_stub", "workflow", "webhook_endpoint", "cron"}, desc: "component type"},
			{name: "name", typ: "string", desc: "component name"}, {name: "digest", typ: "string", desc: "component digest"},
			{name: "ffqn", typ: "string", desc: "only components exporting this function"},
			{name: "exports", typ: "boolean", desc: "include exports"}, {name: "imports", typ: "boolean", desc: "include imports"},
			{name: "extensions", typ: "boolean", desc: "include extension functions (default false)"},
			{name: "submittable", typ: "boolean", desc: "only exports with this submittable flag"}},
		resp: []response{{200, "ComponentList", "components, by type then name"}}, handle: (*server).listComponents},
	{method: "GET", path: wire.PathComponentWit, op: "get_component_wit", tag: tagComponents,
		summary: "Get a component's WIT.", format: textOnly, query: []param{qDeployID},
		resp: []response{{200, schemaText, "WIT"}, {404, "Err", "component not found"}}, handle: (*server).getComponentWit},
	{method: "GET", path: wire.PathFunctions, op: "list_functions", tag: tagFunctions,
		summary: "List functions of the active deployment (needs the engine's registry).", format: jsonDefault,
		resp: []response{respNotImpl}, handle: notImplemented},
	{method: "GET", path: wire.PathFunctionWit, op: "get_function_wit", tag: tagFunctions,
		summary: "Get one function's WIT (needs the engine's registry).", format: textOnly,
		resp: []response{respNotImpl}, handle: notImplemented},
	{method: "GET", path: wire.PathFile, op: "get_file", tag: tagDeployments,
		summary: "Read a blob from the content-addressed store.", format: bytesOnly,
		resp: []response{{200, "Bytes", "the blob"}, {404, "Err", "file not found"}, respNotImpl}, handle: (*server).getFile},

	// --- deployments --------------------------------------------------------------
	{method: "GET", path: wire.PathDeployments, op: "list_deployments", tag: tagDeployments,
		summary: "List deployments with execution counts, descending by id.", format: jsonDefault,
		query: []param{{name: "cursor_from", typ: "string", desc: "Dep_<ULID>"}, qLength, qIncluding,
			{name: "include_derived", typ: "boolean", desc: "count child executions too"},
			{name: "include_component_summary", typ: "boolean", desc: "add component counts per type"}},
		resp: []response{{200, "DeploymentStateList", "deployments"}, respNotImpl}, handle: (*server).listDeployments},
	{method: "POST", path: wire.PathDeployments, op: "submit_deployment", tag: tagDeployments,
		summary: "Record an SDK worker's components as a deployment, idempotently (Stela extension; Obelisk's WASM deployments need the engine).", format: jsonDefault,
		body: "WorkerDeployment",
		resp: []response{{200, "DeploymentId", "the deployment the worker belongs to"}}, handle: (*server).registerDeployment},
	{method: "GET", path: wire.PathDeployment, op: "get_deployment", tag: tagDeployments,
		summary: "Get a deployment.", format: jsonDefault,
		query: []param{{name: "include_generated_metadata", typ: "boolean", desc: "accepted; the stored TOML is returned as stored"}},
		resp:  []response{{200, "Deployment", "the deployment"}, {404, "Err", "deployment not found"}, respNotImpl}, handle: (*server).getDeployment},
	{method: "PUT", path: wire.PathDeploymentSwitch, op: "switch_deployment", tag: tagDeployments,
		summary: "Switch the active deployment (needs the engine).", format: jsonDefault,
		resp: []response{respNotImpl}, handle: notImplemented},
	{method: "GET", path: wire.PathDeploymentID, op: "get_current_deployment_id", tag: tagDeployments,
		summary: "Get the current deployment id (enqueued, else active) from storage.", format: textDefault,
		resp: []response{{200, "DeploymentId", "the id"}, {404, "Err", "no current deployment"}, respNotImpl}, handle: (*server).getCurrentDeploymentID},

	// --- worker -----------------------------------------------------------------------
	{method: "POST", path: wire.PathWorkerLockPendingByFFQNs, op: "worker_lock_pending_by_ffqns", tag: tagWorker,
		summary: "Lock pending executions of the given functions.", format: jsonOnly, body: "LockPendingRequest",
		resp: []response{{200, "LockedExecutionList", "the locked executions (maybe none)"}}, handle: (*server).lockPendingByFFQNs},
	{method: "POST", path: wire.PathWorkerLockPendingByFFQNsAuto, op: "worker_lock_pending_by_ffqns_auto", tag: tagWorker,
		summary: "Lock pending executions for an auto-upgrading workflow component.", format: jsonOnly, body: "LockPendingRequest",
		resp: []response{{200, "LockedExecutionList", "the locked executions (maybe none)"}}, handle: (*server).lockPendingByFFQNsAuto},
	{method: "POST", path: wire.PathWorkerLockPendingByComponentDigest, op: "worker_lock_pending_by_component_digest", tag: tagWorker,
		summary: "Lock pending executions whose current digest is component_id.component_digest.", format: jsonOnly, body: "LockPendingRequest",
		resp: []response{{200, "LockedExecutionList", "the locked executions (maybe none)"}}, handle: (*server).lockPendingByDigest},
	{method: "POST", path: wire.PathWorkerLockOne, op: "worker_lock_one", tag: tagWorker,
		summary: "Lock one execution at a version.", format: jsonOnly, body: "LockOneRequest",
		resp: []response{{200, "LockedExecution", "the locked execution"}, respNotFound, respConflict, respIllegal}, handle: (*server).lockOne},
	{method: "POST", path: wire.PathWorkerAppend, op: "worker_append", tag: tagWorker,
		summary: "Append one event.", format: jsonOnly, body: "AppendBody",
		resp: []response{respNextVersion, respNotFound, respConflict, respIllegal}, handle: (*server).workerAppend},
	{method: "POST", path: wire.PathWorkerAppendBatch, op: "worker_append_batch", tag: tagWorker,
		summary: "Append a batch of events.", format: jsonOnly, body: "AppendBatchBody",
		resp: []response{respNextVersion, respNotFound, respConflict, respIllegal}, handle: (*server).workerAppendBatch},
	{method: "POST", path: wire.PathWorkerCreateChildren, op: "worker_append_batch_create_children", tag: tagWorker,
		summary: "Append a batch and create child executions atomically.", format: jsonOnly, body: "CreateChildrenBody",
		resp: []response{{http.StatusOK, "CreateChildrenAnswer", "the next version to append at, and the children created locked (eager dispatch)"}, respNotFound, respConflict, respIllegal}, handle: (*server).workerCreateChildren},
	{method: "POST", path: wire.PathWorkerRespondToParent, op: "worker_append_batch_respond_to_parent", tag: tagWorker,
		summary: "Append a child's batch and its response to the parent atomically.", format: jsonOnly, body: "RespondToParentBody",
		resp: []response{{http.StatusOK, "RespondToParentAnswer", "the child's next version and its response's cursor in the parent"}, respNotFound, respConflict, respIllegal}, handle: (*server).workerRespondToParent},
	{method: "POST", path: wire.PathWorkerAppendMany, op: "worker_append_many", tag: tagWorker,
		summary: "Append to (or finish and respond from) many executions in one request, each atomically on its own.", format: jsonOnly, body: "AppendManyBody",
		resp: []response{{200, "AppendManyResults", "one result per item: next_version, or the status and message of the item's own route"}}, handle: (*server).workerAppendMany},
	{method: "POST", path: wire.PathWorkerDelayResponse, op: "worker_append_batch_with_delay_response", tag: tagWorker,
		summary: "Append a batch and a due delay's response atomically.", format: jsonOnly, body: "DelayResponseBody",
		resp: []response{respNextVersion, respNotFound, respConflict, respIllegal}, handle: (*server).workerDelayResponse},
	{method: "POST", path: wire.PathWorkerFireAppend, op: "worker_append_batch_fire_delay", tag: tagWorker,
		summary: "Fire a delay due at the store's time and append the batch that follows its response, atomically (fire-and-continue); nothing is written when the delay is not due or was cancelled.", format: jsonOnly, body: "FireAppendBody",
		resp: []response{{http.StatusOK, "FireAppendAnswer", "fired or answered (the batch appended: next_version), not_due or cancelled (nothing written)"}, respNotFound, respConflict, respIllegal}, handle: (*server).workerFireAppend},
	{method: "POST", path: wire.PathWorkerFireDelay, op: "worker_fire_delay", tag: tagWorker,
		summary: "Fire a delay that is due at the store's time (its DelayFinished(Ok) response, as the timers sweep records it); a worker awaiting the sleep calls it at the expiry.", format: jsonOnly,
		resp: []response{{http.StatusOK, "FireDelayAnswer", "fired, answered (it had its response) or not_due (not due at the store's time, or paused: nothing written)"}, respNotFound}, handle: (*server).workerFireDelay},
	{method: "POST", path: wire.PathWorkerStubResponse, op: "worker_upsert_stub_response", tag: tagWorker,
		summary: "Finish a stub child and respond to its parent (idempotent).", format: jsonOnly, body: "StubResponseBody",
		resp: []response{respNoContent, respNotFound, respConflict}, handle: (*server).workerStubResponse},
	{method: "GET", path: wire.PathWorkerExecutionLog, op: "worker_get_execution_log", tag: tagWorker,
		summary: "Read the whole execution log.", format: jsonOnly,
		resp: []response{{200, "ExecutionLog", "the log"}, respNotFound}, handle: (*server).workerGetLog},
	{method: "GET", path: wire.PathWorkerNextResponses, op: "worker_subscribe_to_next_responses", tag: tagWorker,
		summary: "Responses after a cursor; with wait_ms, wait (bounded) for the next ones.", format: jsonOnly,
		query: []param{{name: "last_response", typ: "integer", desc: "cursor of the last response seen (default 0)"}, qWaitMs},
		resp:  []response{{200, "Responses", "responses after the cursor (empty when the wait elapsed)"}}, handle: (*server).workerNextResponses},
	{method: "GET", path: wire.PathWorkerHistory, op: "worker_read_history", tag: tagWorker,
		summary: "History events from a version on and responses after a cursor, read consistently.", format: jsonOnly,
		query: []param{{name: "from_version", typ: "integer", desc: "first version of interest (default 0)"},
			{name: "after_cursor", typ: "integer", desc: "cursor of the last response held (default 0)"}},
		resp: []response{{200, "HistoryDelta", "what the worker lacks"}, respNotFound}, handle: (*server).workerHistory},
	{method: "GET", path: wire.PathWorkerResult, op: "worker_wait_for_finished_result", tag: tagWorker,
		summary: "The storage return value of a finished execution; with wait_ms, wait (bounded) for it.", format: jsonOnly,
		query:  []param{qWaitMs},
		resp:   []response{{200, "ReturnValue", "the return value"}, respNotFound, {425, "Err", "not finished (within the wait)"}},
		handle: (*server).workerResult},
	{method: "POST", path: wire.PathWorkerCreate, op: "worker_create", tag: tagWorker,
		summary: "Create an execution from a CreateRequest (ids, component and schedule chosen by the caller).", format: jsonOnly, body: "CreateRequest",
		resp: []response{respNextVersion, {409, "Err", "the id exists"}}, handle: (*server).workerCreate},
	{method: "POST", path: wire.PathWorkerCreateLocked, op: "worker_create_locked", tag: tagWorker,
		summary: "Create an execution (or a batch of them, each in its own commit) locked to the caller in the same commit when the lock takes it (eager start).", format: jsonOnly, body: "CreateLockedBody",
		resp: []response{{http.StatusOK, "CreateLockedAnswer", "request: the next version and the execution created locked (none when created pending); requests: one result per request"}, {409, "Err", "the id exists (request)"}}, handle: (*server).workerCreateLocked},
	{method: "POST", path: wire.PathWorkerLogs, op: "worker_append_logs", tag: tagWorker,
		summary: "Append log rows (fire-and-forget).", format: jsonOnly, body: "AppendLogsBody",
		resp: []response{respNoContent}, handle: (*server).workerAppendLogs},
	{method: "POST", path: wire.PathWorkerBacktraces, op: "worker_append_backtraces", tag: tagWorker,
		summary: "Store backtraces; returns how many were new.", format: jsonOnly, body: "AppendBacktracesBody",
		resp: []response{{200, "Inserted", "newly stored count"}}, handle: (*server).workerAppendBacktraces},
	{method: "GET", path: wire.PathWorkerExpiredTimers, op: "worker_get_expired_timers", tag: tagWorker,
		summary: "Due unpaused delays, then expired locks.", format: jsonOnly,
		query: []param{{name: "at", typ: "string", desc: "RFC 3339; default now"}},
		resp:  []response{{200, "ExpiredTimerList", "expired timers"}}, handle: (*server).workerExpiredTimers},
	{method: "GET", path: wire.PathWorkerCancelling, op: "worker_get_cancelling", tag: tagWorker,
		summary: "Cancelling executions, oldest first.", format: jsonOnly,
		query: []param{{name: "batch_size", typ: "integer", desc: "1..100, default 10"}},
		resp:  []response{{200, "ExecutionIdList", "execution ids"}}, handle: (*server).workerCancelling},
	{method: "POST", path: wire.PathWorkerSweep, op: "worker_sweep", tag: tagWorker,
		summary: "Run one timer sweep (expired locks and due delays).", format: jsonOnly, body: "SweepBody", bodyOptional: true,
		resp: []response{{200, "SweepResult", "what the sweep did"}, respNotImpl}, handle: (*server).workerSweep},
}
