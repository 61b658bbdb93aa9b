package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/wire"
)

// Signal sends the signal name with value v (encoded as JSON) to the
// workflow execution id (POST /v1/executions/{id}/signals/{name}); the
// workflow receives it with worker.WaitSignal. It returns the signal's
// sequence number among those of its name. A signal sent before the
// workflow waits for it is kept; signals of one name are received in the
// order they were sent. The request carries a random idempotency key, so
// the client's retries after an ambiguous failure deliver it once. An
// unknown execution is an error wrapping core.ErrNotFound, a finished one
// core.ErrAlreadyFinished, an activity or a bad name core.ErrValidation.
func (c *Client) Signal(ctx context.Context, id core.ExecutionId, name string, v any) (uint64, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return 0, err
	}
	return c.SignalWithKey(ctx, id, name, v, hex.EncodeToString(b[:]))
}

// SignalWithKey is Signal with the caller's idempotency key (≤128 bytes):
// a send repeated with the same key and value, by this process or another
// one, is delivered once and answers the same sequence number.
func (c *Client) SignalWithKey(ctx context.Context, id core.ExecutionId, name string, v any, key string) (uint64, error) {
	if err := core.ValidateSignalName(name); err != nil {
		return 0, err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return 0, fmt.Errorf("client: signal %s: %w", name, err)
	}
	var out wire.SignalResponse
	_, err = c.post(ctx, http.MethodPost, wire.Path(wire.PathExecutionSignal, id.String(), name),
		wire.SignalBody{Value: raw, Key: key}, idempotent, &out)
	return out.Seq, err
}
