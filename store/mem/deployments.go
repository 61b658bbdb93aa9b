package mem

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stela-dev/stela/core"
)

// Deployment rows (store.DeploymentReadTx, store.DeploymentTx): plain maps
// guarded by Backend.mu. store.Service makes every decision.
type deployments struct {
	byID     map[core.DeploymentId]*core.StoredDeployment
	metadata map[core.ComponentDigest]core.ComponentMetadataRecord
	sources  map[sourceKey]core.ContentDigest
}

type sourceKey struct {
	component core.ComponentDigest
	key       core.SourceKey
}

func newDeployments() deployments {
	return deployments{byID: map[core.DeploymentId]*core.StoredDeployment{},
		metadata: map[core.ComponentDigest]core.ComponentMetadataRecord{}, sources: map[sourceKey]core.ContentDigest{}}
}

// Deployment implements store.DeploymentReadTx.
func (t *tx) Deployment(id core.DeploymentId) (core.StoredDeployment, error) {
	d, ok := t.b.deps.byID[id]
	if !ok {
		return core.StoredDeployment{}, fmt.Errorf("mem: deployment %s: %w", id, core.ErrNotFound)
	}
	return d.Clone(), nil
}

// CurrentDeployments implements store.DeploymentReadTx.
func (t *tx) CurrentDeployments() (active, enqueued *core.DeploymentId, err error) {
	for id, d := range t.b.deps.byID {
		switch d.Record.Status {
		case core.DeploymentActive:
			active = &id
		case core.DeploymentEnqueued:
			enqueued = &id
		}
	}
	return active, enqueued, nil
}

// Deployments implements store.DeploymentReadTx.
func (t *tx) Deployments(p core.Pagination[*core.DeploymentId], _, _ bool) ([]core.StoredDeployment, error) {
	var out []core.StoredDeployment
	for _, d := range t.b.deps.byID {
		if p.Cursor == nil || p.Accepts(strings.Compare(d.Record.DeploymentID.String(), p.Cursor.String())) {
			out = append(out, d.Clone())
		}
	}
	slices.SortFunc(out, func(a, b core.StoredDeployment) int {
		return strings.Compare(a.Record.DeploymentID.String(), b.Record.DeploymentID.String())
	})
	if p.IsDesc() {
		slices.Reverse(out)
	}
	return out[:min(len(out), int(p.Length))], nil
}

// ComponentMetadata implements store.DeploymentReadTx.
func (t *tx) ComponentMetadata(digests []core.ComponentDigest) (map[core.ComponentDigest]core.ComponentMetadataRecord, error) {
	out := map[core.ComponentDigest]core.ComponentMetadataRecord{}
	for _, d := range digests {
		if m, ok := t.b.deps.metadata[d]; ok {
			m.Imports, m.Exports = slices.Clone(m.Imports), slices.Clone(m.Exports)
			out[d] = m
		}
	}
	return out, nil
}

// SourceMappings implements store.DeploymentReadTx.
func (t *tx) SourceMappings(component core.ComponentDigest, keys []core.SourceKey) ([]core.SourceMapping, error) {
	var out []core.SourceMapping
	for _, k := range keys {
		if d, ok := t.b.deps.sources[sourceKey{component, k}]; ok {
			out = append(out, core.SourceMapping{Component: component, Key: k, Digest: d})
		}
	}
	return out, nil
}

// InsertDeployment implements store.DeploymentTx.
func (t *tx) InsertDeployment(d core.StoredDeployment) error {
	id := d.Record.DeploymentID
	if _, ok := t.b.deps.byID[id]; ok {
		return fmt.Errorf("mem: insert deployment %s: %w", id, core.ErrConflict)
	}
	d = d.Clone()
	if t.newDeps == nil {
		t.newDeps = map[core.DeploymentId]bool{}
	}
	t.newDeps[id] = true
	t.writes = append(t.writes, func() { t.b.deps.byID[id] = &d })
	return nil
}

// AddDeploymentComponents implements store.DeploymentTx.
func (t *tx) AddDeploymentComponents(id core.DeploymentId, records []core.DeploymentComponentRecord) error {
	records = slices.Clone(records)
	return t.changeDeployment(id, func(d *core.StoredDeployment) { d.Components = append(d.Components, records...) })
}

// SetDeploymentStatus implements store.DeploymentTx.
func (t *tx) SetDeploymentStatus(id core.DeploymentId, status core.DeploymentStatus, lastActiveAt *core.Timestamp) error {
	if lastActiveAt != nil {
		at := *lastActiveAt
		lastActiveAt = &at
	}
	return t.changeDeployment(id, func(d *core.StoredDeployment) {
		d.Record.Status = status
		if lastActiveAt != nil {
			d.Record.LastActiveAt = lastActiveAt
		}
	})
}

func (t *tx) changeDeployment(id core.DeploymentId, change func(d *core.StoredDeployment)) error {
	if _, ok := t.b.deps.byID[id]; !ok && !t.newDeps[id] {
		return fmt.Errorf("mem: deployment %s: %w", id, core.ErrNotFound)
	}
	t.writes = append(t.writes, func() { change(t.b.deps.byID[id]) })
	return nil
}

// InsertComponentMetadata implements store.DeploymentTx.
func (t *tx) InsertComponentMetadata(records []core.ComponentMetadataRecord) error {
	for _, r := range records {
		r.Imports, r.Exports = slices.Clone(r.Imports), slices.Clone(r.Exports)
		t.writes = append(t.writes, func() { t.b.deps.metadata[r.ComponentDigest] = r })
	}
	return nil
}

// PutSourceMapping implements store.DeploymentTx.
func (t *tx) PutSourceMapping(m core.SourceMapping) error {
	t.writes = append(t.writes, func() { t.b.deps.sources[sourceKey{m.Component, m.Key}] = m.Digest })
	return nil
}

// CountDeploymentExecutions implements store.Queries by visiting every
// execution.
func (b *Backend) CountDeploymentExecutions(ctx context.Context, states []core.DeploymentState, now core.Timestamp, includeDerived bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return core.ErrClosed
	}
	index := map[core.DeploymentId]int{}
	for i, s := range states {
		index[s.DeploymentID] = i
	}
	for _, e := range b.execs {
		if i, ok := index[e.head.DeploymentID]; ok && (includeDerived || e.head.IsTopLevel()) {
			states[i].Count(&e.head, now)
		}
	}
	return nil
}

// BlobReferences implements store.Queries: deployment files and source
// mappings (writes are atomic here, so none is ever in flight).
func (b *Backend) BlobReferences(ctx context.Context, _ []core.ContentDigest, _ time.Duration) (map[core.ContentDigest]bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, core.ErrClosed
	}
	refs := map[core.ContentDigest]bool{}
	for _, d := range b.deps.byID {
		for _, f := range d.Record.Files {
			refs[f.Digest] = true
		}
	}
	for _, dg := range b.deps.sources {
		refs[dg] = true
	}
	return refs, nil
}
