package core

// Identifiers (docs/spec/semantics.md §1): prefixed ULIDs, execution ids (top-level and
// derived), join set ids, delay ids, digests, function names, component ids
// and stub return-value hashes. Every textual identifier has one canonical
// form; parsing accepts exactly the canonical form (plus lower-case ULID and
// hex digits, which are re-emitted upper/lower-case respectively), so
// Parse(x.String()) == x for every value a parser returned.

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/oklog/ulid/v2"
)

// ErrInvalidID is the sentinel wrapped by every identifier parse or
// validation error; test with errors.Is(err, ErrInvalidID).
var ErrInvalidID = errors.New("invalid identifier")

// IDError describes why a string is not a valid identifier. It unwraps to
// ErrInvalidID; use errors.As to read the details.
type IDError struct {
	// Kind names the identifier type, e.g. "execution id" or "join set id".
	Kind string
	// Input is the rejected text.
	Input string
	// Reason is a short, stable description such as "wrong prefix",
	// "cannot parse ulid", "empty segment", "second delimiter not found",
	// "invalid index", "invalid join set kind", "invalid join set name",
	// "missing ':'", "invalid digest prefix", "invalid digest length",
	// "invalid hex", "invalid length", "zero value".
	Reason string
}

// Error renders the error as `invalid <kind> "<input>": <reason>`.
func (e *IDError) Error() string {
	return "invalid " + e.Kind + " " + strconv.Quote(e.Input) + ": " + e.Reason
}

// Unwrap returns ErrInvalidID.
func (e *IDError) Unwrap() error { return ErrInvalidID }

func idError(kind, input, reason string) *IDError {
	return &IDError{Kind: kind, Input: input, Reason: reason}
}

// Reasons shared by several parsers.
const (
	idReasonWrongPrefix     = "wrong prefix"
	idReasonCannotParseULID = "cannot parse ulid"
	idReasonFirstDelimiter  = "first delimiter not found"
	idReasonEmptySegment    = "empty segment"
	idReasonSecondDelimiter = "second delimiter not found"
	idReasonInvalidIndex    = "invalid index"
	idReasonJoinSetKind     = "invalid join set kind"
	idReasonJoinSetName     = "invalid join set name"
	idReasonMissingColon    = "missing ':'"
	idReasonMustBeDerived   = "must be a derived execution id"
	idReasonZeroValue       = "zero value"
	idReasonInvalidHex      = "invalid hex"
)

// Identifier kinds used in IDError.Kind.
const (
	idKindExecutorId      = "executor id"
	idKindRunId           = "run id"
	idKindDeploymentId    = "deployment id"
	idKindExecutionId     = "execution id"
	idKindDelayId         = "delay id"
	idKindJoinSetId       = "join set id"
	idKindDigest          = "digest"
	idKindComponentDigest = "component digest"
	idKindContentDigest   = "content digest"
	idKindFunctionFqn     = "function fqn"
	idKindComponentType   = "component type"
	idKindComponentId     = "component id"
	idKindStubRetValHash  = "stub retval hash"
)

// Prefixes of the prefixed ULIDs (docs/spec/semantics.md §1.1).
const (
	prefixExecutionId  = "E"
	prefixExecutorId   = "Exr"
	prefixRunId        = "Run"
	prefixDeploymentId = "Dep"
	prefixDelayId      = "Delay"
)

// parsePrefixedULID parses "<prefix>_<ULID>". The ULID part is parsed with
// ulid.ParseStrict: exactly 26 Crockford base32 characters (either case),
// first character at most '7' (no 130-bit overflow).
func parsePrefixedULID(kind, prefix, s string) (ulid.ULID, error) {
	u, reason := prefixedULID(prefix, s)
	if reason != "" {
		return ulid.ULID{}, idError(kind, s, reason)
	}
	return u, nil
}

// prefixedULID is parsePrefixedULID returning the failure reason ("" on
// success) instead of an error.
func prefixedULID(prefix, s string) (ulid.ULID, string) {
	if len(s) <= len(prefix) || s[:len(prefix)] != prefix || s[len(prefix)] != '_' {
		return ulid.ULID{}, idReasonWrongPrefix
	}
	u, err := ulid.ParseStrict(s[len(prefix)+1:])
	if err != nil {
		return ulid.ULID{}, idReasonCannotParseULID
	}
	return u, ""
}

func formatPrefixedULID(prefix string, u ulid.ULID) string {
	return prefix + "_" + u.String()
}

// ExecutorId identifies one spawned executor ("Exr_<ULID>", docs/spec/semantics.md §1.1).
// Equality and ordering compare the embedded ULID.
type ExecutorId struct{ ulid.ULID }

// RunId identifies one executor tick ("Run_<ULID>", docs/spec/semantics.md §1.1); all
// executions locked in the same batch share it.
type RunId struct{ ulid.ULID }

// DeploymentId identifies a deployment ("Dep_<ULID>", docs/spec/semantics.md §1.1).
type DeploymentId struct{ ulid.ULID }

