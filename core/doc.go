// Package core is the centre of Stela: the data model and the rules of
// Obelisk's execution log, as pure Go. It imports only the standard library
// (and oklog/ulid), does no I/O, reads no clock and starts no goroutine;
// time and ids arrive as arguments. Everything else — the service in package
// store, the storage adapters (sqlite, dynamo, store/mem, cas), the HTTP
// edge, the Lambda functions — depends on core, never the reverse.
//
// # How the parts relate
//
//   - Identifiers (ids.go): ExecutionId (top-level or derived from a parent
//     and a join set), JoinSetId, DelayId, DeploymentId, RunId, ExecutorId,
//     digests, function names (FunctionFqn); each parses and prints its
//     canonical text. derive.go derives them the way Obelisk's workflow
//     worker does.
//   - Persisted types: the events of an execution's log (events.go:
//     ExecutionEvent, ExecutionRequest and its variants, AppendRequest;
//     history.go: HistoryEvent and its variants; joinsets.go: JoinSetRequest,
//     JoinSetResponse and response cursors), CreateRequest, Params and Parent
//     (create.go), return values and ResultKind (returnvalue.go), HTTP client
//     traces (httptrace.go), component upgrade outcomes (upgrade.go),
//     backtraces (backtrace.go), Timestamp and Duration (time.go), captured
//     writes (captured.go); byte-exact Obelisk JSON (jsonx.go) and strict
//     decoding (strict.go).
//   - The state machine (state.go): ExecutionState, the denormalised head
//     of one execution, and the pure functions that decide every write —
//     AppendBatch (version check, legal transitions, the unblock rule),
//     ApplyResponse, the lock rules, retry backoff, the timer and
//     cancellation decisions. A decision returns the events and the new
//     state; the caller stores them. Around it: the lock request and its
//     result (lock.go), pause, cancellation and upgrade plans (ops.go), open
//     join sets (tracker.go), the worker routes' checks on children and
//     parents (children.go), retention of finished trees (retention.go),
//     PendingState's text (display.go).
//   - Deployments: the rules of deployments, component metadata and source
//     mappings over StoredDeployment rows (deployments.go), and the records
//     they are made of (deploymentrecords.go).
//   - Errors (errors.go): the sentinels every store returns (ErrNotFound,
//     ErrConflict, ErrVersionConflict, ErrUnavailable, …) and the typed
//     errors that carry details; the HTTP edge maps them to statuses once.
//   - Ports (ports.go): DbExecutor, DbConnection, DbExternalApi,
//     DeploymentStore and Cas — the interfaces the HTTP edge and the
//     workers call — and the seed's free functions over them (CancelDelay,
//     StubExecution, the cancellation retries). store.Service implements
//     them once over the store.Backend port. Their read models and results
//     are in readmodels.go, pagination in pagination.go (list_executions'
//     order and cursors in listing.go), filters in filters.go, log entries
//     in logs.go; Clock, the injected time source, in time.go.
//   - Log keys (logkeys.go): the slog attribute keys every package writes.
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
