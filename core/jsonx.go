package core

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// MarshalJSON encodes v exactly as Obelisk's serde_json::to_string would:
// compact, keys in declaration order, no HTML escaping, and strings escaped
// the serde way (only `"`, `\`, and control characters; U+2028/U+2029 and
// non-ASCII are written raw). User payloads held as json.RawMessage keep their
// key order and number literals verbatim.
func MarshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	out := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	return serdeStrings(out), nil
}

// MarshalJSONIndent is MarshalJSON pretty-printed like serde_json::to_string_pretty
// (two-space indent, `"key": value`).
func MarshalJSONIndent(v any) ([]byte, error) {
	b, err := MarshalJSON(v)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, b, "", "  "); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// mustMarshal is MarshalJSON for values that cannot fail.
func mustMarshal(v any) []byte {
	b, err := MarshalJSON(v)
	if err != nil {
		panic(fmt.Sprintf("core: marshal %T: %v", v, err))
	}
	return b
}

// serdeStrings rewrites every JSON string token of b that contains an escape
// sequence into serde_json's escaping. b must be valid JSON.
func serdeStrings(b []byte) []byte {
	first := bytes.IndexByte(b, '\\')
	if first < 0 || canonicalEscapes(b[first:]) && utf8.Valid(b) {
		// No escape sequence, or only those serde_json writes as they
		// are (a JSON text holding JSON, as `"{\"k\":1}"`, is the usual
		// case): every token would be rewritten to itself.
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		c := b[i]
		if c != '"' {
			out = append(out, c)
			i++
			continue
		}
		// find the end of the string token
		j := i + 1
		escaped := false
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
		if escaped {
			var s string
			if err := json.Unmarshal(tok, &s); err == nil {
				out = appendSerdeString(out, s)
			} else {
				out = append(out, tok...)
			}
		} else {
			out = append(out, tok...)
		}
		i = j + 1
	}
	return out
}

// canonicalEscapes reports whether every escape sequence in b (valid JSON
// text from a backslash on) is one appendSerdeString writes: \" \\ \n \r
// \t \b \f. Any other (\/, \u…) is rewritten by serdeStrings.
func canonicalEscapes(b []byte) bool {
	for {
		i := bytes.IndexByte(b, '\\')
		if i < 0 {
			return true
		}
		if i+1 >= len(b) {
			return false
		}
		switch b[i+1] {
		case '"', '\\', 'n', 'r', 't', 'b', 'f':
		default:
			return false
		}
		b = b[i+2:]
	}
}

func appendSerdeString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"':
			b = append(b, '\\', '"')
		case c == '\\':
			b = append(b, '\\', '\\')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c == '\b':
			b = append(b, '\\', 'b')
		case c == '\f':
			b = append(b, '\\', 'f')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		case c < utf8.RuneSelf:
			b = append(b, c)
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			b = utf8.AppendRune(b, r)
			i += size
			continue
		}
		i++
	}
	return append(b, '"')
}

// decodeStrict decodes an object into v (a pointer to a struct without its own
// UnmarshalJSON) and then checks, recursively through plain nested structs,
// that every required field is present — as serde does for non-Option fields
// — and that no field is unknown (serde's deny_unknown_fields; see
// docs/http-api.md "Unknown fields"). A field is optional if it is a pointer,
// is tagged `json:",omitempty"`, or is tagged `stela:"default"` (serde's
// #[serde(default)]). Keys match fields exactly (encoding/json alone would
// also match them case-insensitively). A failure is a *ValidationError
// naming the JSON path of the value at fault.
func decodeStrict(data []byte, v any) error { return decodeStrictTag(data, v, "") }

// decodeStrictTag is decodeStrict for a variant of an internally tagged enum
// (serde's #[serde(tag = "…")]): the object also holds the tag key, which is
// not a field of v.
func decodeStrictTag(data []byte, v any, tag string) error {
	if fastDecodeStrict(data, v, tag) {
		return nil
	}
	t := reflect.TypeOf(v).Elem()
	if err := json.Unmarshal(data, v); err != nil {
		if loc := LocateJSONError(data, t, tag); loc != nil {
			return loc
		}
		return decodeErr(err)
	}
	return checkRequired(data, t, "", tag)
}

