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

// ComponentRetryConfig says how often and how fast failed runs are retried.
// MaxRetries nil means retry forever (workflows, crons).
type ComponentRetryConfig struct {
	MaxRetries      *uint32  `json:"max_retries"`
	RetryExpBackoff Duration `json:"retry_exp_backoff"`
}

// RetryConfigZero is max_retries 0, backoff 0.
func RetryConfigZero() ComponentRetryConfig {
	zero := uint32(0)
	return ComponentRetryConfig{MaxRetries: &zero}
}

// LockedBy identifies a lock holder.
type LockedBy struct {
	ExecutorID ExecutorId `json:"executor_id"`
	RunID      RunId      `json:"run_id"`
}

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
	return MarshalJSON(executionEventJSON{e.CreatedAt, ev, e.BacktraceID, e.Version})
}

// UnmarshalJSON decodes the event.
func (e *ExecutionEvent) UnmarshalJSON(b []byte) error {
	var j executionEventJSON
	if err := decodeStrict(b, &j); err != nil {
		return err
	}
	req, err := DecodeExecutionRequest(j.Event)
	if err != nil {
		return err
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
	return MarshalJSON(appendRequestJSON{a.CreatedAt, ev})
}

// UnmarshalJSON decodes the request.
func (a *AppendRequest) UnmarshalJSON(b []byte) error {
	var j appendRequestJSON
	if err := decodeStrict(b, &j); err != nil {
		return err
	}
	req, err := DecodeExecutionRequest(j.Event)
	if err != nil {
		return err
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
		return marshalExternallyTagged(r.Variant(), historyEventRequestJSON{ev}, false)
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
			return nil, err
		}
		h, err := DecodeHistoryEvent(j.Event)
		if err != nil {
			return nil, err
		}
		return &HistoryEventRequest{Event: h}, nil
	default:
		return nil, invalid(fmt.Sprintf("unknown execution request variant %q", tag))
	}
	if err := decodeStrict(inner, r); err != nil {
		return nil, err
	}
	return r, nil
}

// --- history events -------------------------------------------------------

// HistoryEvent is a workflow history event (Rust enum HistoryEvent, tag "type").
// Concrete types: *Persist, *JoinSetCreate, *JoinSetRequestEvent, *JoinNext,
// *JoinNextTry, *JoinNextTooMany, *Schedule, *Stub.
type HistoryEvent interface {
	// HistoryType is the "type" tag, e.g. "join_next".
	HistoryType() string
	isHistoryEvent()
}

// Persist stores a generated pseudorandom value for determinism checks.
type Persist struct {
	Value Bytes       `json:"value"`
	Kind  PersistKind `json:"kind"`
}

// JoinSetCreate opens a join set.
type JoinSetCreate struct {
	JoinSetID JoinSetId `json:"join_set_id"`
}

// JoinSetRequestEvent submits a child execution or a delay into a join set.
type JoinSetRequestEvent struct {
	JoinSetID JoinSetId
	Request   JoinSetRequest
}

// JoinNext awaits the next response of a join set.
type JoinNext struct {
	JoinSetID     JoinSetId    `json:"join_set_id"`
	RunExpiresAt  Timestamp    `json:"run_expires_at"`
	RequestedFFQN *FunctionFqn `json:"requested_ffqn"`
	Closing       bool         `json:"closing"`
}

// JoinNextTry records a non-blocking await.
type JoinNextTry struct {
	JoinSetID JoinSetId          `json:"join_set_id"`
	Outcome   JoinNextTryOutcome `json:"outcome"`
}

// JoinNextTooMany records an await beyond the number of submissions.
type JoinNextTooMany struct {
	JoinSetID     JoinSetId    `json:"join_set_id"`
	RequestedFFQN *FunctionFqn `json:"requested_ffqn"`
}

// Schedule records the scheduling of a new top-level execution.
type Schedule struct {
	ExecutionID ExecutionId   `json:"execution_id"`
	ScheduleAt  ScheduleAt    `json:"schedule_at"`
	Result      HistoryResult `json:"result"`
}

// Stub records that a stub child was given a return value.
type Stub struct {
	TargetExecutionID ExecutionIdDerived `json:"target_execution_id"`
	RetvalHash        StubRetValHash     `json:"retval_hash"`
	Result            HistoryResult      `json:"result"`
}

