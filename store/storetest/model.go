package storetest

import (
	"errors"
	"sort"

	"github.com/stela-dev/stela/core"
)

// model is the in-memory reference the randomized test compares the store
// with. It is written directly on core's pure functions (NewExecution,
// AppendBatch, ApplyResponse, the Plan* functions, ExpiredLockOf,
// DecideExpiredLock) and knows nothing of package store. Every method is one
// all-or-nothing operation: it computes everything first and commits only on
// success.
type model struct {
	execs map[core.ExecutionId]*modelExec
	seq   int
	// childResponses and delayOutcomes enforce the global uniqueness of
	// responses (one per child id, one per delay id).
	childResponses map[core.ExecutionId]bool
	delayOutcomes  map[core.DelayId]bool
}

type delayKey struct {
	js    core.JoinSetId
	delay core.DelayId
}

type modelExec struct {
	state     core.ExecutionState
	events    []core.ExecutionEvent
	responses []core.ResponseWithCursor
	delays    map[delayKey]core.DelayTimer
	// seq is the creation order (tie-breaker of pending selection).
	seq int
}

func newModel() *model {
	return &model{execs: map[core.ExecutionId]*modelExec{}, childResponses: map[core.ExecutionId]bool{},
		delayOutcomes: map[core.DelayId]bool{}}
}

// JoinNextCount implements core.JoinSetLookup.
func (e *modelExec) JoinNextCount(js core.JoinSetId) uint32 {
	var n uint32
	for _, ev := range e.events {
		if h, ok := ev.Event.(*core.HistoryEventRequest); ok {
			if j, ok := h.Event.(*core.JoinNext); ok && j.JoinSetID == js {
				n++
			}
		}
	}
	return n
}

// NthResponse implements core.JoinSetLookup.
func (e *modelExec) NthResponse(js core.JoinSetId, n uint32) (core.Timestamp, bool) {
	var i uint32
	for _, r := range e.responses {
		if r.Event.Event.JoinSetID == js {
			i++
			if i == n {
				return r.Event.CreatedAt, true
			}
		}
	}
	return core.Timestamp{}, false
}

func (e *modelExec) created() *core.Created { return e.events[0].Event.(*core.Created) }

// --- pending writes: computed first, committed together -------------------------------

// pending buffers the effects of one operation.
type pending struct {
	m       *model
	execs   map[core.ExecutionId]*modelExec // copies of touched executions
	creates []core.ExecutionId
	childs  map[core.ExecutionId]bool
	delays  map[core.DelayId]bool
}

func (m *model) begin() *pending {
	return &pending{m: m, execs: map[core.ExecutionId]*modelExec{}, childs: map[core.ExecutionId]bool{}, delays: map[core.DelayId]bool{}}
}

// exec returns the working copy of id, or nil.
func (p *pending) exec(id core.ExecutionId) *modelExec {
	if e, ok := p.execs[id]; ok {
		return e
	}
	e, ok := p.m.execs[id]
	if !ok {
		return nil
	}
	c := &modelExec{state: e.state.Clone(), events: append([]core.ExecutionEvent(nil), e.events...),
		responses: append([]core.ResponseWithCursor(nil), e.responses...), delays: map[delayKey]core.DelayTimer{}, seq: e.seq}
	for k, v := range e.delays {
		c.delays[k] = v
	}
	p.execs[id] = c
	return c
}

func (p *pending) commit() {
	for id, e := range p.execs {
		p.m.execs[id] = e
	}
	for c := range p.childs {
		p.m.childResponses[c] = true
	}
	for d, ok := range p.delays {
		p.m.delayOutcomes[d] = ok
	}
}

func (p *pending) create(req core.CreateRequest) (core.Version, error) {
	if p.exec(req.ExecutionID) != nil {
		return 0, core.ErrConflict
	}
	st, events, next, err := core.NewExecution(req)
	if err != nil {
		return 0, err
	}
	p.m.seq++
	p.execs[req.ExecutionID] = &modelExec{state: st, events: events, delays: map[delayKey]core.DelayTimer{}, seq: p.m.seq}
	return next, nil
}

