package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/wire"
)

// Worker routes added for SDK workers: incremental history reads (so lock
// answers need not carry the whole history), creation of top-level
// executions, and the typed result of an execution.

// execQuery reads the path's execution id and unsigned query parameters
// (absent: 0).
func (c *call) execQuery(names ...string) (core.ExecutionId, []uint64, error) {
	id, err := pathExecutionID(c.r)
	if err != nil {
		return id, nil, err
	}
	q, err := c.query()
	if err != nil {
		return id, nil, err
	}
	vals := make([]uint64, len(names))
	for i, name := range names {
		bits := 32
		if name == "wait_ms" {
			bits = 64
		}
		v, err := q.optUint(name, bits)
		if err != nil {
			return id, nil, err
		}
		if v != nil {
			vals[i] = *v
		}
	}
	return id, vals, nil
}

// GET /v1/worker/executions/{execution_id}/history
func (s *server) workerHistory(c *call) error {
	id, q, err := c.execQuery("from_version", "after_cursor")
	if err != nil {
		return err
	}
	d, err := s.db.ReadHistory(c.ctx(), id, core.Version(q[0]), core.ResponseCursor(q[1]))
	if err != nil {
		return err
	}
	return c.json(http.StatusOK, wire.NewHistoryDeltaJSON(d))
}

// POST /v1/worker/create
func (s *server) workerCreate(c *call) error {
	var req core.CreateRequest
	if err := c.decodeBody(&req); err != nil {
		return err
	}
	if err := s.timeBound().check("created_at", req.CreatedAt); err != nil {
		return err
	}
	setExecutionID(c.r, req.ExecutionID)
	next, err := s.db.Create(c.ctx(), req)
	if err != nil {
		return err
	}
	return c.json(http.StatusOK, wire.NextVersionJSON{NextVersion: next})
}

// GET /v1/worker/executions/{execution_id}/result
func (s *server) workerResult(c *call) error {
	id, q, err := c.execQuery("wait_ms")
	if err != nil {
		return err
	}
	ev, err := s.db.GetLastExecutionEvent(c.ctx(), id)
	if err != nil {
		return err
	}
	if f, ok := ev.Event.(*core.Finished); ok {
		return c.json(http.StatusOK, f.Retval)
	}
	if wait := q[0]; wait > 0 {
		wctx, cancel := context.WithTimeout(c.ctx(), time.Duration(s.clampWait(wait))*time.Millisecond)
		defer cancel()
		rv, err := s.db.WaitForFinishedResult(wctx, id)
		switch {
		case err == nil:
			return c.json(http.StatusOK, rv)
		case c.ctx().Err() != nil || !(errors.Is(err, core.ErrTimeout) || errors.Is(err, context.DeadlineExceeded)):
			return err
		}
	}
	c.w.Header().Set("Retry-After", "0")
	return httpErr(http.StatusTooEarly, "not finished yet")
}
