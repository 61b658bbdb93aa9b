package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/stela-dev/stela/cas"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
)

// Deployments, component metadata and source mappings (core.DeploymentStore,
// docs/spec/semantics.md §6.5–6.7). The tables are created on first use (CREATE … IF NOT
// EXISTS, see deploymentSchema); blob bytes live in the CAS (Options.Cas).

// deploymentState is the per-backend state of this file.
type deploymentState struct {
	schemaMu   sync.Mutex
	schemaDone bool
	casOnce    sync.Once
	cas        core.Cas
	casErr     error
}

// deploymentSchema is created lazily by ensureDeployments. Obelisk's
// unique partial indexes on a constant keep at most one active and one
// enqueued deployment. idx_state_deployment serves list_deployment_states'
// per-deployment counts (one range scan per deployment and kind).
const deploymentSchema = `
CREATE TABLE IF NOT EXISTS t_deployment (
	deployment_id   TEXT NOT NULL PRIMARY KEY,
	created_at      TEXT NOT NULL,
	last_active_at  TEXT,
	status          TEXT NOT NULL CHECK (status IN ('inactive', 'enqueued', 'active')),
	deployment_toml TEXT NOT NULL,
	obelisk_version TEXT NOT NULL,
	created_by      TEXT,
	description     TEXT,
	digest          BLOB NOT NULL
) STRICT, WITHOUT ROWID;
CREATE UNIQUE INDEX IF NOT EXISTS idx_deployment_active ON t_deployment ((1)) WHERE status = 'active';
CREATE UNIQUE INDEX IF NOT EXISTS idx_deployment_enqueued ON t_deployment ((1)) WHERE status = 'enqueued';

CREATE TABLE IF NOT EXISTS t_component_metadata (
	component_digest BLOB    NOT NULL PRIMARY KEY,
	imports_json     TEXT    NOT NULL,
	exports_json     TEXT    NOT NULL,
	wit              TEXT    NOT NULL,
	wit_origin       INTEGER NOT NULL CHECK (wit_origin IN (1, 2, 3))
) STRICT, WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS t_deployment_component (
	deployment_id    TEXT NOT NULL,
	component_name   TEXT NOT NULL,
	component_type   TEXT NOT NULL,
	component_digest BLOB NOT NULL,
	PRIMARY KEY (deployment_id, component_name)
) STRICT, WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS idx_deployment_component_digest ON t_deployment_component (deployment_id, component_digest);

CREATE TABLE IF NOT EXISTS t_deployment_file (
	deployment_id TEXT NOT NULL,
	path          TEXT NOT NULL,
	digest        BLOB NOT NULL,
	PRIMARY KEY (deployment_id, path)
) STRICT, WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS idx_deployment_file_digest ON t_deployment_file (digest);

CREATE TABLE IF NOT EXISTS t_deployment_component_file (
	deployment_id  TEXT NOT NULL,
	component_name TEXT NOT NULL,
	path           TEXT NOT NULL,
	role           TEXT NOT NULL CHECK (role IN ('wasm_component', 'exec_program', 'js_entrypoint', 'js_module', 'backtrace_source', 'wit_source')),
	PRIMARY KEY (deployment_id, component_name, path)
) STRICT, WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS t_component_source (
	component_digest BLOB    NOT NULL,
	frame_key        TEXT    NOT NULL,
	is_suffix        INTEGER NOT NULL,
	digest           BLOB    NOT NULL,
	PRIMARY KEY (component_digest, frame_key, is_suffix)
) STRICT, WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS idx_component_source_digest ON t_component_source (digest);

CREATE INDEX IF NOT EXISTS idx_state_deployment ON t_state (deployment_id, is_top_level, state, lifecycle, at, result_kind);
`

