package httpapi

import (
	"encoding/base64"
	"fmt"

	"github.com/stela-dev/stela/core"
)

// Wire forms of public answers, exported for clients (package client):
// decoding them with the handler's own types keeps the two sides of the
// contract in one place.

// LogEntryJSON is an item of GET /v1/executions/{id}/logs.
type LogEntryJSON = logItem

// DeploymentStateJSON is an item of GET /v1/deployments.
type DeploymentStateJSON = deploymentStateJSON

// ComponentSummaryJSON is DeploymentStateJSON.ComponentSummary.
type ComponentSummaryJSON = componentSummaryJSON

// ComponentCountJSON is one entry of ComponentSummaryJSON.
type ComponentCountJSON = componentCountJSON

// DeploymentJSON is the answer of GET /v1/deployments/{deployment_id}.
type DeploymentJSON = deploymentJSON

// ComponentJSON is an item of GET /v1/components.
type ComponentJSON = componentJSON

// FunctionJSON is an export or import of ComponentJSON.
type FunctionJSON = functionJSON

// Core converts a log entry back to the stored row.
func (it logItem) Core() (core.LogEntryRow, error) {
	cur, ok := decodeLogCursor(it.Cursor)
	if !ok {
		return core.LogEntryRow{}, fmt.Errorf("invalid log cursor %q", it.Cursor)
	}
	row := core.LogEntryRow{Cursor: cur, RunID: it.RunID, ExecutionID: it.ExecutionID, Entry: core.LogEntry{CreatedAt: it.CreatedAt}}
	switch it.Type {
	case "log":
		lv, ok := logLevelByName[it.Level]
		if !ok || it.Message == nil {
			return row, fmt.Errorf("log entry with level %q and message %v", it.Level, it.Message)
		}
		row.Entry.Level, row.Entry.Message = lv, *it.Message
	case "stream":
		st, ok := streamByName[it.StreamType]
		if !ok || it.Payload == nil {
			return row, fmt.Errorf("stream entry with stream_type %q and payload %v", it.StreamType, it.Payload)
		}
		b, err := base64.StdEncoding.DecodeString(*it.Payload)
		if err != nil {
			return row, fmt.Errorf("stream entry payload: %w", err)
		}
		row.Entry.StreamType, row.Entry.Payload = st, b
	default:
		return row, fmt.Errorf("unknown log entry type %q", it.Type)
	}
	return row, nil
}

// Core converts the deployment state back to core's (component summary aside).
func (d deploymentStateJSON) Core() core.DeploymentState {
	return core.DeploymentState{DeploymentID: d.DeploymentID, Description: d.Description, Digest: d.Digest,
		Locked: d.Locked, Pending: d.Pending, Scheduled: d.Scheduled, Blocked: d.Blocked, Paused: d.Paused,
		Cancelling: d.Cancelling, FinishedOk: d.FinishedOk, FinishedError: d.FinishedError,
		FinishedExecutionFailure: d.FinishedExecutionFailure, CreatedAt: d.CreatedAt, LastActiveAt: d.LastActiveAt, Status: d.Status}
}

// Core converts the deployment back to core's record (the fields the route shows).
func (d deploymentJSON) Core() core.DeploymentRecord {
	return core.DeploymentRecord{DeploymentID: d.DeploymentID, Description: d.Description, Digest: d.Digest,
		CreatedAt: d.CreatedAt, LastActiveAt: d.LastActiveAt, Status: d.Status, DeploymentToml: d.DeploymentToml, Files: d.Files}
}

// NewLogRowJSON converts a row to append to its wire form (POST /v1/worker/logs).
func NewLogRowJSON(row core.LogInfoAppendRow) LogRowJSON {
	out := LogRowJSON{ExecutionID: row.ExecutionID, RunID: row.RunID, CreatedAt: row.Entry.CreatedAt}
	if row.Entry.IsStream() {
		st := streamNames[row.Entry.StreamType]
		out.Type, out.StreamType, out.Payload = "stream", &st, row.Entry.Payload
		return out
	}
	lv, msg := logLevelNames[row.Entry.Level], row.Entry.Message
	out.Type, out.Level, out.Message = "log", &lv, &msg
	return out
}

// EncodeLogCursor renders a log cursor as the logs route's opaque `cursor`.
func EncodeLogCursor(c core.LogCursor) string { return encodeLogCursor(c) }

// LogLevelName returns the wire name of a log level ("trace" … "error").
func LogLevelName(l core.LogLevel) (string, bool) {
	n, ok := logLevelNames[l]
	return n, ok
}

// StreamTypeName returns the wire name of a stream type ("stdout", "stderr").
func StreamTypeName(s core.LogStreamType) (string, bool) {
	n, ok := streamNames[s]
	return n, ok
}