func decodeErr(err error) error {
	var ve *ValidationError
	if asErr(err, &ve) {
		return ve
	}
	return &ValidationError{Reason: strings.TrimPrefix(err.Error(), "json: ")}
}

type fieldRule struct {
	name     string
	required bool
	typ      reflect.Type
	// custom: typ decodes itself (hasCustomDecoding), so its content is
	// not checked.
	custom bool
}

var fieldRules sync.Map // reflect.Type -> []fieldRule

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	rawMessageType      = reflect.TypeFor[json.RawMessage]()
)

// hasCustomDecoding reports whether t (or *t) decodes itself.
func hasCustomDecoding(t reflect.Type) bool {
	if t == rawMessageType {
		return true
	}
	pt := reflect.PointerTo(t)
	return t.Implements(unmarshalerType) || pt.Implements(unmarshalerType) ||
		t.Implements(textUnmarshalerType) || pt.Implements(textUnmarshalerType)
}

// rulesFor returns the JSON fields of struct t, the fields of embedded
// structs included (as encoding/json flattens them).
func rulesFor(t reflect.Type) []fieldRule {
	if r, ok := fieldRules.Load(t); ok {
		return r.([]fieldRule)
	}
	var rules []fieldRule
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			rules = append(rules, rulesFor(f.Type)...)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		required := f.Type.Kind() != reflect.Pointer && !strings.Contains(opts, "omitempty") &&
			f.Tag.Get("stela") != "default"
		elem := f.Type
		for elem.Kind() == reflect.Pointer {
			elem = elem.Elem()
		}
		rules = append(rules, fieldRule{name: name, required: required, typ: f.Type, custom: hasCustomDecoding(elem)})
	}
	fieldRules.Store(t, rules)
	return rules
}

// HasJSONField reports whether struct t (embedded structs flattened) has a
// JSON field named exactly name: encoding/json alone also matches keys that
// differ in case, serde does not.
func HasJSONField(t reflect.Type, name []byte) bool {
	_, ok := ruleNamed(rulesFor(t), name)
	return ok
}

func ruleNamed(rules []fieldRule, name []byte) (fieldRule, bool) {
	for _, r := range rules {
		if r.name == string(name) {
			return r, true
		}
	}
	return fieldRule{}, false
}

func shapeErr(path, format string, args ...any) error {
	return &ValidationError{Reason: fmt.Sprintf(format, args...), Path: path}
}

func checkRequired(data []byte, t reflect.Type, path, tag string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case hasCustomDecoding(t):
		return nil
	case t.Kind() == reflect.Struct:
		if isJSONNull(data) {
			return shapeErr(path, "expected an object")
		}
		obj, ok := rawObject(data)
		if !ok {
			return shapeErr(path, "expected an object")
		}
		rules := rulesFor(t)
		for _, m := range obj {
			if _, ok := ruleNamed(rules, m.Key); !ok && string(m.Key) != tag {
				return shapeErr(path, "unknown field `%s`", m.Key)
			}
		}
		for _, r := range rules {
			raw, ok := obj.Get(r.name)
			if !ok {
				if r.required {
					return shapeErr(path, "missing field `%s`", r.name)
				}
				continue
			}
			if r.custom || isJSONNull(raw) && r.typ.Kind() == reflect.Pointer {
				continue
			}
			if err := checkRequired(raw, r.typ, join(path, r.name), ""); err != nil {
				return err
			}
		}
	case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8:
		et := t.Elem()
		for et.Kind() == reflect.Pointer {
			et = et.Elem()
		}
		if et.Kind() != reflect.Struct || hasCustomDecoding(et) {
			return nil
		}
		items, ok := JSONArray(data)
		if !ok {
			var raw []json.RawMessage
			if err := json.Unmarshal(data, &raw); err != nil {
				return nil // already reported by json.Unmarshal
			}
			items = make([][]byte, len(raw))
			for i, r := range raw {
				items[i] = r
			}
		}
		for i, it := range items {
			if err := checkRequired(it, et, fmt.Sprintf("%s[%d]", path, i), ""); err != nil {
				return err
			}
		}
	}
	return nil
}

