package store

import (
	"context"
	"errors"

	"github.com/stela-dev/stela/core"
)

// Ready reports whether the store can serve: the backend's own check when
// it implements ReadyChecker, else one strongly consistent read.
func (s *Service) Ready(ctx context.Context) error {
	if r := s.caps.ready; r != nil {
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
