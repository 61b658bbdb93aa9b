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
	storetest.Run(t, func(t *testing.T, clock core.Clock) storetest.Store {
		b, err := sqlite.Open(filepath.Join(t.TempDir(), "stela.db"), sqlite.Options{Clock: clock})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		s := store.New(b, store.Options{Clock: clock})
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}
