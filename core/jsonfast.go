package core

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// The strict decoders' fast path. decodeStrictTag used to json.Unmarshal
// every object and then split it again to check its fields; since every
// nested strict decoder did the same with its own part of the text, a
// value n levels deep was validated and decoded n times by encoding/json.
// fastDecodeStrict instead validates the text with a plain byte loop
// (validJSON, which accepts only what json.Valid accepts; a nested strict
// decoder validates its part again, but with that loop, not encoding/json's
// scanner), walks the object's members in place (members, as
// ParseJSONObject splits them) and decodes each member into its field
// directly, calling the field's own UnmarshalJSON or UnmarshalText itself
// as encoding/json would. It handles only the common shapes and reports
// false for anything else — an unknown, duplicate, escaped or
// case-folded key, a null for a non-pointer, a scalar it does not parse
// exactly as encoding/json does, any error — and then leaves v as it
// found it, zero: the caller takes the encoding/json path, which answers
// every error (and everything the fast path does not handle) as before.
// So what the fast path accepts, the encoding/json path accepts with the
// same value; strict_fast_test.go runs both over the corpora.

// fastStrictOff switches the fast paths off (tests compare both ways).
var fastStrictOff atomic.Bool

// fastDecodeStrict decodes data into v (a pointer to a struct) as
// decodeStrictTag would, or reports false having left *v zero.
func fastDecodeStrict(data []byte, v any, tag string) bool {
	ev, ok := fastTarget(v)
	if !ok {
		return false
	}
	kind := fastKindOf(ev.Type())
	if kind != fastPlainStruct && kind != fastUnmarshaler {
		return false
	}
	if !validJSON(data) {
		return false
	}
	if kind == fastUnmarshaler {
		// Its own decoder (or one promoted from an embedded field) is
		// what json.Unmarshal calls, with the value without the white
		// space around; checkRequired leaves its content to it.
		if fastValue(bytes.TrimSpace(data), ev) {
			return true
		}
	} else if fastStruct(data, ev, tag, false) {
		return true
	}
	ev.SetZero()
	return false
}

// fastTarget is the value v points to, when a fast path may decode into
// it: the fast paths are on, v is a non-nil pointer and its value is zero
// (into a value present, encoding/json would merge).
func fastTarget(v any) (reflect.Value, bool) {
	if fastStrictOff.Load() {
		return reflect.Value{}, false
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return reflect.Value{}, false
	}
	ev := rv.Elem()
	return ev, ev.IsZero()
}

// fastField is a JSON field of a struct decoded by the fast path.
type fastField struct {
	name     string
	index    []int
	required bool
}

// fastPlan is how the fast path decodes a struct type; ok is false for
// types it leaves to encoding/json (see fastPlanFor).
type fastPlan struct {
	ok     bool
	fields []fastField
}

var fastPlans sync.Map // planKey -> *fastPlan

type planKey struct {
	t   reflect.Type
	top bool
}

// fastPlanFor returns the plan of struct t: its fields as rulesFor finds
// them (embedded structs flattened, the same names and required rules),
// with their index paths; with top, a field is required iff tagged
// `required:"true"` (the request-body rules). Types where encoding/json
// would match fields differently than rulesFor — two fields of one name
// (up to case), an embedded pointer or a `,string` option — get no plan
// (ok false), and so do, with top, unexported embedded structs (the
// request rules skip them).
func fastPlanFor(t reflect.Type, top bool) *fastPlan {
	key := planKey{t, top}
	if p, ok := fastPlans.Load(key); ok {
		return p.(*fastPlan)
	}
	p := &fastPlan{ok: true}
	p.collect(t, nil, top)
	if p.ok {
		rules := rulesFor(t)
		if len(rules) != len(p.fields) || len(p.fields) > 64 {
			p.ok = false
		}
		for i := 0; p.ok && i < len(rules); i++ {
			f := p.fields[i]
			if rules[i].name != f.name || !top && rules[i].required != f.required {
				p.ok = false
			}
			for _, g := range p.fields[:i] {
				if strings.EqualFold(g.name, f.name) {
					p.ok = false
				}
			}
		}
	}
	fastPlans.Store(key, p)
	return p
}

