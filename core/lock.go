package core

// ComponentRetryConfig says how often and how fast failed runs are retried.
// MaxRetries nil means retry forever (workflows, crons).
type ComponentRetryConfig struct {
	MaxRetries      *uint32  `json:"max_retries"`
	RetryExpBackoff Duration `json:"retry_exp_backoff"`
}

// RetryConfigZero is max_retries 0, backoff 0.
func RetryConfigZero() ComponentRetryConfig {
	zero := uint32(0)
	return ComponentRetryConfig{MaxRetries: &zero}
}

// LockedBy identifies a lock holder.
type LockedBy struct {
	ExecutorID ExecutorId `json:"executor_id"`
	RunID      RunId      `json:"run_id"`
}

// LockedExecution is what a successful lock hands to a worker (docs/spec/semantics.md §3.5 step 6).
type LockedExecution struct {
	ExecutionID ExecutionId
	// NextVersion is the version to append at next.
	NextVersion Version
	Metadata    ExecutionMetadata
	// ComponentDigest is the lock's digest, or for auto-locking the execution's current digest.
	ComponentDigest        ComponentDigest
	LockedEvent            Locked
	FFQN                   FunctionFqn
	Params                 Params
	EventHistory           []HistoryEventWithVersion
	Responses              []ResponseWithCursor
	Parent                 *Parent
	IntermittentEventCount uint32
	// ComponentType is the type the execution was created with (its
	// Created event's component_id.component_type), which the store keeps
	// for good: a worker checks it against the function it registered
	// without reading the execution's state (a Stela extension; empty from
	// a server that predates it).
	ComponentType ComponentType
}

// LockRequest carries the parameters shared by every lock method.
type LockRequest struct {
	// BatchSize bounds the number of executions locked (lock_pending_* only).
	BatchSize uint32
	// PendingAtOrSooner selects executions scheduled at or before it (inclusive).
	PendingAtOrSooner Timestamp
	CreatedAt         Timestamp
	ComponentID       ComponentId
	DeploymentID      DeploymentId
	ExecutorID        ExecutorId
	RunID             RunId
	LockExpiresAt     Timestamp
	RetryConfig       ComponentRetryConfig
	// SkipHistory, when true, leaves LockedExecution.EventHistory and
	// Responses empty; everything else is filled. A worker that keeps the
	// history it has seen asks for what it lacks with ReadHistory instead of
	// receiving the whole history with every lock.
	SkipHistory bool
	// ByComponentDigest makes WorkerConn.LockPending lock by
	// ComponentID.ComponentDigest (LockPendingByComponentDigest) instead
	// of by its ffqns: a pinned worker's lock (worker.Options.Pinned).
	ByComponentDigest bool
}

// ValidateExpiry rejects a request whose lock would expire at or before its
// own created_at: ValidationError "invalid expiry date", the first check of
// the lock path (docs/spec/semantics.md §3.5). Every lock method makes it before reading
// candidates, so a worker whose clock lags gets the error rather than an
// empty batch while executions stay pending.
func (r *LockRequest) ValidateExpiry() error {
	return checkLockExpiry(r.CreatedAt, r.LockExpiresAt)
}

// LockedEvent returns the Locked event the request appends.
func (r *LockRequest) LockedEvent() *Locked {
	return &Locked{ComponentID: r.ComponentID, ExecutorID: r.ExecutorID, DeploymentID: r.DeploymentID,
		RunID: r.RunID, LockExpiresAt: r.LockExpiresAt, RetryConfig: r.RetryConfig}
}
