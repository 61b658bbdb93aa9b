package mem

import (
	"time"

	"github.com/stela-dev/stela/core"
)

// Options configures the parts of the backend that New leaves empty.
type Options struct {
	// Cas holds the blobs that deployment files and source mappings refer
	// to (sizes, missing_digests, gc_orphan_files). gc_orphan_files needs
	// one that can list and delete blobs (a cas.Store). Without a CAS the
	// backend behaves as if its CAS were empty and read-only: every file
	// is missing (size 0), gc deletes nothing and upsert_source_mapping
	// fails because its blob does not exist.
	Cas core.Cas
	// Clock measures the grace period of gc_orphan_files; default the
	// system clock.
	Clock core.Clock
	// GCGrace is how long after its last write a blob is safe from
	// gc_orphan_files; zero means cas.DefaultGCGrace (one hour), a negative
	// value none (Obelisk's behaviour).
	GCGrace time.Duration
}

// NewWithOptions returns an empty backend configured by opts.
func NewWithOptions(opts Options) *Backend {
	b := New()
	b.deps.cas = opts.Cas
	b.deps.clock = opts.Clock
	b.deps.grace = opts.GCGrace
	return b
}

// Cas returns the CAS the backend reads blob sizes from (nil if none).
func (b *Backend) Cas() core.Cas { return b.deps.cas }
