package worker

import (
	"encoding/json"
	"fmt"

	"github.com/stela-dev/stela/core"
)

// Params2 is the parameters of a function of two WIT parameters, e.g.
// add(a: s32, b: s32): its params array [P1, P2] maps positionally onto
// the fields. Use it as the parameter type of an activity or workflow (a
// Go function then serves the function) and as the params of a call
// (Args{a, b} sends the same array).
//
//	worker.Activity(w, "demo:calc/math.add", func(_ context.Context, p worker.Params2[int, int]) (int, error) {
//		return p.P1 + p.P2, nil
//	})
type Params2[A, B any] struct {
	P1 A
	P2 B
}

// Params3 is Params2 for three parameters.
type Params3[A, B, C any] struct {
	P1 A
	P2 B
	P3 C
}

// Params4 is Params2 for four parameters.
type Params4[A, B, C, D any] struct {
	P1 A
	P2 B
	P3 C
	P4 D
}

// paramsArray is a positional parameter list (Params2…4).
type paramsArray interface {
	encodeParams() (core.Params, error)
}

// paramsArrayDecoder is the pointer side of a positional parameter list.
type paramsArrayDecoder interface {
	decodeParams(core.Params) error
}

func (p Params2[A, B]) encodeParams() (core.Params, error) { return encodeParams(Args{p.P1, p.P2}) }
func (p Params3[A, B, C]) encodeParams() (core.Params, error) {
	return encodeParams(Args{p.P1, p.P2, p.P3})
}
func (p Params4[A, B, C, D]) encodeParams() (core.Params, error) {
	return encodeParams(Args{p.P1, p.P2, p.P3, p.P4})
}

func (p *Params2[A, B]) decodeParams(ps core.Params) error { return decodeParamsInto(ps, &p.P1, &p.P2) }
func (p *Params3[A, B, C]) decodeParams(ps core.Params) error {
	return decodeParamsInto(ps, &p.P1, &p.P2, &p.P3)
}
func (p *Params4[A, B, C, D]) decodeParams(ps core.Params) error {
	return decodeParamsInto(ps, &p.P1, &p.P2, &p.P3, &p.P4)
}

// decodeParamsInto decodes a params array of exactly len(dst) elements.
func decodeParamsInto(ps core.Params, dst ...any) error {
	if len(ps) != len(dst) {
		return fmt.Errorf("expected %d parameters, got %d", len(dst), len(ps))
	}
	for i, d := range dst {
		if err := json.Unmarshal(ps[i], d); err != nil {
			return fmt.Errorf("cannot decode parameter %d as %T: %w", i, d, err)
		}
	}
	return nil
}
