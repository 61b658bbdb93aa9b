package core

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Version is the position of an event in an execution log: 0 = Created, then
// 1, 2, … without gaps. JSON: a number.
type Version uint32

// Next returns v+1.
func (v Version) Next() Version { return v + 1 }

// ExecutionEvent is one entry of an execution log.
type ExecutionEvent struct {
	CreatedAt Timestamp `json:"created_at"`
	Event     ExecutionRequest
	// BacktraceID is the version_min_including of the backtrace covering this
	// event, when requested; omitted from JSON when nil.
	BacktraceID *Version `json:"backtrace_id,omitempty"`
	Version     Version  `json:"version"`
}

type executionEventJSON struct {
	CreatedAt   Timestamp       `json:"created_at"`
	Event       json.RawMessage `json:"event"`
	BacktraceID *Version        `json:"backtrace_id,omitempty"`
	Version     Version         `json:"version"`
}

// MarshalJSON encodes the event.
func (e ExecutionEvent) MarshalJSON() ([]byte, error) {
	ev, err := marshalRequest(e.Event)
	if err != nil {
		return nil, err
	}
	// executionEventJSON, assembled (timedEvent).
	out, err := timedEvent(e.CreatedAt, ev, 48)
	if err != nil {
		return nil, err
	}
	if e.BacktraceID != nil {
		out = strconv.AppendUint(append(out, `,"backtrace_id":`...), uint64(*e.BacktraceID), 10)
	}
	out = strconv.AppendUint(append(out, `,"version":`...), uint64(e.Version), 10)
	return append(out, '}'), nil
}

// UnmarshalJSON decodes the event.
func (e *ExecutionEvent) UnmarshalJSON(b []byte) error {
	var j executionEventJSON
	if err := decodeStrict(b, &j); err != nil {
		return err
	}
	req, err := DecodeExecutionRequest(j.Event)
	if err != nil {
		return AtPath(err, "event")
	}
	*e = ExecutionEvent{CreatedAt: j.CreatedAt, Event: req, BacktraceID: j.BacktraceID, Version: j.Version}
	return nil
}

// AppendRequest is an event to append, with its creation time.
type AppendRequest struct {
	CreatedAt Timestamp `json:"created_at"`
	Event     ExecutionRequest
}

type appendRequestJSON struct {
	CreatedAt Timestamp       `json:"created_at"`
	Event     json.RawMessage `json:"event"`
}

// MarshalJSON encodes the request.
func (a AppendRequest) MarshalJSON() ([]byte, error) {
	ev, err := marshalRequest(a.Event)
	if err != nil {
		return nil, err
	}
	// appendRequestJSON, assembled (timedEvent).
	out, err := timedEvent(a.CreatedAt, ev, 1)
	if err != nil {
		return nil, err
	}
	return append(out, '}'), nil
}

// timedEvent starts the JSON object {"created_at":at,"event":ev shared by
// ExecutionEvent and AppendRequest, with room for extra more bytes. ev is
// compact already: assembling the object instead of encoding a struct
// through encoding/json avoids re-scanning it.
func timedEvent(at Timestamp, ev []byte, extra int) ([]byte, error) {
	ts, err := at.MarshalJSON()
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(ev)+len(ts)+24+extra)
	out = append(append(append(out, `{"created_at":`...), ts...), `,"event":`...)
	return append(out, ev...), nil
}

// UnmarshalJSON decodes the request.
func (a *AppendRequest) UnmarshalJSON(b []byte) error {
	var j appendRequestJSON
	if err := decodeStrict(b, &j); err != nil {
		return err
	}
	req, err := DecodeExecutionRequest(j.Event)
	if err != nil {
		return AtPath(err, "event")
	}
	*a = AppendRequest{CreatedAt: j.CreatedAt, Event: req}
	return nil
}

// ExecutionRequest is the payload of an execution event (Rust enum
// ExecutionRequest, externally tagged in snake_case). The concrete types are
// *Created, *Locked, *Unlocked, *ComponentUpgradeFinished, *TemporarilyFailed,
// *TemporarilyTimedOut, *Finished, *HistoryEventRequest, *Paused, *Unpaused and
// *CancellationRequested.
type ExecutionRequest interface {
	// Variant is the snake_case variant name stored in t_execution_log.variant.
	Variant() string
	isExecutionRequest()
}