// LocateJSONError finds the value of data (the JSON text of a value of type
// t, which failed to decode) that does not decode, by decoding its parts one
// by one, and returns that failure as a *ValidationError with the value's
// JSON path (`items[2].append.version`) and a reason in the API's words
// (`invalid type: string "x", expected an integer from 0 to 4294967295`),
// never Go's type names. Members of objects are matched to the fields of
// struct types (embedded structs flattened) exactly; a member that matches
// no field and is not named tag is an unknown field. It returns nil when
// every part decodes on its own. Only error paths call it: it decodes data
// again, piece by piece.
func LocateJSONError(data []byte, t reflect.Type, tag string) error {
	return locate(data, t, "", tag)
}

func locate(data []byte, t reflect.Type, path, tag string) error {
	for t.Kind() == reflect.Pointer {
		if isJSONNull(data) {
			return nil
		}
		t = t.Elem()
	}
	if !hasCustomDecoding(t) {
		switch t.Kind() {
		case reflect.Struct:
			obj, ok := rawObject(data)
			if !ok || isJSONNull(data) {
				return shapeErr(path, "invalid type: %s, expected an object", jsonKind(data))
			}
			rules := rulesFor(t)
			for _, m := range obj {
				r, ok := ruleNamed(rules, m.Key)
				if !ok {
					if string(m.Key) == tag {
						continue
					}
					return shapeErr(path, "unknown field `%s`", m.Key)
				}
				if err := locate(m.Value, r.typ, join(path, r.name), ""); err != nil {
					return err
				}
			}
			return nil
		case reflect.Slice, reflect.Array:
			if t.Elem().Kind() == reflect.Uint8 {
				break // base64 text
			}
			items, ok := JSONArray(data)
			if !ok {
				if isJSONNull(data) && t.Kind() == reflect.Slice {
					return nil
				}
				return shapeErr(path, "invalid type: %s, expected an array", jsonKind(data))
			}
			for i, it := range items {
				if err := locate(it, t.Elem(), fmt.Sprintf("%s[%d]", path, i), ""); err != nil {
					return err
				}
			}
			return nil
		case reflect.Map:
			obj, ok := rawObject(data)
			if !ok {
				return shapeErr(path, "invalid type: %s, expected an object", jsonKind(data))
			}
			for _, m := range obj {
				if err := locate(m.Value, t.Elem(), join(path, string(m.Key)), ""); err != nil {
					return err
				}
			}
			return nil
		}
	}
	err := json.Unmarshal(data, reflect.New(t).Interface())
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		var ve *ValidationError
		if !errors.As(err, &ve) {
			return shapeErr(path, "invalid type: %s, expected %s", jsonKind(data), expectedKind(t))
		}
	}
	return AtPath(err, path)
}

// jsonKind describes a JSON value as serde's "invalid type" errors do.
func jsonKind(data []byte) string {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return "nothing"
	}
	switch data[0] {
	case '"':
		var s string
		if json.Unmarshal(data, &s) != nil {
			return "string"
		}
		if len(s) > 64 {
			s = s[:64] + "…"
		}
		return "string " + strconv.Quote(s)
	case '{':
		return "map"
	case '[':
		return "sequence"
	case 't', 'f':
		return "boolean `" + string(data) + "`"
	case 'n':
		return "null"
	}
	if len(data) > 64 {
		data = append(data[:64:64], "…"...)
	}
	return "number " + string(data)
}

