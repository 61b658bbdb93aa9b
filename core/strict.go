package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// Strict decoders for the plain wire structs: like serde, a missing
// non-optional field is an error (encoding/json would silently zero it).

// UnmarshalJSON decodes strictly.
func (c *CreateRequest) UnmarshalJSON(b []byte) error {
	type plain CreateRequest
	return decodeStrict(b, (*plain)(c))
}

// UnmarshalJSON decodes strictly; the name is at most
// MaxComponentNameBytes.
func (c *ComponentId) UnmarshalJSON(b []byte) error {
	type plain ComponentId
	if err := decodeStrict(b, (*plain)(c)); err != nil {
		return err
	}
	return AtPath(CheckLength("component name", []byte(c.Name), MaxComponentNameBytes), "name")
}

// UnmarshalJSON decodes strictly.
func (a *AppendEventsToExecution) UnmarshalJSON(b []byte) error {
	type plain AppendEventsToExecution
	return decodeStrict(b, (*plain)(a))
}

// UnmarshalJSON decodes strictly.
func (a *AppendResponseToExecution) UnmarshalJSON(b []byte) error {
	type plain AppendResponseToExecution
	return decodeStrict(b, (*plain)(a))
}

// UnmarshalJSON decodes strictly.
func (bt *BacktraceInfo) UnmarshalJSON(b []byte) error {
	type plain BacktraceInfo
	return decodeStrict(b, (*plain)(bt))
}

// UnmarshalJSON decodes strictly.
func (l *LockedBy) UnmarshalJSON(b []byte) error {
	type plain LockedBy
	return decodeStrict(b, (*plain)(l))
}

// UnmarshalJSON decodes strictly.
func (r *ComponentRetryConfig) UnmarshalJSON(b []byte) error {
	type plain ComponentRetryConfig
	return decodeStrict(b, (*plain)(r))
}

// UnmarshalJSON decodes strictly.
func (e *ExecutionWithState) UnmarshalJSON(b []byte) error {
	type plain ExecutionWithState
	return decodeStrict(b, (*plain)(e))
}

// UnmarshalJSON decodes strictly.
func (o *JoinSetResponseEventOuter) UnmarshalJSON(b []byte) error {
	type plain JoinSetResponseEventOuter
	return decodeStrict(b, (*plain)(o))
}

// UnmarshalJSON decodes strictly.
func (r *ResponseWithCursor) UnmarshalJSON(b []byte) error {
	type plain ResponseWithCursor
	return decodeStrict(b, (*plain)(r))
}

// UnmarshalJSON decodes strictly.
func (w *WastValWithType) UnmarshalJSON(b []byte) error {
	type plain WastValWithType
	return decodeStrict(b, (*plain)(w))
}

// UnmarshalJSON decodes strictly.
func (t *HttpClientTrace) UnmarshalJSON(b []byte) error {
	type plain HttpClientTrace
	return decodeStrict(b, (*plain)(t))
}

// UnmarshalJSON decodes strictly.
func (p *PersistedFunctionMetadata) UnmarshalJSON(b []byte) error {
	type plain PersistedFunctionMetadata
	return decodeStrict(b, (*plain)(p))
}

// UnmarshalJSON decodes strictly.
func (w *WasmBacktrace) UnmarshalJSON(b []byte) error {
	type plain WasmBacktrace
	return decodeStrict(b, (*plain)(w))
}

// UnmarshalJSON decodes strictly.
func (l *ListExecutionEventsResponse) UnmarshalJSON(b []byte) error {
	type plain ListExecutionEventsResponse
	return decodeStrict(b, (*plain)(l))
}

