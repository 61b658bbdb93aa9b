package worker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"unicode"

	"github.com/stela-dev/stela/core"
)

// Args passes several parameters positionally: Submit(ffqn, Args{a, b})
// sends the params array [a, b]. Any other value v is sent as [v], and nil as [].
type Args []any

// Unit is the result type of a function that returns nothing: its result is
// stored as {"ok":null}.
type Unit = struct{}

// encodeParams turns a Go value into an execution's params array (see Args).
func encodeParams(v any) (core.Params, error) {
	switch v := v.(type) {
	case nil:
		return core.Params{}, nil
	case Args:
		out := make(core.Params, len(v))
		for i, a := range v {
			b, err := marshalCompact(a)
			if err != nil {
				return nil, fmt.Errorf("worker: encode parameter %d: %w", i, err)
			}
			out[i] = b
		}
		return out, nil
	case core.Params:
		return v, nil
	case paramsArray:
		return v.encodeParams()
	}
	b, err := marshalCompact(v)
	if err != nil {
		return nil, fmt.Errorf("worker: encode parameter: %w", err)
	}
	return core.Params{b}, nil
}

// decodeParams maps an execution's params array onto P: a one-element
// array is that element, an empty array is P's zero value; anything else
// is an error (use a struct or a list as the one parameter instead), unless
// P is one of Params2, Params3, Params4, which take the array positionally.
func decodeParams[P any](params core.Params) (P, error) {
	var p P
	if pa, ok := any(&p).(paramsArrayDecoder); ok { // Params2, Params3, Params4
		return p, pa.decodeParams(params)
	}
	switch len(params) {
	case 0:
		return p, nil
	case 1:
		if err := json.Unmarshal(params[0], &p); err != nil {
			return p, fmt.Errorf("cannot decode parameter as %T: %w", p, err)
		}
		return p, nil
	}
	return p, fmt.Errorf("expected one parameter, got %d", len(params))
}

// marshalCompact encodes v like serde_json: compact, no HTML escaping.
func marshalCompact(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// resultCodec encodes a function's Go result as an Obelisk return value.
type resultCodec struct {
	// witType is the WIT type recorded next to the value; "" for unit results.
	witType string
}

func newResultCodec(t reflect.Type) resultCodec {
	if t.Kind() == reflect.Struct && t.NumField() == 0 {
		return resultCodec{}
	}
	return resultCodec{witType: witType(t)}
}

// ok returns Ok(v).
func (c resultCodec) ok(v any) (core.ReturnValue, error) {
	if c.witType == "" {
		return core.RetOk(nil), nil
	}
	b, err := marshalCompact(v)
	if err != nil {
		return core.ReturnValue{}, fmt.Errorf("encode result: %w", err)
	}
	return core.RetOk(&core.WastValWithType{Type: c.witType, Value: b}), nil
}

// errorValue is the typed value of an error: its message as a WIT string.
func errorValue(err error) *core.WastValWithType {
	b, _ := marshalCompact(err.Error()) // a string always encodes
	return &core.WastValWithType{Type: "string", Value: b}
}

// witType renders the WIT type of a Go type, as recorded in return values
// ({"type": …, "value": …}). Stela never interprets it; Obelisk tools show
// it. Types without a WIT counterpart (maps, interfaces, raw JSON) are
// recorded as "json".
func witType(t reflect.Type) string {
	return witTypeSeen(t, map[reflect.Type]bool{})
}

func witTypeSeen(t reflect.Type, seen map[reflect.Type]bool) string {
	if t == reflect.TypeFor[json.RawMessage]() {
		return "json"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "bool"
	case reflect.String:
		return "string"
	case reflect.Int8:
		return "s8"
	case reflect.Int16:
		return "s16"
	case reflect.Int32:
		return "s32"
	case reflect.Int, reflect.Int64:
		return "s64"
	case reflect.Uint8:
		return "u8"
	case reflect.Uint16:
		return "u16"
	case reflect.Uint32:
		return "u32"
	case reflect.Uint, reflect.Uint64, reflect.Uintptr:
		return "u64"
	case reflect.Float32:
		return "f32"
	case reflect.Float64:
		return "f64"
	case reflect.Pointer:
		return "option<" + witTypeSeen(t.Elem(), seen) + ">"
	case reflect.Slice, reflect.Array:
		return "list<" + witTypeSeen(t.Elem(), seen) + ">"
	case reflect.Struct:
		if seen[t] {
			return "json" // recursive types have no WIT rendering
		}
		seen[t] = true
		defer delete(seen, t)
		var fields []string
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, opt := jsonFieldName(f)
			if name == "-" {
				continue
			}
			ft := witTypeSeen(f.Type, seen)
			if opt && f.Type.Kind() != reflect.Pointer {
				ft = "option<" + ft + ">"
			}
			fields = append(fields, kebab(name)+": "+ft)
		}
		return "record { " + strings.Join(fields, ", ") + " }"
	}
	return "json"
}

// jsonFieldName returns the JSON key of a struct field and whether it is omitempty.
func jsonFieldName(f reflect.StructField) (string, bool) {
	tag := f.Tag.Get("json")
	name, opts, _ := strings.Cut(tag, ",")
	if name == "" {
		name = f.Name
	}
	return name, strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")
}

// kebab turns a JSON key (snake_case or CamelCase) into a WIT identifier.
func kebab(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == '_':
			b.WriteByte('-')
		case unicode.IsUpper(r):
			if i > 0 && b.Len() > 0 && !strings.HasSuffix(b.String(), "-") {
				b.WriteByte('-')
			}
			b.WriteRune(unicode.ToLower(r))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// decodeResult extracts R from a child's Ok value; a unit R accepts {"ok":null}.
func decodeResult[R any](rv core.ReturnValue) (R, error) {
	var r R
	if rv.Value == nil || len(rv.Value.Value) == 0 {
		return r, nil
	}
	if err := json.Unmarshal(rv.Value.Value, &r); err != nil {
		return r, fmt.Errorf("worker: decode result as %T: %w", r, err)
	}
	return r, nil
}

// jsonString decodes a JSON string literal.
func jsonString(b []byte, out *string) bool { return json.Unmarshal(b, out) == nil }
