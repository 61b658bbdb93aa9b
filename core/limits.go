package core

import "fmt"

// Limits on the strings Stela accepts, the same on every backend and
// checked when the text is parsed — request bodies, paths and queries alike
// — so that a value too long for one backend is refused everywhere before
// anything is written (docs/http-api.md §1, "Limits"). They follow from
// DynamoDB's key limits (2048 bytes for a partition key, 1024 for a sort
// key): an ffqn is in index partition keys, an execution id in sort keys
// after a 30-byte timestamp, a join set name in sort keys of responses and
// delays. Other strings — params, results, reasons, metadata — are bounded
// by the request body (httpapi.Options.MaxBodyBytes, 413) and offloaded to
// the CAS when an item would not hold them.
const (
	// MaxFunctionFqnBytes bounds an ffqn (`ns:pkg/ifc@version.fn`).
	MaxFunctionFqnBytes = 512
	// MaxExecutionIdBytes bounds an execution id, derived ids (every level
	// of nesting) included.
	MaxExecutionIdBytes = 512
	// MaxDelayIdBytes bounds a delay id: an execution id's bound plus the
	// longer prefix (`Delay_` for `E_`).
	MaxDelayIdBytes = MaxExecutionIdBytes + len(prefixDelayId) - len(prefixExecutionId)
	// MaxJoinSetIdBytes bounds a join set id (`n:<name>`).
	MaxJoinSetIdBytes = 128
	// MaxComponentNameBytes bounds the name of a component id.
	MaxComponentNameBytes = 512
	// MaxLogMessageBytes and MaxLogPayloadBytes bound one log row's message
	// and one stream chunk (decoded): a log row is one DynamoDB item.
	MaxLogMessageBytes = 64 << 10
	MaxLogPayloadBytes = 64 << 10
)

// tooLong is the error of a string beyond its limit: 400 at decoding
// (ValidationError.Bound), without echoing the input.
func tooLong(what string, n, limit int) error {
	return &ValidationError{Reason: fmt.Sprintf("%s of %d bytes is longer than the maximum of %d bytes", what, n, limit), Bound: true}
}

// CheckLength returns tooLong's error when s is longer than limit bytes:
// what names the value (`log message`).
func CheckLength(what string, s []byte, limit int) error {
	if len(s) > limit {
		return tooLong(what, len(s), limit)
	}
	return nil
}
