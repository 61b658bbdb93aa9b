package bench

import (
	"bytes"
	"context"
	"flag"
	"regexp"
	"strings"
	"testing"
)

// `stela bench floor` runs both measurements and prints a positive CPU
// figure for each, their sum for an activity step, and the median line; a
// bad flag is a usage error.
func TestBenchFloorPrintsEachPart(t *testing.T) {
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		fs := flag.NewFlagSet("floor", flag.ContinueOnError)
		do := benchFloor().Flags(fs, &Env{Stdout: &out, Stderr: &out})
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		err := do(context.Background())
		return out.String(), err
	}
	out, err := run("-n", "50", "-rounds", "1", "-durability", "os-crash-unsafe")
	if err != nil {
		t.Fatalf("floor: %v\n%s", err, out)
	}
	for _, want := range []string{
		`bare HTTP POST round trip \(client \+ server, 600-byte body\): [0-9.]+ µs CPU`,
		`activity created locked \+ finished on the store in-process: [0-9.]+ µs CPU`,
		`workflow of one activity on the store in-process \(4 commits\): [0-9.]+ µs CPU`,
		`floor of an activity step over HTTP \(2 requests \+ the store\): [0-9.]+ µs CPU`,
		`floor of a workflow of one activity over HTTP \(4 requests \+ the store\): [0-9.]+ µs CPU`,
		`median of 1 rounds, 50 operations each \(workflows 25\), concurrency 8, durability os-crash-unsafe`,
	} {
		m := regexp.MustCompile(want).FindString(out)
		if m == "" {
			t.Errorf("output lacks %q:\n%s", want, out)
		} else if strings.Contains(m, ": 0.0 µs") {
			t.Errorf("a zero figure: %q", m)
		}
	}
	if _, err := run("-n", "0"); err == nil {
		t.Error("-n 0: no error")
	} else if _, ok := err.(UsageError); !ok {
		t.Errorf("-n 0: %v, want a usage error", err)
	}
}
