package core

import (
	"encoding/json"
	"fmt"
)

// Published state (Stela extension, docs/http-api.md "Published state"): a
// workflow publishes a value under a key by recording a Persist event of
// kind stela_state {key} whose value is the JSON of the state; the latest
// such event of a key is the key's current value, while the workflow runs
// and after it finished. A replay matches the recorded event and writes
// nothing, so a value is published once.

// PersistKindState is the Persist kind of published workflow state.
const PersistKindState = "stela_state"

// MaxStateKeyLen and MaxStateValueBytes bound published state.
const (
	MaxStateKeyLen     = 64
	MaxStateValueBytes = 64 << 10
)

type persistStateJSON struct {
	Key string `json:"key"`
}

// ValidateStateKey checks a state key: 1…64 ASCII letters, digits, '-', '_' or '.'.
func ValidateStateKey(key string) error {
	ok := key != "" && len(key) <= MaxStateKeyLen
	for i := 0; ok && i < len(key); i++ {
		c := key[i]
		ok = isASCIIAlnum(c) || c == '-' || c == '_' || c == '.'
	}
	if !ok {
		return invalid(fmt.Sprintf("invalid state key %q: want 1…%d letters, digits, '-', '_' or '.'", key, MaxStateKeyLen))
	}
	return nil
}

// LatestState returns the value last published under key in history.
func LatestState(history []HistoryEventWithVersion, key string) (json.RawMessage, bool) {
	for i := len(history) - 1; i >= 0; i-- {
		if p, ok := history[i].Event.(*Persist); ok && p.Kind.Type == PersistKindState && p.Kind.Key == key {
			return json.RawMessage(p.Value), true
		}
	}
	return nil, false
}
