package mem

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stela-dev/stela/cas"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
)

// deployments is the reference model of core.DeploymentStore
// (docs/spec/semantics.md §6.5–6.7): plain maps guarded by Backend.mu. Blob bytes live in the CAS;
// CAS calls are made without holding the mutex.
type deployments struct {
	cas   core.Cas
	clock core.Clock
	grace time.Duration

	byID     map[core.DeploymentId]*deployment
	metadata map[core.ComponentDigest]core.ComponentMetadataRecord
	sources  map[sourceKey]core.ContentDigest
}

// deployment is a stored deployment. rec.Files is sorted by path and holds
// no sizes (they come from the CAS when read).
type deployment struct {
	rec        core.DeploymentRecord
	components map[string]core.DeploymentComponentRecord
	// files maps a component name to its files (path → role).
	files map[string]map[string]core.ComponentFileRole
}

type sourceKey struct {
	component core.ComponentDigest
	frameKey  string
	isSuffix  bool
}

// init creates the maps on first use (callers hold b.mu).
func (d *deployments) init() {
	if d.byID == nil {
		d.byID = map[core.DeploymentId]*deployment{}
		d.metadata = map[core.ComponentDigest]core.ComponentMetadataRecord{}
		d.sources = map[sourceKey]core.ContentDigest{}
	}
}

// lock takes the backend mutex, fails once closed, and initialises the maps.
func (b *Backend) lockDeps() (unlock func(), err error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, core.ErrClosed
	}
	b.deps.init()
	return b.mu.Unlock, nil
}

func validationf(format string, args ...any) error {
	return &core.ValidationError{Reason: fmt.Sprintf(format, args...)}
}

// UpsertComponentMetadata implements core.DeploymentStore: insert-if-absent
// by digest, first write wins.
func (b *Backend) UpsertComponentMetadata(ctx context.Context, records []core.ComponentMetadataRecord) error {
	for _, r := range records {
		if err := r.Validate(); err != nil {
			return err
		}
	}
	unlock, err := b.lockDeps()
	if err != nil {
		return err
	}
	defer unlock()
	for _, r := range records {
		if _, ok := b.deps.metadata[r.ComponentDigest]; !ok {
			b.deps.metadata[r.ComponentDigest] = cloneMetadata(r)
		}
	}
	return nil
}

func cloneMetadata(r core.ComponentMetadataRecord) core.ComponentMetadataRecord {
	r.Imports = slices.Clone(r.Imports)
	r.Exports = slices.Clone(r.Exports)
	return r
}

// InsertDeploymentComponents implements core.DeploymentStore:
// insert-if-absent by (deployment, component name). The deployment must
// exist (core.ErrNotFound) and every component's metadata too
// (*core.ValidationError).
func (b *Backend) InsertDeploymentComponents(ctx context.Context, dep core.DeploymentId, records []core.DeploymentComponentRecord) error {
	unlock, err := b.lockDeps()
	if err != nil {
		return err
	}
	defer unlock()
	d, ok := b.deps.byID[dep]
	if !ok {
		return fmt.Errorf("mem: insert components of deployment %s: %w", dep, core.ErrNotFound)
	}
	if err := b.deps.checkComponents(dep, records, nil); err != nil {
		return err
	}
	for _, r := range records {
		if _, ok := d.components[r.ComponentName]; !ok {
			d.components[r.ComponentName] = r
		}
	}
	return nil
}

// checkComponents validates component records of deployment dep against the
// stored metadata plus extra (metadata inserted in the same transaction).
func (d *deployments) checkComponents(dep core.DeploymentId, records []core.DeploymentComponentRecord, extra []core.ComponentMetadataRecord) error {
	for _, r := range records {
		if r.DeploymentID != dep {
			return validationf("component %q belongs to deployment %s, not %s", r.ComponentName, r.DeploymentID, dep)
		}
		if _, ok := d.metadata[r.ComponentDigest]; ok {
			continue
		}
		if !slices.ContainsFunc(extra, func(m core.ComponentMetadataRecord) bool { return m.ComponentDigest == r.ComponentDigest }) {
			return validationf("component %q: no metadata for digest %s", r.ComponentName, r.ComponentDigest)
		}
	}
	return nil
}

