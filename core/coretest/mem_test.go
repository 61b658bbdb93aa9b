package coretest_test

import (
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/core/coretest"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/store/mem"
)

// TestMem runs the contract suite on the in-memory backend.
func TestMem(t *testing.T) {
	coretest.Run(t, func(t *testing.T, clock core.Clock) coretest.Store {
		s := store.New(mem.New(), store.Options{Clock: clock, PollInterval: 5 * time.Millisecond})
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}
