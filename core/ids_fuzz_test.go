package core_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stela-dev/stela/core"
)

// Every fuzz target checks: parsing never panics; a failure is an *IDError
// wrapping ErrInvalidID; a success formats to a string that parses back to
// an equal value with the same string (format is stable), and the
// MarshalText/UnmarshalText pair agrees with Parse/String.

func idsFuzzCheckErr(t *testing.T, in string, err error) {
	t.Helper()
	var ie *core.IDError
	if !errors.Is(err, core.ErrInvalidID) || !errors.As(err, &ie) {
		t.Fatalf("parse(%q): error %v is not an *IDError wrapping ErrInvalidID", in, err)
	}
	if ie.Input != in || ie.Reason == "" || ie.Kind == "" {
		t.Fatalf("parse(%q): bad IDError %+v", in, ie)
	}
}

var idsFuzzSeeds = []string{
	"",
	".",
	"_",
	idsTop,
	"E_" + strings.ToLower(idsULID),
	"E_00000000000000000000000000",
	"E_7ZZZZZZZZZZZZZZZZZZZZZZZZZ",
	"E_8ZZZZZZZZZZZZZZZZZZZZZZZZZ",
	idsTop + ".g:1_1",
	idsTop + ".g:gg_2.o:oo_2",
	idsTop + ".g:gg._2.o:oo_2",
	idsTop + ".o:_1",
	idsTop + ".g:1_+5",
	idsTop + ".g:1_01.o:a_1",
	idsTop + ".g:1_18446744073709551616",
	idsTop + "..g:1_1",
	"Delay_" + idsULID + ".g:1_1",
	"Delay_" + idsULID + ".g:1_1.o:2-sleep_1",
	"Delay_" + idsULID + ".g:1_1.g:1_2",
	"Exr_01KBNJ2T3D8W7H3X6Q4M9R5V1A",
	"Run_01KBNJ2V0P6C4Y8N2B7K3T5W9E",
	"Dep_01KBNHQ0ZC2X9B8M1V7N6T4R3S",
	"Dep_00000000000000000000000000",
	"o:",
	"g:1",
	"n:session-events",
	"n:a.b",
	"x:1",
	idsDigest,
	"sha256:" + strings.ToUpper(idsDigest[len("sha256:"):]),
	"sha256:+f" + idsDigest[len("sha256:")+2:],
	"wasi:cli/run@0.2.0.run",
	"ns:pkg/ifc@.fn",
	"ns:pkg/ifc.",
	"testing:fibo-workflow/workflow.fibow-cancellable",
	"01" + strings.Repeat("ab", 32),
	"01" + strings.Repeat("AB", 32),
}

func idsAddSeeds(f *testing.F) {
	for _, s := range idsFuzzSeeds {
		f.Add(s)
	}
}

func FuzzParseExecutionId(f *testing.F) {
	idsAddSeeds(f)
	f.Fuzz(func(t *testing.T, in string) {
		id, err := core.ParseExecutionId(in)
		if err != nil {
			idsFuzzCheckErr(t, in, err)
			if _, derr := core.ParseExecutionIdDerived(in); derr == nil {
				t.Fatalf("ParseExecutionIdDerived(%q) accepted what ParseExecutionId rejected", in)
			}
			return
		}
		s := id.String()
		again, err := core.ParseExecutionId(s)
		if err != nil {
			t.Fatalf("ParseExecutionId(%q) ok, but its String %q fails: %v", in, s, err)
		}
		if again != id || again.String() != s {
			t.Fatalf("round trip of %q: %#v != %#v", in, again, id)
		}
		if id.IsZero() || !strings.EqualFold(s, in) {
			t.Fatalf("ParseExecutionId(%q): IsZero=%v String=%q", in, id.IsZero(), s)
		}
		b, err := id.MarshalText()
		if err != nil || string(b) != s {
			t.Fatalf("MarshalText(%q)=%q, %v", s, b, err)
		}
		var u core.ExecutionId
		if err := u.UnmarshalText(b); err != nil || u != id {
			t.Fatalf("UnmarshalText(%q)=%#v, %v", b, u, err)
		}
		if id.Compare(again) != 0 {
			t.Fatalf("Compare(%q, itself) != 0", s)
		}
		if id.TopLevel().ULID() != id.ULID() || !id.TopLevel().IsTopLevel() {
			t.Fatalf("TopLevel of %q is %q", s, id.TopLevel())
		}

		derived, derr := core.ParseExecutionIdDerived(in)
		parent, js, ok := id.SplitToParts()
		if id.IsTopLevel() {
			if derr == nil || ok {
				t.Fatalf("top-level %q: ParseExecutionIdDerived err=%v, SplitToParts ok=%v", in, derr, ok)
			}
			child := id.NextLevel(core.JoinSetId{Kind: core.JoinSetKindGenerated, Name: "1"})
			if want := s + ".g:1_1"; child.String() != want {
				t.Fatalf("NextLevel=%q, want %q", child, want)
			}
			return
		}
		if derr != nil || derived.ExecutionId != id {
			t.Fatalf("ParseExecutionIdDerived(%q)=%v, %v", in, derived, derr)
		}
		if !ok {
			t.Fatalf("SplitToParts(%q): ok=false", s)
		}
		prefix := parent.String() + "." + js.String() + "_"
		if !strings.HasPrefix(s, prefix) || !strings.HasPrefix(parent.NextLevel(js).String(), prefix) {
			t.Fatalf("SplitToParts(%q)=(%q, %q)", s, parent, js)
		}
		if reparsed, err := core.ParseExecutionId(parent.String()); err != nil || reparsed != parent {
			t.Fatalf("parent %q of %q does not round-trip: %v", parent, s, err)
		}
		if strings.HasSuffix(s, "_18446744073709551615") {
			return // Incremented would overflow (and panics by contract)
		}
		if id.Incremented().Compare(id) == 0 {
			t.Fatalf("Incremented(%q) equals itself", s)
		}
	})
}

