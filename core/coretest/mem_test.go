package coretest_test

import (
	"testing"
	"time"

	"github.com/stela-dev/stela/cas"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/core/coretest"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/store/mem"
)

// TestMem runs the contract suite on the in-memory backend, with its blobs
// in a directory CAS.
func TestMem(t *testing.T) {
	coretest.Run(t, func(t *testing.T, clock core.Clock) coretest.Store {
		blobs, err := cas.NewDir(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		b := mem.NewWithOptions(mem.Options{Cas: blobs, Clock: clock})
		s := store.New(b, store.Options{Clock: clock, PollInterval: 5 * time.Millisecond})
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}
