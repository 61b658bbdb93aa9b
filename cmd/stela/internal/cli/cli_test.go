package cli

import (
	"bytes"
	"context"
	"flag"
	"os"
	"reflect"
	"strings"
	"testing"
)

func run(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = Main(context.Background(), args, Env{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }})
	return code, out.String(), errOut.String()
}

func TestHelp(t *testing.T) {
	t.Run("TopLevelHelpListsEveryCommandAndExitsZero", func(t *testing.T) {
		for _, arg := range []string{"--help", "-h", "help"} {
			code, out, _ := run(arg)
			if code != ExitOK {
				t.Fatalf("stela %s: exit %d", arg, code)
			}
			for _, c := range tree().sub {
				if !strings.Contains(out, "  "+c.name+" ") {
					t.Errorf("stela %s does not list %q:\n%s", arg, c.name, out)
				}
			}
		}
	})
	t.Run("EveryLeafParsesHAndExitsZero", func(t *testing.T) {
		leaves := Leaves()
		if len(leaves) < 19 {
			t.Fatalf("only %d leaves: %v", len(leaves), leaves)
		}
		for _, leaf := range leaves {
			for _, h := range []string{"-h", "--help"} {
				code, out, errOut := run(append(strings.Fields(leaf), h)...)
				if code != ExitOK {
					t.Errorf("stela %s %s: exit %d, stderr %s", leaf, h, code, errOut)
				}
				if !strings.HasPrefix(out, "Usage: stela "+leaf) {
					t.Errorf("stela %s %s: help does not start with its usage line:\n%s", leaf, h, out)
				}
			}
		}
	})
	t.Run("EveryGroupParsesHAndListsItsLeaves", func(t *testing.T) {
		for _, g := range tree().sub {
			if g.sub == nil {
				continue
			}
			code, out, _ := run(g.name, "-h")
			if code != ExitOK {
				t.Errorf("stela %s -h: exit %d", g.name, code)
			}
			for _, s := range g.sub {
				if !strings.Contains(out, "  "+s.name+" ") {
					t.Errorf("stela %s -h does not list %s:\n%s", g.name, s.name, out)
				}
			}
		}
	})
	t.Run("DocsMentionEveryCommandAndFlag", func(t *testing.T) {
		doc, err := os.ReadFile("../../../../docs/cli.md")
		if err != nil {
			t.Fatal(err)
		}
		for _, leaf := range Leaves() {
			if !bytes.Contains(doc, []byte("stela "+leaf)) {
				t.Errorf("docs/cli.md never shows `stela %s`", leaf)
			}
			for _, f := range leafFlags(t, leaf) {
				if !bytes.Contains(doc, []byte("--"+f)) {
					t.Errorf("docs/cli.md never mentions --%s (of stela %s)", f, leaf)
				}
			}
		}
	})
}

// leafFlags returns the flag names of a leaf.
func leafFlags(tb testing.TB, leaf string) []string {
	tb.Helper()
	c := tree()
	for _, name := range strings.Fields(leaf) {
		var next *command
		for _, s := range c.sub {
			if s.name == name {
				next = s
			}
		}
		if next == nil {
			tb.Fatalf("no command %q", leaf)
		}
		c = next
	}
	fs := flag.NewFlagSet(leaf, flag.ContinueOnError)
	c.flags(fs, &Env{Getenv: func(string) string { return "" }})
	var out []string
	fs.VisitAll(func(f *flag.Flag) { out = append(out, f.Name) })
	return out
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"NoArgumentsShowsTheCommands", nil, "Commands:"},
		{"UnknownCommandIsAUsageError", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"MissingArgumentIsAUsageError", []string{"execution", "status"}, "wrong number of arguments"},
		{"ExtraArgumentIsAUsageError", []string{"execution", "pause", "E_1", "E_2"}, "wrong number of arguments"},
		{"UnknownFlagIsAUsageError", []string{"execution", "list", "--nope"}, "flag provided but not defined: -nope"},
		{"BadParamsAreAUsageError", []string{"execution", "submit", "a:b/c.d", "{"}, "params must be a JSON array"},
		{"BadFFQNIsAUsageError", []string{"execution", "submit", "nope"}, "invalid ffqn"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := run(tc.args...)
			if code != ExitUsage || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d containing %q", code, errOut, ExitUsage, tc.want)
			}
		})
	}
	t.Run("UnreachableServerIsAnErrorWithAHint", func(t *testing.T) {
		code, _, errOut := run("execution", "list", "--url", "http://127.0.0.1:1")
		if code != ExitError || !strings.Contains(errOut, "stela dev") {
			t.Errorf("exit %d, stderr %q; want 1 with a hint", code, errOut)
		}
	})
}

func TestParseInterspersed(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		pos    []string
		follow bool
		id     string
	}{
		{[]string{"a", "--follow", "b"}, []string{"a", "b"}, true, ""},
		{[]string{"--id", "x", "a"}, []string{"a"}, false, "x"},
		{[]string{"a", "b", "--id=y"}, []string{"a", "b"}, false, "y"},
		{[]string{"a", "--", "--follow"}, []string{"a", "--follow"}, false, ""},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		follow := fs.Bool("follow", false, "")
		id := fs.String("id", "", "")
		pos, err := parseInterspersed(fs, tc.args)
		if err != nil || !reflect.DeepEqual(pos, tc.pos) || *follow != tc.follow || *id != tc.id {
			t.Errorf("parse %q = %q follow=%v id=%q err=%v; want %q %v %q", tc.args, pos, *follow, *id, err, tc.pos, tc.follow, tc.id)
		}
	}
}

func TestFlagsBeforeTheCommand(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{[]string{"--url", "U", "execution", "list"}, []string{"execution", "list", "--url", "U"}},
		{[]string{"--url=U", "execution", "get", "E_1"}, []string{"execution", "get", "E_1", "--url=U"}},
		{[]string{"--url", "U", "execution", "submit", "a:b/c.d", "--", "-1"}, []string{"execution", "submit", "a:b/c.d", "--url", "U", "--", "-1"}},
		{[]string{"execution", "list", "--url", "U"}, []string{"execution", "list", "--url", "U"}},
		{[]string{"--nope"}, []string{"--nope"}},
		{[]string{"--", "execution"}, []string{"--", "execution"}},
	} {
		if got := flagsAfterCommand(tree(), tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("flagsAfterCommand(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
	// End to end: the flag before the command reaches the leaf (the hint
	// names the unreachable URL given first).
	code, _, errOut := run("--url", "http://127.0.0.1:1", "execution", "list")
	if code != ExitError || !strings.Contains(errOut, "127.0.0.1:1") {
		t.Errorf("exit %d, stderr %q; want 1 naming the URL given before the command", code, errOut)
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, _ := run(args...)
		if code != ExitOK || !strings.HasPrefix(out, "stela ") || !strings.Contains(out, "go1.") {
			t.Errorf("%q: exit %d, stdout %q; want 0 and a version line", args, code, out)
		}
	}
}
