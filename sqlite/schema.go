package sqlite

import (
	"context"
	"fmt"
)

// migrations[i] upgrades a database from PRAGMA user_version i to i+1. Never
// edit a released entry: append a new one.
var migrations = []string{
	// v1: execution data (docs/spec/semantics.md §7.1).
	`
CREATE TABLE t_meta (
	key   TEXT PRIMARY KEY,
	value INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
INSERT INTO t_meta (key, value) VALUES ('head_seq', 0);

CREATE TABLE t_state (
	execution_id             TEXT    NOT NULL PRIMARY KEY,
	seq                      INTEGER NOT NULL,
	is_top_level             INTEGER NOT NULL,
	ffqn                     TEXT    NOT NULL,
	created_at               TEXT    NOT NULL,
	first_scheduled_at       TEXT    NOT NULL,
	component_type           TEXT    NOT NULL,
	component_digest         BLOB    NOT NULL,
	deployment_id            TEXT    NOT NULL,
	incompatible_digest      BLOB,
	version                  INTEGER NOT NULL,
	state                    TEXT    NOT NULL CHECK (state IN ('pending_at', 'locked', 'blocked_by_join_set', 'finished')),
	lifecycle                TEXT    NOT NULL CHECK (lifecycle IN ('active', 'paused', 'cancelling')),
	at                       TEXT    NOT NULL,
	executor_id              TEXT,
	run_id                   TEXT,
	last_lock_version        INTEGER,
	max_retries              INTEGER,
	retry_exp_backoff_millis INTEGER,
	join_set_id              TEXT,
	join_set_closing         INTEGER NOT NULL,
	result_kind              TEXT,
	intermittent_event_count INTEGER NOT NULL,
	max_cursor               INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE INDEX idx_state_pending_ffqn ON t_state (ffqn, at, seq) WHERE state = 'pending_at' AND lifecycle = 'active';
CREATE INDEX idx_state_pending_digest ON t_state (component_digest, at, seq) WHERE state = 'pending_at' AND lifecycle = 'active';
CREATE INDEX idx_state_locked ON t_state (at) WHERE state = 'locked';
CREATE INDEX idx_state_cancelling ON t_state (created_at, seq) WHERE lifecycle = 'cancelling';
CREATE INDEX idx_state_created ON t_state (created_at, seq);

CREATE TABLE t_event (
	execution_id       TEXT    NOT NULL,
	version            INTEGER NOT NULL,
	created_at         TEXT    NOT NULL,
	variant            TEXT    NOT NULL,
	join_set_id        TEXT,
	history_event_type TEXT,
	json               TEXT    NOT NULL,
	PRIMARY KEY (execution_id, version)
) STRICT, WITHOUT ROWID;
CREATE INDEX idx_event_join_next ON t_event (execution_id, join_set_id) WHERE history_event_type = 'join_next';

CREATE TABLE t_response (
	execution_id       TEXT    NOT NULL,
	cursor             INTEGER NOT NULL,
	join_set_id        TEXT    NOT NULL,
	js_ordinal         INTEGER NOT NULL,
	created_at         TEXT    NOT NULL,
	child_execution_id TEXT,
	delay_id           TEXT,
	delay_success      INTEGER,
	json               TEXT    NOT NULL,
	PRIMARY KEY (execution_id, cursor)
) STRICT, WITHOUT ROWID;
CREATE UNIQUE INDEX idx_response_join_set ON t_response (execution_id, join_set_id, js_ordinal);
CREATE UNIQUE INDEX idx_response_child ON t_response (child_execution_id) WHERE child_execution_id IS NOT NULL;
CREATE UNIQUE INDEX idx_response_delay ON t_response (delay_id) WHERE delay_id IS NOT NULL;

CREATE TABLE t_delay (
	execution_id TEXT    NOT NULL,
	join_set_id  TEXT    NOT NULL,
	delay_id     TEXT    NOT NULL,
	expires_at   TEXT    NOT NULL,
	paused       INTEGER NOT NULL,
	PRIMARY KEY (execution_id, join_set_id, delay_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX idx_delay_expires ON t_delay (expires_at) WHERE paused = 0;

CREATE TABLE t_log (
	id           INTEGER PRIMARY KEY AUTOINCREMENT,
	execution_id TEXT NOT NULL,
	run_id       TEXT NOT NULL,
	created_at   TEXT NOT NULL,
	level        INTEGER,
	message      TEXT,
	stream_type  INTEGER,
	payload      BLOB
) STRICT;
CREATE INDEX idx_log_execution ON t_log (execution_id, id);

CREATE TABLE t_wasm_backtrace (
	hash BLOB PRIMARY KEY,
	json TEXT NOT NULL
) STRICT, WITHOUT ROWID;

CREATE TABLE t_execution_backtrace (
	execution_id TEXT    NOT NULL,
	version_min  INTEGER NOT NULL,
	version_max  INTEGER NOT NULL,
	component_id TEXT    NOT NULL,
	hash         BLOB    NOT NULL,
	PRIMARY KEY (execution_id, version_min, version_max)
) STRICT, WITHOUT ROWID;
`,
	// v2: deployments, component metadata and source mappings (docs/spec/semantics.md
	// §6.5–6.7), created lazily by the version-1 build; hence IF NOT EXISTS,
	// so a version-1 file that already has them upgrades too. Obelisk's
	// unique partial indexes on a constant keep at most one active and one
	// enqueued deployment. idx_state_deployment serves
	// list_deployment_states' per-deployment counts (one range scan per
	// deployment).
	`
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
`,
	// v3: list_executions orders by (created_at, execution_id), the key its
	// cursors compare (core/listing.go); insertion order (seq) broke ties before.
	`
CREATE INDEX idx_state_created_id ON t_state (created_at, execution_id);
DROP INDEX idx_state_created;
`,
	// v4: retention of finished execution trees (retention.go). The time
	// the service recorded each finish (NULL for executions finished
	// before: their finished_at stands in); the retention candidates
	// (finished top-level executions by that time); the trees whose purge
	// was decided and not yet completed; and the reference check of a
	// purged backtrace body.
	`
ALTER TABLE t_state ADD COLUMN finished_recorded_at TEXT;
CREATE INDEX idx_state_retention ON t_state (coalesce(finished_recorded_at, at)) WHERE state = 'finished' AND is_top_level = 1;
CREATE INDEX idx_execution_backtrace_hash ON t_execution_backtrace (hash);
CREATE TABLE t_purge (
	root_id    TEXT NOT NULL PRIMARY KEY,
	expires_at TEXT NOT NULL
) STRICT, WITHOUT ROWID;
`,
}

