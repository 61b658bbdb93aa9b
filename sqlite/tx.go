package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
)

var errTxDone = errors.New("sqlite: transaction used after its function returned")

// readTx implements store.ReadTx on one connection: a reader inside View's
// read transaction, or the writer inside the group-commit transaction.
type readTx struct {
	c    *conn
	ctx  context.Context
	done bool
}

// writeTx implements store.Tx on the writer connection. Writes go straight
// into the current savepoint; the first failed write is remembered so that
// Update fails (and the savepoint is rolled back) even if fn ignores it.
type writeTx struct {
	readTx
	seq      *seqAlloc
	cache    *headCache
	staged   map[core.ExecutionId]core.ExecutionState // heads written by this fn
	created  []*createdEntry                          // Created events written by this fn
	createds *createdCache
	writeErr error
	wrote    bool // a write statement ran: the batch must commit
	// finishedAt holds the finish times RecordFinished recorded for heads
	// this fn has not written yet: PutHead writes each with the head's own
	// UPDATE, and end writes those no PutHead took (one statement per
	// finish instead of two).
	finishedAt map[core.ExecutionId]string
}

// exec runs a write statement in the current savepoint.
func (t *writeTx) exec(q string, args ...any) error {
	t.wrote = true
	return t.c.exec(t.ctx, q, args...)
}

// execResult runs a write statement in the current savepoint.
func (t *writeTx) execResult(q string, args ...any) (sql.Result, error) {
	t.wrote = true
	return t.c.execResult(t.ctx, q, args...)
}

// Event implements store.ReadTx, serving committed Created events from the
// writer's cache when it can.
func (t *writeTx) Event(id core.ExecutionId, v core.Version) (core.ExecutionEvent, error) {
	if v == 0 && t.createds != nil && !t.done {
		if ev, ok := t.createds.get(id); ok {
			return ev, nil
		}
	}
	return t.readTx.Event(id, v)
}

// Head implements store.ReadTx from the writer's head cache when it can.
func (t *writeTx) Head(id core.ExecutionId) (core.ExecutionState, error) {
	if err := t.check(); err != nil {
		return core.ExecutionState{}, err
	}
	if st, ok := t.staged[id]; ok {
		return st.Clone(), nil
	}
	if st, ok := t.cache.get(id); ok {
		return st.Clone(), nil
	}
	st, err := headByID(t.ctx, t.c, id)
	if err != nil {
		return core.ExecutionState{}, err
	}
	t.cache.loaded(st.Clone())
	return st, nil
}

func (t *writeTx) stage(st core.ExecutionState) {
	if t.staged == nil {
		t.staged = make(map[core.ExecutionId]core.ExecutionState, 2)
	}
	t.staged[st.ExecutionID] = normalizeHead(st)
}

// seqAlloc hands out head sequence numbers (the insertion-order tie-breaker)
// within one group-commit transaction. The high-water mark lives in t_meta,
// read under the write lock on first use and written back before COMMIT, so
// several processes sharing the file stay consistent.
type seqAlloc struct {
	loaded, dirty bool
	last          int64
}

const (
	sqlReadSeq  = `SELECT value FROM t_meta WHERE key = 'head_seq'`
	sqlWriteSeq = `UPDATE t_meta SET value = ? WHERE key = 'head_seq'`
)

func (a *seqAlloc) next(ctx context.Context, c *conn) (int64, error) {
	if !a.loaded {
		rows, err := c.query(ctx, sqlReadSeq)
		if err != nil {
			return 0, fmt.Errorf("read head_seq: %w", err)
		}
		if rows.Next() {
			err = rows.Scan(&a.last)
		}
		if cerr := rows.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return 0, fmt.Errorf("read head_seq: %w", err)
		}
		a.loaded = true
	}
	a.last++
	a.dirty = true
	return a.last, nil
}

// flush writes the high-water mark back (outside every fn's savepoint).
func (a *seqAlloc) flush(ctx context.Context, c *conn) error {
	if !a.dirty {
		return nil
	}
	if err := c.exec(ctx, sqlWriteSeq, a.last); err != nil {
		return fmt.Errorf("write head_seq: %w", err)
	}
	a.dirty = false
	return nil
}

var (
	_ store.ReadTx = (*readTx)(nil)
	_ store.Tx     = (*writeTx)(nil)
)

