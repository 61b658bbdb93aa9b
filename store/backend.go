// Package store implements core's store interfaces (core.DbExternalApi) once,
// over a small storage port (Backend) that each adapter — the embedded SQLite
// store, DynamoDB, the in-memory store/mem — implements. Every decision (the
// state machine, version checks, the unblock rule, cancellation and pause
// rules, and the deployment rules of deployments.go) is made here by calling
// core's pure functions inside Backend.Update; adapters only read, buffer and
// atomically commit rows. The service also owns the CAS of deployment files
// (Options.Cas: sizes, missing digests, gc_orphan_files). The contract suite
// in store/storetest therefore exercises the same logic on every backend.
package store

import (
	"context"
	"time"

	"github.com/stela-dev/stela/core"
)

// Backend is the storage port. Implementations must be safe for concurrent use.
//
// Consistency contract: Update is serializable per execution. A backend may
// run fn optimistically and call it again when something fn read changed
// before the commit (DynamoDB), or run it under a lock (SQLite); either way
// the effects of one successful Update are atomic and all reads inside one
// fn call observe a single consistent state of every execution fn touched.
//
// Every write to an execution's items (events, responses, delays) goes with a
// write of its head (PutHead/CreateHead) in the same Update, so guarding the
// heads read by fn is enough to detect every conflicting concurrent commit.
// The one exception is SetDelayPaused, which no decision reads.
//
// Reads inside fn see the state committed before the transaction, not fn's
// own buffered writes: the service never reads back what it wrote in the same
// Update (it keeps the heads it modifies in memory).
type Backend interface {
	Queries
	// Update runs fn in a read-write transaction and commits what fn wrote if
	// fn returns nil. fn may run more than once and must not have side effects
	// outside tx. If fn returns an error nothing is written and Update returns
	// that error unchanged. Uniqueness violations detected at commit time are
	// returned as errors wrapping core.ErrConflict.
	Update(ctx context.Context, fn func(tx Tx) error) error
	// View runs fn against a consistent read of the data it touches.
	View(ctx context.Context, fn func(tx ReadTx) error) error
	// Close releases resources; later calls fail with core.ErrClosed.
	Close() error
}

// ReadTx reads within a transaction. Reads are strongly consistent.
type ReadTx interface {
	// Head returns the execution's state; core.ErrNotFound if it does not exist.
	Head(id core.ExecutionId) (core.ExecutionState, error)
	// Event returns the event at version v; core.ErrNotFound if absent.
	Event(id core.ExecutionId, v core.Version) (core.ExecutionEvent, error)
	// Events returns the events with from <= version < to, ascending
	// (BacktraceID nil). to is exclusive; missing versions are simply absent.
	Events(id core.ExecutionId, from, to core.Version) ([]core.ExecutionEvent, error)
	// Responses returns the responses with from <= cursor < to, ascending.
	Responses(id core.ExecutionId, from, to core.ResponseCursor) ([]core.ResponseWithCursor, error)
	// JoinNextCount counts the join_next history events of js in the log
	// (closing ones included; JoinNextTry and JoinNextTooMany excluded).
	JoinNextCount(id core.ExecutionId, js core.JoinSetId) (uint32, error)
	// NthResponse returns the n-th (1-based) response of js in cursor order.
	NthResponse(id core.ExecutionId, js core.JoinSetId, n uint32) (core.ResponseWithCursor, bool, error)
	// DelayOutcome returns the recorded result of a delay's response
	// (true = fired, false = cancelled), looked up globally by delay id.
	DelayOutcome(delay core.DelayId) (success bool, found bool, err error)
	// Delay returns the timer row, if it still exists.
	Delay(id core.ExecutionId, js core.JoinSetId, delay core.DelayId) (core.DelayTimer, bool, error)

	DeploymentReadTx
}

// NewHead is an execution to create: its head and first events (see
// Tx.CreateHead).
type NewHead struct {
	State  core.ExecutionState
	Events []core.ExecutionEvent
}

// HeadsCreator is a Tx that creates several executions with fewer writes
// than one CreateHead each (SQLite: multi-row INSERTs). CreateHeads is
// CreateHead of each head, in order; a conflict fails the call, naming
// some of heads. The Service creates a fan-out's children with it.
type HeadsCreator interface {
	CreateHeads(heads []NewHead) error
}

