// Package core is the centre of Stela: the data model and the rules of
// Obelisk's execution log, as pure Go. It imports only the standard library
// (and oklog/ulid), does no I/O, reads no clock and starts no goroutine;
// time and ids arrive as arguments. Everything else — the service in package
// store, the storage adapters (sqlite, dynamo, store/mem, cas), the HTTP
// edge, the Lambda functions — depends on core, never the reverse.
//
// # How the parts relate
//
//   - Identifiers: ExecutionId (top-level or derived from a parent
//     and a join set), JoinSetId, DelayId, DeploymentId, RunId, ExecutorId,
//     digests, function names (FunctionFqn); each parses and prints its
//     canonical text.
//   - Persisted types: the events of
//     an execution's log (ExecutionRequest and its variants, HistoryEvent,
//     JoinSetResponse), parameters and return values, Timestamp and
//     Duration, with byte-exact Obelisk JSON and strict decoding.
//   - The state machine: ExecutionState, the
//     denormalised head of one execution, and the pure functions that decide
//     every write — AppendBatch (version check, legal transitions, the unblock
//     rule), ApplyResponse, the lock rules, retry backoff, the timer and
//     cancellation decisions. A decision returns the events and the new
//     state; the caller stores them.
//   - Deployments: the rules of deployments, component
//     metadata and source mappings over StoredDeployment rows.
//   - Errors: the sentinels every store returns (ErrNotFound,
//     ErrConflict, ErrVersionConflict, ErrUnavailable, …) and the typed
//     errors that carry details; the HTTP edge maps them to statuses once.
//   - Ports and read models: DbExecutor, DbConnection,
//     DbExternalApi, DeploymentStore and Cas — the interfaces the HTTP edge
//     and the workers call — with their filters, pagination and results.
//     store.Service implements them once over the store.Backend port.
//   - Log keys: the slog attribute keys every package writes.
//
// # Names
//
// Names that mirror a type, trait or method of Obelisk's Rust code keep
// Obelisk's spelling — ExecutionId, JoinSetId, DbExternalApi, DbConnection,
// ComponentId, HttpClientTrace, FunctionFqn — so that the specification
// (which quotes Obelisk) and the code read alike and a name can be searched
// for in both. Everything that is not such a mirror follows Go's
// initialisms: ExecutionID fields, ParseDeploymentId's results stored in
// DeploymentID fields, JSON, HTTP, URL, ID in new names. A name is a mirror
// exactly when the Rust item of that name exists in Obelisk's storage layer
// (the definitions docs/spec was written from) or in its wire format.
//
// # Specification and wire format
//
// The behaviour is specified in docs/spec/semantics.md; a bare section
// number in a comment here (§3.5) refers to that document. The golden files
// in testdata/golden pin the wire format (TestGolden).
package core
