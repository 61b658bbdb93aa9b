package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/stela-dev/stela/core"
)

// GetBacktrace implements core.DbExternalApi.
func (s *Service) GetBacktrace(ctx context.Context, id core.ExecutionId, filter core.BacktraceFilter) (core.BacktraceInfo, error) {
	return s.b.GetBacktrace(ctx, id, filter)
}

// ListExecutions implements core.DbExternalApi.
func (s *Service) ListExecutions(ctx context.Context, filter core.ListExecutionsFilter, p core.ExecutionListPagination) ([]core.ExecutionWithState, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	heads, err := s.b.ListExecutions(ctx, filter, p)
	if err != nil {
		return nil, err
	}
	out := make([]core.ExecutionWithState, len(heads))
	for i := range heads {
		out[i] = heads[i].WithState()
	}
	return out, nil
}

// window computes the half-open key range [from, to) of a page over keys
// lo..hi (inclusive), in uint64 to avoid overflow at the cursor extremes.
func window(direction core.Direction, length uint16, cursor uint64, including bool, lo, hi uint64) (from, to uint64) {
	if hi < lo {
		return lo, lo
	}
	if direction == core.NewerThan {
		from = cursor + 1
		if including {
			from = cursor
		}
		if from < lo {
			from = lo
		}
		to = from + uint64(length)
		if to > hi+1 {
			to = hi + 1
		}
		if from > to {
			from = to
		}
		return from, to
	}
	to = cursor
	if including {
		to = cursor + 1
	}
	if to > hi+1 {
		to = hi + 1
	}
	if to < lo {
		return lo, lo
	}
	from = lo
	if to-lo > uint64(length) {
		from = to - uint64(length)
	}
	return from, to
}

// ListExecutionEvents implements core.DbExternalApi.
func (s *Service) ListExecutionEvents(ctx context.Context, id core.ExecutionId, p core.Pagination[core.Version], includeBacktraceID bool) (core.ListExecutionEventsResponse, error) {
	if err := p.Validate(); err != nil {
		return core.ListExecutionEventsResponse{}, err
	}
	var out core.ListExecutionEventsResponse
	err := s.view(ctx, func(tx ReadTx) error {
		h, err := tx.Head(id)
		if err != nil {
			return err
		}
		from, to := window(p.Direction, p.Length, uint64(p.Cursor), p.IncludingCursor, 0, uint64(h.Version))
		events, err := tx.Events(id, core.Version(from), core.Version(to))
		if err != nil {
			return err
		}
		out = core.ListExecutionEventsResponse{Events: events, MaxVersion: h.Version}
		return nil
	})
	if err != nil {
		return out, err
	}
	if includeBacktraceID && len(out.Events) > 0 {
		if err := s.attachBacktraceIDs(ctx, id, out.Events); err != nil {
			return out, err
		}
	}
	if out.Events == nil {
		out.Events = []core.ExecutionEvent{}
	}
	return out, nil
}

func (s *Service) attachBacktraceIDs(ctx context.Context, id core.ExecutionId, events []core.ExecutionEvent) error {
	ranges, err := s.b.BacktraceRanges(ctx, id)
	if err != nil {
		return err
	}
	for i := range events {
		for _, r := range ranges {
			if r[0] <= events[i].Version && events[i].Version < r[1] {
				v := r[0]
				events[i].BacktraceID = &v
				break
			}
		}
	}
	return nil
}

// ListResponses implements core.DbExternalApi (list_responses_filtered with
// the seed's scan_cursor rule applied to the unfiltered window).
func (s *Service) ListResponses(ctx context.Context, id core.ExecutionId, p core.Pagination[core.ResponseCursor], js *core.JoinSetId) (core.ListResponsesResponse, error) {
	if err := p.Validate(); err != nil {
		return core.ListResponsesResponse{}, err
	}
	var out core.ListResponsesResponse
	if err := s.settle(ctx, id); err != nil {
		return out, err
	}
	err := s.view(ctx, func(tx ReadTx) error {
		var err error
		out, err = responsesPage(tx, id, p)
		return err
	})
	if err != nil {
		return out, err
	}
	if js != nil {
		filtered := []core.ResponseWithCursor{}
		for _, r := range out.Responses {
			if r.Event.Event.JoinSetID == *js {
				filtered = append(filtered, r)
			}
		}
		out.Responses = filtered
	}
	return out, nil
}

func responsesPage(tx ReadTx, id core.ExecutionId, p core.Pagination[core.ResponseCursor]) (core.ListResponsesResponse, error) {
	h, err := tx.Head(id)
	if errors.Is(err, core.ErrNotFound) {
		return core.ListResponsesFromPage([]core.ResponseWithCursor{}, 0, p), nil
	} else if err != nil {
		return core.ListResponsesResponse{}, err
	}
	from, to := window(p.Direction, p.Length, uint64(p.Cursor), p.IncludingCursor, 1, uint64(h.MaxCursor))
	resps := []core.ResponseWithCursor{}
	if from < to {
		if resps, err = tx.Responses(id, core.ResponseCursor(from), core.ResponseCursor(to)); err != nil {
			return core.ListResponsesResponse{}, err
		}
		if resps == nil {
			resps = []core.ResponseWithCursor{}
		}
	}
	return core.ListResponsesFromPage(resps, h.MaxCursor, p), nil
}

