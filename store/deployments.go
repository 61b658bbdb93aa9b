package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/stela-dev/stela/core"
)

// Deployments, component metadata and source mappings (core.DeploymentStore,
// docs/spec/semantics.md §6.5–6.7), made once over the Backend's deployment rows with core's
// pure rules (core/deployments.go). The CAS (Options.Cas) holds the blobs:
// file sizes, missing_digests, the blob check of upsert_source_mapping and
// gc_orphan_files are the service's; backends never touch it for
// deployments. Without a CAS the service behaves as if it were empty and
// read-only: every file is missing (size 0), gc deletes nothing and
// upsert_source_mapping fails because its blob does not exist.

// DefaultGCGrace is the default grace period of gc_orphan_files
// (Options.GCGrace): a blob written (or written again) less than an hour
// ago is never collected.
const DefaultGCGrace = time.Hour

// gcGrace resolves Options.GCGrace: zero means DefaultGCGrace, a negative
// value none (Obelisk's behaviour: every unreferenced blob is deleted,
// including ones an in-flight submission has just uploaded).
func gcGrace(configured time.Duration) time.Duration {
	switch {
	case configured == 0:
		return DefaultGCGrace
	case configured < 0:
		return 0
	}
	return configured
}

// casParallelism bounds the CAS lookups of one call (sizes, presence).
const casParallelism = 8

// UpsertComponentMetadata implements core.DeploymentStore: insert-if-absent
// by digest (first write wins).
func (s *Service) UpsertComponentMetadata(ctx context.Context, records []core.ComponentMetadataRecord) error {
	for _, r := range records {
		if err := r.Validate(); err != nil {
			return err
		}
	}
	return s.b.Update(ctx, func(tx Tx) error {
		_, err := insertMetadata(tx, records, nil)
		return err
	})
}

// insertMetadata inserts the records whose digest has no metadata yet and
// returns the stored metadata of records and of the extra digests.
func insertMetadata(tx Tx, records []core.ComponentMetadataRecord, components []core.DeploymentComponentRecord) (map[core.ComponentDigest]core.ComponentMetadataRecord, error) {
	stored, err := tx.ComponentMetadata(core.ComponentDigests(components, records))
	if err != nil {
		return nil, err
	}
	if absent := core.NewMetadata(records, stored); len(absent) > 0 {
		if err := tx.InsertComponentMetadata(absent); err != nil {
			return nil, err
		}
	}
	return stored, nil
}

// InsertDeploymentComponents implements core.DeploymentStore:
// insert-if-absent by (deployment, name). core.ErrNotFound if the deployment
// does not exist, *core.ValidationError for a component of another
// deployment or without metadata.
func (s *Service) InsertDeploymentComponents(ctx context.Context, dep core.DeploymentId, records []core.DeploymentComponentRecord) error {
	return s.b.Update(ctx, func(tx Tx) error {
		d, err := tx.Deployment(dep)
		if err != nil {
			return err
		}
		added, err := core.AddDeploymentComponents(&d, records)
		if err != nil {
			return err
		}
		meta, err := tx.ComponentMetadata(core.ComponentDigests(records, nil))
		if err != nil {
			return err
		}
		if err := core.RequireMetadata(records, meta, nil); err != nil {
			return err
		}
		if len(added) == 0 {
			return nil
		}
		return tx.AddDeploymentComponents(dep, added)
	})
}

// InsertDeploymentWithComponents implements core.DeploymentStore in one
// transaction (core.NewDeployment says what is rejected); a duplicate
// deployment id is core.ErrConflict.
func (s *Service) InsertDeploymentWithComponents(ctx context.Context, record core.DeploymentRecord, metadata []core.ComponentMetadataRecord, components []core.DeploymentComponentRecord, files []core.DeploymentComponentFileRecord) error {
	d, err := core.NewDeployment(record, metadata, components, files)
	if err != nil {
		return err
	}
	return s.b.Update(ctx, func(tx Tx) error {
		stored, err := insertMetadata(tx, metadata, d.Components)
		if err != nil {
			return err
		}
		if err := core.RequireMetadata(d.Components, stored, metadata); err != nil {
			return err
		}
		return tx.InsertDeployment(d)
	})
}

