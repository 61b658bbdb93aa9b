package backendtest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stela-dev/stela/dynamo"
	"github.com/stela-dev/stela/sqlite"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/store/mem"
)

// capabilityTable reads the table of optional capabilities in store/backend.go:
// capability name -> backend -> implemented.
func capabilityTable(t *testing.T) map[string]map[string]bool {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", "store", "backend.go"))
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	table := map[string]map[string]bool{}
	for _, line := range strings.Split(string(src), "\n") {
		line = strings.TrimPrefix(line, "//\t")
		if strings.HasPrefix(line, "capability ") {
			cols = strings.Fields(line)[1:4]
			continue
		}
		if cols == nil {
			continue
		}
		if !strings.HasPrefix(line, "//") && line != "" {
			// Rows look like "Name [+ Other (Tx)] x - x  fallback".
			f := strings.Fields(line)
			var name string
			i := 0
			for ; i < len(f) && f[i] != "x" && f[i] != "-"; i++ {
				if name == "" {
					name = f[i]
				}
			}
			if i+3 > len(f) {
				t.Fatalf("store/backend.go: capability row %q has no mem/sqlite/dynamo columns", line)
			}
			table[name] = map[string]bool{}
			for j, c := range cols {
				table[name][c] = f[i+j] == "x"
			}
			continue
		}
		break
	}
	if len(table) == 0 {
		t.Fatal("store/backend.go: no table of optional capabilities found")
	}
	return table
}

// TestCapabilitiesTable holds the table of optional backend capabilities in
// store/backend.go against what each backend implements, so the one list a
// new backend's author reads cannot drift.
func TestCapabilitiesTable(t *testing.T) {
	sq, err := sqlite.Open(filepath.Join(t.TempDir(), "stela.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sq.Close()
	backends := map[string]store.Backend{"mem": mem.New(), "sqlite": sq, "dynamo": (*dynamo.Backend)(nil)}
	caps := map[string]func(store.Backend) bool{
		"BatchLocker": func(b store.Backend) bool {
			bl, ok := b.(store.BatchLocker)
			return ok && bl.LockBatchInOneUpdate()
		},
		"ReadyChecker": func(b store.Backend) bool { _, ok := b.(store.ReadyChecker); return ok },
		"InboxBackend": func(b store.Backend) bool { _, ok := b.(store.InboxBackend); return ok },
		"Retainer":     func(b store.Backend) bool { _, ok := b.(store.Retainer); return ok },
		"Exporter":     func(b store.Backend) bool { _, ok := b.(store.Exporter); return ok },
		"Importer":     func(b store.Backend) bool { _, ok := b.(store.Importer); return ok },
		"LockLeaser":   func(b store.Backend) bool { _, ok := b.(store.LockLeaser); return ok },
	}
	has := func(b store.Backend, capability string) bool {
		f, ok := caps[capability]
		if !ok {
			t.Fatalf("store/backend.go lists capability %q, unknown to this test", capability)
		}
		return f(b)
	}
	// The Tx side of a capability, where it has one, checked on the backends
	// that open without a server (dynamo's is a compile-time assertion in
	// dynamo/inbox.go and dynamo/retention.go).
	txHas := func(b store.Backend, capability string) (bool, bool) {
		if _, isDynamo := b.(*dynamo.Backend); isDynamo {
			return false, false
		}
		var ok, checked bool
		err := b.Update(context.Background(), func(tx store.Tx) error {
			switch capability {
			case "InboxBackend":
				_, ok = tx.(store.Inbox)
				checked = true
			case "Retainer":
				_, ok = tx.(store.RetentionTx)
				checked = true
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return ok, checked
	}
	table := capabilityTable(t)
	for c := range caps {
		if table[c] == nil {
			t.Errorf("store/backend.go: capability %s missing from the table", c)
		}
	}
	for c, row := range table {
		for name, b := range backends {
			if got := has(b, c); got != row[name] {
				t.Errorf("store/backend.go says %s implements %s: %v; it does: %v", name, c, row[name], got)
			}
			if txOK, checked := txHas(b, c); checked && txOK != row[name] {
				t.Errorf("store/backend.go says %s's Tx implements the Tx side of %s: %v; it does: %v", name, c, row[name], txOK)
			}
		}
	}
}
