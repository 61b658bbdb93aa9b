package workertest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"

	"github.com/stela-dev/stela/core"
)

// Signal sends the signal name with value v (JSON-encoded) to the workflow
// execution id, as client.Signal does over HTTP, and returns its sequence
// number; the test fails if the store refuses it. Run (or Advance) lets
// the workflow receive it.
func (e *Env) Signal(id core.ExecutionId, name string, v any) uint64 {
	e.t.Helper()
	seq, err := e.TrySignal(id, name, v, "")
	if err != nil {
		e.t.Fatalf("signal %s to %s: %v", name, id, err)
	}
	return seq
}

// TrySignal is Signal returning the store's error; key is the send's
// idempotency key (empty: a random one), a repeated send with the same key
// and value is delivered once.
func (e *Env) TrySignal(id core.ExecutionId, name string, v any, key string) (uint64, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return 0, err
	}
	if key == "" {
		var b [12]byte
		_, _ = rand.Read(b[:])
		key = hex.EncodeToString(b[:])
	}
	return core.SendSignal(e.ctx(), e.Store, id, name, core.SignalPayload{Key: key, Value: raw}, e.Clock.Now())
}

// State decodes into out the value the workflow execution id last
// published under key (worker.Context.SetState); false when none.
func (e *Env) State(id core.ExecutionId, key string, out any) bool {
	e.t.Helper()
	raw, ok := core.LatestState(e.Log(id).EventHistory(), key)
	if !ok {
		return false
	}
	if err := json.Unmarshal(raw, out); err != nil {
		e.t.Fatalf("state %s of %s: %v", key, id, err)
	}
	return true
}
