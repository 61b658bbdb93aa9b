package wire

import "encoding/json"

// PathExecutionSignal sends a signal to a workflow execution (Stela
// extension, docs/http-api.md "Signals").
const PathExecutionSignal = "/v1/executions/{execution_id}/signals/{name}"

// MaxSignalKeyLen bounds a signal's idempotency key.
const MaxSignalKeyLen = 128

// SignalBody is the body of POST /v1/executions/{id}/signals/{name}: the
// signal's JSON value and an idempotency key (a retry with the same key and
// value is delivered once; empty: the server draws one, so a retry is a
// second signal).
type SignalBody struct {
	Value json.RawMessage `json:"value"`
	Key   string          `json:"key,omitempty"`
}

// SignalResponse answers a signal: its sequence number among the signals
// of that name (the k-th is received by the workflow's k-th wait) and the
// stub execution holding it.
type SignalResponse struct {
	Seq             uint64 `json:"seq"`
	StubExecutionID string `json:"stub_execution_id"`
}
