package wire

import (
	"encoding/base64"
	"fmt"
	"strconv"

	"github.com/stela-dev/stela/core"
)

// Typed answers of the public routes that clients decode.

// LogEntryJSON is an item of GET /v1/executions/{execution_id}/logs.
type LogEntryJSON struct {
	Cursor      string           `json:"cursor"`
	RunID       core.RunId       `json:"run_id"`
	ExecutionID core.ExecutionId `json:"execution_id"`
	Type        string           `json:"type"`
	CreatedAt   core.Timestamp   `json:"created_at"`
	Level       string           `json:"level,omitempty"`
	Message     *string          `json:"message,omitempty"`
	Payload     *string          `json:"payload,omitempty"`
	StreamType  string           `json:"stream_type,omitempty"`
}

var (
	logLevelNames  = map[core.LogLevel]string{core.LogTrace: "trace", core.LogDebug: "debug", core.LogInfo: "info", core.LogWarn: "warn", core.LogError: "error"}
	logLevelByName = map[string]core.LogLevel{"trace": core.LogTrace, "debug": core.LogDebug, "info": core.LogInfo, "warn": core.LogWarn, "error": core.LogError}
	streamNames    = map[core.LogStreamType]string{core.StreamStdout: "stdout", core.StreamStderr: "stderr"}
	streamByName   = map[string]core.LogStreamType{"stdout": core.StreamStdout, "stderr": core.StreamStderr}
)

// EncodeLogCursor renders a log cursor as the logs route's opaque `cursor`
// (Obelisk's: base64 of the JSON i64).
func EncodeLogCursor(c core.LogCursor) string {
	return base64.StdEncoding.EncodeToString([]byte(strconv.FormatInt(int64(c), 10)))
}

// DecodeLogCursor reads a cursor EncodeLogCursor rendered.
func DecodeLogCursor(s string) (core.LogCursor, bool) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0, false
	}
	return core.LogCursor(n), true
}

// NewLogEntryJSON converts a stored row to its wire form.
func NewLogEntryJSON(row core.LogEntryRow) LogEntryJSON {
	it := LogEntryJSON{Cursor: EncodeLogCursor(row.Cursor), RunID: row.RunID, ExecutionID: row.ExecutionID, CreatedAt: row.Entry.CreatedAt}
	if row.Entry.IsStream() {
		it.Type = "stream"
		p := base64.StdEncoding.EncodeToString(row.Entry.Payload)
		it.Payload = &p
		it.StreamType = streamNames[row.Entry.StreamType]
	} else {
		it.Type = "log"
		it.Level = logLevelNames[row.Entry.Level]
		m := row.Entry.Message
		it.Message = &m
	}
	return it
}

// DeploymentStateJSON is an item of GET /v1/deployments.
type DeploymentStateJSON struct {
	DeploymentID             core.DeploymentId     `json:"deployment_id"`
	Description              *string               `json:"description"`
	Digest                   core.ContentDigest    `json:"digest"`
	Status                   core.DeploymentStatus `json:"status"`
	CreatedAt                core.Timestamp        `json:"created_at"`
	LastActiveAt             *core.Timestamp       `json:"last_active_at"`
	Locked                   uint32                `json:"locked"`
	Pending                  uint32                `json:"pending"`
	Scheduled                uint32                `json:"scheduled"`
	Blocked                  uint32                `json:"blocked"`
	Paused                   uint32                `json:"paused"`
	Cancelling               uint32                `json:"cancelling"`
	FinishedOk               uint32                `json:"finished_ok"`
	FinishedError            uint32                `json:"finished_error"`
	FinishedExecutionFailure uint32                `json:"finished_execution_failure"`
	ComponentSummary         *ComponentSummaryJSON `json:"component_summary"`
}

// ComponentSummaryJSON is DeploymentStateJSON.ComponentSummary.
type ComponentSummaryJSON struct {
	Components []ComponentCountJSON `json:"components"`
}

// ComponentCountJSON is one entry of ComponentSummaryJSON.
type ComponentCountJSON struct {
	ComponentType core.ComponentType `json:"component_type"`
	Count         int                `json:"count"`
}

// DeploymentJSON is the answer of GET /v1/deployments/{deployment_id}.
type DeploymentJSON struct {
	DeploymentID   core.DeploymentId           `json:"deployment_id"`
	Description    *string                     `json:"description"`
	Digest         core.ContentDigest          `json:"digest"`
	Status         core.DeploymentStatus       `json:"status"`
	CreatedAt      core.Timestamp              `json:"created_at"`
	LastActiveAt   *core.Timestamp             `json:"last_active_at"`
	DeploymentToml string                      `json:"deployment_toml"`
	Files          []core.DeploymentFileRecord `json:"files"`
}

// ComponentJSON is an item of GET /v1/components.
type ComponentJSON struct {
	ComponentID core.ComponentId                     `json:"component_id"`
	Files       []core.DeploymentComponentFileDetail `json:"files"`
	Exports     *[]FunctionJSON                      `json:"exports,omitempty"`
	Imports     *[]FunctionJSON                      `json:"imports,omitempty"`
}

// FunctionJSON is an export or import of ComponentJSON.
type FunctionJSON struct {
	FFQN           core.FunctionFqn              `json:"ffqn"`
	ParameterTypes []core.PersistedParameterType `json:"parameter_types"`
	ReturnType     string                        `json:"return_type"`
	Extension      *string                       `json:"extension,omitempty"`
	Submittable    bool                          `json:"submittable"`
}

// Core converts a log entry back to the stored row.
func (it LogEntryJSON) Core() (core.LogEntryRow, error) {
	cur, ok := DecodeLogCursor(it.Cursor)
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
func (d DeploymentStateJSON) Core() core.DeploymentState {
	return core.DeploymentState{DeploymentID: d.DeploymentID, Description: d.Description, Digest: d.Digest,
		Locked: d.Locked, Pending: d.Pending, Scheduled: d.Scheduled, Blocked: d.Blocked, Paused: d.Paused,
		Cancelling: d.Cancelling, FinishedOk: d.FinishedOk, FinishedError: d.FinishedError,
		FinishedExecutionFailure: d.FinishedExecutionFailure, CreatedAt: d.CreatedAt, LastActiveAt: d.LastActiveAt, Status: d.Status}
}

// Core converts the deployment back to core's record (the fields the route shows).
func (d DeploymentJSON) Core() core.DeploymentRecord {
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

// LogLevelName returns the wire name of a log level ("trace" … "error").
func LogLevelName(l core.LogLevel) (string, bool) {
	n, ok := logLevelNames[l]
	return n, ok
}

// LogLevelByName returns the log level of a wire name.
func LogLevelByName(name string) (core.LogLevel, bool) {
	l, ok := logLevelByName[name]
	return l, ok
}

// StreamTypeByName returns the stream type of a wire name.
func StreamTypeByName(name string) (core.LogStreamType, bool) {
	s, ok := streamByName[name]
	return s, ok
}

// StreamTypeName returns the wire name of a stream type ("stdout", "stderr").
func StreamTypeName(s core.LogStreamType) (string, bool) {
	n, ok := streamNames[s]
	return n, ok
}
