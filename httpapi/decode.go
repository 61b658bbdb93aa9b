package httpapi

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/wire"
)

// maxJSONDepth bounds the nesting of request bodies (docs/spec/reliability.md §4.4).
const maxJSONDepth = 64

// decodeBody decodes the JSON request body into dst (a pointer to a DTO
// struct): Content-Type must be application/json (415), the body must be one
// well-formed JSON value in UTF-8 without lone surrogate escapes or duplicate
// object keys at any depth (400, core.CheckJSONText), match dst with no unknown top-level or
// plain-struct fields and carry every field tagged `required:"true"` (422).
func (c *call) decodeBody(dst any) error {
	mt, _, err := mime.ParseMediaType(c.r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return httpErr(http.StatusUnsupportedMediaType, "expected request with `Content-Type: application/json`")
	}
	body, err := io.ReadAll(c.r.Body)
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return err
		}
		return &apiError{status: http.StatusBadRequest, msg: "cannot read request body", err: err}
	}
	return decodeJSON(body, dst)
}

// decodeOptionalBody is decodeBody for routes whose body may be omitted: an
// empty body leaves dst untouched whatever its Content-Type.
func (c *call) decodeOptionalBody(dst any) error {
	body, err := io.ReadAll(c.r.Body)
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return err
		}
		return &apiError{status: http.StatusBadRequest, msg: "cannot read request body", err: err}
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if mt, _, err := mime.ParseMediaType(c.r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return httpErr(http.StatusUnsupportedMediaType, "expected request with `Content-Type: application/json`")
	}
	return decodeJSON(body, dst)
}

func decodeJSON(body []byte, dst any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return badRequest("missing request body")
	}
	// One cheap pass for well-formedness and depth; json.Valid and
	// jsonDepth only when it refuses (for the error, or a text too deep for it).
	depth, ok := core.ValidJSONDepth(body)
	if !ok {
		if !json.Valid(body) {
			var v any
			err := json.Unmarshal(body, &v)
			return &apiError{status: http.StatusBadRequest, msg: "invalid JSON: " + errText(err), err: err}
		}
		depth = jsonDepth(body)
	}
	if depth > maxJSONDepth {
		return badRequest("invalid JSON: nesting deeper than %d levels", maxJSONDepth)
	}
	if err := core.CheckJSONText(body); err != nil {
		return &apiError{status: http.StatusBadRequest, msg: "invalid JSON: " + errText(err), err: err}
	}
	if core.DecodeValidatedRequest(body, dst) {
		return nil // what it accepts, the decode below accepts alike
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return decodeFailure(body, reflect.TypeOf(dst), err)
	}
	if rest := bytes.TrimSpace(body[dec.InputOffset():]); len(rest) > 0 {
		return badRequest("invalid JSON: trailing data after the value")
	}
	if err := checkFields(body, reflect.TypeOf(dst), "", true); err != nil {
		return unprocessable(err)
	}
	return nil
}

// decodeFailure turns a failed decode of body into dst's type t into the
// answer naming the value at fault (core.LocateJSONError): 400 with the
// reason for a value outside its documented bounds (core.ValidationError's
// Bound: a timestamp beyond 9999, a duration too long, a string too long),
// else 422 `invalid request body: …` (wrong type, unknown field).
func decodeFailure(body []byte, t reflect.Type, err error) error {
	if loc := core.LocateJSONError(body, t.Elem(), ""); loc != nil {
		err = loc
	}
	var ve *core.ValidationError
	if errors.As(err, &ve) && ve.Bound {
		return &apiError{status: http.StatusBadRequest, msg: ve.Message(), err: err}
	}
	return unprocessable(err)
}

func unprocessable(err error) error {
	return &apiError{status: http.StatusUnprocessableEntity, msg: "invalid request body: " + errText(err), err: err}
}

