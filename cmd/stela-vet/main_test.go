package main_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// shop is the analyzer's test module (workflows breaking every rule, against
// a stub of the SDK).
const shop = "../../analysis/determinism/testdata/shop"

// build compiles stela-vet into a temporary directory.
func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "stela-vet")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// run runs a command in shop and returns its exit code and output.
func run(t *testing.T, name string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = shop
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("%s: %v", name, err)
	}
	return cmd.ProcessState.ExitCode(), out.String()
}

// crossPackage is a finding that needs the facts of another package: under
// go vet each package is analyzed by its own process, so the facts must
// travel through go vet's files.
const crossPackage = `flows.go:22:15: time.Now (at example.com/shop/helpers/helpers.go:15:42) in workflow "shop:flows/workflow.checkout" (Checkout) via helpers.Stamp`

// TestGoVetTool runs stela-vet as `go vet -vettool`: findings, including
// those across packages, make the exit status non-zero; a clean package
// passes.
func TestGoVetTool(t *testing.T) {
	bin := build(t)
	code, out := run(t, "go", "vet", "-vettool="+bin, "./...")
	if code == 0 || !strings.Contains(out, crossPackage) || !strings.Contains(out, "time.Now in workflow \"shop:rules/workflow.clock\" (Clock)") {
		t.Fatalf("go vet -vettool: exit %d, want non-zero and the findings; output:\n%s", code, out)
	}
	if code, out := run(t, "go", "vet", "-vettool="+bin, "./clean"); code != 0 {
		t.Fatalf("go vet -vettool on a clean package: exit %d\n%s", code, out)
	}
}

// TestStandalone runs stela-vet on its own: exit status 3 on findings, 0
// on a clean package.
func TestStandalone(t *testing.T) {
	bin := build(t)
	abs, err := filepath.Abs(bin)
	if err != nil {
		t.Fatal(err)
	}
	code, out := run(t, abs, "./...")
	if code != 3 || !strings.Contains(out, crossPackage) {
		t.Fatalf("stela-vet ./...: exit %d, want 3 and the findings; output:\n%s", code, out)
	}
	if code, out := run(t, abs, "./clean"); code != 0 {
		t.Fatalf("stela-vet on a clean package: exit %d\n%s", code, out)
	}
}
