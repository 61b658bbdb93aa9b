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
