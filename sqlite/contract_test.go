package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/sqlite"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/store/storetest"
)

// TestContract runs the backend-independent contract suite on the SQLite
// backend, each subtest on its own database file.
func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T, _ core.Clock, _ core.Cas) store.Backend {
		b, err := sqlite.Open(filepath.Join(t.TempDir(), "stela.db"), sqlite.Options{})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return b
	})
}
