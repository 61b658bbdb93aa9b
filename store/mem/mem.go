// Package mem is an in-memory store.Backend: the reference adapter for fast
// tests. Every Update runs under one mutex (serializable by construction) and
// events and responses are stored as JSON, so the persisted encoding is
// exercised exactly as in the durable adapters. Deployment rows (deployments,
// component metadata, source mappings) are in deployments.go.
package mem

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
)

// Backend is an in-memory store.Backend. It is safe for concurrent use.
type Backend struct {
	mu        sync.Mutex
	closed    bool
	seq       uint64
	execs     map[core.ExecutionId]*execution
	childResp map[core.ExecutionId]bool
	delayResp map[core.DelayId]bool
	delays    map[delayKey]core.DelayTimer
	logs      []core.LogEntryRow
	logSeq    core.LogCursor // the last log cursor handed out (rows may be purged)
	bts       map[btKey]core.BacktraceInfo
	deps      deployments
}

type execution struct {
	seq       uint64 // creation order, the tie-breaker for equal timestamps
	head      core.ExecutionState
	events    []json.RawMessage // index = version
	responses []json.RawMessage // index = cursor-1
	// finishedAt is when the service recorded the finish (retention.go).
	finishedAt core.Timestamp
}

type delayKey struct {
	id    core.ExecutionId
	js    core.JoinSetId
	delay core.DelayId
}

type btKey struct {
	id       core.ExecutionId
	min, max core.Version
}

var _ store.Backend = (*Backend)(nil)

// New returns an empty backend.
func New() *Backend {
	return &Backend{
		execs:     map[core.ExecutionId]*execution{},
		childResp: map[core.ExecutionId]bool{},
		delayResp: map[core.DelayId]bool{},
		delays:    map[delayKey]core.DelayTimer{},
		bts:       map[btKey]core.BacktraceInfo{},
		deps:      newDeployments(),
	}
}

// Close implements store.Backend.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	return nil
}

// Update implements store.Backend.
func (b *Backend) Update(ctx context.Context, fn func(tx store.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return core.ErrClosed
	}
	tx := &tx{b: b}
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.check(); err != nil {
		return err
	}
	for _, w := range tx.writes {
		w()
	}
	return nil
}

// View implements store.Backend.
func (b *Backend) View(ctx context.Context, fn func(tx store.ReadTx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return core.ErrClosed
	}
	return fn(&tx{b: b})
}

// tx reads committed state and buffers writes; conflicts are checked before applying.
type tx struct {
	b       *Backend
	writes  []func()
	checks  []func() error
	newIDs  map[core.ExecutionId]bool
	newResp map[string]bool
	newDeps map[core.DeploymentId]bool // deployments inserted by this transaction
}

