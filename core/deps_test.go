package core_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCoreDependencies fails if core, or any package under core/, imports
// anything but the standard library and the ULID package: core must stay
// pure (no I/O, no AWS) and dependencies point inward only (the contract
// suite, which needs package store, lives in store/storetest).
func TestCoreDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	allowed := map[string]bool{"github.com/stela-dev/stela/core": true, "github.com/oklog/ulid/v2": true}
	for _, p := range strings.Fields(string(out)) {
		if !allowed[p] {
			t.Errorf("core depends on %s; only the standard library and github.com/oklog/ulid/v2 are allowed", p)
		}
	}
	// core never touches the network, files, processes or the wall clock's randomness.
	out, err = exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		switch p {
		case "net", "net/http", "os", "os/exec", "math/rand", "math/rand/v2", "crypto/rand", "log", "log/slog", "database/sql":
			t.Errorf("core imports %s", p)
		}
	}
}
