package core

import (
	"encoding/json"
	"testing"
)

// ReturnValue.Equal compares values, not bytes: the same JSON value spelt
// with another key order or spacing is equal; another kind, type, value
// or failure is not.
func TestReturnValueEqual(t *testing.T) {
	val := func(typ, v string) *WastValWithType { return &WastValWithType{Type: typ, Value: json.RawMessage(v)} }
	reason, other := "boom", "bang"
	rec := `record { a: u32, b: string }`
	for _, c := range []struct {
		name string
		a, b ReturnValue
		want bool
	}{
		{"same bytes", RetOk(val(rec, `{"a":1,"b":"x"}`)), RetOk(val(rec, `{"a":1,"b":"x"}`)), true},
		{"key order and spaces", RetOk(val(rec, `{"a":1,"b":"x"}`)), RetOk(val(rec, `{ "b": "x", "a": 1 }`)), true},
		{"no value", RetOk(nil), RetOk(nil), true},
		{"value against none", RetOk(val("u32", `1`)), RetOk(nil), false},
		{"another value", RetOk(val("u32", `1`)), RetOk(val("u32", `2`)), false},
		{"another type", RetOk(val("u32", `1`)), RetOk(val("u64", `1`)), false},
		{"ok against err", RetOk(val("u32", `1`)), RetErr(val("u32", `1`)), false},
		{"same failure", RetFailure(FailureUncategorized, &reason, nil), RetFailure(FailureUncategorized, &reason, nil), true},
		{"another reason", RetFailure(FailureUncategorized, &reason, nil), RetFailure(FailureUncategorized, &other, nil), false},
		{"reason against none", RetFailure(FailureUncategorized, &reason, nil), RetFailure(FailureUncategorized, nil, nil), false},
		{"another detail", RetFailure(FailureUncategorized, &reason, &reason), RetFailure(FailureUncategorized, &reason, &other), false},
		{"another failure kind", RetFailure(FailureUncategorized, nil, nil), RetFailure(FailureCancelled, nil, nil), false},
		{"same detail", RetFailure(FailureTimedOut, nil, &other), RetFailure(FailureTimedOut, nil, &other), true},
		{"failure without details", ReturnValue{Kind: ReturnExecutionFailure}, ReturnValue{Kind: ReturnExecutionFailure}, false},
		{"the same invalid JSON", RetOk(val("u32", `{`)), RetOk(val("u32", `{`)), false},
		{"an invalid kind", ReturnValue{Kind: 99}, ReturnValue{Kind: 99}, false},
	} {
		if got := c.a.Equal(c.b); got != c.want {
			t.Errorf("%s: Equal = %v, want %v", c.name, got, c.want)
		}
		if got := c.b.Equal(c.a); got != c.want {
			t.Errorf("%s (swapped): Equal = %v, want %v", c.name, got, c.want)
		}
	}
}
