package httpapi

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/wire"
)

// requestTypes are the body types the routes decode with decodeBody.
var requestTypes = []reflect.Type{
	reflect.TypeFor[wire.LockPendingBody](), reflect.TypeFor[wire.LockOneBody](), reflect.TypeFor[wire.AppendBody](),
	reflect.TypeFor[wire.AppendBatchBody](), reflect.TypeFor[wire.CreateChildrenBody](), reflect.TypeFor[wire.DelayResponseBody](), reflect.TypeFor[wire.FireAppendBody](),
	reflect.TypeFor[wire.RespondToParentBody](), reflect.TypeFor[wire.AppendManyBody](), reflect.TypeFor[wire.StubResponseBody](),
	reflect.TypeFor[wire.CreateLockedBody](), reflect.TypeFor[wire.AppendLogsBody](), reflect.TypeFor[wire.AppendBacktracesBody](),
	reflect.TypeFor[wire.SweepBody](), reflect.TypeFor[wire.SignalBody](), reflect.TypeFor[submitBody](), reflect.TypeFor[upgradeBody](),
	reflect.TypeFor[core.CreateRequest](), reflect.TypeFor[core.ReturnValue](), reflect.TypeFor[core.WorkerDeployment](),
}

// compareDecodePaths decodes body into t with and without core's fast
// paths and fails on any difference in the answer (status and message) or
// the value.
func compareDecodePaths(t *testing.T, body []byte, typ reflect.Type) bool {
	t.Helper()
	decode := func(fast bool) (any, int, string) {
		was := core.SetFastDecoding(fast)
		defer core.SetFastDecoding(was)
		dst := reflect.New(typ).Interface()
		err := decodeJSON(body, dst)
		if err == nil {
			return dst, 0, ""
		}
		var ae *apiError
		if errors.As(err, &ae) {
			return dst, ae.status, ae.msg
		}
		return dst, -1, err.Error()
	}
	fv, fs, fm := decode(true)
	sv, ss, sm := decode(false)
	if fs != ss || fm != sm {
		t.Fatalf("%s of %q: fast paths answer %d %q, encoding/json paths %d %q", typ, body, fs, fm, ss, sm)
	}
	if ss == 0 && !reflect.DeepEqual(fv, sv) {
		t.Fatalf("%s of %q: fast paths decode %#v, encoding/json paths %#v", typ, body, fv, sv)
	}
	return ss == 0
}

// nestedMutations returns body with each of its objects, at any depth,
// replaced by each of a set of variants strict decoding must judge as
// before (a member dropped, nulled, duplicated, re-cased, escaped or given
// a value of another type, an unknown member).
func nestedMutations(body []byte) [][]byte {
	var out [][]byte
	values := []string{`null`, `"x"`, `0`, `-1`, `1.5`, `4294967296`, `true`, `[]`, `{}`, `[null]`, `"\u0041"`, "\"\xff\"", `"\ud800"`}
	var walk func(sub []byte)
	walk = func(sub []byte) {
		off := cap(body) - cap(sub)
		replace := func(with []byte) {
			b := append(append(append([]byte(nil), body[:off]...), with...), body[off+len(sub):]...)
			out = append(out, b)
		}
		if o, ok := core.ParseJSONObject(sub); ok {
			build := func(ms []core.JSONMember) []byte {
				var b bytes.Buffer
				b.WriteByte('{')
				for i, m := range ms {
					if i > 0 {
						b.WriteByte(',')
					}
					b.WriteString(`"` + string(m.Key) + `":`)
					b.Write(m.Value)
				}
				b.WriteByte('}')
				return b.Bytes()
			}
			for i, m := range o {
				replace(build(append(append([]core.JSONMember(nil), o[:i]...), o[i+1:]...)))
				replace(build(append(append([]core.JSONMember(nil), o...), m)))
				up := append([]core.JSONMember(nil), o...)
				up[i].Key = bytes.ToUpper(m.Key)
				replace(build(up))
				esc := append([]core.JSONMember(nil), o...)
				esc[i].Key = []byte(`\u0061` + string(m.Key))
				replace(build(esc))
				for _, v := range values {
					other := append([]core.JSONMember(nil), o...)
					other[i].Value = []byte(v)
					replace(build(other))
				}
				walk(m.Value)
			}
			replace(build(append(append([]core.JSONMember(nil), o...), core.JSONMember{Key: []byte("bogus"), Value: []byte("1")})))
		} else if a, ok := core.JSONArray(sub); ok {
			replace([]byte(`[]`))
			replace([]byte(`null`))
			for _, it := range a {
				walk(it)
			}
		}
	}
	walk(body)
	return out
}

// TestDecodeFastPathsMatch pins that decodeJSON answers exactly as before
// core's fast paths (core.DecodeValidatedRequest, the strict decoders'
// fast path, core.ValidJSONDepth): every hot-route body, every nested
// mutation of it, and each decoded as every request type.
func TestDecodeFastPathsMatch(t *testing.T) {
	accepted := 0
	for _, r := range hotRouteBodies(t) {
		if !compareDecodePaths(t, r.body, r.typ) {
			t.Fatalf("%s: the body does not decode", r.route)
		}
		for _, typ := range requestTypes {
			compareDecodePaths(t, r.body, typ)
		}
		for _, m := range nestedMutations(r.body) {
			if compareDecodePaths(t, m, r.typ) {
				accepted++
			}
		}
	}
	for _, b := range []string{``, ` `, `null`, `[]`, `{}`, `{"a":1}`, `{"execution_id":null}`, `"x"`, `{"batch":[]}`, `{}  x`, `{"a":1,"a":2}`,
		strings.Repeat("[", 65) + strings.Repeat("]", 65), strings.Repeat("[", 1500) + strings.Repeat("]", 1500)} {
		for _, typ := range requestTypes {
			compareDecodePaths(t, []byte(b), typ)
		}
	}
	if accepted == 0 {
		t.Fatal("no mutation decoded: the mutations do not reach the fast paths")
	}
	t.Logf("%d mutations accepted", accepted)
}

// FuzzDecodeFastPaths compares decodeJSON with and without core's fast
// paths on arbitrary bodies of the hot routes' types.
func FuzzDecodeFastPaths(f *testing.F) {
	bodies := hotRouteBodies(f)
	for i, r := range bodies {
		f.Add(uint8(i), r.body)
		for j, m := range nestedMutations(r.body) {
			if j%16 == 0 {
				f.Add(uint8(i), m)
			}
		}
	}
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		compareDecodePaths(t, body, bodies[int(route)%len(bodies)].typ)
	})
}
