package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stela-dev/stela/core"
)

// Get implements core.DbConnection.
func (s *Service) Get(ctx context.Context, id core.ExecutionId) (*core.ExecutionLog, error) {
	var log *core.ExecutionLog
	if err := s.settle(ctx, id); err != nil {
		return nil, err
	}
	err := s.view(ctx, func(tx ReadTx) error {
		h, err := tx.Head(id)
		if err != nil {
			return err
		}
		events, err := tx.Events(id, 0, h.Version+1)
		if err != nil {
			return err
		}
		responses, err := tx.Responses(id, 1, h.MaxCursor+1)
		if err != nil {
			return err
		}
		log = &core.ExecutionLog{
			ExecutionID: id, Events: events, Responses: responses, NextVersion: h.NextVersion(),
			PendingState: h.PendingState(), ComponentDigest: h.ComponentDigest,
			ComponentType: h.ComponentType, DeploymentID: h.DeploymentID,
		}
		return nil
	})
	return log, err
}

// GetExecutionEvent implements core.DbConnection.
func (s *Service) GetExecutionEvent(ctx context.Context, id core.ExecutionId, version core.Version) (core.ExecutionEvent, error) {
	var ev core.ExecutionEvent
	err := s.view(ctx, func(tx ReadTx) error {
		var err error
		ev, err = tx.Event(id, version)
		return err
	})
	return ev, err
}

// GetLastExecutionEvent implements core.DbExecutor.
func (s *Service) GetLastExecutionEvent(ctx context.Context, id core.ExecutionId) (core.ExecutionEvent, error) {
	var ev core.ExecutionEvent
	err := s.view(ctx, func(tx ReadTx) error {
		h, err := tx.Head(id)
		if err != nil {
			return err
		}
		ev, err = tx.Event(id, h.Version)
		return err
	})
	return ev, err
}

// GetCreateRequest implements core.DbConnection.
func (s *Service) GetCreateRequest(ctx context.Context, id core.ExecutionId) (core.CreateRequest, error) {
	ev, err := s.GetExecutionEvent(ctx, id, 0)
	if err != nil {
		return core.CreateRequest{}, err
	}
	c, ok := ev.Event.(*core.Created)
	if !ok {
		return core.CreateRequest{}, fmt.Errorf("store: execution log of %s must start with creation", id)
	}
	return core.CreateRequestFrom(id, ev.CreatedAt, c), nil
}

// GetPendingState implements core.DbConnection.
func (s *Service) GetPendingState(ctx context.Context, id core.ExecutionId) (core.ExecutionWithState, error) {
	var out core.ExecutionWithState
	err := s.view(ctx, func(tx ReadTx) error {
		h, err := tx.Head(id)
		if err != nil {
			return err
		}
		out = h.WithState()
		return nil
	})
	return out, err
}

