package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// shop is the determinism analyzer's test module: workflows breaking every
// rule, against a stub of the SDK.
const shop = "../../../../analysis/determinism/testdata/shop"

func TestVet(t *testing.T) {
	t.Run("FindingsExitOne", func(t *testing.T) {
		code, out, errOut := run("vet", "--dir", shop, "./flows")
		want := `flows/flows.go:22:15: time.Now (at example.com/shop/helpers/helpers.go:15:42) in workflow "shop:flows/workflow.checkout" (Checkout) via helpers.Stamp: the wall clock reads differently on a replay; use wf.Now()`
		if code != ExitError || !strings.Contains(out, want) || !strings.Contains(errOut, "8 finding(s) in workflow code") {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
	})
	t.Run("JSON", func(t *testing.T) {
		code, out, _ := run("vet", "--dir", shop, "--json", "./flows")
		var got []struct{ Pos, Rule, Message string }
		if err := json.Unmarshal([]byte(out), &got); err != nil || code != ExitError || len(got) != 8 {
			t.Fatalf("exit %d, %d findings, %v:\n%s", code, len(got), err, out)
		}
		if got[0].Pos != "flows/flows.go:22:15" || got[0].Rule != "clock" || !strings.HasPrefix(got[0].Message, "time.Now (at ") {
			t.Fatalf("first finding: %+v", got[0])
		}
	})
	t.Run("CleanExitsZero", func(t *testing.T) {
		if code, out, errOut := run("vet", "--dir", shop, "./clean"); code != ExitOK || out != "" {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
	})
	t.Run("TheExamplesAndTheSDKsWorkflowsPass", func(t *testing.T) {
		// The project's own workflow code, against the real SDK (test files
		// excluded: the worker's tests break the rules on purpose).
		if code, out, errOut := run("vet", "--dir", "../../../..", "--tests=false", "./examples/...", "./cmd/stela/..."); code != ExitOK {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
	})
	t.Run("LoadErrorExitsOne", func(t *testing.T) {
		if code, _, errOut := run("vet", "--dir", shop, "./nosuchpackage"); code != ExitError || !strings.Contains(errOut, "stela vet:") {
			t.Fatalf("exit %d, stderr:\n%s", code, errOut)
		}
	})
}