// InsertDeploymentWithComponents implements core.DeploymentStore. A
// duplicate deployment id or a duplicate (component, path) is
// core.ErrConflict; a component file whose component or deployment file is
// not part of the insert, or a component without metadata, is a
// *core.ValidationError. Nothing is written unless everything is valid.
func (b *Backend) InsertDeploymentWithComponents(ctx context.Context, record core.DeploymentRecord, metadata []core.ComponentMetadataRecord, components []core.DeploymentComponentRecord, files []core.DeploymentComponentFileRecord) error {
	if record.Status != core.DeploymentInactive || record.LastActiveAt != nil {
		return validationf("a new deployment must be inactive and never active")
	}
	for _, m := range metadata {
		if err := m.Validate(); err != nil {
			return err
		}
	}
	dep := record.DeploymentID
	d := &deployment{rec: record, components: map[string]core.DeploymentComponentRecord{},
		files: map[string]map[string]core.ComponentFileRole{}}
	d.rec.Files = make([]core.DeploymentFileRecord, len(record.Files))
	paths := map[string]bool{}
	for i, f := range record.Files {
		if paths[f.Path] {
			return fmt.Errorf("mem: deployment %s: file %q listed twice: %w", dep, f.Path, core.ErrConflict)
		}
		paths[f.Path] = true
		d.rec.Files[i] = core.DeploymentFileRecord{Path: f.Path, Digest: f.Digest}
	}
	slices.SortFunc(d.rec.Files, compareFiles)
	for _, c := range components {
		if _, ok := d.components[c.ComponentName]; !ok {
			d.components[c.ComponentName] = c
		}
	}
	for _, f := range files {
		if _, ok := d.components[f.ComponentName]; !ok {
			return validationf("component file %q: no component %q in deployment %s", f.Path, f.ComponentName, dep)
		}
		if !paths[f.Path] {
			return validationf("component file %q of %q is not a file of deployment %s", f.Path, f.ComponentName, dep)
		}
		if !f.Role.Valid() {
			return validationf("component file %q of %q: invalid role %q", f.Path, f.ComponentName, f.Role)
		}
		byPath := d.files[f.ComponentName]
		if byPath == nil {
			byPath = map[string]core.ComponentFileRole{}
			d.files[f.ComponentName] = byPath
		}
		if _, dup := byPath[f.Path]; dup {
			return fmt.Errorf("mem: deployment %s: component file %q of %q listed twice: %w", dep, f.Path, f.ComponentName, core.ErrConflict)
		}
		byPath[f.Path] = f.Role
	}

	unlock, err := b.lockDeps()
	if err != nil {
		return err
	}
	defer unlock()
	if _, ok := b.deps.byID[dep]; ok {
		return fmt.Errorf("mem: insert deployment %s: %w", dep, core.ErrConflict)
	}
	if err := b.deps.checkComponents(dep, components, metadata); err != nil {
		return err
	}
	for _, m := range metadata {
		if _, ok := b.deps.metadata[m.ComponentDigest]; !ok {
			b.deps.metadata[m.ComponentDigest] = cloneMetadata(m)
		}
	}
	b.deps.byID[dep] = d
	return nil
}

func compareFiles(a, b core.DeploymentFileRecord) int {
	return cmp.Or(strings.Compare(a.Path, b.Path), strings.Compare(a.Digest.String(), b.Digest.String()))
}

