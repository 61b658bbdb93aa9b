package cas_test

import (
	"context"
	"testing"
	"time"

	"github.com/stela-dev/stela/cas"
	"github.com/stela-dev/stela/core"
)

func TestCollectOrphansSparesABlobWrittenAgainWhileItRuns(t *testing.T) {
	h := newDirHarness(t)
	ctx := context.Background()
	data := []byte("an old orphan that a writer is about to reference")
	d := mustWrite(t, h.store, data)
	h.age(t, d, 2*time.Hour)
	// A writer uploads the same bytes (a no-op for the content) after the
	// collector listed the blob and while it reads the references, and
	// commits its reference after that read.
	refs := func(ctx context.Context, c []core.ContentDigest) (map[core.ContentDigest]bool, error) {
		if _, err := h.store.WriteBlob(ctx, data); err != nil {
			t.Fatalf("concurrent WriteBlob: %v", err)
		}
		return nil, nil
	}
	n, err := cas.CollectOrphans(ctx, h.store, time.Now(), time.Hour, refs)
	if err != nil || n != 0 {
		t.Fatalf("CollectOrphans=%d, %v, want 0, nil", n, err)
	}
	mustRead(t, h.store, d, data)
}

func TestCollectOrphansWithoutGraceDeletesEveryUnreferencedBlob(t *testing.T) {
	h := newDirHarness(t)
	ctx := context.Background()
	a := mustWrite(t, h.store, []byte("a"))
	b := mustWrite(t, h.store, []byte("b"))
	refs := func(context.Context, []core.ContentDigest) (map[core.ContentDigest]bool, error) {
		return map[core.ContentDigest]bool{a: true}, nil
	}
	// The file system's clock may lag time.Now() by a tick; a second of
	// slack keeps "written just now" strictly before the cutoff.
	n, err := cas.CollectOrphans(ctx, h.store, time.Now().Add(time.Second), 0, refs)
	if err != nil || n != 1 {
		t.Fatalf("CollectOrphans=%d, %v, want 1, nil", n, err)
	}
	mustContain(t, h.store, a, true)
	mustContain(t, h.store, b, false)
}

func TestCollectOrphansAsksOnlyAboutCandidates(t *testing.T) {
	h := newDirHarness(t)
	ctx := context.Background()
	mustWrite(t, h.store, []byte("young"))
	called := false
	refs := func(context.Context, []core.ContentDigest) (map[core.ContentDigest]bool, error) {
		called = true
		return nil, nil
	}
	if n, err := cas.CollectOrphans(ctx, h.store, time.Now(), time.Hour, refs); err != nil || n != 0 {
		t.Fatalf("CollectOrphans=%d, %v, want 0, nil", n, err)
	}
	if called {
		t.Fatal("references were read although no blob is older than the grace period")
	}
}
