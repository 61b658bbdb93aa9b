package core

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// The rules of deployments, component metadata and source mappings (spec
// §6.5–6.7) as pure functions. store.Service applies them inside one
// backend transaction; backends only store the rows (StoredDeployment,
// ComponentMetadataRecord, SourceMapping) and keep at most one deployment
// active and one enqueued.

// StoredDeployment is everything a store keeps of one deployment: its
// record (Files by path, sizes 0: sizes come from the CAS when read), its
// components by name and the files each component uses, by component name
// then path.
type StoredDeployment struct {
	Record         DeploymentRecord
	Components     []DeploymentComponentRecord
	ComponentFiles []DeploymentComponentFileRecord
}

// Clone returns a copy of d sharing nothing mutable with it.
func (d StoredDeployment) Clone() StoredDeployment {
	r := &d.Record
	r.Description, r.LastActiveAt, r.CreatedBy = clonePtr(r.Description), clonePtr(r.LastActiveAt), clonePtr(r.CreatedBy)
	r.Files = slices.Clone(r.Files)
	d.Components, d.ComponentFiles = slices.Clone(d.Components), slices.Clone(d.ComponentFiles)
	return d
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// Component returns the component named name.
func (d *StoredDeployment) Component(name string) (DeploymentComponentRecord, bool) {
	i := slices.IndexFunc(d.Components, func(c DeploymentComponentRecord) bool { return c.ComponentName == name })
	if i < 0 {
		return DeploymentComponentRecord{}, false
	}
	return d.Components[i], true
}

// SourceKey is the key of a source mapping: an exact frame file name, or a
// suffix that frame file names may end with.
type SourceKey struct {
	FrameKey string
	IsSuffix bool
}

// SourceMapping maps a backtrace source file of a component to a CAS blob.
type SourceMapping struct {
	Component ComponentDigest
	Key       SourceKey
	Digest    ContentDigest
}

// DeploymentStatusChange is one status update of a deployment switch;
// LastActiveAt is set when the deployment becomes active.
type DeploymentStatusChange struct {
	ID           DeploymentId
	Status       DeploymentStatus
	LastActiveAt *Timestamp
}

func invalidf(format string, args ...any) error { return invalid(fmt.Sprintf(format, args...)) }

// NewDeployment checks an insert_deployment_with_components request and
// returns what to store. A new deployment must be inactive and never
// active, metadata must be valid, components must belong to the deployment
// (the first record of a name wins), and every component file must name a
// component and a file of this insert with a valid role
// (*ValidationError otherwise). A file path or a component file listed
// twice is ErrConflict. Whether each component has metadata is checked by
// RequireMetadata against the store.
func NewDeployment(record DeploymentRecord, metadata []ComponentMetadataRecord, components []DeploymentComponentRecord, files []DeploymentComponentFileRecord) (StoredDeployment, error) {
	if record.Status != DeploymentInactive || record.LastActiveAt != nil {
		return StoredDeployment{}, invalidf("a new deployment must be inactive and never active")
	}
	for _, m := range metadata {
		if err := m.Validate(); err != nil {
			return StoredDeployment{}, err
		}
	}
	dep := record.DeploymentID
	d := StoredDeployment{Record: record}
	d.Record.Files = make([]DeploymentFileRecord, len(record.Files))
	paths := map[string]bool{}
	for i, f := range record.Files {
		if paths[f.Path] {
			return StoredDeployment{}, fmt.Errorf("deployment %s: file %q listed twice: %w", dep, f.Path, ErrConflict)
		}
		paths[f.Path] = true
		d.Record.Files[i] = DeploymentFileRecord{Path: f.Path, Digest: f.Digest}
	}
	slices.SortFunc(d.Record.Files, func(a, b DeploymentFileRecord) int { return strings.Compare(a.Path, b.Path) })
	added, err := AddDeploymentComponents(&d, components)
	if err != nil {
		return StoredDeployment{}, err
	}
	d.Components = added
	type fileKey struct{ component, path string }
	seen := map[fileKey]bool{}
	for _, f := range files {
		if _, ok := d.Component(f.ComponentName); !ok {
			return StoredDeployment{}, invalidf("component file %q: no component %q in deployment %s", f.Path, f.ComponentName, dep)
		}
		if !paths[f.Path] {
			return StoredDeployment{}, invalidf("component file %q of %q is not a file of deployment %s", f.Path, f.ComponentName, dep)
		}
		if !f.Role.Valid() {
			return StoredDeployment{}, invalidf("component file %q of %q: invalid role %q", f.Path, f.ComponentName, f.Role)
		}
		if seen[fileKey{f.ComponentName, f.Path}] {
			return StoredDeployment{}, fmt.Errorf("deployment %s: component file %q of %q listed twice: %w", dep, f.Path, f.ComponentName, ErrConflict)
		}
		seen[fileKey{f.ComponentName, f.Path}] = true
		d.ComponentFiles = append(d.ComponentFiles, f)
	}
	slices.SortFunc(d.ComponentFiles, func(a, b DeploymentComponentFileRecord) int {
		return cmp.Or(strings.Compare(a.ComponentName, b.ComponentName), strings.Compare(a.Path, b.Path))
	})
	return d, nil
}

// AddDeploymentComponents returns the records of insert_deployment_components
// that d does not have yet (insert-if-absent by name, the first record of a
// name wins), sorted by name. A record of another deployment is a
// *ValidationError.
func AddDeploymentComponents(d *StoredDeployment, records []DeploymentComponentRecord) ([]DeploymentComponentRecord, error) {
	dep := d.Record.DeploymentID
	var added []DeploymentComponentRecord
	for _, r := range records {
		if r.DeploymentID != dep {
			return nil, invalidf("component %q belongs to deployment %s, not %s", r.ComponentName, r.DeploymentID, dep)
		}
		_, exists := d.Component(r.ComponentName)
		if exists || slices.ContainsFunc(added, func(a DeploymentComponentRecord) bool { return a.ComponentName == r.ComponentName }) {
			continue
		}
		added = append(added, r)
	}
	slices.SortFunc(added, func(a, b DeploymentComponentRecord) int { return strings.Compare(a.ComponentName, b.ComponentName) })
	return added, nil
}

// ComponentDigests returns the distinct digests of components, in order.
func ComponentDigests(components []DeploymentComponentRecord, metadata []ComponentMetadataRecord) []ComponentDigest {
	var out []ComponentDigest
	for _, m := range metadata {
		if !slices.Contains(out, m.ComponentDigest) {
			out = append(out, m.ComponentDigest)
		}
	}
	for _, c := range components {
		if !slices.Contains(out, c.ComponentDigest) {
			out = append(out, c.ComponentDigest)
		}
	}
	return out
}

// RequireMetadata checks that every component has metadata, stored or
// provided in the same request (Obelisk's foreign key): *ValidationError
// otherwise.
func RequireMetadata(components []DeploymentComponentRecord, stored map[ComponentDigest]ComponentMetadataRecord, provided []ComponentMetadataRecord) error {
	for _, c := range components {
		if _, ok := stored[c.ComponentDigest]; ok {
			continue
		}
		if !slices.ContainsFunc(provided, func(m ComponentMetadataRecord) bool { return m.ComponentDigest == c.ComponentDigest }) {
			return invalidf("component %q: no metadata for digest %s", c.ComponentName, c.ComponentDigest)
		}
	}
	return nil
}

// NewMetadata returns the records to insert for upsert_component_metadata:
// insert-if-absent by digest, the stored or the first record of a digest
// wins.
func NewMetadata(records []ComponentMetadataRecord, stored map[ComponentDigest]ComponentMetadataRecord) []ComponentMetadataRecord {
	var out []ComponentMetadataRecord
	for _, r := range records {
		if _, ok := stored[r.ComponentDigest]; ok {
			continue
		}
		if !slices.ContainsFunc(out, func(m ComponentMetadataRecord) bool { return m.ComponentDigest == r.ComponentDigest }) {
			out = append(out, r)
		}
	}
	return out
}

// PlanActivation returns the status changes of activate_deployment: the
// active and the enqueued deployment become inactive (demotions first, so a
// store enforcing "one active, one enqueued" at every write accepts them)
// and target becomes active, last active at now.
func PlanActivation(active, enqueued *DeploymentId, target DeploymentId, now Timestamp) []DeploymentStatusChange {
	var out []DeploymentStatusChange
	for _, other := range []*DeploymentId{active, enqueued} {
		if other != nil && *other != target {
			out = append(out, DeploymentStatusChange{ID: *other, Status: DeploymentInactive})
		}
	}
	return append(out, DeploymentStatusChange{ID: target, Status: DeploymentActive, LastActiveAt: &now})
}

// PlanEnqueue returns the outcome and status changes of enqueue_deployment:
// the enqueued deployment, if another, becomes inactive; an active target
// stays active (EnqueueAlreadyActive), any other becomes enqueued.
func PlanEnqueue(active, enqueued *DeploymentId, target DeploymentId) (EnqueueOutcome, []DeploymentStatusChange) {
	var out []DeploymentStatusChange
	if enqueued != nil && *enqueued != target {
		out = append(out, DeploymentStatusChange{ID: *enqueued, Status: DeploymentInactive})
	}
	if active != nil && *active == target {
		return EnqueueAlreadyActive, out
	}
	if enqueued == nil || *enqueued != target {
		out = append(out, DeploymentStatusChange{ID: target, Status: DeploymentEnqueued})
	}
	return Enqueued, out
}

// ComponentDetails returns the components of d that have metadata, by type
// then name, each with its files by path (sizes 0; the caller fills them in
// from the CAS and drops files whose blob is missing).
func ComponentDetails(d StoredDeployment, metadata map[ComponentDigest]ComponentMetadataRecord) []DeploymentComponentDetail {
	digestOf := map[string]ContentDigest{}
	for _, f := range d.Record.Files {
		digestOf[f.Path] = f.Digest
	}
	out := []DeploymentComponentDetail{}
	for _, c := range d.Components {
		m, ok := metadata[c.ComponentDigest]
		if !ok {
			continue
		}
		cd := DeploymentComponentDetail{
			ComponentID: ComponentId{ComponentType: c.ComponentType, Name: c.ComponentName, ComponentDigest: c.ComponentDigest},
			Imports:     slices.Clone(m.Imports), Exports: slices.Clone(m.Exports), Wit: m.Wit,
			Files: []DeploymentComponentFileDetail{},
		}
		for _, f := range d.ComponentFiles {
			if f.ComponentName == c.ComponentName {
				cd.Files = append(cd.Files, DeploymentComponentFileDetail{
					File: DeploymentFileRecord{Path: f.Path, Digest: digestOf[f.Path]}, Role: f.Role})
			}
		}
		slices.SortFunc(cd.Files, func(a, b DeploymentComponentFileDetail) int { return strings.Compare(a.File.Path, b.File.Path) })
		out = append(out, cd)
	}
	slices.SortFunc(out, func(a, b DeploymentComponentDetail) int {
		return cmp.Or(strings.Compare(string(a.ComponentID.ComponentType), string(b.ComponentID.ComponentType)),
			strings.Compare(a.ComponentID.Name, b.ComponentID.Name))
	})
	return out
}

// State projects a deployment record onto list_deployment_states' row
// (counts zero, TOML only when includeToml).
func (r DeploymentRecord) State(includeToml bool) DeploymentState {
	s := DeploymentState{DeploymentID: r.DeploymentID, Description: r.Description, Digest: r.Digest,
		CreatedAt: r.CreatedAt, LastActiveAt: r.LastActiveAt, Status: r.Status}
	if includeToml {
		toml := r.DeploymentToml
		s.DeploymentToml = &toml
	}
	return s
}

// deploymentBuckets are the §4.8.1 buckets of list_deployment_states, in
// the order they are tried.
var deploymentBuckets = []StateFilter{
	FilterLocked, FilterPending, FilterScheduled, FilterBlocked, FilterPaused,
	FilterCancelling, FilterFinishedOk, FilterFinishedError, FilterFinishedExecutionFailure,
}

// Count adds st to the counter of its bucket (the first of the §4.8.1
// buckets it matches at now; none for a finished execution without result).
func (s *DeploymentState) Count(st *ExecutionState, now Timestamp) {
	counters := []*uint32{&s.Locked, &s.Pending, &s.Scheduled, &s.Blocked, &s.Paused, &s.Cancelling,
		&s.FinishedOk, &s.FinishedError, &s.FinishedExecutionFailure}
	for i, f := range deploymentBuckets {
		if f.Matches(st, now) {
			*counters[i]++
			return
		}
	}
}

// SourceKeys returns every key a mapping matching file can have: the exact
// key file and each suffix of file at a character boundary, the empty one
// included. resolve_source_digest reads these keys; exactly one must exist.
func SourceKeys(file string) []SourceKey {
	keys := []SourceKey{{FrameKey: file}}
	for i := 0; i <= len(file); i++ {
		if i == len(file) || utf8.RuneStart(file[i]) {
			keys = append(keys, SourceKey{FrameKey: file[i:], IsSuffix: true})
		}
	}
	return keys
}

// SortDigests sorts digests by their text (missing_digests' order,
// repeats kept).
func SortDigests(ds []ContentDigest) {
	slices.SortStableFunc(ds, func(a, b ContentDigest) int { return strings.Compare(a.String(), b.String()) })
}
