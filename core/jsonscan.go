package core

import (
	"encoding/json"
	"maps"
	"slices"
	"unicode/utf8"
)

// JSONMember is one member of a JSON object: its key (as written, without
// the quotes) and its value's text, both sub-slices of the object's text.
type JSONMember struct{ Key, Value []byte }

// JSONObject is the members of a JSON object, in text order.
type JSONObject []JSONMember

// Get returns the value of the member named name; of duplicates, the last,
// as encoding/json keeps it.
func (o JSONObject) Get(name string) ([]byte, bool) {
	for i := len(o) - 1; i >= 0; i-- {
		if string(o[i].Key) == name {
			return o[i].Value, true
		}
	}
	return nil, false
}

// ParseJSONObject splits the text of an object into its members without
// copying or decoding them: what json.Unmarshal into a
// map[string]json.RawMessage gives, at a fraction of the cost, for the
// strict decoders that look up required fields and tags after a decode (or
// a json.Valid) already checked data. ok is false when data is not an
// object, is malformed, or has a key written with an escape sequence or
// invalid UTF-8; the caller then falls back to encoding/json, which
// reports the error or rewrites the key.
func ParseJSONObject(data []byte) (o JSONObject, ok bool) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return JSONObject{}, skipSpace(data, i+1) == len(data)
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return nil, false
		}
		end, escaped := scanString(data, i)
		if end < 0 || escaped {
			return nil, false
		}
		key := data[i+1 : end-1]
		if !utf8.Valid(key) { // encoding/json would replace the bad bytes
			return nil, false
		}
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return nil, false
		}
		i = skipSpace(data, i+1)
		vend := skipValue(data, i)
		if vend < 0 {
			return nil, false
		}
		o = append(o, JSONMember{Key: key, Value: data[i:vend]})
		i = skipSpace(data, vend)
		if i >= len(data) {
			return nil, false
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			return o, skipSpace(data, i+1) == len(data)
		default:
			return nil, false
		}
	}
}

// JSONArray splits the text of an array into its elements' texts, as
// ParseJSONObject does objects (json.Unmarshal into []json.RawMessage).
func JSONArray(data []byte) (elems [][]byte, ok bool) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '[' {
		return nil, false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == ']' {
		return [][]byte{}, skipSpace(data, i+1) == len(data)
	}
	for {
		end := skipValue(data, i)
		if end < 0 {
			return nil, false
		}
		elems = append(elems, data[i:end])
		i = skipSpace(data, end)
		if i >= len(data) {
			return nil, false
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case ']':
			return elems, skipSpace(data, i+1) == len(data)
		default:
			return nil, false
		}
	}
}

// rawObject is ParseJSONObject with encoding/json's map as the fallback:
// ok is false when json.Unmarshal into a map fails (null is an empty
// object, as there). The fallback's members come in the order their keys
// first appear in data, each with the value json.Unmarshal keeps (a
// repeated key's last), so that what a check names first — the first
// unknown field — is the same on every run, not the map's order.
func rawObject(data []byte) (JSONObject, bool) {
	if o, ok := ParseJSONObject(data); ok {
		return o, true
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, false
	}
	o := make(JSONObject, 0, len(m))
	for _, k := range objectKeys(data, len(m)) {
		if v, ok := m[k]; ok {
			o = append(o, JSONMember{Key: []byte(k), Value: v})
			delete(m, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(m)) { // none: objectKeys saw every key
		o = append(o, JSONMember{Key: []byte(k), Value: m[k]})
	}
	return o, true
}

// objectKeys returns the keys of the object data in document order,
// repeats included, decoded as json.Unmarshal decodes them (escape
// sequences resolved, bytes that are not UTF-8 replaced); what it read
// before a fault, if any.
func objectKeys(data []byte, n int) []string {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil
	}
	keys := make([]string, 0, n)
	for i = skipSpace(data, i+1); i < len(data) && data[i] == '"'; {
		end, _ := scanString(data, i)
		if end < 0 {
			return keys
		}
		var k string
		if json.Unmarshal(data[i:end], &k) != nil {
			return keys
		}
		keys = append(keys, k)
		if i = skipSpace(data, end); i >= len(data) || data[i] != ':' {
			return keys
		}
		if i = skipValue(data, skipSpace(data, i+1)); i < 0 {
			return keys
		}
		if i = skipSpace(data, i); i >= len(data) || data[i] != ',' {
			return keys
		}
		i = skipSpace(data, i+1)
	}
	return keys
}

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// scanString returns the index after the string starting at data[i] (a
// quote), or -1, and whether it holds an escape sequence.
func scanString(data []byte, i int) (int, bool) {
	escaped := false
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j + 1, escaped
		}
	}
	return -1, escaped
}

// skipValue returns the index after the value starting at data[i], or -1.
// Scalars are delimited, not checked: the callers' text was validated, or a
// decode of it reports the error.
func skipValue(data []byte, i int) int {
	if i >= len(data) {
		return -1
	}
	switch data[i] {
	case '"':
		end, _ := scanString(data, i)
		return end
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				end, _ := scanString(data, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(data) {
		switch data[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			if j == i {
				return -1
			}
			return j
		}
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// plainString returns the JSON string data holds if it has no escape
// sequence and only printable ASCII or valid UTF-8 as written (the common
// case of tags and names), without decoding it.
func plainString(data []byte) (string, bool) {
	if len(data) < 2 || data[0] != '"' || data[len(data)-1] != '"' {
		return "", false
	}
	body := data[1 : len(data)-1]
	for _, c := range body {
		if c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			return "", false
		}
	}
	return string(body), true
}