func hasCreated(batch []core.AppendRequest) bool {
	for _, r := range batch {
		if _, ok := r.Event.(*core.Created); ok {
			return true
		}
	}
	return false
}

func (p *pending) append(id core.ExecutionId, v core.Version, batch []core.AppendRequest, opts core.AppendOptions) (core.AppendResult, error) {
	if len(batch) == 0 {
		return core.AppendResult{}, &core.ValidationError{Reason: "batch cannot be empty"}
	}
	if hasCreated(batch) {
		return core.AppendResult{}, &core.ValidationError{Reason: "cannot append `Created` event - use `create` instead"}
	}
	e := p.exec(id)
	if e == nil {
		return core.AppendResult{}, core.ErrNotFound
	}
	res, err := core.AppendBatch(e.state, v, batch, e, opts)
	if err != nil {
		return core.AppendResult{}, err
	}
	for _, d := range res.Delays {
		k := delayKey{d.JoinSetID, d.DelayID}
		if _, dup := e.delays[k]; dup {
			return core.AppendResult{}, core.ErrConflict
		}
		e.delays[k] = d
	}
	e.state = res.State
	e.events = append(e.events, res.Events...)
	return res, nil
}

func (p *pending) respond(id core.ExecutionId, createdAt core.Timestamp, ev core.JoinSetResponseEvent) error {
	switch r := ev.Event.(type) {
	case *core.ChildExecutionFinished:
		if p.m.childResponses[r.ChildExecutionID.ExecutionId] || p.childs[r.ChildExecutionID.ExecutionId] {
			return core.ErrConflict
		}
		p.childs[r.ChildExecutionID.ExecutionId] = true
	case *core.DelayFinished:
		if _, ok := p.m.delayOutcomes[r.DelayID]; ok {
			return core.ErrConflict
		}
		if _, ok := p.delays[r.DelayID]; ok {
			return core.ErrConflict
		}
		p.delays[r.DelayID] = bool(r.Result)
	}
	e := p.exec(id)
	if e == nil {
		return core.ErrNotFound
	}
	st, cursor, _ := core.ApplyResponse(e.state, ev.JoinSetID, createdAt)
	e.state = st
	e.responses = append(e.responses, core.ResponseWithCursor{Cursor: cursor,
		Event: core.JoinSetResponseEventOuter{CreatedAt: createdAt, Event: ev}})
	if d, ok := ev.Event.(*core.DelayFinished); ok {
		delete(e.delays, delayKey{ev.JoinSetID, d.DelayID})
	}
	return nil
}

// --- the API, one operation each ----------------------------------------------------

func (m *model) create(req core.CreateRequest) (core.Version, error) {
	p := m.begin()
	v, err := p.create(req)
	if err == nil {
		p.commit()
	}
	return v, err
}

func (m *model) appendBatch(id core.ExecutionId, v core.Version, batch []core.AppendRequest) (core.Version, error) {
	p := m.begin()
	res, err := p.append(id, v, batch, core.AppendOptions{})
	if err != nil {
		return 0, err
	}
	p.commit()
	return res.NextVersion, nil
}

func (m *model) appendResponse(id core.ExecutionId, createdAt core.Timestamp, ev core.JoinSetResponseEvent) error {
	p := m.begin()
	if err := p.respond(id, createdAt, ev); err != nil {
		return err
	}
	p.commit()
	return nil
}

func (m *model) appendDelayResponse(createdAt core.Timestamp, id core.ExecutionId, js core.JoinSetId, d core.DelayId, success bool) (core.AppendDelayResponseOutcome, error) {
	if prev, ok := m.delayOutcomes[d]; ok {
		if prev {
			return core.DelayResponseAlreadyFinished, nil
		}
		return core.DelayResponseAlreadyCancelled, nil
	}
	if err := m.appendResponse(id, createdAt, delayResp(js, d, success)); err != nil {
		return 0, err
	}
	return core.DelayResponseSuccess, nil
}