func (t *tx) check() error {
	for _, c := range t.checks {
		if err := c(); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) exec(id core.ExecutionId) (*execution, error) {
	e, ok := t.b.execs[id]
	if !ok {
		return nil, fmt.Errorf("mem: execution %s: %w", id, core.ErrNotFound)
	}
	return e, nil
}

func (t *tx) Head(id core.ExecutionId) (core.ExecutionState, error) {
	e, err := t.exec(id)
	if err != nil {
		return core.ExecutionState{}, err
	}
	return e.head.Clone(), nil
}

func (t *tx) Event(id core.ExecutionId, v core.Version) (core.ExecutionEvent, error) {
	e, err := t.exec(id)
	if err != nil {
		return core.ExecutionEvent{}, err
	}
	if int(v) >= len(e.events) {
		return core.ExecutionEvent{}, fmt.Errorf("mem: event %s@%d: %w", id, v, core.ErrNotFound)
	}
	return decodeEvent(e.events[v])
}

func (t *tx) Events(id core.ExecutionId, from, to core.Version) ([]core.ExecutionEvent, error) {
	e, err := t.exec(id)
	if err != nil {
		return nil, err
	}
	var out []core.ExecutionEvent
	for v := int(from); v < int(to) && v < len(e.events); v++ {
		ev, err := decodeEvent(e.events[v])
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	return out, nil
}

func (t *tx) Responses(id core.ExecutionId, from, to core.ResponseCursor) ([]core.ResponseWithCursor, error) {
	e, ok := t.b.execs[id]
	if !ok {
		return nil, nil
	}
	var out []core.ResponseWithCursor
	for c := int(from); c < int(to) && c <= len(e.responses); c++ {
		if c < 1 {
			continue
		}
		r, err := decodeResponse(e.responses[c-1])
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func (t *tx) JoinNextCount(id core.ExecutionId, js core.JoinSetId) (uint32, error) {
	e, err := t.exec(id)
	if err != nil {
		return 0, err
	}
	var n uint32
	for _, raw := range e.events {
		ev, err := decodeEvent(raw)
		if err != nil {
			return 0, err
		}
		if h, ok := ev.Event.(*core.HistoryEventRequest); ok {
			if jn, ok := h.Event.(*core.JoinNext); ok && jn.JoinSetID == js {
				n++
			}
		}
	}
	return n, nil
}

func (t *tx) NthResponse(id core.ExecutionId, js core.JoinSetId, n uint32) (core.ResponseWithCursor, bool, error) {
	e, err := t.exec(id)
	if err != nil {
		return core.ResponseWithCursor{}, false, err
	}
	var k uint32
	for _, raw := range e.responses {
		r, err := decodeResponse(raw)
		if err != nil {
			return core.ResponseWithCursor{}, false, err
		}
		if r.Event.Event.JoinSetID == js {
			k++
			if k == n {
				return r, true, nil
			}
		}
	}
	return core.ResponseWithCursor{}, false, nil
}

func (t *tx) DelayOutcome(delay core.DelayId) (bool, bool, error) {
	ok, found := t.b.delayResp[delay]
	return ok, found, nil
}

func (t *tx) Delay(id core.ExecutionId, js core.JoinSetId, delay core.DelayId) (core.DelayTimer, bool, error) {
	d, ok := t.b.delays[delayKey{id, js, delay}]
	return d, ok, nil
}

func (t *tx) CreateHead(st core.ExecutionState, events []core.ExecutionEvent) error {
	id := st.ExecutionID
	if _, ok := t.b.execs[id]; ok || t.newIDs[id] {
		return fmt.Errorf("mem: create %s: %w", id, core.ErrConflict)
	}
	if t.newIDs == nil {
		t.newIDs = map[core.ExecutionId]bool{}
	}
	t.newIDs[id] = true
	raws, err := encodeEvents(events)
	if err != nil {
		return err
	}
	st = st.Clone()
	t.writes = append(t.writes, func() {
		t.b.seq++
		t.b.execs[id] = &execution{seq: t.b.seq, head: st, events: raws}
	})
	return nil
}

func (t *tx) PutHead(st core.ExecutionState) error {
	id := st.ExecutionID
	if _, ok := t.b.execs[id]; !ok {
		return fmt.Errorf("mem: put head %s: %w", id, core.ErrNotFound)
	}
	st = st.Clone()
	t.writes = append(t.writes, func() { t.b.execs[id].head = st })
	return nil
}

func (t *tx) AppendEvents(id core.ExecutionId, events []core.ExecutionEvent) error {
	raws, err := encodeEvents(events)
	if err != nil {
		return err
	}
	first := events[0].Version
	t.checks = append(t.checks, func() error {
		e, ok := t.b.execs[id]
		if !ok {
			return fmt.Errorf("mem: append %s: %w", id, core.ErrNotFound)
		}
		if int(first) != len(e.events) {
			return fmt.Errorf("mem: append %s@%d: %w", id, first, core.ErrConflict)
		}
		return nil
	})
	t.writes = append(t.writes, func() {
		e := t.b.execs[id]
		e.events = append(e.events, raws...)
	})
	return nil
}

func (t *tx) AddResponse(id core.ExecutionId, resp core.ResponseWithCursor) error {
	var key string
	switch r := resp.Event.Event.Event.(type) {
	case *core.ChildExecutionFinished:
		if t.b.childResp[r.ChildExecutionID.ExecutionId] {
			return fmt.Errorf("mem: response for child %s: %w", r.ChildExecutionID, core.ErrConflict)
		}
		key = "c:" + r.ChildExecutionID.String()
	case *core.DelayFinished:
		if _, ok := t.b.delayResp[r.DelayID]; ok {
			return fmt.Errorf("mem: response for delay %s: %w", r.DelayID, core.ErrConflict)
		}
		key = "d:" + r.DelayID.String()
	}
	if t.newResp == nil {
		t.newResp = map[string]bool{}
	}
	if t.newResp[key] {
		return fmt.Errorf("mem: duplicate response %s: %w", key, core.ErrConflict)
	}
	t.newResp[key] = true
	raw, err := core.MarshalJSON(resp)
	if err != nil {
		return err
	}
	t.writes = append(t.writes, func() {
		e := t.b.execs[id]
		e.responses = append(e.responses, raw)
		switch r := resp.Event.Event.Event.(type) {
		case *core.ChildExecutionFinished:
			t.b.childResp[r.ChildExecutionID.ExecutionId] = true
		case *core.DelayFinished:
			t.b.delayResp[r.DelayID] = bool(r.Result)
		}
	})
	return nil
}

func (t *tx) PutDelay(d core.DelayTimer) error {
	k := delayKey{d.ExecutionID, d.JoinSetID, d.DelayID}
	if _, ok := t.b.delays[k]; ok {
		return fmt.Errorf("mem: delay %s: %w", d.DelayID, core.ErrConflict)
	}
	t.writes = append(t.writes, func() { t.b.delays[k] = d })
	return nil
}

func (t *tx) DeleteDelay(id core.ExecutionId, js core.JoinSetId, delay core.DelayId) error {
	t.writes = append(t.writes, func() { delete(t.b.delays, delayKey{id, js, delay}) })
	return nil
}

func (t *tx) SetDelayPaused(id core.ExecutionId, js core.JoinSetId, delay core.DelayId, paused bool) error {
	k := delayKey{id, js, delay}
	d, ok := t.b.delays[k]
	if !ok {
		return fmt.Errorf("mem: delay %s: %w", delay, core.ErrNotFound)
	}
	d.Paused = paused
	t.writes = append(t.writes, func() { t.b.delays[k] = d })
	return nil
}

func encodeEvents(events []core.ExecutionEvent) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, len(events))
	for i, ev := range events {
		b, err := core.MarshalJSON(ev)
		if err != nil {
			return nil, fmt.Errorf("mem: encode event: %w", err)
		}
		out[i] = b
	}
	return out, nil
}

func decodeEvent(raw json.RawMessage) (core.ExecutionEvent, error) {
	var ev core.ExecutionEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		return ev, fmt.Errorf("mem: decode event: %w", err)
	}
	return ev, nil
}

func decodeResponse(raw json.RawMessage) (core.ResponseWithCursor, error) {
	var r core.ResponseWithCursor
	if err := json.Unmarshal(raw, &r); err != nil {
		return r, fmt.Errorf("mem: decode response: %w", err)
	}
	return r, nil
}

// --- queries ---------------------------------------------------------------------

func (b *Backend) sortedHeads(pred func(*execution) bool) []*execution {
	var out []*execution
	for _, e := range b.execs {
		if pred(e) {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if c := out[i].head.At.Compare(out[j].head.At); c != 0 {
			return c < 0
		}
		return out[i].seq < out[j].seq
	})
	return out
}

func ids(es []*execution, limit int) []core.ExecutionId {
	var out []core.ExecutionId
	for _, e := range es {
		if limit >= 0 && len(out) >= limit {
			break
		}
		out = append(out, e.head.ExecutionID)
	}
	return out
}

// PendingByFFQN implements store.Queries.
func (b *Backend) PendingByFFQN(_ context.Context, ffqn core.FunctionFqn, at core.Timestamp, limit int, skip *core.ComponentDigest) ([]core.ExecutionId, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return ids(b.sortedHeads(func(e *execution) bool {
		h := &e.head
		return h.FFQN == ffqn && h.IsPendingActive(at) &&
			(skip == nil || h.IncompatibleDigest == nil || *h.IncompatibleDigest != *skip)
	}), limit), nil
}

// PendingByDigest implements store.Queries.
func (b *Backend) PendingByDigest(_ context.Context, digest core.ComponentDigest, at core.Timestamp, limit int) ([]core.ExecutionId, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return ids(b.sortedHeads(func(e *execution) bool {
		return e.head.ComponentDigest == digest && e.head.IsPendingActive(at)
	}), limit), nil
}

// ExpiredLocks implements store.Queries.
func (b *Backend) ExpiredLocks(_ context.Context, at core.Timestamp) ([]core.ExecutionState, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []core.ExecutionState
	for _, e := range b.sortedHeads(func(e *execution) bool {
		return e.head.State == core.StateLocked && !e.head.At.After(at)
	}) {
		out = append(out, e.head.Clone())
	}
	return out, nil
}

// ExpiredDelays implements store.Queries.
func (b *Backend) ExpiredDelays(_ context.Context, at core.Timestamp) ([]core.ExpiredDelay, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var ds []core.DelayTimer
	for _, d := range b.delays {
		if !d.Paused && !d.ExpiresAt.After(at) {
			ds = append(ds, d)
		}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i].ExpiresAt.Before(ds[j].ExpiresAt) })
	out := make([]core.ExpiredDelay, len(ds))
	for i, d := range ds {
		out[i] = core.ExpiredDelay{ExecutionID: d.ExecutionID, JoinSetID: d.JoinSetID, DelayID: d.DelayID, ExpiresAt: d.ExpiresAt}
	}
	return out, nil
}