func (p *fastPlan) collect(t reflect.Type, index []int, top bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		idx := append(append([]int(nil), index...), i)
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			if top && !f.IsExported() {
				p.ok = false
			}
			p.collect(f.Type, idx, top)
			continue
		}
		if f.Anonymous && name == "" {
			p.ok = false // encoding/json flattens embedded pointers to structs
		}
		if !f.IsExported() {
			continue
		}
		if strings.Contains(opts, "string") {
			p.ok = false
		}
		if name == "" {
			name = f.Name
		}
		required := f.Type.Kind() != reflect.Pointer && !strings.Contains(opts, "omitempty") &&
			f.Tag.Get("stela") != "default"
		if top {
			required = f.Tag.Get("required") == "true"
		}
		p.fields = append(p.fields, fastField{name: name, index: idx, required: required})
	}
}

// fastStruct decodes the object data into the zero struct sv; top selects
// the request-body rules (DecodeValidatedRequest).
func fastStruct(data []byte, sv reflect.Value, tag string, top bool) bool {
	plan := fastPlanFor(sv.Type(), top)
	if !plan.ok {
		return false
	}
	var seen uint64
	it := members{data: data}
	for {
		key, val, more := it.next()
		if !more {
			break
		}
		k := -1
		for i := range plan.fields {
			if plan.fields[i].name == string(key) {
				k = i
				break
			}
		}
		if k < 0 {
			if tag == "" || string(key) != tag {
				return false // unknown: the encoding/json path says so
			}
			for _, f := range plan.fields {
				if strings.EqualFold(f.name, tag) {
					return false // encoding/json would decode the tag into it
				}
			}
			continue
		}
		if seen&(1<<k) != 0 {
			return false // duplicate key: encoding/json merges
		}
		seen |= 1 << k
		if top && plan.fields[k].required && val[0] == 'n' {
			return false // null is missing to the request rules
		}
		fv := sv.FieldByIndex(plan.fields[k].index)
		if !fv.CanSet() || !fastValue(val, fv) {
			return false
		}
	}
	if !it.ok {
		return false
	}
	for i, f := range plan.fields {
		if f.required && seen&(1<<i) == 0 {
			return false
		}
	}
	return true
}

// members iterates over the members of the object text data (valid
// JSON) as ParseJSONObject splits them, without collecting them: next
// returns the next key and value, more false at the end; ok is then false
// if data is not an object or has a key ParseJSONObject refuses (an
// escape sequence, invalid UTF-8).
type members struct {
	data    []byte
	i       int
	started bool
	ok      bool
}

func (m *members) next() (key, val []byte, more bool) {
	data, i := m.data, m.i
	if !m.started {
		m.started = true
		i = skipSpace(data, 0)
		if i >= len(data) || data[i] != '{' {
			return nil, nil, false
		}
		i = skipSpace(data, i+1)
		if i < len(data) && data[i] == '}' {
			m.ok = skipSpace(data, i+1) == len(data)
			return nil, nil, false
		}
	} else {
		if i >= len(data) {
			return nil, nil, false
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			m.ok = skipSpace(data, i+1) == len(data)
			return nil, nil, false
		default:
			return nil, nil, false
		}
	}
	if i >= len(data) || data[i] != '"' {
		return nil, nil, false
	}
	end, escaped := scanString(data, i)
	if end < 0 || escaped {
		return nil, nil, false
	}
	key = data[i+1 : end-1]
	if !utf8.Valid(key) {
		return nil, nil, false
	}
	i = skipSpace(data, end)
	if i >= len(data) || data[i] != ':' {
		return nil, nil, false
	}
	i = skipSpace(data, i+1)
	vend := skipValue(data, i)
	if vend < 0 {
		return nil, nil, false
	}
	val = data[i:vend]
	m.i = skipSpace(data, vend)
	return key, val, true
}

