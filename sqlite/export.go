package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
)

// Export (store.Exporter): the whole export reads one snapshot, a read
// transaction on one reader connection (WAL: the writer is not blocked,
// but checkpoints cannot reset the WAL past the snapshot until it ends).
// Imports go through Update (store.Service's generic import), which keeps
// the insertion order (seq) of the source.

var _ store.Exporter = (*Backend)(nil)

const (
	// sqlTreeRoots lists each tree's root (the id up to its first '.')
	// by the insertion order of the tree's first execution.
	sqlTreeRoots = `SELECT CASE WHEN instr(execution_id, '.') > 0 THEN substr(execution_id, 1, instr(execution_id, '.') - 1)
	ELSE execution_id END AS root FROM t_state GROUP BY root ORDER BY min(seq)`
	sqlTreeMembers  = `SELECT execution_id FROM t_state WHERE ` + treeCond
	sqlExportHeads  = `SELECT ` + headCols + `, seq, finished_recorded_at FROM t_state WHERE `
	sqlExportDelays = `SELECT join_set_id, delay_id, expires_at, paused FROM t_delay WHERE execution_id = ?`
	sqlExportBts    = sqlBacktraceCols + `WHERE e.execution_id = ? ORDER BY e.version_min, e.version_max`
	sqlExportLogs   = `SELECT id, execution_id, run_id, created_at, level, message, stream_type, payload FROM t_log WHERE ` +
		treeCond + ` ORDER BY id`
	sqlExportSources = `SELECT frame_key, is_suffix, digest FROM t_component_source WHERE component_digest = ? ORDER BY frame_key, is_suffix`
)

// ExportView implements store.Exporter.
func (b *Backend) ExportView(ctx context.Context, fn func(tx store.ExportTx) error) error {
	return b.View(ctx, func(tx store.ReadTx) error { return fn(&exportTx{tx.(*readTx)}) })
}

type exportTx struct{ *readTx }

// TreeRoots implements store.ExportTx.
func (t *exportTx) TreeRoots() ([]core.ExecutionId, error) {
	ids, err := t.ids(sqlTreeRoots, nil)
	if err != nil {
		return nil, fmt.Errorf("sqlite: tree roots: %w", err)
	}
	return ids, nil
}

// TreeMembers implements store.ExportTx.
func (t *exportTx) TreeMembers(root core.ExecutionId) ([]core.ExecutionId, error) {
	ids, err := t.ids(sqlTreeMembers, treeArgs(root))
	if err != nil {
		return nil, fmt.Errorf("sqlite: members of tree %s: %w", root, err)
	}
	return ids, nil
}

// ids runs a query of execution ids.
func (t *exportTx) ids(q string, args []any) ([]core.ExecutionId, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	var out []core.ExecutionId
	err := each(t.ctx, t.c, q, args, func(rows *sql.Rows) error {
		var s string
		if err := rows.Scan(&s); err != nil {
			return err
		}
		id, err := core.ParseExecutionId(s)
		out = append(out, id)
		return err
	})
	return out, err
}

// Tree implements store.ExportTx: one range scan of the tree's heads,
// then each execution's rows.
func (t *exportTx) Tree(root core.ExecutionId) ([]core.ExecutionRecord, error) {
	recs, err := t.records(sqlExportHeads+treeCond, treeArgs(root))
	return recordsOf(recs), err
}

// Executions implements store.ExportTx.
func (t *exportTx) Executions(ids []core.ExecutionId) ([]core.ExecutionRecord, error) {
	var all []seqRecord
	for chunk := range slices.Chunk(ids, 500) {
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id.String()
		}
		recs, err := t.records(sqlExportHeads+"execution_id IN ("+placeholders(len(chunk))+")", args)
		if err != nil {
			return nil, err
		}
		all = append(all, recs...)
	}
	slices.SortFunc(all, func(a, b seqRecord) int { return cmp.Compare(a.seq, b.seq) })
	return recordsOf(all), nil
}

// seqRecord is a record with its insertion order.
type seqRecord struct {
	rec core.ExecutionRecord
	seq int64
}

func recordsOf(recs []seqRecord) []core.ExecutionRecord {
	out := make([]core.ExecutionRecord, len(recs))
	for i := range recs {
		out[i] = recs[i].rec
	}
	return out
}