// deployment reads one deployment in a View; found is false when absent.
func (s *Service) deployment(ctx context.Context, dep core.DeploymentId, also func(tx ReadTx, d core.StoredDeployment) error) (d core.StoredDeployment, found bool, err error) {
	err = s.view(ctx, func(tx ReadTx) error {
		d, err = tx.Deployment(dep)
		if errors.Is(err, core.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		found = true
		if also != nil {
			return also(tx, d)
		}
		return nil
	})
	return d, found, err
}

// ListDeploymentComponents implements core.DeploymentStore: components with
// metadata by type then name, each with its files whose blob is in the CAS.
func (s *Service) ListDeploymentComponents(ctx context.Context, dep core.DeploymentId) ([]core.DeploymentComponentDetail, error) {
	var meta map[core.ComponentDigest]core.ComponentMetadataRecord
	d, _, err := s.deployment(ctx, dep, func(tx ReadTx, d core.StoredDeployment) (err error) {
		meta, err = tx.ComponentMetadata(core.ComponentDigests(d.Components, nil))
		return err
	})
	if err != nil {
		return nil, err
	}
	out := core.ComponentDetails(d, meta)
	for i := range out {
		files := make([]core.DeploymentFileRecord, len(out[i].Files))
		for j, f := range out[i].Files {
			files[j] = f.File
		}
		present, err := s.sizes(ctx, files)
		if err != nil {
			return nil, err
		}
		kept := out[i].Files[:0]
		for j, f := range out[i].Files {
			if present[j] {
				f.File = files[j]
				kept = append(kept, f)
			}
		}
		out[i].Files = kept
	}
	return out, nil
}

// GetDeploymentComponentWit implements core.DeploymentStore: the WIT of the
// metadata of a component of dep with that digest; core.ErrNotFound if
// there is none.
func (s *Service) GetDeploymentComponentWit(ctx context.Context, dep core.DeploymentId, digest core.ComponentDigest) (string, error) {
	var wit string
	var found bool
	_, _, err := s.deployment(ctx, dep, func(tx ReadTx, d core.StoredDeployment) error {
		if !slices.ContainsFunc(d.Components, func(c core.DeploymentComponentRecord) bool { return c.ComponentDigest == digest }) {
			return nil
		}
		meta, err := tx.ComponentMetadata([]core.ComponentDigest{digest})
		m, ok := meta[digest]
		wit, found = m.Wit, ok
		return err
	})
	if err != nil {
		return "", err
	}
	if !found {
		return "", fmt.Errorf("store: wit of %s in deployment %s: %w", digest, dep, core.ErrNotFound)
	}
	return wit, nil
}

// page reads a page of deployments, newest first.
func (s *Service) page(ctx context.Context, p core.Pagination[*core.DeploymentId], withToml, withFiles bool) ([]core.StoredDeployment, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var ds []core.StoredDeployment
	err := s.view(ctx, func(tx ReadTx) (err error) {
		ds, err = tx.Deployments(p, withToml, withFiles)
		return err
	})
	if err != nil {
		return nil, err
	}
	if !p.IsDesc() {
		slices.Reverse(ds)
	}
	return ds, nil
}

// ListDeploymentStates implements core.DeploymentStore: a page of
// deployments, newest first, with the counts of the executions whose
// current deployment each is (docs/spec/semantics.md §8 item 21), read by the backend.
func (s *Service) ListDeploymentStates(ctx context.Context, currentTime core.Timestamp, p core.Pagination[*core.DeploymentId], includeToml bool, counts core.DeploymentExecutionCounts) ([]core.DeploymentState, error) {
	ds, err := s.page(ctx, p, includeToml, false)
	if err != nil {
		return nil, err
	}
	out := make([]core.DeploymentState, len(ds))
	for i, d := range ds {
		out[i] = d.Record.State(includeToml)
	}
	if counts.Skip || len(out) == 0 {
		return out, nil
	}
	if err := s.b.CountDeploymentExecutions(ctx, out, currentTime, counts.IncludeDerived); err != nil {
		return nil, fmt.Errorf("store: count executions per deployment: %w", err)
	}
	return out, nil
}

// ListDeployments implements core.DeploymentStore: newest first, with TOML
// and files (sizes from the CAS).
func (s *Service) ListDeployments(ctx context.Context, p core.Pagination[*core.DeploymentId]) ([]core.DeploymentRecord, error) {
	ds, err := s.page(ctx, p, true, true)
	if err != nil {
		return nil, err
	}
	out := make([]core.DeploymentRecord, len(ds))
	for i, d := range ds {
		if out[i], err = s.withSizes(ctx, d.Record); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// GetDeployment implements core.DeploymentStore; core.ErrNotFound if absent.
func (s *Service) GetDeployment(ctx context.Context, dep core.DeploymentId) (core.DeploymentRecord, error) {
	d, found, err := s.deployment(ctx, dep, nil)
	if err != nil {
		return core.DeploymentRecord{}, err
	}
	if !found {
		return core.DeploymentRecord{}, fmt.Errorf("store: deployment %s: %w", dep, core.ErrNotFound)
	}
	return s.withSizes(ctx, d.Record)
}

// GetActiveDeployment implements core.DeploymentStore.
func (s *Service) GetActiveDeployment(ctx context.Context) (core.DeploymentRecord, error) {
	return s.current(ctx, false, "active deployment")
}

// GetCurrentDeployment implements core.DeploymentStore: the enqueued
// deployment, else the active one.
func (s *Service) GetCurrentDeployment(ctx context.Context) (core.DeploymentRecord, error) {
	return s.current(ctx, true, "current deployment")
}

// currentAttempts bounds the re-reads of current when a concurrent switch
// made the pointer and the deployment disagree.
const currentAttempts = 8

// current reads the deployment named active (or enqueued, then active). A
// backend whose View is not a snapshot (DynamoDB) may show a switch
// committed between the two reads; the deployment's own status tells, and
// the read is repeated.
func (s *Service) current(ctx context.Context, preferEnqueued bool, what string) (core.DeploymentRecord, error) {
	var rec core.DeploymentRecord
	err := Retry(ctx, "store: read the "+what, currentAttempts, func(int) error {
		return s.view(ctx, func(tx ReadTx) error {
			active, enqueued, err := tx.CurrentDeployments()
			if err != nil {
				return err
			}
			id, want := active, core.DeploymentActive
			if preferEnqueued && enqueued != nil {
				id, want = enqueued, core.DeploymentEnqueued
			}
			if id == nil {
				return fmt.Errorf("store: %s: %w", what, core.ErrNotFound)
			}
			d, err := tx.Deployment(*id)
			if err == nil && d.Record.Status != want {
				err = core.ErrNotFound
			}
			if errors.Is(err, core.ErrNotFound) {
				return Again(fmt.Errorf("deployment %s is no longer %s", id, want))
			}
			rec = d.Record
			return err
		})
	})
	if err != nil {
		return core.DeploymentRecord{}, err
	}
	return s.withSizes(ctx, rec)
}

// ActivateDeployment implements core.DeploymentStore: the target becomes
// the only active deployment and none stays enqueued (core.PlanActivation).
func (s *Service) ActivateDeployment(ctx context.Context, dep core.DeploymentId, now core.Timestamp) error {
	return s.b.Update(ctx, func(tx Tx) error {
		if _, err := tx.Deployment(dep); err != nil {
			return err
		}
		active, enqueued, err := tx.CurrentDeployments()
		if err != nil {
			return err
		}
		return setStatuses(tx, core.PlanActivation(active, enqueued, dep, now))
	})
}

// EnqueueDeployment implements core.DeploymentStore (core.PlanEnqueue).
func (s *Service) EnqueueDeployment(ctx context.Context, dep core.DeploymentId) (core.EnqueueOutcome, error) {
	var out core.EnqueueOutcome
	err := s.b.Update(ctx, func(tx Tx) error {
		if _, err := tx.Deployment(dep); err != nil {
			return err
		}
		active, enqueued, err := tx.CurrentDeployments()
		if err != nil {
			return err
		}
		var changes []core.DeploymentStatusChange
		out, changes = core.PlanEnqueue(active, enqueued, dep)
		return setStatuses(tx, changes)
	})
	if err != nil {
		return 0, err
	}
	return out, nil
}

func setStatuses(tx Tx, changes []core.DeploymentStatusChange) error {
	for _, c := range changes {
		if err := tx.SetDeploymentStatus(c.ID, c.Status, c.LastActiveAt); err != nil {
			return err
		}
	}
	return nil
}

// ListDeploymentFiles implements core.DeploymentStore: by path, sizes from
// the CAS (0 when the blob is missing); none for an unknown deployment.
func (s *Service) ListDeploymentFiles(ctx context.Context, dep core.DeploymentId) ([]core.DeploymentFileRecord, error) {
	d, _, err := s.deployment(ctx, dep, nil)
	if err != nil {
		return nil, err
	}
	r, err := s.withSizes(ctx, d.Record)
	return r.Files, err
}

// MissingDigests implements core.DeploymentStore: the deployment's file
// digests that are not in the CAS, by digest, with repeats.
func (s *Service) MissingDigests(ctx context.Context, dep core.DeploymentId) ([]core.ContentDigest, error) {
	d, _, err := s.deployment(ctx, dep, nil)
	if err != nil {
		return nil, err
	}
	files := d.Record.Files
	present, err := s.sizes(ctx, files)
	if err != nil {
		return nil, err
	}
	missing := []core.ContentDigest{}
	for i, f := range files {
		if !present[i] {
			missing = append(missing, f.Digest)
		}
	}
	core.SortDigests(missing)
	return missing, nil
}

// GCOrphanFiles implements core.DeploymentStore: the CAS deletes every blob
// last written more than Options.GCGrace ago that the backend reports as
// unreferenced (Backend.BlobReferences), checked right before each
// deletion. With no CAS there is nothing to collect; a CAS that cannot list
// and delete is core.ErrNotImplemented.
func (s *Service) GCOrphanFiles(ctx context.Context) (uint64, error) {
	if s.cas == nil {
		return 0, nil
	}
	c := s.casc.collector
	if c == nil {
		return 0, fmt.Errorf("store: gc: the CAS (%T) cannot list and delete blobs: %w", s.cas, core.ErrNotImplemented)
	}
	grace := s.grace
	n, err := c.CollectOrphans(ctx, s.clock.Now().Time, grace,
		func(ctx context.Context, candidates []core.ContentDigest) (map[core.ContentDigest]bool, error) {
			return s.b.BlobReferences(ctx, candidates, grace)
		})
	if err != nil {
		return n, fmt.Errorf("store: %w", err)
	}
	return n, nil
}

// UpsertSourceMapping implements core.DeploymentStore (replace semantics).
// The blob must already be in the CAS (*core.ValidationError otherwise), as
// Obelisk's foreign key to t_file demands, so a mapping never refers to a
// missing blob.
func (s *Service) UpsertSourceMapping(ctx context.Context, component core.ComponentDigest, frameKey string, isSuffix bool, digest core.ContentDigest) error {
	present, err := s.contains(ctx, digest)
	if err != nil {
		return fmt.Errorf("store: source mapping %q: %w", frameKey, err)
	}
	if !present {
		return &core.ValidationError{Reason: fmt.Sprintf("source mapping %q: blob %s is not in the CAS", frameKey, digest)}
	}
	return s.b.Update(ctx, func(tx Tx) error {
		return tx.PutSourceMapping(core.SourceMapping{Component: component,
			Key: core.SourceKey{FrameKey: frameKey, IsSuffix: isSuffix}, Digest: digest})
	})
}

// ResolveSourceDigest implements core.DeploymentStore: of the exact key
// equal to file and the suffix keys file ends with (core.SourceKeys),
// exactly one mapping must exist; core.ErrNotFound otherwise.
func (s *Service) ResolveSourceDigest(ctx context.Context, component core.ComponentDigest, file string) (core.ContentDigest, error) {
	var found []core.SourceMapping
	err := s.view(ctx, func(tx ReadTx) (err error) {
		found, err = tx.SourceMappings(component, core.SourceKeys(file))
		return err
	})
	if err != nil {
		return core.ContentDigest{}, err
	}
	if len(found) != 1 {
		return core.ContentDigest{}, fmt.Errorf("store: source %q of %s (%d mappings match): %w", file, component, len(found), core.ErrNotFound)
	}
	return found[0].Digest, nil
}

// --- the CAS ------------------------------------------------------------------------

func (s *Service) contains(ctx context.Context, d core.ContentDigest) (bool, error) {
	if s.cas == nil {
		return false, nil
	}
	return s.cas.ContainsBlob(ctx, d)
}

// blobSize returns the size of a blob and whether it is in the CAS.
func (s *Service) blobSize(ctx context.Context, d core.ContentDigest) (int64, bool, error) {
	if s.cas == nil {
		return 0, false, nil
	}
	var n int64
	var err error
	if sz := s.casc.sizer; sz != nil {
		n, err = sz.Size(ctx, d)
	} else {
		var data []byte
		data, err = s.cas.ReadBlob(ctx, d)
		n = int64(len(data))
	}
	if errors.Is(err, core.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("store: size of %s: %w", d, err)
	}
	return n, true, nil
}

// sizes sets each file's size from the CAS (0 when missing) and reports
// which blobs are present, looking them up casParallelism at a time.
func (s *Service) sizes(ctx context.Context, files []core.DeploymentFileRecord) ([]bool, error) {
	present := make([]bool, len(files))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(casParallelism)
	for i := range files {
		g.Go(func() error {
			n, ok, err := s.blobSize(gctx, files[i].Digest)
			files[i].Size, present[i] = uint64(n), ok
			return err
		})
	}
	return present, g.Wait()
}

// withSizes returns r with its files' sizes from the CAS, logging the
// files whose blob is missing (size 0).
func (s *Service) withSizes(ctx context.Context, r core.DeploymentRecord) (core.DeploymentRecord, error) {
	r.Files = slices.Clone(r.Files)
	if r.Files == nil {
		r.Files = []core.DeploymentFileRecord{}
	}
	present, err := s.sizes(ctx, r.Files)
	if err != nil {
		return core.DeploymentRecord{}, err
	}
	for i, f := range r.Files {
		if !present[i] && s.cas != nil {
			s.log.WarnContext(ctx, "deployment file blob is missing from the CAS", core.LogKeyPath, f.Path, core.LogKeyDigest, f.Digest.String())
		}
	}
	return r, nil
}

// FunctionComponent implements core.WorkerConn from the current
// deployment's components (core.FunctionComponent).
func (s *Service) FunctionComponent(ctx context.Context, ffqn core.FunctionFqn) (core.ComponentId, core.DeploymentId, error) {
	return core.FunctionComponent(ctx, s, ffqn)
}
