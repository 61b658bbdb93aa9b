package httpapi

import (
	"fmt"
	"net/http"

	"github.com/stela-dev/stela/core"
)

// POST /v1/deployments: an SDK worker records its components as a
// deployment (core.RegisterWorkerDeployment), idempotently, at the
// server's time.
func (s *server) registerDeployment(c *call) error {
	var body core.WorkerDeployment
	if err := c.decodeBody(&body); err != nil {
		return err
	}
	if err := body.Validate(); err != nil {
		return unprocessable(err)
	}
	id, err := core.RegisterWorkerDeployment(c.ctx(), s.db, body, s.now(), s.newDeploymentID)
	if err != nil {
		return err
	}
	return c.reply(http.StatusOK, id, id.String)
}

func (s *server) newDeploymentID() (core.DeploymentId, error) {
	id, err := core.NewDeploymentId(uint64(max(s.now().UnixMilli(), 0)), s.entropy)
	if err != nil {
		return id, fmt.Errorf("httpapi: generate deployment id: %w", err)
	}
	return id, nil
}