// JoinSetEventsReader is a ReadTx that reads only the events that open and
// close join sets (JoinSetCreate and JoinNext) of the given join sets of
// an execution, at versions 1 … before-1, ascending: what
// core.CheckCreateChildren needs of a log to accept children whose join set
// an earlier append created (the later chunks of a large fan-out). The
// Service tries it before reading the whole log (SQLite: a filter on the
// event rows' join_set_id and history_event_type columns, decoding only
// the rows it returns).
type JoinSetEventsReader interface {
	JoinSetEvents(id core.ExecutionId, joinSets []core.JoinSetId, before core.Version) ([]core.ExecutionEvent, error)
}

// Tx reads and buffers writes. Writes become visible only when Update commits.
type Tx interface {
	ReadTx
	// CreateHead inserts a new execution with its first events (version 0 and,
	// when created paused, version 1). core.ErrConflict if the id exists
	// (possibly reported by Update at commit time).
	CreateHead(st core.ExecutionState, events []core.ExecutionEvent) error
	// PutHead replaces the state of an execution fn read with Head in this
	// transaction. The commit fails (and fn is retried) if the head changed
	// since that read.
	PutHead(st core.ExecutionState) error
	// AppendEvents inserts events; each (execution, version) must be new
	// (core.ErrConflict otherwise).
	AppendEvents(id core.ExecutionId, events []core.ExecutionEvent) error
	// AddResponse inserts a response with its cursor (allocated by the caller
	// from the head's MaxCursor). A child execution id and a delay id may have
	// at most one response across all executions: core.ErrConflict otherwise.
	AddResponse(id core.ExecutionId, resp core.ResponseWithCursor) error
	// PutDelay inserts a timer row; core.ErrConflict if (execution, join set,
	// delay) already has one.
	PutDelay(d core.DelayTimer) error
	// DeleteDelay removes a timer row if it exists.
	DeleteDelay(id core.ExecutionId, js core.JoinSetId, delay core.DelayId) error
	// SetDelayPaused flips a timer's paused flag; core.ErrNotFound if absent.
	SetDelayPaused(id core.ExecutionId, js core.JoinSetId, delay core.DelayId, paused bool) error

	DeploymentTx
}

// Queries are index-backed reads outside transactions. Their results may be
// stale (DynamoDB indexes are eventually consistent); the service re-checks
// every candidate inside Update before acting on it.
type Queries interface {
	// PendingByFFQN returns up to limit ids of executions of ffqn that are
	// PendingAt, active and scheduled at or before at, by scheduled time
	// ascending (ties in creation order). With skipIncompatible set, executions
	// whose IncompatibleDigest equals it are excluded.
	PendingByFFQN(ctx context.Context, ffqn core.FunctionFqn, at core.Timestamp, limit int, skipIncompatible *core.ComponentDigest) ([]core.ExecutionId, error)
	// PendingByDigest is PendingByFFQN keyed by the current component digest.
	PendingByDigest(ctx context.Context, digest core.ComponentDigest, at core.Timestamp, limit int) ([]core.ExecutionId, error)
	// ExpiredLocks returns the heads of executions in state Locked (any
	// lifecycle) whose lock expired at or before at. A backend with lock
	// leases (LockLeaser) deletes, while answering, the leases due at or
	// before at that cover no lock any more: its only write, which changes
	// no execution.
	ExpiredLocks(ctx context.Context, at core.Timestamp) ([]core.ExecutionState, error)
	// ExpiredDelays returns unpaused timers with expires_at <= at.
	ExpiredDelays(ctx context.Context, at core.Timestamp) ([]core.ExpiredDelay, error)
	// Cancelling returns up to limit cancelling executions by created_at ascending.
	Cancelling(ctx context.Context, limit int) ([]core.ExecutionId, error)
	// ListExecutions applies filter and pagination (docs/spec/semantics.md §4.4.4) and returns
	// heads newest first.
	ListExecutions(ctx context.Context, filter core.ListExecutionsFilter, p core.ExecutionListPagination) ([]core.ExecutionState, error)

	// AppendLogs stores log rows, assigning increasing global cursors.
	AppendLogs(ctx context.Context, rows []core.LogInfoAppendRow) error
	// ListLogs returns log rows of id (and of ids having id as a string prefix
	// when showDerived) matching filter, in scan order (docs/spec/semantics.md §6.8).
	ListLogs(ctx context.Context, id core.ExecutionId, showDerived bool, filter core.LogFilter, p core.Pagination[core.LogCursor]) ([]core.LogEntryRow, error)
	// AppendBacktraces stores backtraces (insert-if-absent per (execution,
	// version_min, version_max)) and returns the number newly inserted.
	AppendBacktraces(ctx context.Context, bts []core.BacktraceInfo) (int, error)
	// GetBacktrace finds a backtrace; core.ErrNotFound if none.
	GetBacktrace(ctx context.Context, id core.ExecutionId, filter core.BacktraceFilter) (core.BacktraceInfo, error)
	// BacktraceRanges returns [min, max) of every stored backtrace of id.
	BacktraceRanges(ctx context.Context, id core.ExecutionId) ([][2]core.Version, error)

	// CountDeploymentExecutions adds to each state's counters the executions
	// whose current deployment is its DeploymentID, each in its §4.8.1 bucket
	// at now (core.DeploymentState.Count), top-level ones only unless
	// includeDerived. core.ErrNotImplemented if the backend keeps no counts.
	CountDeploymentExecutions(ctx context.Context, states []core.DeploymentState, now core.Timestamp, includeDerived bool) error
	// BlobReferences reports which of candidates a stored deployment file,
	// source mapping or (for backends that offload payloads to the CAS)
	// payload refers to, from a strongly consistent read started no earlier
	// than the call. A reference written by a write that may still be in
	// flight (younger than grace) counts. It is the reference check of
	// gc_orphan_files.
	BlobReferences(ctx context.Context, candidates []core.ContentDigest, grace time.Duration) (map[core.ContentDigest]bool, error)
}

