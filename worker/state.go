package worker

import (
	"encoding/json"
	"fmt"

	"github.com/stela-dev/stela/core"
)

// SetState publishes v (encoded as JSON, at most 64 KiB) under key for
// clients to read while the workflow runs and after it finished
// (client.GetState, client.WaitState). Keys are 1…64 ASCII letters,
// digits, '-', '_' or '.'; the latest value of a key wins. It is recorded
// as a Persist event of kind stela_state (a Stela extension) and written at
// once, so readers see it before the workflow's next wait; a replay
// matches the recorded event and publishes nothing again.
func (wf *Context) SetState(key string, v any) (err error) {
	if err := core.ValidateStateKey(key); err != nil {
		return fmt.Errorf("worker: SetState: %w", err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("worker: SetState %s: %w", key, err)
	}
	if len(b) > core.MaxStateValueBytes {
		return fmt.Errorf("worker: SetState %s: value of %d bytes, at most %d", key, len(b), core.MaxStateValueBytes)
	}
	what := "SetState " + key
	wf.enter()
	defer wf.leave()
	defer wf.guard(what, &err)
	if err := wf.cancelledErr(what); err != nil {
		return err
	}
	fresh := !wf.replaying()
	wf.persist(b, core.PersistKind{Type: core.PersistKindState, Key: key})
	if fresh {
		wf.flush()
	}
	return nil
}
