package core

// Strict decoders for the plain wire structs: like serde, a missing
// non-optional field is an error (encoding/json would silently zero it).

// UnmarshalJSON decodes strictly.
func (c *CreateRequest) UnmarshalJSON(b []byte) error {
	type plain CreateRequest
	return decodeStrict(b, (*plain)(c))
}

// UnmarshalJSON decodes strictly.
func (c *ComponentId) UnmarshalJSON(b []byte) error {
	type plain ComponentId
	return decodeStrict(b, (*plain)(c))
}

// UnmarshalJSON decodes strictly.
func (a *AppendEventsToExecution) UnmarshalJSON(b []byte) error {
	type plain AppendEventsToExecution
	return decodeStrict(b, (*plain)(a))
}

// UnmarshalJSON decodes strictly.
func (a *AppendResponseToExecution) UnmarshalJSON(b []byte) error {
	type plain AppendResponseToExecution
	return decodeStrict(b, (*plain)(a))
}

// UnmarshalJSON decodes strictly.
func (bt *BacktraceInfo) UnmarshalJSON(b []byte) error {
	type plain BacktraceInfo
	return decodeStrict(b, (*plain)(bt))
}

// UnmarshalJSON decodes strictly.
func (l *LockedBy) UnmarshalJSON(b []byte) error {
	type plain LockedBy
	return decodeStrict(b, (*plain)(l))
}

// UnmarshalJSON decodes strictly.
func (r *ComponentRetryConfig) UnmarshalJSON(b []byte) error {
	type plain ComponentRetryConfig
	return decodeStrict(b, (*plain)(r))
}

// UnmarshalJSON decodes strictly.
func (e *ExecutionWithState) UnmarshalJSON(b []byte) error {
	type plain ExecutionWithState
	return decodeStrict(b, (*plain)(e))
}

// UnmarshalJSON decodes strictly.
func (o *JoinSetResponseEventOuter) UnmarshalJSON(b []byte) error {
	type plain JoinSetResponseEventOuter
	return decodeStrict(b, (*plain)(o))
}

// UnmarshalJSON decodes strictly.
func (r *ResponseWithCursor) UnmarshalJSON(b []byte) error {
	type plain ResponseWithCursor
	return decodeStrict(b, (*plain)(r))
}

// UnmarshalJSON decodes strictly.
func (w *WastValWithType) UnmarshalJSON(b []byte) error {
	type plain WastValWithType
	return decodeStrict(b, (*plain)(w))
}

// UnmarshalJSON decodes strictly.
func (t *HttpClientTrace) UnmarshalJSON(b []byte) error {
	type plain HttpClientTrace
	return decodeStrict(b, (*plain)(t))
}

// UnmarshalJSON decodes strictly.
func (p *PersistedFunctionMetadata) UnmarshalJSON(b []byte) error {
	type plain PersistedFunctionMetadata
	return decodeStrict(b, (*plain)(p))
}

// UnmarshalJSON decodes strictly.
func (w *WasmBacktrace) UnmarshalJSON(b []byte) error {
	type plain WasmBacktrace
	return decodeStrict(b, (*plain)(w))
}

// UnmarshalJSON decodes strictly.
func (l *ListExecutionEventsResponse) UnmarshalJSON(b []byte) error {
	type plain ListExecutionEventsResponse
	return decodeStrict(b, (*plain)(l))
}