const (
	sqlHead          = `SELECT ` + headCols + ` FROM t_state WHERE execution_id = ?`
	sqlEvent         = `SELECT version, created_at, json FROM t_event WHERE execution_id = ? AND version = ?`
	sqlEvents        = `SELECT version, created_at, json FROM t_event WHERE execution_id = ? AND version >= ? AND version < ? ORDER BY version`
	sqlResponses     = `SELECT cursor, created_at, json FROM t_response WHERE execution_id = ? AND cursor >= ? AND cursor < ? ORDER BY cursor`
	sqlJoinSetEvents = `SELECT version, created_at, json FROM t_event WHERE execution_id = ? AND version >= 1 AND version < ?
		AND join_set_id = ? AND history_event_type IN ('join_set_create', 'join_next') ORDER BY version`
	sqlJoinNexts   = `SELECT count(*) FROM t_event WHERE execution_id = ? AND join_set_id = ? AND history_event_type = 'join_next'`
	sqlNthResponse = `SELECT cursor, created_at, json FROM t_response WHERE execution_id = ? AND join_set_id = ? AND js_ordinal = ?`
	sqlDelayResult = `SELECT delay_success FROM t_response WHERE delay_id = ?`
	sqlDelay       = `SELECT expires_at, paused FROM t_delay WHERE execution_id = ? AND join_set_id = ? AND delay_id = ?`

	sqlInsertEvent = `INSERT INTO t_event (execution_id, version, created_at, variant, join_set_id, history_event_type, json)
		VALUES (?, ?, ?, ?, ?, ?, ?)`
	sqlInsertResponse = `INSERT INTO t_response (execution_id, cursor, join_set_id, js_ordinal, created_at,
		child_execution_id, delay_id, delay_success, json)
		VALUES (?1, ?2, ?3, (SELECT coalesce(max(js_ordinal), 0) + 1 FROM t_response WHERE execution_id = ?1 AND join_set_id = ?3),
		?4, ?5, ?6, ?7, ?8)`
	sqlInsertDelay = `INSERT INTO t_delay (execution_id, join_set_id, delay_id, expires_at, paused) VALUES (?, ?, ?, ?, ?)`
	sqlDeleteDelay = `DELETE FROM t_delay WHERE execution_id = ? AND join_set_id = ? AND delay_id = ?`
	sqlPauseDelay  = `UPDATE t_delay SET paused = ? WHERE execution_id = ? AND join_set_id = ? AND delay_id = ?`
)

func (t *readTx) check() error {
	if t.done {
		return errTxDone
	}
	return nil
}

// Head implements store.ReadTx.
func (t *readTx) Head(id core.ExecutionId) (core.ExecutionState, error) {
	if err := t.check(); err != nil {
		return core.ExecutionState{}, err
	}
	st, err := headByID(t.ctx, t.c, id)
	if err != nil {
		return core.ExecutionState{}, err
	}
	return st, nil
}

func headByID(ctx context.Context, c *conn, id core.ExecutionId) (core.ExecutionState, error) {
	rows, err := c.query(ctx, sqlHead, id.String())
	if err != nil {
		return core.ExecutionState{}, fmt.Errorf("sqlite: head %s: %w", id, err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return core.ExecutionState{}, fmt.Errorf("sqlite: head %s: %w", id, err)
		}
		return core.ExecutionState{}, fmt.Errorf("sqlite: head %s: %w", id, core.ErrNotFound)
	}
	st, err := scanHead(rows)
	if err != nil {
		return core.ExecutionState{}, fmt.Errorf("sqlite: head %s: %w", id, err)
	}
	return st, rows.Close()
}

// Event implements store.ReadTx.
func (t *readTx) Event(id core.ExecutionId, v core.Version) (core.ExecutionEvent, error) {
	if err := t.check(); err != nil {
		return core.ExecutionEvent{}, err
	}
	rows, err := t.c.query(t.ctx, sqlEvent, id.String(), int64(v))
	if err != nil {
		return core.ExecutionEvent{}, fmt.Errorf("sqlite: event %s@%d: %w", id, v, err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return core.ExecutionEvent{}, fmt.Errorf("sqlite: event %s@%d: %w", id, v, err)
		}
		return core.ExecutionEvent{}, fmt.Errorf("sqlite: event %s@%d: %w", id, v, core.ErrNotFound)
	}
	ev, err := scanEvent(rows)
	if err != nil {
		return core.ExecutionEvent{}, fmt.Errorf("sqlite: event %s@%d: %w", id, v, err)
	}
	return ev, rows.Close()
}

