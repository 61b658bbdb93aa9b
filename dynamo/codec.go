package dynamo

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stela-dev/stela/core"
)

// --- keys ---------------------------------------------------------------------

const (
	prefixExec       = "E#"
	skHead           = "H"
	prefixEvent      = "V#"
	prefixResponse   = "R#"
	prefixDelay      = "D#"
	prefixBacktrace  = "B#"
	prefixOutbox     = "O#"
	prefixGuardChild = "G#C#"
	prefixGuardDelay = "G#D#"
	skGuard          = "G"
	prefixLog        = "LG#"
	pkLogSeq         = "SEQ#LOG"
	skLogSeq         = "C"

	prefixJoinNext  = "J#"
	ordinalResponse = "R#"

	timerLock  = "L#"
	timerDelay = "D#"
	listTop    = "LT#"
	listDeriv  = "LD#"
	cancelPK   = "C#"
)

func pkExec(id core.ExecutionId) string { return prefixExec + id.String() }

func skEvent(v core.Version) string { return fmt.Sprintf("%s%010d", prefixEvent, v) }

func skResponse(c core.ResponseCursor) string { return fmt.Sprintf("%s%010d", prefixResponse, c) }

func skDelay(js core.JoinSetId, d core.DelayId) string {
	return prefixDelay + js.String() + "#" + d.String()
}

func skBacktrace(min, max core.Version) string {
	return fmt.Sprintf("%s%010d#%010d", prefixBacktrace, min, max)
}

func ordinalKey(kind string, js string, ord uint32) string {
	return fmt.Sprintf("%s%s#%010d", kind, js, ord)
}

func pkLog(id core.ExecutionId) string { return prefixLog + id.TopLevel().String() }

func skLog(c core.LogCursor) string { return fmt.Sprintf("%019d", int64(c)) }

func parseExecPK(pk string) (core.ExecutionId, error) {
	if !strings.HasPrefix(pk, prefixExec) {
		return core.ExecutionId{}, fmt.Errorf("dynamo: not an execution key %q", pk)
	}
	return core.ParseExecutionId(pk[len(prefixExec):])
}

// parseDelaySK splits "D#<join set>#<delay id>".
func parseDelaySK(sk string) (core.JoinSetId, core.DelayId, error) {
	rest, ok := strings.CutPrefix(sk, prefixDelay)
	if !ok {
		return core.JoinSetId{}, core.DelayId{}, fmt.Errorf("dynamo: not a delay key %q", sk)
	}
	jsText, delayText, ok := strings.Cut(rest, "#")
	if !ok {
		return core.JoinSetId{}, core.DelayId{}, fmt.Errorf("dynamo: malformed delay key %q", sk)
	}
	js, err := core.ParseJoinSetId(jsText)
	if err != nil {
		return core.JoinSetId{}, core.DelayId{}, err
	}
	d, err := core.ParseDelayId(delayText)
	return js, d, err
}

// parseOrdinal returns the ordinal at the end of an AttrOrdinal value.
func parseOrdinal(s string) (uint32, error) {
	i := strings.LastIndexByte(s, '#')
	n, err := strconv.ParseUint(s[i+1:], 10, 32)
	if err != nil {
		return 0, fmt.Errorf("dynamo: malformed ordinal %q", s)
	}
	return uint32(n), nil
}

// shardOf spreads executions over n index partitions.
func shardOf(id string, n int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return int(h.Sum32() % uint32(n))
}

// projectionExpr returns the ProjectionExpression of attrs, adding a
// placeholder name "#a<i>" for each to names.
func projectionExpr(names map[string]string, attrs []string) string {
	ps := make([]string, len(attrs))
	for i, a := range attrs {
		ps[i] = fmt.Sprintf("#a%d", i)
		names[ps[i]] = a
	}
	return strings.Join(ps, ", ")
}

// --- attribute values -----------------------------------------------------------

type item = map[string]types.AttributeValue

func avS(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func avN[T ~int | ~int64 | ~uint32 | ~uint64 | ~uint8](n T) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(int64(n), 10)}
}

func avU64(n uint64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatUint(n, 10)}
}

func avBool(b bool) types.AttributeValue { return &types.AttributeValueMemberBOOL{Value: b} }

func getS(it item, name string) (string, bool) {
	if v, ok := it[name].(*types.AttributeValueMemberS); ok {
		return v.Value, true
	}
	return "", false
}

func getN(it item, name string) (int64, bool, error) {
	v, ok := it[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(v.Value, 10, 64)
	if err != nil {
		return 0, true, fmt.Errorf("dynamo: attribute %s: %w", name, err)
	}
	return n, true, nil
}

func getU64(it item, name string) (uint64, bool, error) {
	v, ok := it[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0, false, nil
	}
	n, err := strconv.ParseUint(v.Value, 10, 64)
	if err != nil {
		return 0, true, fmt.Errorf("dynamo: attribute %s: %w", name, err)
	}
	return n, true, nil
}

func getBool(it item, name string) bool {
	v, ok := it[name].(*types.AttributeValueMemberBOOL)
	return ok && v.Value
}

func getTS(it item, name string) (core.Timestamp, error) {
	s, ok := getS(it, name)
	if !ok {
		return core.Timestamp{}, fmt.Errorf("dynamo: missing attribute %s", name)
	}
	return parseTS(s)
}

// parseTS reads a stored (non-key) timestamp: core's AutoSi form
// (core.Timestamp.String) since this version, RFC 3339 with trimmed
// fractional digits before; core.ParseTimestamp reads both.
func parseTS(s string) (core.Timestamp, error) {
	ts, err := core.ParseTimestamp(s)
	if err != nil {
		return core.Timestamp{}, fmt.Errorf("dynamo: stored timestamp: %w", err)
	}
	return ts, nil
}

// ItemSize estimates the billed size of an item (attribute names + values):
// what DynamoDB counts against its 400 KB item limit and bills by the KB.
func ItemSize(it map[string]types.AttributeValue) int {
	n := 0
	for k, v := range it {
		n += len(k) + avSize(v)
	}
	return n
}

func avSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return (len(v.Value)+1)/2 + 1
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + avSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + avSize(e)
		}
		return n
	}
	return 0
}
