package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/stela-dev/stela/core"
)

const (
	sqlPendingByFFQN = `SELECT execution_id FROM t_state INDEXED BY idx_state_pending_ffqn
		WHERE state = 'pending_at' AND lifecycle = 'active' AND ffqn = ? AND at <= ?
		ORDER BY at, seq LIMIT ?`
	sqlPendingByFFQNSkip = `SELECT execution_id FROM t_state INDEXED BY idx_state_pending_ffqn
		WHERE state = 'pending_at' AND lifecycle = 'active' AND ffqn = ? AND at <= ?
		AND (incompatible_digest IS NULL OR incompatible_digest <> ?)
		ORDER BY at, seq LIMIT ?`
	sqlPendingByDigest = `SELECT execution_id FROM t_state INDEXED BY idx_state_pending_digest
		WHERE state = 'pending_at' AND lifecycle = 'active' AND component_digest = ? AND at <= ?
		ORDER BY at, seq LIMIT ?`
	sqlExpiredLocks = `SELECT ` + headCols + ` FROM t_state INDEXED BY idx_state_locked
		WHERE state = 'locked' AND at <= ? ORDER BY at`
	sqlExpiredDelays = `SELECT execution_id, join_set_id, delay_id, expires_at FROM t_delay INDEXED BY idx_delay_expires
		WHERE paused = 0 AND expires_at <= ? ORDER BY expires_at`
	sqlCancelling = `SELECT execution_id FROM t_state INDEXED BY idx_state_cancelling
		WHERE lifecycle = 'cancelling' ORDER BY created_at, seq LIMIT ?`
)