func (m *model) respondToParent(events core.AppendEventsToExecution, resp core.AppendResponseToExecution) (core.Version, error) {
	if err := core.ValidateRespondToParent(events, resp); err != nil {
		return 0, err
	}
	p := m.begin()
	res, err := p.append(events.ExecutionID, events.Version, events.Batch, core.AppendOptions{})
	if err != nil {
		return 0, err
	}
	if err := p.respond(resp.ParentExecutionID, resp.CreatedAt, core.JoinSetResponseEvent{JoinSetID: resp.JoinSetID,
		Event: &core.ChildExecutionFinished{ChildExecutionID: resp.ChildExecutionID, FinishedVersion: resp.FinishedVersion, Result: resp.Result}}); err != nil {
		return 0, err
	}
	p.commit()
	return res.NextVersion, nil
}

func (m *model) createNewExecution(id core.ExecutionId, v core.Version, batch []core.AppendRequest, children []core.CreateRequest) (core.Version, error) {
	p := m.begin()
	res, err := p.append(id, v, batch, core.AppendOptions{})
	if err != nil {
		return 0, err
	}
	for _, c := range children {
		if _, err := p.create(c); err != nil {
			return 0, err
		}
	}
	p.commit()
	return res.NextVersion, nil
}

// createNewExecutionLocked is createNewExecution with eager locks: a child
// a lock takes (core.EagerLock.Takes, first lock with room) is created and
// locked at version 1 in the same transaction; one the lock path refuses
// (non-retriable) stays pending.
func (m *model) createNewExecutionLocked(id core.ExecutionId, v core.Version, batch []core.AppendRequest, children []core.CreateRequest, locks []core.EagerLock) (core.Version, []core.LockedExecution, error) {
	p := m.begin()
	res, err := p.append(id, v, batch, core.AppendOptions{})
	if err != nil {
		return 0, nil, err
	}
	taken := make([]int, len(locks))
	var out []core.LockedExecution
	for _, c := range children {
		if _, err := p.create(c); err != nil {
			return 0, nil, err
		}
		for i := range locks {
			if taken[i] >= int(locks[i].Request.BatchSize) || !locks[i].Takes(&c) {
				continue
			}
			taken[i]++
			le, err := p.lockIn(locks[i].Request, c.ExecutionID, 1, false)
			if err != nil && !core.IsNonRetriable(err) {
				return 0, nil, err
			}
			if err == nil {
				out = append(out, le)
			}
			break
		}
	}
	p.commit()
	return res.NextVersion, out, nil
}

func (m *model) batchWithDelayResponse(now core.Timestamp, id core.ExecutionId, v core.Version, batch []core.AppendRequest, js core.JoinSetId, d core.DelayId) (core.Version, error) {
	p := m.begin()
	res, err := p.append(id, v, batch, core.AppendOptions{})
	if err != nil {
		return 0, err
	}
	if err := p.respond(id, now, delayResp(js, d, true)); err != nil {
		return 0, err
	}
	p.commit()
	return res.NextVersion, nil
}

func (m *model) upsertStub(child core.ExecutionId, v core.Version, req core.AppendRequest, resp core.AppendResponseToExecution) error {
	_, err := m.respondToParent(core.AppendEventsToExecution{ExecutionID: child, Version: v, Batch: []core.AppendRequest{req}}, resp)
	if !errors.Is(err, core.ErrAlreadyFinished) {
		return err
	}
	e := m.execs[child]
	if int(v) < len(e.events) {
		if f, ok := e.events[v].Event.(*core.Finished); ok && f.Retval.Equal(resp.Result) {
			return nil
		}
	}
	return core.ErrStubConflict
}

