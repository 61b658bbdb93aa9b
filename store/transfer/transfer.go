package transfer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
)

// Store is one end of a transfer: a store and the CAS its deployment
// files and source mappings refer to (nil: none, blobs are not copied).
type Store struct {
	Service *store.Service
	Cas     core.Cas
}

// Options tune a transfer.
type Options struct {
	// Source describes the source in the stream's header (Export).
	Source string
	// Parallel is how many trees are imported at once into a destination
	// that writes executions itself (store.Importer: DynamoDB); a
	// destination written through single transactions (the embedded store,
	// which orders executions by insertion) imports one tree at a time, in
	// the stream's order. Zero means 8.
	Parallel int
	// Progress, when set, is called with the running totals after every
	// tree (from one goroutine at a time).
	Progress func(Summary)
	// Clock stamps the stream's header (default: the source service's
	// clock is not reachable, so the system clock).
	Clock core.Clock
}

// Summary counts what a transfer read and did.
type Summary struct {
	// What was read: trees, executions, their events, responses, timer
	// rows and backtraces, log rows, blobs (and their bytes), deployments,
	// component metadata, source mappings.
	Trees, Executions, Events, Responses, Delays, Backtraces, LogRows int
	Blobs                                                             int
	BlobBytes                                                         int64
	Deployments, ComponentMetadata, SourceMappings                    int
	// Locked counts the executions that were locked (running) when they
	// were exported: in the destination their locks expire and they are
	// retried, as after a worker that crashed.
	Locked int
	// MissingBlobs are deployment files and source mappings the source's
	// CAS lacks (not copied; the destination reports them missing too).
	MissingBlobs []core.ContentDigest
	// StreamBytes is the size of the stream written (Export).
	StreamBytes int64

	// Import outcomes, per tree (store.ImportOutcome) and for deployment
	// records (deployments, metadata, source mappings together).
	Written, Resumed, Unchanged, Expired int
	RecordsWritten, RecordsUnchanged     int
	// Conflicts lists the records the destination holds differently (not
	// written); Import and Copy then fail with ErrConflicts at the end.
	Conflicts []string
}

// ErrConflicts means the destination holds some records differently; they
// were reported in Summary.Conflicts and not written, everything else was.
var ErrConflicts = errors.New("transfer: the destination holds some records differently (not overwritten)")

func (s *Summary) read(t *store.TreeRecord) {
	s.Trees++
	s.Executions += len(t.Executions)
	for i := range t.Executions {
		r := &t.Executions[i]
		s.Events += len(r.Events)
		s.Responses += len(r.Responses)
		s.Delays += len(r.Delays)
		s.Backtraces += len(r.Backtraces)
		if r.Head.State == core.StateLocked {
			s.Locked++
		}
	}
	s.LogRows += len(t.Logs.Rows)
}

// sink receives a stream's records in order.
type sink interface {
	tree(ctx context.Context, t store.TreeRecord) error
	blob(ctx context.Context, d core.ContentDigest, data []byte) error
	deployment(ctx context.Context, d core.StoredDeployment) error
	metadata(ctx context.Context, m core.ComponentMetadataRecord) error
	sourceMapping(ctx context.Context, m core.SourceMapping) error
	// missing reports a blob the source's CAS lacks.
	missing(d core.ContentDigest)
	end(ctx context.Context) error
}

// Export writes every tree, blob, deployment, component metadata record and
// source mapping of src to w as a stream (doc.go, "Stream format").
func Export(ctx context.Context, src Store, w io.Writer, opts Options) (Summary, error) {
	clock := opts.Clock
	if clock == nil {
		clock = store.SystemClock{}
	}
	wr, err := newWriter(w, opts.Source, clock.Now())
	if err != nil {
		return Summary{}, err
	}
	var sum Summary
	err = walk(ctx, src, &writerSink{w: wr, sum: &sum, progress: opts.Progress})
	sum.StreamBytes = wr.bytes
	return sum, err
}

// Import reads a stream from r into dst. Every record is checked before it
// is written (digests, framing, validity); a stream cut short imports what
// it holds and fails with ErrTruncated. Records dst holds identically are
// left alone, so importing again (or resuming an interrupted import)
// writes only what is missing.
func Import(ctx context.Context, r io.Reader, dst Store, opts Options) (Summary, error) {
	rd, err := newReader(r)
	if err != nil {
		return Summary{}, err
	}
	var sum Summary
	im := newImporter(dst, &sum, opts)
	for {
		it, err := rd.read()
		if err != nil {
			return sum, errors.Join(err, im.close(ctx))
		}
		switch {
		case it.tree != nil:
			err = im.tree(ctx, *it.tree)
		case it.blob != nil:
			err = im.blob(ctx, it.blob.digest, it.blob.data)
		case it.deployment != nil:
			err = im.deployment(ctx, *it.deployment)
		case it.componentMetadata != nil:
			err = im.metadata(ctx, *it.componentMetadata)
		case it.sourceMapping != nil:
			err = im.sourceMapping(ctx, *it.sourceMapping)
		case it.end:
			return sum, im.end(ctx)
		}
		if err != nil {
			return sum, errors.Join(err, im.close(ctx))
		}
	}
}