func (*Persist) HistoryType() string             { return "persist" }
func (*JoinSetCreate) HistoryType() string       { return "join_set_create" }
func (*JoinSetRequestEvent) HistoryType() string { return "join_set_request" }
func (*JoinNext) HistoryType() string            { return "join_next" }
func (*JoinNextTry) HistoryType() string         { return "join_next_try" }
func (*JoinNextTooMany) HistoryType() string     { return "join_next_too_many" }
func (*Schedule) HistoryType() string            { return "schedule" }
func (*Stub) HistoryType() string                { return "stub" }

func (*Persist) isHistoryEvent()             {}
func (*JoinSetCreate) isHistoryEvent()       {}
func (*JoinSetRequestEvent) isHistoryEvent() {}
func (*JoinNext) isHistoryEvent()            {}
func (*JoinNextTry) isHistoryEvent()         {}
func (*JoinNextTooMany) isHistoryEvent()     {}
func (*Schedule) isHistoryEvent()            {}
func (*Stub) isHistoryEvent()                {}

// HistoryTypeJoinNext is the type tag of JoinNext.
const HistoryTypeJoinNext = "join_next"

type joinSetRequestEventJSON struct {
	JoinSetID JoinSetId       `json:"join_set_id"`
	Request   json.RawMessage `json:"request"`
}

func marshalHistoryEvent(h HistoryEvent) (json.RawMessage, error) {
	if h == nil {
		return nil, fmt.Errorf("nil history event")
	}
	if j, ok := h.(*JoinSetRequestEvent); ok {
		req, err := marshalJoinSetRequest(j.Request)
		if err != nil {
			return nil, err
		}
		return marshalInternallyTagged("type", h.HistoryType(), joinSetRequestEventJSON{j.JoinSetID, req})
	}
	return marshalInternallyTagged("type", h.HistoryType(), h)
}

// EncodeHistoryEvent returns the compact JSON of h.
func EncodeHistoryEvent(h HistoryEvent) ([]byte, error) { return marshalHistoryEvent(h) }

// DecodeHistoryEvent decodes the JSON of a HistoryEvent.
func DecodeHistoryEvent(b []byte) (HistoryEvent, error) {
	tag, err := readTag(b, "type", "history event")
	if err != nil {
		return nil, err
	}
	var h HistoryEvent
	switch tag {
	case "persist":
		h = &Persist{}
	case "join_set_create":
		h = &JoinSetCreate{}
	case "join_set_request":
		var j joinSetRequestEventJSON
		if err := decodeStrict(b, &j); err != nil {
			return nil, err
		}
		req, err := DecodeJoinSetRequest(j.Request)
		if err != nil {
			return nil, err
		}
		return &JoinSetRequestEvent{JoinSetID: j.JoinSetID, Request: req}, nil
	case "join_next":
		h = &JoinNext{}
	case "join_next_try":
		h = &JoinNextTry{}
	case "join_next_too_many":
		h = &JoinNextTooMany{}
	case "schedule":
		h = &Schedule{}
	case "stub":
		h = &Stub{}
	default:
		return nil, invalid(fmt.Sprintf("unknown history event type %q", tag))
	}
	if err := decodeStrict(b, h); err != nil {
		return nil, err
	}
	return h, nil
}

// Bytes is Rust's Vec<u8>: JSON is an array of numbers (not base64).
type Bytes []byte

// MarshalJSON encodes the bytes as an array of numbers.
func (b Bytes) MarshalJSON() ([]byte, error) {
	out := make([]byte, 0, 2+4*len(b))
	out = append(out, '[')
	for i, c := range b {
		if i > 0 {
			out = append(out, ',')
		}
		out = strconv.AppendUint(out, uint64(c), 10)
	}
	return append(out, ']'), nil
}

// UnmarshalJSON decodes an array of numbers 0..255.
func (b *Bytes) UnmarshalJSON(data []byte) error {
	var nums []uint8
	if err := json.Unmarshal(data, &nums); err != nil {
		return invalid("expected an array of bytes")
	}
	*b = nums
	return nil
}

// PersistKind describes a persisted random value (tag "type").
type PersistKind struct {
	// Type is "random_u64", "random_string" or "execution_id".
	Type string
	// Min and MaxInclusive are set for random_u64.
	Min, MaxInclusive uint64
	// MinLength and MaxLengthExclusive are set for random_string.
	MinLength, MaxLengthExclusive uint64
}

type persistU64JSON struct {
	Min          uint64 `json:"min"`
	MaxInclusive uint64 `json:"max_inclusive"`
}

type persistStringJSON struct {
	MinLength          uint64 `json:"min_length"`
	MaxLengthExclusive uint64 `json:"max_length_exclusive"`
}