// countElements counts the elements of the array text data (valid
// JSON), -1 if it is not an array; eachElement then walks them.
func countElements(data []byte) int {
	n := 0
	if !eachElement(data, func([]byte) bool { n++; return true }) {
		return -1
	}
	return n
}

// eachElement calls f with each element of the array text data (valid
// JSON) while f returns true; false if data is not an array or f stopped.
func eachElement(data []byte, f func([]byte) bool) bool {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '[' {
		return false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == ']' {
		return skipSpace(data, i+1) == len(data)
	}
	for {
		end := skipValue(data, i)
		if end < 0 || !f(data[i:end]) {
			return false
		}
		i = skipSpace(data, end)
		if i >= len(data) {
			return false
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case ']':
			return skipSpace(data, i+1) == len(data)
		default:
			return false
		}
	}
}

// fastKind is how the fast path decodes a value of a type.
type fastKind uint8

const (
	fastGeneric     fastKind = iota // json.Unmarshal of the member alone
	fastUnmarshaler                 // the type's UnmarshalJSON
	fastText                        // the type's UnmarshalText, from a plain string
	fastPlainStruct                 // fastStruct
	fastSlice                       // element by element
	fastString                      // a plain string
	fastBool                        // true, false
	fastUint                        // digits
	fastInt                         // -?digits
	fastPointer                     // null, or the element
	fastNo                          // never (left to encoding/json)
)

var (
	fastKinds      sync.Map // reflect.Type -> fastKind
	jsonNumberType = reflect.TypeFor[json.Number]()
)

func fastKindOf(t reflect.Type) fastKind {
	if k, ok := fastKinds.Load(t); ok {
		return k.(fastKind)
	}
	k := classify(t)
	fastKinds.Store(t, k)
	return k
}

func classify(t reflect.Type) fastKind {
	pt := reflect.PointerTo(t)
	switch {
	case t.Kind() == reflect.Pointer:
		if t.Elem().Kind() == reflect.Pointer {
			return fastNo
		}
		return fastPointer
	case pt.Implements(unmarshalerType):
		return fastUnmarshaler
	case pt.Implements(textUnmarshalerType):
		return fastText
	case t == jsonNumberType:
		return fastGeneric // a number, or a string holding one
	}
	switch t.Kind() {
	case reflect.Struct:
		return fastPlainStruct
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return fastGeneric // base64
		}
		return fastSlice
	case reflect.String:
		return fastString
	case reflect.Bool:
		return fastBool
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return fastUint
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return fastInt
	case reflect.Map, reflect.Array, reflect.Float32, reflect.Float64, reflect.Interface:
		return fastGeneric
	}
	return fastNo
}

// fastValue decodes the valid JSON value data into the zero, settable fv.
func fastValue(data []byte, fv reflect.Value) bool {
	if len(data) == 0 {
		return false
	}
	kind := fastKindOf(fv.Type())
	if data[0] == 'n' { // null: a nil pointer, else left to encoding/json
		return kind == fastPointer
	}
	switch kind {
	case fastPointer:
		p := reflect.New(fv.Type().Elem())
		if !fastValue(data, p.Elem()) {
			return false
		}
		fv.Set(p)
		return true
	case fastUnmarshaler:
		return fv.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(data) == nil
	case fastText:
		s, ok := plainJSONString(data)
		return ok && fv.Addr().Interface().(interface{ UnmarshalText([]byte) error }).UnmarshalText(s) == nil
	case fastPlainStruct:
		return fastStruct(data, fv, "", false)
	case fastSlice:
		n := countElements(data)
		if n < 0 {
			return false
		}
		s := reflect.MakeSlice(fv.Type(), n, n)
		i := 0
		ok := eachElement(data, func(it []byte) bool {
			// A null element is nil or zero to encoding/json but
			// "expected an object" to checkRequired: left to them.
			ok := it[0] != 'n' && fastValue(it, s.Index(i))
			i++
			return ok
		})
		if !ok {
			return false
		}
		fv.Set(s)
		return true
	case fastString:
		s, ok := plainJSONString(data)
		if !ok {
			return false
		}
		fv.SetString(string(s))
		return true
	case fastBool:
		switch string(data) {
		case "true":
			fv.SetBool(true)
			return true
		case "false":
			return true
		}
		return false
	case fastUint:
		n, ok := parseDigits(data)
		if !ok || fv.OverflowUint(n) {
			return false
		}
		fv.SetUint(n)
		return true
	case fastInt:
		neg := data[0] == '-'
		if neg {
			data = data[1:]
		}
		n, ok := parseDigits(data)
		if !ok || n > 1<<63 || !neg && n == 1<<63 {
			return false
		}
		i := int64(n)
		if neg {
			i = -i
		}
		if fv.OverflowInt(i) {
			return false
		}
		fv.SetInt(i)
		return true
	case fastGeneric:
		return json.Unmarshal(data, fv.Addr().Interface()) == nil
	}
	return false
}

