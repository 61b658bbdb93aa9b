package functions_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The Lambda binaries must not link test kits or the in-memory store
// (production mains never import testing).
func TestMainsDoNotDependOnTestCode(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "./api", "./lock", "./append", "./timers", "./worker").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	banned := []string{"testing", "github.com/stela-dev/stela/store/storetest", "github.com/stela-dev/stela/store/mem",
		"github.com/stela-dev/stela/functions/lambdatest"}
	for _, dep := range strings.Fields(string(out)) {
		for _, b := range banned {
			if dep == b {
				t.Errorf("a Lambda main depends on %s", dep)
			}
		}
	}
}
