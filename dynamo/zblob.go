package dynamo

import (
	"bufio"
	"bytes"
	"compress/flate"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stela-dev/stela/core"
)

// Events kept in a head (and in event pages) are stored as one binary
// attribute z: a format byte followed by the DEFLATE stream, primed with
// zDictV1, of one JSON record per line:
//
//	{"v":<version>,"q":"<request id>","j":"<join set>","o":<ordinal>,"e":<event JSON>}
//
// with "r":"@sha256:…" instead of "e" for an event offloaded to the CAS, and
// j/o only on JoinNext events. The dictionary holds the JSON skeletons of the
// common events, which shrinks a typical activity's Created + Locked +
// Finished from ~1.3 KB to ~0.3 KB and keeps its head under 1 KB.
const zFormatV1 = 1

// zDictV1 must never change: stored blobs depend on it. A new dictionary
// needs a new format byte.
var zDictV1 = []byte(`{"v":0,"q":"","e":{"created_at":"2026-01-01T00:00:00.000Z","event":{"created":{"ffqn":"","params":[],"parent":null,"scheduled_at":"","component_id":{"component_type":"activity","name":"","component_digest":"sha256:"},"deployment_id":"Dep_","metadata":{"traceparent":"00-"},"scheduled_by":null}},"version":0}}
{"v":1,"q":"","e":{"created_at":"","event":{"locked":{"component_id":{"component_type":"workflow","name":"","component_digest":"sha256:"},"executor_id":"Exr_","deployment_id":"Dep_","run_id":"Run_","lock_expires_at":"","retry_config":{"max_retries":null,"retry_exp_backoff":{"secs":0,"nanos":0}}}},"version":1}}
{"v":2,"q":"","e":{"created_at":"","event":{"finished":{"retval":{"ok":{"type":"string","value":""}},"http_client_traces":null}},"version":2}}
{"event":{"history_event":{"event":{"type":"join_set_request","join_set_id":"g:","request":{"type":"child_execution_request","child_execution_id":"E_","target_ffqn":"","params":[],"result":{"Ok":null}}}}}}
{"v":3,"q":"","j":"g:","o":1,"e":{"created_at":"","event":{"history_event":{"event":{"type":"join_next","join_set_id":"","run_expires_at":"","requested_ffqn":null,"closing":false}}}}}
{"event":{"history_event":{"event":{"type":"join_set_create","join_set_id":""}}}}
{"event":{"history_event":{"event":{"type":"persist","value":[],"kind":{"type":"random_u64","min":0,"max_inclusive":}}}}}
{"event":{"temporarily_failed":{"backoff_expires_at":"","reason":"","detail":null,"http_client_traces":null}}}
{"event":{"temporarily_timed_out":{"backoff_expires_at":"","http_client_traces":null}}}
{"event":{"unlocked":{"backoff_expires_at":"","reason":""}}}
{"event":{"paused":null}}{"event":{"unpaused":null}}{"event":{"cancellation_requested":null}}
{"type":"delay_request","delay_id":"Delay_","expires_at":"","schedule_at":{"in":{"secs":0,"nanos":0}},"paused":false}
{"ok":null}{"err":null}{"execution_failure":{"kind":"timed_out"}}`)

type zRecord struct {
	V core.Version    `json:"v"`
	Q string          `json:"q,omitempty"`
	J string          `json:"j,omitempty"`
	O uint32          `json:"o,omitempty"`
	E json.RawMessage `json:"e,omitempty"`
	R string          `json:"r,omitempty"`
}

// encodeZ packs events into a z attribute.
func encodeZ(evs []inlineEvent) types.AttributeValue {
	var buf bytes.Buffer
	buf.WriteByte(zFormatV1)
	w, err := flate.NewWriterDict(&buf, flate.BestCompression, zDictV1)
	if err != nil {
		panic(err) // only for an invalid level
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, e := range evs {
		r := zRecord{V: e.v, Q: e.q, J: e.js, O: e.ord}
		if strings.HasPrefix(e.e, blobRef) {
			r.R = e.e
		} else {
			r.E = json.RawMessage(e.e)
		}
		_ = enc.Encode(r) // writes to memory; payloads are valid JSON
	}
	_ = w.Close()
	return &types.AttributeValueMemberB{Value: buf.Bytes()}
}

// decodeZ unpacks a z attribute; a missing attribute is no events.
func decodeZ(av types.AttributeValue) ([]inlineEvent, error) {
	b, ok := av.(*types.AttributeValueMemberB)
	if !ok || len(b.Value) == 0 {
		return nil, nil
	}
	if b.Value[0] != zFormatV1 {
		return nil, fmt.Errorf("dynamo: unknown event blob format %d", b.Value[0])
	}
	r := flate.NewReaderDict(bytes.NewReader(b.Value[1:]), zDictV1)
	defer r.Close()
	dec := json.NewDecoder(bufio.NewReader(r))
	var out []inlineEvent
	for {
		var rec zRecord
		err := dec.Decode(&rec)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("dynamo: decode event blob: %w", err)
		}
		e := rec.R
		if e == "" {
			e = string(rec.E)
		}
		out = append(out, inlineEvent{v: rec.V, e: e, js: rec.J, ord: rec.O, q: rec.Q})
	}
}
