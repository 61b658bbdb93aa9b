package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/sqlite"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/store/storetest"
)

// TestRestartLosesNothingAcknowledged writes through the whole API, closes the
// store, reopens the same file and checks that every acknowledged write is there.
func TestRestartLosesNothingAcknowledged(t *testing.T) {
	storetest.RunRestart(t, func(t *testing.T, clock core.Clock, dir string) (storetest.Store, func()) {
		b, err := sqlite.Open(filepath.Join(dir, "stela.db"), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s := store.New(b, store.Options{Clock: clock})
		return s, func() { _ = s.Close() }
	})
}
