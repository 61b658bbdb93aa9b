package core

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
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
	if !bytes.Contains(b, []byte(`\`)) {
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
// that every required field is present — as serde does for non-Option fields.
// A field is optional if it is a pointer, is tagged `json:",omitempty"`, or is
// tagged `stela:"default"` (serde's #[serde(default)]). Unknown fields are
// ignored, like serde without deny_unknown_fields.
func decodeStrict(data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return decodeErr(err)
	}
	return checkRequired(data, reflect.TypeOf(v).Elem(), "")
}

func decodeErr(err error) error {
	var ve *ValidationError
	if asErr(err, &ve) {
		return ve
	}
	return &ValidationError{Reason: err.Error()}
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

func rulesFor(t reflect.Type) []fieldRule {
	if r, ok := fieldRules.Load(t); ok {
		return r.([]fieldRule)
	}
	var rules []fieldRule
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			if f.Anonymous {
				continue // embedded structs: not used in core's wire types
			}
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

func checkRequired(data []byte, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case hasCustomDecoding(t):
		return nil
	case t.Kind() == reflect.Struct:
		if isJSONNull(data) {
			return &ValidationError{Reason: fmt.Sprintf("expected an object%s", at(path))}
		}
		obj, ok := rawObject(data)
		if !ok {
			return &ValidationError{Reason: fmt.Sprintf("expected an object%s", at(path))}
		}
		for _, r := range rulesFor(t) {
			raw, ok := obj.Get(r.name)
			if !ok {
				if r.required {
					return &ValidationError{Reason: fmt.Sprintf("missing field `%s`%s", r.name, at(path))}
				}
				continue
			}
			if r.custom || isJSONNull(raw) && r.typ.Kind() == reflect.Pointer {
				continue
			}
			if err := checkRequired(raw, r.typ, join(path, r.name)); err != nil {
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
			if err := checkRequired(it, et, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
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
		if err := json.Unmarshal(data, &tag); err != nil {
			return "", nil, false, &ValidationError{Reason: what + ": " + err.Error()}
		}
		return tag, nil, true, nil
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