// records reads the heads selected by q (in insertion order) and then
// every other row of each.
func (t *exportTx) records(q string, args []any) ([]seqRecord, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	var out []seqRecord
	err := t.queryHeads(q+" ORDER BY seq", args, func(st core.ExecutionState, seq int64, finished sql.NullString) error {
		r := seqRecord{rec: core.ExecutionRecord{Head: st}, seq: seq}
		if finished.Valid {
			at, err := parseTS(finished.String)
			if err != nil {
				return fmt.Errorf("finish time of %s: %w", st.ExecutionID, err)
			}
			r.rec.FinishRecordedAt = &at
		}
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: export heads: %w", err)
	}
	for i := range out {
		if err := t.fill(&out[i].rec); err != nil {
			return nil, fmt.Errorf("sqlite: export %s: %w", out[i].rec.Head.ExecutionID, err)
		}
	}
	return out, nil
}

func (t *exportTx) queryHeads(q string, args []any, fn func(core.ExecutionState, int64, sql.NullString) error) error {
	rows, err := t.c.queryDynamic(t.ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			seq      int64
			finished sql.NullString
		)
		st, err := scanHead(withExtra{rows, []any{&seq, &finished}})
		if err != nil {
			return err
		}
		if err := fn(st, seq, finished); err != nil {
			return err
		}
	}
	return rows.Err()
}

// fill reads a record's events, responses, timer rows and backtraces.
func (t *exportTx) fill(r *core.ExecutionRecord) error {
	id := r.Head.ExecutionID
	var err error
	if r.Events, err = t.Events(id, 0, r.Head.Version+1); err != nil {
		return err
	}
	if r.Responses, err = t.Responses(id, 1, r.Head.MaxCursor+1); err != nil {
		return err
	}
	err = each(t.ctx, t.c, sqlExportDelays, []any{id.String()}, func(rows *sql.Rows) error {
		var js, delay, expires string
		var paused int64
		if err := rows.Scan(&js, &delay, &expires, &paused); err != nil {
			return err
		}
		d := core.DelayTimer{ExecutionID: id, Paused: paused != 0}
		var err error
		if d.JoinSetID, err = core.ParseJoinSetId(js); err != nil {
			return err
		}
		if d.DelayID, err = core.ParseDelayId(delay); err != nil {
			return err
		}
		if d.ExpiresAt, err = parseTS(expires); err != nil {
			return err
		}
		r.Delays = append(r.Delays, d)
		return nil
	})
	if err != nil {
		return fmt.Errorf("timer rows: %w", err)
	}
	err = each(t.ctx, t.c, sqlExportBts, []any{id.String()}, func(rows *sql.Rows) error {
		bt, err := scanBacktrace(rows, id)
		r.Backtraces = append(r.Backtraces, bt)
		return err
	})
	if err != nil {
		return fmt.Errorf("backtraces: %w", err)
	}
	r.Normalize()
	return nil
}

// TreeLogs implements store.ExportTx, in cursor order.
func (t *exportTx) TreeLogs(root core.ExecutionId) ([]core.LogInfoAppendRow, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	var out []core.LogInfoAppendRow
	err := each(t.ctx, t.c, sqlExportLogs, treeArgs(root), func(rows *sql.Rows) error {
		row, err := scanLog(rows)
		out = append(out, core.LogInfoAppendRow{ExecutionID: row.ExecutionID, RunID: row.RunID, Entry: row.Entry})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: logs of tree %s: %w", root, err)
	}
	return out, nil
}

// SourceMappingsOf implements store.ExportTx.
func (t *exportTx) SourceMappingsOf(component core.ComponentDigest) ([]core.SourceMapping, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	var out []core.SourceMapping
	err := each(t.ctx, t.c, sqlExportSources, []any{digestBytes(component.Digest)}, func(rows *sql.Rows) error {
		var (
			key    string
			suffix int64
			raw    []byte
		)
		if err := rows.Scan(&key, &suffix, &raw); err != nil {
			return err
		}
		m := core.SourceMapping{Component: component, Key: core.SourceKey{FrameKey: key, IsSuffix: suffix != 0}}
		var err error
		m.Digest.Digest, err = bytesDigest(raw)
		out = append(out, m)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: source mappings of %s: %w", component, err)
	}
	return out, nil
}
