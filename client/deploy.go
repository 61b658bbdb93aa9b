package client

import (
	"context"
	"net/http"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/wire"
)

// RegisterDeployment implements core.WorkerConn: POST /v1/deployments
// records the worker's components as a deployment, idempotently (a retry
// after a lost answer finds the same deployment).
func (c *Client) RegisterDeployment(ctx context.Context, wd core.WorkerDeployment) (core.DeploymentId, error) {
	var id core.DeploymentId
	_, err := c.post(ctx, http.MethodPost, wire.PathDeployments, wd, idempotent, &id)
	return id, err
}

// UpgradeExecutionComponent implements core.DbExternalApi's method: PUT
// …/upgrade with skip_determinism_check, the bare move (the replay check is
// the caller's: worker.Worker.Upgrade and the SDK worker serving a server's
// replay check call it after replaying; UpgradeChecked asks the server for
// the checked upgrade). The reason is recorded by the server as manual and
// forced.
func (c *Client) UpgradeExecutionComponent(ctx context.Context, id core.ExecutionId, old, new core.ComponentDigest, _ core.ComponentUpgradeReason) error {
	return c.Upgrade(ctx, id, old, new)
}
