package core

import "encoding/json"

// Params are the untyped JSON arguments of a function call: a JSON array whose
// elements are kept verbatim (key order, number literals). nil encodes as [].
type Params []json.RawMessage

// MarshalJSON encodes nil as an empty array.
func (p Params) MarshalJSON() ([]byte, error) {
	if p == nil {
		return []byte("[]"), nil
	}
	return json.Marshal([]json.RawMessage(p))
}

// UnmarshalJSON requires a JSON array.
func (p *Params) UnmarshalJSON(b []byte) error {
	var items []json.RawMessage
	if err := json.Unmarshal(b, &items); err != nil || items == nil {
		return invalid("params must be a JSON array")
	}
	*p = items
	return nil
}

// ExecutionMetadata is a string→string map (OpenTelemetry propagation keys).
// nil encodes as {}.
type ExecutionMetadata map[string]string

// MarshalJSON encodes nil as {}.
func (m ExecutionMetadata) MarshalJSON() ([]byte, error) {
	if m == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(map[string]string(m))
}

// Parent identifies the parent execution and the join set a child belongs to.
// JSON: a two-element array [execution_id, join_set_id].
type Parent struct {
	ExecutionID ExecutionId
	JoinSetID   JoinSetId
}

// MarshalJSON encodes [execution_id, join_set_id].
func (p Parent) MarshalJSON() ([]byte, error) {
	return MarshalJSON([2]any{p.ExecutionID, p.JoinSetID})
}

// UnmarshalJSON decodes [execution_id, join_set_id].
func (p *Parent) UnmarshalJSON(b []byte) error {
	var parts []json.RawMessage
	if err := json.Unmarshal(b, &parts); err != nil || len(parts) != 2 {
		return invalid("parent must be [execution_id, join_set_id]")
	}
	if err := json.Unmarshal(parts[0], &p.ExecutionID); err != nil {
		return decodeErr(err)
	}
	if err := json.Unmarshal(parts[1], &p.JoinSetID); err != nil {
		return decodeErr(err)
	}
	return nil
}

// CreateRequest creates an execution.
type CreateRequest struct {
	CreatedAt    Timestamp         `json:"created_at"`
	ExecutionID  ExecutionId       `json:"execution_id"`
	FFQN         FunctionFqn       `json:"ffqn"`
	Params       Params            `json:"params"`
	Parent       *Parent           `json:"parent"`
	ScheduledAt  Timestamp         `json:"scheduled_at"`
	ComponentID  ComponentId       `json:"component_id"`
	DeploymentID DeploymentId      `json:"deployment_id"`
	Metadata     ExecutionMetadata `json:"metadata"`
	ScheduledBy  *ExecutionId      `json:"scheduled_by"`
	// Paused creates the execution paused (Paused at version 1).
	Paused bool `json:"paused" stela:"default"`
}

// CreatedEvent returns the Created event of the request.
func (c *CreateRequest) CreatedEvent() *Created {
	return &Created{FFQN: c.FFQN, Params: c.Params, Parent: c.Parent, ScheduledAt: c.ScheduledAt,
		ComponentID: c.ComponentID, DeploymentID: c.DeploymentID, Metadata: c.Metadata, ScheduledBy: c.ScheduledBy}
}

// CreateRequestFrom rebuilds a CreateRequest from version 0 (Paused is always false).
func CreateRequestFrom(id ExecutionId, createdAt Timestamp, c *Created) CreateRequest {
	return CreateRequest{CreatedAt: createdAt, ExecutionID: id, FFQN: c.FFQN, Params: c.Params, Parent: c.Parent,
		ScheduledAt: c.ScheduledAt, ComponentID: c.ComponentID, DeploymentID: c.DeploymentID,
		Metadata: c.Metadata, ScheduledBy: c.ScheduledBy}
}