// PendingByFFQN implements store.Queries (index idx_state_pending_ffqn). As
// a lock usually follows, it decodes the candidates' cached Created events
// on the caller's goroutine (see createdCache).
func (b *Backend) PendingByFFQN(ctx context.Context, ffqn core.FunctionFqn, at core.Timestamp, limit int, skipIncompatible *core.ComponentDigest) ([]core.ExecutionId, error) {
	if limit <= 0 {
		return nil, nil
	}
	var ids []core.ExecutionId
	err := b.withReader(ctx, func(c *conn) error {
		var rows *sql.Rows
		var err error
		if skipIncompatible != nil {
			rows, err = c.query(ctx, sqlPendingByFFQNSkip, ffqn.String(), tsText(at), digestBytes(skipIncompatible.Digest), limit)
		} else {
			rows, err = c.query(ctx, sqlPendingByFFQN, ffqn.String(), tsText(at), limit)
		}
		if err != nil {
			return err
		}
		ids, err = b.scanIDs(ctx, rows)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: pending by ffqn %s: %w", ffqn, err)
	}
	b.createds.prefetch(ids)
	return ids, nil
}

// PendingByDigest implements store.Queries (index idx_state_pending_digest).
func (b *Backend) PendingByDigest(ctx context.Context, digest core.ComponentDigest, at core.Timestamp, limit int) ([]core.ExecutionId, error) {
	if limit <= 0 {
		return nil, nil
	}
	var ids []core.ExecutionId
	err := b.withReader(ctx, func(c *conn) error {
		rows, err := c.query(ctx, sqlPendingByDigest, digestBytes(digest.Digest), tsText(at), limit)
		if err != nil {
			return err
		}
		ids, err = b.scanIDs(ctx, rows)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: pending by digest %s: %w", digest, err)
	}
	b.createds.prefetch(ids)
	return ids, nil
}

// scanIDs reads a single execution_id column; undecodable ids are left out
// (counted and logged, store.Undecodable), like Obelisk skips them.
func (b *Backend) scanIDs(ctx context.Context, rows *sql.Rows) ([]core.ExecutionId, error) {
	defer rows.Close()
	var ids []core.ExecutionId
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		id, err := core.ParseExecutionId(s)
		if err != nil {
			b.undecodable.Skip(ctx, b.log, "execution id", s, err)
			continue
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// scanHeads reads rows of headCols; undecodable rows are left out (counted
// and logged, store.Undecodable); Head of such a row fails.
func (b *Backend) scanHeads(ctx context.Context, rows *sql.Rows) ([]core.ExecutionState, error) {
	defer rows.Close()
	var out []core.ExecutionState
	for rows.Next() {
		st, err := scanHead(rows)
		if err != nil {
			b.undecodable.Skip(ctx, b.log, "execution head", "", err)
			continue
		}
		out = append(out, st)
	}
	return out, rows.Err()
}

// ExpiredLocks implements store.Queries (index idx_state_locked).
func (b *Backend) ExpiredLocks(ctx context.Context, at core.Timestamp) ([]core.ExecutionState, error) {
	var out []core.ExecutionState
	err := b.withReader(ctx, func(c *conn) error {
		rows, err := c.query(ctx, sqlExpiredLocks, tsText(at))
		if err != nil {
			return err
		}
		out, err = b.scanHeads(ctx, rows)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: expired locks at %s: %w", at, err)
	}
	return out, nil
}

// ExpiredDelays implements store.Queries (index idx_delay_expires).
func (b *Backend) ExpiredDelays(ctx context.Context, at core.Timestamp) ([]core.ExpiredDelay, error) {
	var out []core.ExpiredDelay
	err := b.withReader(ctx, func(c *conn) error {
		rows, err := c.query(ctx, sqlExpiredDelays, tsText(at))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id, js, delay, expires string
			if err := rows.Scan(&id, &js, &delay, &expires); err != nil {
				return err
			}
			d, err := decodeExpiredDelay(id, js, delay, expires)
			if err != nil {
				b.undecodable.Skip(ctx, b.log, "delay", delay, err)
				continue
			}
			out = append(out, d)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: expired delays at %s: %w", at, err)
	}
	return out, nil
}

func decodeExpiredDelay(id, js, delay, expires string) (core.ExpiredDelay, error) {
	var d core.ExpiredDelay
	var err error
	if d.ExpiresAt, err = parseTS(expires); err != nil {
		return d, err
	}
	if d.ExecutionID, err = core.ParseExecutionId(id); err != nil {
		return d, err
	}
	if d.JoinSetID, err = core.ParseJoinSetId(js); err != nil {
		return d, err
	}
	if d.DelayID, err = core.ParseDelayId(delay); err != nil {
		return d, err
	}
	return d, nil
}

// Cancelling implements store.Queries (index idx_state_cancelling).
func (b *Backend) Cancelling(ctx context.Context, limit int) ([]core.ExecutionId, error) {
	if limit <= 0 {
		return nil, nil
	}
	var ids []core.ExecutionId
	err := b.withReader(ctx, func(c *conn) error {
		rows, err := c.query(ctx, sqlCancelling, limit)
		if err != nil {
			return err
		}
		ids, err = b.scanIDs(ctx, rows)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: cancelling: %w", err)
	}
	return ids, nil
}

// --- list_executions ----------------------------------------------------------

// ListExecutions implements store.Queries: one range scan in the order of
// core.ExecutionListPagination.Compare — (created_at, execution_id) over
// idx_state_created_id, or execution_id over the primary key — with the
// cursor condition on the same key and every filter an SQL condition
// equivalent to core.ListExecutionsFilter.Matches.
func (b *Backend) ListExecutions(ctx context.Context, filter core.ListExecutionsFilter, p core.ExecutionListPagination) ([]core.ExecutionState, error) {
	q, args, desc := listExecutionsSQL(&filter, p)
	var out []core.ExecutionState
	err := b.withReader(ctx, func(c *conn) error {
		rows, err := c.queryDynamic(ctx, q, args...)
		if err != nil {
			return err
		}
		out, err = b.scanHeads(ctx, rows)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: list executions: %w", err)
	}
	if !desc { // newest first
		slices.Reverse(out)
	}
	return out, nil
}

// listExecutionsSQL builds ListExecutions' query; rows come in scan order
// (descending when desc).
func listExecutionsSQL(filter *core.ListExecutionsFilter, p core.ExecutionListPagination) (q string, args []any, desc bool) {
	desc, length := p.Window()
	var where []string
	order := "created_at %[1]s, execution_id %[1]s"
	switch {
	case p.ExecutionID != nil:
		order = "execution_id %[1]s"
		if c := p.ExecutionID.Cursor; c != nil {
			where = append(where, "execution_id "+p.ExecutionID.Rel()+" ?")
			args = append(args, c.String())
		}
	case p.CreatedBy != nil && p.CreatedBy.Cursor != nil:
		if p.CreatedByID != nil {
			where = append(where, "(created_at, execution_id) "+p.CreatedBy.Rel()+" (?, ?)")
			args = append(args, tsText(*p.CreatedBy.Cursor), p.CreatedByID.String())
		} else {
			where = append(where, "created_at "+p.CreatedBy.Rel()+" ?")
			args = append(args, tsText(*p.CreatedBy.Cursor))
		}
	}
	fw, fa := listFilterSQL(filter)
	where = append(where, fw...)
	args = append(args, fa...)
	q = "SELECT " + headCols + " FROM t_state"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	dir := "ASC"
	if desc {
		dir = "DESC"
	}
	q += " ORDER BY " + fmt.Sprintf(order, dir) + " LIMIT ?"
	return q, append(args, length), desc
}

// listFilterSQL translates f into AND-ed SQL conditions.
func listFilterSQL(f *core.ListExecutionsFilter) (where []string, args []any) {
	if !f.ShowDerived {
		where = append(where, "is_top_level = 1")
	}
	if fn := f.FunctionName; fn != nil {
		if pkg, ver, ok := versionedPackage(fn); ok {
			// `ns:pkg/<any>@ver.<any>`: prefix pkg+"/", then "@ver." anywhere after it.
			w, a := prefixCond("ffqn", pkg+"/")
			where = append(where, w, "instr(substr(ffqn, length(?) + 1), ?) > 0")
			args = append(args, a...)
			args = append(args, pkg+"/", "@"+ver+".")
		} else {
			w, a := prefixCond("ffqn", fn.Value)
			where = append(where, w)
			args = append(args, a...)
		}
	}
	if f.HideFinished {
		where = append(where, "state <> 'finished'")
	}
	if f.ExecutionIDPrefix != "" {
		w, a := prefixCond("execution_id", f.ExecutionIDPrefix)
		where = append(where, w)
		args = append(args, a...)
	}
	if f.ComponentDigest != nil {
		where = append(where, "component_digest = ?")
		args = append(args, digestBytes(f.ComponentDigest.Digest))
	}
	if f.DeploymentID != nil {
		where = append(where, "deployment_id = ?")
		args = append(args, f.DeploymentID.String())
	}
	if len(f.StateFilters) > 0 {
		var ors []string
		for _, sf := range f.StateFilters {
			c, a := stateFilterSQL(sf, f.StateFiltersNow)
			ors = append(ors, "("+c+")")
			args = append(args, a...)
		}
		where = append(where, "("+strings.Join(ors, " OR ")+")")
	}
	return where, args
}

// versionedPackage mirrors core.FunctionNameFilter.Matches' package rule.
func versionedPackage(f *core.FunctionNameFilter) (pkg, ver string, ok bool) {
	if f.Kind != "package" {
		return "", "", false
	}
	i := strings.LastIndexByte(f.Value, '@')
	if i < 0 || i >= len(f.Value)-1 || !strings.Contains(f.Value[:i], ":") {
		return "", "", false
	}
	return f.Value[:i], f.Value[i+1:], true
}

// stateFilterSQL is core.StateFilter.Matches as an SQL condition.
func stateFilterSQL(f core.StateFilter, now core.Timestamp) (string, []any) {
	switch f {
	case core.FilterLocked:
		return "state = 'locked' AND lifecycle = 'active'", nil
	case core.FilterPending:
		return "state = 'pending_at' AND lifecycle = 'active' AND at <= ?", []any{tsText(now)}
	case core.FilterScheduled:
		return "state = 'pending_at' AND lifecycle = 'active' AND at > ?", []any{tsText(now)}
	case core.FilterBlocked:
		return "state = 'blocked_by_join_set' AND lifecycle = 'active'", nil
	case core.FilterPaused:
		return "lifecycle = 'paused'", nil
	case core.FilterCancelling:
		return "lifecycle = 'cancelling'", nil
	case core.FilterFinished:
		return "state = 'finished'", nil
	case core.FilterFinishedOk:
		return "state = 'finished' AND result_kind = ?", []any{core.ResultKindJSONOk}
	case core.FilterFinishedError:
		return "state = 'finished' AND result_kind = ?", []any{core.ResultKindJSONError}
	case core.FilterFinishedExecutionFailure:
		return "state = 'finished' AND result_kind IS NOT NULL AND result_kind NOT IN (?, ?)",
			[]any{core.ResultKindJSONOk, core.ResultKindJSONError}
	}
	return "0", nil
}

// prefixCond is a case-sensitive, wildcard-free "col starts with prefix" as a
// byte-wise range [prefix, successor(prefix)), which an index on col serves.
func prefixCond(col, prefix string) (string, []any) {
	if prefix == "" {
		return "1", nil
	}
	if hi, ok := prefixSuccessor(prefix); ok {
		return col + " >= ? AND " + col + " < ?", []any{prefix, hi}
	}
	return col + " >= ?", []any{prefix}
}

// prefixSuccessor returns the smallest byte string greater than every string
// with the given prefix; ok is false if there is none (all bytes 0xFF).
func prefixSuccessor(prefix string) (string, bool) {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xFF {
			b[i]++
			return string(b[:i+1]), true
		}
	}
	return "", false
}
