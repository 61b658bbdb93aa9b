package core

import (
	"bytes"
	"encoding/json"
	"fmt"
)

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
			return AtPath(err, tag)
		}
		*r = ReturnValue{Kind: kind, Value: &v}
	case "execution_failure":
		var f FinishedExecutionFailure
		if err := decodeStrict(inner, &f); err != nil {
			return AtPath(err, tag)
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
	if r.identical(o) {
		// The usual case (a child's response carries its finished
		// event's value): the same fields encode to the same bytes.
		return true
	}
	a, err1 := MarshalJSON(r)
	b, err2 := MarshalJSON(o)
	if err1 != nil || err2 != nil {
		return false
	}
	// The canonical encodings of two equal values are usually the same
	// bytes (a child's response carries its finished event's value): no
	// need to decode them then.
	return bytes.Equal(a, b) || jsonEqual(a, b)
}

// identical reports whether r and o have the same fields where their
// encodings read them, and encode at all (a value's JSON is valid; a
// failure has its details): then their encodings are the same bytes.
func (r ReturnValue) identical(o ReturnValue) bool {
	if r.Kind != o.Kind {
		return false
	}
	switch r.Kind {
	case ReturnOk, ReturnErr:
		if r.Value == nil || o.Value == nil {
			return r.Value == nil && o.Value == nil
		}
		if r.Value.Type != o.Value.Type || !bytes.Equal(r.Value.Value, o.Value.Value) {
			return false
		}
		_, ok := ValidJSONDepth(r.Value.Value)
		return ok
	case ReturnExecutionFailure:
		a, b := r.Failure, o.Failure
		return a != nil && b != nil && a.Kind == b.Kind && sameString(a.Reason, b.Reason) && sameString(a.Detail, b.Detail)
	}
	return false
}

// sameString reports whether two optional strings are both absent or equal.
func sameString(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
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