// ListDeploymentComponents implements core.DeploymentStore: components with
// metadata, by type then name, each with the files whose blob is in the CAS.
func (b *Backend) ListDeploymentComponents(ctx context.Context, dep core.DeploymentId) ([]core.DeploymentComponentDetail, error) {
	type compFile struct {
		path string
		role core.ComponentFileRole
	}
	unlock, err := b.lockDeps()
	if err != nil {
		return nil, err
	}
	d, ok := b.deps.byID[dep]
	if !ok {
		unlock()
		return []core.DeploymentComponentDetail{}, nil
	}
	var out []core.DeploymentComponentDetail
	var files [][]compFile
	digests := map[string]core.ContentDigest{}
	for _, f := range d.rec.Files {
		digests[f.Path] = f.Digest
	}
	for _, c := range d.components {
		m, ok := b.deps.metadata[c.ComponentDigest]
		if !ok {
			continue
		}
		out = append(out, core.DeploymentComponentDetail{
			ComponentID: core.ComponentId{ComponentType: c.ComponentType, Name: c.ComponentName, ComponentDigest: c.ComponentDigest},
			Imports:     slices.Clone(m.Imports), Exports: slices.Clone(m.Exports), Wit: m.Wit,
		})
		var fs []compFile
		for p, r := range d.files[c.ComponentName] {
			fs = append(fs, compFile{p, r})
		}
		slices.SortFunc(fs, func(a, b compFile) int { return strings.Compare(a.path, b.path) })
		files = append(files, fs)
	}
	unlock()

	order := make([]int, len(out))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int {
		a, b := out[i].ComponentID, out[j].ComponentID
		return cmp.Or(strings.Compare(string(a.ComponentType), string(b.ComponentType)), strings.Compare(a.Name, b.Name))
	})
	sorted := make([]core.DeploymentComponentDetail, 0, len(out))
	for _, i := range order {
		c := out[i]
		c.Files = []core.DeploymentComponentFileDetail{}
		for _, f := range files[i] {
			dg := digests[f.path]
			size, present, err := b.blobSize(ctx, dg)
			if err != nil {
				return nil, err
			}
			if present {
				c.Files = append(c.Files, core.DeploymentComponentFileDetail{
					File: core.DeploymentFileRecord{Path: f.path, Digest: dg, Size: uint64(size)}, Role: f.role})
			}
		}
		sorted = append(sorted, c)
	}
	return sorted, nil
}

// GetDeploymentComponentWit implements core.DeploymentStore.
func (b *Backend) GetDeploymentComponentWit(ctx context.Context, dep core.DeploymentId, digest core.ComponentDigest) (string, error) {
	unlock, err := b.lockDeps()
	if err != nil {
		return "", err
	}
	defer unlock()
	if d, ok := b.deps.byID[dep]; ok {
		for _, c := range d.components {
			if c.ComponentDigest != digest {
				continue
			}
			if m, ok := b.deps.metadata[digest]; ok {
				return m.Wit, nil
			}
		}
	}
	return "", fmt.Errorf("mem: wit of %s in deployment %s: %w", digest, dep, core.ErrNotFound)
}

// page returns the deployments selected by p, newest (greatest id) first.
func (d *deployments) page(p core.Pagination[*core.DeploymentId]) []*deployment {
	all := make([]*deployment, 0, len(d.byID))
	for _, x := range d.byID {
		if p.Cursor == nil || p.Accepts(strings.Compare(x.rec.DeploymentID.String(), p.Cursor.String())) {
			all = append(all, x)
		}
	}
	slices.SortFunc(all, func(a, b *deployment) int {
		return strings.Compare(a.rec.DeploymentID.String(), b.rec.DeploymentID.String())
	})
	if p.IsDesc() {
		slices.Reverse(all)
	}
	if len(all) > int(p.Length) {
		all = all[:p.Length]
	}
	if !p.IsDesc() {
		slices.Reverse(all)
	}
	return all
}

// buckets are the deployment summary buckets, in the order they are tried.
var buckets = []core.StateFilter{
	core.FilterLocked, core.FilterPending, core.FilterScheduled, core.FilterBlocked, core.FilterPaused,
	core.FilterCancelling, core.FilterFinishedOk, core.FilterFinishedError, core.FilterFinishedExecutionFailure,
}

// count adds the execution to the counter of its bucket.
func count(s *core.DeploymentState, st *core.ExecutionState, now core.Timestamp) {
	counters := []*uint32{&s.Locked, &s.Pending, &s.Scheduled, &s.Blocked, &s.Paused, &s.Cancelling,
		&s.FinishedOk, &s.FinishedError, &s.FinishedExecutionFailure}
	for i, f := range buckets {
		if f.Matches(st, now) {
			*counters[i]++
			return
		}
	}
}