// ListExecutionEventsResponses implements core.DbExternalApi.
func (s *Service) ListExecutionEventsResponses(ctx context.Context, id core.ExecutionId, since core.Version, maxLength uint16, includeBacktraceID bool, respPagination core.Pagination[core.ResponseCursor]) (core.ExecutionWithStateRequestsResponses, error) {
	if maxLength == 0 {
		return core.ExecutionWithStateRequestsResponses{}, &core.ValidationError{Reason: "max length must be non-zero"}
	}
	if err := respPagination.Validate(); err != nil {
		return core.ExecutionWithStateRequestsResponses{}, err
	}
	var out core.ExecutionWithStateRequestsResponses
	if err := s.settle(ctx, id); err != nil {
		return out, err
	}
	err := s.view(ctx, func(tx ReadTx) error {
		h, err := tx.Head(id)
		if err != nil {
			return err
		}
		from, to := window(core.NewerThan, maxLength, uint64(since), true, 0, uint64(h.Version))
		events, err := tx.Events(id, core.Version(from), core.Version(to))
		if err != nil {
			return err
		}
		page, err := responsesPage(tx, id, respPagination)
		if err != nil {
			return err
		}
		out = core.ExecutionWithStateRequestsResponses{ExecutionWithState: h.WithState(), Events: events,
			Responses: page.Responses, MaxVersion: h.Version, MaxCursor: h.MaxCursor}
		return nil
	})
	if err == nil && includeBacktraceID && len(out.Events) > 0 {
		err = s.attachBacktraceIDs(ctx, id, out.Events)
	}
	return out, err
}

// UpgradeExecutionComponent implements core.DbExternalApi; the event's
// created_at is the server clock.
func (s *Service) UpgradeExecutionComponent(ctx context.Context, id core.ExecutionId, old, new core.ComponentDigest, reason core.ComponentUpgradeReason) error {
	now := s.clock.Now()
	return s.update(ctx, func(t *txn) error {
		h, err := t.head(id)
		if err != nil {
			return err
		}
		req, err := core.PlanUpgrade(h, old, new, reason, now)
		if err != nil {
			return err
		}
		_, err = s.appendIn(t, id, h.NextVersion(), []core.AppendRequest{req}, now, core.AppendOptions{})
		return err
	})
}

// ListLogs implements core.DbExternalApi.
func (s *Service) ListLogs(ctx context.Context, id core.ExecutionId, showDerived bool, filter core.LogFilter, p core.Pagination[core.LogCursor]) (core.ListLogsResponse, error) {
	if err := p.Validate(); err != nil {
		return core.ListLogsResponse{}, err
	}
	if !filter.ShowLogs && !filter.ShowStreams {
		return core.ListLogsResponse{}, &core.ValidationError{Reason: "at least one of `show_logs`, `show_streams` must be set"}
	}
	items, err := s.b.ListLogs(ctx, id, showDerived, filter, p)
	if err != nil {
		return core.ListLogsResponse{}, err
	}
	if items == nil {
		items = []core.LogEntryRow{}
	}
	return core.ListLogsFromPage(items, p), nil
}

// PauseExecution implements core.DbExternalApi.
func (s *Service) PauseExecution(ctx context.Context, id core.ExecutionId, pausedAt core.Timestamp) (core.Version, error) {
	return s.lifecycleChange(ctx, id, pausedAt, core.PlanPauseExecution)
}

// UnpauseExecution implements core.DbExternalApi.
func (s *Service) UnpauseExecution(ctx context.Context, id core.ExecutionId, unpausedAt core.Timestamp) (core.Version, error) {
	return s.lifecycleChange(ctx, id, unpausedAt, core.PlanUnpauseExecution)
}

func (s *Service) lifecycleChange(ctx context.Context, id core.ExecutionId, at core.Timestamp, plan func(*core.ExecutionState, core.Timestamp) ([]core.AppendRequest, error)) (core.Version, error) {
	var next core.Version
	err := s.update(ctx, func(t *txn) error {
		h, err := t.head(id)
		if err != nil {
			return err
		}
		reqs, err := plan(h, at)
		if err != nil {
			return err
		}
		res, err := s.appendIn(t, id, h.NextVersion(), reqs, at, core.AppendOptions{})
		next = res.NextVersion
		return err
	})
	return next, err
}

// PauseDelay implements core.DbExternalApi.
func (s *Service) PauseDelay(ctx context.Context, delay core.DelayId) error {
	return s.setDelayPaused(ctx, delay, true)
}

// UnpauseDelay implements core.DbExternalApi.
func (s *Service) UnpauseDelay(ctx context.Context, delay core.DelayId) error {
	return s.setDelayPaused(ctx, delay, false)
}

func (s *Service) setDelayPaused(ctx context.Context, delay core.DelayId, paused bool) error {
	owner, js := delay.SplitToParts()
	err := s.b.Update(ctx, func(tx Tx) error { return tx.SetDelayPaused(owner, js, delay, paused) })
	if err != nil {
		return fmt.Errorf("store: set delay %s paused=%v: %w", delay, paused, err)
	}
	return nil
}
