package sqlite

import (
	"context"
	"fmt"

	"github.com/stela-dev/stela/core"
)

// Deployments, component metadata and source mappings (core.DeploymentStore)
// are not stored by this backend yet: every method returns an error wrapping
// core.ErrNotImplemented.

func notImplemented(method string) error {
	return fmt.Errorf("sqlite: %s: %w", method, core.ErrNotImplemented)
}

// UpsertComponentMetadata is not implemented yet.
func (b *Backend) UpsertComponentMetadata(ctx context.Context, records []core.ComponentMetadataRecord) error {
	return notImplemented("upsert component metadata")
}

// InsertDeploymentComponents is not implemented yet.
func (b *Backend) InsertDeploymentComponents(ctx context.Context, dep core.DeploymentId, records []core.DeploymentComponentRecord) error {
	return notImplemented("insert deployment components")
}

// ListDeploymentComponents is not implemented yet.
func (b *Backend) ListDeploymentComponents(ctx context.Context, dep core.DeploymentId) ([]core.DeploymentComponentDetail, error) {
	return nil, notImplemented("list deployment components")
}

// GetDeploymentComponentWit is not implemented yet.
func (b *Backend) GetDeploymentComponentWit(ctx context.Context, dep core.DeploymentId, digest core.ComponentDigest) (string, error) {
	return "", notImplemented("get deployment component wit")
}

// ListDeploymentStates is not implemented yet.
func (b *Backend) ListDeploymentStates(ctx context.Context, currentTime core.Timestamp, p core.Pagination[*core.DeploymentId], includeToml bool, counts core.DeploymentExecutionCounts) ([]core.DeploymentState, error) {
	return nil, notImplemented("list deployment states")
}

// InsertDeploymentWithComponents is not implemented yet.
func (b *Backend) InsertDeploymentWithComponents(ctx context.Context, record core.DeploymentRecord, metadata []core.ComponentMetadataRecord, components []core.DeploymentComponentRecord, files []core.DeploymentComponentFileRecord) error {
	return notImplemented("insert deployment with components")
}

// MissingDigests is not implemented yet.
func (b *Backend) MissingDigests(ctx context.Context, dep core.DeploymentId) ([]core.ContentDigest, error) {
	return nil, notImplemented("missing digests")
}

// ListDeploymentFiles is not implemented yet.
func (b *Backend) ListDeploymentFiles(ctx context.Context, dep core.DeploymentId) ([]core.DeploymentFileRecord, error) {
	return nil, notImplemented("list deployment files")
}

// GCOrphanFiles is not implemented yet.
func (b *Backend) GCOrphanFiles(ctx context.Context) (uint64, error) {
	return 0, notImplemented("gc orphan files")
}

// ActivateDeployment is not implemented yet.
func (b *Backend) ActivateDeployment(ctx context.Context, dep core.DeploymentId, now core.Timestamp) error {
	return notImplemented("activate deployment")
}

// EnqueueDeployment is not implemented yet.
func (b *Backend) EnqueueDeployment(ctx context.Context, dep core.DeploymentId) (core.EnqueueOutcome, error) {
	return 0, notImplemented("enqueue deployment")
}

// GetDeployment is not implemented yet.
func (b *Backend) GetDeployment(ctx context.Context, dep core.DeploymentId) (core.DeploymentRecord, error) {
	return core.DeploymentRecord{}, notImplemented("get deployment")
}

// GetActiveDeployment is not implemented yet.
func (b *Backend) GetActiveDeployment(ctx context.Context) (core.DeploymentRecord, error) {
	return core.DeploymentRecord{}, notImplemented("get active deployment")
}

// GetCurrentDeployment is not implemented yet.
func (b *Backend) GetCurrentDeployment(ctx context.Context) (core.DeploymentRecord, error) {
	return core.DeploymentRecord{}, notImplemented("get current deployment")
}

// ListDeployments is not implemented yet.
func (b *Backend) ListDeployments(ctx context.Context, p core.Pagination[*core.DeploymentId]) ([]core.DeploymentRecord, error) {
	return nil, notImplemented("list deployments")
}

// UpsertSourceMapping is not implemented yet.
func (b *Backend) UpsertSourceMapping(ctx context.Context, component core.ComponentDigest, frameKey string, isSuffix bool, digest core.ContentDigest) error {
	return notImplemented("upsert source mapping")
}

// ResolveSourceDigest is not implemented yet.
func (b *Backend) ResolveSourceDigest(ctx context.Context, component core.ComponentDigest, file string) (core.ContentDigest, error) {
	return core.ContentDigest{}, notImplemented("resolve source digest")
}
