package core_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/stela-dev/stela/core"
)

const (
	idsULID   = "01KBNHM5FQW81KP5Y3XMNX31K4"
	idsTop    = "E_" + idsULID
	idsDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

// idsCheckErr asserts that err is an *IDError with the given kind and reason
// that also matches ErrInvalidID.
func idsCheckErr(t *testing.T, err error, kind, reason string) {
	t.Helper()
	if err == nil {
		t.Fatalf("err=nil, want %s: %s", kind, reason)
	}
	if !errors.Is(err, core.ErrInvalidID) {
		t.Errorf("errors.Is(%v, ErrInvalidID)=false", err)
	}
	var ie *core.IDError
	if !errors.As(err, &ie) {
		t.Fatalf("errors.As(%v, *IDError)=false", err)
	}
	if ie.Kind != kind || ie.Reason != reason {
		t.Errorf("err kind=%q reason=%q, want kind=%q reason=%q", ie.Kind, ie.Reason, kind, reason)
	}
}

func idsMustExecutionId(t *testing.T, s string) core.ExecutionId {
	t.Helper()
	id, err := core.ParseExecutionId(s)
	if err != nil {
		t.Fatalf("ParseExecutionId(%q): %v", s, err)
	}
	return id
}

func idsMustJoinSetId(t *testing.T, s string) core.JoinSetId {
	t.Helper()
	js, err := core.ParseJoinSetId(s)
	if err != nil {
		t.Fatalf("ParseJoinSetId(%q): %v", s, err)
	}
	return js
}

func TestIDErrorMessage(t *testing.T) {
	err := &core.IDError{Kind: "execution id", Input: "x", Reason: "wrong prefix"}
	if got, want := err.Error(), `invalid execution id "x": wrong prefix`; got != want {
		t.Errorf("Error()=%q, want %q", got, want)
	}
	if !errors.Is(err, core.ErrInvalidID) {
		t.Error("IDError does not unwrap to ErrInvalidID")
	}
}

func TestParsePrefixedUlidIds(t *testing.T) {
	type parser struct {
		name   string
		prefix string
		kind   string
		parse  func(string) (string, error)
	}
	parsers := []parser{
		{"ExecutorId", "Exr", "executor id", func(s string) (string, error) {
			v, err := core.ParseExecutorId(s)
			return v.String(), err
		}},
		{"RunId", "Run", "run id", func(s string) (string, error) {
			v, err := core.ParseRunId(s)
			return v.String(), err
		}},
		{"DeploymentId", "Dep", "deployment id", func(s string) (string, error) {
			v, err := core.ParseDeploymentId(s)
			return v.String(), err
		}},
	}
	for _, p := range parsers {
		t.Run(p.name, func(t *testing.T) {
			tests := []struct {
				in, want, reason string
			}{
				{in: p.prefix + "_" + idsULID, want: p.prefix + "_" + idsULID},
				{in: p.prefix + "_00000000000000000000000000", want: p.prefix + "_00000000000000000000000000"},
				{in: p.prefix + "_7ZZZZZZZZZZZZZZZZZZZZZZZZZ", want: p.prefix + "_7ZZZZZZZZZZZZZZZZZZZZZZZZZ"},
				// Lower-case ULIDs are accepted and re-emitted upper-case.
				{in: p.prefix + "_" + strings.ToLower(idsULID), want: p.prefix + "_" + idsULID},
				{in: "", reason: "wrong prefix"},
				{in: p.prefix, reason: "wrong prefix"},
				{in: p.prefix + idsULID, reason: "wrong prefix"},
				{in: p.prefix + "-" + idsULID, reason: "wrong prefix"},
				{in: strings.ToLower(p.prefix) + "_" + idsULID, reason: "wrong prefix"},
				{in: "X" + p.prefix + "_" + idsULID, reason: "wrong prefix"},
				{in: "E_" + idsULID, reason: "wrong prefix"},
				{in: p.prefix + "_", reason: "cannot parse ulid"},
				{in: p.prefix + "_" + idsULID[:25], reason: "cannot parse ulid"},
				{in: p.prefix + "_" + idsULID + "0", reason: "cannot parse ulid"},
				{in: p.prefix + "_8ZZZZZZZZZZZZZZZZZZZZZZZZZ", reason: "cannot parse ulid"}, // overflow
				{in: p.prefix + "_01KBNHM5FQW81KP5Y3XMNX31KU", reason: "cannot parse ulid"}, // 'U' not Crockford
				{in: p.prefix + "_01KBNHM5FQW81KP5Y3XMNX31K!", reason: "cannot parse ulid"},
				{in: p.prefix + "_ " + idsULID[1:], reason: "cannot parse ulid"},
			}
			for _, tt := range tests {
				got, err := p.parse(tt.in)
				if tt.reason != "" {
					idsCheckErr(t, err, p.kind, tt.reason)
					continue
				}
				if err != nil {
					t.Errorf("parse(%q): %v", tt.in, err)
					continue
				}
				if got != tt.want {
					t.Errorf("parse(%q).String()=%q, want %q", tt.in, got, tt.want)
				}
				if len(got) != 30 {
					t.Errorf("len(%q)=%d, want 30", got, len(got))
				}
			}
		})
	}
}

func TestNewPrefixedUlidIds(t *testing.T) {
	entropy := bytes.Repeat([]byte{0xAB}, 10)
	ms := uint64(1_764_000_000_000)
	exr, err := core.NewExecutorId(ms, bytes.NewReader(entropy))
	if err != nil {
		t.Fatal(err)
	}
	run, err := core.NewRunId(ms, bytes.NewReader(entropy))
	if err != nil {
		t.Fatal(err)
	}
	dep, err := core.NewDeploymentId(ms, bytes.NewReader(entropy))
	if err != nil {
		t.Fatal(err)
	}
	exe, err := core.NewExecutionId(ms, bytes.NewReader(entropy))
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []ulid.ULID{exr.ULID, run.ULID, dep.ULID, exe.ULID()} {
		if u.Time() != ms {
			t.Errorf("Time()=%d, want %d", u.Time(), ms)
		}
		if !bytes.Equal(u.Entropy(), entropy) {
			t.Errorf("Entropy()=%x, want %x", u.Entropy(), entropy)
		}
	}
	if !strings.HasPrefix(exr.String(), "Exr_") || !strings.HasPrefix(run.String(), "Run_") ||
		!strings.HasPrefix(dep.String(), "Dep_") || !strings.HasPrefix(exe.String(), "E_") {
		t.Errorf("prefixes: %s %s %s %s", exr, run, dep, exe)
	}
	if !exe.IsTopLevel() {
		t.Error("NewExecutionId is not top-level")
	}
	if _, err := core.NewExecutorId(ulid.MaxTime()+1, nil); err == nil {
		t.Error("NewExecutorId accepted a timestamp beyond MaxTime")
	}
	if _, err := core.NewExecutionId(ms, bytes.NewReader(nil)); err == nil {
		t.Error("NewExecutionId accepted an empty entropy source")
	}
	// Equality and ordering compare the ULID value.
	a, _ := core.ParseRunId("Run_" + idsULID)
	b, _ := core.ParseRunId("Run_" + strings.ToLower(idsULID))
	if a != b || a.Compare(b.ULID) != 0 {
		t.Errorf("%v != %v", a, b)
	}
}

func TestParseExecutionId(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		want     string // canonical form; "" means in
		topLevel bool
		reason   string
	}{
		{name: "TopLevel", in: idsTop, topLevel: true},
		{name: "TopLevelDummy", in: "E_00000000000000000000000000", topLevel: true},
		{name: "TopLevelLowerCaseULID", in: "E_" + strings.ToLower(idsULID), want: idsTop, topLevel: true},
		{name: "Child", in: idsTop + ".g:1_1"},
		{name: "SecondSibling", in: idsTop + ".g:1_2"},
		{name: "Named", in: idsTop + ".n:name_1"},
		{name: "NextLevelTwice", in: idsTop + ".g:gg_2.o:oo_2"},
		{name: "EmptyJoinSetName", in: idsTop + ".o:_1"},
		{name: "JoinSetNameWithSlashAndDash", in: idsTop + ".n:a-b/c_7"},
		{name: "OneOffSleep", in: idsTop + ".g:1_1.o:2-sleep_1"},
		{name: "IndexZero", in: idsTop + ".g:1_0"},
		{name: "IndexMaxUint64", in: idsTop + ".g:1_18446744073709551615"},
		{name: "ThreeLevels", in: idsTop + ".g:1_10.n:x_3.o:1-fn_12"},

		{name: "Empty", in: "", reason: "wrong prefix"},
		{name: "WrongPrefix", in: "Exr_" + idsULID, reason: "wrong prefix"},
		{name: "DelayPrefix", in: "Delay_" + idsULID + ".g:1_1", reason: "wrong prefix"},
		{name: "BadULID", in: "E_" + idsULID[:25], reason: "cannot parse ulid"},
		{name: "BadULIDDerived", in: "E_8" + idsULID[1:] + ".g:1_1", reason: "cannot parse ulid"},
		{name: "SpecRejected", in: idsTop + ".g:gg._2.o:oo_2", reason: "second delimiter not found"},
		{name: "TrailingDot", in: idsTop + ".", reason: "empty segment"},
		{name: "TrailingDotAfterSegment", in: idsTop + ".g:1_1.", reason: "empty segment"},
		{name: "DoubleDot", in: idsTop + "..g:1_1", reason: "empty segment"},
		{name: "NoUnderscore", in: idsTop + ".g:1", reason: "second delimiter not found"},
		{name: "MissingColon", in: idsTop + ".g1_1", reason: "missing ':'"},
		{name: "UnknownKind", in: idsTop + ".x:1_1", reason: "invalid join set kind"},
		{name: "UpperCaseKind", in: idsTop + ".G:1_1", reason: "invalid join set kind"},
		{name: "EmptyKind", in: idsTop + ".:1_1", reason: "invalid join set kind"},
		{name: "ColonInName", in: idsTop + ".n:a:b_1", reason: "invalid join set name"},
		{name: "SpaceInName", in: idsTop + ".n:a b_1", reason: "invalid join set name"},
		{name: "NonASCIIName", in: idsTop + ".n:é_1", reason: "invalid join set name"},
		{name: "EmptyIndex", in: idsTop + ".g:1_", reason: "invalid index"},
		{name: "PlusIndex", in: idsTop + ".g:1_+5", reason: "invalid index"},
		{name: "MinusIndex", in: idsTop + ".g:1_-5", reason: "invalid index"},
		{name: "LeadingZeroIndex", in: idsTop + ".g:1_01", reason: "invalid index"},
		{name: "LeadingZeroIntermediateIndex", in: idsTop + ".g:1_01.o:a_1", reason: "invalid index"},
		{name: "PlusIntermediateIndex", in: idsTop + ".g:1_+1.o:a_1", reason: "invalid index"},
		{name: "IndexOverflow", in: idsTop + ".g:1_18446744073709551616", reason: "invalid index"},
		{name: "IndexWithUnderscore", in: idsTop + ".g:1_1_2", reason: "invalid index"},
		{name: "HexIndex", in: idsTop + ".g:1_0x1", reason: "invalid index"},
		{name: "SpaceIndex", in: idsTop + ".g:1_ 1", reason: "invalid index"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := core.ParseExecutionId(tt.in)
			if tt.reason != "" {
				idsCheckErr(t, err, "execution id", tt.reason)
				return
			}
			if err != nil {
				t.Fatalf("ParseExecutionId(%q): %v", tt.in, err)
			}
			want := tt.want
			if want == "" {
				want = tt.in
			}
			if got := id.String(); got != want {
				t.Errorf("String()=%q, want %q", got, want)
			}
			if id.IsTopLevel() != tt.topLevel {
				t.Errorf("IsTopLevel()=%v, want %v", id.IsTopLevel(), tt.topLevel)
			}
			if id.IsZero() {
				t.Error("IsZero()=true for a parsed id")
			}
			if again := idsMustExecutionId(t, id.String()); again != id {
				t.Errorf("re-parse: %v != %v", again, id)
			}
			if got := id.TopLevel().String(); got != want[:len(idsTop)] {
				t.Errorf("TopLevel()=%q, want %q", got, want[:len(idsTop)])
			}
			if !id.TopLevel().IsTopLevel() || id.TopLevel().ULID() != id.ULID() {
				t.Errorf("TopLevel() of %v is %v", id, id.TopLevel())
			}
			_, err = core.ParseExecutionIdDerived(tt.in)
			if tt.topLevel {
				idsCheckErr(t, err, "execution id", "must be a derived execution id")
			} else if err != nil {
				t.Errorf("ParseExecutionIdDerived(%q): %v", tt.in, err)
			}
		})
	}
}

