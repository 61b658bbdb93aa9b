package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/stela-dev/stela/core"
)

const (
	sqlInsertWasmBacktrace = `INSERT OR IGNORE INTO t_wasm_backtrace (hash, json) VALUES (?, ?)`
	sqlInsertExecBacktrace = `INSERT OR IGNORE INTO t_execution_backtrace
		(execution_id, version_min, version_max, component_id, hash) VALUES (?, ?, ?, ?, ?)`
	sqlBacktraceCols   = `SELECT e.version_min, e.version_max, e.component_id, w.json FROM t_execution_backtrace e JOIN t_wasm_backtrace w ON w.hash = e.hash `
	sqlBacktraceFirst  = sqlBacktraceCols + `WHERE e.execution_id = ? ORDER BY e.version_min ASC, e.version_max ASC LIMIT 1`
	sqlBacktraceLast   = sqlBacktraceCols + `WHERE e.execution_id = ? ORDER BY e.version_min DESC, e.version_max DESC LIMIT 1`
	sqlBacktraceAt     = sqlBacktraceCols + `WHERE e.execution_id = ? AND e.version_min <= ? AND e.version_max > ? ORDER BY e.version_min DESC, e.version_max ASC LIMIT 1`
	sqlBacktraceRanges = `SELECT version_min, version_max FROM t_execution_backtrace WHERE execution_id = ? ORDER BY version_min, version_max`
)

// AppendBacktraces implements store.Queries: deduplicated backtrace bodies
// plus insert-if-absent execution mappings, in one write transaction.
func (b *Backend) AppendBacktraces(ctx context.Context, bts []core.BacktraceInfo) (int, error) {
	if len(bts) == 0 {
		return 0, nil
	}
	n := 0
	err := b.write(ctx, func(tx *writeTx) error {
		n = 0
		for _, bt := range bts {
			hash := core.BacktraceHashOf(bt.WasmBacktrace)
			body, err := core.MarshalJSON(bt.WasmBacktrace)
			if err != nil {
				return fmt.Errorf("sqlite: encode backtrace of %s: %w", bt.ExecutionID, err)
			}
			comp, err := core.MarshalJSON(bt.ComponentID)
			if err != nil {
				return fmt.Errorf("sqlite: encode backtrace of %s: %w", bt.ExecutionID, err)
			}
			if err := tx.c.exec(tx.ctx, sqlInsertWasmBacktrace, hash[:], string(body)); err != nil {
				return writeErr(err, "append backtrace of %s", bt.ExecutionID)
			}
			res, err := tx.c.execResult(tx.ctx, sqlInsertExecBacktrace, bt.ExecutionID.String(),
				int64(bt.VersionMinIncluding), int64(bt.VersionMaxExcluding), string(comp), hash[:])
			if err != nil {
				return writeErr(err, "append backtrace of %s", bt.ExecutionID)
			}
			k, err := res.RowsAffected()
			if err != nil {
				return fmt.Errorf("sqlite: append backtrace of %s: %w", bt.ExecutionID, err)
			}
			n += int(k)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// GetBacktrace implements store.Queries: first/last by version_min_including
// or the range containing a version (primary-key range scan).
func (b *Backend) GetBacktrace(ctx context.Context, id core.ExecutionId, filter core.BacktraceFilter) (core.BacktraceInfo, error) {
	var (
		q    string
		args []any
	)
	switch filter.Kind {
	case "first":
		q, args = sqlBacktraceFirst, []any{id.String()}
	case "last":
		q, args = sqlBacktraceLast, []any{id.String()}
	case "specific":
		v := int64(filter.Specific)
		q, args = sqlBacktraceAt, []any{id.String(), v, v}
	default:
		return core.BacktraceInfo{}, fmt.Errorf("sqlite: get backtrace of %s: %w",
			id, &core.ValidationError{Reason: fmt.Sprintf("unknown backtrace filter %q", filter.Kind)})
	}
	var bt core.BacktraceInfo
	found := false
	err := b.withReader(ctx, func(c *conn) error {
		rows, err := c.query(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		if !rows.Next() {
			return rows.Err()
		}
		found = true
		bt, err = scanBacktrace(rows, id)
		return err
	})
	if err != nil {
		return core.BacktraceInfo{}, fmt.Errorf("sqlite: get backtrace of %s: %w", id, err)
	}
	if !found {
		return core.BacktraceInfo{}, fmt.Errorf("sqlite: get backtrace of %s: %w", id, core.ErrNotFound)
	}
	return bt, nil
}

// BacktraceRanges implements store.Queries.
func (b *Backend) BacktraceRanges(ctx context.Context, id core.ExecutionId) ([][2]core.Version, error) {
	var out [][2]core.Version
	err := b.withReader(ctx, func(c *conn) error {
		rows, err := c.query(ctx, sqlBacktraceRanges, id.String())
		if err != nil {
			return err
		}
		return scanRanges(rows, &out)
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: backtrace ranges of %s: %w", id, err)
	}
	return out, nil
}

func scanRanges(rows *sql.Rows, out *[][2]core.Version) error {
	defer rows.Close()
	for rows.Next() {
		var lo, hi int64
		if err := rows.Scan(&lo, &hi); err != nil {
			return err
		}
		*out = append(*out, [2]core.Version{core.Version(lo), core.Version(hi)})
	}
	return rows.Err()
}

// scanBacktrace reads one row of sqlBacktraceCols.
func scanBacktrace(rows *sql.Rows, id core.ExecutionId) (core.BacktraceInfo, error) {
	var (
		vmin, vmax int64
		comp, body []byte
	)
	if err := rows.Scan(&vmin, &vmax, &comp, &body); err != nil {
		return core.BacktraceInfo{}, err
	}
	bt := core.BacktraceInfo{ExecutionID: id, VersionMinIncluding: core.Version(vmin), VersionMaxExcluding: core.Version(vmax)}
	if err := json.Unmarshal(comp, &bt.ComponentID); err != nil {
		return bt, fmt.Errorf("decode component id: %w", err)
	}
	if err := json.Unmarshal(body, &bt.WasmBacktrace); err != nil {
		return bt, fmt.Errorf("decode backtrace: %w", err)
	}
	return bt, nil
}