// lockIn runs the lock path for id at v inside p and builds the LockedExecution.
func (p *pending) lockIn(req core.LockRequest, id core.ExecutionId, v core.Version, auto bool) (core.LockedExecution, error) {
	res, err := p.append(id, v, []core.AppendRequest{{CreatedAt: req.CreatedAt, Event: req.LockedEvent()}}, core.AppendOptions{KeepComponent: auto})
	if err != nil {
		return core.LockedExecution{}, err
	}
	e := p.exec(id)
	c := e.created()
	digest := req.ComponentID.ComponentDigest
	if auto {
		digest = e.state.ComponentDigest
	}
	return core.LockedExecution{ExecutionID: id, NextVersion: res.NextVersion, Metadata: c.Metadata, ComponentDigest: digest,
		LockedEvent: *req.LockedEvent(), FFQN: c.FFQN, Params: c.Params, EventHistory: core.EventHistoryOf(e.events),
		Responses: append([]core.ResponseWithCursor(nil), e.responses...), Parent: c.Parent,
		IntermittentEventCount: e.state.IntermittentEventCount, ComponentType: c.ComponentID.ComponentType}, nil
}

func (m *model) lockOne(req core.LockRequest, id core.ExecutionId, v core.Version) (core.LockedExecution, error) {
	p := m.begin()
	le, err := p.lockIn(req, id, v, false)
	if err == nil {
		p.commit()
	}
	return le, err
}

// candidates returns the pending, active executions matching, by (scheduled_at, creation order).
func (m *model) candidates(at core.Timestamp, match func(*modelExec) bool) []core.ExecutionId {
	var out []*modelExec
	ids := map[*modelExec]core.ExecutionId{}
	for id, e := range m.execs {
		if e.state.IsPendingActive(at) && match(e) {
			out = append(out, e)
			ids[e] = id
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if c := out[i].state.At.Compare(out[j].state.At); c != 0 {
			return c < 0
		}
		return out[i].seq < out[j].seq
	})
	res := make([]core.ExecutionId, len(out))
	for i, e := range out {
		res[i] = ids[e]
	}
	return res
}

// lockGroups returns the candidate groups a lock_pending call selects from:
// one per ffqn in the given order, or a single group for the digest strategy.
func (m *model) lockGroups(req core.LockRequest, ffqns []core.FunctionFqn, byDigest, auto bool) [][]core.ExecutionId {
	if byDigest {
		return [][]core.ExecutionId{m.candidates(req.PendingAtOrSooner, func(e *modelExec) bool {
			return e.state.ComponentDigest == req.ComponentID.ComponentDigest
		})}
	}
	var groups [][]core.ExecutionId
	for _, f := range ffqns {
		groups = append(groups, m.candidates(req.PendingAtOrSooner, func(e *modelExec) bool {
			if e.state.FFQN != f {
				return false
			}
			return !auto || e.state.IncompatibleDigest == nil || *e.state.IncompatibleDigest != req.ComponentID.ComponentDigest
		}))
	}
	return groups
}

// lockChosen locks the given executions (the store's selection, validated by the caller).
func (m *model) lockChosen(req core.LockRequest, ids []core.ExecutionId, auto bool) ([]core.LockedExecution, error) {
	p := m.begin()
	var out []core.LockedExecution
	for _, id := range ids {
		le, err := p.lockIn(req, id, p.exec(id).state.NextVersion(), auto)
		if err != nil {
			return nil, err
		}
		out = append(out, le)
	}
	p.commit()
	return out, nil
}

func (m *model) planned(id core.ExecutionId, plan func(s *core.ExecutionState) ([]core.AppendRequest, error)) (core.Version, error) {
	e, ok := m.execs[id]
	if !ok {
		return 0, core.ErrNotFound
	}
	batch, err := plan(&e.state)
	if err != nil {
		return 0, err
	}
	return m.appendBatch(id, e.state.NextVersion(), batch)
}

