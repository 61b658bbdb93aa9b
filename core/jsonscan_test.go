package core_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/stela-dev/stela/core"
)

// scanCases are JSON texts the splitter must read as encoding/json does,
// or refuse (then the callers use encoding/json).
var scanCases = []string{
	`{}`, ` { } `, `{"a":1}`, `{"a" : "x}" , "b":[1,{"c":"]"}],"d":null}`,
	`{"a":{"b":{"c":[[],{}]}},"e":"\"quoted\\\\"}`, `{"dup":1,"dup":2}`, `{"k\u0065y":1}`,
	"{\n\t\"a\":\ttrue,\r\n\"b\":-1.5e3 }", `[]`, ` [1, "two", {"three":3}, [4], null ] `,
	`{"a":1}x`, `{"a":1,}`, `{"a" 1}`, `{"a":}`, `{"a":1`, `["a",]`, `[1 2]`, `null`, `"s"`, `{"a":"unterminated}`,
}

func TestParseJSONObjectAgreesWithEncodingJSON(t *testing.T) {
	for _, c := range scanCases {
		checkScan(t, []byte(c))
	}
}

func FuzzParseJSONObject(f *testing.F) {
	for _, c := range scanCases {
		f.Add([]byte(c))
	}
	f.Fuzz(checkScan)
}

// checkScan: on valid JSON the splitter either refuses or agrees with
// json.Unmarshal into a map (last duplicate wins) or a slice; it never
// panics on anything.
func checkScan(t *testing.T, data []byte) {
	obj, objOK := core.ParseJSONObject(data)
	elems, arrOK := core.JSONArray(data)
	if !json.Valid(data) {
		return
	}
	var m map[string]json.RawMessage
	if objOK {
		if err := json.Unmarshal(data, &m); err != nil || m == nil {
			t.Fatalf("%s: split as an object, but encoding/json says %v", data, err)
		}
		for k, v := range m {
			got, ok := obj.Get(k)
			if !ok || !bytes.Equal(got, v) {
				t.Fatalf("%s: member %q = %s, encoding/json %s", data, k, got, v)
			}
		}
		for _, mem := range obj {
			if _, ok := m[string(mem.Key)]; !ok {
				t.Fatalf("%s: extra member %q", data, mem.Key)
			}
		}
	} else if json.Unmarshal(data, &m) == nil && m != nil && !bytes.Contains(data, []byte(`\`)) && utf8.Valid(data) {
		t.Fatalf("%s: a valid object without escapes or bad UTF-8 was refused", data)
	}
	var a []json.RawMessage
	if arrOK {
		if err := json.Unmarshal(data, &a); err != nil || len(a) != len(elems) {
			t.Fatalf("%s: split into %d elements, encoding/json %d (%v)", data, len(elems), len(a), err)
		}
		for i := range a {
			if !bytes.Equal(a[i], elems[i]) {
				t.Fatalf("%s: element %d = %s, encoding/json %s", data, i, elems[i], a[i])
			}
		}
	} else if json.Unmarshal(data, &a) == nil && a != nil {
		t.Fatalf("%s: a valid array was refused", data)
	}
}