// DeploymentReadTx reads deployment rows (docs/spec/semantics.md §6.5–6.7) within a
// transaction. Reads are strongly consistent. The rules are made by the
// service (store/deployments.go) with core's pure functions.
type DeploymentReadTx interface {
	// Deployment returns a stored deployment; core.ErrNotFound if absent.
	Deployment(id core.DeploymentId) (core.StoredDeployment, error)
	// CurrentDeployments returns the active and the enqueued deployment's
	// ids (nil when there is none).
	CurrentDeployments() (active, enqueued *core.DeploymentId, err error)
	// Deployments returns up to p.Length deployments whose id is beyond
	// p.Cursor in p's direction, in that direction's order (descending ids
	// for OlderThan). Without withToml or withFiles the backend may leave
	// DeploymentToml, respectively Files, Components and ComponentFiles,
	// empty.
	Deployments(p core.Pagination[*core.DeploymentId], withToml, withFiles bool) ([]core.StoredDeployment, error)
	// ComponentMetadata returns the stored metadata of digests (absent ones
	// omitted).
	ComponentMetadata(digests []core.ComponentDigest) (map[core.ComponentDigest]core.ComponentMetadataRecord, error)
	// SourceMappings returns the stored mappings of component among keys.
	SourceMappings(component core.ComponentDigest, keys []core.SourceKey) ([]core.SourceMapping, error)
}

// DeploymentTx buffers writes of deployment rows. The service writes only
// what it decided from reads in the same transaction.
type DeploymentTx interface {
	// InsertDeployment inserts a new deployment with its files, components
	// and component files. core.ErrConflict if the id exists (possibly
	// reported by Update at commit time).
	InsertDeployment(d core.StoredDeployment) error
	// AddDeploymentComponents adds components (new names) to a deployment
	// read in this transaction.
	AddDeploymentComponents(id core.DeploymentId, records []core.DeploymentComponentRecord) error
	// SetDeploymentStatus sets a deployment's status and, when lastActiveAt
	// is not nil, its last_active_at; the deployment was read or inserted
	// in this transaction. The service applies the changes of one switch
	// in order (demotions first) after reading CurrentDeployments; at most
	// one deployment is active and one enqueued after each commit.
	SetDeploymentStatus(id core.DeploymentId, status core.DeploymentStatus, lastActiveAt *core.Timestamp) error
	// InsertComponentMetadata inserts metadata this transaction read as
	// absent (ComponentMetadata). A concurrent insert of the same digest
	// makes Update run fn again, which then reads it.
	InsertComponentMetadata(records []core.ComponentMetadataRecord) error
	// PutSourceMapping inserts or replaces the mapping of (component, key).
	PutSourceMapping(m core.SourceMapping) error
}

