package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/stela-dev/stela/core"
)

// Deployment rows (store.DeploymentReadTx, store.DeploymentTx) in the
// tables of schema version 2; store.Service makes every decision. Reads run
// on the transaction's connection (a View's snapshot or the writer).

// each runs q and calls scan for every row.
func each(ctx context.Context, c *conn, q string, args []any, scan func(*sql.Rows) error) error {
	rows, err := c.query(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

const (
	depColumns        = `deployment_id, created_at, last_active_at, status, deployment_toml, obelisk_version, created_by, description, digest`
	sqlDeployment     = `SELECT ` + depColumns + ` FROM t_deployment WHERE deployment_id = ?`
	sqlCurrent        = `SELECT deployment_id, status FROM t_deployment WHERE status IN ('active', 'enqueued')`
	sqlDeploymentFile = `SELECT path, digest FROM t_deployment_file WHERE deployment_id = ? ORDER BY path`
	sqlComponents     = `SELECT component_name, component_type, component_digest FROM t_deployment_component
WHERE deployment_id = ? ORDER BY component_name`
	sqlComponentFiles = `SELECT component_name, path, role FROM t_deployment_component_file
WHERE deployment_id = ? ORDER BY component_name, path`
	sqlMetadata = `SELECT imports_json, exports_json, wit, wit_origin FROM t_component_metadata WHERE component_digest = ?`
	sqlSource   = `SELECT digest FROM t_component_source WHERE component_digest = ? AND frame_key = ? AND is_suffix = ?`
)

func scanDeployment(s interface{ Scan(...any) error }) (core.DeploymentRecord, error) {
	var id, createdAt, status, toml, version string
	var lastActive, createdBy, description sql.NullString
	var digest []byte
	if err := s.Scan(&id, &createdAt, &lastActive, &status, &toml, &version, &createdBy, &description, &digest); err != nil {
		return core.DeploymentRecord{}, err
	}
	r := core.DeploymentRecord{Status: core.DeploymentStatus(status), DeploymentToml: toml, ObeliskVersion: version}
	var err error
	if r.DeploymentID, err = core.ParseDeploymentId(id); err != nil {
		return r, err
	}
	if r.CreatedAt, err = parseTS(createdAt); err != nil {
		return r, err
	}
	if lastActive.Valid {
		ts, err := parseTS(lastActive.String)
		if err != nil {
			return r, err
		}
		r.LastActiveAt = &ts
	}
	if r.Digest.Digest, err = bytesDigest(digest); err != nil {
		return r, err
	}
	if createdBy.Valid {
		r.CreatedBy = &createdBy.String
	}
	if description.Valid {
		r.Description = &description.String
	}
	return r, nil
}

// details reads a deployment's files, components and component files.
func (t *readTx) details(d *core.StoredDeployment) error {
	id := []any{d.Record.DeploymentID.String()}
	d.Record.Files = []core.DeploymentFileRecord{}
	err := each(t.ctx, t.c, sqlDeploymentFile, id, func(rows *sql.Rows) error {
		var f core.DeploymentFileRecord
		var digest []byte
		if err := rows.Scan(&f.Path, &digest); err != nil {
			return err
		}
		var err error
		f.Digest.Digest, err = bytesDigest(digest)
		d.Record.Files = append(d.Record.Files, f)
		return err
	})
	if err != nil {
		return err
	}
	err = each(t.ctx, t.c, sqlComponents, id, func(rows *sql.Rows) error {
		c := core.DeploymentComponentRecord{DeploymentID: d.Record.DeploymentID}
		var digest []byte
		if err := rows.Scan(&c.ComponentName, &c.ComponentType, &digest); err != nil {
			return err
		}
		var err error
		c.ComponentDigest.Digest, err = bytesDigest(digest)
		d.Components = append(d.Components, c)
		return err
	})
	if err != nil {
		return err
	}
	return each(t.ctx, t.c, sqlComponentFiles, id, func(rows *sql.Rows) error {
		var f core.DeploymentComponentFileRecord
		err := rows.Scan(&f.ComponentName, &f.Path, &f.Role)
		d.ComponentFiles = append(d.ComponentFiles, f)
		return err
	})
}

// Deployment implements store.DeploymentReadTx.
func (t *readTx) Deployment(id core.DeploymentId) (core.StoredDeployment, error) {
	if err := t.check(); err != nil {
		return core.StoredDeployment{}, err
	}
	var ds []core.StoredDeployment
	if err := t.deployments(&ds, sqlDeployment, id.String()); err != nil {
		return core.StoredDeployment{}, fmt.Errorf("sqlite: deployment %s: %w", id, err)
	}
	if len(ds) == 0 {
		return core.StoredDeployment{}, fmt.Errorf("sqlite: deployment %s: %w", id, core.ErrNotFound)
	}
	if err := t.details(&ds[0]); err != nil {
		return core.StoredDeployment{}, fmt.Errorf("sqlite: deployment %s: %w", id, err)
	}
	return ds[0], nil
}

func (t *readTx) deployments(out *[]core.StoredDeployment, q string, args ...any) error {
	return each(t.ctx, t.c, q, args, func(rows *sql.Rows) error {
		r, err := scanDeployment(rows)
		*out = append(*out, core.StoredDeployment{Record: r})
		return err
	})
}

// CurrentDeployments implements store.DeploymentReadTx (the unique partial
// indexes keep at most one of each).
func (t *readTx) CurrentDeployments() (active, enqueued *core.DeploymentId, err error) {
	if err := t.check(); err != nil {
		return nil, nil, err
	}
	err = each(t.ctx, t.c, sqlCurrent, nil, func(rows *sql.Rows) error {
		var id, status string
		if err := rows.Scan(&id, &status); err != nil {
			return err
		}
		dep, err := core.ParseDeploymentId(id)
		if status == string(core.DeploymentActive) {
			active = &dep
		} else {
			enqueued = &dep
		}
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("sqlite: current deployments: %w", err)
	}
	return active, enqueued, nil
}

// Deployments implements store.DeploymentReadTx: a range of the primary key.
func (t *readTx) Deployments(p core.Pagination[*core.DeploymentId], _, withFiles bool) ([]core.StoredDeployment, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	q := `SELECT ` + depColumns + ` FROM t_deployment`
	var args []any
	if p.Cursor != nil {
		q += ` WHERE deployment_id ` + p.Rel() + ` ?`
		args = append(args, p.Cursor.String())
	}
	order := "ASC"
	if p.IsDesc() {
		order = "DESC"
	}
	q += ` ORDER BY deployment_id ` + order + ` LIMIT ?`
	var out []core.StoredDeployment
	if err := t.deployments(&out, q, append(args, int64(p.Length))...); err != nil {
		return nil, fmt.Errorf("sqlite: list deployments: %w", err)
	}
	for i := range out {
		if !withFiles {
			break
		}
		if err := t.details(&out[i]); err != nil {
			return nil, fmt.Errorf("sqlite: list deployments: %w", err)
		}
	}
	return out, nil
}

// ComponentMetadata implements store.DeploymentReadTx.
func (t *readTx) ComponentMetadata(digests []core.ComponentDigest) (map[core.ComponentDigest]core.ComponentMetadataRecord, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	out := map[core.ComponentDigest]core.ComponentMetadataRecord{}
	for _, d := range digests {
		err := each(t.ctx, t.c, sqlMetadata, []any{digestBytes(d.Digest)}, func(rows *sql.Rows) error {
			m := core.ComponentMetadataRecord{ComponentDigest: d}
			var imports, exports string
			if err := rows.Scan(&imports, &exports, &m.Wit, &m.WitOrigin); err != nil {
				return err
			}
			if err := json.Unmarshal([]byte(imports), &m.Imports); err != nil {
				return fmt.Errorf("imports: %w", err)
			}
			if err := json.Unmarshal([]byte(exports), &m.Exports); err != nil {
				return fmt.Errorf("exports: %w", err)
			}
			out[d] = m
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("sqlite: component metadata %s: %w", d, err)
		}
	}
	return out, nil
}

// SourceMappings implements store.DeploymentReadTx: one primary-key lookup
// per key.
func (t *readTx) SourceMappings(component core.ComponentDigest, keys []core.SourceKey) ([]core.SourceMapping, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	var out []core.SourceMapping
	for _, k := range keys {
		err := each(t.ctx, t.c, sqlSource, []any{digestBytes(component.Digest), k.FrameKey, boolInt(k.IsSuffix)}, func(rows *sql.Rows) error {
			var raw []byte
			if err := rows.Scan(&raw); err != nil {
				return err
			}
			m := core.SourceMapping{Component: component, Key: k}
			var err error
			m.Digest.Digest, err = bytesDigest(raw)
			out = append(out, m)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("sqlite: source mapping %q of %s: %w", k.FrameKey, component, err)
		}
	}
	return out, nil
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func nullString(p *string) any {
	if p == nil {
		return nil
	}
	return *p
}

const (
	sqlInsertDeployment = `INSERT INTO t_deployment (deployment_id, created_at, last_active_at, status, deployment_toml,
obelisk_version, created_by, description, digest) VALUES (?, ?, NULL, ?, ?, ?, ?, ?, ?)`
	sqlInsertFile          = `INSERT INTO t_deployment_file (deployment_id, path, digest) VALUES (?, ?, ?)`
	sqlInsertComponent     = `INSERT INTO t_deployment_component (deployment_id, component_name, component_type, component_digest) VALUES (?, ?, ?, ?)`
	sqlInsertComponentFile = `INSERT INTO t_deployment_component_file (deployment_id, component_name, path, role) VALUES (?, ?, ?, ?)`
	sqlInsertMetadata      = `INSERT INTO t_component_metadata (component_digest, imports_json, exports_json, wit, wit_origin) VALUES (?, ?, ?, ?, ?)`
	sqlSetStatus           = `UPDATE t_deployment SET status = ?, last_active_at = coalesce(?, last_active_at) WHERE deployment_id = ?`
	sqlPutSource           = `INSERT INTO t_component_source (component_digest, frame_key, is_suffix, digest) VALUES (?, ?, ?, ?)
ON CONFLICT (component_digest, frame_key, is_suffix) DO UPDATE SET digest = excluded.digest`
)

// execAll runs each statement of stmts (query, args) in order, failing the
// transaction on the first error.
func (t *writeTx) execAll(what string, stmts ...[]any) error {
	if err := t.check(); err != nil {
		return err
	}
	for _, s := range stmts {
		if err := t.exec(s[0].(string), s[1:]...); err != nil {
			return t.fail(writeErr(err, "%s", what))
		}
	}
	return nil
}

// InsertDeployment implements store.DeploymentTx; a duplicate id is a
// primary-key violation (core.ErrConflict).
func (t *writeTx) InsertDeployment(d core.StoredDeployment) error {
	r, dep := d.Record, d.Record.DeploymentID.String()
	stmts := [][]any{{sqlInsertDeployment, dep, tsText(r.CreatedAt), string(r.Status), r.DeploymentToml, r.ObeliskVersion,
		nullString(r.CreatedBy), nullString(r.Description), digestBytes(r.Digest.Digest)}}
	for _, f := range r.Files {
		stmts = append(stmts, []any{sqlInsertFile, dep, f.Path, digestBytes(f.Digest.Digest)})
	}
	for _, c := range d.Components {
		stmts = append(stmts, componentInsert(c))
	}
	for _, f := range d.ComponentFiles {
		stmts = append(stmts, []any{sqlInsertComponentFile, dep, f.ComponentName, f.Path, string(f.Role)})
	}
	return t.execAll("insert deployment "+dep, stmts...)
}

func componentInsert(c core.DeploymentComponentRecord) []any {
	return []any{sqlInsertComponent, c.DeploymentID.String(), c.ComponentName, string(c.ComponentType), digestBytes(c.ComponentDigest.Digest)}
}

// AddDeploymentComponents implements store.DeploymentTx.
func (t *writeTx) AddDeploymentComponents(id core.DeploymentId, records []core.DeploymentComponentRecord) error {
	stmts := make([][]any, len(records))
	for i, c := range records {
		stmts[i] = componentInsert(c)
	}
	return t.execAll("insert components of "+id.String(), stmts...)
}

// SetDeploymentStatus implements store.DeploymentTx.
func (t *writeTx) SetDeploymentStatus(id core.DeploymentId, status core.DeploymentStatus, lastActiveAt *core.Timestamp) error {
	var la any
	if lastActiveAt != nil {
		la = tsText(*lastActiveAt)
	}
	return t.execAll("set status of deployment "+id.String(), []any{sqlSetStatus, string(status), la, id.String()})
}

// InsertComponentMetadata implements store.DeploymentTx.
func (t *writeTx) InsertComponentMetadata(records []core.ComponentMetadataRecord) error {
	stmts := make([][]any, len(records))
	for i, r := range records {
		imports, err := core.MarshalJSON(orEmpty(r.Imports))
		if err != nil {
			return t.fail(fmt.Errorf("sqlite: encode imports of %s: %w", r.ComponentDigest, err))
		}
		exports, err := core.MarshalJSON(orEmpty(r.Exports))
		if err != nil {
			return t.fail(fmt.Errorf("sqlite: encode exports of %s: %w", r.ComponentDigest, err))
		}
		stmts[i] = []any{sqlInsertMetadata, digestBytes(r.ComponentDigest.Digest), string(imports), string(exports), r.Wit, int64(r.WitOrigin)}
	}
	return t.execAll("insert component metadata", stmts...)
}

func orEmpty(fs []core.PersistedFunctionMetadata) []core.PersistedFunctionMetadata {
	if fs == nil {
		return []core.PersistedFunctionMetadata{}
	}
	return fs
}

// PutSourceMapping implements store.DeploymentTx.
func (t *writeTx) PutSourceMapping(m core.SourceMapping) error {
	return t.execAll(fmt.Sprintf("upsert source mapping %q of %s", m.Key.FrameKey, m.Component),
		[]any{sqlPutSource, digestBytes(m.Component.Digest), m.Key.FrameKey, boolInt(m.Key.IsSuffix), digestBytes(m.Digest.Digest)})
}

// sqlCountStates counts one deployment's executions per bucket (the
// predicates of core.StateFilter, with now = ?2), top-level only unless ?3,
// in one range scan of idx_state_deployment.
const sqlCountStates = `SELECT
	coalesce(sum(state = 'locked' AND lifecycle = 'active'), 0),
	coalesce(sum(state = 'pending_at' AND lifecycle = 'active' AND at <= ?2), 0),
	coalesce(sum(state = 'pending_at' AND lifecycle = 'active' AND at > ?2), 0),
	coalesce(sum(state = 'blocked_by_join_set' AND lifecycle = 'active'), 0),
	coalesce(sum(lifecycle = 'paused'), 0),
	coalesce(sum(lifecycle = 'cancelling'), 0),
	coalesce(sum(state = 'finished' AND result_kind = '"ok"'), 0),
	coalesce(sum(state = 'finished' AND result_kind = '{"err":"error"}'), 0),
	coalesce(sum(state = 'finished' AND result_kind IS NOT NULL AND result_kind NOT IN ('"ok"', '{"err":"error"}')), 0)
FROM t_state WHERE deployment_id = ?1 AND is_top_level >= ?3`

// CountDeploymentExecutions implements store.Queries.
func (b *Backend) CountDeploymentExecutions(ctx context.Context, states []core.DeploymentState, now core.Timestamp, includeDerived bool) error {
	minTopLevel := boolInt(!includeDerived)
	return b.withReader(ctx, func(c *conn) error {
		for i := range states {
			s := &states[i]
			err := each(ctx, c, sqlCountStates, []any{s.DeploymentID.String(), tsText(now), minTopLevel}, func(rows *sql.Rows) error {
				return rows.Scan(&s.Locked, &s.Pending, &s.Scheduled, &s.Blocked, &s.Paused, &s.Cancelling,
					&s.FinishedOk, &s.FinishedError, &s.FinishedExecutionFailure)
			})
			if err != nil {
				return fmt.Errorf("sqlite: count executions of %s: %w", s.DeploymentID, err)
			}
		}
		return nil
	})
}

// sqlReferenced finds a deployment file or a source mapping referring to a
// blob (idx_deployment_file_digest, idx_component_source_digest).
const sqlReferenced = `SELECT EXISTS (SELECT 1 FROM t_deployment_file WHERE digest = ?1)
	OR EXISTS (SELECT 1 FROM t_component_source WHERE digest = ?1)`

// BlobReferences implements store.Queries. Writes are atomic, so no
// reference is ever in flight.
func (b *Backend) BlobReferences(ctx context.Context, candidates []core.ContentDigest, _ time.Duration) (map[core.ContentDigest]bool, error) {
	refs := map[core.ContentDigest]bool{}
	err := b.withReader(ctx, func(c *conn) error {
		for _, d := range candidates {
			err := each(ctx, c, sqlReferenced, []any{digestBytes(d.Digest)}, func(rows *sql.Rows) error {
				var ok bool
				err := rows.Scan(&ok)
				refs[d] = ok
				return err
			})
			if err != nil {
				return fmt.Errorf("sqlite: references of %s: %w", d, err)
			}
		}
		return nil
	})
	return refs, err
}