func TestExecutionIdNextLevelAndIncremented(t *testing.T) {
	top := idsMustExecutionId(t, idsTop)
	gg := idsMustJoinSetId(t, "g:gg")
	oo := idsMustJoinSetId(t, "o:oo")
	n, err := core.NewJoinSetId(core.JoinSetKindNamed, "name")
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		got  core.ExecutionId
		want string
	}{
		{top.NextLevel(n), idsTop + ".n:name_1"},
		{top.NextLevel(n).Incremented(), idsTop + ".n:name_2"},
		{top.NextLevel(gg).Incremented().NextLevel(oo), idsTop + ".g:gg_2.o:oo_1"},
		{top.NextLevel(gg).Incremented().NextLevel(oo).Incremented(), idsTop + ".g:gg_2.o:oo_2"},
		{top.NextLevel(core.JoinSetId{Kind: core.JoinSetKindOneOff}), idsTop + ".o:_1"},
		{idsMustExecutionId(t, idsTop+".g:1_9").Incremented(), idsTop + ".g:1_10"},
	}
	for _, tt := range tests {
		if got := tt.got.String(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
		if parsed := idsMustExecutionId(t, tt.want); parsed != tt.got {
			t.Errorf("ParseExecutionId(%q)=%#v, want %#v (structural equality)", tt.want, parsed, tt.got)
		}
		if tt.got.IsTopLevel() {
			t.Errorf("%v is top-level", tt.got)
		}
	}

	idsMustPanic(t, "IncrementedTopLevel", func() { top.Incremented() })
	idsMustPanic(t, "NextLevelZero", func() { core.ExecutionId{}.NextLevel(gg) })
	idsMustPanic(t, "NextLevelInvalidJoinSet", func() { top.NextLevel(core.JoinSetId{Kind: core.JoinSetKindNamed, Name: "a.b"}) })
	idsMustPanic(t, "NextLevelZeroJoinSet", func() { top.NextLevel(core.JoinSetId{}) })
	idsMustPanic(t, "IncrementedOverflow", func() {
		idsMustExecutionId(t, idsTop+".g:1_18446744073709551615").Incremented()
	})
}

