package core_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stela-dev/stela/core"
)

func TestCheckJSONText(t *testing.T) {
	for _, tc := range []struct {
		name, in, reason string // reason "" = accepted
	}{
		{"Plain", `{"ffqn":"a:b/c.d","params":[1,"x",{"a":[{"b":null}]}]}`, ""},
		{"NonASCIIAndEscapes", `{"s":"žluťoučký \u00e9 \n \" \\ \/","k\u00e9y":1,"ké":2}`, ""},
		{"DuplicateViaNonASCIIEscape", `{"k\u00e9":1,"ké":2}`, "duplicate key `ké`"},
		{"SurrogatePair", `["\ud83d\ude00","\uD83D\uDE00"]`, ""},
		{"SameKeyInSiblingObjects", `[{"a":1},{"a":2},{"b":{"a":3}}]`, ""},
		{"SameKeyAtDifferentDepths", `{"a":{"a":{"a":1}}}`, ""},
		{"EscapedBackslashBeforeU", `["\\ud800"]`, ""},
		{"InvalidUTF8", "{\"params\":[\"a\xffb\"]}", "not valid UTF-8 (byte offset 13)"},
		{"TruncatedUTF8", "[\"\xc3\"]", "not valid UTF-8 (byte offset 2)"},
		{"EncodedSurrogateUTF8", "[\"\xed\xa0\x80\"]", "not valid UTF-8 (byte offset 2)"},
		{"LoneHighSurrogate", `{"params":["\ud800"]}`, "lone surrogate `\\ud800` in a string at `params[0]`"},
		{"LoneLowSurrogate", `{"params":[1,"x\udc00"]}`, "lone surrogate `\\udc00` in a string at `params[1]`"},
		{"HighThenNonLow", `["\ud800\u0041"]`, "lone surrogate `\\ud800` in a string at `[0]`"},
		{"HighAtEnd", `["a\uDBFF"]`, "lone surrogate `\\uDBFF` in a string at `[0]`"},
		{"LowThenHigh", `["\udc00\ud800"]`, "lone surrogate `\\udc00` in a string at `[0]`"},
		{"LoneSurrogateInAKey", `{"a":{"\ud800":1}}`, "lone surrogate `\\ud800` in a string at `a`"},
		{"DuplicateTopLevelKey", `{"params":[],"params":[1]}`, "duplicate key `params`"},
		{"DuplicateInParams", `{"params":[1,{"x":1,"y":2,"x":3}]}`, "duplicate key `x` at `params[1]`"},
		{"DuplicateDeep", `{"a":[[{"b":{"c":1,"c":1}}]]}`, "duplicate key `c` at `a[0][0].b`"},
		{"DuplicateViaEscape", `{"a":1,"\u0061":2}`, "duplicate key `a`"},
		{"ManyDistinctKeys", manyKeys(40, ""), ""},
		{"DuplicateAmongManyKeys", manyKeys(40, `,"k3":0`), "duplicate key `k3` at `o`"},
		{"DuplicateAfterManyKeys", manyKeys(40, `,"k39":0`), "duplicate key `k39` at `o`"},
		{"NumbersInRange", `[1.7976931348623157e308,-1.7976931348623157e308,1e-400,0,-0.5,` + strings.Repeat("9", 308) + `]`, ""},
		{"NumberBeyondFloat64", `{"params":[1e400]}`, "number out of range `1e400` at `params[0]`"},
		{"NegativeBeyondFloat64", `{"a":{"b":-1e309}}`, "number out of range `-1e309` at `a.b`"},
		{"IntegerOf400Digits", `[` + strings.Repeat("1", 400) + `]`, "number out of range `" + strings.Repeat("1", 32) + "…` at `[0]`"},
		{"LargeExponentInAnObject", `{"x":2E+308}`, "number out of range `2E+308` at `x`"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !json.Valid([]byte(tc.in)) {
				t.Fatalf("test input is not well-formed JSON")
			}
			err := core.CheckJSONText([]byte(tc.in))
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				return
			}
			var ve *core.ValidationError
			if !errors.As(err, &ve) || ve.Reason != tc.reason {
				t.Fatalf("err = %v, want reason %q", err, tc.reason)
			}
		})
	}
}

// manyKeys returns {"o":{"k0":0,…,"k<n-1>":0<extra>}}.
func manyKeys(n int, extra string) string {
	var b strings.Builder
	b.WriteString(`{"o":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":0`, i)
	}
	b.WriteString(extra + `}}`)
	return b.String()
}

// FuzzCheckJSONText: never panics on well-formed JSON, and accepts nothing
// that encoding/json would read with a replacement character it did not see.
func FuzzCheckJSONText(f *testing.F) {
	for _, s := range []string{`{"a":[1,{"b":"\ud83d\ude00"}]}`, `["\ud800"]`, `{"a":1,"a":2}`, "[\"\xff\"]", `"\\u"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		if core.CheckJSONText(b) != nil || bytes.Contains(b, []byte("\ufffd")) || bytes.Contains(b, []byte("\uFFFD")) ||
			bytes.Contains(b, []byte("\uFfFd")) || strings.ContainsRune(string(b), utf8.RuneError) {
			return
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("accepted but not decodable: %v", err)
		}
		if out, _ := json.Marshal(v); strings.Contains(string(out), "\ufffd") || strings.ContainsRune(string(out), utf8.RuneError) {
			t.Fatalf("accepted %q, which decodes with a replacement character: %s", b, out)
		}
	})
}

// BenchmarkCheckJSONText measures the strict-input scan on a typical submit
// body and on a 1 MiB body (the HTTP limit); compare with json.Valid, which
// every body already goes through.
func BenchmarkCheckJSONText(b *testing.B) {
	small := []byte(`{"ffqn":"testing:integration/activity.add","params":[1,"two",{"three":[3,{"x":"ž\n"}]}]}`)
	var big bytes.Buffer
	big.WriteString(`{"ffqn":"a:b/c.d","params":[`)
	for i := 0; big.Len() < 1<<20; i++ {
		if i > 0 {
			big.WriteByte(',')
		}
		big.WriteString(`{"id":12345,"name":"žluťoučký kůň \"quoted\"","tags":["a","b"],"nested":{"k":true}}`)
	}
	big.WriteString(`]}`)
	for _, c := range []struct {
		name string
		body []byte
	}{{"Submit", small}, {"1MiB", big.Bytes()}} {
		b.Run(c.name+"/CheckJSONText", func(b *testing.B) {
			b.SetBytes(int64(len(c.body)))
			for b.Loop() {
				if err := core.CheckJSONText(c.body); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/json.Valid", func(b *testing.B) {
			b.SetBytes(int64(len(c.body)))
			for b.Loop() {
				if !json.Valid(c.body) {
					b.Fatal("invalid")
				}
			}
		})
	}
}
