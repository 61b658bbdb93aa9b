package client_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sync"
	"testing"

	"github.com/stela-dev/stela/client"
)

// The client decodes answers with core's fast decoder where it decides
// alone, json.Unmarshal otherwise: every answer of the store scenario over
// HTTP (each worker and public route it calls) decodes to json.Unmarshal's
// value, and so do the same answers with a field this client does not know
// (a newer server) and with a key repeated, which the fast decoder leaves
// to json.Unmarshal.
func TestAnswersDecodeAsUnmarshal(t *testing.T) {
	type answer struct {
		body []byte
		typ  reflect.Type
	}
	var mu sync.Mutex
	var answers []answer
	fast := map[reflect.Type]int{}
	restore := client.SetAnswerHook(func(body []byte, out any, tookFast bool) {
		mu.Lock()
		defer mu.Unlock()
		typ := reflect.TypeOf(out).Elem()
		answers = append(answers, answer{bytes.Clone(body), typ})
		if tookFast {
			fast[typ]++
		}
	})
	runStoreScenario(t, newClient(t, serve(t, newService(t))))
	restore()
	if len(answers) < 20 {
		t.Fatalf("the scenario decoded %d answers, want at least 20", len(answers))
	}
	types := map[reflect.Type]bool{}
	for _, a := range answers {
		types[a.typ] = true
		checkAnswer(t, "as sent", a.body, a.typ)
		trimmed := bytes.TrimSpace(a.body)
		if len(trimmed) < 2 || trimmed[0] != '{' {
			continue
		}
		unknown := []byte(`{"zz_not_known":[1,{"a":null}]`)
		if inner := bytes.TrimSpace(trimmed[1 : len(trimmed)-1]); len(inner) > 0 {
			unknown = append(append(unknown, ','), inner...)
		}
		checkAnswer(t, "with an unknown field", append(unknown, '}'), a.typ)
		if dup, ok := repeatFirstMember(trimmed); ok {
			checkAnswer(t, "with a key repeated", dup, a.typ)
		}
	}
	// The fast decoder must take the worker's hot answers, or this change
	// is dead code: at least half of the answer types, and most answers.
	hits := 0
	for _, n := range fast {
		hits += n
	}
	for typ := range types {
		if fast[typ] == 0 {
			t.Logf("left to json.Unmarshal: %s", typ)
		}
	}
	t.Logf("%d answers of %d types; the fast decoder took %d answers of %d types", len(answers), len(types), hits, len(fast))
	if len(fast)*2 < len(types) || hits*2 < len(answers) {
		t.Errorf("the fast decoder took %d of %d answers, %d of %d types", hits, len(answers), len(fast), len(types))
	}
}

// checkAnswer decodes body into a new typ both ways and requires the same
// outcome and value.
func checkAnswer(t *testing.T, what string, body []byte, typ reflect.Type) {
	t.Helper()
	got, want := reflect.New(typ), reflect.New(typ)
	gerr := client.DecodeAnswer(body, got.Interface())
	werr := json.Unmarshal(body, want.Interface())
	if (gerr == nil) != (werr == nil) {
		t.Errorf("%s %s: decodeAnswer %v, json.Unmarshal %v\n%s", typ, what, gerr, werr, body)
		return
	}
	if !reflect.DeepEqual(got.Interface(), want.Interface()) {
		t.Errorf("%s %s: decodeAnswer %+v, json.Unmarshal %+v\n%s", typ, what, got.Elem(), want.Elem(), body)
	}
}

// repeatFirstMember returns the object obj with its first member repeated
// at the end, with another value where it can (json.Unmarshal keeps the
// last).
func repeatFirstMember(obj []byte) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	tok, err := dec.Token()
	key, ok := tok.(string)
	if err != nil || !ok {
		return nil, false
	}
	var first json.RawMessage
	if dec.Decode(&first) != nil {
		return nil, false
	}
	k, _ := json.Marshal(key)
	out := append([]byte{}, obj[:len(obj)-1]...)
	out = append(append(append(append(out, ','), k...), ':'), first...)
	return append(out, '}'), true
}
