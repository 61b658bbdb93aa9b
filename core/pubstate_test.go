package core_test

import (
	"encoding/json"
	"testing"

	"github.com/stela-dev/stela/core"
)

// TestPersistKindStateRoundTrips: the stela_state kind keeps its key; a
// bad key or an unknown field is refused at decoding.
func TestPersistKindStateRoundTrips(t *testing.T) {
	k := core.PersistKind{Type: core.PersistKindState, Key: "progress"}
	b, err := json.Marshal(k)
	if err != nil || string(b) != `{"type":"stela_state","key":"progress"}` {
		t.Fatalf("marshal: %s, %v", b, err)
	}
	var got core.PersistKind
	if err := json.Unmarshal(b, &got); err != nil || got != k {
		t.Fatalf("unmarshal: %+v, %v", got, err)
	}
	for _, bad := range []string{`{"type":"stela_state","key":"a b"}`, `{"type":"stela_state","key":"a","x":1}`, `{"type":"stela_state"}`} {
		if err := json.Unmarshal([]byte(bad), &got); err == nil {
			t.Errorf("%s decoded", bad)
		}
	}
}