// Created is version 0 of every execution.
type Created struct {
	FFQN         FunctionFqn       `json:"ffqn"`
	Params       Params            `json:"params"`
	Parent       *Parent           `json:"parent"`
	ScheduledAt  Timestamp         `json:"scheduled_at"`
	ComponentID  ComponentId       `json:"component_id"`
	DeploymentID DeploymentId      `json:"deployment_id"`
	Metadata     ExecutionMetadata `json:"metadata"`
	ScheduledBy  *ExecutionId      `json:"scheduled_by"`
}

// Locked acquires or extends a lock.
type Locked struct {
	ComponentID   ComponentId          `json:"component_id"`
	ExecutorID    ExecutorId           `json:"executor_id"`
	DeploymentID  DeploymentId         `json:"deployment_id"`
	RunID         RunId                `json:"run_id"`
	LockExpiresAt Timestamp            `json:"lock_expires_at"`
	RetryConfig   ComponentRetryConfig `json:"retry_config"`
}

// LockedBy returns the lock holder.
func (l *Locked) LockedBy() LockedBy { return LockedBy{ExecutorID: l.ExecutorID, RunID: l.RunID} }

// Unlocked releases a lock; the execution becomes pending at UnlockedAt
// (serialized as `backoff_expires_at` for compatibility).
type Unlocked struct {
	UnlockedAt Timestamp `json:"backoff_expires_at"`
	Reason     string    `json:"reason"`
}

// ComponentUpgradeFinished records a component upgrade attempt.
type ComponentUpgradeFinished struct {
	ComponentDigest ComponentDigest         `json:"component_digest"`
	DeploymentID    DeploymentId            `json:"deployment_id"`
	Outcome         ComponentUpgradeOutcome `json:"outcome"`
}

// TemporarilyFailed records a retriable failure; pending again at BackoffExpiresAt.
type TemporarilyFailed struct {
	BackoffExpiresAt Timestamp          `json:"backoff_expires_at"`
	Reason           string             `json:"reason"`
	Detail           *string            `json:"detail"`
	HTTPClientTraces *[]HttpClientTrace `json:"http_client_traces"`
}

// TemporarilyTimedOut records a retriable timeout; pending again at BackoffExpiresAt.
type TemporarilyTimedOut struct {
	BackoffExpiresAt Timestamp          `json:"backoff_expires_at"`
	HTTPClientTraces *[]HttpClientTrace `json:"http_client_traces"`
}

// Finished is the final event of an execution.
type Finished struct {
	Retval           ReturnValue        `json:"retval"`
	HTTPClientTraces *[]HttpClientTrace `json:"http_client_traces"`
}

// HistoryEventRequest wraps a workflow history event (`{"history_event":{"event":…}}`).
type HistoryEventRequest struct {
	Event HistoryEvent
}

// Paused pauses an execution.
type Paused struct{}

// Unpaused unpauses an execution.
type Unpaused struct{}

// CancellationRequested requests cancellation; lifecycle becomes cancelling.
type CancellationRequested struct{}

func (*Created) Variant() string                  { return "created" }
func (*Locked) Variant() string                   { return "locked" }
func (*Unlocked) Variant() string                 { return "unlocked" }
func (*ComponentUpgradeFinished) Variant() string { return "component_upgrade_finished" }
func (*TemporarilyFailed) Variant() string        { return "temporarily_failed" }
func (*TemporarilyTimedOut) Variant() string      { return "temporarily_timed_out" }
func (*Finished) Variant() string                 { return "finished" }
func (*HistoryEventRequest) Variant() string      { return "history_event" }
func (*Paused) Variant() string                   { return "paused" }
func (*Unpaused) Variant() string                 { return "unpaused" }
func (*CancellationRequested) Variant() string    { return "cancellation_requested" }

func (*Created) isExecutionRequest()                  {}
func (*Locked) isExecutionRequest()                   {}
func (*Unlocked) isExecutionRequest()                 {}
func (*ComponentUpgradeFinished) isExecutionRequest() {}
func (*TemporarilyFailed) isExecutionRequest()        {}
func (*TemporarilyTimedOut) isExecutionRequest()      {}
func (*Finished) isExecutionRequest()                 {}
func (*HistoryEventRequest) isExecutionRequest()      {}
func (*Paused) isExecutionRequest()                   {}
func (*Unpaused) isExecutionRequest()                 {}
func (*CancellationRequested) isExecutionRequest()    {}

