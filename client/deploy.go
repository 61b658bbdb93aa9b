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
