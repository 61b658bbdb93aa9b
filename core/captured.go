package core

import (
	"encoding/json"
	"fmt"
)

// CapturedDbWrite is a database write captured during a workflow replay, with
// every argument needed to apply it later (seed CapturedDbWrite; externally
// tagged with PascalCase variant names). Exactly one field is set.
type CapturedDbWrite struct {
	Append                        *CapturedAppend                        `json:"Append,omitempty"`
	AppendBatch                   *CapturedAppendBatch                   `json:"AppendBatch,omitempty"`
	AppendBatchWithDelayResponse  *CapturedAppendBatchWithDelayResponse  `json:"AppendBatchWithDelayResponse,omitempty"`
	AppendBatchCreateNewExecution *CapturedAppendBatchCreateNewExecution `json:"AppendBatchCreateNewExecution,omitempty"`
	AppendStubResponse            *CapturedAppendStubResponse            `json:"AppendStubResponse,omitempty"`
	AppendFinished                *CapturedAppendFinished                `json:"AppendFinished,omitempty"`
}

// CapturedAppend is a captured append.
type CapturedAppend struct {
	ExecutionID ExecutionId     `json:"execution_id"`
	Version     Version         `json:"version"`
	Req         AppendRequest   `json:"req"`
	Backtraces  []BacktraceInfo `json:"backtraces"`
}

// CapturedAppendBatch is a captured append_batch.
type CapturedAppendBatch struct {
	CurrentTime Timestamp       `json:"current_time"`
	Batch       []AppendRequest `json:"batch"`
	ExecutionID ExecutionId     `json:"execution_id"`
	Version     Version         `json:"version"`
	Backtraces  []BacktraceInfo `json:"backtraces"`
}

// CapturedAppendBatchWithDelayResponse is a captured append_batch_with_delay_response.
type CapturedAppendBatchWithDelayResponse struct {
	CurrentTime Timestamp       `json:"current_time"`
	Batch       []AppendRequest `json:"batch"`
	ExecutionID ExecutionId     `json:"execution_id"`
	Version     Version         `json:"version"`
	JoinSetID   JoinSetId       `json:"join_set_id"`
	DelayID     DelayId         `json:"delay_id"`
	Backtraces  []BacktraceInfo `json:"backtraces"`
}

// CapturedAppendBatchCreateNewExecution is a captured append_batch_create_new_execution.
type CapturedAppendBatchCreateNewExecution struct {
	CurrentTime Timestamp       `json:"current_time"`
	Batch       []AppendRequest `json:"batch"`
	ExecutionID ExecutionId     `json:"execution_id"`
	Version     Version         `json:"version"`
	ChildReq    []CreateRequest `json:"child_req"`
	Backtraces  []BacktraceInfo `json:"backtraces"`
}

// CapturedAppendStubResponse is a captured upsert_stub_response.
type CapturedAppendStubResponse struct {
	Events      AppendEventsToExecution   `json:"events"`
	Response    AppendResponseToExecution `json:"response"`
	CurrentTime Timestamp                 `json:"current_time"`
	Backtraces  []BacktraceInfo           `json:"backtraces"`
}

// CapturedAppendFinished is a captured Finished append (with the parent, if any).
type CapturedAppendFinished struct {
	ExecutionID ExecutionId `json:"execution_id"`
	Version     Version     `json:"version"`
	CurrentTime Timestamp   `json:"current_time"`
	Retval      ReturnValue `json:"retval"`
	Parent      *Parent     `json:"parent"`
}

// UnmarshalJSON requires exactly one variant.
func (w *CapturedDbWrite) UnmarshalJSON(b []byte) error {
	tag, inner, unit, err := splitExternallyTagged(b, "captured write")
	if err != nil {
		return err
	}
	if unit {
		return invalid("captured write must be an object")
	}
	var target any
	*w = CapturedDbWrite{}
	switch tag {
	case "Append":
		w.Append = &CapturedAppend{}
		target = w.Append
	case "AppendBatch":
		w.AppendBatch = &CapturedAppendBatch{}
		target = w.AppendBatch
	case "AppendBatchWithDelayResponse":
		w.AppendBatchWithDelayResponse = &CapturedAppendBatchWithDelayResponse{}
		target = w.AppendBatchWithDelayResponse
	case "AppendBatchCreateNewExecution":
		w.AppendBatchCreateNewExecution = &CapturedAppendBatchCreateNewExecution{}
		target = w.AppendBatchCreateNewExecution
	case "AppendStubResponse":
		w.AppendStubResponse = &CapturedAppendStubResponse{}
		target = w.AppendStubResponse
	case "AppendFinished":
		w.AppendFinished = &CapturedAppendFinished{}
		target = w.AppendFinished
	default:
		return invalid(fmt.Sprintf("unknown captured write %q", tag))
	}
	return AtPath(decodeStrict(inner, target), tag)
}

var _ json.Unmarshaler = (*CapturedDbWrite)(nil)
