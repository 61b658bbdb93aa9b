package core

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