// Optional capabilities.
//
// Beyond Backend, a backend may implement the interfaces below; they are
// all declared here, and the service finds them once, in New
// (capabilitiesOf), and per transaction (txCapabilitiesOf), never by a type
// assertion elsewhere. Without one the service does without (its fallback
// is named with each). Which backend implements which:
//
//	capability                 mem  sqlite  dynamo  without it
//	BatchLocker                 x     x       -     one Update per lock candidate
//	ReadyChecker                -     x       x     one strongly consistent read
//	InboxBackend + Inbox (Tx)   -     -       x     responses applied in the child's transaction
//	Retainer + RetentionTx (Tx) x     x       x     no retention (ApplyRetention is a no-op)
//	Exporter (+ ExportTx)       x     x       x     stela export fails with core.ErrNotImplemented
//	Importer                    -     -       x     imported executions written in one Update
//	LockLeaser                  -     -       x     each locked head indexes its own lock expiry
//
// TestCapabilitiesTable (internal/backendtest) holds this table against the
// backends. The CAS has two optional capabilities of its own, declared
// here too: blobSizer (a size without reading the blob) and
// OrphanCollector (gc_orphan_files).

// capabilities are the optional interfaces a Backend implements (nil or
// false when it does not), found once by New.
type capabilities struct {
	batchLock bool
	ready     ReadyChecker
	inbox     InboxBackend
	retainer  Retainer
	exporter  Exporter
	importer  Importer
	leaser    LockLeaser
}

func capabilitiesOf(b Backend) capabilities {
	var c capabilities
	if bl, ok := b.(BatchLocker); ok {
		c.batchLock = bl.LockBatchInOneUpdate()
	}
	c.ready, _ = b.(ReadyChecker)
	c.inbox, _ = b.(InboxBackend)
	c.retainer, _ = b.(Retainer)
	c.exporter, _ = b.(Exporter)
	c.importer, _ = b.(Importer)
	c.leaser, _ = b.(LockLeaser)
	return c
}

// txCapabilities are the optional interfaces of a backend's Tx.
type txCapabilities struct {
	inbox     Inbox
	retention RetentionTx
}

func txCapabilitiesOf(tx Tx) txCapabilities {
	var c txCapabilities
	c.inbox, _ = tx.(Inbox)
	c.retention, _ = tx.(RetentionTx)
	return c
}

// casCapabilities are the optional interfaces of the CAS (nil for none).
type casCapabilities struct {
	sizer     blobSizer
	collector OrphanCollector
}

func casCapabilitiesOf(c core.Cas) casCapabilities {
	var cc casCapabilities
	cc.sizer, _ = c.(blobSizer)
	cc.collector, _ = c.(OrphanCollector)
	return cc
}

// BatchLocker is an optional Backend capability: backends whose transactions
// are cheap and never abort on contention (SQLite's single writer) lock a
// whole batch in one Update; the others (DynamoDB) lock each candidate in its
// own conditional transaction so one contended item cannot abort the batch.
type BatchLocker interface {
	LockBatchInOneUpdate() bool
}

// LockLeaser is an optional Backend capability: a backend that pays a write
// per index entry (DynamoDB) indexes the lock expiry of a lock call's
// executions once, in a lease, instead of once per locked head (dynamo/doc.go,
// "Lock leases"). The service opens a lease for the candidates of a lock
// call before locking any of them, runs their lock Updates under
// WithLockLease, and closes it with the ones it locked once every Update
// returned. Each execution's own lock expiry stays in its head and its
// Locked event; ExpiredLocks still returns every expired lock, leased or
// not, and removes the leases that cover no lock any more.
type LockLeaser interface {
	// OpenLockLease durably records, before any of them is locked, that
	// ids may be locked until expiry by one lock call.
	OpenLockLease(ctx context.Context, ids []core.ExecutionId, expiry core.Timestamp) (LockLease, error)
	// CloseLockLease records that every lock Update run under l returned
	// and that exactly locked (a subset of l.Members) were locked.
	CloseLockLease(ctx context.Context, l LockLease, locked []core.ExecutionId) error
}

