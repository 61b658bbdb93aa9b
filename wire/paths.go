package wire

import (
	"net/url"
	"strings"
)

// Paths of the routes, as net/http's ServeMux patterns: a segment {name}
// is a path parameter (Path fills them). The route table of package
// httpapi registers exactly these, and the client sends exactly these.
const (
	// The public routes (Obelisk's web API v1 and Stela's extensions).
	PathOpenAPI            = "/openapi.json"
	PathExecutionID        = "/v1/execution-id"
	PathExecutions         = "/v1/executions"
	PathExecutionCounts    = "/v1/execution-counts"
	PathExecution          = "/v1/executions/{execution_id}"
	PathExecutionStatus    = "/v1/executions/{execution_id}/status"
	PathExecutionEvents    = "/v1/executions/{execution_id}/events"
	PathExecutionResponses = "/v1/executions/{execution_id}/responses"
	PathExecutionLogs      = "/v1/executions/{execution_id}/logs"
	PathExecutionCancel    = "/v1/executions/{execution_id}/cancel"
	PathExecutionPause     = "/v1/executions/{execution_id}/pause"
	PathExecutionUnpause   = "/v1/executions/{execution_id}/unpause"
	PathExecutionStub      = "/v1/executions/{execution_id}/stub"
	PathExecutionReplay    = "/v1/executions/{execution_id}/replay"
	PathExecutionAdvance   = "/v1/executions/{execution_id}/advance"
	PathBacktracePersist   = "/v1/executions/{execution_id}/backtrace/persist"
	PathBacktrace          = "/v1/executions/{execution_id}/backtrace"
	PathBacktraceSource    = "/v1/executions/{execution_id}/backtrace/source"
	PathExecutionUpgrade   = "/v1/executions/{execution_id}/upgrade"
	PathExecutionHistory   = "/v1/executions/{execution_id}/history"
	PathDelayCancel        = "/v1/delays/{delay_id}/cancel"
	PathDelayPause         = "/v1/delays/{delay_id}/pause"
	PathDelayUnpause       = "/v1/delays/{delay_id}/unpause"
	PathComponents         = "/v1/components"
	PathComponentWit       = "/v1/components/{digest}/wit"
	PathFunctions          = "/v1/functions"
	PathFunctionWit        = "/v1/functions/wit"
	PathFile               = "/v1/files/{digest}"
	PathDeployments        = "/v1/deployments"
	PathDeployment         = "/v1/deployments/{deployment_id}"
	PathDeploymentSwitch   = "/v1/deployments/{deployment_id}/switch"
	PathDeploymentID       = "/v1/deployment-id"
	// The worker routes.
	PathWorkerLockPendingByFFQNs           = "/v1/worker/lock/pending-by-ffqns"
	PathWorkerLockPendingByFFQNsAuto       = "/v1/worker/lock/pending-by-ffqns-auto"
	PathWorkerLockPendingByComponentDigest = "/v1/worker/lock/pending-by-component-digest"
	PathWorkerLockOne                      = "/v1/worker/lock/one"
	PathWorkerAppend                       = "/v1/worker/append"
	PathWorkerAppendBatch                  = "/v1/worker/append-batch"
	PathWorkerCreateChildren               = "/v1/worker/append-batch/create-children"
	PathWorkerRespondToParent              = "/v1/worker/append-batch/respond-to-parent"
	PathWorkerAppendMany                   = "/v1/worker/append-batch/many"
	PathWorkerDelayResponse                = "/v1/worker/append-batch/delay-response"
	PathWorkerFireAppend                   = "/v1/worker/append-batch/fire-delay"
	PathWorkerStubResponse                 = "/v1/worker/stub-response"
	PathWorkerExecutionLog                 = "/v1/worker/executions/{execution_id}/log"
	PathWorkerNextResponses                = "/v1/worker/executions/{execution_id}/next-responses"
	PathWorkerHistory                      = "/v1/worker/executions/{execution_id}/history"
	PathWorkerResult                       = "/v1/worker/executions/{execution_id}/result"
	PathWorkerCreate                       = "/v1/worker/create"
	PathWorkerCreateLocked                 = "/v1/worker/create-locked"
	PathWorkerFireDelay                    = "/v1/worker/delays/{delay_id}/fire"
	PathWorkerLogs                         = "/v1/worker/logs"
	PathWorkerBacktraces                   = "/v1/worker/backtraces"
	PathWorkerExpiredTimers                = "/v1/worker/expired-timers"
	PathWorkerCancelling                   = "/v1/worker/cancelling"
	PathWorkerSweep                        = "/v1/worker/sweep"
)

// WorkerLockRoutes and WorkerWriteRoutes are the path prefixes of the
// worker routes a deployment serves from functions of their own (lock and
// append: functions.LockRoutes, functions.AppendRoutes), which clients may
// also reach through those functions' URLs (client.WithFunctionURLs).
var (
	WorkerLockRoutes  = []string{"/v1/worker/lock/"}
	WorkerWriteRoutes = []string{PathWorkerAppend, PathWorkerStubResponse, PathWorkerLogs, PathWorkerBacktraces}
)

// Path returns pattern with its path parameters, in order, replaced by
// args, each escaped (url.PathEscape). A pattern with more parameters than
// args keeps the rest as they are.
func Path(pattern string, args ...string) string {
	if len(args) == 0 {
		return pattern
	}
	segs := strings.Split(pattern, "/")
	for i, seg := range segs {
		if len(args) == 0 {
			break
		}
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			segs[i] = url.PathEscape(args[0])
			args = args[1:]
		}
	}
	return strings.Join(segs, "/")
}