func (m *model) pauseExecution(id core.ExecutionId, at core.Timestamp) (core.Version, error) {
	return m.planned(id, func(s *core.ExecutionState) ([]core.AppendRequest, error) { return core.PlanPauseExecution(s, at) })
}

func (m *model) unpauseExecution(id core.ExecutionId, at core.Timestamp) (core.Version, error) {
	return m.planned(id, func(s *core.ExecutionState) ([]core.AppendRequest, error) { return core.PlanUnpauseExecution(s, at) })
}

func (m *model) cancel(id core.ExecutionId, at core.Timestamp, workflow bool) (core.CancelOutcome, error) {
	e, ok := m.execs[id]
	if !ok {
		return 0, core.ErrNotFound
	}
	var out core.CancelOutcome
	var req *core.AppendRequest
	if workflow {
		var err error
		if out, req, err = core.PlanCancelWorkflow(&e.state, at); err != nil {
			return 0, err
		}
	} else {
		out, req = core.PlanCancelActivity(&e.state, at)
	}
	if req != nil {
		if _, err := m.appendBatch(id, e.state.NextVersion(), []core.AppendRequest{*req}); err != nil {
			return 0, err
		}
	}
	return out, nil
}

func (m *model) upgrade(id core.ExecutionId, old, new core.ComponentDigest, reason core.ComponentUpgradeReason, now core.Timestamp) error {
	_, err := m.planned(id, func(s *core.ExecutionState) ([]core.AppendRequest, error) {
		r, err := core.PlanUpgrade(s, old, new, reason, now)
		return []core.AppendRequest{r}, err
	})
	return err
}

func (m *model) setDelayPaused(d core.DelayId, paused bool) error {
	owner, js := d.SplitToParts()
	e, ok := m.execs[owner]
	if !ok {
		return core.ErrNotFound
	}
	k := delayKey{js, d}
	t, ok := e.delays[k]
	if !ok {
		return core.ErrNotFound
	}
	t.Paused = paused
	e.delays[k] = t
	return nil
}

func (m *model) expiredTimers(at core.Timestamp) []core.ExpiredTimer {
	var out []core.ExpiredTimer
	for _, e := range m.execs {
		for _, d := range e.delays {
			if !d.Paused && !d.ExpiresAt.After(at) {
				out = append(out, core.ExpiredTimer{Delay: &core.ExpiredDelay{ExecutionID: d.ExecutionID, JoinSetID: d.JoinSetID, DelayID: d.DelayID, ExpiresAt: d.ExpiresAt}})
			}
		}
	}
	for _, e := range m.execs {
		if l, ok := core.ExpiredLockOf(&e.state, at); ok {
			out = append(out, core.ExpiredTimer{Lock: &l})
		}
	}
	sortTimers(out)
	return out
}

// sweep is the watcher: every due delay fires, every expired lock is
// resolved per core.DecideExpiredLock; failures are skipped.
func (m *model) sweep(at core.Timestamp) (locks, delays int) {
	for _, t := range m.expiredTimers(at) {
		if d := t.Delay; d != nil {
			if out, err := m.appendDelayResponse(at, d.ExecutionID, d.JoinSetID, d.DelayID, true); err == nil && out == core.DelayResponseSuccess {
				delays++
			}
			continue
		}
		act := core.DecideExpiredLock(*t.Lock, at)
		var err error
		if act.RespondToParent != nil {
			_, err = m.respondToParent(core.AppendEventsToExecution{ExecutionID: t.Lock.ExecutionID, Version: act.Version,
				Batch: []core.AppendRequest{act.Request}}, *act.RespondToParent)
		} else {
			_, err = m.appendBatch(t.Lock.ExecutionID, act.Version, []core.AppendRequest{act.Request})
		}
		if err == nil {
			locks++
		}
	}
	return locks, delays
}