func idsMustPanic(t *testing.T, name string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s: did not panic", name)
		}
	}()
	f()
}

func TestExecutionIdSplitToParts(t *testing.T) {
	tests := []struct {
		in, parent, js string
	}{
		{idsTop + ".g:1_3", idsTop, "g:1"},
		{idsTop + ".g:gg_2.o:oo_5", idsTop + ".g:gg_2", "o:oo"},
		{idsTop + ".o:_1", idsTop, "o:"},
		{idsTop + ".g:1_10.n:x_3.o:1-fn_12", idsTop + ".g:1_10.n:x_3", "o:1-fn"},
		{idsTop + ".g:some_0.g:other_1", idsTop + ".g:some_0", "g:other"},
	}
	for _, tt := range tests {
		id := idsMustExecutionId(t, tt.in)
		parent, js, ok := id.SplitToParts()
		if !ok {
			t.Errorf("SplitToParts(%q): ok=false", tt.in)
			continue
		}
		if parent.String() != tt.parent || js.String() != tt.js {
			t.Errorf("SplitToParts(%q)=(%q, %q), want (%q, %q)", tt.in, parent, js, tt.parent, tt.js)
		}
		if want := idsMustExecutionId(t, tt.parent); parent != want {
			t.Errorf("parent %#v != parsed %#v", parent, want)
		}
		// The split is the inverse of NextLevel (up to the last index).
		if first := parent.NextLevel(js).String(); !strings.HasPrefix(tt.in, strings.TrimSuffix(first, "1")) {
			t.Errorf("NextLevel(%q, %q)=%q is not a sibling of %q", parent, js, first, tt.in)
		}
	}
	for _, in := range []string{idsTop, "E_00000000000000000000000000"} {
		if _, _, ok := idsMustExecutionId(t, in).SplitToParts(); ok {
			t.Errorf("SplitToParts(%q): ok=true for a top-level id", in)
		}
	}
	if _, _, ok := (core.ExecutionId{}).SplitToParts(); ok {
		t.Error("SplitToParts of the zero value: ok=true")
	}
}