// Events implements store.ReadTx.
func (t *readTx) Events(id core.ExecutionId, from, to core.Version) ([]core.ExecutionEvent, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	if to <= from {
		return nil, nil
	}
	rows, err := t.c.query(t.ctx, sqlEvents, id.String(), int64(from), int64(to))
	if err != nil {
		return nil, fmt.Errorf("sqlite: events %s [%d,%d): %w", id, from, to, err)
	}
	defer rows.Close()
	var out []core.ExecutionEvent
	for rows.Next() {
		ev, err := scanEvent(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: events %s: %w", id, err)
		}
		out = append(out, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: events %s: %w", id, err)
	}
	return out, nil
}

// JoinSetEvents implements store.JoinSetEventsReader: one query per join
// set over the execution's event rows, decoding only the JoinSetCreate and
// JoinNext rows of that join set.
func (t *readTx) JoinSetEvents(id core.ExecutionId, joinSets []core.JoinSetId, before core.Version) ([]core.ExecutionEvent, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	var out []core.ExecutionEvent
	for _, js := range joinSets {
		rows, err := t.c.query(t.ctx, sqlJoinSetEvents, id.String(), int64(before), js.String())
		if err != nil {
			return nil, fmt.Errorf("sqlite: join set events %s %s: %w", id, js, err)
		}
		for rows.Next() {
			ev, err := scanEvent(rows)
			if err != nil {
				rows.Close()
				return nil, fmt.Errorf("sqlite: join set events %s: %w", id, err)
			}
			out = append(out, ev)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("sqlite: join set events %s: %w", id, err)
		}
	}
	if len(joinSets) > 1 {
		slices.SortFunc(out, func(a, b core.ExecutionEvent) int { return cmp.Compare(a.Version, b.Version) })
	}
	return out, nil
}

// Responses implements store.ReadTx.
func (t *readTx) Responses(id core.ExecutionId, from, to core.ResponseCursor) ([]core.ResponseWithCursor, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	if to <= from {
		return nil, nil
	}
	rows, err := t.c.query(t.ctx, sqlResponses, id.String(), int64(from), int64(to))
	if err != nil {
		return nil, fmt.Errorf("sqlite: responses %s [%d,%d): %w", id, from, to, err)
	}
	defer rows.Close()
	var out []core.ResponseWithCursor
	for rows.Next() {
		r, err := scanResponse(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: responses %s: %w", id, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: responses %s: %w", id, err)
	}
	return out, nil
}

// JoinNextCount implements store.ReadTx.
func (t *readTx) JoinNextCount(id core.ExecutionId, js core.JoinSetId) (uint32, error) {
	if err := t.check(); err != nil {
		return 0, err
	}
	rows, err := t.c.query(t.ctx, sqlJoinNexts, id.String(), js.String())
	if err != nil {
		return 0, fmt.Errorf("sqlite: join_next count %s %s: %w", id, js, err)
	}
	defer rows.Close()
	var n int64
	if rows.Next() {
		if err := rows.Scan(&n); err != nil {
			return 0, fmt.Errorf("sqlite: join_next count %s %s: %w", id, js, err)
		}
	}
	if err := rows.Close(); err != nil {
		return 0, fmt.Errorf("sqlite: join_next count %s %s: %w", id, js, err)
	}
	return uint32(n), nil
}

// NthResponse implements store.ReadTx.
func (t *readTx) NthResponse(id core.ExecutionId, js core.JoinSetId, n uint32) (core.ResponseWithCursor, bool, error) {
	if err := t.check(); err != nil {
		return core.ResponseWithCursor{}, false, err
	}
	rows, err := t.c.query(t.ctx, sqlNthResponse, id.String(), js.String(), int64(n))
	if err != nil {
		return core.ResponseWithCursor{}, false, fmt.Errorf("sqlite: response #%d of %s %s: %w", n, id, js, err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return core.ResponseWithCursor{}, false, fmt.Errorf("sqlite: response #%d of %s %s: %w", n, id, js, err)
		}
		return core.ResponseWithCursor{}, false, nil
	}
	r, err := scanResponse(rows)
	if err != nil {
		return core.ResponseWithCursor{}, false, fmt.Errorf("sqlite: response #%d of %s %s: %w", n, id, js, err)
	}
	return r, true, rows.Close()
}

// DelayOutcome implements store.ReadTx.
func (t *readTx) DelayOutcome(delay core.DelayId) (bool, bool, error) {
	if err := t.check(); err != nil {
		return false, false, err
	}
	rows, err := t.c.query(t.ctx, sqlDelayResult, delay.String())
	if err != nil {
		return false, false, fmt.Errorf("sqlite: delay outcome %s: %w", delay, err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return false, false, fmt.Errorf("sqlite: delay outcome %s: %w", delay, err)
		}
		return false, false, nil
	}
	var success sql.NullInt64
	if err := rows.Scan(&success); err != nil {
		return false, false, fmt.Errorf("sqlite: delay outcome %s: %w", delay, err)
	}
	return success.Valid && success.Int64 != 0, true, rows.Close()
}

// Delay implements store.ReadTx.
func (t *readTx) Delay(id core.ExecutionId, js core.JoinSetId, delay core.DelayId) (core.DelayTimer, bool, error) {
	if err := t.check(); err != nil {
		return core.DelayTimer{}, false, err
	}
	rows, err := t.c.query(t.ctx, sqlDelay, id.String(), js.String(), delay.String())
	if err != nil {
		return core.DelayTimer{}, false, fmt.Errorf("sqlite: delay %s: %w", delay, err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return core.DelayTimer{}, false, fmt.Errorf("sqlite: delay %s: %w", delay, err)
		}
		return core.DelayTimer{}, false, nil
	}
	var (
		expires string
		paused  int64
	)
	if err := rows.Scan(&expires, &paused); err != nil {
		return core.DelayTimer{}, false, fmt.Errorf("sqlite: delay %s: %w", delay, err)
	}
	ts, err := parseTS(expires)
	if err != nil {
		return core.DelayTimer{}, false, fmt.Errorf("sqlite: delay %s: %w", delay, err)
	}
	return core.DelayTimer{ExecutionID: id, JoinSetID: js, DelayID: delay, ExpiresAt: ts, Paused: paused != 0}, true, rows.Close()
}

// --- writes ---------------------------------------------------------------------------

// fail records the first write error and returns err.
func (t *writeTx) fail(err error) error {
	if t.writeErr == nil {
		t.writeErr = err
	}
	return err
}

// CreateHead implements store.Tx.
func (t *writeTx) CreateHead(st core.ExecutionState, events []core.ExecutionEvent) error {
	if err := t.check(); err != nil {
		return err
	}
	row, err := encodeHead(&st)
	if err != nil {
		return t.fail(fmt.Errorf("sqlite: create %s: %w", st.ExecutionID, err))
	}
	seq, err := t.seq.next(t.ctx, t.c)
	if err != nil {
		return t.fail(fmt.Errorf("sqlite: create %s: %w", st.ExecutionID, err))
	}
	if err := t.exec(sqlInsertHead, row.insertArgs(seq)...); err != nil {
		return t.fail(writeErr(err, "create %s", st.ExecutionID))
	}
	t.stage(st)
	return t.appendEvents(st.ExecutionID, events)
}

// CreateHeads implements store.HeadsCreator: CreateHead of each head, in
// order, with one INSERT per maxHeadRows heads and one per maxEventRows
// events (a fan-out's children: one statement each cost a round through
// database/sql and the driver). A uniqueness violation fails the call
// (core.ErrConflict) naming the heads of its statement.
func (t *writeTx) CreateHeads(heads []store.NewHead) error {
	if err := t.check(); err != nil {
		return err
	}
	for len(heads) > 0 {
		chunk := heads[:min(len(heads), maxHeadRows)]
		heads = heads[len(chunk):]
		args := make([]any, 0, headInsertCols*len(chunk))
		for i := range chunk {
			st := &chunk[i].State
			row, err := encodeHead(st)
			if err != nil {
				return t.fail(fmt.Errorf("sqlite: create %s: %w", st.ExecutionID, err))
			}
			seq, err := t.seq.next(t.ctx, t.c)
			if err != nil {
				return t.fail(fmt.Errorf("sqlite: create %s: %w", st.ExecutionID, err))
			}
			args = append(args, row.insertArgs(seq)...)
		}
		if err := t.exec(sqlInsertHeads(len(chunk)), args...); err != nil {
			first, last := chunk[0].State.ExecutionID, chunk[len(chunk)-1].State.ExecutionID
			if len(chunk) == 1 {
				return t.fail(writeErr(err, "create %s", first))
			}
			return t.fail(writeErr(err, "create %s…%s", first, last))
		}
		for i := range chunk {
			t.stage(chunk[i].State)
		}
		if err := t.appendEventsOf(chunk); err != nil {
			return err
		}
	}
	return nil
}

// headInsertCols is the number of columns sqlInsertHead writes per head.
const headInsertCols = 24

// maxHeadRows bounds the heads one INSERT writes (CreateHeads).
const maxHeadRows = 16

// insertHeads holds the INSERT statements of 1…maxHeadRows heads.
var insertHeads = func() [maxHeadRows + 1]string {
	var qs [maxHeadRows + 1]string
	qs[1] = sqlInsertHead
	row := ", (?" + strings.Repeat(", ?", headInsertCols-1) + ")"
	for n := 2; n <= maxHeadRows; n++ {
		qs[n] = qs[n-1] + row
	}
	return qs
}()

// sqlInsertHeads is the INSERT of n heads (1 ≤ n ≤ maxHeadRows).
func sqlInsertHeads(n int) string { return insertHeads[n] }

// PutHead implements store.Tx. The writer is the only one writing, so the
// head cannot have changed since fn read it.
func (t *writeTx) PutHead(st core.ExecutionState) error {
	if err := t.check(); err != nil {
		return err
	}
	row, err := encodeHead(&st)
	if err != nil {
		return t.fail(fmt.Errorf("sqlite: put head %s: %w", st.ExecutionID, err))
	}
	q, args := sqlUpdateHead, row.updateArgs()
	at, finished := t.finishedAt[st.ExecutionID]
	if finished {
		q, args = sqlUpdateHeadFinished, row.updateFinishedArgs(at)
	}
	if prev, ok := t.knownHead(st.ExecutionID); ok {
		if pq, pargs, ok := t.c.changedColumns(&prev, args); ok {
			q, args = pq, pargs
		}
	}
	res, err := t.execResult(q, args...)
	if err != nil {
		return t.fail(writeErr(err, "put head %s", st.ExecutionID))
	}
	if n, err := res.RowsAffected(); err != nil {
		return t.fail(fmt.Errorf("sqlite: put head %s: %w", st.ExecutionID, err))
	} else if n == 0 {
		return t.fail(fmt.Errorf("sqlite: put head %s: %w", st.ExecutionID, core.ErrNotFound))
	}
	delete(t.finishedAt, st.ExecutionID)
	t.stage(st)
	return nil
}

// knownHead is the head of id as the database holds it now, when the
// writer knows it without reading: written by this fn, or in its cache
// (exactly the committed heads and those of the batch's earlier fns).
func (t *writeTx) knownHead(id core.ExecutionId) (core.ExecutionState, bool) {
	if st, ok := t.staged[id]; ok {
		return st, true
	}
	return t.cache.get(id)
}

// AppendEvents implements store.Tx.
func (t *writeTx) AppendEvents(id core.ExecutionId, events []core.ExecutionEvent) error {
	if err := t.check(); err != nil {
		return err
	}
	return t.appendEvents(id, events)
}

func (t *writeTx) appendEvents(id core.ExecutionId, events []core.ExecutionEvent) error {
	return t.appendEventsOf([]store.NewHead{{State: core.ExecutionState{ExecutionID: id}, Events: events}})
}

// appendEventsOf appends the events of every head of heads, maxEventRows
// to a statement across heads.
func (t *writeTx) appendEventsOf(heads []store.NewHead) error {
	total := 0
	for i := range heads {
		total += len(heads[i].Events)
	}
	args := make([]any, 0, eventCols*min(total, maxEventRows))
	k := 0 // events encoded so far
	for h := range heads {
		id := heads[h].State.ExecutionID
		sid := id.String()
		events := heads[h].Events
		for i, ev := range events {
			k++
			if err := t.appendEventRow(&args, id, sid, ev); err != nil {
				return err
			}
			if n := len(args) / eventCols; n == maxEventRows || k == total {
				if err := t.exec(sqlInsertEvents(n), args...); err != nil {
					if n == 1 {
						return t.fail(writeErr(err, "append %s@%d", id, ev.Version))
					}
					if len(heads) == 1 {
						return t.fail(writeErr(err, "append %s@%d…%d", id, events[i+1-n].Version, ev.Version))
					}
					return t.fail(writeErr(err, "append %d events ending %s@%d", n, id, ev.Version))
				}
				args = args[:0]
			}
		}
	}
	return nil
}

// appendEventRow adds the columns of ev, an event of id (sid its text),
// to args.
func (t *writeTx) appendEventRow(args *[]any, id core.ExecutionId, sid string, ev core.ExecutionEvent) error {
	if ev.Event == nil {
		return t.fail(fmt.Errorf("sqlite: append %s@%d: nil event", id, ev.Version))
	}
	body, err := core.EncodeExecutionRequest(ev.Event)
	if err != nil {
		return t.fail(fmt.Errorf("sqlite: append %s@%d: %w", id, ev.Version, err))
	}
	variant, js, ht := eventColumns(ev.Event)
	*args = append(*args, sid, int64(ev.Version), tsText(ev.CreatedAt), variant, js, ht, string(body))
	if _, ok := ev.Event.(*core.Created); ok && ev.Version == 0 && t.createds != nil {
		t.created = append(t.created, &createdEntry{id: id, createdAt: ev.CreatedAt.Sortable(), body: body, size: len(body)})
	}
	return nil
}

// eventCols is the number of columns sqlInsertEvent writes per event.
const eventCols = 7

// maxEventRows bounds the events one INSERT writes: a batch of events is
// written by one statement per maxEventRows instead of one per event
// (each statement costs a round through database/sql and the driver).
const maxEventRows = 16

// insertEvents holds the INSERT statements of 1…maxEventRows events.
var insertEvents = func() [maxEventRows + 1]string {
	var qs [maxEventRows + 1]string
	qs[1] = sqlInsertEvent
	row := ", (?, ?, ?, ?, ?, ?, ?)"
	for n := 2; n <= maxEventRows; n++ {
		qs[n] = qs[n-1] + row
	}
	return qs
}()

// sqlInsertEvents is the INSERT of n events (1 ≤ n ≤ maxEventRows).
func sqlInsertEvents(n int) string { return insertEvents[n] }

// AddResponse implements store.Tx.
func (t *writeTx) AddResponse(id core.ExecutionId, resp core.ResponseWithCursor) error {
	if err := t.check(); err != nil {
		return err
	}
	ev := resp.Event.Event
	var child, delay, success any
	switch r := ev.Event.(type) {
	case *core.ChildExecutionFinished:
		child = r.ChildExecutionID.String()
	case *core.DelayFinished:
		delay = r.DelayID.String()
		if r.Result {
			success = int64(1)
		} else {
			success = int64(0)
		}
	default:
		return t.fail(fmt.Errorf("sqlite: add response %s#%d: unknown response %T", id, resp.Cursor, ev.Event))
	}
	body, err := core.MarshalJSON(ev)
	if err != nil {
		return t.fail(fmt.Errorf("sqlite: add response %s#%d: %w", id, resp.Cursor, err))
	}
	if err := t.exec(sqlInsertResponse, id.String(), int64(resp.Cursor), ev.JoinSetID.String(),
		tsText(resp.Event.CreatedAt), child, delay, success, string(body)); err != nil {
		return t.fail(writeErr(err, "add response %s#%d", id, resp.Cursor))
	}
	return nil
}

// PutDelay implements store.Tx.
func (t *writeTx) PutDelay(d core.DelayTimer) error {
	if err := t.check(); err != nil {
		return err
	}
	paused := int64(0)
	if d.Paused {
		paused = 1
	}
	if err := t.exec(sqlInsertDelay, d.ExecutionID.String(), d.JoinSetID.String(), d.DelayID.String(),
		tsText(d.ExpiresAt), paused); err != nil {
		return t.fail(writeErr(err, "put delay %s", d.DelayID))
	}
	return nil
}

// DeleteDelay implements store.Tx.
func (t *writeTx) DeleteDelay(id core.ExecutionId, js core.JoinSetId, delay core.DelayId) error {
	if err := t.check(); err != nil {
		return err
	}
	if err := t.exec(sqlDeleteDelay, id.String(), js.String(), delay.String()); err != nil {
		return t.fail(writeErr(err, "delete delay %s", delay))
	}
	return nil
}

// SetDelayPaused implements store.Tx.
func (t *writeTx) SetDelayPaused(id core.ExecutionId, js core.JoinSetId, delay core.DelayId, paused bool) error {
	if err := t.check(); err != nil {
		return err
	}
	p := int64(0)
	if paused {
		p = 1
	}
	res, err := t.execResult(sqlPauseDelay, p, id.String(), js.String(), delay.String())
	if err != nil {
		return t.fail(writeErr(err, "pause delay %s", delay))
	}
	n, err := res.RowsAffected()
	if err != nil {
		return t.fail(fmt.Errorf("sqlite: pause delay %s: %w", delay, err))
	}
	if n == 0 {
		// Not a failed write: nothing was changed, fn decides what to do.
		return fmt.Errorf("sqlite: pause delay %s: %w", delay, core.ErrNotFound)
	}
	return nil
}