// LockLease is a lease opened by LockLeaser.OpenLockLease: its id, the lock
// expiry it covers and the executions it may cover.
type LockLease struct {
	// ID names the lease in its backend.
	ID string
	// Expiry is the lock expiry of every lock taken under the lease.
	Expiry core.Timestamp
	// Members are the executions the lease may cover.
	Members []core.ExecutionId
}

// ReadyChecker is an optional Backend capability: Ready reports whether the
// store is reachable and its schema is the one this build expects (SQLite:
// PRAGMA user_version; DynamoDB: the table and every index ACTIVE). It
// backs the /readyz health check.
type ReadyChecker interface {
	Ready(ctx context.Context) error
}

// Inbox is an optional capability of a backend's Tx for fan-in without
// contention on the parent (DynamoDB, dynamo/doc.go "Fan-in"): a child's
// response may be deferred instead of applied to the parent's head in the
// child's transaction, so that siblings finishing together write disjoint
// items. The service still makes every decision: it applies a deferred
// response (core.ApplyResponse: cursor and unblock rule, then AddResponse)
// the next time it reads the parent's responses — before a JoinNext, a lock
// or any read of responses (store.Service.settle). A backend without Inbox
// (SQLite, mem) applies every response in the child's transaction.
//
// Guarantees a backend implementing Inbox must give:
//   - a deferred response is committed with the child's Finished event (it
//     exists iff that commit succeeded) and is returned by
//     DeferredResponses until AddResponse has applied it, once;
//   - a JoinNext that reads the n-th response of a join set as absent and
//     a response of that join set that the backend defers are serialised:
//     either the JoinNext's transaction sees the response (in
//     DeferredResponses or applied) or the response is not deferred
//     (DeferResponse returns false in a later run of its transaction) and is
//     applied to the parent's head by the service as usual.
type Inbox interface {
	// DeferResponse offers resp, a ChildExecutionFinished response to id
	// carried by the Finished event this transaction appends to the child it
	// names. It returns true when the backend deferred it: the caller must
	// then neither read nor write id's head for it. false means "apply it
	// now", as without Inbox. Only called before this transaction read id.
	DeferResponse(id core.ExecutionId, resp core.JoinSetResponseEventOuter) (bool, error)
	// DeferredResponses returns the deferred responses to id not applied yet,
	// in the order to apply them (reading id's head as Head does).
	DeferredResponses(id core.ExecutionId) ([]core.JoinSetResponseEventOuter, error)
}

// InboxBackend is the Backend side of Inbox: a cheap check, outside a
// transaction, whether id may have deferred responses to apply.
type InboxBackend interface {
	HasDeferredResponses(ctx context.Context, id core.ExecutionId) (bool, error)
}

// Retainer is the Backend capability retention needs. A backend that
// implements it must also implement RetentionTx on its Tx.
type Retainer interface {
	// RetentionMarksAhead reports whether ExpireTree marks a finished tree
	// with its expiry at once (the database deletes it when due) rather
	// than removing it when it is due.
	RetentionMarksAhead() bool
	// ResumeExpiry completes the expiries a crash interrupted (backends
	// whose ExpireTree spans several transactions record the decision
	// first); the others do nothing.
	ResumeExpiry(ctx context.Context) (ExpireStats, error)
	// RetentionCandidates returns up to limit candidate trees in scan
	// order. A backend that removes trees when due returns trees that look
	// finished and due at now under r; one that marks ahead returns trees
	// in which an execution finished since its cursor. The service
	// re-reads and decides each one.
	RetentionCandidates(ctx context.Context, now core.Timestamp, r core.Retention, limit int) ([]RetentionCandidate, error)
	// RetentionTree reads root and every execution derived from it.
	RetentionTree(ctx context.Context, root core.ExecutionId) (RetentionTree, error)
	// ExpireTree removes (or marks with expiresAt) every item of tree:
	// heads, events, responses and their guards, timer rows, JoinNext
	// counters, outboxes, backtraces, logs, index entries and the
	// references of offloaded payloads. It checks that the tree did not
	// change since RetentionTree read it (an error wrapping
	// core.ErrConflict otherwise) and is idempotent.
	ExpireTree(ctx context.Context, tree RetentionTree, expiresAt core.Timestamp) (ExpireStats, error)
	// RetentionDone records that every candidate up to pos was handled.
	RetentionDone(ctx context.Context, pos string) error
}