// MarshalJSON encodes the kind.
func (k PersistKind) MarshalJSON() ([]byte, error) {
	switch k.Type {
	case "random_u64":
		return marshalInternallyTagged("type", k.Type, persistU64JSON{k.Min, k.MaxInclusive})
	case "random_string":
		return marshalInternallyTagged("type", k.Type, persistStringJSON{k.MinLength, k.MaxLengthExclusive})
	case "execution_id":
		return marshalInternallyTagged("type", k.Type, nil)
	}
	return nil, fmt.Errorf("unknown persist kind %q", k.Type)
}

// UnmarshalJSON decodes the kind.
func (k *PersistKind) UnmarshalJSON(b []byte) error {
	tag, err := readTag(b, "type", "persist kind")
	if err != nil {
		return err
	}
	switch tag {
	case "random_u64":
		var j persistU64JSON
		if err := decodeStrict(b, &j); err != nil {
			return err
		}
		*k = PersistKind{Type: tag, Min: j.Min, MaxInclusive: j.MaxInclusive}
	case "random_string":
		var j persistStringJSON
		if err := decodeStrict(b, &j); err != nil {
			return err
		}
		*k = PersistKind{Type: tag, MinLength: j.MinLength, MaxLengthExclusive: j.MaxLengthExclusive}
	case "execution_id":
		*k = PersistKind{Type: tag}
	default:
		return invalid(fmt.Sprintf("unknown persist kind %q", tag))
	}
	return nil
}

// JoinNextTryOutcome is "found", "pending" or "all_processed".
type JoinNextTryOutcome string

// JoinNextTry outcomes.
const (
	JoinNextTryFound        JoinNextTryOutcome = "found"
	JoinNextTryPending      JoinNextTryOutcome = "pending"
	JoinNextTryAllProcessed JoinNextTryOutcome = "all_processed"
)

// JoinNextTryOutcomeFromBool maps the legacy boolean `found_response`.
func JoinNextTryOutcomeFromBool(found bool) JoinNextTryOutcome {
	if found {
		return JoinNextTryFound
	}
	return JoinNextTryPending
}

// UnmarshalText rejects unknown outcomes.
func (o *JoinNextTryOutcome) UnmarshalText(b []byte) error {
	switch v := JoinNextTryOutcome(b); v {
	case JoinNextTryFound, JoinNextTryPending, JoinNextTryAllProcessed:
		*o = v
		return nil
	}
	return invalid(fmt.Sprintf("unknown join_next_try outcome %q", b))
}

// ScheduleAt is when a scheduled execution or delay should run: "now",
// {"at": <datetime>} or {"in": <duration>}.
type ScheduleAt struct {
	// Kind is "now", "at" or "in".
	Kind string
	At   Timestamp
	In   Duration
}

// MarshalJSON encodes the value.
func (s ScheduleAt) MarshalJSON() ([]byte, error) {
	switch s.Kind {
	case "now":
		return marshalExternallyTagged("now", nil, true)
	case "at":
		return marshalExternallyTagged("at", s.At, false)
	case "in":
		return marshalExternallyTagged("in", s.In, false)
	}
	return nil, fmt.Errorf("unknown schedule_at kind %q", s.Kind)
}

// UnmarshalJSON decodes the value.
func (s *ScheduleAt) UnmarshalJSON(b []byte) error {
	tag, inner, unit, err := splitExternallyTagged(b, "schedule_at")
	if err != nil {
		return err
	}
	switch {
	case unit && tag == "now":
		*s = ScheduleAt{Kind: "now"}
	case !unit && tag == "at":
		var t Timestamp
		if err := json.Unmarshal(inner, &t); err != nil {
			return decodeErr(err)
		}
		*s = ScheduleAt{Kind: "at", At: t}
	case !unit && tag == "in":
		var d Duration
		if err := json.Unmarshal(inner, &d); err != nil {
			return decodeErr(err)
		}
		*s = ScheduleAt{Kind: "in", In: d}
	default:
		return invalid(fmt.Sprintf("unknown schedule_at %q", tag))
	}
	return nil
}

// AsTimestamp resolves the schedule relative to now; it fails with a
// ValidationError if the result is out of range.
func (s ScheduleAt) AsTimestamp(now Timestamp) (Timestamp, error) {
	switch s.Kind {
	case "now":
		return now, nil
	case "at":
		return s.At, nil
	case "in":
		d, ok := s.In.Std()
		if !ok {
			return Timestamp{}, invalid("source duration value is out of range")
		}
		t := now.Add(d)
		if t.Before(now) || t.Year() > 262143 {
			return Timestamp{}, invalid("source duration value is out of range")
		}
		return t, nil
	}
	return Timestamp{}, invalid("unknown schedule_at kind")
}

