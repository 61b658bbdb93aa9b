package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/stela-dev/stela/core"
)

const sqlInsertLog = `INSERT INTO t_log (execution_id, run_id, created_at, level, message, stream_type, payload)
	VALUES (?, ?, ?, ?, ?, ?, ?)`

// AppendLogs implements store.Queries: the rows are inserted through the
// writer (one group-commit transaction), receiving increasing cursors.
func (b *Backend) AppendLogs(ctx context.Context, rows []core.LogInfoAppendRow) error {
	if len(rows) == 0 {
		return nil
	}
	return b.write(ctx, func(tx *writeTx) error {
		for _, r := range rows {
			// stream_type IS NULL marks a log line, as LogEntry.IsStream does.
			var level, stream, payload any
			if r.Entry.Level != 0 {
				level = int64(r.Entry.Level)
			}
			if r.Entry.StreamType != 0 {
				stream = int64(r.Entry.StreamType)
			}
			if r.Entry.Payload != nil {
				payload = r.Entry.Payload
			}
			message := r.Entry.Message
			if err := tx.c.exec(tx.ctx, sqlInsertLog, r.ExecutionID.String(), r.RunID.String(),
				tsText(r.Entry.CreatedAt), level, message, stream, payload); err != nil {
				return writeErr(err, "append log of %s", r.ExecutionID)
			}
		}
		return nil
	})
}

// ListLogs implements store.Queries over idx_log_execution. With showDerived
// the scope is id itself plus every id starting with id + "." (its
// descendants), so "…_1" never matches "…_10".
func (b *Backend) ListLogs(ctx context.Context, id core.ExecutionId, showDerived bool, filter core.LogFilter, p core.Pagination[core.LogCursor]) ([]core.LogEntryRow, error) {
	if p.Length == 0 || (!filter.ShowLogs && !filter.ShowStreams) {
		return nil, nil
	}
	sid := id.String()
	var (
		where []string
		args  []any
	)
	if showDerived {
		w, a := prefixCond("execution_id", sid+".")
		where = append(where, "(execution_id = ? OR ("+w+"))")
		args = append(args, sid)
		args = append(args, a...)
	} else {
		where = append(where, "execution_id = ?")
		args = append(args, sid)
	}
	where = append(where, "id "+p.Rel()+" ?")
	args = append(args, int64(p.Cursor))
	if filter.CreatedAfter != nil {
		where = append(where, "created_at > ?")
		args = append(args, tsText(*filter.CreatedAfter))
	}
	if filter.CreatedBefore != nil {
		where = append(where, "created_at < ?")
		args = append(args, tsText(*filter.CreatedBefore))
	}
	var kinds []string
	if filter.ShowLogs {
		c := "stream_type IS NULL"
		if len(filter.Levels) > 0 {
			c += " AND level IN (" + placeholders(len(filter.Levels)) + ")"
			for _, l := range filter.Levels {
				args = append(args, int64(l))
			}
		}
		kinds = append(kinds, "("+c+")")
	}
	if filter.ShowStreams {
		c := "stream_type IS NOT NULL"
		if len(filter.StreamTypes) > 0 {
			c += " AND stream_type IN (" + placeholders(len(filter.StreamTypes)) + ")"
			for _, s := range filter.StreamTypes {
				args = append(args, int64(s))
			}
		}
		kinds = append(kinds, "("+c+")")
	}
	where = append(where, "("+strings.Join(kinds, " OR ")+")")
	q := "SELECT id, execution_id, run_id, created_at, level, message, stream_type, payload FROM t_log WHERE " +
		strings.Join(where, " AND ")
	if p.IsDesc() {
		q += " ORDER BY id DESC"
	} else {
		q += " ORDER BY id ASC"
	}
	q += " LIMIT ?"
	args = append(args, int(p.Length))

	var out []core.LogEntryRow
	err := b.withReader(ctx, func(c *conn) error {
		rows, err := c.queryDynamic(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			row, err := scanLog(rows)
			var se scanError
			switch {
			case errors.As(err, &se):
				return err
			case err != nil:
				b.undecodable.Skip(ctx, b.log, "log", strconv.FormatInt(int64(row.Cursor), 10), err)
				continue
			}
			out = append(out, row)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: list logs of %s: %w", id, err)
	}
	return out, nil
}

// scanError is a failed Scan (as opposed to a row that does not decode).
type scanError struct{ error }

func (e scanError) Unwrap() error { return e.error }

// scanLog reads one row of (id, execution_id, run_id, created_at, level,
// message, stream_type, payload); a row that does not decode still returns
// its cursor.
func scanLog(rows *sql.Rows) (core.LogEntryRow, error) {
	var (
		cursor              int64
		eid, run, createdAt string
		level, stream       sql.NullInt64
		message             sql.NullString
		payload             []byte
	)
	if err := rows.Scan(&cursor, &eid, &run, &createdAt, &level, &message, &stream, &payload); err != nil {
		return core.LogEntryRow{}, scanError{err}
	}
	return decodeLog(cursor, eid, run, createdAt, level, message, stream, payload)
}

func decodeLog(cursor int64, eid, run, createdAt string, level sql.NullInt64, message sql.NullString, stream sql.NullInt64, payload []byte) (core.LogEntryRow, error) {
	row := core.LogEntryRow{Cursor: core.LogCursor(cursor)}
	var err error
	if row.ExecutionID, err = core.ParseExecutionId(eid); err != nil {
		return row, err
	}
	if row.RunID, err = core.ParseRunId(run); err != nil {
		return row, err
	}
	if row.Entry.CreatedAt, err = parseTS(createdAt); err != nil {
		return row, err
	}
	row.Entry.Level = core.LogLevel(level.Int64)
	row.Entry.Message = message.String
	row.Entry.StreamType = core.LogStreamType(stream.Int64)
	row.Entry.Payload = payload
	return row, nil
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}