// parseDigits parses a JSON integer without sign, fraction or exponent
// (strconv.ParseUint's base-10 grammar on valid JSON).
func parseDigits(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (1<<64-1-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// plainJSONString returns the content of the JSON string token data when
// encoding/json would decode it to exactly those bytes: no escape
// sequence and valid UTF-8 (data is valid JSON, so no control bytes).
func plainJSONString(data []byte) ([]byte, bool) {
	if len(data) < 2 || data[0] != '"' || data[len(data)-1] != '"' {
		return nil, false
	}
	s := data[1 : len(data)-1]
	ascii := true
	for _, c := range s {
		if c == '\\' || c == '"' {
			return nil, false
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	if !ascii && !utf8.Valid(s) {
		return nil, false
	}
	return s, true
}

// validJSON reports whether data is one JSON value with optional
// surrounding white space. It accepts only what json.Valid accepts (it
// may refuse more: nesting deeper than validMaxDepth).
func validJSON(data []byte) bool {
	_, ok := scanValidJSON(data)
	return ok
}

// validMaxDepth bounds validJSON's nesting (encoding/json's is 10000).
const validMaxDepth = 1000

// scanValidJSON is validJSON that also returns the deepest nesting of
// arrays and objects.
func scanValidJSON(data []byte) (depth int, ok bool) {
	v := jsonValidator{data: data}
	i := v.value(skipSpace(data, 0), 1)
	if i < 0 || skipSpace(data, i) != len(data) {
		return 0, false
	}
	return v.maxDepth, true
}

type jsonValidator struct {
	data     []byte
	maxDepth int
}

// value returns the index after the value at data[i] (nested at depth if
// it is an array or an object), or -1.
func (v *jsonValidator) value(i, depth int) int {
	data := v.data
	if i >= len(data) {
		return -1
	}
	switch c := data[i]; c {
	case '"':
		return v.str(i)
	case '{', '[':
		if depth > validMaxDepth {
			return -1
		}
		v.maxDepth = max(v.maxDepth, depth)
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		i = skipSpace(data, i+1)
		if i < len(data) && data[i] == end {
			return i + 1
		}
		for {
			if c == '{' {
				if i >= len(data) || data[i] != '"' {
					return -1
				}
				if i = v.str(i); i < 0 {
					return -1
				}
				i = skipSpace(data, i)
				if i >= len(data) || data[i] != ':' {
					return -1
				}
				i = skipSpace(data, i+1)
			}
			if i = v.value(i, depth+1); i < 0 {
				return -1
			}
			i = skipSpace(data, i)
			if i >= len(data) {
				return -1
			}
			switch data[i] {
			case ',':
				i = skipSpace(data, i+1)
			case end:
				return i + 1
			default:
				return -1
			}
		}
	case 't':
		return v.literal(i, "true")
	case 'f':
		return v.literal(i, "false")
	case 'n':
		return v.literal(i, "null")
	}
	return v.number(i)
}

func (v *jsonValidator) literal(i int, lit string) int {
	if len(v.data)-i < len(lit) || string(v.data[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// str returns the index after the string token at data[i] (a quote).
func (v *jsonValidator) str(i int) int {
	data := v.data
	for j := i + 1; j < len(data); j++ {
		c := data[j]
		switch {
		case c == '"':
			return j + 1
		case c < 0x20:
			return -1
		case c == '\\':
			j++
			if j >= len(data) {
				return -1
			}
			switch data[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if _, ok := hex4(data, j+1); !ok {
					return -1
				}
				j += 4
			default:
				return -1
			}
		}
	}
	return -1
}

// number returns the index after the number at data[i]:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (v *jsonValidator) number(i int) int {
	data := v.data
	digits := func(j int) int {
		k := j
		for k < len(data) && '0' <= data[k] && data[k] <= '9' {
			k++
		}
		if k == j {
			return -1
		}
		return k
	}
	if i < len(data) && data[i] == '-' {
		i++
	}
	if i >= len(data) {
		return -1
	}
	if data[i] == '0' {
		i++
	} else if i = digits(i); i < 0 {
		return -1
	}
	if i < len(data) && data[i] == '.' {
		if i = digits(i + 1); i < 0 {
			return -1
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i = digits(i); i < 0 {
			return -1
		}
	}
	return i
}

// ValidJSONDepth reports whether b is one JSON value with optional
// surrounding white space, accepting only what json.Valid accepts, and
// returns the deepest nesting of its arrays and objects (1 for `[]`, 0 for
// a scalar). It is a plain byte loop, several times cheaper than
// json.Valid. ok is false also for valid text nested deeper than 1000
// levels: callers then ask json.Valid.
func ValidJSONDepth(b []byte) (depth int, ok bool) { return scanValidJSON(b) }

// DecodeValidatedRequest decodes the object data — valid JSON (json.Valid
// or ValidJSONDepth) — into the zero struct *v (v a pointer to a request
// body type) as the HTTP API's strict body decoding does: encoding/json
// with unknown fields disallowed, then every field tagged
// `required:"true"` of v's struct (and its embedded structs) present and
// not null, and in nested plain structs every field the strict decoders
// require (see decodeStrict), none unknown. It decodes each member
// directly into its field, calling the field's own decoder as
// encoding/json would, and reports false — leaving *v zero — for anything
// it does not decide alone (any error among them): the caller then
// decodes the slow way, which answers errors as before. What it accepts,
// that way accepts with the same value.
func DecodeValidatedRequest(data []byte, v any) bool {
	ev, ok := fastTarget(v)
	if !ok || ev.Kind() != reflect.Struct {
		return false
	}
	switch fastKindOf(ev.Type()) {
	case fastUnmarshaler: // decodes itself, as encoding/json would have it
		// encoding/json hands it the value without the white space
		// around (valid JSON: TrimSpace trims just that).
		if fastValue(bytes.TrimSpace(data), ev) {
			return true
		}
	case fastPlainStruct:
		if fastStruct(data, ev, "", true) {
			return true
		}
	default:
		return false
	}
	ev.SetZero()
	return false
}

// DecodeValidatedAnswer is DecodeValidatedRequest for an answer of the
// HTTP API, which may also be an array: v may point to a zero slice, whose
// elements are decoded as nested values are. It reports false — leaving
// *v zero — for anything it does not decide alone; the caller then takes
// json.Unmarshal, which gives the same value where this accepts.
func DecodeValidatedAnswer(data []byte, v any) bool {
	ev, ok := fastTarget(v)
	if !ok {
		return false
	}
	if ev.Kind() != reflect.Slice {
		return DecodeValidatedRequest(data, v)
	}
	if fastKindOf(ev.Type()) == fastSlice && fastValue(bytes.TrimSpace(data), ev) {
		return true
	}
	ev.SetZero()
	return false
}

// SetFastDecoding switches the fast paths of the strict decoders and of
// DecodeValidatedRequest on or off and returns the previous setting; tests
// use it to compare both ways (decodes running meanwhile may take either).
func SetFastDecoding(on bool) bool {
	return !fastStrictOff.Swap(!on)
}