// HistoryResult is the Result<(), E> recorded by Schedule, Stub and
// ChildExecutionRequest: {"Ok":null}, {"Err":"<unit error>"} or
// {"Err":{"type_check_error":"<msg>"}}. Unit errors are "function_not_found",
// "execution_not_found" and "conflict".
type HistoryResult struct {
	// Err is "" for Ok, else the error variant name.
	Err string
	// Message is the text of a "type_check_error".
	Message string
}

// IsOk reports whether the result is Ok.
func (r HistoryResult) IsOk() bool { return r.Err == "" }

// MarshalJSON encodes the result.
func (r HistoryResult) MarshalJSON() ([]byte, error) {
	switch r.Err {
	case "":
		return []byte(`{"Ok":null}`), nil
	case "type_check_error":
		return MarshalJSON(map[string]map[string]string{"Err": {"type_check_error": r.Message}})
	default:
		return MarshalJSON(map[string]string{"Err": r.Err})
	}
}

// UnmarshalJSON decodes the result.
func (r *HistoryResult) UnmarshalJSON(b []byte) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil || len(obj) != 1 {
		return invalid(`result must be {"Ok":null} or {"Err":…}`)
	}
	if raw, ok := obj["Ok"]; ok {
		if !isJSONNull(raw) {
			return invalid(`"Ok" must be null`)
		}
		*r = HistoryResult{}
		return nil
	}
	raw, ok := obj["Err"]
	if !ok {
		return invalid(`result must be {"Ok":null} or {"Err":…}`)
	}
	var unitErr string
	if json.Unmarshal(raw, &unitErr) == nil {
		switch unitErr {
		case "function_not_found", "execution_not_found", "conflict":
			*r = HistoryResult{Err: unitErr}
			return nil
		}
		return invalid(fmt.Sprintf("unknown error %q", unitErr))
	}
	var te struct {
		TypeCheckError *string `json:"type_check_error"`
	}
	if err := json.Unmarshal(raw, &te); err != nil || te.TypeCheckError == nil {
		return invalid("unknown error value")
	}
	*r = HistoryResult{Err: "type_check_error", Message: *te.TypeCheckError}
	return nil
}

// --- join set requests and responses ---------------------------------------

// JoinSetRequest is a member submitted into a join set (tag "type"):
// *DelayRequest or *ChildExecutionRequest.
type JoinSetRequest interface {
	RequestType() string
	isJoinSetRequest()
}

// DelayRequest asks for a timer.
type DelayRequest struct {
	DelayID    DelayId    `json:"delay_id"`
	ExpiresAt  Timestamp  `json:"expires_at"`
	ScheduleAt ScheduleAt `json:"schedule_at"`
	// Paused creates the timer paused (serde default false).
	Paused bool `json:"paused" stela:"default"`
}

// ChildExecutionRequest submits a child execution.
type ChildExecutionRequest struct {
	ChildExecutionID ExecutionIdDerived `json:"child_execution_id"`
	TargetFFQN       FunctionFqn        `json:"target_ffqn"`
	Params           Params             `json:"params"`
	Result           HistoryResult      `json:"result"`
}

func (*DelayRequest) RequestType() string          { return "delay_request" }
func (*ChildExecutionRequest) RequestType() string { return "child_execution_request" }
func (*DelayRequest) isJoinSetRequest()            {}
func (*ChildExecutionRequest) isJoinSetRequest()   {}

func marshalJoinSetRequest(r JoinSetRequest) (json.RawMessage, error) {
	if r == nil {
		return nil, fmt.Errorf("nil join set request")
	}
	return marshalInternallyTagged("type", r.RequestType(), r)
}

// DecodeJoinSetRequest decodes the JSON of a JoinSetRequest.
func DecodeJoinSetRequest(b []byte) (JoinSetRequest, error) {
	tag, err := readTag(b, "type", "join set request")
	if err != nil {
		return nil, err
	}
	var r JoinSetRequest
	switch tag {
	case "delay_request":
		r = &DelayRequest{}
	case "child_execution_request":
		r = &ChildExecutionRequest{}
	default:
		return nil, invalid(fmt.Sprintf("unknown join set request type %q", tag))
	}
	if err := decodeStrict(b, r); err != nil {
		return nil, err
	}
	return r, nil
}

// JoinSetResponse is a response delivered to a join set (tag "type"):
// *DelayFinished or *ChildExecutionFinished.
type JoinSetResponse interface {
	ResponseType() string
	isJoinSetResponse()
}

