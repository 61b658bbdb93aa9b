package core

import (
	"encoding/json"
	"fmt"
)

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
	if err := decodeStrictTag(b, r, "type"); err != nil {
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
	if err := decodeStrictTag(j.Event, r, "type"); err != nil {
		return AtPath(err, "event")
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

// AppendResponseToExecution is the response a finished child sends its parent.
type AppendResponseToExecution struct {
	ParentExecutionID ExecutionId        `json:"parent_execution_id"`
	CreatedAt         Timestamp          `json:"created_at"`
	JoinSetID         JoinSetId          `json:"join_set_id"`
	ChildExecutionID  ExecutionIdDerived `json:"child_execution_id"`
	FinishedVersion   Version            `json:"finished_version"`
	Result            ReturnValue        `json:"result"`
}
