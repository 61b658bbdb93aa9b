package store_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/store/mem"
	"github.com/stela-dev/stela/store/storetest"
)

// busyBackend is an in-memory backend whose owner changes the store right
// after the next Update commits (a destination whose timers run).
type busyBackend struct {
	*mem.Backend
	mu    sync.Mutex
	after func()
}

func (b *busyBackend) Update(ctx context.Context, fn func(tx store.Tx) error) error {
	err := b.Backend.Update(ctx, fn)
	b.mu.Lock()
	after := b.after
	b.after = nil
	b.mu.Unlock()
	if err == nil && after != nil {
		after()
	}
	return err
}

// A tree the destination changes between its write and its read-back is
// reported as a conflict, not as verified.
func TestImportReportsATreeChangedBeforeItWasReadBack(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewSimClock(core.UnixEpoch)
	src := store.New(mem.New(), store.Options{Clock: clock})
	fixture := storetest.BuildTree(t, src, clock, false, false)
	var tree store.TreeRecord
	err := src.Export(ctx, func(r *store.ExportReader) (err error) {
		tree, err = r.Tree(fixture.Root)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	b := &busyBackend{Backend: mem.New()}
	dst := store.New(b, store.Options{Clock: clock})
	b.after = func() {
		if _, err := dst.PauseExecution(ctx, fixture.Root, clock.Now()); err != nil {
			t.Error(err)
		}
	}
	_, err = dst.ImportTree(ctx, tree)
	var ce *store.ConflictError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "read back differently") || !strings.Contains(err.Error(), fixture.Root.String()+" reads back") {
		t.Fatalf("import into a store that changed the tree at once: %v, want a conflict naming %s", err, fixture.Root)
	}
	if dst.ParallelImport() {
		t.Fatal("the in-memory store imports trees in parallel, want one after the other (it orders by insertion)")
	}
}