// DelayFinished: the delay fired (Success) or was cancelled.
type DelayFinished struct {
	DelayID DelayId    `json:"delay_id"`
	Result  UnitResult `json:"result"`
}

// ChildExecutionFinished carries a child's result.
type ChildExecutionFinished struct {
	ChildExecutionID ExecutionIdDerived `json:"child_execution_id"`
	FinishedVersion  Version            `json:"finished_version"`
	Result           ReturnValue        `json:"result"`
}

func (*DelayFinished) ResponseType() string          { return "delay_finished" }
func (*ChildExecutionFinished) ResponseType() string { return "child_execution_finished" }
func (*DelayFinished) isJoinSetResponse()            {}
func (*ChildExecutionFinished) isJoinSetResponse()   {}

// UnitResult is Result<(), ()>: {"Ok":null} (true) or {"Err":null} (false).
type UnitResult bool

// MarshalJSON encodes the result.
func (u UnitResult) MarshalJSON() ([]byte, error) {
	if u {
		return []byte(`{"Ok":null}`), nil
	}
	return []byte(`{"Err":null}`), nil
}

// UnmarshalJSON decodes the result.
func (u *UnitResult) UnmarshalJSON(b []byte) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil || len(obj) != 1 {
		return invalid(`result must be {"Ok":null} or {"Err":null}`)
	}
	for k, v := range obj {
		if !isJSONNull(v) {
			break
		}
		switch k {
		case "Ok":
			*u = true
			return nil
		case "Err":
			*u = false
			return nil
		}
	}
	return invalid(`result must be {"Ok":null} or {"Err":null}`)
}

// JoinSetResponseEvent is a response with its join set.
type JoinSetResponseEvent struct {
	JoinSetID JoinSetId
	Event     JoinSetResponse
}

type joinSetResponseEventJSON struct {
	JoinSetID JoinSetId       `json:"join_set_id"`
	Event     json.RawMessage `json:"event"`
}

// MarshalJSON encodes {"join_set_id":…,"event":…}.
func (e JoinSetResponseEvent) MarshalJSON() ([]byte, error) {
	if e.Event == nil {
		return nil, fmt.Errorf("nil join set response")
	}
	ev, err := marshalInternallyTagged("type", e.Event.ResponseType(), e.Event)
	if err != nil {
		return nil, err
	}
	return MarshalJSON(joinSetResponseEventJSON{e.JoinSetID, ev})
}

// UnmarshalJSON decodes the event.
func (e *JoinSetResponseEvent) UnmarshalJSON(b []byte) error {
	var j joinSetResponseEventJSON
	if err := decodeStrict(b, &j); err != nil {
		return err
	}
	tag, err := readTag(j.Event, "type", "join set response")
	if err != nil {
		return err
	}
	var r JoinSetResponse
	switch tag {
	case "delay_finished":
		r = &DelayFinished{}
	case "child_execution_finished":
		r = &ChildExecutionFinished{}
	default:
		return invalid(fmt.Sprintf("unknown join set response type %q", tag))
	}
	if err := decodeStrict(j.Event, r); err != nil {
		return err
	}
	*e = JoinSetResponseEvent{JoinSetID: j.JoinSetID, Event: r}
	return nil
}

// JoinSetResponseEventOuter is a response with its arrival time.
type JoinSetResponseEventOuter struct {
	CreatedAt Timestamp            `json:"created_at"`
	Event     JoinSetResponseEvent `json:"event"`
}

// ResponseCursor is the per-execution, 1-based, gapless ordinal of a response.
type ResponseCursor uint32

// ResponseWithCursor is a response and its cursor.
type ResponseWithCursor struct {
	Event  JoinSetResponseEventOuter `json:"event"`
	Cursor ResponseCursor            `json:"cursor"`
}

// --- return values ----------------------------------------------------------

// ReturnValueKind distinguishes the variants of SupportedFunctionReturnValue.
type ReturnValueKind uint8

// Return value kinds.
const (
	ReturnOk ReturnValueKind = iota + 1
	ReturnErr
	ReturnExecutionFailure
)

// ReturnValue is Obelisk's SupportedFunctionReturnValue: {"ok":null|typed},
// {"err":null|typed} or {"execution_failure":{kind,reason?,detail?}}.
type ReturnValue struct {
	Kind ReturnValueKind
	// Value is the typed value of ok/err; nil means none.
	Value *WastValWithType
	// Failure is set for ReturnExecutionFailure.
	Failure *FinishedExecutionFailure
}

// WastValWithType is a typed WIT value: {"type": "<WIT type>", "value": <JSON>}.
type WastValWithType struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

