package core

// ExecutionLog is a read-consistent snapshot of one execution (docs/spec/semantics.md §4.3.1).
type ExecutionLog struct {
	ExecutionID ExecutionId
	// Events are all events in version order (BacktraceID nil).
	Events []ExecutionEvent
	// Responses are all responses in cursor order.
	Responses []ResponseWithCursor
	// NextVersion is not advanced once finished.
	NextVersion     Version
	PendingState    PendingState
	ComponentDigest ComponentDigest
	ComponentType   ComponentType
	DeploymentID    DeploymentId
}

// Created returns version 0.
func (l *ExecutionLog) Created() *Created {
	if len(l.Events) == 0 {
		return nil
	}
	c, _ := l.Events[0].Event.(*Created)
	return c
}

// LastEvent returns the last event.
func (l *ExecutionLog) LastEvent() ExecutionEvent { return l.Events[len(l.Events)-1] }

// FinishedResult returns the return value if the last event is Finished.
func (l *ExecutionLog) FinishedResult() (ReturnValue, bool) {
	if len(l.Events) == 0 {
		return ReturnValue{}, false
	}
	if f, ok := l.LastEvent().Event.(*Finished); ok {
		return f.Retval, true
	}
	return ReturnValue{}, false
}

// HistoryEventWithVersion is a history event and the version it was appended at.
type HistoryEventWithVersion struct {
	Event   HistoryEvent
	Version Version
}

// EventHistory returns the history events with their versions.
func (l *ExecutionLog) EventHistory() []HistoryEventWithVersion {
	return EventHistoryOf(l.Events)
}

// EventHistoryOf extracts the history events of a log.
func EventHistoryOf(events []ExecutionEvent) []HistoryEventWithVersion {
	var out []HistoryEventWithVersion
	for _, e := range events {
		if h, ok := e.Event.(*HistoryEventRequest); ok {
			out = append(out, HistoryEventWithVersion{Event: h.Event, Version: e.Version})
		}
	}
	return out
}

// ExecutionWithState is the summary of an execution (get_pending_state, list_executions).
type ExecutionWithState struct {
	ExecutionID      ExecutionId     `json:"execution_id"`
	FFQN             FunctionFqn     `json:"ffqn"`
	PendingState     PendingState    `json:"pending_state"`
	CreatedAt        Timestamp       `json:"created_at"`
	FirstScheduledAt Timestamp       `json:"first_scheduled_at"`
	ComponentDigest  ComponentDigest `json:"component_digest"`
	ComponentType    ComponentType   `json:"component_type"`
	DeploymentID     DeploymentId    `json:"deployment_id"`
}

// WithState summarises s.
func (s *ExecutionState) WithState() ExecutionWithState {
	return ExecutionWithState{
		ExecutionID: s.ExecutionID, FFQN: s.FFQN, PendingState: s.PendingState(), CreatedAt: s.CreatedAt,
		FirstScheduledAt: s.FirstScheduledAt, ComponentDigest: s.ComponentDigest,
		ComponentType: s.ComponentType, DeploymentID: s.DeploymentID,
	}
}

// HistoryDelta is the part of an execution's history a worker lacks:
// what ReadHistory(id, fromVersion, afterCursor) returns, read consistently.
type HistoryDelta struct {
	// Events are the history events with version >= fromVersion, ascending.
	Events []HistoryEventWithVersion
	// Responses are the responses with cursor > afterCursor, ascending.
	Responses []ResponseWithCursor
	// NextVersion is the execution's next version (not advanced once finished).
	NextVersion Version
}

// ListExecutionEventsResponse is a page of events.
type ListExecutionEventsResponse struct {
	Events     []ExecutionEvent `json:"events"`
	MaxVersion Version          `json:"max_version"`
}

// ListResponsesResponse is a page of responses.
type ListResponsesResponse struct {
	Responses  []ResponseWithCursor `json:"responses"`
	MaxCursor  ResponseCursor       `json:"max_cursor"`
	ScanCursor ResponseCursor       `json:"scan_cursor"`
}

// ListResponsesFromPage builds the response with the seed's scan_cursor rule:
// NewerThan → the last response's cursor if the page is full, else maxCursor;
// OlderThan → the first response's cursor, else 0. Apply it to the unfiltered
// window, then filter by join set.
func ListResponsesFromPage(window []ResponseWithCursor, maxCursor ResponseCursor, p Pagination[ResponseCursor]) ListResponsesResponse {
	var scan ResponseCursor
	if p.Direction == NewerThan {
		scan = maxCursor
		if len(window) > 0 && len(window) >= int(p.Length) {
			scan = window[len(window)-1].Cursor
		}
	} else if len(window) > 0 {
		scan = window[0].Cursor
	}
	return ListResponsesResponse{Responses: window, MaxCursor: maxCursor, ScanCursor: scan}
}

// ExecutionWithStateRequestsResponses is list_execution_events_responses' result.
type ExecutionWithStateRequestsResponses struct {
	ExecutionWithState ExecutionWithState
	Events             []ExecutionEvent
	Responses          []ResponseWithCursor
	MaxVersion         Version
	MaxCursor          ResponseCursor
}
