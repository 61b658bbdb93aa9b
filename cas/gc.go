package cas

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stela-dev/stela/core"
)

// Collectable is what CollectOrphans needs from a blob store; every Store
// has it.
type Collectable interface {
	ListInfo(ctx context.Context, fn func(BlobInfo) error) error
	Stat(ctx context.Context, digest core.ContentDigest) (BlobInfo, error)
	Delete(ctx context.Context, digest core.ContentDigest) error
}

// ReferencedFunc reports which of candidates are referenced by the database
// (deployment files, source mappings, offloaded payloads). It must read
// state committed no earlier than its own start (a strongly consistent
// read), and it may return digests that are not candidates. It is an alias
// so that the CollectOrphans methods satisfy store.OrphanCollector.
type ReferencedFunc = func(ctx context.Context, candidates []core.ContentDigest) (map[core.ContentDigest]bool, error)

// CollectOrphans deletes every blob of s that was last written before
// now-grace and that referenced does not report as referenced, and returns
// how many it deleted. The order of its steps is what makes it safe against
// concurrent writers (see "Garbage collection" in the package
// documentation):
//
//  1. list the blobs; the candidates are those with ModTime < now-grace;
//  2. for each candidate, right before deleting it: ask referenced about it
//     (so every reference committed before that moment is seen), then Stat
//     it again and spare it if it is gone or was written again meanwhile
//     (its ModTime is no longer before now-grace), else delete it.
//
// Deleting is not atomic with these checks, so a writer that commits a
// reference to an old orphan within the few milliseconds between step 2's
// reads and the Delete can still lose it; the grace period cannot close
// that window, only narrow it to writers that reuse a blob last written
// more than the grace period ago.
func CollectOrphans(ctx context.Context, s Collectable, now time.Time, grace time.Duration, referenced ReferencedFunc) (uint64, error) {
	cutoff := now.Add(-grace)
	var candidates []core.ContentDigest
	if err := s.ListInfo(ctx, func(bi BlobInfo) error {
		if bi.ModTime.Before(cutoff) {
			candidates = append(candidates, bi.Digest)
		}
		return nil
	}); err != nil {
		return 0, fmt.Errorf("cas: gc: %w", err)
	}
	var deleted uint64
	for _, d := range candidates {
		refs, err := referenced(ctx, []core.ContentDigest{d})
		if err != nil {
			return deleted, fmt.Errorf("cas: gc: references of %s: %w", d, err)
		}
		if refs[d] {
			continue
		}
		bi, err := s.Stat(ctx, d)
		if errors.Is(err, core.ErrNotFound) {
			continue
		}
		if err != nil {
			return deleted, fmt.Errorf("cas: gc: %w", err)
		}
		if !bi.ModTime.Before(cutoff) {
			continue
		}
		if err := s.Delete(ctx, d); err != nil {
			return deleted, fmt.Errorf("cas: gc: %w", err)
		}
		deleted++
	}
	return deleted, nil
}

// CollectOrphans runs the package's CollectOrphans on s (store.OrphanCollector).
func (s *Dir) CollectOrphans(ctx context.Context, now time.Time, grace time.Duration, referenced ReferencedFunc) (uint64, error) {
	return CollectOrphans(ctx, s, now, grace, referenced)
}

// CollectOrphans runs the package's CollectOrphans on s (store.OrphanCollector).
func (s *S3) CollectOrphans(ctx context.Context, now time.Time, grace time.Duration, referenced ReferencedFunc) (uint64, error) {
	return CollectOrphans(ctx, s, now, grace, referenced)
}
