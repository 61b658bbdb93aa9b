package dynamo

import (
	"context"
	"fmt"

	"github.com/stela-dev/stela/core"
)

// The deployment store (spec §6.5–6.7) is not implemented on DynamoDB yet;
// every method returns an error wrapping core.ErrNotImplemented.

func errDeployments(method string) error {
	return fmt.Errorf("dynamo: %s: %w", method, core.ErrNotImplemented)
}

// UpsertComponentMetadata is not implemented yet.
func (b *Backend) UpsertComponentMetadata(context.Context, []core.ComponentMetadataRecord) error {
	return errDeployments("UpsertComponentMetadata")
}

// InsertDeploymentComponents is not implemented yet.
func (b *Backend) InsertDeploymentComponents(context.Context, core.DeploymentId, []core.DeploymentComponentRecord) error {
	return errDeployments("InsertDeploymentComponents")
}

// ListDeploymentComponents is not implemented yet.
func (b *Backend) ListDeploymentComponents(context.Context, core.DeploymentId) ([]core.DeploymentComponentDetail, error) {
	return nil, errDeployments("ListDeploymentComponents")
}

// GetDeploymentComponentWit is not implemented yet.
func (b *Backend) GetDeploymentComponentWit(context.Context, core.DeploymentId, core.ComponentDigest) (string, error) {
	return "", errDeployments("GetDeploymentComponentWit")
}

// ListDeploymentStates is not implemented yet.
func (b *Backend) ListDeploymentStates(context.Context, core.Timestamp, core.Pagination[*core.DeploymentId], bool, core.DeploymentExecutionCounts) ([]core.DeploymentState, error) {
	return nil, errDeployments("ListDeploymentStates")
}

// InsertDeploymentWithComponents is not implemented yet.
func (b *Backend) InsertDeploymentWithComponents(context.Context, core.DeploymentRecord, []core.ComponentMetadataRecord, []core.DeploymentComponentRecord, []core.DeploymentComponentFileRecord) error {
	return errDeployments("InsertDeploymentWithComponents")
}

// MissingDigests is not implemented yet.
func (b *Backend) MissingDigests(context.Context, core.DeploymentId) ([]core.ContentDigest, error) {
	return nil, errDeployments("MissingDigests")
}

// ListDeploymentFiles is not implemented yet.
func (b *Backend) ListDeploymentFiles(context.Context, core.DeploymentId) ([]core.DeploymentFileRecord, error) {
	return nil, errDeployments("ListDeploymentFiles")
}

// GCOrphanFiles is not implemented yet.
func (b *Backend) GCOrphanFiles(context.Context) (uint64, error) {
	return 0, errDeployments("GCOrphanFiles")
}

// ActivateDeployment is not implemented yet.
func (b *Backend) ActivateDeployment(context.Context, core.DeploymentId, core.Timestamp) error {
	return errDeployments("ActivateDeployment")
}

// EnqueueDeployment is not implemented yet.
func (b *Backend) EnqueueDeployment(context.Context, core.DeploymentId) (core.EnqueueOutcome, error) {
	return 0, errDeployments("EnqueueDeployment")
}

// GetDeployment is not implemented yet.
func (b *Backend) GetDeployment(context.Context, core.DeploymentId) (core.DeploymentRecord, error) {
	return core.DeploymentRecord{}, errDeployments("GetDeployment")
}

// GetActiveDeployment is not implemented yet.
func (b *Backend) GetActiveDeployment(context.Context) (core.DeploymentRecord, error) {
	return core.DeploymentRecord{}, errDeployments("GetActiveDeployment")
}

// GetCurrentDeployment is not implemented yet.
func (b *Backend) GetCurrentDeployment(context.Context) (core.DeploymentRecord, error) {
	return core.DeploymentRecord{}, errDeployments("GetCurrentDeployment")
}

// ListDeployments is not implemented yet.
func (b *Backend) ListDeployments(context.Context, core.Pagination[*core.DeploymentId]) ([]core.DeploymentRecord, error) {
	return nil, errDeployments("ListDeployments")
}

// UpsertSourceMapping is not implemented yet.
func (b *Backend) UpsertSourceMapping(context.Context, core.ComponentDigest, string, bool, core.ContentDigest) error {
	return errDeployments("UpsertSourceMapping")
}

// ResolveSourceDigest is not implemented yet.
func (b *Backend) ResolveSourceDigest(context.Context, core.ComponentDigest, string) (core.ContentDigest, error) {
	return core.ContentDigest{}, errDeployments("ResolveSourceDigest")
}