// Cancelling implements store.Queries.
func (b *Backend) Cancelling(_ context.Context, limit int) ([]core.ExecutionId, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var es []*execution
	for _, e := range b.execs {
		if e.head.Lifecycle == core.LifecycleCancelling {
			es = append(es, e)
		}
	}
	sort.Slice(es, func(i, j int) bool {
		if c := es[i].head.CreatedAt.Compare(es[j].head.CreatedAt); c != 0 {
			return c < 0
		}
		return es[i].seq < es[j].seq
	})
	return ids(es, limit), nil
}

// ListExecutions implements store.Queries with core.SelectExecutions, the
// reference order and cursor rule.
func (b *Backend) ListExecutions(_ context.Context, filter core.ListExecutionsFilter, p core.ExecutionListPagination) ([]core.ExecutionState, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	heads := make([]core.ExecutionState, 0, len(b.execs))
	for _, e := range b.execs {
		heads = append(heads, e.head)
	}
	out := core.SelectExecutions(heads, filter, p)
	for i := range out {
		out[i] = out[i].Clone()
	}
	return out, nil
}

// AppendLogs implements store.Queries.
func (b *Backend) AppendLogs(_ context.Context, rows []core.LogInfoAppendRow) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, r := range rows {
		b.logSeq++
		b.logs = append(b.logs, core.LogEntryRow{Cursor: b.logSeq, RunID: r.RunID, Entry: r.Entry, ExecutionID: r.ExecutionID})
	}
	return nil
}