// expectedKind describes what a value of Go type t must be on the wire.
func expectedKind(t reflect.Type) string {
	if t.Implements(textUnmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return "a string"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "a boolean"
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		bits := uint(t.Bits())
		return fmt.Sprintf("an integer from %d to %d", math.MinInt64>>(64-bits), math.MaxInt64>>(64-bits))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return fmt.Sprintf("an integer from 0 to %d", uint64(math.MaxUint64)>>(64-uint(t.Bits())))
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a base64 string"
		}
		return "an array"
	}
	return "a JSON value"
}

func at(path string) string {
	if path == "" {
		return ""
	}
	return " at `" + path + "`"
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// --- helpers for Rust enum encodings -------------------------------------

// marshalInternallyTagged renders {"<key>":"<tag>", ...fields of v} with the tag first,
// as serde's #[serde(tag = "...")] does. v may be nil for a variant without fields.
func marshalInternallyTagged(key, tag string, v any) ([]byte, error) {
	head := append(appendSerdeString(nil, key), ':')
	head = appendSerdeString(head, tag)
	if v == nil {
		return append(append([]byte{'{'}, head...), '}'), nil
	}
	body, err := MarshalJSON(v)
	if err != nil {
		return nil, err
	}
	if len(body) < 2 || body[0] != '{' {
		return nil, fmt.Errorf("internally tagged variant %q must be an object", tag)
	}
	out := append([]byte{'{'}, head...)
	if len(body) > 2 {
		out = append(out, ',')
	}
	return append(out, body[1:]...), nil
}

// readTag returns the string value of key in the object data.
func readTag(data []byte, key, what string) (string, error) {
	// The common case without collecting the members: the last member
	// named key (as JSONObject.Get) of an object ParseJSONObject splits.
	var last []byte
	it := members{data: data}
	for {
		k, v, more := it.next()
		if !more {
			break
		}
		if string(k) == key {
			last = v
		}
	}
	if it.ok && last != nil {
		if s, ok := plainString(last); ok {
			return s, nil
		}
	}
	obj, ok := rawObject(data)
	if !ok {
		return "", &ValidationError{Reason: fmt.Sprintf("%s: expected an object", what)}
	}
	raw, ok := obj.Get(key)
	if !ok {
		return "", &ValidationError{Reason: fmt.Sprintf("%s: missing field `%s`", what, key)}
	}
	if s, ok := plainString(raw); ok {
		return s, nil
	}
	var tag string
	if err := json.Unmarshal(raw, &tag); err != nil {
		return "", &ValidationError{Reason: fmt.Sprintf("%s: `%s` must be a string", what, key)}
	}
	return tag, nil
}

// marshalExternallyTagged renders {"<tag>": v}, or the bare string "<tag>" when unit.
func marshalExternallyTagged(tag string, v any, unit bool) ([]byte, error) {
	if unit {
		return appendSerdeString(nil, tag), nil
	}
	body, err := MarshalJSON(v)
	if err != nil {
		return nil, err
	}
	out := append([]byte{'{'}, appendSerdeString(nil, tag)...)
	out = append(out, ':')
	out = append(out, body...)
	return append(out, '}'), nil
}

// splitExternallyTagged parses `"tag"` (unit) or `{"tag": inner}`.
func splitExternallyTagged(data []byte, what string) (tag string, inner json.RawMessage, unit bool, err error) {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '"' {
		// A variable of this branch: decoding into the named result
		// would move it to the heap on every call.
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return "", nil, false, &ValidationError{Reason: what + ": " + err.Error()}
		}
		return s, nil, true, nil
	}
	it := members{data: data}
	if k, v, more := it.next(); more {
		if _, _, more := it.next(); !more && it.ok {
			return string(k), v, false, nil
		}
	}
	if o, ok := ParseJSONObject(data); ok && len(o) == 1 {
		return string(o[0].Key), o[0].Value, false, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil || len(obj) != 1 {
		return "", nil, false, &ValidationError{Reason: fmt.Sprintf("%s: expected a string or an object with exactly one key", what)}
	}
	for k, v := range obj {
		return k, v, false, nil
	}
	panic("unreachable")
}