// IsTemporaryEvent reports whether r is TemporarilyFailed or TemporarilyTimedOut.
func IsTemporaryEvent(r ExecutionRequest) bool {
	switch r.(type) {
	case *TemporarilyFailed, *TemporarilyTimedOut:
		return true
	}
	return false
}

// RequestJoinSetID returns the join set recorded in t_execution_log.join_set_id
// for r: the parent's join set for Created, and the join set of JoinSetCreate,
// JoinSetRequest and JoinNext history events; ok is false otherwise.
func RequestJoinSetID(r ExecutionRequest) (JoinSetId, bool) {
	switch r := r.(type) {
	case *Created:
		if r.Parent != nil {
			return r.Parent.JoinSetID, true
		}
	case *HistoryEventRequest:
		switch h := r.Event.(type) {
		case *JoinSetCreate:
			return h.JoinSetID, true
		case *JoinSetRequestEvent:
			return h.JoinSetID, true
		case *JoinNext:
			return h.JoinSetID, true
		}
	}
	return JoinSetId{}, false
}

type historyEventRequestJSON struct {
	Event json.RawMessage `json:"event"`
}

func marshalRequest(r ExecutionRequest) (json.RawMessage, error) {
	if r == nil {
		return nil, fmt.Errorf("nil execution request")
	}
	switch r := r.(type) {
	case *Paused, *Unpaused, *CancellationRequested:
		return marshalExternallyTagged(r.Variant(), nil, true)
	case *HistoryEventRequest:
		ev, err := marshalHistoryEvent(r.Event)
		if err != nil {
			return nil, err
		}
		// {"history_event": historyEventRequestJSON{ev}}, assembled.
		out := make([]byte, 0, len(ev)+28)
		out = append(appendSerdeString(append(out, '{'), r.Variant()), `:{"event":`...)
		return append(append(out, ev...), '}', '}'), nil
	default:
		return marshalExternallyTagged(r.Variant(), r, false)
	}
}

// EncodeExecutionRequest returns the compact JSON of r (what t_execution_log.json_value stores).
func EncodeExecutionRequest(r ExecutionRequest) ([]byte, error) { return marshalRequest(r) }

// DecodeExecutionRequest decodes the JSON of an ExecutionRequest.
func DecodeExecutionRequest(b []byte) (ExecutionRequest, error) {
	tag, inner, unit, err := splitExternallyTagged(b, "execution request")
	if err != nil {
		return nil, err
	}
	if unit {
		switch tag {
		case "paused":
			return &Paused{}, nil
		case "unpaused":
			return &Unpaused{}, nil
		case "cancellation_requested":
			return &CancellationRequested{}, nil
		}
		return nil, invalid(fmt.Sprintf("unknown execution request variant %q", tag))
	}
	var r ExecutionRequest
	switch tag {
	case "created":
		r = &Created{}
	case "locked":
		r = &Locked{}
	case "unlocked":
		r = &Unlocked{}
	case "component_upgrade_finished":
		r = &ComponentUpgradeFinished{}
	case "temporarily_failed":
		r = &TemporarilyFailed{}
	case "temporarily_timed_out":
		r = &TemporarilyTimedOut{}
	case "finished":
		r = &Finished{}
	case "history_event":
		var j historyEventRequestJSON
		if err := decodeStrict(inner, &j); err != nil {
			return nil, AtPath(err, tag)
		}
		h, err := DecodeHistoryEvent(j.Event)
		if err != nil {
			return nil, AtPath(err, tag+".event")
		}
		return &HistoryEventRequest{Event: h}, nil
	default:
		return nil, invalid(fmt.Sprintf("unknown execution request variant %q", tag))
	}
	if err := decodeStrict(inner, r); err != nil {
		return nil, AtPath(err, tag)
	}
	return r, nil
}

// AppendEventsToExecution is a batch of events for one execution.
type AppendEventsToExecution struct {
	ExecutionID ExecutionId     `json:"execution_id"`
	Version     Version         `json:"version"`
	Batch       []AppendRequest `json:"batch"`
}