// CheckJSONText rejects the JSON texts that parsers read differently even
// though encoding/json accepts them (docs/spec/semantics.md §2.0): bytes
// that are not UTF-8, a \u escape naming a lone UTF-16 surrogate ("\ud800",
// "\udc00"), an object holding the same key twice, at any depth, and a
// number beyond the 64-bit float range (`1e400`, `-1e309`, an integer of
// 400 digits), which serde_json rejects as "number out of range" and
// encoding/json keeps verbatim in a json.RawMessage.
// encoding/json replaces the first two with U+FFFD (or keeps them verbatim in
// a json.RawMessage) and keeps the last of duplicate keys; serde_json, which
// Obelisk's clients use, rejects all three. b must be well-formed JSON
// (json.Valid); the error is a *ValidationError naming where the fault is.
func CheckJSONText(b []byte) error {
	if !utf8.Valid(b) {
		n := 0
		for n < len(b) {
			r, size := utf8.DecodeRune(b[n:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			n += size
		}
		return invalid(fmt.Sprintf("not valid UTF-8 (byte offset %d)", n))
	}
	var stackBuf [16]jsonFrame
	var keysBuf [64][]byte
	// keys holds the keys seen by the open objects, each frame's from its
	// start: one buffer for the whole scan instead of a list per object.
	stack, keys := stackBuf[:0], keysBuf[:0]
	path := func(upTo int) string {
		p := ""
		for _, f := range stack[:upTo] {
			if f.obj {
				p = join(p, string(f.key))
			} else {
				p = fmt.Sprintf("%s[%d]", p, f.index)
			}
		}
		return p
	}
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '{':
			stack = append(stack, jsonFrame{obj: true, wantKey: true, start: len(keys)})
		case '[':
			stack = append(stack, jsonFrame{})
		case '}', ']':
			if n := len(stack); n > 0 {
				if stack[n-1].obj {
					keys = keys[:stack[n-1].start]
				}
				stack = stack[:n-1]
			}
		case ',':
			if n := len(stack); n > 0 {
				if stack[n-1].obj {
					stack[n-1].wantKey = true
				} else {
					stack[n-1].index++
				}
			}
		case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			end, big := scanJSONNumber(b, i)
			if big {
				if f, err := strconv.ParseFloat(string(b[i:end]), 64); err != nil && math.IsInf(f, 0) {
					tok := b[i:end]
					if len(tok) > 32 {
						tok = append(tok[:32:32], "…"...)
					}
					return invalid(fmt.Sprintf("number out of range `%s`%s", tok, at(path(len(stack)))))
				}
			}
			i = end - 1
		case '"':
			end, escaped, bad := scanJSONString(b, i)
			n := len(stack)
			isKey := n > 0 && stack[n-1].obj && stack[n-1].wantKey
			if bad != "" {
				where := path(n)
				if isKey {
					where = path(n - 1)
				}
				return invalid(fmt.Sprintf("lone surrogate `%s` in a string%s", bad, at(where)))
			}
			if end < 0 {
				return invalid("unterminated string")
			}
			if isKey {
				key := b[i+1 : end]
				if escaped {
					var k string
					if err := json.Unmarshal(b[i:end+1], &k); err != nil {
						return invalid("invalid object key")
					}
					key = []byte(k)
				}
				f := &stack[n-1]
				var dup bool
				if keys, dup = f.seen(keys, key); dup {
					return invalid(fmt.Sprintf("duplicate key `%s`%s", key, at(path(n-1))))
				}
				f.key, f.wantKey = key, false
			}
			i = end
		}
	}
	return nil
}

// scanJSONNumber returns the end of the number token starting at b[start]
// and whether it may lie beyond the float64 range: it has an exponent or
// more than 308 digits (a shorter plain number is below 1e308).
func scanJSONNumber(b []byte, start int) (end int, big bool) {
	end = start
	for ; end < len(b); end++ {
		switch c := b[end]; c {
		case 'e', 'E':
			big = true
		case '-', '+', '.', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		default:
			return end, big || end-start > 308
		}
	}
	return end, big || end-start > 308
}

// jsonFrame is an open array or object of CheckJSONText's scan.
type jsonFrame struct {
	obj     bool
	wantKey bool
	key     []byte // the current key (objects)
	index   int    // the current element (arrays)
	// The keys seen so far: a short list, keys[start:] of the scan's
	// shared key stack (no allocation for small objects), then a set.
	start int
	many  map[string]struct{}
}

// seen records key in the object's keys (keys[f.start:], or f.many) and
// reports whether the object already had it; it returns the key stack.
func (f *jsonFrame) seen(keys [][]byte, key []byte) ([][]byte, bool) {
	const maxFew = 16
	if f.many != nil {
		if _, dup := f.many[string(key)]; dup {
			return keys, true
		}
		f.many[string(key)] = struct{}{}
		return keys, false
	}
	few := keys[f.start:]
	for _, k := range few {
		if bytes.Equal(k, key) {
			return keys, true
		}
	}
	if len(few) < maxFew {
		return append(keys, key), false
	}
	f.many = make(map[string]struct{}, 2*maxFew)
	for _, k := range few {
		f.many[string(k)] = struct{}{}
	}
	f.many[string(key)] = struct{}{}
	return keys[:f.start], false
}

// scanJSONString scans the string token starting at b[start] (a '"') and
// returns the index of its closing quote (-1 if none), whether it holds an
// escape, and the text of the first escape naming a lone surrogate ("" if
// none).
func scanJSONString(b []byte, start int) (end int, escaped bool, lone string) {
	for j := start + 1; j < len(b); j++ {
		switch b[j] {
		case '"':
			return j, escaped, ""
		case '\\':
			escaped = true
			if j+1 < len(b) && b[j+1] == 'u' {
				r, ok := hex4(b, j+2)
				if !ok {
					return -1, escaped, ""
				}
				switch {
				case 0xD800 <= r && r < 0xDC00:
					if lo, ok := hex4(b, j+8); ok && b[j+6] == '\\' && b[j+7] == 'u' && 0xDC00 <= lo && lo < 0xE000 {
						j += 11
						continue
					}
					return -1, escaped, string(b[j : j+6])
				case 0xDC00 <= r && r < 0xE000:
					return -1, escaped, string(b[j : j+6])
				}
				j += 5
				continue
			}
			j++
		}
	}
	return -1, escaped, ""
}

// hex4 parses the four hex digits at b[i:i+4].
func hex4(b []byte, i int) (rune, bool) {
	if i < 0 || i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