// FinishedExecutionFailure describes a trap, timeout, cancellation…
type FinishedExecutionFailure struct {
	Kind   ExecutionFailureKind `json:"kind"`
	Reason *string              `json:"reason,omitempty"`
	Detail *string              `json:"detail,omitempty"`
}

// ExecutionFailureKind is the snake_case failure kind.
type ExecutionFailureKind string

// Execution failure kinds.
const (
	FailureTimedOut               ExecutionFailureKind = "timed_out"
	FailureNondeterminismDetected ExecutionFailureKind = "nondeterminism_detected"
	FailureOutOfFuel              ExecutionFailureKind = "out_of_fuel"
	FailureCancelled              ExecutionFailureKind = "cancelled"
	FailureUncategorized          ExecutionFailureKind = "uncategorized"
)

// UnmarshalText rejects unknown kinds.
func (k *ExecutionFailureKind) UnmarshalText(b []byte) error {
	switch v := ExecutionFailureKind(b); v {
	case FailureTimedOut, FailureNondeterminismDetected, FailureOutOfFuel, FailureCancelled, FailureUncategorized:
		*k = v
		return nil
	}
	return invalid(fmt.Sprintf("unknown execution failure kind %q", b))
}

// RetOk returns Ok(value); value may be nil.
func RetOk(value *WastValWithType) ReturnValue { return ReturnValue{Kind: ReturnOk, Value: value} }

// RetErr returns Err(value); value may be nil.
func RetErr(value *WastValWithType) ReturnValue { return ReturnValue{Kind: ReturnErr, Value: value} }

// RetFailure returns an execution failure of the given kind.
func RetFailure(kind ExecutionFailureKind, reason, detail *string) ReturnValue {
	return ReturnValue{Kind: ReturnExecutionFailure, Failure: &FinishedExecutionFailure{Kind: kind, Reason: reason, Detail: detail}}
}

// MarshalJSON encodes the return value.
func (r ReturnValue) MarshalJSON() ([]byte, error) {
	switch r.Kind {
	case ReturnOk:
		return marshalExternallyTagged("ok", r.Value, false)
	case ReturnErr:
		return marshalExternallyTagged("err", r.Value, false)
	case ReturnExecutionFailure:
		if r.Failure == nil {
			return nil, fmt.Errorf("execution failure without details")
		}
		return marshalExternallyTagged("execution_failure", r.Failure, false)
	}
	return nil, fmt.Errorf("invalid return value kind %d", r.Kind)
}

// UnmarshalJSON decodes the return value.
func (r *ReturnValue) UnmarshalJSON(b []byte) error {
	tag, inner, unit, err := splitExternallyTagged(b, "return value")
	if err != nil {
		return err
	}
	if unit {
		return invalid("return value must be an object")
	}
	switch tag {
	case "ok", "err":
		kind := ReturnOk
		if tag == "err" {
			kind = ReturnErr
		}
		if isJSONNull(inner) {
			*r = ReturnValue{Kind: kind}
			return nil
		}
		var v WastValWithType
		if err := decodeStrict(inner, &v); err != nil {
			return err
		}
		*r = ReturnValue{Kind: kind, Value: &v}
	case "execution_failure":
		var f FinishedExecutionFailure
		if err := decodeStrict(inner, &f); err != nil {
			return err
		}
		*r = ReturnValue{Kind: ReturnExecutionFailure, Failure: &f}
	default:
		return invalid(fmt.Sprintf("unknown return value variant %q", tag))
	}
	return nil
}

// ResultKind maps the value to the PendingStateFinished result kind.
func (r ReturnValue) ResultKind() ResultKind {
	switch r.Kind {
	case ReturnOk:
		return ResultKindOk()
	case ReturnErr:
		return ResultKindError()
	default:
		return ResultKindFailure(r.Failure.Kind)
	}
}

// Equal compares two return values structurally (object key order ignored),
// as the stub idempotency check requires.
func (r ReturnValue) Equal(o ReturnValue) bool {
	a, err1 := MarshalJSON(r)
	b, err2 := MarshalJSON(o)
	if err1 != nil || err2 != nil {
		return false
	}
	return jsonEqual(a, b)
}

// StubRetValHash computes the hash of this typed stub return value.
func (r ReturnValue) StubRetValHash() StubRetValHash {
	return StubRetValHashTyped(mustMarshal(r))
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return deepEqualJSON(x, y)
}