func TestExecutionIdZeroValue(t *testing.T) {
	var zero core.ExecutionId
	if !zero.IsZero() || zero.IsTopLevel() || zero.String() != "" || !zero.TopLevel().IsZero() {
		t.Errorf("zero value: IsZero=%v IsTopLevel=%v String=%q", zero.IsZero(), zero.IsTopLevel(), zero.String())
	}
	if _, err := zero.MarshalText(); err == nil {
		t.Error("MarshalText of the zero ExecutionId succeeded")
	} else {
		idsCheckErr(t, err, "execution id", "zero value")
	}
	dummy := core.ExecutionIdFromULID(ulid.ULID{})
	if dummy.IsZero() || dummy.String() != "E_00000000000000000000000000" {
		t.Errorf("dummy: IsZero=%v String=%q", dummy.IsZero(), dummy.String())
	}
	if _, err := json.Marshal(struct{ ID core.ExecutionId }{}); err == nil {
		t.Error("json.Marshal of a zero ExecutionId succeeded")
	}
	var id core.ExecutionId
	if err := json.Unmarshal([]byte(`""`), &id); err == nil {
		t.Error(`json.Unmarshal("") into ExecutionId succeeded`)
	}
}

func TestExecutionIdCompare(t *testing.T) {
	ids := []string{
		idsTop,
		idsTop + ".g:1_1",
		idsTop + ".g:1_10",
		idsTop + ".g:1_2",
	}
	for i := range ids {
		for j := range ids {
			a, b := idsMustExecutionId(t, ids[i]), idsMustExecutionId(t, ids[j])
			if got, want := a.Compare(b), strings.Compare(ids[i], ids[j]); got != want {
				t.Errorf("Compare(%q, %q)=%d, want %d", ids[i], ids[j], got, want)
			}
		}
	}
}

