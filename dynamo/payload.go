package dynamo

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/stela-dev/stela/core"
)

// blobRef marks a payload attribute that holds a CAS digest instead of the
// JSON itself ("@sha256:<hex>"); JSON never starts with '@'.
const blobRef = "@"

// putPayload returns the attribute text for data: the JSON itself when it is
// at most limit bytes, else a reference to a CAS blob, written first with
// its blob reference (owned by owner's tree, retention.go).
func (b *Backend) putPayload(ctx context.Context, data []byte, limit int, owner payloadOwner) (string, error) {
	if len(data) <= limit {
		return string(data), nil
	}
	if b.cas == nil {
		return "", fmt.Errorf("dynamo: payload of %d bytes exceeds the inline threshold of %d and no CAS is configured", len(data), limit)
	}
	d, err := b.cas.WriteBlob(ctx, data)
	if err != nil {
		return "", fmt.Errorf("dynamo: offload %d bytes to the CAS: %w", len(data), err)
	}
	if err := b.recordPayloadRef(ctx, d, owner); err != nil { // deployments_gc.go
		return "", err
	}
	return blobRef + d.String(), nil
}

// getPayload resolves the attribute text written by putPayload.
func (b *Backend) getPayload(ctx context.Context, s string) ([]byte, error) {
	ref, ok := strings.CutPrefix(s, blobRef)
	if !ok {
		return []byte(s), nil
	}
	if b.cas == nil {
		return nil, fmt.Errorf("dynamo: payload %s is in the CAS but no CAS is configured", ref)
	}
	d, err := core.ParseContentDigest(ref)
	if err != nil {
		return nil, fmt.Errorf("dynamo: payload reference %q: %w", ref, err)
	}
	data, err := b.cas.ReadBlob(ctx, d)
	if err != nil {
		return nil, fmt.Errorf("dynamo: read payload %s: %w", ref, err)
	}
	return data, nil
}

func (b *Backend) decodeEvent(ctx context.Context, s string) (core.ExecutionEvent, error) {
	data, err := b.getPayload(ctx, s)
	if err != nil {
		return core.ExecutionEvent{}, err
	}
	var ev core.ExecutionEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return core.ExecutionEvent{}, fmt.Errorf("dynamo: decode event: %w", err)
	}
	return ev, nil
}

func (b *Backend) encodeEvent(ctx context.Context, ev core.ExecutionEvent, owner payloadOwner) (string, error) {
	ev.BacktraceID = nil
	data, err := json.Marshal(ev)
	if err != nil {
		return "", fmt.Errorf("dynamo: encode event %d: %w", ev.Version, err)
	}
	return b.putPayload(ctx, data, b.inline, owner)
}
