package core

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// strictDecoders decode a text as one type each; the equivalence tests
// run them with and without the strict decoders' fast path.
var strictDecoders = map[string]func([]byte) (any, error){
	"ExecutionEvent":            decodeAs[ExecutionEvent],
	"AppendRequest":             decodeAs[AppendRequest],
	"CreateRequest":             decodeAs[CreateRequest],
	"ComponentId":               decodeAs[ComponentId],
	"AppendEventsToExecution":   decodeAs[AppendEventsToExecution],
	"AppendResponseToExecution": decodeAs[AppendResponseToExecution],
	"BacktraceInfo":             decodeAs[BacktraceInfo],
	"LockedBy":                  decodeAs[LockedBy],
	"ComponentRetryConfig":      decodeAs[ComponentRetryConfig],
	"ExecutionWithState":        decodeAs[ExecutionWithState],
	"JoinSetResponseEvent":      decodeAs[JoinSetResponseEvent],
	"JoinSetResponseEventOuter": decodeAs[JoinSetResponseEventOuter],
	"ResponseWithCursor":        decodeAs[ResponseWithCursor],
	"WastValWithType":           decodeAs[WastValWithType],
	"HttpClientTrace":           decodeAs[HttpClientTrace],
	"PersistedFunctionMetadata": decodeAs[PersistedFunctionMetadata],
	"WasmBacktrace":             decodeAs[WasmBacktrace],
	"ListExecutionEvents":       decodeAs[ListExecutionEventsResponse],
	"ReturnValue":               decodeAs[ReturnValue],
	"PendingState":              decodeAs[PendingState],
	"CapturedDbWrite":           decodeAs[CapturedDbWrite],
	"PersistKind":               decodeAs[PersistKind],
	"ComponentUpgradeOutcome":   decodeAs[ComponentUpgradeOutcome],
	"Duration":                  decodeAs[Duration],
	"HistoryEvent":              func(b []byte) (any, error) { return DecodeHistoryEvent(b) },
	"JoinSetRequest":            func(b []byte) (any, error) { return DecodeJoinSetRequest(b) },
	"ExecutionRequest":          func(b []byte) (any, error) { return DecodeExecutionRequest(b) },
}

func decodeAs[T any](b []byte) (any, error) {
	var v T
	err := json.Unmarshal(b, &v)
	return v, err
}

// withFastStrict runs f with the fast path on or off.
func withFastStrict(on bool, f func()) {
	was := SetFastDecoding(on)
	defer SetFastDecoding(was)
	f()
}