// RetentionTx is implemented by the Tx of a Retainer.
type RetentionTx interface {
	// RecordFinished records, in the commit that finishes execution id,
	// when it finished by the store's clock. treeExpiresAt, when not nil,
	// is core.FinishExpiry of a top-level execution: a backend that marks
	// ahead marks the head with it in this commit if it knows the
	// execution has no derived executions.
	RecordFinished(id core.ExecutionId, at core.Timestamp, treeExpiresAt *core.Timestamp) error
}

// Exporter is the Backend capability `stela export` needs: reading whole
// executions and trees as they are stored.
type Exporter interface {
	// ExportView runs fn with a reader of the whole store: one consistent
	// snapshot when the backend has them (SQLite: one read transaction; the
	// in-memory backend: under its lock, so fn must read only through
	// tx), strongly consistent reads otherwise (DynamoDB).
	ExportView(ctx context.Context, fn func(tx ExportTx) error) error
}

// ExportTx reads inside ExportView.
type ExportTx interface {
	// DeploymentReadTx reads deployments, component metadata and source
	// mappings by key.
	DeploymentReadTx
	// TreeRoots returns the roots of every tree (the top-level id of the
	// stored executions, whether or not the root itself is stored), in the
	// order their first executions were created: the order in which an
	// import recreates them. The list is held in memory (tens of bytes per
	// tree).
	TreeRoots() ([]core.ExecutionId, error)
	// TreeMembers returns the ids of the stored executions of root's tree,
	// in any order (possibly stale on backends with eventually consistent
	// indexes).
	TreeMembers(root core.ExecutionId) ([]core.ExecutionId, error)
	// Tree reads every execution of root's tree (core.ExecutionRecord,
	// normalized) in the backend's creation order: the order in which its
	// pending and cancelling queries break ties, parents before their
	// children. A backend without snapshots returns an error wrapping
	// ErrChanged when the tree changed while it read it or it cannot prove
	// it found every member, and *UnsettledError when a member's deferred
	// responses are not applied.
	Tree(root core.ExecutionId) ([]core.ExecutionRecord, error)
	// Executions reads the records of ids (absent ones omitted), each at
	// one committed state (ErrChanged when that cannot be had).
	Executions(ids []core.ExecutionId) ([]core.ExecutionRecord, error)
	// TreeLogs returns the logs of root's tree in the backend's log order.
	TreeLogs(root core.ExecutionId) ([]core.LogInfoAppendRow, error)
	// SourceMappingsOf returns every source mapping of component.
	SourceMappingsOf(component core.ComponentDigest) ([]core.SourceMapping, error)
}

// Importer is the optional Backend capability of writing executions
// verbatim for backends whose transactions are bounded (DynamoDB).
type Importer interface {
	// ImportExecutions writes recs, which the service found absent, in
	// order (parents before their children). Each execution must become
	// visible only complete: its head is written last. A record whose id
	// exists meanwhile, or a response whose child or delay already has one,
	// fails with an error wrapping core.ErrConflict. expiresAt, when set,
	// is the tree's expiry (core.DecideRetention) for a backend that marks
	// finished trees ahead (Retainer.RetentionMarksAhead): everything
	// written carries it.
	ImportExecutions(ctx context.Context, recs []core.ExecutionRecord, expiresAt *core.Timestamp) error
}

// blobSizer is the optional size lookup of a CAS (cas.Dir, cas.S3): a
// HeadObject instead of reading the blob.
type blobSizer interface {
	Size(ctx context.Context, d core.ContentDigest) (int64, error)
}

// OrphanCollector is a CAS that can delete the blobs nothing refers to
// (cas.Dir and cas.S3, see cas.CollectOrphans). referenced reports which
// candidates are still referenced, read right before each deletion.
type OrphanCollector interface {
	CollectOrphans(ctx context.Context, now time.Time, grace time.Duration,
		referenced func(ctx context.Context, candidates []core.ContentDigest) (map[core.ContentDigest]bool, error)) (uint64, error)
}