func TestExecutionIdDeterministicAtUnixEpoch(t *testing.T) {
	var h [32]byte
	for i := range h {
		h[i] = byte(0xF0 + i%16)
	}
	id := core.ExecutionIdDeterministicAtUnixEpoch(h)
	if !id.IsTopLevel() {
		t.Fatalf("%v is not top-level", id)
	}
	ts := id.ULID().Timestamp().UTC()
	if ts.Year() != 1970 {
		t.Errorf("timestamp %v is not in 1970", ts)
	}
	if got, want := id.ULID().Time(), uint64(0xF0F1F2F3); got != want {
		t.Errorf("Time()=%#x, want %#x", got, want)
	}
	if got, want := id.ULID().Entropy(), h[4:14]; !bytes.Equal(got, want) {
		t.Errorf("Entropy()=%x, want %x", got, want)
	}
	if again := core.ExecutionIdDeterministicAtUnixEpoch(h); again != id {
		t.Errorf("not deterministic: %v != %v", again, id)
	}
	if idsMustExecutionId(t, id.String()) != id {
		t.Errorf("%v does not round-trip", id)
	}
	max := core.ExecutionIdDeterministicAtUnixEpoch([32]byte{0xFF, 0xFF, 0xFF, 0xFF})
	if ts := max.ULID().Timestamp(); !ts.Before(time.Date(1971, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("max timestamp %v is not in 1970", ts)
	}
	zero := core.ExecutionIdDeterministicAtUnixEpoch([32]byte{})
	if zero.String() != "E_00000000000000000000000000" {
		t.Errorf("zero hash gives %v", zero)
	}
}

func TestParseJoinSetId(t *testing.T) {
	tests := []struct {
		in     string
		kind   core.JoinSetKind
		name   string
		reason string
	}{
		{in: "o:", kind: core.JoinSetKindOneOff, name: ""},
		{in: "g:1", kind: core.JoinSetKindGenerated, name: "1"},
		{in: "o:1-sleep", kind: core.JoinSetKindOneOff, name: "1-sleep"},
		{in: "n:session-events", kind: core.JoinSetKindNamed, name: "session-events"},
		{in: "n:a/B/9-z", kind: core.JoinSetKindNamed, name: "a/B/9-z"},
		{in: "", reason: "missing ':'"},
		{in: "g1", reason: "missing ':'"},
		{in: ":x", reason: "invalid join set kind"},
		{in: "x:1", reason: "invalid join set kind"},
		{in: "gg:1", reason: "invalid join set kind"},
		{in: "O:1", reason: "invalid join set kind"},
		{in: "n:a.b", reason: "invalid join set name"},
		{in: "n:a_b", reason: "invalid join set name"},
		{in: "n:a:b", reason: "invalid join set name"},
		{in: "n::", reason: "invalid join set name"},
		{in: "n:a b", reason: "invalid join set name"},
		{in: "n:ä", reason: "invalid join set name"},
		{in: "n:a\x00", reason: "invalid join set name"},
	}
	for _, tt := range tests {
		js, err := core.ParseJoinSetId(tt.in)
		if tt.reason != "" {
			idsCheckErr(t, err, "join set id", tt.reason)
			continue
		}
		if err != nil {
			t.Errorf("ParseJoinSetId(%q): %v", tt.in, err)
			continue
		}
		if js.Kind != tt.kind || js.Name != tt.name {
			t.Errorf("ParseJoinSetId(%q)=%+v, want {%v %q}", tt.in, js, tt.kind, tt.name)
		}
		if js.String() != tt.in || js.IsZero() {
			t.Errorf("String()=%q IsZero=%v, want %q", js.String(), js.IsZero(), tt.in)
		}
		nj, err := core.NewJoinSetId(tt.kind, tt.name)
		if err != nil || nj != js {
			t.Errorf("NewJoinSetId(%v, %q)=%+v, %v; want %+v", tt.kind, tt.name, nj, err, js)
		}
	}
}

func TestNewJoinSetIdRejects(t *testing.T) {
	_, err := core.NewJoinSetId(0, "a")
	idsCheckErr(t, err, "join set id", "invalid join set kind")
	_, err = core.NewJoinSetId(4, "a")
	idsCheckErr(t, err, "join set id", "invalid join set kind")
	for _, name := range []string{"a.b", "a_b", "a:b", " "} {
		_, err = core.NewJoinSetId(core.JoinSetKindNamed, name)
		idsCheckErr(t, err, "join set id", "invalid join set name")
	}
	if got := []string{core.JoinSetKindOneOff.Code(), core.JoinSetKindNamed.Code(),
		core.JoinSetKindGenerated.Code(), core.JoinSetKind(0).Code()}; strings.Join(got, ",") != "o,n,g," {
		t.Errorf("codes=%q", got)
	}
	var zero core.JoinSetId
	if !zero.IsZero() || zero.String() != "" {
		t.Errorf("zero JoinSetId: IsZero=%v String=%q", zero.IsZero(), zero.String())
	}
	if _, err := zero.MarshalText(); err == nil {
		t.Error("MarshalText of the zero JoinSetId succeeded")
	}
	if _, err := (core.JoinSetId{Kind: core.JoinSetKindNamed, Name: "a.b"}).MarshalText(); err == nil {
		t.Error("MarshalText of an invalid JoinSetId succeeded")
	}
}

func TestDelayId(t *testing.T) {
	top := idsMustExecutionId(t, idsTop)
	g1 := idsMustJoinSetId(t, "g:1")
	sleep := idsMustJoinSetId(t, "o:2-sleep")
	derived := idsMustExecutionId(t, idsTop+".g:1_1")
	tests := []struct {
		got  core.DelayId
		want string
	}{
		{core.NewDelayId(top, g1, 1), "Delay_" + idsULID + ".g:1_1"},
		{core.NewDelayId(top, g1, 2), "Delay_" + idsULID + ".g:1_2"},
		{core.NewDelayId(derived, sleep, 1), "Delay_" + idsULID + ".g:1_1.o:2-sleep_1"},
		{core.NewDelayId(core.ExecutionIdFromULID(ulid.ULID{}), g1, 2), "Delay_00000000000000000000000000.g:1_2"},
	}
	for _, tt := range tests {
		if got := tt.got.String(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
		parsed, err := core.ParseDelayId(tt.want)
		if err != nil {
			t.Errorf("ParseDelayId(%q): %v", tt.want, err)
		} else if parsed != tt.got {
			t.Errorf("ParseDelayId(%q)=%#v, want %#v", tt.want, parsed, tt.got)
		}
	}

	splits := []struct{ in, owner, js string }{
		{"Delay_" + idsULID + ".g:1_1.g:1_2", idsTop + ".g:1_1", "g:1"},
		{"Delay_" + idsULID + ".g:1_1", idsTop, "g:1"},
		{"Delay_" + idsULID + ".g:1_1.o:2-sleep_1", idsTop + ".g:1_1", "o:2-sleep"},
		{"Delay_" + idsULID + ".o:_3", idsTop, "o:"},
	}
	for _, tt := range splits {
		d, err := core.ParseDelayId(tt.in)
		if err != nil {
			t.Errorf("ParseDelayId(%q): %v", tt.in, err)
			continue
		}
		if d.String() != tt.in || d.IsZero() {
			t.Errorf("String()=%q IsZero=%v, want %q", d.String(), d.IsZero(), tt.in)
		}
		owner, js := d.SplitToParts()
		if owner.String() != tt.owner || js.String() != tt.js {
			t.Errorf("SplitToParts(%q)=(%q, %q), want (%q, %q)", tt.in, owner, js, tt.owner, tt.js)
		}
		if owner != idsMustExecutionId(t, tt.owner) {
			t.Errorf("owner %#v is not structurally equal to the parsed id", owner)
		}
	}

	rejects := []struct{ in, reason string }{
		{"", "first delimiter not found"},
		{"Delay_" + idsULID, "first delimiter not found"},
		{idsTop + ".g:1_1", "wrong prefix"},
		{"delay_" + idsULID + ".g:1_1", "wrong prefix"},
		{"Delay_" + idsULID[:25] + ".g:1_1", "cannot parse ulid"},
		{"Delay_" + idsULID + ".", "empty segment"},
		{"Delay_" + idsULID + ".g:1", "second delimiter not found"},
		{"Delay_" + idsULID + ".g:gg._2.o:oo_2", "second delimiter not found"},
		{"Delay_" + idsULID + ".g:1_+1", "invalid index"},
		{"Delay_" + idsULID + ".g:1_01", "invalid index"},
		{"Delay_" + idsULID + ".z:1_1", "invalid join set kind"},
		{"Delay_" + idsULID + ".n:a:b_1", "invalid join set name"},
		{"Delay_" + idsULID + ".g1_1", "missing ':'"},
	}
	for _, tt := range rejects {
		_, err := core.ParseDelayId(tt.in)
		idsCheckErr(t, err, "delay id", tt.reason)
	}

	var zero core.DelayId
	if !zero.IsZero() || zero.String() != "" {
		t.Errorf("zero DelayId: IsZero=%v String=%q", zero.IsZero(), zero.String())
	}
	if o, js := zero.SplitToParts(); !o.IsZero() || !js.IsZero() {
		t.Errorf("zero DelayId SplitToParts=(%v, %v)", o, js)
	}
	if _, err := zero.MarshalText(); err == nil {
		t.Error("MarshalText of the zero DelayId succeeded")
	}
}

func TestParseDigest(t *testing.T) {
	upper := "sha256:" + strings.ToUpper(idsDigest[len("sha256:"):])
	tests := []struct {
		in, want, reason string
	}{
		{in: idsDigest, want: idsDigest},
		{in: upper, want: idsDigest},
		{in: "sha256:" + strings.Repeat("0", 64), want: "sha256:" + strings.Repeat("0", 64)},
		{in: "", reason: "invalid digest prefix"},
		{in: idsDigest[len("sha256:"):], reason: "invalid digest prefix"},
		{in: "SHA256:" + idsDigest[len("sha256:"):], reason: "invalid digest prefix"},
		{in: "sha512:" + idsDigest[len("sha256:"):], reason: "invalid digest prefix"},
		{in: "sha256", reason: "invalid digest prefix"},
		{in: "sha256:", reason: "invalid digest length"},
		{in: idsDigest[:len(idsDigest)-1], reason: "invalid digest length"},
		{in: idsDigest + "0", reason: "invalid digest length"},
		{in: idsDigest[:len(idsDigest)-1] + "g", reason: "invalid hex"},
		{in: "sha256:+f" + idsDigest[len("sha256:")+2:], reason: "invalid hex"},
		{in: "sha256: " + idsDigest[len("sha256:")+1:], reason: "invalid hex"},
	}
	for _, tt := range tests {
		d, err := core.ParseDigest(tt.in)
		cd, cerr := core.ParseComponentDigest(tt.in)
		xd, xerr := core.ParseContentDigest(tt.in)
		if tt.reason != "" {
			idsCheckErr(t, err, "digest", tt.reason)
			idsCheckErr(t, cerr, "component digest", tt.reason)
			idsCheckErr(t, xerr, "content digest", tt.reason)
			continue
		}
		if err != nil || cerr != nil || xerr != nil {
			t.Errorf("parse(%q): %v %v %v", tt.in, err, cerr, xerr)
			continue
		}
		for _, got := range []string{d.String(), cd.String(), xd.String()} {
			if got != tt.want {
				t.Errorf("parse(%q).String()=%q, want %q", tt.in, got, tt.want)
			}
		}
		if cd.Digest != d || xd.Digest != d {
			t.Errorf("wrappers differ: %v %v %v", d, cd, xd)
		}
	}

	// sha256("") is well known.
	const emptySHA = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	if got := core.SHA256Digest(nil).String(); got != emptySHA {
		t.Errorf("SHA256Digest(nil)=%s", got)
	}
	if got := core.ContentDigestOf([]byte{}).String(); got != emptySHA {
		t.Errorf("ContentDigestOf(empty)=%s", got)
	}
	if got := len(core.ContentDigestOf([]byte("x")).String()); got != 71 {
		t.Errorf("len(content digest)=%d, want 71", got)
	}
	if !(core.Digest{}).IsZero() || core.SHA256Digest(nil).IsZero() {
		t.Error("Digest.IsZero is wrong")
	}
}

func TestParseFunctionFqn(t *testing.T) {
	tests := []struct {
		in, ifc, fn, reason string
	}{
		{in: "wasi:cli/run@0.2.0.run", ifc: "wasi:cli/run@0.2.0", fn: "run"},
		{in: "ns:pkg/ifc.fn", ifc: "ns:pkg/ifc", fn: "fn"},
		{in: "testing:fibo-workflow/workflow.fibow-cancellable", ifc: "testing:fibo-workflow/workflow", fn: "fibow-cancellable"},
		{in: "ns:pkg-obelisk-ext/ifc.fn-submit", ifc: "ns:pkg-obelisk-ext/ifc", fn: "fn-submit"},
		{in: "ns:pkg/a/b.fn", ifc: "ns:pkg/a/b", fn: "fn"},
		{in: "ns:pkg/ifc@1.0.0-rc.1.fn", ifc: "ns:pkg/ifc@1.0.0-rc.1", fn: "fn"},
		{in: "", reason: "missing '.'"},
		{in: "ns:pkg/ifc", reason: "missing '.'"},
		{in: "nspkg/ifc.fn", reason: "missing ':'"},
		{in: ":pkg/ifc.fn", reason: "empty namespace"},
		{in: "ns:pkgifc.fn", reason: "missing '/'"},
		{in: "ns:/ifc.fn", reason: "empty package name"},
		{in: "ns:pkg/.fn", reason: "empty interface name"},
		{in: "ns:pkg/@1.fn", reason: "empty interface name"},
		{in: "ns:pkg/ifc@.fn", reason: "empty version"},
		{in: "ns:pkg/ifc.", reason: "empty function name"},
		{in: ".fn", reason: "missing ':'"},
	}
	for _, tt := range tests {
		f, err := core.ParseFunctionFqn(tt.in)
		if tt.reason != "" {
			idsCheckErr(t, err, "function fqn", tt.reason)
			continue
		}
		if err != nil {
			t.Errorf("ParseFunctionFqn(%q): %v", tt.in, err)
			continue
		}
		if f.IfcFqn != tt.ifc || f.FunctionName != tt.fn {
			t.Errorf("ParseFunctionFqn(%q)=%+v, want {%q %q}", tt.in, f, tt.ifc, tt.fn)
		}
		if f.String() != tt.in || f.IsZero() {
			t.Errorf("String()=%q IsZero=%v, want %q", f.String(), f.IsZero(), tt.in)
		}
		if got, want := f.IsCancellable(), strings.HasSuffix(tt.fn, "-cancellable"); got != want {
			t.Errorf("IsCancellable(%q)=%v, want %v", tt.in, got, want)
		}
	}
	var zero core.FunctionFqn
	if !zero.IsZero() || zero.String() != "" {
		t.Errorf("zero FunctionFqn: IsZero=%v String=%q", zero.IsZero(), zero.String())
	}
	if _, err := zero.MarshalText(); err == nil {
		t.Error("MarshalText of the zero FunctionFqn succeeded")
	}
	if _, err := (core.FunctionFqn{IfcFqn: "ns:pkg/ifc", FunctionName: "a.b"}).MarshalText(); err == nil {
		t.Error("MarshalText of a FunctionFqn with '.' in the function name succeeded")
	}
}

func TestComponentTypeAndId(t *testing.T) {
	for _, ct := range []core.ComponentType{core.ComponentTypeActivity, core.ComponentTypeActivityStub,
		core.ComponentTypeWorkflow, core.ComponentTypeWebhookEndpoint, core.ComponentTypeCron} {
		if !ct.Valid() {
			t.Errorf("%q not Valid", ct)
		}
		want := ct == "activity" || ct == "activity_stub"
		if ct.IsActivity() != want {
			t.Errorf("%q.IsActivity()=%v", ct, ct.IsActivity())
		}
		var got core.ComponentType
		if err := json.Unmarshal([]byte(`"`+string(ct)+`"`), &got); err != nil || got != ct {
			t.Errorf("unmarshal %q: %v, %q", ct, err, got)
		}
	}
	for _, bad := range []string{"", "Activity", "activity_wasm", "webhook-endpoint"} {
		var got core.ComponentType
		err := json.Unmarshal([]byte(`"`+bad+`"`), &got)
		if err == nil {
			t.Errorf("unmarshal %q succeeded", bad)
		} else if !errors.Is(err, core.ErrInvalidID) {
			t.Errorf("unmarshal %q: %v does not wrap ErrInvalidID", bad, err)
		}
	}

	digest, _ := core.ParseComponentDigest(idsDigest)
	c := core.ComponentId{ComponentType: core.ComponentTypeActivity, Name: "my_name", ComponentDigest: digest}
	if got, want := c.String(), "activity:my_name:"+idsDigest; got != want {
		t.Errorf("String()=%q, want %q", got, want)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"component_type":"activity","name":"my_name","component_digest":"` + idsDigest + `"}`; string(b) != want {
		t.Errorf("json=%s, want %s", b, want)
	}
	var back core.ComponentId
	if err := json.Unmarshal(b, &back); err != nil || back != c {
		t.Errorf("decode: %v, %+v", err, back)
	}
	dummy := `{"component_type":"activity","name":"","component_digest":"sha256:` + strings.Repeat("0", 64) + `"}`
	if err := json.Unmarshal([]byte(dummy), &back); err != nil || back.Validate() != nil || !back.ComponentDigest.IsZero() {
		t.Errorf("dummy: %v %+v", err, back)
	}

	for _, name := range []string{"", "a", "my_name", "a.b-c_D9"} {
		if err := (core.ComponentId{ComponentType: core.ComponentTypeWorkflow, Name: name}).Validate(); err != nil {
			t.Errorf("Validate(%q): %v", name, err)
		}
	}
	for _, name := range []string{"a b", "a/b", "a:b", "é"} {
		err := (core.ComponentId{ComponentType: core.ComponentTypeWorkflow, Name: name}).Validate()
		idsCheckErr(t, err, "component id", "invalid component name")
	}
	err = (core.ComponentId{ComponentType: "bogus", Name: "a"}).Validate()
	idsCheckErr(t, err, "component id", "unknown component type")
}

func TestStubRetValHash(t *testing.T) {
	h := core.StubRetValHashUntyped("test value")
	s := h.String()
	if len(s) != 66 || !strings.HasPrefix(s, "01") || s != strings.ToLower(s) {
		t.Errorf("String()=%q", s)
	}
	// 0x01 + sha256("U|test value").
	want := "01" + core.SHA256Digest([]byte("U|test value")).String()[len("sha256:"):]
	if s != want {
		t.Errorf("String()=%q, want %q", s, want)
	}
	back, err := core.ParseStubRetValHash(s)
	if err != nil || back != h {
		t.Errorf("ParseStubRetValHash(%q)=%v, %v", s, back, err)
	}
	if up, err := core.ParseStubRetValHash(strings.ToUpper(s)); err != nil || up != h {
		t.Errorf("upper-case parse: %v, %v", up, err)
	}

	typed := core.StubRetValHashTyped([]byte(`{"ok":null}`))
	if want := "01" + core.SHA256Digest([]byte(`T|{"ok":null}`)).String()[len("sha256:"):]; typed.String() != want {
		t.Errorf("typed=%s, want %s", typed, want)
	}
	if typed == core.StubRetValHashUntyped(`{"ok":null}`) {
		t.Error("typed and untyped hashes of the same bytes collide")
	}

	rejects := []struct{ in, reason string }{
		{"", "invalid length"},
		{s[:65], "invalid length"},
		{s + "0", "invalid length"},
		{"sha256:" + s[:59], "invalid hex"},
		{s[:64] + "zz", "invalid hex"},
		{"+f" + s[2:], "invalid hex"},
	}
	for _, tt := range rejects {
		_, err := core.ParseStubRetValHash(tt.in)
		idsCheckErr(t, err, "stub retval hash", tt.reason)
	}
}

// TestIDsJSONRoundTrip checks that every identifier is a plain JSON string
// inside a struct, and decodes back to an equal value.
func TestIDsJSONRoundTrip(t *testing.T) {
	type holder struct {
		Executor   core.ExecutorId         `json:"executor"`
		Run        core.RunId              `json:"run"`
		Deployment core.DeploymentId       `json:"deployment"`
		Top        core.ExecutionId        `json:"top"`
		Child      core.ExecutionId        `json:"child"`
		Derived    core.ExecutionIdDerived `json:"derived"`
		JoinSet    core.JoinSetId          `json:"join_set"`
		Delay      core.DelayId            `json:"delay"`
		Digest     core.Digest             `json:"digest"`
		Component  core.ComponentDigest    `json:"component"`
		Content    core.ContentDigest      `json:"content"`
		Ffqn       core.FunctionFqn        `json:"ffqn"`
		Type       core.ComponentType      `json:"type"`
		Stub       core.StubRetValHash     `json:"stub"`
		OptChild   *core.ExecutionId       `json:"opt_child"`
	}
	exr, _ := core.ParseExecutorId("Exr_01KBNJ2T3D8W7H3X6Q4M9R5V1A")
	run, _ := core.ParseRunId("Run_01KBNJ2V0P6C4Y8N2B7K3T5W9E")
	dep, _ := core.ParseDeploymentId("Dep_01KBNHQ0ZC2X9B8M1V7N6T4R3S")
	child := idsMustExecutionId(t, idsTop+".g:gg_2.o:oo_2")
	derived, err := core.ParseExecutionIdDerived(idsTop + ".n:name_1")
	if err != nil {
		t.Fatal(err)
	}
	delay, _ := core.ParseDelayId("Delay_" + idsULID + ".g:1_1.o:2-sleep_1")
	digest, _ := core.ParseDigest(idsDigest)
	ffqn, _ := core.ParseFunctionFqn("wasi:cli/run@0.2.0.run")
	in := holder{
		Executor:   exr,
		Run:        run,
		Deployment: dep,
		Top:        idsMustExecutionId(t, idsTop),
		Child:      child,
		Derived:    derived,
		JoinSet:    idsMustJoinSetId(t, "o:"),
		Delay:      delay,
		Digest:     digest,
		Component:  core.ComponentDigest{Digest: digest},
		Content:    core.ContentDigestOf([]byte("hello")),
		Ffqn:       ffqn,
		Type:       core.ComponentTypeWebhookEndpoint,
		Stub:       core.StubRetValHashUntyped("test value"),
		OptChild:   &child,
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"executor":"Exr_01KBNJ2T3D8W7H3X6Q4M9R5V1A","run":"Run_01KBNJ2V0P6C4Y8N2B7K3T5W9E",` +
		`"deployment":"Dep_01KBNHQ0ZC2X9B8M1V7N6T4R3S","top":"` + idsTop + `",` +
		`"child":"` + idsTop + `.g:gg_2.o:oo_2","derived":"` + idsTop + `.n:name_1","join_set":"o:",` +
		`"delay":"Delay_` + idsULID + `.g:1_1.o:2-sleep_1","digest":"` + idsDigest + `",` +
		`"component":"` + idsDigest + `","content":"` + core.ContentDigestOf([]byte("hello")).String() + `",` +
		`"ffqn":"wasi:cli/run@0.2.0.run","type":"webhook_endpoint",` +
		`"stub":"` + core.StubRetValHashUntyped("test value").String() + `",` +
		`"opt_child":"` + idsTop + `.g:gg_2.o:oo_2"}`
	if string(b) != want {
		t.Errorf("json=\n%s\nwant\n%s", b, want)
	}
	var out holder
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out.OptChild == nil || *out.OptChild != *in.OptChild {
		t.Errorf("OptChild=%v, want %v", out.OptChild, in.OptChild)
	}
	out.OptChild, in.OptChild = nil, nil
	if out != in {
		t.Errorf("decoded\n%+v\nwant\n%+v", out, in)
	}

	// Each field rejects invalid text with an error wrapping ErrInvalidID.
	bad := map[string]string{
		"executor": `"Run_01KBNJ2V0P6C4Y8N2B7K3T5W9E"`,
		"run":      `"Run_"`,
		"top":      `"E_x"`,
		"derived":  `"` + idsTop + `"`,
		"join_set": `"n:a.b"`,
		"delay":    `"` + idsTop + `.g:1_1"`,
		"digest":   `"sha256:00"`,
		"content":  `"md5:00"`,
		"ffqn":     `"nope"`,
		"stub":     `"01"`,
	}
	for field, val := range bad {
		var h holder
		err := json.Unmarshal([]byte(`{"`+field+`":`+val+`}`), &h)
		if err == nil {
			t.Errorf("%s=%s decoded without error", field, val)
		} else if !errors.Is(err, core.ErrInvalidID) {
			t.Errorf("%s=%s: %v does not wrap ErrInvalidID", field, val, err)
		}
	}

	// A top-level id is not a valid ExecutionIdDerived.
	if _, err := (core.ExecutionIdDerived{ExecutionId: idsMustExecutionId(t, idsTop)}).MarshalText(); err == nil {
		t.Error("MarshalText of a top-level ExecutionIdDerived succeeded")
	}
}

// TestContentDigestJSONField checks that decoding works through the
// wrapper's own UnmarshalText on a struct field.
func TestContentDigestJSONField(t *testing.T) {
	var v struct {
		D core.ContentDigest   `json:"d"`
		C core.ComponentDigest `json:"c"`
	}
	up := "sha256:" + strings.ToUpper(idsDigest[len("sha256:"):])
	if err := json.Unmarshal([]byte(`{"d":"`+up+`","c":"`+up+`"}`), &v); err != nil {
		t.Fatal(err)
	}
	if v.D.String() != idsDigest || v.C.String() != idsDigest {
		t.Errorf("decoded %v %v", v.D, v.C)
	}
	err := json.Unmarshal([]byte(`{"d":"sha256:zz"}`), &v)
	idsCheckErrWrapped(t, err, "content digest", "invalid digest length")
}

// idsCheckErrWrapped is idsCheckErr for errors wrapped by encoding/json.
func idsCheckErrWrapped(t *testing.T, err error, kind, reason string) {
	t.Helper()
	var ie *core.IDError
	if !errors.As(err, &ie) {
		t.Fatalf("errors.As(%v, *IDError)=false", err)
	}
	if ie.Kind != kind || ie.Reason != reason {
		t.Errorf("kind=%q reason=%q, want %q %q", ie.Kind, ie.Reason, kind, reason)
	}
}