// ParseExecutorId parses "Exr_<ULID>".
func ParseExecutorId(s string) (ExecutorId, error) {
	u, err := parsePrefixedULID(idKindExecutorId, prefixExecutorId, s)
	return ExecutorId{u}, err
}

// NewExecutorId builds an ExecutorId from unix milliseconds and 10 bytes
// read from entropy (a nil entropy gives zero randomness).
func NewExecutorId(ms uint64, entropy io.Reader) (ExecutorId, error) {
	u, err := ulid.New(ms, entropy)
	return ExecutorId{u}, err
}

// String returns "Exr_<ULID>" with an upper-case ULID.
func (id ExecutorId) String() string { return formatPrefixedULID(prefixExecutorId, id.ULID) }

// MarshalText returns the String form.
func (id ExecutorId) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText parses the String form.
func (id *ExecutorId) UnmarshalText(b []byte) error {
	v, err := ParseExecutorId(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// ParseRunId parses "Run_<ULID>".
func ParseRunId(s string) (RunId, error) {
	u, err := parsePrefixedULID(idKindRunId, prefixRunId, s)
	return RunId{u}, err
}

// NewRunId builds a RunId from unix milliseconds and 10 bytes read from
// entropy (a nil entropy gives zero randomness).
func NewRunId(ms uint64, entropy io.Reader) (RunId, error) {
	u, err := ulid.New(ms, entropy)
	return RunId{u}, err
}

// String returns "Run_<ULID>" with an upper-case ULID.
func (id RunId) String() string { return formatPrefixedULID(prefixRunId, id.ULID) }

// MarshalText returns the String form.
func (id RunId) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText parses the String form.
func (id *RunId) UnmarshalText(b []byte) error {
	v, err := ParseRunId(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// ParseDeploymentId parses "Dep_<ULID>".
func ParseDeploymentId(s string) (DeploymentId, error) {
	u, err := parsePrefixedULID(idKindDeploymentId, prefixDeploymentId, s)
	return DeploymentId{u}, err
}

// NewDeploymentId builds a DeploymentId from unix milliseconds and 10 bytes
// read from entropy (a nil entropy gives zero randomness).
func NewDeploymentId(ms uint64, entropy io.Reader) (DeploymentId, error) {
	u, err := ulid.New(ms, entropy)
	return DeploymentId{u}, err
}

// String returns "Dep_<ULID>" with an upper-case ULID.
func (id DeploymentId) String() string { return formatPrefixedULID(prefixDeploymentId, id.ULID) }

// MarshalText returns the String form.
func (id DeploymentId) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText parses the String form.
func (id *DeploymentId) UnmarshalText(b []byte) error {
	v, err := ParseDeploymentId(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// Derived-id delimiters (docs/spec/semantics.md §1.2).
const (
	execIdInfix         = '.' // between levels
	execIdIndexInfix    = '_' // between join set id and index
	joinSetIdInfix      = ':' // between join set kind code and name
	executionIdStartIdx = 1
)

type executionIdKind uint8

const (
	executionIdKindZero executionIdKind = iota
	executionIdKindTopLevel
	executionIdKindDerived
)

// ExecutionId identifies an execution (docs/spec/semantics.md §1.2). A top-level id is
// "E_<ULID>"; a derived (child) id is
// "<top-level id>.<join set id>_<idx>(.<join set id>_<idx>)*", where the
// last index is the child's position in its join set.
//
// ExecutionId is comparable with ==; two ids are equal iff their canonical
// strings are equal. The zero value is not a valid id: IsZero reports it,
// String returns "" and MarshalText fails.
//
// Unlike Obelisk (whose u64 parser accepts "+5" and "01"), every index must be
// canonical decimal — no sign, no leading zeros, not empty — otherwise parsing
// fails with Reason "invalid index". Hence ParseExecutionId(s).String() == s
// for every accepted s, except that a lower-case ULID is re-emitted upper-case.
type ExecutionId struct {
	top   ulid.ULID
	infix string // derived only: everything between the first '.' and the last '_'
	idx   uint64 // derived only
	kind  executionIdKind
}

// ParseExecutionId parses a top-level or derived execution id (docs/spec/semantics.md §1.2):
// without '.', the input must be "E_<ULID>". Otherwise the text before the
// first '.' must be "E_<ULID>" and the rest is split on '.' into segments;
// each must be non-empty ("empty segment"), contain '_' ("second delimiter
// not found"), and split at its first '_' into a valid join set id (§1.3)
// and a canonical u64 index ("invalid index").
func ParseExecutionId(s string) (ExecutionId, error) {
	if len(s) > MaxExecutionIdBytes {
		return ExecutionId{}, tooLong(idKindExecutionId, len(s), MaxExecutionIdBytes)
	}
	if strings.IndexByte(s, execIdInfix) < 0 {
		u, err := parsePrefixedULID(idKindExecutionId, prefixExecutionId, s)
		if err != nil {
			return ExecutionId{}, err
		}
		return ExecutionIdFromULID(u), nil
	}
	top, infix, idx, err := parseDerivedId(idKindExecutionId, prefixExecutionId, s)
	if err != nil {
		return ExecutionId{}, err
	}
	return ExecutionId{top: top, infix: infix, idx: idx, kind: executionIdKindDerived}, nil
}

// parseDerivedId implements the derived-id grammar shared by execution ids
// and delay ids: "<prefix>_<ULID>.<segment>(.<segment>)*".
func parseDerivedId(kind, prefix, s string) (top ulid.ULID, infix string, idx uint64, err error) {
	head, rest, ok := strings.Cut(s, string(execIdInfix))
	if !ok {
		return top, "", 0, idError(kind, s, idReasonFirstDelimiter)
	}
	top, reason := prefixedULID(prefix, head)
	if reason != "" {
		return top, "", 0, idError(kind, s, reason)
	}
	var lastIdx string
	for seg := range strings.SplitSeq(rest, string(execIdInfix)) {
		if seg == "" {
			return top, "", 0, idError(kind, s, idReasonEmptySegment)
		}
		js, idxStr, ok := strings.Cut(seg, string(execIdIndexInfix))
		if !ok {
			return top, "", 0, idError(kind, s, idReasonSecondDelimiter)
		}
		if reason := checkJoinSetId(js); reason != "" {
			return top, "", 0, idError(kind, s, reason)
		}
		if idx, ok = parseCanonicalIndex(idxStr); !ok {
			return top, "", 0, idError(kind, s, idReasonInvalidIndex)
		}
		lastIdx = idxStr
	}
	infix = rest[:len(rest)-len(lastIdx)-1]
	return top, infix, idx, nil
}

// parseCanonicalIndex parses a u64 written in canonical decimal: non-empty,
// digits only, no leading zero unless the number is 0.
func parseCanonicalIndex(s string) (uint64, bool) {
	if s == "" || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// NewExecutionId builds a top-level id from unix milliseconds and 10 bytes
// read from entropy (a nil entropy gives zero randomness).
func NewExecutionId(ms uint64, entropy io.Reader) (ExecutionId, error) {
	u, err := ulid.New(ms, entropy)
	if err != nil {
		return ExecutionId{}, err
	}
	return ExecutionIdFromULID(u), nil
}

// ExecutionIdFromULID returns the top-level id "E_<u>". The all-zero ULID
// gives the dummy id E_00000000000000000000000000, which is not IsZero.
func ExecutionIdFromULID(u ulid.ULID) ExecutionId {
	return ExecutionId{top: u, kind: executionIdKindTopLevel}
}

// ExecutionIdDeterministicAtUnixEpoch derives a top-level id from a SHA-256
// hash (docs/spec/semantics.md §1.1, used for cron seed executions): the ULID timestamp is the
// first 4 hash bytes read as a big-endian uint32 of milliseconds (so the date
// is in January/February 1970) and the randomness is hash bytes 4..14.
func ExecutionIdDeterministicAtUnixEpoch(sha256 [32]byte) ExecutionId {
	var u ulid.ULID
	ms := uint64(binary.BigEndian.Uint32(sha256[0:4]))
	// ms < 2^32 always fits the 48-bit ULID timestamp; entropy has 10 bytes.
	_ = u.SetTime(ms)
	_ = u.SetEntropy(sha256[4:14])
	return ExecutionIdFromULID(u)
}

// String returns the canonical form ("" for the zero value).
func (id ExecutionId) String() string {
	switch id.kind {
	case executionIdKindTopLevel:
		return formatPrefixedULID(prefixExecutionId, id.top)
	case executionIdKindDerived:
		return formatDerived(prefixExecutionId, id.top, id.infix, id.idx)
	default:
		return ""
	}
}

func formatDerived(prefix string, top ulid.ULID, infix string, idx uint64) string {
	var b strings.Builder
	b.Grow(len(prefix) + 1 + ulid.EncodedSize + 1 + len(infix) + 1 + 20)
	b.WriteString(prefix)
	b.WriteByte('_')
	b.WriteString(top.String())
	b.WriteByte(execIdInfix)
	b.WriteString(infix)
	b.WriteByte(execIdIndexInfix)
	b.WriteString(strconv.FormatUint(idx, 10))
	return b.String()
}

// IsZero reports whether id is the zero value, which no constructor or
// parser returns.
func (id ExecutionId) IsZero() bool { return id.kind == executionIdKindZero }

// IsTopLevel reports whether id is a top-level "E_<ULID>" id. It is false
// for derived ids and for the zero value.
func (id ExecutionId) IsTopLevel() bool { return id.kind == executionIdKindTopLevel }

// TopLevel returns the root "E_<ULID>" of id (id itself if top-level; the
// zero value for the zero value).
func (id ExecutionId) TopLevel() ExecutionId {
	if id.kind == executionIdKindZero {
		return ExecutionId{}
	}
	return ExecutionIdFromULID(id.top)
}

// ULID returns the ULID of the top-level root of id.
func (id ExecutionId) ULID() ulid.ULID { return id.top }

// NextLevel returns the id of the first child of id in join set js:
// "<id>.<js>_1". The next siblings are obtained with Incremented.
// It panics if id is the zero value or js is not a valid join set id.
func (id ExecutionId) NextLevel(js JoinSetId) ExecutionId {
	if err := js.validate(); err != nil {
		panic("core: ExecutionId.NextLevel: " + err.Error())
	}
	var infix string
	switch id.kind {
	case executionIdKindTopLevel:
		infix = js.String()
	case executionIdKindDerived:
		infix = id.infix + string(execIdIndexInfix) + strconv.FormatUint(id.idx, 10) +
			string(execIdInfix) + js.String()
	default:
		panic("core: ExecutionId.NextLevel called on the zero ExecutionId")
	}
	return ExecutionId{top: id.top, infix: infix, idx: executionIdStartIdx, kind: executionIdKindDerived}
}

// Incremented returns the next sibling of a derived id: same parent and
// join set, index + 1. It panics if id is not derived or the index would
// overflow.
func (id ExecutionId) Incremented() ExecutionId {
	if id.kind != executionIdKindDerived {
		panic("core: ExecutionId.Incremented called on a non-derived id " + strconv.Quote(id.String()))
	}
	if id.idx == ^uint64(0) {
		panic("core: ExecutionId.Incremented: index overflow")
	}
	id.idx++
	return id
}

// SplitToParts returns the parent execution and the join set of a derived id
// (docs/spec/semantics.md §1.2): if the infix contains '.', it is split at its last '.' into
// (parent infix and index, join set), and the former at its last '_'; else
// the parent is the top-level id and the whole infix is the join set.
// ok is false for top-level ids and the zero value.
func (id ExecutionId) SplitToParts() (parent ExecutionId, js JoinSetId, ok bool) {
	if id.kind != executionIdKindDerived {
		return ExecutionId{}, JoinSetId{}, false
	}
	return splitDerived(id.top, id.infix)
}

func splitDerived(top ulid.ULID, infix string) (parent ExecutionId, js JoinSetId, ok bool) {
	dot := strings.LastIndexByte(infix, execIdInfix)
	if dot < 0 {
		js, err := ParseJoinSetId(infix)
		if err != nil {
			return ExecutionId{}, JoinSetId{}, false
		}
		return ExecutionIdFromULID(top), js, true
	}
	js, err := ParseJoinSetId(infix[dot+1:])
	if err != nil {
		return ExecutionId{}, JoinSetId{}, false
	}
	oldInfixAndIdx := infix[:dot]
	us := strings.LastIndexByte(oldInfixAndIdx, execIdIndexInfix)
	if us < 0 {
		return ExecutionId{}, JoinSetId{}, false
	}
	oldIdx, okIdx := parseCanonicalIndex(oldInfixAndIdx[us+1:])
	if !okIdx {
		return ExecutionId{}, JoinSetId{}, false
	}
	parent = ExecutionId{top: top, infix: oldInfixAndIdx[:us], idx: oldIdx, kind: executionIdKindDerived}
	return parent, js, true
}

// Compare orders ids by their canonical strings (byte-wise), which is how
// storage orders them (docs/spec/semantics.md §1.2: "…_10" sorts before "…_2").
func (id ExecutionId) Compare(o ExecutionId) int {
	return strings.Compare(id.String(), o.String())
}

// MarshalText returns the canonical form; it fails for the zero value.
func (id ExecutionId) MarshalText() ([]byte, error) {
	if id.IsZero() {
		return nil, idError(idKindExecutionId, "", idReasonZeroValue)
	}
	return []byte(id.String()), nil
}

// UnmarshalText parses the canonical form with ParseExecutionId.
func (id *ExecutionId) UnmarshalText(b []byte) error {
	v, err := ParseExecutionId(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// ExecutionIdDerived is an ExecutionId that is known to be derived (a child
// execution). Its text form is the same as ExecutionId's.
type ExecutionIdDerived struct{ ExecutionId }

// ParseExecutionIdDerived parses a derived execution id; a top-level id is
// rejected with Reason "must be a derived execution id".
func ParseExecutionIdDerived(s string) (ExecutionIdDerived, error) {
	id, err := ParseExecutionId(s)
	if err != nil {
		return ExecutionIdDerived{}, err
	}
	if id.kind != executionIdKindDerived {
		return ExecutionIdDerived{}, idError(idKindExecutionId, s, idReasonMustBeDerived)
	}
	return ExecutionIdDerived{id}, nil
}

// MarshalText returns the canonical form; it fails unless the id is derived.
func (id ExecutionIdDerived) MarshalText() ([]byte, error) {
	if id.kind != executionIdKindDerived {
		if id.IsZero() {
			return nil, idError(idKindExecutionId, "", idReasonZeroValue)
		}
		return nil, idError(idKindExecutionId, id.String(), idReasonMustBeDerived)
	}
	return []byte(id.String()), nil
}

// UnmarshalText parses the canonical form with ParseExecutionIdDerived.
func (id *ExecutionIdDerived) UnmarshalText(b []byte) error {
	v, err := ParseExecutionIdDerived(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// JoinSetKind is the kind of a join set (docs/spec/semantics.md §1.3).
type JoinSetKind uint8

// Join set kinds. The zero JoinSetKind is invalid.
const (
	// JoinSetKindOneOff ("o") is used for direct calls and sleeps.
	JoinSetKindOneOff JoinSetKind = iota + 1
	// JoinSetKindNamed ("n") carries a user-chosen name.
	JoinSetKindNamed
	// JoinSetKindGenerated ("g") is a join set created without a name.
	JoinSetKindGenerated
)

// Code returns the one-letter code "o", "n" or "g" ("" for an invalid kind).
func (k JoinSetKind) Code() string {
	switch k {
	case JoinSetKindOneOff:
		return "o"
	case JoinSetKindNamed:
		return "n"
	case JoinSetKindGenerated:
		return "g"
	default:
		return ""
	}
}

func joinSetKindFromCode(code string) (JoinSetKind, bool) {
	switch code {
	case "o":
		return JoinSetKindOneOff, true
	case "n":
		return JoinSetKindNamed, true
	case "g":
		return JoinSetKindGenerated, true
	default:
		return 0, false
	}
}

// JoinSetId identifies a join set within its execution: "<kind>:<name>"
// (docs/spec/semantics.md §1.3). Name contains only ASCII letters, digits, '-' and '/', and
// may be empty ("o:" is valid); it never contains '.', '_' or ':', which is
// what keeps derived ids parseable. Build values with NewJoinSetId or
// ParseJoinSetId; MarshalText rejects invalid ones.
type JoinSetId struct {
	Kind JoinSetKind
	Name string
}

// NewJoinSetId validates kind and name.
func NewJoinSetId(kind JoinSetKind, name string) (JoinSetId, error) {
	j := JoinSetId{Kind: kind, Name: name}
	if err := j.validate(); err != nil {
		return JoinSetId{}, err
	}
	return j, nil
}

// ParseJoinSetId parses "<kind code>:<name>", splitting at the first ':'.
func ParseJoinSetId(s string) (JoinSetId, error) {
	if len(s) > MaxJoinSetIdBytes {
		return JoinSetId{}, tooLong(idKindJoinSetId, len(s), MaxJoinSetIdBytes)
	}
	if reason := checkJoinSetId(s); reason != "" {
		return JoinSetId{}, idError(idKindJoinSetId, s, reason)
	}
	code, name, _ := strings.Cut(s, string(joinSetIdInfix))
	kind, _ := joinSetKindFromCode(code)
	return JoinSetId{Kind: kind, Name: name}, nil
}

// checkJoinSetId returns "" if s is a valid join set id, else the reason.
func checkJoinSetId(s string) string {
	code, name, ok := strings.Cut(s, string(joinSetIdInfix))
	if !ok {
		return idReasonMissingColon
	}
	if _, ok := joinSetKindFromCode(code); !ok {
		return idReasonJoinSetKind
	}
	if !validJoinSetName(name) {
		return idReasonJoinSetName
	}
	return ""
}

func validJoinSetName(name string) bool {
	for i := 0; i < len(name); i++ {
		if c := name[i]; !isASCIIAlnum(c) && c != '-' && c != '/' {
			return false
		}
	}
	return true
}

func isASCIIAlnum(c byte) bool {
	return ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

func (j JoinSetId) validate() error {
	if j.Kind.Code() == "" {
		return idError(idKindJoinSetId, j.Name, idReasonJoinSetKind)
	}
	if !validJoinSetName(j.Name) {
		return idError(idKindJoinSetId, j.String(), idReasonJoinSetName)
	}
	return nil
}

// String returns "<kind code>:<name>" ("" for the zero value).
func (j JoinSetId) String() string {
	if j.IsZero() {
		return ""
	}
	return j.Kind.Code() + string(joinSetIdInfix) + j.Name
}

// IsZero reports whether j is the zero value (no kind, empty name).
func (j JoinSetId) IsZero() bool { return j.Kind == 0 && j.Name == "" }

// MarshalText returns the String form; it fails if j is not valid.
func (j JoinSetId) MarshalText() ([]byte, error) {
	if j.IsZero() {
		return nil, idError(idKindJoinSetId, "", idReasonZeroValue)
	}
	if err := j.validate(); err != nil {
		return nil, err
	}
	return []byte(j.String()), nil
}

// UnmarshalText parses the String form with ParseJoinSetId.
func (j *JoinSetId) UnmarshalText(b []byte) error {
	v, err := ParseJoinSetId(string(b))
	if err != nil {
		return err
	}
	*j = v
	return nil
}

// DelayId identifies a delay (timer) requested by an execution (docs/spec/semantics.md §1.4):
// "Delay_<top ULID>.<infix>_<idx>", i.e. the id a first child of the owner
// in the join set would get, with prefix "Delay" and the delay's own index.
// It is parsed with the derived execution id grammar (canonical indexes
// only) and is comparable with ==. The zero value is invalid: String
// returns "" and MarshalText fails.
type DelayId struct {
	top   ulid.ULID
	infix string
	idx   uint64
}

// ParseDelayId parses "Delay_<ULID>.<segment>(.<segment>)*" with the same
// rules and reasons as a derived ParseExecutionId.
func ParseDelayId(s string) (DelayId, error) {
	if len(s) > MaxDelayIdBytes {
		return DelayId{}, tooLong(idKindDelayId, len(s), MaxDelayIdBytes)
	}
	top, infix, idx, err := parseDerivedId(idKindDelayId, prefixDelayId, s)
	if err != nil {
		return DelayId{}, err
	}
	return DelayId{top: top, infix: infix, idx: idx}, nil
}

// NewDelayId returns the id of delay number idx (1-based) requested by owner
// in join set js: owner.NextLevel(js) with prefix "Delay" and index idx.
// E.g. (E_X, g:1, 2) gives Delay_X.g:1_2. It panics under the same
// conditions as NextLevel.
func NewDelayId(owner ExecutionId, js JoinSetId, idx uint64) DelayId {
	next := owner.NextLevel(js)
	return DelayId{top: next.top, infix: next.infix, idx: idx}
}

// String returns the canonical form ("" for the zero value).
func (d DelayId) String() string {
	if d.IsZero() {
		return ""
	}
	return formatDerived(prefixDelayId, d.top, d.infix, d.idx)
}

// IsZero reports whether d is the zero value, which no constructor or
// parser returns.
func (d DelayId) IsZero() bool { return d.infix == "" }

// SplitToParts returns the execution that owns the delay and the delay's
// join set, using the ExecutionId.SplitToParts algorithm with the head
// converted back to an "E_" id: Delay_X.g:1_1.g:1_2 gives (E_X.g:1_1, g:1).
// The zero value gives zero results.
func (d DelayId) SplitToParts() (owner ExecutionId, js JoinSetId) {
	if d.IsZero() {
		return ExecutionId{}, JoinSetId{}
	}
	owner, js, _ = splitDerived(d.top, d.infix)
	return owner, js
}

// MarshalText returns the canonical form; it fails for the zero value.
func (d DelayId) MarshalText() ([]byte, error) {
	if d.IsZero() {
		return nil, idError(idKindDelayId, "", idReasonZeroValue)
	}
	return []byte(d.String()), nil
}

// UnmarshalText parses the canonical form with ParseDelayId.
func (d *DelayId) UnmarshalText(b []byte) error {
	v, err := ParseDelayId(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

const digestPrefix = "sha256:"

// Digest is a SHA-256 hash (docs/spec/semantics.md §1.5). Its text form is
// "sha256:<64 lower-case hex digits>"; parsing also accepts upper-case hex.
// The zero Digest is a valid value (the dummy "sha256:000…0").
type Digest [32]byte

// ParseDigest parses "sha256:<64 hex digits>".
func ParseDigest(s string) (Digest, error) { return parseDigest(idKindDigest, s) }

func parseDigest(kind, s string) (Digest, error) {
	var d Digest
	if !strings.HasPrefix(s, digestPrefix) {
		return d, idError(kind, s, "invalid digest prefix")
	}
	h := s[len(digestPrefix):]
	if len(h) != 2*len(d) {
		return d, idError(kind, s, "invalid digest length")
	}
	if _, err := hex.Decode(d[:], []byte(h)); err != nil {
		return Digest{}, idError(kind, s, idReasonInvalidHex)
	}
	return d, nil
}

// SHA256Digest returns the SHA-256 digest of b.
func SHA256Digest(b []byte) Digest { return Digest(sha256.Sum256(b)) }

// String returns "sha256:<64 lower-case hex digits>".
func (d Digest) String() string {
	buf := make([]byte, len(digestPrefix)+2*len(d))
	copy(buf, digestPrefix)
	hex.Encode(buf[len(digestPrefix):], d[:])
	return string(buf)
}

// IsZero reports whether all bytes are zero.
func (d Digest) IsZero() bool { return d == Digest{} }

// MarshalText returns the String form.
func (d Digest) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText parses the String form with ParseDigest.
func (d *Digest) UnmarshalText(b []byte) error {
	v, err := ParseDigest(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// ComponentDigest identifies a component's content (docs/spec/semantics.md §1.5); text form
// as Digest.
type ComponentDigest struct{ Digest }

// ParseComponentDigest parses "sha256:<64 hex digits>".
func ParseComponentDigest(s string) (ComponentDigest, error) {
	d, err := parseDigest(idKindComponentDigest, s)
	return ComponentDigest{d}, err
}

// MarshalText returns the String form.
func (d ComponentDigest) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText parses the String form with ParseComponentDigest.
func (d *ComponentDigest) UnmarshalText(b []byte) error {
	v, err := ParseComponentDigest(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// ContentDigest is the SHA-256 of arbitrary bytes, e.g. a CAS blob or a
// deployment manifest (docs/spec/semantics.md §1.5); text form as Digest.
type ContentDigest struct{ Digest }

// ParseContentDigest parses "sha256:<64 hex digits>".
func ParseContentDigest(s string) (ContentDigest, error) {
	d, err := parseDigest(idKindContentDigest, s)
	return ContentDigest{d}, err
}

// ContentDigestOf returns the ContentDigest of b (cas::content_digest).
func ContentDigestOf(b []byte) ContentDigest { return ContentDigest{SHA256Digest(b)} }

// MarshalText returns the String form.
func (d ContentDigest) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText parses the String form with ParseContentDigest.
func (d *ContentDigest) UnmarshalText(b []byte) error {
	v, err := ParseContentDigest(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// SuffixFnCancellable marks a workflow export as cancellable (docs/spec/semantics.md §1.6).
const SuffixFnCancellable = "-cancellable"

// FunctionFqn is a fully qualified function name "<ifc_fqn>.<fn>"
// (docs/spec/semantics.md §1.6), e.g. "wasi:cli/run@0.2.0.run". IfcFqn has the form
// "namespace:package/interface[@version]" with non-empty namespace, package,
// interface and (if '@' is present) version; FunctionName is non-empty and
// contains no '.'. Build values with ParseFunctionFqn; MarshalText rejects
// invalid ones.
type FunctionFqn struct {
	IfcFqn       string
	FunctionName string
}

// ParseFunctionFqn splits s at its last '.' into interface and function
// name and validates both.
//
// Obelisk accepts an empty function name ("ns:pkg/ifc."); Stela rejects it
// with Reason "empty function name".
func ParseFunctionFqn(s string) (FunctionFqn, error) {
	if len(s) > MaxFunctionFqnBytes {
		return FunctionFqn{}, tooLong(idKindFunctionFqn, len(s), MaxFunctionFqnBytes)
	}
	dot := strings.LastIndexByte(s, '.')
	if dot < 0 {
		return FunctionFqn{}, idError(idKindFunctionFqn, s, "missing '.'")
	}
	f := FunctionFqn{IfcFqn: s[:dot], FunctionName: s[dot+1:]}
	if reason := f.check(); reason != "" {
		return FunctionFqn{}, idError(idKindFunctionFqn, s, reason)
	}
	return f, nil
}

// check returns "" if f is valid, else the reason.
func (f FunctionFqn) check() string {
	if reason := checkIfcFqn(f.IfcFqn); reason != "" {
		return reason
	}
	if f.FunctionName == "" {
		return "empty function name"
	}
	if strings.IndexByte(f.FunctionName, '.') >= 0 {
		return "'.' in function name"
	}
	return ""
}

// checkIfcFqn validates "namespace:package/interface[@version]" the way
// Obelisk's IfcFqnName::from_str does.
func checkIfcFqn(s string) string {
	namespace, rest, ok := strings.Cut(s, ":")
	if !ok {
		return idReasonMissingColon
	}
	if namespace == "" {
		return "empty namespace"
	}
	pkgAndIfc, version, hasVersion := strings.Cut(rest, "@")
	pkg, ifc, ok := strings.Cut(pkgAndIfc, "/")
	if !ok {
		return "missing '/'"
	}
	if pkg == "" {
		return "empty package name"
	}
	if ifc == "" {
		return "empty interface name"
	}
	if hasVersion && version == "" {
		return "empty version"
	}
	return ""
}

// String returns "<IfcFqn>.<FunctionName>" ("" for the zero value).
func (f FunctionFqn) String() string {
	if f.IsZero() {
		return ""
	}
	return f.IfcFqn + "." + f.FunctionName
}

// IsCancellable reports whether the function name ends with "-cancellable";
// only such workflows can be cancelled.
func (f FunctionFqn) IsCancellable() bool {
	return strings.HasSuffix(f.FunctionName, SuffixFnCancellable)
}

// IsZero reports whether f is the zero value.
func (f FunctionFqn) IsZero() bool { return f.IfcFqn == "" && f.FunctionName == "" }

// MarshalText returns the String form; it fails if f is not valid.
func (f FunctionFqn) MarshalText() ([]byte, error) {
	if f.IsZero() {
		return nil, idError(idKindFunctionFqn, "", idReasonZeroValue)
	}
	if reason := f.check(); reason != "" {
		return nil, idError(idKindFunctionFqn, f.String(), reason)
	}
	return []byte(f.String()), nil
}

// UnmarshalText parses the String form with ParseFunctionFqn.
func (f *FunctionFqn) UnmarshalText(b []byte) error {
	v, err := ParseFunctionFqn(string(b))
	if err != nil {
		return err
	}
	*f = v
	return nil
}

// ComponentType is the kind of a component (docs/spec/semantics.md §1.5), serialized as a
// snake_case string.
type ComponentType string

// Component types.
const (
	ComponentTypeActivity        ComponentType = "activity"
	ComponentTypeActivityStub    ComponentType = "activity_stub"
	ComponentTypeWorkflow        ComponentType = "workflow"
	ComponentTypeWebhookEndpoint ComponentType = "webhook_endpoint"
	ComponentTypeCron            ComponentType = "cron"
)

// IsActivity reports whether t is activity or activity_stub.
func (t ComponentType) IsActivity() bool {
	return t == ComponentTypeActivity || t == ComponentTypeActivityStub
}

// Valid reports whether t is one of the known component types.
func (t ComponentType) Valid() bool {
	switch t {
	case ComponentTypeActivity, ComponentTypeActivityStub, ComponentTypeWorkflow,
		ComponentTypeWebhookEndpoint, ComponentTypeCron:
		return true
	default:
		return false
	}
}

// UnmarshalText accepts only the known component types.
func (t *ComponentType) UnmarshalText(b []byte) error {
	v := ComponentType(b)
	if !v.Valid() {
		return idError(idKindComponentType, string(b), "unknown component type")
	}
	*t = v
	return nil
}

// ComponentId identifies a deployed component (docs/spec/semantics.md §1.5). Unlike the other
// identifiers it is serialized as a JSON object
// {"component_type":…,"name":…,"component_digest":"sha256:…"}.
type ComponentId struct {
	ComponentType   ComponentType   `json:"component_type"`
	Name            string          `json:"name"`
	ComponentDigest ComponentDigest `json:"component_digest"`
}

// String returns "<type>:<name>:<digest>", e.g. "activity:my_name:sha256:…".
func (c ComponentId) String() string {
	return string(c.ComponentType) + ":" + c.Name + ":" + c.ComponentDigest.String()
}

// Validate checks the component type and that Name contains only ASCII
// letters, digits, '_', '.' and '-' (empty names are allowed).
func (c ComponentId) Validate() error {
	if !c.ComponentType.Valid() {
		return idError(idKindComponentId, c.String(), "unknown component type")
	}
	for i := 0; i < len(c.Name); i++ {
		if ch := c.Name[i]; !isASCIIAlnum(ch) && ch != '_' && ch != '.' && ch != '-' {
			return idError(idKindComponentId, c.String(), "invalid component name")
		}
	}
	return nil
}

const stubRetValHashVersion = 1

// StubRetValHash is the hash of a stub's return value, recorded in history
// for determinism checks (docs/spec/semantics.md §2.15): a version byte (0x01) followed by a
// SHA-256. Its text form is 66 lower-case hex digits; parsing also accepts
// upper-case hex.
type StubRetValHash [33]byte

// ParseStubRetValHash parses 66 hex digits (Reason "invalid length" or
// "invalid hex").
func ParseStubRetValHash(s string) (StubRetValHash, error) {
	var h StubRetValHash
	if len(s) != 2*len(h) {
		return h, idError(idKindStubRetValHash, s, "invalid length")
	}
	if _, err := hex.Decode(h[:], []byte(s)); err != nil {
		return StubRetValHash{}, idError(idKindStubRetValHash, s, idReasonInvalidHex)
	}
	return h, nil
}

// StubRetValHashTyped hashes a typed stub return value:
// 0x01 + sha256("T|" + compact JSON of the SupportedFunctionReturnValue).
// The caller must pass the byte-exact serde JSON.
func StubRetValHashTyped(compactReturnValueJSON []byte) StubRetValHash {
	return stubRetValHash("T|", compactReturnValueJSON)
}

// StubRetValHashUntyped hashes an untyped stub return value:
// 0x01 + sha256("U|" + s).
func StubRetValHashUntyped(s string) StubRetValHash {
	return stubRetValHash("U|", []byte(s))
}

func stubRetValHash(tag string, payload []byte) StubRetValHash {
	hasher := sha256.New()
	hasher.Write([]byte(tag))
	hasher.Write(payload)
	var h StubRetValHash
	h[0] = stubRetValHashVersion
	copy(h[1:], hasher.Sum(nil))
	return h
}

// String returns 66 lower-case hex digits.
func (h StubRetValHash) String() string { return hex.EncodeToString(h[:]) }

// MarshalText returns the String form.
func (h StubRetValHash) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// UnmarshalText parses the String form with ParseStubRetValHash.
func (h *StubRetValHash) UnmarshalText(b []byte) error {
	v, err := ParseStubRetValHash(string(b))
	if err != nil {
		return err
	}
	*h = v
	return nil
}
