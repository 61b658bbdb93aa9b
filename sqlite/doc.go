// Package sqlite is the embedded default backend: a store.Backend on one
// local SQLite file, using the pure-Go driver modernc.org/sqlite (no cgo). It
// is what `stela dev` and the fast tests run on.
//
// # Durability
//
// The database is in WAL mode. By default (Options.Durability =
// DurabilityFsync, the zero value) the writer runs at PRAGMA
// synchronous=FULL: the WAL is fsynced before a commit is acknowledged, so an
// acknowledged commit survives a crash of the process, of the operating
// system and a power loss, and readers never see a commit that is not yet on
// disk (SQLite publishes it to readers after the fsync). The fsync is shared
// by every Update of a group-commit batch (below). DurabilityOSCrashUnsafe
// (synchronous=NORMAL) acknowledges once the commit is in the WAL, before the
// fsync: a crash of the process still loses nothing, but an OS crash or a
// power loss may lose the most recently acknowledged commits (the file stays
// consistent). Backend.Synchronous reads the mode in force back from the
// writer connection.
//
// Checkpoints (copying the WAL into the database file) run in the background
// on a separate connection, in PASSIVE mode, after every 200 committed
// transactions; the writer's own automatic checkpoint is off, so a commit
// never includes one. Under a steady stream of commits a background
// checkpoint never catches up with the writer, and SQLite restarts the WAL
// (bounding its size) only when a write transaction begins after a
// checkpoint copied every frame: so the checkpointer repeats passes until one
// copies little (or the WAL exceeds 64 MiB), and then the writer copies the
// remaining frames itself between two batches (milliseconds;
// Stats.WriterCheckpointTime) and its next transaction restarts the WAL; if
// a reader still held old frames, the writer retries after the next batches.
// Measured with stela bench embedded on a loaded 2-core machine, the WAL
// stays below 30 MiB and the writer's longest such pause is about 15 ms.
// SQLite checkpoints and removes the WAL when the last connection closes.
//
// # Write path: one writer, group commit
//
// One goroutine owns the only write connection. Update queues its fn and
// waits. The writer takes every queued request (up to Options.MaxBatch),
// opens one transaction (BEGIN IMMEDIATE), runs each fn in its own SAVEPOINT
// — rolling back only the savepoint of an fn that fails, panics, or ignores a
// failed write — then commits once and replies to every caller of the batch.
// While a batch runs, and above all while its COMMIT waits for the fsync, the
// requests arriving from other goroutines (concurrent HTTP requests each have
// their own) queue up and form the next batch: under load one fsync serves
// every request that was ready for it. A batch in which no fn wrote anything
// (only reads, or only failures) is rolled back instead of committed: nothing
// reaches the WAL, nothing is fsynced. Stats counts acknowledged commits and
// the write transactions (fsyncs) that carried them.
// An fn's writes go in few statements: an append's events in multi-row
// INSERTs of up to 16, a fan-out's children (store.HeadsCreator, which
// the Service uses for create-children) in INSERTs of up to 16 heads and
// their events, a head's UPDATE with only the columns that change.
// fns therefore run one at a time in queue order (serializable; no retries),
// each sees the writes of the fns before it, and a batch costs one commit.
// Writes go straight to the writer connection, so an fn also reads its own
// writes. A uniqueness violation (UNIQUE or PRIMARY KEY) is returned as an
// error wrapping core.ErrConflict. Logs and backtraces are written through the
// same queue. The writer caches execution heads (exactly the committed state
// plus the current batch; emptied whenever PRAGMA data_version shows a commit
// by another connection, e.g. another process sharing the file) and recently
// created executions' Created events, which the lock path reads back: those
// are immutable, and PendingByFFQN / PendingByDigest decode their candidates'
// events on the caller's goroutine, off the writer.
//
// View and the Queries run on a pool of read connections (Options.ReadConns,
// PRAGMA query_only): a View is one read transaction, hence one consistent
// snapshot; WAL readers never block the writer and vice versa.
//
// # Schema (PRAGMA user_version = SchemaVersion)
//
// Timestamps are TEXT in the fixed-width form 2006-01-02T15:04:05.123456789Z
// (always nine fractional digits, UTC), so byte order is chronological and
// nanoseconds are kept. Digests are 32-byte BLOBs; ids are their canonical
// strings. All tables are STRICT.
//
//	t_state      one row per execution (core.ExecutionState), WITHOUT ROWID,
//	             PRIMARY KEY execution_id. Columns: seq (insertion order, the
//	             tie-breaker of the pending and cancelling orderings;
//	             high-water mark in t_meta),
//	             is_top_level, ffqn, created_at, first_scheduled_at,
//	             component_type, component_digest, deployment_id,
//	             incompatible_digest, version, state ('pending_at', 'locked',
//	             'blocked_by_join_set', 'finished'), lifecycle ('active',
//	             'paused', 'cancelling'), at (pending_expires_finished),
//	             executor_id, run_id, last_lock_version, max_retries,
//	             retry_exp_backoff_millis, join_set_id, join_set_closing,
//	             result_kind (compact JSON), intermittent_event_count,
//	             max_cursor, finished_recorded_at (when the service recorded
//	             the finish, for retention; NULL before). PutHead sets
//	             only the mutable columns whose values change (the
//	             writer's head cache knows the stored row; the full
//	             statement when it does not), so an index none of whose
//	             columns change is left alone.
//	t_event      (execution_id, version) PRIMARY KEY, created_at, variant,
//	             join_set_id, history_event_type, json (the ExecutionRequest
//	             as core.EncodeExecutionRequest writes it).
//	t_response   (execution_id, cursor) PRIMARY KEY, join_set_id, js_ordinal
//	             (1-based position within the join set), created_at,
//	             child_execution_id (UNIQUE where not null), delay_id (UNIQUE
//	             where not null), delay_success, json (JoinSetResponseEvent).
//	t_delay      (execution_id, join_set_id, delay_id) PRIMARY KEY,
//	             expires_at, paused.
//	t_log        id INTEGER PRIMARY KEY AUTOINCREMENT (the LogCursor),
//	             execution_id, run_id, created_at, level, message,
//	             stream_type (NULL for log lines), payload.
//	t_wasm_backtrace      hash (33-byte BLOB, docs/spec/semantics.md §2.12) PRIMARY KEY, json.
//	t_execution_backtrace (execution_id, version_min, version_max) PRIMARY
//	             KEY, component_id (JSON), hash.
//	t_meta       key → value; 'head_seq' is the last seq handed out.
//	t_purge      root_id PRIMARY KEY, expires_at: trees whose purge was
//	             decided and is not complete (Retention below).
//
// # Queries and their indexes
//
//	Head, PutHead                t_state primary key
//	Event, Events                t_event primary key (range on version)
//	Responses                    t_response primary key (range on cursor)
//	JoinSetEvents                t_event primary key (range on version), the
//	                             join_set_id and history_event_type columns
//	                             filtering: only JoinSetCreate and JoinNext rows
//	                             are decoded (a fan-out's later chunks)
//	JoinNextCount                idx_event_join_next (execution_id, join_set_id)
//	                             WHERE history_event_type = 'join_next'
//	NthResponse                  idx_response_join_set (execution_id, join_set_id, js_ordinal)
//	DelayOutcome                 idx_response_delay (delay_id)
//	Delay, SetDelayPaused        t_delay primary key
//	PendingByFFQN                idx_state_pending_ffqn (ffqn, at, seq)
//	                             WHERE state = 'pending_at' AND lifecycle = 'active'
//	                             (the incompatible digest is a residual filter)
//	PendingByDigest              idx_state_pending_digest (component_digest, at, seq), same WHERE
//	ExpiredLocks                 idx_state_locked (at) WHERE state = 'locked'
//	ExpiredDelays                idx_delay_expires (expires_at) WHERE paused = 0
//	Cancelling                   idx_state_cancelling (created_at, seq) WHERE lifecycle = 'cancelling'
//	ListExecutions               created_at pages: idx_state_created_id
//	                             (created_at, execution_id), the cursor a range
//	                             on the same key (a row value with the
//	                             tie-break); execution-id pages: the primary
//	                             key. Scanned newest or oldest first, filters
//	                             as residual conditions; output newest first
//	ListLogs                     idx_log_execution (execution_id, id)
//	GetBacktrace, BacktraceRanges  t_execution_backtrace primary key
//	RetentionCandidates          idx_state_retention (coalesce(finished_recorded_at, at))
//	                             WHERE state = 'finished' AND is_top_level = 1, each
//	                             candidate's descendants by a primary-key range
//	RetentionTree, the purge     primary keys and idx_log_execution, ranges over
//	                             [<root>., <root>/); a purged backtrace body's
//	                             references: idx_execution_backtrace_hash
//
// Prefix filters (execution id prefix, function name, the descendants of an
// execution in ListLogs) are plain case-sensitive byte-wise prefix matches,
// written as range conditions [prefix, successor(prefix)) — unlike Obelisk's
// SQLite LIKE, '_' and '%' are not wildcards and case matters. ListLogs with
// showDerived matches the id itself and ids starting with id + ".", so
// "…_1" does not match "…_10".
//
// Deployment rows (store.DeploymentReadTx and store.DeploymentTx, in
// deployments.go; store.Service makes every decision and owns the CAS):
//
//	t_deployment          deployment_id PRIMARY KEY, created_at,
//	                      last_active_at, status (unique partial indexes
//	                      keep one 'active' and one 'enqueued'), TOML,
//	                      obelisk_version, created_by, description, digest
//	t_deployment_file     (deployment_id, path) PRIMARY KEY, digest
//	                      (idx_deployment_file_digest: gc references)
//	t_deployment_component (deployment_id, component_name) PRIMARY KEY,
//	                      component_type, component_digest
//	t_deployment_component_file (deployment_id, component_name, path)
//	                      PRIMARY KEY, role
//	t_component_metadata  component_digest PRIMARY KEY, imports/exports
//	                      JSON, wit, wit_origin
//	t_component_source    (component_digest, frame_key, is_suffix) PRIMARY
//	                      KEY, digest (idx_component_source_digest)
//
// list_deployment_states' counts are one range scan of
// idx_state_deployment (deployment_id, is_top_level, state, lifecycle, at,
// result_kind) per deployment.
//
// # Retention (retention.go)
//
// The service records each finish (RecordFinished: finished_recorded_at, by
// its clock, in the finishing commit; written by the head's own UPDATE when
// the fn writes the head, as it does on every finish). A tree — a top-level execution and
// every execution whose id starts with "<root>." — is purged once all its
// executions are finished and the period has passed since the last finish
// (an execution finished before version 4 counts from its finished_at):
// the timers loop asks for candidates (roots whose tree looks due, oldest
// first), the service decides each (core.DecideRetention) and ExpireTree
// purges it in three steps, each its own transaction(s):
//
//  1. the heads are re-read and must be what the decision saw (the same
//     executions, finished, same versions; else nothing happens and the
//     next pass decides again); the decision goes into t_purge and every
//     head is deleted — from this commit on, readers see nothing of the
//     tree (404, absent from list_executions);
//  2. the other rows of the tree's id range whose execution has no head —
//     events, responses (freeing their child and delay ids), timer rows,
//     logs, execution backtraces and the backtrace bodies nothing else
//     refers to — are deleted purgeChunk (512) rows per transaction, so the
//     writer is never held for more than about a millisecond;
//  3. the t_purge row is deleted.
//
// A crash after step 1 leaves the t_purge row; the next pass completes the
// purge before deciding anything else. The writer's caches forget the
// purged heads. Measured: BenchmarkPurge (bench_test.go).
//
// # Export and backup
//
// An export (store.Exporter, export.go) reads the whole store in one read
// transaction, a snapshot; writers go on, but checkpoints cannot reset
// the WAL past that snapshot until the export ends, so a long export
// while `stela dev` writes lets the WAL grow. Trees come by the insertion
// order (seq) of their first execution, records by seq: an import into
// this backend (through Update, one tree per transaction) reproduces the
// source's insertion order, hence its ties in the pending and cancelling
// orders. Backup (backup.go) copies the database with VACUUM INTO from one
// read transaction of a connection of its own — consistent while writers
// commit — to a file it fsyncs and renames into place.
//
// # Schema history
//
// The schema has one history: migrations (schema.go), applied in order in
// one write transaction by Open up to SchemaVersion and never edited once
// released. Version 1 is the execution data; version 2 adds the deployment
// tables and idx_state_deployment, which the version-1 build created lazily
// on first use (hence IF NOT EXISTS: both kinds of version-1 file upgrade);
// version 3 orders list_executions by (created_at, execution_id); version 4
// adds retention (finished_recorded_at, idx_state_retention, t_purge,
// idx_execution_backtrace_hash). A file of a newer version is refused.
package sqlite
