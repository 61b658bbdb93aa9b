package core

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// HistoryFormat names the format of an exported ExecutionHistory.
const HistoryFormat = "stela-history/1"

// ExecutionHistory is one execution's history as `stela execution history
// export` writes it and a replay test reads it (worker.Worker.Replay,
// workertest.Replay): the events and responses in the JSON of the events
// and responses routes (docs/spec/semantics.md §2), which every backend
// stores the same way, so a history exported from `stela dev` and one
// from DynamoDB have the same form.
type ExecutionHistory struct {
	Format          string               `json:"format"`
	ExecutionID     ExecutionId          `json:"execution_id"`
	FFQN            FunctionFqn          `json:"ffqn"`
	ComponentDigest ComponentDigest      `json:"component_digest"`
	DeploymentID    DeploymentId         `json:"deployment_id"`
	Events          []ExecutionEvent     `json:"events"`
	Responses       []ResponseWithCursor `json:"responses"`
}

// HistoryOf is the exportable history of l.
func HistoryOf(l *ExecutionLog) (ExecutionHistory, error) {
	c := l.Created()
	if c == nil {
		return ExecutionHistory{}, invalidf("execution %s has no Created event", l.ExecutionID)
	}
	return ExecutionHistory{Format: HistoryFormat, ExecutionID: l.ExecutionID, FFQN: c.FFQN,
		ComponentDigest: l.ComponentDigest, DeploymentID: l.DeploymentID,
		Events: nonNil(l.Events), Responses: nonNil(l.Responses)}, nil
}

// Created returns the history's Created event (version 0).
func (h *ExecutionHistory) Created() (*Created, bool) {
	if len(h.Events) == 0 {
		return nil, false
	}
	c, ok := h.Events[0].Event.(*Created)
	return c, ok
}

// Marshal encodes h as indented JSON ending with a newline.
func (h ExecutionHistory) Marshal() ([]byte, error) {
	b, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// ParseHistory decodes an exported history: unknown fields are refused,
// the format must be HistoryFormat, and the events must start with
// Created at version 0 and follow each other by version.
func ParseHistory(b []byte) (ExecutionHistory, error) {
	var h ExecutionHistory
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return h, fmt.Errorf("execution history: %w", err)
	}
	if h.Format != HistoryFormat {
		return h, invalidf("execution history: format %q, want %q", h.Format, HistoryFormat)
	}
	if c, ok := h.Created(); !ok || c.FFQN != h.FFQN {
		return h, invalidf("execution history: the first event must be Created of %s", h.FFQN)
	}
	for i, e := range h.Events {
		if e.Version != Version(i) {
			return h, invalidf("execution history: event %d has version %d", i, e.Version)
		}
	}
	return h, nil
}
