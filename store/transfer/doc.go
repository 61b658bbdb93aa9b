// Package transfer moves data between Stela stores: `stela export` and
// `stela import` (cmd/stela), between any two backends — the embedded
// SQLite store, DynamoDB with its S3 CAS, the in-memory store of the
// tests — directly (Copy) or through a file (Export, Import). Embedded to
// DynamoDB is the path from a laptop to AWS. This is its design note.
//
// # What is copied
//
// Everything a store keeps: every execution with its events, responses,
// timer rows (delays), recorded finish time, backtraces and logs; the
// deployments with their files, components and statuses, the component
// metadata and source mappings of the components the deployments and
// executions name, and the CAS blobs the deployment files and source
// mappings refer to. Payloads a DynamoDB store offloaded to its CAS are
// part of the events and responses: they are read through and offloaded
// again by the destination by its own threshold.
//
// It is not a replay through the public API: ids, versions, created_at,
// the events' and responses' JSON as the source answers it (core's
// canonical encoding; params and results keep their key order and number
// literals), cursors and every field of an execution's state arrive as
// they were. What is private to a backend is not copied
// and the destination derives its own: SQLite's insertion sequence,
// DynamoDB's revisions, request ids, inboxes, outboxes, JoinNext counters,
// index keys, the log cursors. So the destination's indexes are those of
// the same data written there: pending queues, lock expiries, timers,
// cancelling, listings, per-deployment counts, retention.
//
// # The unit: an execution tree
//
// A tree — a top-level execution and every execution derived from it — is
// read as one consistent whole and imported as one unit, because the
// invariants that span executions stay inside a tree: a child's response
// lives in its parent, a parent is blocked on its children, retention
// decides per tree. A tree is held in memory while it is copied (the
// stream itself is never loaded whole: trees go one after the other).
// Trees come in the order their first executions were created in the
// source and each tree's executions in the source's creation order
// (SQLite: insertion; DynamoDB: created_at then id, the order its pending
// and cancelling queries break ties in), so a destination that orders by
// insertion (SQLite) breaks ties between executions with equal timestamps
// as the source did — except between a child created after another tree's
// root and that root, the one order a tree-by-tree copy cannot keep.
//
// # Live sources, locked executions
//
// The embedded store is exported from one snapshot (a read transaction;
// `stela dev` keeps running and writing, the export sees the state at its
// start). DynamoDB has no snapshot: each tree is a point in time of its
// own, read optimistically (store.Exporter, dynamo/export.go) and read
// again while it changes; trees are not consistent with each other, which
// no invariant needs. Logs are appended outside commits: a log line
// written while its tree is read may be missed.
//
// An execution that is locked (running) at export time is copied as
// locked, with its lease: the worker holding it keeps writing to the
// source, not the destination, where the lock expires at its
// lock_expires_at and the execution is retried (or times out) exactly as
// after a worker that crashed. Summary.Locked counts them; for a copy with
// nothing in flight, stop the workers first (the source may keep running).
//
// # Stream format
//
// JSON lines (one record per line, UTF-8, core.MarshalJSON), each line an
// object with exactly one record key:
//
//	{"header":{"format":"stela-export","version":1,"created_at":…,"source":…}}
//	{"tree":{"root":"E_…","executions":N}}               then, for that tree:
//	{"execution":<core.ExecutionRecord>,"digest":"sha256:…"}   N times
//	{"logs":<core.TreeLogs>,"digest":"sha256:…"}
//	… more trees …
//	{"blob":{"digest":"sha256:…","size":S,"offset":O,"data":"<base64>"}}  chunks of 1 MiB
//	{"deployment":{…}} {"component_metadata":{…}} {"source_mapping":{…}}
//	{"end":{"trees":…,"executions":…,"log_rows":…,"blobs":…,"deployments":…,
//	        "component_metadata":…,"source_mappings":…,"digest":"sha256:…"}}
//
// An execution's digest is the SHA-256 of its record's canonical JSON (the
// line's "execution" value; core.ExecutionRecord.Digest), likewise a
// tree's logs; the end record counts every kind of record and its digest
// is the SHA-256 over the executions' and logs' digests in order. Import
// checks each record as it reads it — strict decoding (unknown fields
// refused), its digest recomputed from the decoded record, its validity
// (versions and cursors without gaps, delays and logs of their tree,
// parents before children), the tree framing, each blob's digest — and the
// end record's counts and digest at the end. A stream without its end
// record (an export that did not finish) imports the trees it holds and
// fails with ErrTruncated. A file holds the secrets a store holds
// (params, results, logs): protect it like the store.
//
// # Import: idempotent, resumable, verified
//
// store.Service.ImportTree compares each tree with the destination
// before it writes anything: an execution the destination holds with the
// same digest is kept, a missing one is written (parents first), the
// backtraces it lacks are added and its logs, when they are a prefix of
// the record's, completed. Anything else — an execution that differs (the
// destination ran it further, say), an extra execution in the tree, logs
// that are not a prefix — is a conflict: the tree is not written, the
// conflict is listed in Summary.Conflicts, the import goes on with the
// other records and fails at the end with ErrConflicts. Importing the
// same stream twice therefore changes nothing (every tree unchanged), and
// importing it again after an interruption — a killed process, a
// truncated file — writes exactly what is missing. Each tree written is
// read back and must have the record's digests; one that does not (a
// destination whose timers or workers run may change a tree at once, e.g.
// expire a lock that had expired already) is reported as a conflict too.
// Import into a quiet destination to have every tree verified as written.
//
// Deployments, component metadata and source mappings follow the same
// rule (identical: kept; absent: written; different: a conflict); an
// active (enqueued) deployment conflicts with another active (enqueued)
// one in the destination.
//
// Retention is the destination's: a finished tree whose period has passed
// there since its last execution finished (by the recorded finish times)
// is not written (Summary.Expired) — the destination would delete it at
// once; a finished tree within its period is imported and expires on time
// (DynamoDB marks its items with the tree's time-to-live as it writes
// them; SQLite purges it when due).
//
// A destination that orders executions by insertion (SQLite, the
// in-memory store) imports one tree after the other in the stream's
// order; DynamoDB imports Options.Parallel trees at once.
package transfer
