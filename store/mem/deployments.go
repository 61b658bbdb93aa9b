package mem

import (
	"context"

	"github.com/stela-dev/stela/core"
)

// notImplemented provides core.DeploymentStore methods that report
// core.ErrNotImplemented: the in-memory backend does not store deployments.
type notImplemented struct{}

func (notImplemented) UpsertComponentMetadata(context.Context, []core.ComponentMetadataRecord) error {
	return core.ErrNotImplemented
}
func (notImplemented) InsertDeploymentComponents(context.Context, core.DeploymentId, []core.DeploymentComponentRecord) error {
	return core.ErrNotImplemented
}
func (notImplemented) ListDeploymentComponents(context.Context, core.DeploymentId) ([]core.DeploymentComponentDetail, error) {
	return nil, core.ErrNotImplemented
}
func (notImplemented) GetDeploymentComponentWit(context.Context, core.DeploymentId, core.ComponentDigest) (string, error) {
	return "", core.ErrNotImplemented
}
func (notImplemented) ListDeploymentStates(context.Context, core.Timestamp, core.Pagination[*core.DeploymentId], bool, core.DeploymentExecutionCounts) ([]core.DeploymentState, error) {
	return nil, core.ErrNotImplemented
}
func (notImplemented) InsertDeploymentWithComponents(context.Context, core.DeploymentRecord, []core.ComponentMetadataRecord, []core.DeploymentComponentRecord, []core.DeploymentComponentFileRecord) error {
	return core.ErrNotImplemented
}
func (notImplemented) MissingDigests(context.Context, core.DeploymentId) ([]core.ContentDigest, error) {
	return nil, core.ErrNotImplemented
}
func (notImplemented) ListDeploymentFiles(context.Context, core.DeploymentId) ([]core.DeploymentFileRecord, error) {
	return nil, core.ErrNotImplemented
}
func (notImplemented) GCOrphanFiles(context.Context) (uint64, error) {
	return 0, core.ErrNotImplemented
}
func (notImplemented) ActivateDeployment(context.Context, core.DeploymentId, core.Timestamp) error {
	return core.ErrNotImplemented
}
func (notImplemented) EnqueueDeployment(context.Context, core.DeploymentId) (core.EnqueueOutcome, error) {
	return 0, core.ErrNotImplemented
}
func (notImplemented) GetDeployment(context.Context, core.DeploymentId) (core.DeploymentRecord, error) {
	return core.DeploymentRecord{}, core.ErrNotImplemented
}
func (notImplemented) GetActiveDeployment(context.Context) (core.DeploymentRecord, error) {
	return core.DeploymentRecord{}, core.ErrNotImplemented
}
func (notImplemented) GetCurrentDeployment(context.Context) (core.DeploymentRecord, error) {
	return core.DeploymentRecord{}, core.ErrNotImplemented
}
func (notImplemented) ListDeployments(context.Context, core.Pagination[*core.DeploymentId]) ([]core.DeploymentRecord, error) {
	return nil, core.ErrNotImplemented
}
func (notImplemented) UpsertSourceMapping(context.Context, core.ComponentDigest, string, bool, core.ContentDigest) error {
	return core.ErrNotImplemented
}
func (notImplemented) ResolveSourceDigest(context.Context, core.ComponentDigest, string) (core.ContentDigest, error) {
	return core.ContentDigest{}, core.ErrNotImplemented
}
