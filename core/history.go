package core

import (
	"encoding/json"
	"fmt"
	"strconv"
)

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
		// The tagged joinSetRequestEventJSON, assembled (req is compact).
		id, err := j.JoinSetID.MarshalText()
		if err != nil {
			return nil, err
		}
		out := make([]byte, 0, len(req)+len(id)+64)
		out = appendSerdeString(append(out, `{"type":`...), h.HistoryType())
		out = appendSerdeString(append(out, `,"join_set_id":`...), string(id))
		out = append(append(out, `,"request":`...), req...)
		return append(out, '}'), nil
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
		if err := decodeStrictTag(b, &j, "type"); err != nil {
			return nil, err
		}
		req, err := DecodeJoinSetRequest(j.Request)
		if err != nil {
			return nil, AtPath(err, "request")
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
	if err := decodeStrictTag(b, h, "type"); err != nil {
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
	// Type is "random_u64", "random_string", "execution_id" or (Stela
	// extension, published workflow state) "stela_state".
	Type string
	// Key is set for stela_state: the published key.
	Key string
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
	case PersistKindState:
		return marshalInternallyTagged("type", k.Type, persistStateJSON{k.Key})
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
		if err := decodeStrictTag(b, &j, "type"); err != nil {
			return err
		}
		*k = PersistKind{Type: tag, Min: j.Min, MaxInclusive: j.MaxInclusive}
	case "random_string":
		var j persistStringJSON
		if err := decodeStrictTag(b, &j, "type"); err != nil {
			return err
		}
		*k = PersistKind{Type: tag, MinLength: j.MinLength, MaxLengthExclusive: j.MaxLengthExclusive}
	case "execution_id":
		*k = PersistKind{Type: tag}
	case PersistKindState:
		var j persistStateJSON
		if err := decodeStrictTag(b, &j, "type"); err != nil {
			return err
		}
		if err := ValidateStateKey(j.Key); err != nil {
			return err
		}
		*k = PersistKind{Type: tag, Key: j.Key}
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
		if t.Before(now) || t.After(MaxTimestamp) {
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
