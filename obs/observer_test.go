package obs_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stela-dev/stela/httpapi"
	"github.com/stela-dev/stela/obs"
)

// The HTTP handler reports to an Observer; the check lives here so that obs
// itself does not import httpapi (which imports obs/tracemeta).
var _ httpapi.Observer = (*obs.Observer)(nil)

// TestObsDoesNotImportTheHandler keeps the arrows between the folders one
// way: httpapi imports obs/tracemeta, so obs (and its subpackages) must not
// import httpapi, the console or the Lambda glue.
func TestObsDoesNotImportTheHandler(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		switch p {
		case "github.com/stela-dev/stela/httpapi", "github.com/stela-dev/stela/console", "github.com/stela-dev/stela/functions":
			t.Errorf("obs depends on %s", p)
		}
	}
}