// SchemaVersion is the PRAGMA user_version this package creates and reads.
const SchemaVersion = 4

func init() {
	if len(migrations) != SchemaVersion {
		panic("sqlite: SchemaVersion does not match the migrations")
	}
}

// migrate brings the database to SchemaVersion in one write transaction. A
// database with a newer schema is refused.
func migrate(ctx context.Context, c *conn) error {
	v, err := userVersion(ctx, c)
	if err != nil {
		return err
	}
	if v == SchemaVersion {
		return nil
	}
	if v > SchemaVersion {
		return fmt.Errorf("schema version %d is newer than this build supports (%d)", v, SchemaVersion)
	}
	if _, err := c.c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("migrate: begin: %w", err)
	}
	commit := false
	defer func() {
		if !commit {
			_, _ = c.c.ExecContext(context.Background(), "ROLLBACK")
		}
	}()
	// Re-read under the write lock: another process may have migrated meanwhile.
	if v, err = userVersion(ctx, c); err != nil {
		return err
	}
	if v > SchemaVersion {
		return fmt.Errorf("schema version %d is newer than this build supports (%d)", v, SchemaVersion)
	}
	for ; v < SchemaVersion; v++ {
		if _, err := c.c.ExecContext(ctx, migrations[v]); err != nil {
			return fmt.Errorf("migrate to v%d: %w", v+1, err)
		}
	}
	if _, err := c.c.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", SchemaVersion)); err != nil {
		return fmt.Errorf("migrate: set user_version: %w", err)
	}
	if _, err := c.c.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("migrate: commit: %w", err)
	}
	commit = true
	return nil
}

func userVersion(ctx context.Context, c *conn) (int, error) {
	var v int
	if err := c.c.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("read user_version: %w", err)
	}
	return v, nil
}