// ReadHistory returns, in one consistent read, the history events of id with
// version >= fromVersion, its responses with cursor > afterCursor and its next
// version: what a worker that locked with core.LockRequest.SkipHistory and
// holds the history below fromVersion lacks. core.ErrNotFound for an unknown
// execution.
func (s *Service) ReadHistory(ctx context.Context, id core.ExecutionId, fromVersion core.Version, afterCursor core.ResponseCursor) (core.HistoryDelta, error) {
	out := core.HistoryDelta{Events: []core.HistoryEventWithVersion{}, Responses: []core.ResponseWithCursor{}}
	if err := s.settle(ctx, id); err != nil {
		return out, err
	}
	err := s.view(ctx, func(tx ReadTx) error {
		h, err := tx.Head(id)
		if err != nil {
			return err
		}
		out.NextVersion = h.NextVersion()
		if fromVersion <= h.Version {
			events, err := tx.Events(id, fromVersion, h.Version+1)
			if err != nil {
				return err
			}
			if hist := core.EventHistoryOf(events); hist != nil {
				out.Events = hist
			}
		}
		if afterCursor < h.MaxCursor {
			if out.Responses, err = tx.Responses(id, afterCursor+1, h.MaxCursor+1); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// GetCancelling implements core.DbConnection.
func (s *Service) GetCancelling(ctx context.Context, batchSize uint32) ([]core.ExecutionId, error) {
	return s.b.Cancelling(ctx, int(batchSize))
}

// GetExpiredTimers implements core.DbConnection: due unpaused delays, then
// expired locks of active executions.
func (s *Service) GetExpiredTimers(ctx context.Context, at core.Timestamp) ([]core.ExpiredTimer, error) {
	delays, err := s.b.ExpiredDelays(ctx, at)
	if err != nil {
		return nil, fmt.Errorf("store: expired delays: %w", err)
	}
	locks, err := s.b.ExpiredLocks(ctx, at)
	if err != nil {
		return nil, fmt.Errorf("store: expired locks: %w", err)
	}
	out := make([]core.ExpiredTimer, 0, len(delays)+len(locks))
	for i := range delays {
		out = append(out, core.ExpiredTimer{Delay: &delays[i]})
	}
	for i := range locks {
		if l, ok := core.ExpiredLockOf(&locks[i], at); ok {
			out = append(out, core.ExpiredTimer{Lock: &l})
		}
	}
	return out, nil
}

// SubscribeToNextResponses implements core.DbConnection. Responses already
// stored are returned even when ctx is already done (docs/spec/semantics.md
// §4.3.13): only the waiting races the deadline.
func (s *Service) SubscribeToNextResponses(ctx context.Context, id core.ExecutionId, last core.ResponseCursor) ([]core.ResponseWithCursor, error) {
	w := s.hub.register([]string{responseKey(id)})
	defer s.hub.unregister(w)
	ticker := time.NewTicker(s.poll)
	defer ticker.Stop()
	for first := true; ; first = false {
		var out []core.ResponseWithCursor
		if err := s.settleReady(ctx, first, id); err != nil {
			if ctx.Err() != nil {
				return nil, timeoutErr(ctx)
			}
			return nil, err
		}
		err := s.readReady(ctx, first, func(tx ReadTx) error {
			h, err := tx.Head(id)
			if errors.Is(err, core.ErrNotFound) {
				return nil
			} else if err != nil {
				return err
			}
			if h.MaxCursor <= last {
				return nil
			}
			out, err = tx.Responses(id, last+1, h.MaxCursor+1)
			return err
		})
		if err != nil {
			if ctx.Err() != nil {
				return nil, timeoutErr(ctx)
			}
			return nil, err
		}
		if len(out) > 0 {
			return out, nil
		}
		select {
		case <-ctx.Done():
			return nil, timeoutErr(ctx)
		case <-w.ch:
		case <-ticker.C:
		}
	}
}

// WaitForFinishedResult implements core.DbConnection. A finished result is
// returned even when ctx is already done (docs/spec/semantics.md §4.3.14:
// get_finished_result is this wait with an immediately-ready timeout); only
// the waiting races the deadline.
func (s *Service) WaitForFinishedResult(ctx context.Context, id core.ExecutionId) (core.ReturnValue, error) {
	w := s.hub.register([]string{finishedKey(id)})
	defer s.hub.unregister(w)
	ticker := time.NewTicker(s.poll)
	defer ticker.Stop()
	for first := true; ; first = false {
		var rv *core.ReturnValue
		err := s.readReady(ctx, first, func(tx ReadTx) error {
			h, err := tx.Head(id)
			if err != nil {
				return err
			}
			if !h.IsFinished() {
				return nil
			}
			ev, err := tx.Event(id, h.Version)
			if err != nil {
				return err
			}
			f, ok := ev.Event.(*core.Finished)
			if !ok {
				return fmt.Errorf("store: event %d of %s is not Finished", h.Version, id)
			}
			rv = &f.Retval
			return nil
		})
		if err != nil {
			if ctx.Err() != nil && !errors.Is(err, core.ErrNotFound) {
				return core.ReturnValue{}, timeoutErr(ctx)
			}
			return core.ReturnValue{}, err
		}
		if rv != nil {
			return *rv, nil
		}
		select {
		case <-ctx.Done():
			return core.ReturnValue{}, timeoutErr(ctx)
		case <-w.ch:
		case <-ticker.C:
		}
	}
}

// firstReadBound bounds the first read of a wait whose context is already
// done: that read ignores the wait's deadline, not the need to finish.
const firstReadBound = 10 * time.Second

// readReady runs one read of a wait loop. The first read runs whatever the
// state of ctx (a deadline bounds the waiting, never the check for data
// that is already there), detached from ctx's cancellation and bounded by
// firstReadBound; later reads use ctx.
func (s *Service) readReady(ctx context.Context, first bool, fn func(tx ReadTx) error) error {
	if !first {
		return s.view(ctx, fn)
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), firstReadBound)
	defer cancel()
	return s.view(rctx, fn)
}

// settleReady is settle for one read of a wait loop, bounded like readReady.
func (s *Service) settleReady(ctx context.Context, first bool, id core.ExecutionId) error {
	if !first {
		return s.settle(ctx, id)
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), firstReadBound)
	defer cancel()
	return s.settle(rctx, id)
}

// timeoutErr reports a wait that ended because ctx was done.
func timeoutErr(ctx context.Context) error {
	return fmt.Errorf("%w: %w", core.ErrTimeout, ctx.Err())
}
