package core

import (
	"crypto/sha256"
	"encoding/binary"
)

// WasmBacktrace is a captured WASM stack.
type WasmBacktrace struct {
	Frames []FrameInfo `json:"frames"`
}

// FrameInfo is one stack frame.
type FrameInfo struct {
	Module   string        `json:"module"`
	FuncName string        `json:"func_name"`
	Symbols  []FrameSymbol `json:"symbols"`
}

// FrameSymbol is debug information of a frame; every field is nullable.
type FrameSymbol struct {
	FuncName *string `json:"func_name"`
	File     *string `json:"file"`
	Line     *uint32 `json:"line"`
	Col      *uint32 `json:"col"`
}

// BacktraceInfo is the backtrace that produced the events in
// [VersionMinIncluding, VersionMaxExcluding).
type BacktraceInfo struct {
	ExecutionID         ExecutionId   `json:"execution_id"`
	ComponentID         ComponentId   `json:"component_id"`
	VersionMinIncluding Version       `json:"version_min_including"`
	VersionMaxExcluding Version       `json:"version_max_excluding"`
	WasmBacktrace       WasmBacktrace `json:"wasm_backtrace"`
}

// BacktraceFilter selects a backtrace: First, Last, or the one containing Specific.
type BacktraceFilter struct {
	// Kind is "first", "last" or "specific".
	Kind     string
	Specific Version
}

// BacktraceHashOf returns the 33-byte dedup hash of a backtrace (docs/spec/semantics.md §2.12):
// a version byte 0x01 then SHA-256 over, per frame, "F|" module "|" func "|",
// and per symbol "S|" followed, for each optional field (func_name, file,
// line, col), by "1|" value "|" or "0|" (u32 values as 4 little-endian bytes).
func BacktraceHashOf(bt WasmBacktrace) [33]byte {
	h := sha256.New()
	w := func(s string) { _, _ = h.Write([]byte(s)) }
	optStr := func(s *string) {
		if s == nil {
			w("0|")
			return
		}
		w("1|")
		w(*s)
		w("|")
	}
	optU32 := func(v *uint32) {
		if v == nil {
			w("0|")
			return
		}
		w("1|")
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], *v)
		_, _ = h.Write(b[:])
		w("|")
	}
	for _, f := range bt.Frames {
		w("F|")
		w(f.Module)
		w("|")
		w(f.FuncName)
		w("|")
		for _, s := range f.Symbols {
			w("S|")
			optStr(s.FuncName)
			optStr(s.File)
			optU32(s.Line)
			optU32(s.Col)
		}
	}
	var out [33]byte
	out[0] = 1
	h.Sum(out[1:1])
	return out
}