func deepEqualJSON(x, y any) bool {
	switch x := x.(type) {
	case map[string]any:
		ym, ok := y.(map[string]any)
		if !ok || len(x) != len(ym) {
			return false
		}
		for k, v := range x {
			w, ok := ym[k]
			if !ok || !deepEqualJSON(v, w) {
				return false
			}
		}
		return true
	case []any:
		ys, ok := y.([]any)
		if !ok || len(x) != len(ys) {
			return false
		}
		for i := range x {
			if !deepEqualJSON(x[i], ys[i]) {
				return false
			}
		}
		return true
	default:
		return x == y
	}
}

// ResultKind is PendingStateFinishedResultKind: "ok", {"err":"error"} or
// {"err":{"execution_failure":"<kind>"}}. Its compact JSON is stored in
// t_state.result_kind and compared as a string.
type ResultKind struct {
	// Failure is "" for ok and error; else the failure kind.
	Failure ExecutionFailureKind
	// IsErr is true for error and execution failures.
	IsErr bool
}

// Result kind JSON constants, compared byte-wise by state filters.
const (
	ResultKindJSONOk    = `"ok"`
	ResultKindJSONError = `{"err":"error"}`
)

// ResultKindOk is "ok".
func ResultKindOk() ResultKind { return ResultKind{} }

// ResultKindError is {"err":"error"}.
func ResultKindError() ResultKind { return ResultKind{IsErr: true} }

// ResultKindFailure is {"err":{"execution_failure":kind}}.
func ResultKindFailure(k ExecutionFailureKind) ResultKind {
	return ResultKind{IsErr: true, Failure: k}
}

// MarshalJSON encodes the kind.
func (k ResultKind) MarshalJSON() ([]byte, error) {
	switch {
	case !k.IsErr:
		return []byte(ResultKindJSONOk), nil
	case k.Failure == "":
		return []byte(ResultKindJSONError), nil
	default:
		return MarshalJSON(map[string]map[string]ExecutionFailureKind{"err": {"execution_failure": k.Failure}})
	}
}

// UnmarshalJSON decodes the kind.
func (k *ResultKind) UnmarshalJSON(b []byte) error {
	tag, inner, unit, err := splitExternallyTagged(b, "result kind")
	if err != nil {
		return err
	}
	switch {
	case unit && tag == "ok":
		*k = ResultKindOk()
		return nil
	case !unit && tag == "err":
		var s string
		if json.Unmarshal(inner, &s) == nil {
			if s == "error" {
				*k = ResultKindError()
				return nil
			}
			break
		}
		var f struct {
			ExecutionFailure *ExecutionFailureKind `json:"execution_failure"`
		}
		if err := json.Unmarshal(inner, &f); err != nil || f.ExecutionFailure == nil {
			break
		}
		*k = ResultKindFailure(*f.ExecutionFailure)
		return nil
	}
	return invalid("invalid result kind")
}

// --- misc persisted types ---------------------------------------------------

// HttpClientTrace is an HTTP call made by an activity.
type HttpClientTrace struct {
	Req  RequestTrace   `json:"req"`
	Resp *ResponseTrace `json:"resp"`
}

// RequestTrace is the request half of an HttpClientTrace.
type RequestTrace struct {
	SentAt Timestamp `json:"sent_at"`
	URI    string    `json:"uri"`
	Method string    `json:"method"`
}

// ResponseTrace is the response half; Status is {"Ok":<u16>} or {"Err":"msg"}.
type ResponseTrace struct {
	FinishedAt Timestamp    `json:"finished_at"`
	Status     StatusResult `json:"status"`
}

// StatusResult is Result<u16, String>.
type StatusResult struct {
	Code uint16
	Err  *string
}

// MarshalJSON encodes the result.
func (s StatusResult) MarshalJSON() ([]byte, error) {
	if s.Err != nil {
		return MarshalJSON(map[string]string{"Err": *s.Err})
	}
	return MarshalJSON(map[string]uint16{"Ok": s.Code})
}

// UnmarshalJSON decodes the result.
func (s *StatusResult) UnmarshalJSON(b []byte) error {
	var j struct {
		Ok  *uint16 `json:"Ok"`
		Err *string `json:"Err"`
	}
	if err := json.Unmarshal(b, &j); err != nil || (j.Ok == nil) == (j.Err == nil) {
		return invalid(`status must be {"Ok":n} or {"Err":"msg"}`)
	}
	if j.Ok != nil {
		*s = StatusResult{Code: *j.Ok}
	} else {
		*s = StatusResult{Err: j.Err}
	}
	return nil
}

