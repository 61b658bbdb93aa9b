package store

import (
	"context"
	"errors"

	"github.com/stela-dev/stela/core"
)

// ReadyChecker is an optional Backend capability: Ready reports whether the
// store is reachable and its schema is the one this build expects (SQLite:
// PRAGMA user_version; DynamoDB: the table and every index ACTIVE). It
// backs the /readyz health check.
type ReadyChecker interface {
	Ready(ctx context.Context) error
}

// Ready reports whether the store can serve: the backend's own check when
// it implements ReadyChecker, else one strongly consistent read.
func (s *Service) Ready(ctx context.Context) error {
	if r, ok := s.b.(ReadyChecker); ok {
		return r.Ready(ctx)
	}
	return s.view(ctx, func(tx ReadTx) error {
		_, err := tx.Head(core.ExecutionId{})
		if errors.Is(err, core.ErrNotFound) {
			return nil
		}
		return err
	})
}