// ListDeploymentStates implements core.DeploymentStore. Counts follow each
// execution's current deployment (docs/spec/semantics.md §8 item 21).
func (b *Backend) ListDeploymentStates(ctx context.Context, currentTime core.Timestamp, p core.Pagination[*core.DeploymentId], includeToml bool, counts core.DeploymentExecutionCounts) ([]core.DeploymentState, error) {
	unlock, err := b.lockDeps()
	if err != nil {
		return nil, err
	}
	defer unlock()
	page := b.deps.page(p)
	out := make([]core.DeploymentState, len(page))
	index := map[core.DeploymentId]int{}
	for i, d := range page {
		r := d.rec
		out[i] = core.DeploymentState{DeploymentID: r.DeploymentID, Description: clonePtr(r.Description), Digest: r.Digest,
			CreatedAt: r.CreatedAt, LastActiveAt: clonePtr(r.LastActiveAt), Status: r.Status}
		if includeToml {
			out[i].DeploymentToml = clonePtr(&r.DeploymentToml)
		}
		index[r.DeploymentID] = i
	}
	if !counts.Skip {
		for _, e := range b.execs {
			i, ok := index[e.head.DeploymentID]
			if !ok || (!counts.IncludeDerived && !e.head.IsTopLevel()) {
				continue
			}
			count(&out[i], &e.head, currentTime)
		}
	}
	return out, nil
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// blobSize returns the size of a blob and whether it is in the CAS.
func (b *Backend) blobSize(ctx context.Context, d core.ContentDigest) (int64, bool, error) {
	c := b.deps.cas
	if c == nil {
		return 0, false, nil
	}
	if s, ok := c.(interface {
		Size(context.Context, core.ContentDigest) (int64, error)
	}); ok {
		n, err := s.Size(ctx, d)
		if errors.Is(err, core.ErrNotFound) {
			return 0, false, nil
		}
		if err != nil {
			return 0, false, fmt.Errorf("mem: size of %s: %w", d, err)
		}
		return n, true, nil
	}
	data, err := c.ReadBlob(ctx, d)
	if errors.Is(err, core.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("mem: size of %s: %w", d, err)
	}
	return int64(len(data)), true, nil
}

// withSizes returns files with the sizes of their blobs (0 when missing).
func (b *Backend) withSizes(ctx context.Context, files []core.DeploymentFileRecord) ([]core.DeploymentFileRecord, error) {
	out := make([]core.DeploymentFileRecord, len(files))
	for i, f := range files {
		size, _, err := b.blobSize(ctx, f.Digest)
		if err != nil {
			return nil, err
		}
		out[i] = core.DeploymentFileRecord{Path: f.Path, Digest: f.Digest, Size: uint64(size)}
	}
	return out, nil
}

// record returns a deployment's record with file sizes, read under the lock
// and completed from the CAS after it.
func (b *Backend) record(ctx context.Context, find func(d *deployments) *deployment, what string) (core.DeploymentRecord, error) {
	unlock, err := b.lockDeps()
	if err != nil {
		return core.DeploymentRecord{}, err
	}
	d := find(&b.deps)
	var rec core.DeploymentRecord
	if d != nil {
		rec = cloneRecord(d.rec)
	}
	unlock()
	if d == nil {
		return core.DeploymentRecord{}, fmt.Errorf("mem: %s: %w", what, core.ErrNotFound)
	}
	if rec.Files, err = b.withSizes(ctx, rec.Files); err != nil {
		return core.DeploymentRecord{}, err
	}
	return rec, nil
}

func cloneRecord(r core.DeploymentRecord) core.DeploymentRecord {
	r.Description = clonePtr(r.Description)
	r.LastActiveAt = clonePtr(r.LastActiveAt)
	r.CreatedBy = clonePtr(r.CreatedBy)
	r.Files = slices.Clone(r.Files)
	return r
}

// MissingDigests implements core.DeploymentStore: the digests of the
// deployment's files that are not in the CAS, by digest, with repeats.
func (b *Backend) MissingDigests(ctx context.Context, dep core.DeploymentId) ([]core.ContentDigest, error) {
	unlock, err := b.lockDeps()
	if err != nil {
		return nil, err
	}
	var digests []core.ContentDigest
	if d, ok := b.deps.byID[dep]; ok {
		for _, f := range d.rec.Files {
			digests = append(digests, f.Digest)
		}
	}
	unlock()
	slices.SortStableFunc(digests, func(a, b core.ContentDigest) int { return strings.Compare(a.String(), b.String()) })
	missing := []core.ContentDigest{}
	for _, dg := range digests {
		present := false
		if b.deps.cas != nil {
			if present, err = b.deps.cas.ContainsBlob(ctx, dg); err != nil {
				return nil, fmt.Errorf("mem: missing digests of %s: %w", dep, err)
			}
		}
		if !present {
			missing = append(missing, dg)
		}
	}
	return missing, nil
}

// ListDeploymentFiles implements core.DeploymentStore: by path, sizes from
// the CAS (0 when the blob is missing).
func (b *Backend) ListDeploymentFiles(ctx context.Context, dep core.DeploymentId) ([]core.DeploymentFileRecord, error) {
	unlock, err := b.lockDeps()
	if err != nil {
		return nil, err
	}
	var files []core.DeploymentFileRecord
	if d, ok := b.deps.byID[dep]; ok {
		files = slices.Clone(d.rec.Files)
	}
	unlock()
	return b.withSizes(ctx, files)
}

// GCOrphanFiles implements core.DeploymentStore with cas.CollectOrphans:
// blobs referenced by no deployment file and no source mapping, last
// written more than the grace period ago, are deleted.
func (b *Backend) GCOrphanFiles(ctx context.Context) (uint64, error) {
	if b.deps.cas == nil {
		return 0, nil
	}
	c, ok := b.deps.cas.(cas.Collectable)
	if !ok {
		return 0, fmt.Errorf("mem: gc: the CAS (%T) cannot list and delete blobs: %w", b.deps.cas, core.ErrNotImplemented)
	}
	clock := b.deps.clock
	if clock == nil {
		clock = store.SystemClock{}
	}
	n, err := cas.CollectOrphans(ctx, c, clock.Now().Time, cas.GCGrace(b.deps.grace), b.referenced)
	if err != nil {
		return n, fmt.Errorf("mem: %w", err)
	}
	return n, nil
}

// referenced is the cas.ReferencedFunc of GCOrphanFiles.
func (b *Backend) referenced(ctx context.Context, _ []core.ContentDigest) (map[core.ContentDigest]bool, error) {
	unlock, err := b.lockDeps()
	if err != nil {
		return nil, err
	}
	defer unlock()
	refs := map[core.ContentDigest]bool{}
	for _, d := range b.deps.byID {
		for _, f := range d.rec.Files {
			refs[f.Digest] = true
		}
	}
	for _, dg := range b.deps.sources {
		refs[dg] = true
	}
	return refs, nil
}

// ActivateDeployment implements core.DeploymentStore: the target becomes the
// only active deployment and nothing stays enqueued.
func (b *Backend) ActivateDeployment(ctx context.Context, dep core.DeploymentId, now core.Timestamp) error {
	unlock, err := b.lockDeps()
	if err != nil {
		return err
	}
	defer unlock()
	target, ok := b.deps.byID[dep]
	if !ok {
		return fmt.Errorf("mem: activate deployment %s: %w", dep, core.ErrNotFound)
	}
	for _, d := range b.deps.byID {
		if d.rec.Status == core.DeploymentActive || d.rec.Status == core.DeploymentEnqueued {
			d.rec.Status = core.DeploymentInactive
		}
	}
	target.rec.Status = core.DeploymentActive
	target.rec.LastActiveAt = &now
	return nil
}

// EnqueueDeployment implements core.DeploymentStore.
func (b *Backend) EnqueueDeployment(ctx context.Context, dep core.DeploymentId) (core.EnqueueOutcome, error) {
	unlock, err := b.lockDeps()
	if err != nil {
		return 0, err
	}
	defer unlock()
	target, ok := b.deps.byID[dep]
	if !ok {
		return 0, fmt.Errorf("mem: enqueue deployment %s: %w", dep, core.ErrNotFound)
	}
	for _, d := range b.deps.byID {
		if d.rec.Status == core.DeploymentEnqueued {
			d.rec.Status = core.DeploymentInactive
		}
	}
	if target.rec.Status == core.DeploymentActive {
		return core.EnqueueAlreadyActive, nil
	}
	target.rec.Status = core.DeploymentEnqueued
	return core.Enqueued, nil
}

// GetDeployment implements core.DeploymentStore.
func (b *Backend) GetDeployment(ctx context.Context, dep core.DeploymentId) (core.DeploymentRecord, error) {
	return b.record(ctx, func(d *deployments) *deployment { return d.byID[dep] }, "deployment "+dep.String())
}

func (d *deployments) withStatus(s core.DeploymentStatus) *deployment {
	for _, x := range d.byID {
		if x.rec.Status == s {
			return x
		}
	}
	return nil
}

// GetActiveDeployment implements core.DeploymentStore.
func (b *Backend) GetActiveDeployment(ctx context.Context) (core.DeploymentRecord, error) {
	return b.record(ctx, func(d *deployments) *deployment { return d.withStatus(core.DeploymentActive) }, "active deployment")
}

// GetCurrentDeployment implements core.DeploymentStore.
func (b *Backend) GetCurrentDeployment(ctx context.Context) (core.DeploymentRecord, error) {
	return b.record(ctx, func(d *deployments) *deployment {
		if x := d.withStatus(core.DeploymentEnqueued); x != nil {
			return x
		}
		return d.withStatus(core.DeploymentActive)
	}, "current deployment")
}

// ListDeployments implements core.DeploymentStore: newest first, with TOML
// and files.
func (b *Backend) ListDeployments(ctx context.Context, p core.Pagination[*core.DeploymentId]) ([]core.DeploymentRecord, error) {
	unlock, err := b.lockDeps()
	if err != nil {
		return nil, err
	}
	page := b.deps.page(p)
	out := make([]core.DeploymentRecord, len(page))
	for i, d := range page {
		out[i] = cloneRecord(d.rec)
	}
	unlock()
	for i := range out {
		if out[i].Files, err = b.withSizes(ctx, out[i].Files); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// UpsertSourceMapping implements core.DeploymentStore (replace semantics).
// The blob must already be in the CAS (*core.ValidationError otherwise), so
// that a mapping never refers to a missing blob.
func (b *Backend) UpsertSourceMapping(ctx context.Context, component core.ComponentDigest, frameKey string, isSuffix bool, digest core.ContentDigest) error {
	present := false
	if b.deps.cas != nil {
		var err error
		if present, err = b.deps.cas.ContainsBlob(ctx, digest); err != nil {
			return fmt.Errorf("mem: source mapping %q: %w", frameKey, err)
		}
	}
	if !present {
		return validationf("source mapping %q: blob %s is not in the CAS", frameKey, digest)
	}
	unlock, err := b.lockDeps()
	if err != nil {
		return err
	}
	defer unlock()
	b.deps.sources[sourceKey{component, frameKey, isSuffix}] = digest
	return nil
}

// ResolveSourceDigest implements core.DeploymentStore: exactly one mapping
// (exact key equal to file, or suffix key file ends with) must match.
func (b *Backend) ResolveSourceDigest(ctx context.Context, component core.ComponentDigest, file string) (core.ContentDigest, error) {
	unlock, err := b.lockDeps()
	if err != nil {
		return core.ContentDigest{}, err
	}
	defer unlock()
	var found []core.ContentDigest
	for k, dg := range b.deps.sources {
		if k.component != component {
			continue
		}
		if (!k.isSuffix && k.frameKey == file) || (k.isSuffix && strings.HasSuffix(file, k.frameKey)) {
			found = append(found, dg)
		}
	}
	if len(found) != 1 {
		return core.ContentDigest{}, fmt.Errorf("mem: source %q of %s (%d mappings match): %w", file, component, len(found), core.ErrNotFound)
	}
	return found[0], nil
}