// ComponentUpgradeOutcome is {"type":"success","reason":…} or {"type":"failed","reason":"…"}.
type ComponentUpgradeOutcome struct {
	// Success is true for "success".
	Success bool
	// Reason is set for success.
	Reason ComponentUpgradeReason
	// FailedReason is set for "failed".
	FailedReason string
}

type upgradeSuccessJSON struct {
	Reason ComponentUpgradeReason `json:"reason"`
}

type upgradeFailedJSON struct {
	Reason string `json:"reason"`
}

// MarshalJSON encodes the outcome.
func (o ComponentUpgradeOutcome) MarshalJSON() ([]byte, error) {
	if o.Success {
		return marshalInternallyTagged("type", "success", upgradeSuccessJSON{o.Reason})
	}
	return marshalInternallyTagged("type", "failed", upgradeFailedJSON{o.FailedReason})
}

// UnmarshalJSON decodes the outcome.
func (o *ComponentUpgradeOutcome) UnmarshalJSON(b []byte) error {
	tag, err := readTag(b, "type", "upgrade outcome")
	if err != nil {
		return err
	}
	switch tag {
	case "success":
		var j upgradeSuccessJSON
		if err := decodeStrict(b, &j); err != nil {
			return err
		}
		*o = ComponentUpgradeOutcome{Success: true, Reason: j.Reason}
	case "failed":
		var j upgradeFailedJSON
		if err := decodeStrict(b, &j); err != nil {
			return err
		}
		*o = ComponentUpgradeOutcome{FailedReason: j.Reason}
	default:
		return invalid(fmt.Sprintf("unknown upgrade outcome %q", tag))
	}
	return nil
}

// ComponentUpgradeReason is {"type":"auto"} or {"type":"manual","force":bool}.
type ComponentUpgradeReason struct {
	Manual bool
	Force  bool
}

type upgradeManualJSON struct {
	Force bool `json:"force"`
}

// MarshalJSON encodes the reason.
func (r ComponentUpgradeReason) MarshalJSON() ([]byte, error) {
	if r.Manual {
		return marshalInternallyTagged("type", "manual", upgradeManualJSON{r.Force})
	}
	return marshalInternallyTagged("type", "auto", nil)
}

// UnmarshalJSON decodes the reason.
func (r *ComponentUpgradeReason) UnmarshalJSON(b []byte) error {
	tag, err := readTag(b, "type", "upgrade reason")
	if err != nil {
		return err
	}
	switch tag {
	case "auto":
		*r = ComponentUpgradeReason{}
	case "manual":
		var j upgradeManualJSON
		if err := decodeStrict(b, &j); err != nil {
			return err
		}
		*r = ComponentUpgradeReason{Manual: true, Force: j.Force}
	default:
		return invalid(fmt.Sprintf("unknown upgrade reason %q", tag))
	}
	return nil
}

// WasmBacktrace is a captured WASM stack.
type WasmBacktrace struct {
	Frames []FrameInfo `json:"frames"`
}

// FrameInfo is one stack frame.
type FrameInfo struct {
	Module   string        `json:"module"`
	FuncName string        `json:"func_name"`
	Symbols  []FrameSymbol `json:"symbols"`
}

// FrameSymbol is debug information of a frame; every field is nullable.
type FrameSymbol struct {
	FuncName *string `json:"func_name"`
	File     *string `json:"file"`
	Line     *uint32 `json:"line"`
	Col      *uint32 `json:"col"`
}

// BacktraceInfo is the backtrace that produced the events in
// [VersionMinIncluding, VersionMaxExcluding).
type BacktraceInfo struct {
	ExecutionID         ExecutionId   `json:"execution_id"`
	ComponentID         ComponentId   `json:"component_id"`
	VersionMinIncluding Version       `json:"version_min_including"`
	VersionMaxExcluding Version       `json:"version_max_excluding"`
	WasmBacktrace       WasmBacktrace `json:"wasm_backtrace"`
}

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

// AppendEventsToExecution is a batch of events for one execution.
type AppendEventsToExecution struct {
	ExecutionID ExecutionId     `json:"execution_id"`
	Version     Version         `json:"version"`
	Batch       []AppendRequest `json:"batch"`
}

// AppendResponseToExecution is the response a finished child sends its parent.
type AppendResponseToExecution struct {
	ParentExecutionID ExecutionId        `json:"parent_execution_id"`
	CreatedAt         Timestamp          `json:"created_at"`
	JoinSetID         JoinSetId          `json:"join_set_id"`
	ChildExecutionID  ExecutionIdDerived `json:"child_execution_id"`
	FinishedVersion   Version            `json:"finished_version"`
	Result            ReturnValue        `json:"result"`
}