// compareStrictPaths decodes data as every strict decoder with and without
// the fast path and fails on any difference: the error text, or the value.
// It returns how many decoders accepted data.
func compareStrictPaths(t *testing.T, data []byte) int {
	t.Helper()
	names := make([]string, 0, len(strictDecoders))
	for n := range strictDecoders {
		names = append(names, n)
	}
	sort.Strings(names)
	accepted := 0
	for _, name := range names {
		dec := strictDecoders[name]
		var fastV, slowV any
		var fastErr, slowErr error
		withFastStrict(true, func() { fastV, fastErr = dec(data) })
		withFastStrict(false, func() { slowV, slowErr = dec(data) })
		if errText(fastErr) != errText(slowErr) {
			t.Fatalf("%s of %q: fast path error %q, encoding/json path %q", name, data, errText(fastErr), errText(slowErr))
		}
		if slowErr == nil {
			accepted++
			if !reflect.DeepEqual(fastV, slowV) {
				t.Fatalf("%s of %q: fast path %#v, encoding/json path %#v", name, data, fastV, slowV)
			}
		}
	}
	return accepted
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// strictCorpus is the golden files, the fuzz seeds' corpus files and every
// object and array nested in them, plus the given seeds.
func strictCorpus(t testing.TB, seeds ...string) [][]byte {
	var out [][]byte
	for _, s := range seeds {
		out = append(out, []byte(s))
	}
	var files []string
	for _, glob := range []string{"testdata/golden/*.json", "testdata/fuzz/*/*"} {
		f, _ := filepath.Glob(glob)
		files = append(files, f...)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(f, "fuzz") { // go test fuzz v1: []byte("…") lines
			for _, line := range strings.Split(string(b), "\n") {
				if s, ok := strings.CutPrefix(line, "[]byte("); ok {
					var v string
					if err := json.Unmarshal([]byte(strings.TrimSuffix(s, ")")), &v); err == nil {
						out = append(out, []byte(v))
					}
				}
			}
			continue
		}
		out = append(out, b)
	}
	var nested [][]byte
	var walk func([]byte)
	walk = func(b []byte) {
		b = bytes.TrimSpace(b)
		if len(b) == 0 || (b[0] != '{' && b[0] != '[') {
			return
		}
		nested = append(nested, b)
		if o, ok := ParseJSONObject(b); ok {
			for _, m := range o {
				walk(m.Value)
			}
		} else if a, ok := JSONArray(b); ok {
			for _, it := range a {
				walk(it)
			}
		}
	}
	for _, b := range out {
		walk(b)
	}
	// One of each text up to white space (the golden files come pretty
	// and compact).
	seen := map[string]bool{}
	var uniq [][]byte
	for _, b := range append(out, nested...) {
		key := string(b)
		var c bytes.Buffer
		if json.Compact(&c, b) == nil {
			key = c.String()
		}
		if !seen[key] {
			seen[key] = true
			uniq = append(uniq, b)
		}
	}
	return uniq
}

// mutations returns variants of the object data that strict decoding must
// judge as before: each member dropped, nulled, duplicated, given another
// value or a key differing in case or escaped, an unknown member, a trailing
// byte, a truncation.
func mutations(data []byte) [][]byte {
	o, ok := ParseJSONObject(data)
	if !ok || len(data) > 2048 {
		return nil
	}
	build := func(ms []JSONMember) []byte {
		var b bytes.Buffer
		b.WriteByte('{')
		for i, m := range ms {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('"')
			b.Write(m.Key)
			b.WriteString(`":`)
			b.Write(m.Value)
		}
		b.WriteByte('}')
		return b.Bytes()
	}
	var out [][]byte
	values := []string{`null`, `"x"`, `""`, `0`, `-1`, `1.5`, `1e3`, `4294967296`, `18446744073709551616`, `true`, `[]`, `{}`, `[null]`, `"\u0041"`, "\"\xff\""}
	for i, m := range o {
		rest := append(append([]JSONMember(nil), o[:i]...), o[i+1:]...)
		out = append(out, build(rest))
		dup := append(append([]JSONMember(nil), o...), m)
		out = append(out, build(dup))
		upper := append([]JSONMember(nil), o...)
		upper[i].Key = bytes.ToUpper(m.Key)
		out = append(out, build(upper))
		if len(m.Key) > 0 {
			esc := append([]JSONMember(nil), o...)
			esc[i].Key = append([]byte(`\u00`+strings.ToLower(strings.ToUpper(string(rune('0'+m.Key[0]/16))))), m.Key[1:]...)
			out = append(out, build(esc))
		}
		for _, v := range values {
			other := append([]JSONMember(nil), o...)
			other[i].Value = []byte(v)
			out = append(out, build(other))
		}
	}
	out = append(out, build(append(append([]JSONMember(nil), o...), JSONMember{Key: []byte("unknown"), Value: []byte("1")})))
	out = append(out, append(append([]byte(nil), data...), '}'), data[:len(data)-1], append([]byte(" \n"), data...))
	return out
}

// TestStrictFastPathMatches pins that the strict decoders' fast path
// (fastDecodeStrict) decides every text of the corpus, and every mutation
// of its objects, exactly as the encoding/json path: same error text, same
// value.
func TestStrictFastPathMatches(t *testing.T) {
	corpus := strictCorpus(t)
	if len(corpus) < 100 {
		t.Fatalf("corpus of %d texts", len(corpus))
	}
	accepted := 0
	for i, b := range corpus {
		accepted += compareStrictPaths(t, b)
		if testing.Short() && i%4 != 0 {
			continue
		}
		for _, m := range mutations(b) {
			compareStrictPaths(t, m)
		}
	}
	t.Logf("%d texts, %d accepted decodes", len(corpus), accepted)
	if accepted < 50 {
		t.Fatalf("only %d decodes accepted: the corpus does not reach the fast path", accepted)
	}
}

// TestStrictFastPathTaken pins that the fast path does decode the common
// shapes (else it would cost without paying).
func TestStrictFastPathTaken(t *testing.T) {
	for _, tc := range []struct {
		v    any
		text string
	}{
		{&appendRequestJSON{}, `{"created_at":"2026-01-01T00:00:00Z","event":{"history_event":{"event":{"type":"join_set_create","join_set_id":"g:1"}}}}`},
		{&JoinNext{}, `{"type":"join_next","join_set_id":"g:1","run_expires_at":"2026-01-01T00:00:00Z","requested_ffqn":null,"closing":false}`},
		{&ChildExecutionRequest{}, `{"type":"child_execution_request","child_execution_id":"E_00000000000000000000000000.g:1_1","target_ffqn":"a:b/c.d","params":["x",{"a":1}],"result":{"Ok":null}}`},
	} {
		tag := ""
		if strings.Contains(tc.text, `"type"`) {
			tag = "type"
		}
		if !fastDecodeStrict([]byte(tc.text), tc.v, tag) {
			t.Errorf("fast path refused %s into %T", tc.text, tc.v)
		}
	}
}

// TestValidJSONMatchesValid pins that validJSON accepts only what
// json.Valid accepts, with scanValidJSON's depth that of jsonDepth-style
// counting.
func TestValidJSONMatchesValid(t *testing.T) {
	cases := []string{``, ` `, `1`, `-`, `-0`, `01`, `1.`, `.1`, `1e`, `1e+`, `1E-2`, `-0.0e0`, `"`, `"\"`, `"\u12"`, `"\u12g4"`, `"\x"`, "\"\t\"", "\"\xff\"",
		`tru`, `true`, `truex`, `null `, `[`, `[1,]`, `[,1]`, `[1 2]`, `{}`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{1:2}`, `{"a":1 "b":2}`, `[[[]]]`, `{"a":[{"b":{}}]}`, `1 2`, "\ufeff1",
		strings.Repeat("[", 1000) + strings.Repeat("]", 1000), strings.Repeat("[", 1001) + strings.Repeat("]", 1001)}
	for _, b := range strictCorpus(t) {
		cases = append(cases, string(b))
		for _, m := range mutations(b) {
			cases = append(cases, string(m))
		}
	}
	for _, c := range cases {
		depth, ok := scanValidJSON([]byte(c))
		if ok && !json.Valid([]byte(c)) {
			t.Fatalf("validJSON accepts %q, json.Valid does not", c)
		}
		if !ok && json.Valid([]byte(c)) && !strings.HasPrefix(c, strings.Repeat("[", validMaxDepth+1)) {
			t.Fatalf("validJSON refuses valid %q", c)
		}
		if ok && depth != refDepth([]byte(c)) {
			t.Fatalf("depth of %q: %d, want %d", c, depth, refDepth([]byte(c)))
		}
	}
}

func refDepth(b []byte) int {
	depth, maxDepth, inString, escaped := 0, 0, false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
			maxDepth = max(maxDepth, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return maxDepth
}

// FuzzStrictFastPath compares the fast and encoding/json paths of the
// strict decoders on arbitrary texts.
func FuzzStrictFastPath(f *testing.F) {
	for _, b := range strictCorpus(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		compareStrictPaths(t, data)
		depth, ok := scanValidJSON(data)
		if ok != json.Valid(data) && !(json.Valid(data) && refDepth(data) > validMaxDepth) {
			t.Fatalf("validJSON %v, json.Valid %v on %q", ok, json.Valid(data), data)
		}
		if ok && depth != refDepth(data) {
			t.Fatalf("depth %d, want %d", depth, refDepth(data))
		}
	})
}

// TestCheckJSONTextKeyStack pins the duplicate-key check of CheckJSONText
// with its one key stack shared by the open objects: keys of a nested or
// a closed object are not the outer object's, and objects beyond the short
// list (16 keys) still catch duplicates.
func TestCheckJSONTextKeyStack(t *testing.T) {
	many := func(n int, extra string) string {
		var b strings.Builder
		b.WriteByte('{')
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`"k` + strings.Repeat("x", i) + `":{"k":1,"kx":[{"k":2}]}`)
		}
		return b.String() + extra + "}"
	}
	for _, tc := range []struct{ in, reason string }{
		{`{"a":{"x":1,"y":2},"x":3,"y":{"x":{}}}`, ""},
		{`[{"a":1},{"a":2},{"b":[{"a":3}],"a":4}]`, ""},
		{`{"a":{"x":1},"b":{"x":1,"x":2}}`, "duplicate key `x` at `b`"},
		{`{"a":{"x":1},"x":2,"a":3}`, "duplicate key `a`"},
		{`[{"a":1},{"b":{"c":1},"b":2}]`, "duplicate key `b` at `[1]`"},
		{many(15, ""), ""},
		{many(16, ""), ""},
		{many(40, ""), ""},
		{many(16, `,"k":1`), "duplicate key `k`"},
		{many(40, `,"kxxxxx":1`), "duplicate key `kxxxxx`"},
		{many(40, `,"z":{"a":1,"a":2}`), "duplicate key `a` at `z`"},
	} {
		err := CheckJSONText([]byte(tc.in))
		got := ""
		if err != nil {
			got = err.(*ValidationError).Reason
		}
		if !strings.Contains(got, tc.reason) || (tc.reason == "") != (err == nil) {
			t.Errorf("CheckJSONText(%.60s…) = %v, want %q", tc.in, err, tc.reason)
		}
	}
}

// promotedDecoder embeds a type with its own UnmarshalJSON: encoding/json
// calls that one for the whole value, so the fast path must not decode it
// field by field.
type promotedDecoder struct {
	ComponentRetryConfig
	Extra int `json:"extra"`
}

// TestStrictFastPathLeavesPromotedDecoders pins that the fast path calls
// the UnmarshalJSON a struct's method set holds (here promoted) instead of
// decoding its fields.
func TestStrictFastPathLeavesPromotedDecoders(t *testing.T) {
	var fastOn, w promotedDecoder
	fastErr := decodeStrict([]byte(`{"extra":1}`), &fastOn)
	var slowErr error
	withFastStrict(false, func() { slowErr = decodeStrict([]byte(`{"extra":1}`), &w) })
	if errText(fastErr) != errText(slowErr) || !reflect.DeepEqual(fastOn, w) {
		t.Fatalf("fast path %v %+v, encoding/json path %v %+v", fastErr, fastOn, slowErr, w)
	}
	if slowErr == nil {
		t.Fatal("the promoted decoder should refuse `extra`")
	}
}

// DecodeValidatedAnswer decodes an answer — an object or an array — only
// to json.Unmarshal's value, and leaves what it refuses zero: every corpus
// text and its mutations as an array of one and of two, decoded into
// slices of the corpus types, plus the edge cases of arrays.
func TestDecodeValidatedAnswerMatchesUnmarshal(t *testing.T) {
	types := []reflect.Type{reflect.TypeFor[[]ExecutionWithState](), reflect.TypeFor[[]ResponseWithCursor](),
		reflect.TypeFor[[]ReturnValue](), reflect.TypeFor[[]ExecutionId](), reflect.TypeFor[[]ComponentId](),
		reflect.TypeFor[[]ListExecutionEventsResponse](), reflect.TypeFor[ListExecutionEventsResponse]()}
	texts := []string{`null`, `[]`, ` [ ] `, `[null]`, `[{}]`, `[{"zz":1}]`, `[1]`, `["E_00000000000000000000000000"]`, `{}`}
	for _, b := range strictCorpus(t) {
		texts = append(texts, "["+string(b)+"]", "["+string(b)+","+string(b)+"]", string(b))
		if !testing.Short() {
			for _, m := range mutations(b) {
				texts = append(texts, "["+string(m)+"]")
			}
		}
	}
	accepted := 0
	for _, text := range texts {
		if _, ok := ValidJSONDepth([]byte(text)); !ok {
			continue
		}
		for _, typ := range types {
			got, want := reflect.New(typ), reflect.New(typ)
			if !DecodeValidatedAnswer([]byte(text), got.Interface()) {
				if !got.Elem().IsZero() {
					t.Fatalf("%s refused into %s left %+v", text, typ, got.Elem())
				}
				continue
			}
			accepted++
			if err := json.Unmarshal([]byte(text), want.Interface()); err != nil {
				t.Fatalf("%s accepted into %s; json.Unmarshal: %v", text, typ, err)
			}
			if !reflect.DeepEqual(got.Interface(), want.Interface()) {
				t.Fatalf("%s into %s: %+v, json.Unmarshal %+v", text, typ, got.Elem(), want.Elem())
			}
		}
	}
	if accepted < 50 {
		t.Fatalf("only %d decodes accepted: the texts do not reach the fast path", accepted)
	}
}

// An object whose keys take the encoding/json fallback (an escape sequence,
// bytes that are not UTF-8) names its first unknown field in text order,
// the same on every run, as one without them does.
func TestUnknownFieldNamedInTextOrder(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{`{"z\u0031":1,"y2":2,"x3":3,"w4":4,"v5":5,"component_type":"activity","name":"c"}`, "unknown field `z1`"},
		{`{"component_type":"activity","y2":2,"x3":3,"n\u0061me":"c","w4":4}`, "unknown field `y2`"},
		{"{\"q\xff\":1,\"p\":2,\"o\":3,\"component_type\":\"activity\",\"name\":\"c\"}", "unknown field `q\ufffd`"},
		{`{"y2":2,"x3":3,"w4":4,"v5":5,"component_type":"activity","name":"c"}`, "unknown field `y2`"},
	} {
		for _, fast := range []bool{true, false} {
			for range 30 {
				var err error
				withFastStrict(fast, func() { _, err = decodeAs[ComponentId]([]byte(tc.text)) })
				if !strings.Contains(errText(err), tc.want) {
					t.Fatalf("%q (fast path %v): %v, want %s", tc.text, fast, err, tc.want)
				}
			}
		}
	}
}
