package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"slices"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
)

// Retention (store.Retainer): a finished tree is purged once its period has
// passed, by the timers loop, in small transactions that never hold the
// writer long:
//
//  1. one transaction re-reads the tree's heads, checks that they are what
//     the service decided on (same executions, all finished, same
//     versions), records the decision in t_purge and deletes the heads — the
//     tree is gone for every reader from this commit on;
//  2. the tree's other rows — events, responses (and with them the
//     uniqueness of their child and delay ids), timer rows, logs and
//     backtraces, and backtrace bodies no other execution refers to — are
//     deleted purgeChunk rows per transaction: every row whose execution
//     id is the root or starts with "<root>." and has no head any more;
//  3. the t_purge row goes.
//
// A crash after step 1 leaves the t_purge row: the next pass completes the
// purge first (ResumeExpiry). Executions in the tree's id range created
// after step 1 (possible only by creating derived ids directly) keep their
// head and therefore all their rows.

var (
	_ store.Retainer    = (*Backend)(nil)
	_ store.RetentionTx = (*writeTx)(nil)
)

// purgeChunk bounds the rows one purge transaction deletes (~1 ms of the
// writer's time).
const purgeChunk = 512

// treeCond selects the rows of one tree by execution_id: ?1 the root, ?2
// "<root>." and ?3 its successor "<root>/".
const treeCond = `(execution_id = ?1 OR (execution_id >= ?2 AND execution_id < ?3))`

func treeArgs(root core.ExecutionId) []any {
	r := root.String()
	return []any{r, r + ".", r + "/"}
}

const (
	sqlRecordFinished = `UPDATE t_state SET finished_recorded_at = ? WHERE execution_id = ?`
	// finishTime is the retention finish time of a t_state row (the
	// expression of idx_state_retention).
	finishTime = `coalesce(finished_recorded_at, at)`
	// sqlRetentionCandidates: finished top-level executions recorded
	// finished at or before ?1 with no derived execution that is
	// unfinished or finished later, oldest first (idx_state_retention).
	sqlRetentionCandidates = `SELECT r.execution_id, coalesce(r.finished_recorded_at, r.at) AS f FROM t_state r
	WHERE r.state = 'finished' AND r.is_top_level = 1 AND coalesce(r.finished_recorded_at, r.at) <= ?1
	AND NOT EXISTS (SELECT 1 FROM t_state d WHERE d.execution_id >= r.execution_id || '.' AND d.execution_id < r.execution_id || '/'
		AND (d.state <> 'finished' OR coalesce(d.finished_recorded_at, d.at) > ?1))
	ORDER BY f, r.execution_id LIMIT ?2`
	sqlTreeHeads    = `SELECT ` + headCols + `, ` + finishTime + `, finished_recorded_at IS NOT NULL FROM t_state WHERE ` + treeCond
	sqlPurgeInsert  = `INSERT INTO t_purge (root_id, expires_at) VALUES (?, ?) ON CONFLICT DO NOTHING`
	sqlPurgeHeads   = `DELETE FROM t_state WHERE ` + treeCond
	sqlPurgeDone    = `DELETE FROM t_purge WHERE root_id = ?`
	sqlPurgePending = `SELECT root_id FROM t_purge ORDER BY root_id`
	// headless is the condition of a tree row whose execution lost its head.
	headless = ` AND NOT EXISTS (SELECT 1 FROM t_state s WHERE s.execution_id = x.execution_id)`
)

// purgeRows are the chunked deletions of step 2, in order; ?4 is the chunk size.
var purgeRows = []string{
	`DELETE FROM t_event WHERE (execution_id, version) IN (SELECT execution_id, version FROM t_event x WHERE ` +
		treeCond + headless + ` LIMIT ?4)`,
	`DELETE FROM t_response WHERE (execution_id, cursor) IN (SELECT execution_id, cursor FROM t_response x WHERE ` +
		treeCond + headless + ` LIMIT ?4)`,
	`DELETE FROM t_delay WHERE (execution_id, join_set_id, delay_id) IN (SELECT execution_id, join_set_id, delay_id FROM t_delay x WHERE ` +
		treeCond + headless + ` LIMIT ?4)`,
	`DELETE FROM t_log WHERE id IN (SELECT id FROM t_log x WHERE ` + treeCond + headless + ` LIMIT ?4)`,
}

const (
	// sqlPurgeBacktraces deletes a chunk of execution backtraces and
	// returns their body hashes.
	sqlPurgeBacktraces = `DELETE FROM t_execution_backtrace WHERE (execution_id, version_min, version_max) IN
	(SELECT execution_id, version_min, version_max FROM t_execution_backtrace x WHERE ` + treeCond + headless + ` LIMIT ?4)
	RETURNING hash`
	// sqlPurgeBody deletes a backtrace body no execution refers to any more.
	sqlPurgeBody = `DELETE FROM t_wasm_backtrace WHERE hash = ?1 AND NOT EXISTS (SELECT 1 FROM t_execution_backtrace WHERE hash = ?1)`
)