func errText(err error) string {
	var ve *core.ValidationError
	if errors.As(err, &ve) {
		return ve.Message()
	}
	if err == nil {
		return "invalid"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// jsonDepth returns the maximal nesting of arrays and objects in valid JSON.
func jsonDepth(b []byte) int {
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

// checkFields checks field presence in the JSON object body against the DTO
// type t: at the top level (and in embedded structs) a field is required iff
// tagged `required:"true"`; in nested plain structs (core wire types without
// their own decoder) every non-pointer field that is not `omitempty` or
// `stela:"default"` is required, as serde requires non-Option fields. A JSON
// null counts as missing for a required field.
func checkFields(data []byte, t reflect.Type, path string, top bool) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case hasOwnDecoder(t):
		return nil
	case t.Kind() == reflect.Struct:
		// The body passed json.Valid: split it without decoding.
		obj, ok := core.ParseJSONObject(data)
		if !ok {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(data, &m); err != nil {
				return fmt.Errorf("expected an object%s", atPath(path))
			}
			for k, v := range m {
				obj = append(obj, core.JSONMember{Key: []byte(k), Value: v})
			}
		}
		for _, m := range obj {
			if !core.HasJSONField(t, m.Key) {
				return fmt.Errorf("unknown field `%s`%s", m.Key, atPath(path))
			}
		}
		return checkStructFields(obj, t, path, top)
	case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8:
		items, ok := core.JSONArray(data)
		if !ok {
			return nil // json.Decode already accepted or reported it
		}
		for i, it := range items {
			if isNull(it) {
				continue
			}
			if err := checkFields(it, t.Elem(), fmt.Sprintf("%s[%d]", path, i), false); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkStructFields(obj core.JSONObject, t reflect.Type, path string, top bool) error {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if !f.IsExported() || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			if err := checkStructFields(obj, f.Type, path, top); err != nil {
				return err
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		var required bool
		if top {
			required = f.Tag.Get("required") == "true"
		} else {
			required = f.Type.Kind() != reflect.Pointer && !strings.Contains(opts, "omitempty") && f.Tag.Get("stela") != "default"
		}
		raw, ok := obj.Get(name)
		if !ok || isNull(raw) {
			if required {
				return fmt.Errorf("missing field `%s`", joinPath(path, name))
			}
			continue
		}
		if err := checkFields(raw, f.Type, joinPath(path, name), false); err != nil {
			return err
		}
	}
	return nil
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	rawMessageType      = reflect.TypeFor[json.RawMessage]()
)

// ownDecoder caches hasOwnDecoder (reflect.Type → bool).
var ownDecoder sync.Map

func hasOwnDecoder(t reflect.Type) bool {
	if v, ok := ownDecoder.Load(t); ok {
		return v.(bool)
	}
	pt := reflect.PointerTo(t)
	own := t == rawMessageType || t.Implements(unmarshalerType) || pt.Implements(unmarshalerType) ||
		t.Implements(textUnmarshalerType) || pt.Implements(textUnmarshalerType)
	ownDecoder.Store(t, own)
	return own
}

func isNull(b []byte) bool { return bytes.Equal(bytes.TrimSpace(b), []byte("null")) }

func atPath(path string) string {
	if path == "" {
		return ""
	}
	return " at `" + path + "`"
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// query reads query parameters; every error is a 400 naming the parameter.
type query struct{ v url.Values }

func (c *call) query() (query, error) {
	v, err := url.ParseQuery(c.r.URL.RawQuery)
	if err != nil {
		return query{}, badRequest("invalid query string: %s", err.Error())
	}
	for name, vals := range v {
		for _, val := range vals {
			if !utf8.ValidString(name) || !utf8.ValidString(val) {
				return query{}, badRequest("invalid query string: not valid UTF-8")
			}
		}
	}
	return query{v}, nil
}

func queryErr(name, reason string) error {
	return badRequest("invalid query parameter `%s`: %s", name, reason)
}

func (q query) has(name string) bool { return q.v.Has(name) }

func (q query) str(name string) string { return q.v.Get(name) }

func (q query) all(name string) []string { return q.v[name] }

// boolean parses "true" / "false" (serde's bool), def when absent.
func (q query) boolean(name string, def bool) (bool, error) {
	b, err := q.optBool(name)
	if err != nil || b == nil {
		return def, err
	}
	return *b, nil
}

func (q query) optBool(name string) (*bool, error) {
	if !q.v.Has(name) {
		return nil, nil
	}
	switch q.v.Get(name) {
	case "true":
		b := true
		return &b, nil
	case "false":
		b := false
		return &b, nil
	}
	return nil, queryErr(name, "expected `true` or `false`")
}

func (q query) optUint(name string, bits int) (*uint64, error) {
	if !q.v.Has(name) {
		return nil, nil
	}
	n, err := strconv.ParseUint(q.v.Get(name), 10, bits)
	if err != nil {
		return nil, queryErr(name, fmt.Sprintf("expected an unsigned %d-bit integer", bits))
	}
	return &n, nil
}

// length parses a non-zero u16 page length, clamped to maxLen.
func (q query) length(maxLen uint16) (uint16, error) {
	n, err := q.optUint("length", 16)
	if err != nil {
		return 0, err
	}
	if n == nil {
		return wire.DefaultPageLength, nil
	}
	if *n == 0 {
		return 0, queryErr("length", "must be non-zero")
	}
	return min(uint16(*n), maxLen), nil
}

// direction parses `older` / `newer`.
func (q query) direction(def core.Direction) (core.Direction, error) {
	if !q.v.Has("direction") {
		return def, nil
	}
	switch q.v.Get("direction") {
	case "older":
		return core.OlderThan, nil
	case "newer":
		return core.NewerThan, nil
	}
	return 0, queryErr("direction", "expected `older` or `newer`")
}

func (q query) optTimestamp(name string) (*core.Timestamp, error) {
	if !q.v.Has(name) {
		return nil, nil
	}
	ts, err := core.ParseTimestamp(q.v.Get(name))
	if err != nil {
		return nil, queryErr(name, "expected an RFC 3339 timestamp")
	}
	return &ts, nil
}

// waitMillis parses `wait_ms`, clamped to the follow bound.
func (s *server) clampWait(ms uint64) uint64 {
	return min(ms, uint64(s.followWait.Milliseconds()))
}

// --- path parameters -----------------------------------------------------------

func pathExecutionID(r *http.Request) (core.ExecutionId, error) {
	raw := r.PathValue("execution_id")
	id, err := core.ParseExecutionId(raw)
	if err != nil {
		return core.ExecutionId{}, &apiError{status: http.StatusBadRequest, msg: idErrText("execution id", raw, err), err: err}
	}
	setExecutionID(r, id)
	return id, nil
}

func pathDelayID(r *http.Request) (core.DelayId, error) {
	raw := r.PathValue("delay_id")
	id, err := core.ParseDelayId(raw)
	if err != nil {
		return core.DelayId{}, &apiError{status: http.StatusBadRequest, msg: idErrText("delay id", raw, err), err: err}
	}
	owner, _ := id.SplitToParts()
	setExecutionID(r, owner)
	return id, nil
}

func pathDeploymentID(r *http.Request) (core.DeploymentId, error) {
	raw := r.PathValue("deployment_id")
	id, err := core.ParseDeploymentId(raw)
	if err != nil {
		return core.DeploymentId{}, &apiError{status: http.StatusBadRequest, msg: idErrText("deployment id", raw, err), err: err}
	}
	return id, nil
}

func pathDigest(r *http.Request) (core.Digest, error) {
	raw := r.PathValue("digest")
	d, err := core.ParseDigest(raw)
	if err != nil {
		return core.Digest{}, &apiError{status: http.StatusBadRequest, msg: idErrText("digest", raw, err), err: err}
	}
	return d, nil
}

// idErrText renders `invalid <kind>: <reason>` without echoing long input.
func idErrText(kind, raw string, err error) string {
	var ie *core.IDError
	if errors.As(err, &ie) {
		return fmt.Sprintf("invalid %s %s: %s", kind, quoteShort(raw), ie.Reason)
	}
	var ve *core.ValidationError
	if errors.As(err, &ve) {
		return fmt.Sprintf("invalid %s %s: %s", kind, quoteShort(raw), ve.Message())
	}
	return fmt.Sprintf("invalid %s %s", kind, quoteShort(raw))
}

func quoteShort(s string) string {
	const limit = 128
	if len(s) > limit {
		s = s[:limit] + "…"
	}
	return strconv.Quote(s)
}

// u32Max is the open-ended cursor of OlderThan scans over versions and cursors.
const u32Max = math.MaxUint32
