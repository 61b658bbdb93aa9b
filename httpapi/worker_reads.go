package httpapi

import (
	"fmt"
	"log/slog"
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

// POST /v1/worker/create-locked (eager start, core.EagerCreator): the
// create of workerCreate, with the execution locked to the caller in the
// same commit when the body's lock takes it (docs/http-api.md §4.1b). A
// store that cannot lock eagerly creates it pending and answers no lock.
// With `requests` (a batch, core.EagerBatchCreator) each is created so in
// its own commit under the one lock and answered on its own.
func (s *server) workerCreateLocked(c *call) error {
	var b wire.CreateLockedBody
	if err := c.decodeBody(&b); err != nil {
		return err
	}
	if (b.Request == nil) == (b.Requests == nil) {
		return badRequest("the body must have exactly one of `request` and `requests`")
	}
	tb := s.timeBound()
	n := 1
	if b.Request != nil {
		if err := tb.check("request.created_at", b.Request.CreatedAt); err != nil {
			return err
		}
	} else {
		n = len(b.Requests)
		if err := checkBatch("requests", n, 1, wire.MaxCreateLocked); err != nil {
			return err
		}
		for i := range b.Requests {
			if err := tb.check(fmt.Sprintf("requests[%d].created_at", i), b.Requests[i].CreatedAt); err != nil {
				return err
			}
		}
	}
	if err := tb.checkPtr("lock.created_at", b.Lock.CreatedAt); err != nil {
		return err
	}
	if b.Request != nil && b.Lock.BatchSize != 1 {
		return badRequest("`lock.batch_size` must be 1 (one execution is created)")
	}
	if b.Requests != nil && int(b.Lock.BatchSize) != n {
		return badRequest("`lock.batch_size` must be the number of `requests` (%d), got %d", n, b.Lock.BatchSize)
	}
	if len(b.Lock.FFQNs) == 0 {
		return badRequest("`lock.ffqns` must name at least one function")
	}
	req := b.Lock.Request(s.now(), uint32(n), nil)
	req.ByComponentDigest = b.Lock.ByComponentDigest
	lock := core.EagerLock{Request: req, FFQNs: b.Lock.FFQNs}
	if b.Requests != nil {
		return s.createLockedMany(c, b.Requests, lock)
	}
	setExecutionID(c.r, b.Request.ExecutionID)
	ec, ok := s.db.(core.EagerCreator)
	if !ok {
		next, err := s.db.Create(c.ctx(), *b.Request)
		if err != nil {
			return err
		}
		return c.json(http.StatusOK, wire.CreateChildrenAnswer{NextVersion: next})
	}
	next, locked, err := ec.CreateLocked(c.ctx(), *b.Request, lock)
	if err != nil {
		return err
	}
	return c.json(http.StatusOK, lockedAnswer(next, locked))
}

// createLockedMany answers a batch of create-locked: by the store's
// CreateLockedMany, else one CreateLocked (or Create) per request.
func (s *server) createLockedMany(c *call, reqs []core.CreateRequest, lock core.EagerLock) error {
	var res []core.CreateLockedResult
	if bc, ok := s.db.(core.EagerBatchCreator); ok {
		var err error
		if res, err = bc.CreateLockedMany(c.ctx(), reqs, lock); err != nil {
			return err
		}
	} else {
		res = make([]core.CreateLockedResult, len(reqs))
		ec, _ := s.db.(core.EagerCreator)
		one := lock
		one.Request.BatchSize = 1
		for i, r := range reqs {
			if ec == nil {
				res[i].NextVersion, res[i].Err = s.db.Create(c.ctx(), r)
				continue
			}
			next, locked, err := ec.CreateLocked(c.ctx(), r, one)
			res[i].NextVersion, res[i].Err = next, err
			if len(locked) > 0 {
				res[i].Locked = &locked[0]
			}
		}
	}
	if len(res) != len(reqs) {
		return fmt.Errorf("create-locked: %d results for %d requests", len(res), len(reqs))
	}
	out := wire.CreateLockedManyAnswer{Results: make([]wire.CreateLockedResultJSON, len(res))}
	for i, r := range res {
		if r.Err == nil {
			next := r.NextVersion
			out.Results[i].NextVersion = &next
			if r.Locked != nil {
				le := wire.NewLockedExecutionJSON(*r.Locked)
				out.Results[i].Locked = &le
			}
			continue
		}
		status, msg := errorStatus(r.Err)
		if status >= 500 && status != http.StatusNotImplemented && status != http.StatusServiceUnavailable {
			s.log.ErrorContext(c.ctx(), "create-locked item failed", slog.Int("item", i), slog.Int(logKeyStatus, status),
				slog.String(logKeyErr, r.Err.Error()))
		}
		out.Results[i] = wire.CreateLockedResultJSON{Status: status, Err: msg}
	}
	return c.json(http.StatusOK, out)
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
		wctx, cancel := s.pollContext(c.ctx(), time.Duration(s.clampWait(wait))*time.Millisecond)
		defer cancel()
		rv, err := s.db.WaitForFinishedResult(wctx, id)
		switch {
		case err == nil:
			return c.json(http.StatusOK, rv)
		case !s.pollEnded(c.ctx(), err):
			return err
		}
	}
	c.w.Header().Set("Retry-After", "0")
	return httpErr(http.StatusTooEarly, "not finished yet")
}