// ListLogs implements store.Queries.
func (b *Backend) ListLogs(_ context.Context, id core.ExecutionId, showDerived bool, filter core.LogFilter, p core.Pagination[core.LogCursor]) ([]core.LogEntryRow, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	match := func(r *core.LogEntryRow) bool {
		if r.ExecutionID == id {
			return true
		}
		return showDerived && strings.HasPrefix(r.ExecutionID.String(), id.String()+".")
	}
	var out []core.LogEntryRow
	n := len(b.logs)
	for k := 0; k < n && len(out) < int(p.Length); k++ {
		i := k
		if p.IsDesc() {
			i = n - 1 - k
		}
		r := b.logs[i]
		if !p.Accepts(cmp.Compare(r.Cursor, p.Cursor)) || !match(&r) || !filter.Matches(&r.Entry) {
			continue
		}
		out = append(out, r)
	}
	return out, nil
}

// AppendBacktraces implements store.Queries.
func (b *Backend) AppendBacktraces(_ context.Context, bts []core.BacktraceInfo) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, bt := range bts {
		k := btKey{bt.ExecutionID, bt.VersionMinIncluding, bt.VersionMaxExcluding}
		if _, ok := b.bts[k]; ok {
			continue
		}
		b.bts[k] = bt
		n++
	}
	return n, nil
}

// GetBacktrace implements store.Queries.
func (b *Backend) GetBacktrace(_ context.Context, id core.ExecutionId, f core.BacktraceFilter) (core.BacktraceInfo, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var best *core.BacktraceInfo
	for k, bt := range b.bts {
		if k.id != id {
			continue
		}
		bt := bt
		switch f.Kind {
		case "first":
			if best == nil || bt.VersionMinIncluding < best.VersionMinIncluding {
				best = &bt
			}
		case "last":
			if best == nil || bt.VersionMinIncluding > best.VersionMinIncluding {
				best = &bt
			}
		default:
			if bt.VersionMinIncluding <= f.Specific && f.Specific < bt.VersionMaxExcluding {
				best = &bt
			}
		}
	}
	if best == nil {
		return core.BacktraceInfo{}, fmt.Errorf("mem: backtrace of %s: %w", id, core.ErrNotFound)
	}
	return *best, nil
}

// BacktraceRanges implements store.Queries.
func (b *Backend) BacktraceRanges(_ context.Context, id core.ExecutionId) ([][2]core.Version, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out [][2]core.Version
	for k := range b.bts {
		if k.id == id {
			out = append(out, [2]core.Version{k.min, k.max})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out, nil
}

// LockBatchInOneUpdate implements store.BatchLocker (Updates are serialized by one mutex).
func (b *Backend) LockBatchInOneUpdate() bool { return true }
