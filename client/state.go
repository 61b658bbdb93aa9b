package client

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/stela-dev/stela/core"
)

// GetState decodes into out the value the workflow execution id last
// published under key (worker.Context.SetState), while it runs or after it
// finished; found is false when nothing was published under key yet. It
// reads the execution's history (GET /v1/worker/executions/{id}/log).
func (c *Client) GetState(ctx context.Context, id core.ExecutionId, key string, out any) (found bool, err error) {
	if err := core.ValidateStateKey(key); err != nil {
		return false, err
	}
	log, err := c.Get(ctx, id)
	if err != nil {
		return false, err
	}
	raw, ok := core.LatestState(log.EventHistory(), key)
	if !ok {
		return false, nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return true, fmt.Errorf("client: state %s of %s: %w", key, id, err)
	}
	return true, nil
}

// WaitState waits until the workflow execution id published a value under
// key and decodes the latest into out. It polls (every 50 ms, backing off
// to 1 s) until ctx is done; a workflow that finished without publishing
// key is an error wrapping core.ErrNotFound.
func (c *Client) WaitState(ctx context.Context, id core.ExecutionId, key string, out any) error {
	wait := 50 * time.Millisecond
	for {
		found, err := c.GetState(ctx, id, key, out)
		if err != nil || found {
			return err
		}
		st, err := c.GetPendingState(ctx, id)
		if err != nil {
			return err
		}
		if st.PendingState.State == core.StateFinished {
			if found, err := c.GetState(ctx, id, key, out); err != nil || found {
				return err
			}
			return fmt.Errorf("%w: %s finished without publishing state %q", core.ErrNotFound, id, key)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, time.Second)
	}
}