func FuzzParseDelayId(f *testing.F) {
	idsAddSeeds(f)
	f.Fuzz(func(t *testing.T, in string) {
		d, err := core.ParseDelayId(in)
		if err != nil {
			idsFuzzCheckErr(t, in, err)
			return
		}
		s := d.String()
		again, err := core.ParseDelayId(s)
		if err != nil {
			t.Fatalf("ParseDelayId(%q) ok, but its String %q fails: %v", in, s, err)
		}
		if again != d || again.String() != s || d.IsZero() || !strings.EqualFold(s, in) {
			t.Fatalf("round trip of %q: %#v != %#v", in, again, d)
		}
		b, err := d.MarshalText()
		if err != nil || string(b) != s {
			t.Fatalf("MarshalText(%q)=%q, %v", s, b, err)
		}
		var u core.DelayId
		if err := u.UnmarshalText(b); err != nil || u != d {
			t.Fatalf("UnmarshalText(%q)=%#v, %v", b, u, err)
		}
		owner, js := d.SplitToParts()
		if owner.IsZero() || js.IsZero() {
			t.Fatalf("SplitToParts(%q)=(%v, %v)", s, owner, js)
		}
		// The owner's first child in js has the same text after the prefix,
		// up to the last index.
		child := owner.NextLevel(js).String()
		childBody := strings.TrimSuffix(strings.TrimPrefix(child, "E"), "1")
		if !strings.HasPrefix(strings.TrimPrefix(s, "Delay"), childBody) {
			t.Fatalf("SplitToParts(%q)=(%q, %q), first child %q", s, owner, js, child)
		}
	})
}

func FuzzParseJoinSetId(f *testing.F) {
	idsAddSeeds(f)
	f.Fuzz(func(t *testing.T, in string) {
		js, err := core.ParseJoinSetId(in)
		if err != nil {
			idsFuzzCheckErr(t, in, err)
			return
		}
		s := js.String()
		again, err := core.ParseJoinSetId(s)
		if err != nil || again != js || s != in || js.IsZero() {
			t.Fatalf("round trip of %q: %q %+v %v", in, s, again, err)
		}
		if strings.ContainsAny(js.Name, "._:") {
			t.Fatalf("name %q contains a delimiter", js.Name)
		}
		if nj, err := core.NewJoinSetId(js.Kind, js.Name); err != nil || nj != js {
			t.Fatalf("NewJoinSetId(%v, %q)=%+v, %v", js.Kind, js.Name, nj, err)
		}
		b, err := js.MarshalText()
		if err != nil || string(b) != s {
			t.Fatalf("MarshalText(%q)=%q, %v", s, b, err)
		}
	})
}

