package store

import (
	"context"
	"crypto/rand"

	"github.com/stela-dev/stela/core"
)

// RegisterDeployment implements core.WorkerConn: it records an in-process
// worker's components as a deployment (core.RegisterWorkerDeployment) at
// the store's time.
func (s *Service) RegisterDeployment(ctx context.Context, wd core.WorkerDeployment) (core.DeploymentId, error) {
	now := s.clock.Now()
	return core.RegisterWorkerDeployment(ctx, s, wd, now, func() (core.DeploymentId, error) {
		return core.NewDeploymentId(uint64(max(now.UnixMilli(), 0)), rand.Reader)
	})
}
