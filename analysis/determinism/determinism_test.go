package determinism_test

import (
	"testing"

	"github.com/stela-dev/stela/analysis/determinism"
	"golang.org/x/tools/go/analysis/analysistest"
)

// TestRules checks every rule and every false-positive trap on the test
// programs of testdata/shop (against a stub of the SDK, testdata/stela):
// each `// want` comment is a finding that must be reported, and nothing
// else may be.
func TestRules(t *testing.T) {
	analysistest.Run(t, "testdata/shop", determinism.Analyzer, "./...")
}

// TestCheck runs the in-process driver (stela vet): each finding once,
// even where a package and its test variant both report it, sorted; none
// on a clean package; an error for a pattern that matches nothing loadable.
func TestCheck(t *testing.T) {
	found, err := determinism.Check("testdata/shop", []string{"./chains"}, true)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var test bool
	for i, f := range found {
		if seen[f.String()] {
			t.Errorf("reported twice: %s", f)
		}
		seen[f.String()] = true
		if i > 0 && found[i-1].Pos.Filename == f.Pos.Filename && found[i-1].Pos.Line > f.Pos.Line {
			t.Errorf("not sorted: %s after %s", f, found[i-1])
		}
		test = test || f.Pos.Filename == "chains/chains_test.go"
	}
	if len(found) != 11 || !test || found[0].Rule != "random" {
		t.Fatalf("got %d findings (want 11, one in the test file, the first a random):\n%v", len(found), found)
	}
	if found, err := determinism.Check("testdata/shop", []string{"./chains"}, false); err != nil || len(found) != 10 {
		t.Fatalf("without tests: got %d findings, %v; want 10", len(found), err)
	}
	if found, err := determinism.Check("testdata/shop", []string{"./clean"}, true); err != nil || len(found) != 0 {
		t.Fatalf("clean: got %v, %v", found, err)
	}
	if _, err := determinism.Check("testdata/shop", []string{"./nosuchpackage"}, true); err == nil {
		t.Fatal("a pattern matching no package: no error")
	}
}
