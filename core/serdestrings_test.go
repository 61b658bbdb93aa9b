package core

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// serdeStringsRef is serdeStrings without its shortcut: every token with
// an escape sequence decoded and written again by appendSerdeString.
func serdeStringsRef(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\`)) {
		return b
	}
	var out []byte
	for i := 0; i < len(b); {
		if b[i] != '"' {
			out = append(out, b[i])
			i++
			continue
		}
		j, escaped := i+1, false
		for ; j < len(b); j++ {
			if b[j] == '\\' {
				escaped = true
				j++
				continue
			}
			if b[j] == '"' {
				break
			}
		}
		tok := b[i : j+1]
		var s string
		if escaped && json.Unmarshal(tok, &s) == nil {
			out = appendSerdeString(out, s)
		} else {
			out = append(out, tok...)
		}
		i = j + 1
	}
	return out
}

// serdeStrings, which returns a text whose escapes are all serde_json's
// as it is, answers what rewriting every escaped token answers: Go's
// encodings of random strings (quotes, backslashes, controls, U+2028,
// bad UTF-8, JSON held in a string), raw JSON with escapes serde_json
// writes otherwise (\/, \u0041, \u001F, surrogates), and the corpus.
func TestSerdeStringsShortcutMatches(t *testing.T) {
	pieces := []string{"a", "é", `"`, `\`, "\n", "\r", "\t", "\b", "\f", "\x01", "\x1f", "\x7f", "\u2028", "\u2029", "\xff", "\xc3", "😀", `{"k":"v"}`, "/", " "}
	var texts [][]byte
	rng := rand.New(rand.NewPCG(3, 4))
	for range 5000 {
		var sb strings.Builder
		for range rng.IntN(8) {
			sb.WriteString(pieces[rng.IntN(len(pieces))])
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(map[string]any{"s": sb.String(), "a": []string{sb.String(), "x"}}); err != nil {
			t.Fatal(err)
		}
		texts = append(texts, bytes.TrimSpace(buf.Bytes()))
	}
	for _, raw := range []string{`"\/"`, `"\u0041"`, `"\u001F"`, `"\u001f"`, `"\ud83d\ude00"`, `"\ud800"`, `["\"",  "\u00e9"]`,
		`{"a":"\\u0041"}`, `"\\\/"`, "\"\xff\\n\"", "[\"\xff\",\"\\n\"]", `"\b\f\n\r\t\"\\"`, `"\\"`, `"a\\"`} {
		texts = append(texts, []byte(raw))
	}
	texts = append(texts, strictCorpus(t)...)
	for _, b := range texts {
		if got, want := serdeStrings(bytes.Clone(b)), serdeStringsRef(b); !bytes.Equal(got, want) {
			t.Fatalf("serdeStrings(%q) = %q, want %q", b, got, want)
		}
	}
	// The shortcut is taken for JSON held in a string.
	held := []byte(`{"value":"{\"op\":\"noop\",\"n\":42}"}`)
	if got := serdeStrings(held); &got[0] != &held[0] {
		t.Errorf("serdeStrings copied %s, whose escapes are all serde_json's", held)
	}
}
