package core

import "fmt"

// DeploymentStatus is inactive, enqueued or active.
type DeploymentStatus string

// Deployment statuses.
const (
	DeploymentInactive DeploymentStatus = "inactive"
	DeploymentEnqueued DeploymentStatus = "enqueued"
	DeploymentActive   DeploymentStatus = "active"
)

// DeploymentFileRecord is a file of a deployment; Size comes from the CAS (0 if absent).
type DeploymentFileRecord struct {
	Path   string        `json:"path"`
	Digest ContentDigest `json:"digest"`
	Size   uint64        `json:"size"`
}

// DeploymentRecord is a stored deployment.
type DeploymentRecord struct {
	DeploymentID   DeploymentId
	Description    *string
	Digest         ContentDigest
	CreatedAt      Timestamp
	LastActiveAt   *Timestamp
	Status         DeploymentStatus
	DeploymentToml string
	ObeliskVersion string
	CreatedBy      *string
	Files          []DeploymentFileRecord
}

// ComponentFileRole is the role of a component file.
type ComponentFileRole string

// Component file roles.
const (
	RoleWasmComponent   ComponentFileRole = "wasm_component"
	RoleExecProgram     ComponentFileRole = "exec_program"
	RoleJsEntrypoint    ComponentFileRole = "js_entrypoint"
	RoleJsModule        ComponentFileRole = "js_module"
	RoleBacktraceSource ComponentFileRole = "backtrace_source"
	RoleWitSource       ComponentFileRole = "wit_source"
)

// DeploymentComponentFileRecord binds a deployment file to a component.
type DeploymentComponentFileRecord struct {
	ComponentName string
	Path          string
	Role          ComponentFileRole
}

// DeploymentComponentFileDetail is a component file with its record.
type DeploymentComponentFileDetail struct {
	File DeploymentFileRecord `json:"file"`
	Role ComponentFileRole    `json:"role"`
}

// WitOrigin is 1 wasm, 2 synthesized, 3 authored.
type WitOrigin uint8

// WIT origins.
const (
	WitOriginWasm WitOrigin = iota + 1
	WitOriginSynthesized
	WitOriginAuthored
)

// PersistedFunctionMetadata describes an imported or exported function.
type PersistedFunctionMetadata struct {
	FFQN           FunctionFqn              `json:"ffqn"`
	ParameterTypes []PersistedParameterType `json:"parameter_types"`
	ReturnType     string                   `json:"return_type"`
	// Extension is nil, "submit", "await_next", "schedule", "stub" or "get".
	Extension   *string `json:"extension"`
	Submittable bool    `json:"submittable"`
}

// PersistedParameterType is a named WIT parameter.
type PersistedParameterType struct {
	Name    string `json:"name"`
	WitType string `json:"wit_type"`
}

// ComponentMetadataRecord is shared, per-digest component metadata.
type ComponentMetadataRecord struct {
	ComponentDigest ComponentDigest
	Imports         []PersistedFunctionMetadata
	Exports         []PersistedFunctionMetadata
	Wit             string
	WitOrigin       WitOrigin
}

// DeploymentComponentRecord binds a component to a deployment.
type DeploymentComponentRecord struct {
	DeploymentID    DeploymentId
	ComponentName   string
	ComponentDigest ComponentDigest
	ComponentType   ComponentType
}

// DeploymentComponentDetail is a component of a deployment with its metadata.
type DeploymentComponentDetail struct {
	ComponentID ComponentId
	Imports     []PersistedFunctionMetadata
	Exports     []PersistedFunctionMetadata
	Wit         string
	Files       []DeploymentComponentFileDetail
}

// DeploymentExecutionCounts chooses whether list_deployment_states counts executions.
type DeploymentExecutionCounts struct {
	Skip           bool
	IncludeDerived bool
}

// DeploymentState is a deployment with per-bucket execution counts.
type DeploymentState struct {
	DeploymentID             DeploymentId
	Description              *string
	Digest                   ContentDigest
	Locked                   uint32
	Pending                  uint32
	Scheduled                uint32
	Blocked                  uint32
	Paused                   uint32
	Cancelling               uint32
	FinishedOk               uint32
	FinishedError            uint32
	FinishedExecutionFailure uint32
	DeploymentToml           *string
	CreatedAt                Timestamp
	LastActiveAt             *Timestamp
	Status                   DeploymentStatus
}

// EnqueueOutcome is the result of enqueue_deployment.
type EnqueueOutcome uint8

// Enqueue outcomes.
const (
	Enqueued EnqueueOutcome = iota + 1
	EnqueueAlreadyActive
)

// Valid reports whether r is one of the six component file roles.
func (r ComponentFileRole) Valid() bool {
	switch r {
	case RoleWasmComponent, RoleExecProgram, RoleJsEntrypoint, RoleJsModule, RoleBacktraceSource, RoleWitSource:
		return true
	}
	return false
}

// Validate rejects an unknown WIT origin.
func (r ComponentMetadataRecord) Validate() error {
	if r.WitOrigin < WitOriginWasm || r.WitOrigin > WitOriginAuthored {
		return invalid(fmt.Sprintf("component metadata %s: invalid wit_origin %d", r.ComponentDigest, r.WitOrigin))
	}
	return nil
}