func FuzzParseFunctionFqn(f *testing.F) {
	idsAddSeeds(f)
	f.Fuzz(func(t *testing.T, in string) {
		fq, err := core.ParseFunctionFqn(in)
		if err != nil {
			idsFuzzCheckErr(t, in, err)
			return
		}
		s := fq.String()
		again, err := core.ParseFunctionFqn(s)
		if err != nil || again != fq || s != in || fq.IsZero() {
			t.Fatalf("round trip of %q: %q %+v %v", in, s, again, err)
		}
		if fq.FunctionName == "" || strings.Contains(fq.FunctionName, ".") {
			t.Fatalf("bad function name %q", fq.FunctionName)
		}
		b, err := fq.MarshalText()
		if err != nil || string(b) != s {
			t.Fatalf("MarshalText(%q)=%q, %v", s, b, err)
		}
		var u core.FunctionFqn
		if err := u.UnmarshalText(b); err != nil || u != fq {
			t.Fatalf("UnmarshalText(%q)=%+v, %v", b, u, err)
		}
	})
}

func FuzzParseDigest(f *testing.F) {
	idsAddSeeds(f)
	f.Fuzz(func(t *testing.T, in string) {
		d, err := core.ParseDigest(in)
		cd, cerr := core.ParseComponentDigest(in)
		xd, xerr := core.ParseContentDigest(in)
		if (err == nil) != (cerr == nil) || (err == nil) != (xerr == nil) {
			t.Fatalf("parsers disagree on %q: %v / %v / %v", in, err, cerr, xerr)
		}
		if err != nil {
			idsFuzzCheckErr(t, in, err)
			idsFuzzCheckErr(t, in, cerr)
			idsFuzzCheckErr(t, in, xerr)
			return
		}
		s := d.String()
		again, err := core.ParseDigest(s)
		if err != nil || again != d || s != strings.ToLower(in) || len(s) != 71 {
			t.Fatalf("round trip of %q: %q %v", in, s, err)
		}
		if cd.Digest != d || xd.Digest != d || cd.String() != s || xd.String() != s {
			t.Fatalf("wrappers of %q differ: %v %v", in, cd, xd)
		}
		for _, m := range []interface{ MarshalText() ([]byte, error) }{d, cd, xd} {
			if b, err := m.MarshalText(); err != nil || string(b) != s {
				t.Fatalf("MarshalText(%T)=%q, %v", m, b, err)
			}
		}
	})
}

func FuzzParsePrefixedUlid(f *testing.F) {
	idsAddSeeds(f)
	f.Fuzz(func(t *testing.T, in string) {
		check := func(prefix string, s string, err error, reparse func(string) (string, error)) {
			t.Helper()
			if err != nil {
				idsFuzzCheckErr(t, in, err)
				return
			}
			if len(s) != 30 || !strings.HasPrefix(s, prefix+"_") || !strings.EqualFold(s, in) {
				t.Fatalf("parse(%q).String()=%q", in, s)
			}
			if s[4:] != strings.ToUpper(s[4:]) {
				t.Fatalf("ULID of %q not upper-case", s)
			}
			again, err := reparse(s)
			if err != nil || again != s {
				t.Fatalf("round trip of %q: %q %v", in, again, err)
			}
		}
		exr, err := core.ParseExecutorId(in)
		check("Exr", exr.String(), err, func(s string) (string, error) {
			v, err := core.ParseExecutorId(s)
			if err == nil && v != exr {
				t.Fatalf("ExecutorId %q != %q", v, exr)
			}
			return v.String(), err
		})
		run, err := core.ParseRunId(in)
		check("Run", run.String(), err, func(s string) (string, error) {
			v, err := core.ParseRunId(s)
			if err == nil && v != run {
				t.Fatalf("RunId %q != %q", v, run)
			}
			return v.String(), err
		})
		dep, err := core.ParseDeploymentId(in)
		check("Dep", dep.String(), err, func(s string) (string, error) {
			v, err := core.ParseDeploymentId(s)
			if err == nil && v != dep {
				t.Fatalf("DeploymentId %q != %q", v, dep)
			}
			return v.String(), err
		})
		// Text marshaling agrees with String for every successfully parsed id.
		if b, err := dep.MarshalText(); err != nil || string(b) != dep.String() {
			t.Fatalf("MarshalText=%q, %v", b, err)
		}
	})
}

func FuzzParseStubRetValHash(f *testing.F) {
	idsAddSeeds(f)
	f.Fuzz(func(t *testing.T, in string) {
		h, err := core.ParseStubRetValHash(in)
		if err != nil {
			idsFuzzCheckErr(t, in, err)
			return
		}
		s := h.String()
		again, err := core.ParseStubRetValHash(s)
		if err != nil || again != h || s != strings.ToLower(in) || len(s) != 66 {
			t.Fatalf("round trip of %q: %q %v", in, s, err)
		}
		var u core.StubRetValHash
		if err := u.UnmarshalText([]byte(s)); err != nil || u != h {
			t.Fatalf("UnmarshalText(%q)=%v, %v", s, u, err)
		}
	})
}