// Copy copies every record of src into dst directly, as Export then Import
// would.
func Copy(ctx context.Context, src, dst Store, opts Options) (Summary, error) {
	var sum Summary
	im := newImporter(dst, &sum, opts)
	err := walk(ctx, src, im)
	if err != nil {
		return sum, errors.Join(err, im.close(ctx))
	}
	return sum, nil
}

// walk reads src and hands every record to out, in the stream's order:
// the trees (in the order their first executions were created), then the blobs, deployments, component metadata
// and source mappings. The component digests whose metadata and source
// mappings are copied are those of the deployments' components and of
// the executions (their current and incompatible digests, their
// backtraces' components).
func walk(ctx context.Context, src Store, out sink) error {
	digests := map[core.ComponentDigest]bool{}
	err := src.Service.Export(ctx, func(r *store.ExportReader) error {
		roots, err := r.TreeRoots()
		if err != nil {
			return fmt.Errorf("transfer: list trees: %w", err)
		}
		for _, root := range roots {
			t, err := r.Tree(root)
			if err != nil {
				return fmt.Errorf("transfer: read tree %s: %w", root, err)
			}
			if len(t.Executions) == 0 {
				continue // gone since it was listed (expired by retention)
			}
			for i := range t.Executions {
				h := &t.Executions[i].Head
				digests[h.ComponentDigest] = true
				if h.IncompatibleDigest != nil {
					digests[*h.IncompatibleDigest] = true
				}
				for _, bt := range t.Executions[i].Backtraces {
					digests[bt.ComponentID.ComponentDigest] = true
				}
			}
			if err := out.tree(ctx, t); err != nil {
				return err
			}
		}
		return walkDeployments(ctx, r, src, out, digests)
	})
	if err != nil {
		return err
	}
	return out.end(ctx)
}

func walkDeployments(ctx context.Context, r *store.ExportReader, src Store, out sink, digests map[core.ComponentDigest]bool) error {
	deps, err := r.Deployments()
	if err != nil {
		return fmt.Errorf("transfer: list deployments: %w", err)
	}
	blobs := map[core.ContentDigest]bool{}
	for _, d := range deps {
		for _, c := range d.Components {
			digests[c.ComponentDigest] = true
		}
		for _, f := range d.Record.Files {
			blobs[f.Digest] = true
		}
	}
	comps := sortedKeys(digests, func(d core.ComponentDigest) string { return d.String() })
	meta, err := r.ComponentMetadata(comps)
	if err != nil {
		return fmt.Errorf("transfer: read component metadata: %w", err)
	}
	var mappings []core.SourceMapping
	for _, c := range comps {
		ms, err := r.SourceMappingsOf(c)
		if err != nil {
			return fmt.Errorf("transfer: read the source mappings of %s: %w", c, err)
		}
		for _, m := range ms {
			blobs[m.Digest] = true
		}
		mappings = append(mappings, ms...)
	}
	for _, d := range sortedKeys(blobs, func(d core.ContentDigest) string { return d.String() }) {
		var data []byte
		if src.Cas != nil {
			data, err = src.Cas.ReadBlob(ctx, d)
		}
		if src.Cas == nil || errors.Is(err, core.ErrNotFound) {
			out.missing(d)
			continue
		}
		if err != nil {
			return fmt.Errorf("transfer: read blob %s: %w", d, err)
		}
		if err := out.blob(ctx, d, data); err != nil {
			return err
		}
	}
	for _, d := range deps {
		if err := out.deployment(ctx, d); err != nil {
			return err
		}
	}
	for _, c := range comps {
		if m, ok := meta[c]; ok {
			if err := out.metadata(ctx, m); err != nil {
				return err
			}
		}
	}
	for _, m := range mappings {
		if err := out.sourceMapping(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

func sortedKeys[K comparable](m map[K]bool, text func(K) string) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b K) int { return strings.Compare(text(a), text(b)) })
	return out
}

// writerSink encodes records into the stream and counts them.
type writerSink struct {
	w        *writer
	sum      *Summary
	progress func(Summary)
}

func (s *writerSink) tree(_ context.Context, t store.TreeRecord) error {
	s.sum.read(&t)
	if err := s.w.tree(t); err != nil {
		return err
	}
	if s.progress != nil {
		s.progress(*s.sum)
	}
	return nil
}

func (s *writerSink) blob(_ context.Context, d core.ContentDigest, data []byte) error {
	s.sum.Blobs++
	s.sum.BlobBytes += int64(len(data))
	return s.w.blob(d, data)
}

func (s *writerSink) deployment(_ context.Context, d core.StoredDeployment) error {
	s.sum.Deployments++
	return s.w.deployment(d)
}

func (s *writerSink) metadata(_ context.Context, m core.ComponentMetadataRecord) error {
	s.sum.ComponentMetadata++
	return s.w.metadata(m)
}

func (s *writerSink) sourceMapping(_ context.Context, m core.SourceMapping) error {
	s.sum.SourceMappings++
	return s.w.sourceMapping(m)
}

