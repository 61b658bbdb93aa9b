package core_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stela-dev/stela/core"
)

// fuzzDecoder checks that decoding never panics and that decode∘encode is
// stable: whatever decodes re-encodes to bytes that decode and re-encode to
// the same bytes. Seeds: the given literals, the project's golden files and,
// when present, Obelisk's own fixtures.
func fuzzDecoder[T any](f *testing.F, seeds ...string) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	for _, b := range goldenFiles() {
		f.Add(b)
	}
	files, _, _ := obeliskFixtures()
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v T
		if json.Unmarshal(data, &v) != nil {
			return
		}
		first, err := core.MarshalJSON(v)
		if err != nil {
			return // decoded values that cannot be encoded (e.g. zero ids) are rejected on write
		}
		var w T
		if err := json.Unmarshal(first, &w); err != nil {
			t.Fatalf("re-decode of %s: %v", first, err)
		}
		second, err := core.MarshalJSON(w)
		if err != nil || string(first) != string(second) {
			t.Fatalf("unstable: %s != %s (%v)", first, second, err)
		}
	})
}

func FuzzDecodeExecutionEvent(f *testing.F) {
	fuzzDecoder[core.ExecutionEvent](f,
		`{"created_at":"1970-01-01T00:00:00Z","event":"paused","version":1}`,
		`{"created_at":"2026-08-22T10:00:00.200Z","event":{"history_event":{"event":{"type":"join_set_create","join_set_id":"g:1"}}},"backtrace_id":2,"version":2}`)
}

func FuzzDecodeAppendRequest(f *testing.F) {
	fuzzDecoder[core.AppendRequest](f,
		`{"created_at":"1970-01-01T00:00:00Z","event":{"unlocked":{"backoff_expires_at":"2026-08-22T10:00:05Z","reason":"executor closing"}}}`,
		`{"created_at":"1970-01-01T00:00:00Z","event":{"temporarily_failed":{"backoff_expires_at":"2026-08-22T10:00:02Z","reason":"r","detail":null,"http_client_traces":[{"req":{"sent_at":"2026-08-22T10:00:00.500Z","uri":"https://example.com","method":"GET"},"resp":{"finished_at":"2026-08-22T10:00:00.734Z","status":{"Ok":200}}}]}}}`,
		`{"created_at":"1970-01-01T00:00:00Z","event":{"component_upgrade_finished":{"component_digest":"sha256:0000000000000000000000000000000000000000000000000000000000000000","deployment_id":"Dep_00000000000000000000000000","outcome":{"type":"success","reason":{"type":"manual","force":true}}}}}`,
		`{"created_at":"1970-01-01T00:00:00Z","event":{"history_event":{"event":{"type":"persist","value":[1,2],"kind":{"type":"random_u64","min":0,"max_inclusive":100}}}}}`)
}

func FuzzDecodeJoinSetResponseEvent(f *testing.F) {
	fuzzDecoder[core.JoinSetResponseEvent](f,
		`{"join_set_id":"g:1","event":{"type":"delay_finished","delay_id":"Delay_00000000000000000000000000.g:1_2","result":{"Ok":null}}}`,
		`{"join_set_id":"g:1","event":{"type":"child_execution_finished","child_execution_id":"E_00000000000000000000000000.g:1_1","finished_version":2,"result":{"ok":{"type":"u64","value":55}}}}`)
}

func FuzzDecodeReturnValue(f *testing.F) {
	fuzzDecoder[core.ReturnValue](f, `{"ok":null}`, `{"err":{"type":"string","value":"boom"}}`,
		`{"execution_failure":{"kind":"timed_out","reason":"r","detail":"d"}}`,
		`{"ok":{"type":"result<option<string>, string>","value":{"ok":null}}}`)
}

func FuzzDecodePendingState(f *testing.F) {
	fuzzDecoder[core.PendingState](f,
		`{"status":"paused","PendingAt":{"scheduled_at":"1970-01-01T00:00:00Z","last_lock":null}}`,
		`{"status":"cancelling","Locked":{"locked_by":{"executor_id":"Exr_00000000000000000000000000","run_id":"Run_00000000000000000000000000"},"lock_expires_at":"1970-01-01T00:00:01Z"}}`,
		`{"status":"finished","version":9,"finished_at":"1970-01-01T00:00:00.010Z","result_kind":{"err":{"execution_failure":"timed_out"}}}`)
}

func FuzzDecodeCreateRequest(f *testing.F) {
	fuzzDecoder[core.CreateRequest](f,
		`{"created_at":"1970-01-01T00:00:00.100Z","execution_id":"E_00000000000000000000000000.g:1_1","ffqn":"testing:fibo/fibo.fibo","params":[10],"parent":["E_00000000000000000000000000","g:1"],"scheduled_at":"1970-01-01T00:00:00.100Z","component_id":{"component_type":"activity","name":"","component_digest":"sha256:0000000000000000000000000000000000000000000000000000000000000000"},"deployment_id":"Dep_00000000000000000000000000","metadata":{},"scheduled_by":null,"paused":false}`)
}

func FuzzDecodeCapturedDbWrite(f *testing.F) {
	fuzzDecoder[core.CapturedDbWrite](f, `{"AppendFinished":{"execution_id":"E_00000000000000000000000000","version":5,"current_time":"1970-01-01T00:00:00.400Z","retval":{"ok":null},"parent":null}}`)
}

func FuzzDecodeTimestamp(f *testing.F) {
	fuzzDecoder[core.Timestamp](f, `"1970-01-01T00:00:00Z"`, `"2026-08-22T10:09:13.123456Z"`, `"2026-08-22T12:09:13.1+02:00"`)
}