// ensureDeployments creates the deployment tables, once per backend (a
// failure is retried by the next call).
func (b *Backend) ensureDeployments(ctx context.Context) error {
	b.deps.schemaMu.Lock()
	defer b.deps.schemaMu.Unlock()
	if b.deps.schemaDone {
		return nil
	}
	err := b.write(ctx, func(tx *writeTx) error {
		for _, stmt := range strings.Split(deploymentSchema, ";") {
			if strings.TrimSpace(stmt) == "" {
				continue
			}
			if _, err := tx.c.c.ExecContext(tx.ctx, stmt); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: create deployment tables: %w", err)
	}
	b.deps.schemaDone = true
	return nil
}

// DefaultCasDir is the directory of the default CAS, relative to the
// database file's directory (the layout of `stela dev`'s data directory).
const DefaultCasDir = "blobs"

// Cas returns the CAS deployment files and source mappings refer to:
// Options.Cas, or a cas.Dir in DefaultCasDir beside the database file,
// created on first use. It returns nil if that directory cannot be created
// (the deployment methods report the error).
func (b *Backend) Cas() core.Cas {
	c, _ := b.casStore()
	return c
}

func (b *Backend) casStore() (core.Cas, error) {
	b.deps.casOnce.Do(func() {
		if b.opts.Cas != nil {
			b.deps.cas = b.opts.Cas
			return
		}
		dir := filepath.Join(filepath.Dir(b.path), DefaultCasDir)
		d, err := cas.NewDir(dir)
		if err != nil {
			b.deps.casErr = fmt.Errorf("sqlite: default CAS %s: %w", dir, err)
			return
		}
		b.deps.cas = d
	})
	return b.deps.cas, b.deps.casErr
}

func validationf(format string, args ...any) error {
	return &core.ValidationError{Reason: fmt.Sprintf(format, args...)}
}

// depWrite runs fn on the writer after making sure the tables exist.
func (b *Backend) depWrite(ctx context.Context, fn func(tx *writeTx) error) error {
	if err := b.ensureDeployments(ctx); err != nil {
		return err
	}
	return b.write(ctx, fn)
}

// depRead runs fn on a reader after making sure the tables exist.
func (b *Backend) depRead(ctx context.Context, fn func(c *conn) error) error {
	if err := b.ensureDeployments(ctx); err != nil {
		return err
	}
	return b.withReader(ctx, fn)
}

// --- component metadata --------------------------------------------------------

const sqlInsertMetadata = `INSERT INTO t_component_metadata (component_digest, imports_json, exports_json, wit, wit_origin)
VALUES (?, ?, ?, ?, ?) ON CONFLICT (component_digest) DO NOTHING`

func insertMetadata(tx *writeTx, records []core.ComponentMetadataRecord) error {
	for _, r := range records {
		imports, err := core.MarshalJSON(orEmpty(r.Imports))
		if err != nil {
			return fmt.Errorf("sqlite: encode imports of %s: %w", r.ComponentDigest, err)
		}
		exports, err := core.MarshalJSON(orEmpty(r.Exports))
		if err != nil {
			return fmt.Errorf("sqlite: encode exports of %s: %w", r.ComponentDigest, err)
		}
		if err := tx.c.exec(tx.ctx, sqlInsertMetadata, digestBytes(r.ComponentDigest.Digest), string(imports), string(exports),
			r.Wit, int64(r.WitOrigin)); err != nil {
			return writeErr(err, "insert component metadata %s", r.ComponentDigest)
		}
	}
	return nil
}

func orEmpty(fs []core.PersistedFunctionMetadata) []core.PersistedFunctionMetadata {
	if fs == nil {
		return []core.PersistedFunctionMetadata{}
	}
	return fs
}

// UpsertComponentMetadata implements core.DeploymentStore: insert-if-absent
// by digest (first write wins).
func (b *Backend) UpsertComponentMetadata(ctx context.Context, records []core.ComponentMetadataRecord) error {
	for _, r := range records {
		if err := r.Validate(); err != nil {
			return err
		}
	}
	return b.depWrite(ctx, func(tx *writeTx) error { return insertMetadata(tx, records) })
}

const (
	sqlDeploymentExists = `SELECT 1 FROM t_deployment WHERE deployment_id = ?`
	sqlMetadataExists   = `SELECT 1 FROM t_component_metadata WHERE component_digest = ?`
	sqlInsertComponent  = `INSERT INTO t_deployment_component (deployment_id, component_name, component_type, component_digest)
VALUES (?, ?, ?, ?) ON CONFLICT (deployment_id, component_name) DO NOTHING`
)

// exists runs a `SELECT 1 …` query.
func exists(ctx context.Context, c *conn, q string, args ...any) (bool, error) {
	rows, err := c.query(ctx, q, args...)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	found := rows.Next()
	return found, rows.Err()
}

// insertComponents writes component bindings insert-if-absent, after
// checking that each has metadata (the foreign key of Obelisk's schema).
func insertComponents(tx *writeTx, dep core.DeploymentId, records []core.DeploymentComponentRecord) error {
	for _, r := range records {
		if r.DeploymentID != dep {
			return validationf("component %q belongs to deployment %s, not %s", r.ComponentName, r.DeploymentID, dep)
		}
		ok, err := exists(tx.ctx, tx.c, sqlMetadataExists, digestBytes(r.ComponentDigest.Digest))
		if err != nil {
			return fmt.Errorf("sqlite: metadata of %s: %w", r.ComponentDigest, err)
		}
		if !ok {
			return validationf("component %q: no metadata for digest %s", r.ComponentName, r.ComponentDigest)
		}
		if err := tx.c.exec(tx.ctx, sqlInsertComponent, dep.String(), r.ComponentName, string(r.ComponentType),
			digestBytes(r.ComponentDigest.Digest)); err != nil {
			return writeErr(err, "insert component %q of %s", r.ComponentName, dep)
		}
	}
	return nil
}

// InsertDeploymentComponents implements core.DeploymentStore:
// insert-if-absent by (deployment, name). core.ErrNotFound if the deployment
// does not exist, *core.ValidationError for a component without metadata.
func (b *Backend) InsertDeploymentComponents(ctx context.Context, dep core.DeploymentId, records []core.DeploymentComponentRecord) error {
	return b.depWrite(ctx, func(tx *writeTx) error {
		ok, err := exists(tx.ctx, tx.c, sqlDeploymentExists, dep.String())
		if err != nil {
			return fmt.Errorf("sqlite: deployment %s: %w", dep, err)
		}
		if !ok {
			return fmt.Errorf("sqlite: insert components of deployment %s: %w", dep, core.ErrNotFound)
		}
		return insertComponents(tx, dep, records)
	})
}

const (
	sqlInsertDeployment = `INSERT INTO t_deployment (deployment_id, created_at, last_active_at, status, deployment_toml,
obelisk_version, created_by, description, digest) VALUES (?, ?, NULL, 'inactive', ?, ?, ?, ?, ?)`
	sqlInsertFile          = `INSERT INTO t_deployment_file (deployment_id, path, digest) VALUES (?, ?, ?)`
	sqlComponentExists     = `SELECT 1 FROM t_deployment_component WHERE deployment_id = ? AND component_name = ?`
	sqlFileExists          = `SELECT 1 FROM t_deployment_file WHERE deployment_id = ? AND path = ?`
	sqlInsertComponentFile = `INSERT INTO t_deployment_component_file (deployment_id, component_name, path, role) VALUES (?, ?, ?, ?)`
)

func nullString(p *string) any {
	if p == nil {
		return nil
	}
	return *p
}

// InsertDeploymentWithComponents implements core.DeploymentStore in one
// transaction: a duplicate deployment id, file path or component file is
// core.ErrConflict; a component without metadata, or a component file whose
// component or file is not in the deployment, is a *core.ValidationError.
func (b *Backend) InsertDeploymentWithComponents(ctx context.Context, record core.DeploymentRecord, metadata []core.ComponentMetadataRecord, components []core.DeploymentComponentRecord, files []core.DeploymentComponentFileRecord) error {
	if record.Status != core.DeploymentInactive || record.LastActiveAt != nil {
		return validationf("a new deployment must be inactive and never active")
	}
	for _, m := range metadata {
		if err := m.Validate(); err != nil {
			return err
		}
	}
	for _, f := range files {
		if !f.Role.Valid() {
			return validationf("component file %q of %q: invalid role %q", f.Path, f.ComponentName, f.Role)
		}
	}
	dep := record.DeploymentID
	return b.depWrite(ctx, func(tx *writeTx) error {
		if err := tx.c.exec(tx.ctx, sqlInsertDeployment, dep.String(), tsText(record.CreatedAt), record.DeploymentToml,
			record.ObeliskVersion, nullString(record.CreatedBy), nullString(record.Description),
			digestBytes(record.Digest.Digest)); err != nil {
			return writeErr(err, "insert deployment %s", dep)
		}
		for _, f := range record.Files {
			if err := tx.c.exec(tx.ctx, sqlInsertFile, dep.String(), f.Path, digestBytes(f.Digest.Digest)); err != nil {
				return writeErr(err, "insert file %q of deployment %s", f.Path, dep)
			}
		}
		if err := insertMetadata(tx, metadata); err != nil {
			return err
		}
		if err := insertComponents(tx, dep, components); err != nil {
			return err
		}
		for _, f := range files {
			ok, err := exists(tx.ctx, tx.c, sqlComponentExists, dep.String(), f.ComponentName)
			if err != nil {
				return fmt.Errorf("sqlite: component %q of %s: %w", f.ComponentName, dep, err)
			}
			if !ok {
				return validationf("component file %q: no component %q in deployment %s", f.Path, f.ComponentName, dep)
			}
			if ok, err = exists(tx.ctx, tx.c, sqlFileExists, dep.String(), f.Path); err != nil {
				return fmt.Errorf("sqlite: file %q of %s: %w", f.Path, dep, err)
			}
			if !ok {
				return validationf("component file %q of %q is not a file of deployment %s", f.Path, f.ComponentName, dep)
			}
			if err := tx.c.exec(tx.ctx, sqlInsertComponentFile, dep.String(), f.ComponentName, f.Path, string(f.Role)); err != nil {
				return writeErr(err, "insert component file %q of %q in %s", f.Path, f.ComponentName, dep)
			}
		}
		return nil
	})
}

// --- components -------------------------------------------------------------------

const (
	sqlListComponents = `SELECT c.component_name, c.component_type, c.component_digest, m.imports_json, m.exports_json, m.wit
FROM t_deployment_component c JOIN t_component_metadata m ON m.component_digest = c.component_digest
WHERE c.deployment_id = ? ORDER BY c.component_type, c.component_name`
	sqlListComponentFiles = `SELECT cf.component_name, cf.path, cf.role, f.digest
FROM t_deployment_component_file cf JOIN t_deployment_file f ON f.deployment_id = cf.deployment_id AND f.path = cf.path
WHERE cf.deployment_id = ? ORDER BY cf.component_name, cf.path`
	sqlComponentWit = `SELECT m.wit FROM t_deployment_component c JOIN t_component_metadata m ON m.component_digest = c.component_digest
WHERE c.deployment_id = ? AND c.component_digest = ? LIMIT 1`
)

// ListDeploymentComponents implements core.DeploymentStore: components with
// metadata by type then name, each with its files whose blob is in the CAS.
func (b *Backend) ListDeploymentComponents(ctx context.Context, dep core.DeploymentId) ([]core.DeploymentComponentDetail, error) {
	type compFile struct {
		path   string
		role   core.ComponentFileRole
		digest core.ContentDigest
	}
	out := []core.DeploymentComponentDetail{}
	filesOf := map[string][]compFile{}
	err := b.depRead(ctx, func(c *conn) error {
		if _, err := c.c.ExecContext(ctx, "BEGIN"); err != nil {
			return err
		}
		defer c.c.ExecContext(context.Background(), "ROLLBACK")
		rows, err := c.query(ctx, sqlListComponents, dep.String())
		if err != nil {
			return err
		}
		for rows.Next() {
			var name, typ, imports, exports, wit string
			var digest []byte
			if err := rows.Scan(&name, &typ, &digest, &imports, &exports, &wit); err != nil {
				rows.Close()
				return err
			}
			d, err := bytesDigest(digest)
			if err != nil {
				rows.Close()
				return err
			}
			cd := core.DeploymentComponentDetail{ComponentID: core.ComponentId{ComponentType: core.ComponentType(typ), Name: name,
				ComponentDigest: core.ComponentDigest{Digest: d}}, Wit: wit}
			if err := json.Unmarshal([]byte(imports), &cd.Imports); err != nil {
				rows.Close()
				return fmt.Errorf("decode imports of %q: %w", name, err)
			}
			if err := json.Unmarshal([]byte(exports), &cd.Exports); err != nil {
				rows.Close()
				return fmt.Errorf("decode exports of %q: %w", name, err)
			}
			out = append(out, cd)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows, err = c.query(ctx, sqlListComponentFiles, dep.String())
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var name, path, role string
			var digest []byte
			if err := rows.Scan(&name, &path, &role, &digest); err != nil {
				return err
			}
			d, err := bytesDigest(digest)
			if err != nil {
				return err
			}
			filesOf[name] = append(filesOf[name], compFile{path, core.ComponentFileRole(role), core.ContentDigest{Digest: d}})
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: list components of %s: %w", dep, err)
	}
	for i := range out {
		out[i].Files = []core.DeploymentComponentFileDetail{}
		for _, f := range filesOf[out[i].ComponentID.Name] {
			size, present, err := b.blobSize(ctx, f.digest)
			if err != nil {
				return nil, err
			}
			if present {
				out[i].Files = append(out[i].Files, core.DeploymentComponentFileDetail{
					File: core.DeploymentFileRecord{Path: f.path, Digest: f.digest, Size: uint64(size)}, Role: f.role})
			}
		}
	}
	return out, nil
}

// GetDeploymentComponentWit implements core.DeploymentStore.
func (b *Backend) GetDeploymentComponentWit(ctx context.Context, dep core.DeploymentId, digest core.ComponentDigest) (string, error) {
	var wit string
	found := false
	err := b.depRead(ctx, func(c *conn) error {
		rows, err := c.query(ctx, sqlComponentWit, dep.String(), digestBytes(digest.Digest))
		if err != nil {
			return err
		}
		defer rows.Close()
		if rows.Next() {
			found = true
			if err := rows.Scan(&wit); err != nil {
				return err
			}
		}
		return rows.Err()
	})
	if err != nil {
		return "", fmt.Errorf("sqlite: wit of %s in %s: %w", digest, dep, err)
	}
	if !found {
		return "", fmt.Errorf("sqlite: wit of %s in deployment %s: %w", digest, dep, core.ErrNotFound)
	}
	return wit, nil
}

// --- deployments ----------------------------------------------------------------------

const depColumns = `deployment_id, created_at, last_active_at, status, deployment_toml, obelisk_version, created_by, description, digest`

func scanDeployment(s interface{ Scan(...any) error }) (core.DeploymentRecord, error) {
	var id, createdAt, status, toml, version string
	var lastActive, createdBy, description sql.NullString
	var digest []byte
	if err := s.Scan(&id, &createdAt, &lastActive, &status, &toml, &version, &createdBy, &description, &digest); err != nil {
		return core.DeploymentRecord{}, err
	}
	var r core.DeploymentRecord
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
	d, err := bytesDigest(digest)
	if err != nil {
		return r, err
	}
	r.Digest = core.ContentDigest{Digest: d}
	r.Status = core.DeploymentStatus(status)
	r.DeploymentToml = toml
	r.ObeliskVersion = version
	if createdBy.Valid {
		r.CreatedBy = &createdBy.String
	}
	if description.Valid {
		r.Description = &description.String
	}
	return r, nil
}

const (
	sqlFilesOf = `SELECT path, digest FROM t_deployment_file WHERE deployment_id = ? ORDER BY path, digest`
)

// filesOf reads a deployment's files (no sizes), by path.
func filesOf(ctx context.Context, c *conn, dep string) ([]core.DeploymentFileRecord, error) {
	rows, err := c.query(ctx, sqlFilesOf, dep)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []core.DeploymentFileRecord{}
	for rows.Next() {
		var path string
		var digest []byte
		if err := rows.Scan(&path, &digest); err != nil {
			return nil, err
		}
		d, err := bytesDigest(digest)
		if err != nil {
			return nil, err
		}
		out = append(out, core.DeploymentFileRecord{Path: path, Digest: core.ContentDigest{Digest: d}})
	}
	return out, rows.Err()
}

// readDeployments runs q (selecting depColumns) in one read transaction and
// returns the records with their files, sizes completed from the CAS.
func (b *Backend) readDeployments(ctx context.Context, what string, withFiles bool, q string, args ...any) ([]core.DeploymentRecord, error) {
	var out []core.DeploymentRecord
	err := b.depRead(ctx, func(c *conn) error {
		if _, err := c.c.ExecContext(ctx, "BEGIN"); err != nil {
			return err
		}
		defer c.c.ExecContext(context.Background(), "ROLLBACK")
		rows, err := c.query(ctx, q, args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			r, err := scanDeployment(rows)
			if err != nil {
				rows.Close()
				return err
			}
			out = append(out, r)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if !withFiles {
			return nil
		}
		for i := range out {
			if out[i].Files, err = filesOf(ctx, c, out[i].DeploymentID.String()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", what, err)
	}
	if withFiles {
		for i := range out {
			if out[i].Files, err = b.withSizes(ctx, out[i].Files); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

func (b *Backend) oneDeployment(ctx context.Context, what, q string, args ...any) (core.DeploymentRecord, error) {
	rs, err := b.readDeployments(ctx, what, true, q, args...)
	if err != nil {
		return core.DeploymentRecord{}, err
	}
	if len(rs) == 0 {
		return core.DeploymentRecord{}, fmt.Errorf("sqlite: %s: %w", what, core.ErrNotFound)
	}
	return rs[0], nil
}

// GetDeployment implements core.DeploymentStore.
func (b *Backend) GetDeployment(ctx context.Context, dep core.DeploymentId) (core.DeploymentRecord, error) {
	return b.oneDeployment(ctx, "deployment "+dep.String(),
		`SELECT `+depColumns+` FROM t_deployment WHERE deployment_id = ?`, dep.String())
}

// GetActiveDeployment implements core.DeploymentStore.
func (b *Backend) GetActiveDeployment(ctx context.Context) (core.DeploymentRecord, error) {
	return b.oneDeployment(ctx, "active deployment", `SELECT `+depColumns+` FROM t_deployment WHERE status = 'active'`)
}

// GetCurrentDeployment implements core.DeploymentStore: the enqueued
// deployment, else the active one.
func (b *Backend) GetCurrentDeployment(ctx context.Context) (core.DeploymentRecord, error) {
	return b.oneDeployment(ctx, "current deployment", `SELECT `+depColumns+` FROM t_deployment
WHERE status IN ('enqueued', 'active') ORDER BY status = 'enqueued' DESC LIMIT 1`)
}

// pageQuery returns the SELECT of a deployment page (before reversal of
// NewerThan pages).
func pageQuery(columns string, p core.Pagination[*core.DeploymentId]) (string, []any) {
	q := `SELECT ` + columns + ` FROM t_deployment`
	var args []any
	if p.Cursor != nil {
		q += ` WHERE deployment_id ` + p.Rel() + ` ?`
		args = append(args, p.Cursor.String())
	}
	if p.IsDesc() {
		q += ` ORDER BY deployment_id DESC`
	} else {
		q += ` ORDER BY deployment_id ASC`
	}
	q += ` LIMIT ?`
	return q, append(args, int64(p.Length))
}

// ListDeployments implements core.DeploymentStore: newest first, with TOML
// and files.
func (b *Backend) ListDeployments(ctx context.Context, p core.Pagination[*core.DeploymentId]) ([]core.DeploymentRecord, error) {
	q, args := pageQuery(depColumns, p)
	rs, err := b.readDeployments(ctx, "list deployments", true, q, args...)
	if err != nil {
		return nil, err
	}
	if !p.IsDesc() {
		slices.Reverse(rs)
	}
	if rs == nil {
		rs = []core.DeploymentRecord{}
	}
	return rs, nil
}

// sqlCountStates counts one deployment's executions per bucket (the
// predicates of core.StateFilter, with now = ?2), top-level only unless ?3.
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

// ListDeploymentStates implements core.DeploymentStore. Each deployment's
// counts are one range scan of idx_state_deployment; they follow every
// execution's current deployment (docs/spec/semantics.md §8 item 21).
func (b *Backend) ListDeploymentStates(ctx context.Context, currentTime core.Timestamp, p core.Pagination[*core.DeploymentId], includeToml bool, counts core.DeploymentExecutionCounts) ([]core.DeploymentState, error) {
	q, args := pageQuery(depColumns, p)
	rs, err := b.readDeployments(ctx, "list deployment states", false, q, args...)
	if err != nil {
		return nil, err
	}
	if !p.IsDesc() {
		slices.Reverse(rs)
	}
	out := make([]core.DeploymentState, len(rs))
	for i, r := range rs {
		out[i] = core.DeploymentState{DeploymentID: r.DeploymentID, Description: r.Description, Digest: r.Digest,
			CreatedAt: r.CreatedAt, LastActiveAt: r.LastActiveAt, Status: r.Status}
		if includeToml {
			toml := r.DeploymentToml
			out[i].DeploymentToml = &toml
		}
	}
	if counts.Skip || len(out) == 0 {
		return out, nil
	}
	minTopLevel := 1
	if counts.IncludeDerived {
		minTopLevel = 0
	}
	now := tsText(currentTime)
	err = b.withReader(ctx, func(c *conn) error {
		for i := range out {
			s := &out[i]
			rows, err := c.query(ctx, sqlCountStates, s.DeploymentID.String(), now, minTopLevel)
			if err != nil {
				return err
			}
			if rows.Next() {
				err = rows.Scan(&s.Locked, &s.Pending, &s.Scheduled, &s.Blocked, &s.Paused, &s.Cancelling,
					&s.FinishedOk, &s.FinishedError, &s.FinishedExecutionFailure)
			}
			if cerr := rows.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: count executions per deployment: %w", err)
	}
	return out, nil
}

// ActivateDeployment implements core.DeploymentStore: every active or
// enqueued deployment becomes inactive and the target active.
func (b *Backend) ActivateDeployment(ctx context.Context, dep core.DeploymentId, now core.Timestamp) error {
	return b.depWrite(ctx, func(tx *writeTx) error {
		ok, err := exists(tx.ctx, tx.c, sqlDeploymentExists, dep.String())
		if err != nil {
			return fmt.Errorf("sqlite: deployment %s: %w", dep, err)
		}
		if !ok {
			return fmt.Errorf("sqlite: activate deployment %s: %w", dep, core.ErrNotFound)
		}
		if err := tx.c.exec(tx.ctx, `UPDATE t_deployment SET status = 'inactive' WHERE status IN ('active', 'enqueued')`); err != nil {
			return writeErr(err, "demote deployments")
		}
		if err := tx.c.exec(tx.ctx, `UPDATE t_deployment SET status = 'active', last_active_at = ? WHERE deployment_id = ?`,
			tsText(now), dep.String()); err != nil {
			return writeErr(err, "activate deployment %s", dep)
		}
		return nil
	})
}

// EnqueueDeployment implements core.DeploymentStore.
func (b *Backend) EnqueueDeployment(ctx context.Context, dep core.DeploymentId) (core.EnqueueOutcome, error) {
	var out core.EnqueueOutcome
	err := b.depWrite(ctx, func(tx *writeTx) error {
		rows, err := tx.c.query(tx.ctx, `SELECT status FROM t_deployment WHERE deployment_id = ?`, dep.String())
		if err != nil {
			return fmt.Errorf("sqlite: deployment %s: %w", dep, err)
		}
		var status string
		found := rows.Next()
		if found {
			err = rows.Scan(&status)
		}
		if cerr := rows.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("sqlite: deployment %s: %w", dep, err)
		}
		if !found {
			return fmt.Errorf("sqlite: enqueue deployment %s: %w", dep, core.ErrNotFound)
		}
		if err := tx.c.exec(tx.ctx, `UPDATE t_deployment SET status = 'inactive' WHERE status = 'enqueued'`); err != nil {
			return writeErr(err, "demote the enqueued deployment")
		}
		if status == string(core.DeploymentActive) {
			out = core.EnqueueAlreadyActive
			return nil
		}
		if err := tx.c.exec(tx.ctx, `UPDATE t_deployment SET status = 'enqueued' WHERE deployment_id = ?`, dep.String()); err != nil {
			return writeErr(err, "enqueue deployment %s", dep)
		}
		out = core.Enqueued
		return nil
	})
	return out, err
}

// --- files and the CAS ---------------------------------------------------------------------

// blobSize returns the size of a blob and whether it is in the CAS.
func (b *Backend) blobSize(ctx context.Context, d core.ContentDigest) (int64, bool, error) {
	c, err := b.casStore()
	if err != nil {
		return 0, false, err
	}
	var n int64
	if s, ok := c.(interface {
		Size(context.Context, core.ContentDigest) (int64, error)
	}); ok {
		n, err = s.Size(ctx, d)
	} else {
		var data []byte
		data, err = c.ReadBlob(ctx, d)
		n = int64(len(data))
	}
	if errors.Is(err, core.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("sqlite: size of %s: %w", d, err)
	}
	return n, true, nil
}

// withSizes sets each file's size from the CAS (0 with a warning when the
// blob is missing).
func (b *Backend) withSizes(ctx context.Context, files []core.DeploymentFileRecord) ([]core.DeploymentFileRecord, error) {
	for i := range files {
		size, present, err := b.blobSize(ctx, files[i].Digest)
		if err != nil {
			return nil, err
		}
		if !present {
			b.log.Warn("deployment file blob is missing from the CAS", "path", files[i].Path, "digest", files[i].Digest.String())
		}
		files[i].Size = uint64(size)
	}
	return files, nil
}

// ListDeploymentFiles implements core.DeploymentStore: by path, sizes from
// the CAS.
func (b *Backend) ListDeploymentFiles(ctx context.Context, dep core.DeploymentId) ([]core.DeploymentFileRecord, error) {
	var files []core.DeploymentFileRecord
	err := b.depRead(ctx, func(c *conn) error {
		var err error
		files, err = filesOf(ctx, c, dep.String())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: files of %s: %w", dep, err)
	}
	return b.withSizes(ctx, files)
}

// MissingDigests implements core.DeploymentStore: the deployment's file
// digests that are not in the CAS, by digest, with repeats.
func (b *Backend) MissingDigests(ctx context.Context, dep core.DeploymentId) ([]core.ContentDigest, error) {
	var digests []core.ContentDigest
	err := b.depRead(ctx, func(c *conn) (err error) {
		digests, err = queryDigests(ctx, c, `SELECT digest FROM t_deployment_file WHERE deployment_id = ? ORDER BY digest`, dep.String())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: missing digests of %s: %w", dep, err)
	}
	c, err := b.casStore()
	if err != nil {
		return nil, err
	}
	missing := []core.ContentDigest{}
	for _, d := range digests {
		ok, err := c.ContainsBlob(ctx, d)
		if err != nil {
			return nil, fmt.Errorf("sqlite: missing digests of %s: %w", dep, err)
		}
		if !ok {
			missing = append(missing, d)
		}
	}
	return missing, nil
}

// GCOrphanFiles implements core.DeploymentStore with cas.CollectOrphans:
// blobs that no deployment file and no source mapping refers to, last
// written more than Options.GCGrace ago, are deleted.
func (b *Backend) GCOrphanFiles(ctx context.Context) (uint64, error) {
	if err := b.ensureDeployments(ctx); err != nil {
		return 0, err
	}
	c, err := b.casStore()
	if err != nil {
		return 0, err
	}
	coll, ok := c.(cas.Collectable)
	if !ok {
		return 0, fmt.Errorf("sqlite: gc: the CAS (%T) cannot list and delete blobs: %w", c, core.ErrNotImplemented)
	}
	clock := b.opts.Clock
	if clock == nil {
		clock = store.SystemClock{}
	}
	n, err := cas.CollectOrphans(ctx, coll, clock.Now().Time, cas.GCGrace(b.opts.GCGrace), b.referenced)
	if err != nil {
		return n, fmt.Errorf("sqlite: %w", err)
	}
	return n, nil
}

const (
	sqlFileReferenced   = `SELECT 1 FROM t_deployment_file WHERE digest = ? LIMIT 1`
	sqlSourceReferenced = `SELECT 1 FROM t_component_source WHERE digest = ? LIMIT 1`
)

// referenced is the cas.ReferencedFunc of GCOrphanFiles (indexes
// idx_deployment_file_digest and idx_component_source_digest).
func (b *Backend) referenced(ctx context.Context, candidates []core.ContentDigest) (map[core.ContentDigest]bool, error) {
	refs := map[core.ContentDigest]bool{}
	err := b.withReader(ctx, func(c *conn) error {
		for _, d := range candidates {
			raw := digestBytes(d.Digest)
			ok, err := exists(ctx, c, sqlFileReferenced, raw)
			if err == nil && !ok {
				ok, err = exists(ctx, c, sqlSourceReferenced, raw)
			}
			if err != nil {
				return err
			}
			refs[d] = ok
		}
		return nil
	})
	return refs, err
}

// --- source mappings --------------------------------------------------------------------------

// UpsertSourceMapping implements core.DeploymentStore (replace semantics).
// The blob must already be in the CAS (*core.ValidationError otherwise), as
// Obelisk's foreign key to t_file demands.
func (b *Backend) UpsertSourceMapping(ctx context.Context, component core.ComponentDigest, frameKey string, isSuffix bool, digest core.ContentDigest) error {
	c, err := b.casStore()
	if err != nil {
		return err
	}
	ok, err := c.ContainsBlob(ctx, digest)
	if err != nil {
		return fmt.Errorf("sqlite: source mapping %q: %w", frameKey, err)
	}
	if !ok {
		return validationf("source mapping %q: blob %s is not in the CAS", frameKey, digest)
	}
	return b.depWrite(ctx, func(tx *writeTx) error {
		err := tx.c.exec(tx.ctx, `INSERT INTO t_component_source (component_digest, frame_key, is_suffix, digest) VALUES (?, ?, ?, ?)
ON CONFLICT (component_digest, frame_key, is_suffix) DO UPDATE SET digest = excluded.digest`,
			digestBytes(component.Digest), frameKey, boolInt(isSuffix), digestBytes(digest.Digest))
		if err != nil {
			return writeErr(err, "upsert source mapping %q of %s", frameKey, component)
		}
		return nil
	})
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// sqlResolveSource finds at most two mappings: exact keys equal to the file
// and suffix keys the file ends with (substr counts characters, as length does).
const sqlResolveSource = `SELECT digest FROM t_component_source WHERE component_digest = ?1 AND (
	(is_suffix = 0 AND frame_key = ?2) OR
	(is_suffix = 1 AND (frame_key = '' OR substr(?2, -length(frame_key)) = frame_key))) LIMIT 2`

// ResolveSourceDigest implements core.DeploymentStore: exactly one mapping
// must match.
func (b *Backend) ResolveSourceDigest(ctx context.Context, component core.ComponentDigest, file string) (core.ContentDigest, error) {
	var found []core.ContentDigest
	err := b.depRead(ctx, func(c *conn) (err error) {
		found, err = queryDigests(ctx, c, sqlResolveSource, digestBytes(component.Digest), file)
		return err
	})
	if err != nil {
		return core.ContentDigest{}, fmt.Errorf("sqlite: resolve source %q: %w", file, err)
	}
	if len(found) != 1 {
		return core.ContentDigest{}, fmt.Errorf("sqlite: source %q of %s (%d mappings match): %w", file, component, len(found), core.ErrNotFound)
	}
	return found[0], nil
}

// queryDigests runs a query whose single column is a 32-byte digest.
func queryDigests(ctx context.Context, c *conn, query string, args ...any) ([]core.ContentDigest, error) {
	rows, err := c.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []core.ContentDigest
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			return nil, err
		}
		d, err := bytesDigest(raw)
		if err != nil {
			return nil, err
		}
		out = append(out, core.ContentDigest{Digest: d})
	}
	return out, rows.Err()
}