func (s *writerSink) missing(d core.ContentDigest) {
	s.sum.MissingBlobs = append(s.sum.MissingBlobs, d)
}

func (s *writerSink) end(context.Context) error { return s.w.end() }

// importer writes records into a destination store; trees go to a pool of
// workers when the destination writes executions itself.
type importer struct {
	dst      Store
	progress func(Summary)

	mu   sync.Mutex // guards sum and err
	sum  *Summary
	err  error
	sem  chan struct{}
	wg   sync.WaitGroup
	pool bool
}

func newImporter(dst Store, sum *Summary, opts Options) *importer {
	n := opts.Parallel
	if n <= 0 {
		n = 8
	}
	return &importer{dst: dst, sum: sum, progress: opts.Progress, sem: make(chan struct{}, n),
		pool: dst.Service.ParallelImport()}
}

func (im *importer) tree(ctx context.Context, t store.TreeRecord) error {
	im.countRecord(func(s *Summary) { s.read(&t) })
	if !im.pool {
		return im.importTree(ctx, t)
	}
	if err := im.failed(); err != nil {
		return err
	}
	select {
	case im.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	im.wg.Go(func() {
		defer func() { <-im.sem }()
		if err := im.importTree(ctx, t); err != nil {
			im.mu.Lock()
			if im.err == nil {
				im.err = err
			}
			im.mu.Unlock()
		}
	})
	return nil
}

func (im *importer) failed() error {
	im.mu.Lock()
	defer im.mu.Unlock()
	return im.err
}

func (im *importer) importTree(ctx context.Context, t store.TreeRecord) error {
	res, err := im.dst.Service.ImportTree(ctx, t)
	im.mu.Lock()
	defer im.mu.Unlock()
	if err := im.conflict(err); err != nil {
		return fmt.Errorf("transfer: import tree %s: %w", t.Root, err)
	}
	switch res.Outcome {
	case store.ImportWritten:
		im.sum.Written++
	case store.ImportResumed:
		im.sum.Resumed++
	case store.ImportUnchanged:
		im.sum.Unchanged++
	case store.ImportExpired:
		im.sum.Expired++
	}
	if im.progress != nil {
		im.progress(*im.sum)
	}
	return nil
}

// close waits for the trees being imported.
func (im *importer) close(context.Context) error {
	im.wg.Wait()
	return im.failed()
}

// conflict lists err in the summary when it is a conflict (nil then),
// else returns it. im.mu is held.
func (im *importer) conflict(err error) error {
	var ce *store.ConflictError
	if errors.As(err, &ce) {
		im.sum.Conflicts = append(im.sum.Conflicts, ce.Error())
		return nil
	}
	return err
}

func (im *importer) record(outcome store.ImportOutcome, err error) error {
	im.mu.Lock()
	defer im.mu.Unlock()
	switch {
	case err != nil:
		return im.conflict(err)
	case outcome == store.ImportUnchanged:
		im.sum.RecordsUnchanged++
	default:
		im.sum.RecordsWritten++
	}
	return nil
}

func (im *importer) missing(d core.ContentDigest) {
	im.countRecord(func(s *Summary) { s.MissingBlobs = append(s.MissingBlobs, d) })
}

func (im *importer) blob(ctx context.Context, d core.ContentDigest, data []byte) error {
	im.countRecord(func(s *Summary) {
		s.Blobs++
		s.BlobBytes += int64(len(data))
	})
	if im.dst.Cas == nil {
		return fmt.Errorf("transfer: blob %s: the destination has no CAS", d)
	}
	got, err := im.dst.Cas.WriteBlob(ctx, data)
	if err != nil {
		return fmt.Errorf("transfer: write blob %s: %w", d, err)
	}
	if got != d {
		return fmt.Errorf("transfer: blob %s was stored as %s", d, got)
	}
	return nil
}

func (im *importer) deployment(ctx context.Context, d core.StoredDeployment) error {
	if err := im.close(ctx); err != nil { // executions first
		return err
	}
	im.countRecord(func(s *Summary) { s.Deployments++ })
	out, err := im.dst.Service.ImportDeployment(ctx, d)
	return im.record(out, err)
}

func (im *importer) metadata(ctx context.Context, m core.ComponentMetadataRecord) error {
	im.countRecord(func(s *Summary) { s.ComponentMetadata++ })
	out, err := im.dst.Service.ImportComponentMetadata(ctx, m)
	return im.record(out, err)
}

func (im *importer) sourceMapping(ctx context.Context, m core.SourceMapping) error {
	im.countRecord(func(s *Summary) { s.SourceMappings++ })
	out, err := im.dst.Service.ImportSourceMapping(ctx, m)
	return im.record(out, err)
}

func (im *importer) countRecord(fn func(*Summary)) {
	im.mu.Lock()
	defer im.mu.Unlock()
	fn(im.sum)
}

func (im *importer) end(ctx context.Context) error {
	if err := im.close(ctx); err != nil {
		return err
	}
	if len(im.sum.Conflicts) > 0 {
		return fmt.Errorf("%w: %d, first: %s", ErrConflicts, len(im.sum.Conflicts), im.sum.Conflicts[0])
	}
	return nil
}