// RecordFinished implements store.RetentionTx. The finish time is written
// with the head: by the PutHead of id that ends the same fn (the store
// writes heads last), else by end.
func (t *writeTx) RecordFinished(id core.ExecutionId, at core.Timestamp, _ *core.Timestamp) error {
	if err := t.check(); err != nil {
		return err
	}
	if t.finishedAt == nil {
		t.finishedAt = make(map[core.ExecutionId]string, 1)
	}
	t.finishedAt[id] = tsText(at)
	t.wrote = true
	return nil
}

// end writes what fn left for after its last statement: the finish times
// no PutHead wrote (a head created in this fn, an import).
func (t *writeTx) end() error {
	for id, at := range t.finishedAt {
		if err := t.exec(sqlRecordFinished, at, id.String()); err != nil {
			return t.fail(writeErr(err, "record the finish of %s", id))
		}
	}
	t.finishedAt = nil
	return nil
}

// RetentionMarksAhead implements store.Retainer: trees are purged when due.
func (b *Backend) RetentionMarksAhead() bool { return false }

// RetentionDone implements store.Retainer (no cursor).
func (b *Backend) RetentionDone(context.Context, string) error { return nil }

// RetentionCandidates implements store.Retainer: finished trees whose last
// finish is at least the period old (sqlRetentionCandidates).
func (b *Backend) RetentionCandidates(ctx context.Context, now core.Timestamp, r core.Retention, limit int) ([]store.RetentionCandidate, error) {
	var out []store.RetentionCandidate
	err := b.withReader(ctx, func(c *conn) error {
		rows, err := c.query(ctx, sqlRetentionCandidates, tsText(now.Add(-r.Period())), limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id, at string
			if err := rows.Scan(&id, &at); err != nil {
				return err
			}
			root, err := core.ParseExecutionId(id)
			if err != nil {
				b.undecodable.Skip(ctx, b.log, "execution id", id, err)
				continue
			}
			since, err := parseTS(at)
			if err != nil {
				return fmt.Errorf("finish time of %s: %w", id, err)
			}
			out = append(out, store.RetentionCandidate{Root: root, Since: since})
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: retention candidates: %w", err)
	}
	return out, nil
}

// withExtra scans a row of headCols followed by extra columns.
type withExtra struct {
	rows  *sql.Rows
	extra []any
}

func (w withExtra) Scan(dest ...any) error { return w.rows.Scan(append(dest, w.extra...)...) }

// RetentionTree implements store.Retainer: one range scan of the primary
// key over the root and its descendants.
func (b *Backend) RetentionTree(ctx context.Context, root core.ExecutionId) (store.RetentionTree, error) {
	tree := store.RetentionTree{Root: root, Complete: true}
	err := b.withReader(ctx, func(c *conn) (err error) {
		tree.Members, err = readTree(ctx, c, root)
		return err
	})
	if err != nil {
		return tree, fmt.Errorf("sqlite: read tree %s: %w", root, err)
	}
	return tree, nil
}

// readTree reads the heads of root's tree with their recorded finish times.
func readTree(ctx context.Context, c *conn, root core.ExecutionId) ([]core.RetentionMember, error) {
	rows, err := c.query(ctx, sqlTreeHeads, treeArgs(root)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []core.RetentionMember
	for rows.Next() {
		var at string
		var recorded bool
		st, err := scanHead(withExtra{rows, []any{&at, &recorded}})
		if err != nil {
			return nil, err
		}
		m := core.RetentionMember{State: st}
		if recorded {
			if m.FinishedAt, err = parseTS(at); err != nil {
				return nil, fmt.Errorf("finish time of %s: %w", st.ExecutionID, err)
			}
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// ExpireTree implements store.Retainer: the purge of steps 1–3 above.
func (b *Backend) ExpireTree(ctx context.Context, tree store.RetentionTree, expiresAt core.Timestamp) (store.ExpireStats, error) {
	var st store.ExpireStats
	args := treeArgs(tree.Root)
	err := b.write(ctx, func(tx *writeTx) error {
		st = store.ExpireStats{}
		current, err := readTree(tx.ctx, tx.c, tree.Root)
		if err != nil {
			return err
		}
		if !sameTree(current, tree.Members) {
			return fmt.Errorf("sqlite: tree %s changed since it was read: %w", tree.Root, core.ErrConflict)
		}
		if err := tx.c.exec(tx.ctx, sqlPurgeInsert, tree.Root.String(), tsText(expiresAt)); err != nil {
			return writeErr(err, "record the purge of %s", tree.Root)
		}
		res, err := tx.c.execResult(tx.ctx, sqlPurgeHeads, args...)
		if err != nil {
			return writeErr(err, "purge the heads of %s", tree.Root)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		st.Executions, st.Items = int(n), int(n)
		ids := make([]core.ExecutionId, len(current))
		for i := range current {
			ids[i] = current[i].State.ExecutionID
		}
		tx.cache.forget(ids)
		b.createds.forget(ids)
		return nil
	})
	if err != nil {
		return st, err
	}
	if b.purgeFault != nil {
		if err := b.purgeFault(tree.Root); err != nil {
			return st, err
		}
	}
	n, err := b.purgeRest(ctx, tree.Root)
	st.Items += n
	return st, err
}

// sameTree reports whether the heads read now are those the decision was
// made on: the same executions, each finished at the same version.
func sameTree(current, members []core.RetentionMember) bool {
	if len(current) != len(members) {
		return false
	}
	was := make(map[core.ExecutionId]core.Version, len(members))
	for _, m := range members {
		was[m.State.ExecutionID] = m.State.Version
	}
	for _, m := range current {
		v, ok := was[m.State.ExecutionID]
		if !ok || v != m.State.Version || !m.State.IsFinished() {
			return false
		}
	}
	return true
}

// purgeRest is steps 2 and 3: the tree's headless rows, purgeChunk per
// transaction, then its t_purge row. It returns the rows deleted.
func (b *Backend) purgeRest(ctx context.Context, root core.ExecutionId) (int, error) {
	args := append(treeArgs(root), purgeChunk)
	total := 0
	for _, q := range purgeRows {
		for {
			var n int64
			err := b.write(ctx, func(tx *writeTx) error {
				res, err := tx.c.execResult(tx.ctx, q, args...)
				if err != nil {
					return err
				}
				n, err = res.RowsAffected()
				return err
			})
			if err != nil {
				return total, fmt.Errorf("sqlite: purge %s: %w", root, err)
			}
			total += int(n)
			if n < purgeChunk {
				break
			}
		}
	}
	for {
		var n int
		err := b.write(ctx, func(tx *writeTx) error {
			n = 0
			rows, err := tx.c.query(tx.ctx, sqlPurgeBacktraces, args...)
			if err != nil {
				return err
			}
			var hashes [][]byte
			for rows.Next() {
				var h []byte
				if err := rows.Scan(&h); err != nil {
					rows.Close()
					return err
				}
				hashes = append(hashes, h)
			}
			if err := rows.Close(); err != nil {
				return err
			}
			n = len(hashes)
			slices.SortFunc(hashes, bytes.Compare)
			hashes = slices.CompactFunc(hashes, bytes.Equal)
			for _, h := range hashes {
				res, err := tx.c.execResult(tx.ctx, sqlPurgeBody, h)
				if err != nil {
					return err
				}
				k, err := res.RowsAffected()
				if err != nil {
					return err
				}
				n += int(k)
			}
			return nil
		})
		if err != nil {
			return total, fmt.Errorf("sqlite: purge the backtraces of %s: %w", root, err)
		}
		total += n
		if n == 0 {
			break
		}
	}
	err := b.write(ctx, func(tx *writeTx) error {
		return tx.c.exec(tx.ctx, sqlPurgeDone, root.String())
	})
	if err != nil {
		return total, fmt.Errorf("sqlite: purge %s: %w", root, err)
	}
	return total, nil
}

// ResumeExpiry implements store.Retainer: it completes every purge a crash
// interrupted after step 1.
func (b *Backend) ResumeExpiry(ctx context.Context) (store.ExpireStats, error) {
	var st store.ExpireStats
	var roots []core.ExecutionId
	err := b.withReader(ctx, func(c *conn) error {
		rows, err := c.query(ctx, sqlPurgePending)
		if err != nil {
			return err
		}
		roots, err = b.scanIDs(ctx, rows)
		return err
	})
	if err != nil {
		return st, fmt.Errorf("sqlite: interrupted purges: %w", err)
	}
	for _, root := range roots {
		n, err := b.purgeRest(ctx, root)
		st.Items += n
		if err != nil {
			return st, err
		}
	}
	return st, nil
}

// forget drops ids from the writer's head cache (their rows were deleted).
func (c *headCache) forget(ids []core.ExecutionId) {
	for _, id := range ids {
		delete(c.committed, id)
		delete(c.batch, id)
	}
}

// forget drops ids from the Created-event cache.
func (c *createdCache) forget(ids []core.ExecutionId) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		if e, ok := c.m[id]; ok {
			c.bytes -= e.size
			delete(c.m, id)
		}
	}
}
