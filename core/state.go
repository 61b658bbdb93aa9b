package core

import (
	"encoding/json"
	"fmt"
	"time"
)

// StateKind is the underlying runnable state (t_state.state).
type StateKind uint8

// Underlying states.
const (
	StatePendingAt StateKind = iota + 1
	StateLocked
	StateBlockedByJoinSet
	StateFinished
)

func (k StateKind) String() string {
	switch k {
	case StatePendingAt:
		return "pending_at"
	case StateLocked:
		return "locked"
	case StateBlockedByJoinSet:
		return "blocked_by_join_set"
	case StateFinished:
		return "finished"
	}
	return fmt.Sprintf("StateKind(%d)", k)
}

// Lifecycle is the overlay on the underlying state (t_state.lifecycle).
// Paused and cancelling are mutually exclusive.
type Lifecycle uint8

// Lifecycles.
const (
	LifecycleActive Lifecycle = iota + 1
	LifecyclePaused
	LifecycleCancelling
)

func (l Lifecycle) String() string {
	switch l {
	case LifecycleActive:
		return "active"
	case LifecyclePaused:
		return "paused"
	case LifecycleCancelling:
		return "cancelling"
	}
	return fmt.Sprintf("Lifecycle(%d)", l)
}

// ExecutionState is the denormalised current state of one execution — Obelisk's
// t_state row (docs/spec/semantics.md §3.1) plus the response counter. Adapters persist it as the
// execution's head; PendingState is derived from it, never stored.
type ExecutionState struct {
	ExecutionID      ExecutionId
	FFQN             FunctionFqn
	CreatedAt        Timestamp
	FirstScheduledAt Timestamp
	ComponentType    ComponentType
	// ComponentDigest and DeploymentID are the execution's current component and
	// deployment; they change on (non-auto) lock and on a successful upgrade.
	ComponentDigest ComponentDigest
	DeploymentID    DeploymentId
	// IncompatibleDigest failed an auto-upgrade; auto-locking by it skips this execution.
	IncompatibleDigest *ComponentDigest

	// Version is the version of the last appended event (corresponding_version).
	Version   Version
	State     StateKind
	Lifecycle Lifecycle
	// At is scheduled_at (PendingAt), lock_expires_at (Locked and Blocked) or
	// finished_at (Finished): t_state.pending_expires_finished.
	At Timestamp
	// LastLock is the holder of the most recent lock; kept through PendingAt and
	// Blocked, cleared only by Finished.
	LastLock *LockedBy
	// LastLockVersion is the version of the current Locked event, set only while locked.
	LastLockVersion *Version
	// MaxRetries and RetryExpBackoffMillis come from the current lock, set only while locked.
	MaxRetries            *uint32
	RetryExpBackoffMillis *uint64
	// JoinSetID and JoinSetClosing are set only while blocked.
	JoinSetID      *JoinSetId
	JoinSetClosing bool
	// ResultKind is set only when finished.
	ResultKind *ResultKind
	// IntermittentEventCount counts TemporarilyFailed + TemporarilyTimedOut events, forever.
	IntermittentEventCount uint32
	// MaxCursor is the cursor of the last response (0 = none); responses get MaxCursor+1.
	MaxCursor ResponseCursor
}

// IsTopLevel reports whether the execution has no parent.
func (s *ExecutionState) IsTopLevel() bool { return s.ExecutionID.IsTopLevel() }

// NextVersion is the version the next append must use; once finished it stays
// at the Finished event's version (docs/spec/semantics.md §3.2).
func (s *ExecutionState) NextVersion() Version {
	if s.State == StateFinished {
		return s.Version
	}
	return s.Version + 1
}

// IsFinished reports whether the execution is finished.
func (s *ExecutionState) IsFinished() bool { return s.State == StateFinished }

// PendingState derives the API view of the state (CombinedState::new).
func (s *ExecutionState) PendingState() PendingState {
	p := PendingState{State: s.State, Lifecycle: s.Lifecycle}
	switch s.State {
	case StatePendingAt:
		var last *LockedBy
		if s.LastLock != nil {
			l := *s.LastLock
			last = &l
		}
		p.PendingAt = &PendingStatePendingAt{ScheduledAt: s.At, LastLock: last}
	case StateLocked:
		var by LockedBy
		if s.LastLock != nil {
			by = *s.LastLock
		}
		p.Locked = &PendingStateLocked{LockedBy: by, LockExpiresAt: s.At}
	case StateBlockedByJoinSet:
		var js JoinSetId
		if s.JoinSetID != nil {
			js = *s.JoinSetID
		}
		p.Blocked = &PendingStateBlockedByJoinSet{JoinSetID: js, LockExpiresAt: s.At, Closing: s.JoinSetClosing}
	case StateFinished:
		var rk ResultKind
		if s.ResultKind != nil {
			rk = *s.ResultKind
		}
		p.Lifecycle = LifecycleActive
		p.Finished = &PendingStateFinished{Version: uint32(s.Version), FinishedAt: s.At, ResultKind: rk}
	}
	return p
}

// Validate checks the invariants of §3.1 (the valid state × lifecycle combinations).
func (s *ExecutionState) Validate() error {
	switch {
	case s.State == StateLocked && s.Lifecycle == LifecyclePaused:
		return fmt.Errorf("invalid state: locked and paused")
	case s.State == StateFinished && s.Lifecycle != LifecycleActive:
		return fmt.Errorf("invalid state: finished and %s", s.Lifecycle)
	case s.State == StateLocked && (s.LastLock == nil || s.LastLockVersion == nil):
		return fmt.Errorf("invalid state: locked without lock holder")
	case s.State == StateBlockedByJoinSet && s.JoinSetID == nil:
		return fmt.Errorf("invalid state: blocked without join set")
	case s.State == StateFinished && s.ResultKind == nil:
		return fmt.Errorf("invalid state: finished without result kind")
	case s.State < StatePendingAt || s.State > StateFinished || s.Lifecycle < LifecycleActive || s.Lifecycle > LifecycleCancelling:
		return fmt.Errorf("invalid state: %d/%d", s.State, s.Lifecycle)
	}
	return nil
}

func (s *ExecutionState) clearLock() {
	s.LastLockVersion = nil
	s.MaxRetries = nil
	s.RetryExpBackoffMillis = nil
}

func (s *ExecutionState) clearJoinSet() {
	s.JoinSetID = nil
	s.JoinSetClosing = false
}

// Clone returns a deep copy of s.
func (s ExecutionState) Clone() ExecutionState {
	c := s
	if s.LastLock != nil {
		v := *s.LastLock
		c.LastLock = &v
	}
	if s.LastLockVersion != nil {
		v := *s.LastLockVersion
		c.LastLockVersion = &v
	}
	if s.MaxRetries != nil {
		v := *s.MaxRetries
		c.MaxRetries = &v
	}
	if s.RetryExpBackoffMillis != nil {
		v := *s.RetryExpBackoffMillis
		c.RetryExpBackoffMillis = &v
	}
	if s.JoinSetID != nil {
		v := *s.JoinSetID
		c.JoinSetID = &v
	}
	if s.ResultKind != nil {
		v := *s.ResultKind
		c.ResultKind = &v
	}
	if s.IncompatibleDigest != nil {
		v := *s.IncompatibleDigest
		c.IncompatibleDigest = &v
	}
	return c
}

// --- PendingState -----------------------------------------------------------

// PendingState is the public view of an execution's state (Rust PendingState,
// tag "status"), held flattened: the underlying State plus the Lifecycle
// overlay (PendingStateMerged). Exactly one of the pointer fields matching
// State is set.
type PendingState struct {
	State     StateKind
	Lifecycle Lifecycle
	Locked    *PendingStateLocked
	PendingAt *PendingStatePendingAt
	Blocked   *PendingStateBlockedByJoinSet
	Finished  *PendingStateFinished
}

// PendingStateLocked is the Locked state.
type PendingStateLocked struct {
	LockedBy      LockedBy  `json:"locked_by"`
	LockExpiresAt Timestamp `json:"lock_expires_at"`
}

// PendingStatePendingAt is the PendingAt state; LastLock enables lock extension.
type PendingStatePendingAt struct {
	ScheduledAt Timestamp `json:"scheduled_at"`
	LastLock    *LockedBy `json:"last_lock"`
}

// PendingStateBlockedByJoinSet is the BlockedByJoinSet state.
type PendingStateBlockedByJoinSet struct {
	JoinSetID     JoinSetId `json:"join_set_id"`
	LockExpiresAt Timestamp `json:"lock_expires_at"`
	Closing       bool      `json:"closing"`
}

// PendingStateFinished is the Finished state; Version is the Finished event's version.
type PendingStateFinished struct {
	Version    uint32     `json:"version"`
	FinishedAt Timestamp  `json:"finished_at"`
	ResultKind ResultKind `json:"result_kind"`
}

// Status returns the JSON "status" tag.
func (p PendingState) Status() string {
	switch {
	case p.State == StateFinished:
		return "finished"
	case p.Lifecycle == LifecyclePaused:
		return "paused"
	case p.Lifecycle == LifecycleCancelling:
		return "cancelling"
	}
	return p.State.String()
}

func (p PendingState) inner() (any, string) {
	switch p.State {
	case StateLocked:
		return p.Locked, "Locked"
	case StatePendingAt:
		return p.PendingAt, "PendingAt"
	case StateBlockedByJoinSet:
		return p.Blocked, "BlockedByJoinSet"
	case StateFinished:
		return p.Finished, "Finished"
	}
	return nil, ""
}

// MarshalJSON encodes the state as Obelisk does: `{"status":"locked",…}`,
// `{"status":"paused","PendingAt":{…}}`, `{"status":"cancelling","Locked":{…}}`.
func (p PendingState) MarshalJSON() ([]byte, error) {
	v, name := p.inner()
	if v == nil || fmt.Sprint(v) == "<nil>" {
		return nil, fmt.Errorf("pending state without %s details", p.State)
	}
	status := p.Status()
	if status == "paused" || status == "cancelling" {
		body, err := MarshalJSON(v)
		if err != nil {
			return nil, err
		}
		return marshalInternallyTagged("status", status, map[string]json.RawMessage{name: body})
	}
	return marshalInternallyTagged("status", status, v)
}

// UnmarshalJSON decodes the state.
func (p *PendingState) UnmarshalJSON(b []byte) error {
	status, err := readTag(b, "status", "pending state")
	if err != nil {
		return err
	}
	switch status {
	case "locked":
		var v PendingStateLocked
		if err := decodeStrictTag(b, &v, "status"); err != nil {
			return err
		}
		*p = PendingState{State: StateLocked, Lifecycle: LifecycleActive, Locked: &v}
	case "pending_at":
		var v PendingStatePendingAt
		if err := decodeStrictTag(b, &v, "status"); err != nil {
			return err
		}
		*p = PendingState{State: StatePendingAt, Lifecycle: LifecycleActive, PendingAt: &v}
	case "blocked_by_join_set":
		var v PendingStateBlockedByJoinSet
		if err := decodeStrictTag(b, &v, "status"); err != nil {
			return err
		}
		*p = PendingState{State: StateBlockedByJoinSet, Lifecycle: LifecycleActive, Blocked: &v}
	case "finished":
		var v PendingStateFinished
		if err := decodeStrictTag(b, &v, "status"); err != nil {
			return err
		}
		*p = PendingState{State: StateFinished, Lifecycle: LifecycleActive, Finished: &v}
	case "paused", "cancelling":
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(b, &obj); err != nil {
			return decodeErr(err)
		}
		delete(obj, "status")
		if len(obj) != 1 {
			return invalid(status + " state must have exactly one inner state")
		}
		lc := LifecyclePaused
		if status == "cancelling" {
			lc = LifecycleCancelling
		}
		for k, raw := range obj {
			q := PendingState{Lifecycle: lc}
			switch {
			case k == "PendingAt":
				q.State, q.PendingAt = StatePendingAt, &PendingStatePendingAt{}
				err = decodeStrict(raw, q.PendingAt)
			case k == "BlockedByJoinSet":
				q.State, q.Blocked = StateBlockedByJoinSet, &PendingStateBlockedByJoinSet{}
				err = decodeStrict(raw, q.Blocked)
			case k == "Locked" && lc == LifecycleCancelling:
				q.State, q.Locked = StateLocked, &PendingStateLocked{}
				err = decodeStrict(raw, q.Locked)
			default:
				return invalid(fmt.Sprintf("invalid inner state %q of %s", k, status))
			}
			if err != nil {
				return AtPath(err, k)
			}
			*p = q
		}
	default:
		return invalid(fmt.Sprintf("unknown pending state %q", status))
	}
	return nil
}

// --- transitions ------------------------------------------------------------

// LockKind tells whether a lock was newly created or extended by its holder.
type LockKind uint8

// Lock kinds.
const (
	LockCreatingNew LockKind = iota + 1
	LockExtending
)

// checkLockExpiry is the first check of the lock path (docs/spec/semantics.md §3.5).
func checkLockExpiry(createdAt, lockExpiresAt Timestamp) error {
	if !lockExpiresAt.After(createdAt) {
		return invalid("invalid expiry date")
	}
	return nil
}

// CanAppendLock checks whether a Locked event by (executor, run) at createdAt
// with lockExpiresAt may be appended in state p (seed PendingState::can_append_lock).
func CanAppendLock(p PendingState, createdAt Timestamp, by LockedBy, lockExpiresAt Timestamp) (LockKind, error) {
	if err := checkLockExpiry(createdAt, lockExpiresAt); err != nil {
		return 0, err
	}
	switch {
	case p.State == StateFinished:
		return 0, illegal("already finished")
	case p.Lifecycle == LifecyclePaused:
		return 0, illegal("cannot lock, execution is paused")
	case p.Lifecycle == LifecycleCancelling:
		return 0, illegal("cannot lock, execution is cancelling")
	case p.State == StatePendingAt:
		if !p.PendingAt.ScheduledAt.After(createdAt) {
			return LockCreatingNew, nil
		}
		if p.PendingAt.LastLock != nil && *p.PendingAt.LastLock == by {
			return LockExtending, nil
		}
		return 0, invalid("cannot lock, not yet pending")
	case p.State == StateLocked:
		if p.Locked.LockedBy == by {
			return LockExtending, nil
		}
		return 0, illegal("cannot lock, already locked")
	case p.State == StateBlockedByJoinSet:
		return 0, illegal("cannot append Locked event when in BlockedByJoinSet state")
	}
	return 0, illegal("invalid state")
}

// JoinSetLookup answers the two questions JoinNext needs (docs/spec/semantics.md §3.11) about
// the log as it was before the batch being applied.
type JoinSetLookup interface {
	// JoinNextCount is the number of join_next events of js in the log.
	JoinNextCount(js JoinSetId) uint32
	// NthResponse returns the created_at of the n-th (1-based, cursor order)
	// response of js, if it exists.
	NthResponse(js JoinSetId, n uint32) (Timestamp, bool)
}

// NoJoinSets is a JoinSetLookup for executions without join sets.
type NoJoinSets struct{}

// JoinNextCount returns 0.
func (NoJoinSets) JoinNextCount(JoinSetId) uint32 { return 0 }

// NthResponse returns false.
func (NoJoinSets) NthResponse(JoinSetId, uint32) (Timestamp, bool) { return Timestamp{}, false }

// DelayTimer is a pending timer row (t_delay).
type DelayTimer struct {
	ExecutionID ExecutionId
	JoinSetID   JoinSetId
	DelayID     DelayId
	ExpiresAt   Timestamp
	Paused      bool
}

// AppendOptions tunes the lock path.
type AppendOptions struct {
	// KeepComponent leaves the state's digest and deployment unchanged on lock
	// (lock_pending_by_ffqns_auto).
	KeepComponent bool
}

// AppendResult is the outcome of AppendBatch.
type AppendResult struct {
	State ExecutionState
	// Events are the new events, with versions assigned.
	Events []ExecutionEvent
	// Delays are the timer rows created by DelayRequests.
	Delays []DelayTimer
	// NextVersion is the value an append returns: the version after the last
	// event, or the Finished event's own version.
	NextVersion Version
	// LockKind is set when the batch contained a Locked event.
	LockKind LockKind
}

// ValidateAppendBatch rejects an empty batch and Created events; stores run
// it before looking the execution up (docs/spec/semantics.md §8.2: Created is rejected first).
func ValidateAppendBatch(batch []AppendRequest) error {
	if len(batch) == 0 {
		return invalid("batch cannot be empty")
	}
	for _, req := range batch {
		if req.Event == nil {
			return invalid("missing event")
		}
		if _, ok := req.Event.(*Created); ok {
			return invalid("cannot append `Created` event - use `create` instead")
		}
	}
	return nil
}

// AppendBatch applies requests in order starting at version, running the
// generic append algorithm (docs/spec/semantics.md §3.3) for each: Created is rejected, Locked
// takes the lock path, a finished execution rejects with ErrAlreadyFinished
// (checked before the version), then the version must equal the next version.
// It is pure: s is not modified. An empty batch is a validation error.
func AppendBatch(s ExecutionState, version Version, batch []AppendRequest, js JoinSetLookup, opts AppendOptions) (AppendResult, error) {
	if len(batch) == 0 {
		return AppendResult{}, invalid("batch cannot be empty")
	}
	if js == nil {
		js = NoJoinSets{}
	}
	res := AppendResult{State: s.Clone()}
	joinNexts := map[JoinSetId]uint32{}
	v := version
	for _, req := range batch {
		if req.Event == nil {
			return AppendResult{}, invalid("missing event")
		}
		st := &res.State
		if _, ok := req.Event.(*Created); ok {
			return AppendResult{}, invalid("cannot append `Created` event - use `create` instead")
		}
		if lock, ok := req.Event.(*Locked); ok {
			kind, err := applyLock(st, v, req.CreatedAt, lock, opts)
			if err != nil {
				return AppendResult{}, err
			}
			res.LockKind = kind
		} else {
			if st.IsFinished() {
				return AppendResult{}, ErrAlreadyFinished
			}
			if v != st.Version+1 {
				return AppendResult{}, &VersionConflictError{Expected: st.Version + 1, Requested: v}
			}
			delay, err := applyEvent(st, v, req, js, joinNexts)
			if err != nil {
				return AppendResult{}, err
			}
			if delay != nil {
				res.Delays = append(res.Delays, *delay)
			}
		}
		st.Version = v
		res.Events = append(res.Events, ExecutionEvent{CreatedAt: req.CreatedAt, Event: req.Event, Version: v})
		v++
	}
	res.NextVersion = res.State.NextVersion()
	return res, nil
}

// applyLock is the lock path of §3.5 (expiry, state, then version checks).
func applyLock(st *ExecutionState, v Version, createdAt Timestamp, l *Locked, opts AppendOptions) (LockKind, error) {
	kind, err := CanAppendLock(st.PendingState(), createdAt, l.LockedBy(), l.LockExpiresAt)
	if err != nil {
		return 0, err
	}
	if v != st.Version+1 {
		return 0, &VersionConflictError{Expected: st.Version + 1, Requested: v}
	}
	by := l.LockedBy()
	st.State = StateLocked
	st.At = l.LockExpiresAt
	st.LastLock = &by
	lv := v
	st.LastLockVersion = &lv
	st.MaxRetries = nil
	if l.RetryConfig.MaxRetries != nil {
		m := *l.RetryConfig.MaxRetries
		st.MaxRetries = &m
	}
	ms := l.RetryConfig.RetryExpBackoff.Millis()
	if ms > 1<<63-1 {
		return 0, invalid("retry backoff out of range")
	}
	st.RetryExpBackoffMillis = &ms
	st.clearJoinSet()
	st.ResultKind = nil
	if !opts.KeepComponent {
		st.ComponentDigest = l.ComponentID.ComponentDigest
		st.DeploymentID = l.DeploymentID
	}
	return kind, nil
}

// applyEvent applies a non-lock event at version v (generic checks done).
func applyEvent(st *ExecutionState, v Version, req AppendRequest, js JoinSetLookup, joinNexts map[JoinSetId]uint32) (*DelayTimer, error) {
	switch ev := req.Event.(type) {
	case *Unlocked:
		switch {
		case st.Lifecycle == LifecyclePaused:
			return nil, &UnlockedCannotBeAppendedError{State: "paused"}
		case st.Lifecycle == LifecycleCancelling:
			return nil, &UnlockedCannotBeAppendedError{State: "cancelling"}
		case st.State == StatePendingAt:
			if !ev.UnlockedAt.Before(st.At) {
				return nil, &UnlockedCannotBeAppendedError{State: "pending"}
			}
			st.At = ev.UnlockedAt
		case st.State == StateLocked:
			st.State = StatePendingAt
			st.At = ev.UnlockedAt
			st.clearLock()
		case st.State == StateBlockedByJoinSet:
			st.At = ev.UnlockedAt
		}
	case *TemporarilyFailed:
		st.intermittent(ev.BackoffExpiresAt)
	case *TemporarilyTimedOut:
		st.intermittent(ev.BackoffExpiresAt)
	case *Finished:
		rk := ev.Retval.ResultKind()
		st.State = StateFinished
		st.Lifecycle = LifecycleActive
		st.At = req.CreatedAt
		st.ResultKind = &rk
		st.LastLock = nil
		st.clearLock()
		st.clearJoinSet()
	case *Paused:
		switch {
		case st.Lifecycle == LifecyclePaused:
			return nil, illegal("cannot pause, execution is already paused")
		case st.Lifecycle == LifecycleCancelling:
			return nil, illegal("cannot pause, execution is cancelling")
		case st.State == StateLocked:
			return nil, illegal("cannot append Paused event when execution is locked; use pause_execution")
		}
		st.Lifecycle = LifecyclePaused
	case *Unpaused:
		if st.Lifecycle != LifecyclePaused {
			return nil, illegal("cannot unpause, execution is not paused")
		}
		st.Lifecycle = LifecycleActive
	case *CancellationRequested:
		if st.Lifecycle == LifecycleCancelling {
			return nil, illegal("cannot append CancellationRequested event, execution is already cancelling")
		}
		st.Lifecycle = LifecycleCancelling
	case *ComponentUpgradeFinished:
		if ev.Outcome.Success {
			st.ComponentDigest = ev.ComponentDigest
			st.DeploymentID = ev.DeploymentID
			st.IncompatibleDigest = nil
		} else {
			d := ev.ComponentDigest
			st.IncompatibleDigest = &d
		}
	case *HistoryEventRequest:
		switch h := ev.Event.(type) {
		case *JoinNext:
			n := js.JoinNextCount(h.JoinSetID) + joinNexts[h.JoinSetID] + 1
			joinNexts[h.JoinSetID]++
			st.clearLock()
			if respAt, ok := js.NthResponse(h.JoinSetID, n); ok {
				st.State = StatePendingAt
				st.At = MaxTS(h.RunExpiresAt, respAt)
				st.clearJoinSet()
			} else {
				jsID := h.JoinSetID
				st.State = StateBlockedByJoinSet
				st.JoinSetID = &jsID
				st.JoinSetClosing = h.Closing
				st.At = h.RunExpiresAt
			}
		case *JoinSetRequestEvent:
			if d, ok := h.Request.(*DelayRequest); ok {
				return &DelayTimer{ExecutionID: st.ExecutionID, JoinSetID: h.JoinSetID, DelayID: d.DelayID,
					ExpiresAt: d.ExpiresAt, Paused: d.Paused}, nil
			}
		case nil:
			return nil, invalid("missing history event")
		}
	default:
		return nil, invalid(fmt.Sprintf("unsupported event %T", ev))
	}
	return nil, nil
}

func (s *ExecutionState) intermittent(backoffExpiresAt Timestamp) {
	s.State = StatePendingAt
	s.At = backoffExpiresAt
	s.IntermittentEventCount++
	s.clearLock()
	s.clearJoinSet()
}

// NewExecution builds the state and events written by create (docs/spec/semantics.md §3.4):
// Created at version 0 and, if req.Paused, Paused at version 1. It returns the
// next version (1, or 2 when paused).
func NewExecution(req CreateRequest) (ExecutionState, []ExecutionEvent, Version, error) {
	if err := req.Validate(); err != nil {
		return ExecutionState{}, nil, 0, err
	}
	st := ExecutionState{
		ExecutionID:      req.ExecutionID,
		FFQN:             req.FFQN,
		CreatedAt:        req.CreatedAt,
		FirstScheduledAt: req.ScheduledAt,
		ComponentType:    req.ComponentID.ComponentType,
		ComponentDigest:  req.ComponentID.ComponentDigest,
		DeploymentID:     req.DeploymentID,
		Version:          0,
		State:            StatePendingAt,
		Lifecycle:        LifecycleActive,
		At:               req.ScheduledAt,
	}
	events := []ExecutionEvent{{CreatedAt: req.CreatedAt, Event: req.CreatedEvent(), Version: 0}}
	if req.Paused {
		st.Lifecycle = LifecyclePaused
		st.Version = 1
		events = append(events, ExecutionEvent{CreatedAt: req.CreatedAt, Event: &Paused{}, Version: 1})
	}
	return st, events, st.Version + 1, nil
}

// Validate checks that the request is complete.
func (c *CreateRequest) Validate() error {
	switch {
	case c.ExecutionID.IsZero():
		return invalid("missing execution_id")
	case c.FFQN.IsZero():
		return invalid("missing ffqn")
	}
	if err := c.ComponentID.Validate(); err != nil {
		return err
	}
	if c.Parent != nil && c.Parent.ExecutionID.IsZero() {
		return invalid("invalid parent")
	}
	return nil
}

// ApplyResponse records a response arriving for the execution in state s
// (docs/spec/semantics.md §3.12): it allocates the next cursor and applies the unblock rule — an
// execution blocked on the response's join set with lifecycle active or
// paused becomes pending at max(block.lock_expires_at, createdAt). The version
// never changes. It returns the new state, the cursor and whether it unblocked.
func ApplyResponse(s ExecutionState, js JoinSetId, createdAt Timestamp) (ExecutionState, ResponseCursor, bool) {
	st := s.Clone()
	st.MaxCursor++
	unblocked := false
	if st.State == StateBlockedByJoinSet && st.JoinSetID != nil && *st.JoinSetID == js &&
		(st.Lifecycle == LifecycleActive || st.Lifecycle == LifecyclePaused) {
		st.State = StatePendingAt
		st.At = MaxTS(st.At, createdAt)
		st.clearJoinSet()
		st.clearLock()
		unblocked = true
	}
	return st, st.MaxCursor, unblocked
}

// IsPendingActive reports whether the execution can be locked at `at`:
// PendingAt, lifecycle active, scheduled at or before at.
func (s *ExecutionState) IsPendingActive(at Timestamp) bool {
	return s.State == StatePendingAt && s.Lifecycle == LifecycleActive && !s.At.After(at)
}

// --- retries and timers -----------------------------------------------------

// CanBeRetriedAfter implements ExecutionLog::can_be_retried_after: count is
// the ordinal of the failure about to be recorded (≥ 1). A retry is allowed iff
// count <= maxRetries (nil = forever); the delay is backoff × 2^(count-1),
// the power saturating at MaxUint32 and the product at the largest Duration.
func CanBeRetriedAfter(count uint32, maxRetries *uint32, backoff Duration) (Duration, bool) {
	limit := ^uint32(0)
	if maxRetries != nil {
		limit = *maxRetries
	}
	if count > limit {
		return Duration{}, false
	}
	if count == 0 {
		count = 1
	}
	pow := uint64(1)
	if count-1 >= 32 {
		pow = uint64(^uint32(0))
	} else {
		pow = 1 << (count - 1)
		if pow > uint64(^uint32(0)) {
			pow = uint64(^uint32(0))
		}
	}
	return mulDuration(backoff, pow), true
}

func mulDuration(d Duration, k uint64) Duration {
	const maxU64 = ^uint64(0)
	totalNanos := uint64(d.Nanos) * k // < 1e9 * 2^32, fits
	carry := totalNanos / 1_000_000_000
	nanos := uint32(totalNanos % 1_000_000_000)
	if d.Secs != 0 && k > maxU64/d.Secs {
		return Duration{Secs: maxU64, Nanos: 999_999_999}
	}
	secs := d.Secs * k
	if secs > maxU64-carry {
		return Duration{Secs: maxU64, Nanos: 999_999_999}
	}
	return Duration{Secs: secs + carry, Nanos: nanos}
}

// ExpiredLock is an expired lock found by the timer sweep (docs/spec/semantics.md §5.1).
type ExpiredLock struct {
	ExecutionID ExecutionId
	// LockedAtVersion is the version of the current Locked event.
	LockedAtVersion        Version
	NextVersion            Version
	IntermittentEventCount uint32
	MaxRetries             *uint32
	RetryExpBackoff        Duration
	LockedBy               LockedBy
	// LockExpiresAt is when the lock expired: how late the sweep is for it
	// (sweep lag) is measured from here.
	LockExpiresAt Timestamp
}

// ExpiredDelay is a due, unpaused delay.
type ExpiredDelay struct {
	ExecutionID ExecutionId
	JoinSetID   JoinSetId
	DelayID     DelayId
	// ExpiresAt is the delay's deadline (the sweep lag is measured from it).
	ExpiresAt Timestamp
}

// ExpiredTimer is one of Lock or Delay.
type ExpiredTimer struct {
	Lock  *ExpiredLock
	Delay *ExpiredDelay
}

// ExpiredLockOf returns the expired-lock record for a locked, active state
// whose lock expired at or before `at`; ok is false otherwise (including
// Cancelling(Locked), which the cancellation driver handles).
func ExpiredLockOf(s *ExecutionState, at Timestamp) (ExpiredLock, bool) {
	if s.State != StateLocked || s.Lifecycle != LifecycleActive || s.At.After(at) || s.LastLock == nil || s.LastLockVersion == nil {
		return ExpiredLock{}, false
	}
	var backoff Duration
	if s.RetryExpBackoffMillis != nil {
		backoff = DurationFromMillis(*s.RetryExpBackoffMillis)
	}
	var maxRetries *uint32
	if s.MaxRetries != nil {
		m := *s.MaxRetries
		maxRetries = &m
	}
	return ExpiredLock{
		ExecutionID: s.ExecutionID, LockedAtVersion: *s.LastLockVersion, NextVersion: s.Version + 1,
		IntermittentEventCount: s.IntermittentEventCount, MaxRetries: maxRetries,
		RetryExpBackoff: backoff, LockedBy: *s.LastLock, LockExpiresAt: s.At,
	}, true
}

// ExpiredLockAction is what the timer sweep must write for an expired lock.
type ExpiredLockAction struct {
	// Request is the event to append at Version (Unlocked, TemporarilyTimedOut or Finished).
	Request AppendRequest
	Version Version
	// RespondToParent is set when a derived execution is finished: the
	// response must be written with the Finished event (append_batch_respond_to_parent).
	RespondToParent *AppendResponseToExecution
}

// DecideExpiredLock implements the watcher's decision (docs/spec/semantics.md §5.2), writing
// at l.NextVersion with created_at = executedAt:
//  1. a workflow (MaxRetries nil) that made progress since its lock → Unlocked("made progress");
//  2. else if a retry is allowed → TemporarilyTimedOut(executedAt + backoff);
//  3. else → Finished(execution_failure timed_out), responding to the parent if derived.
func DecideExpiredLock(l ExpiredLock, executedAt Timestamp) ExpiredLockAction {
	act := ExpiredLockAction{Version: l.NextVersion}
	if l.MaxRetries == nil && l.LockedAtVersion+1 < l.NextVersion {
		act.Request = AppendRequest{CreatedAt: executedAt, Event: &Unlocked{UnlockedAt: executedAt, Reason: "made progress"}}
		return act
	}
	if d, ok := CanBeRetriedAfter(l.IntermittentEventCount+1, l.MaxRetries, l.RetryExpBackoff); ok {
		std, fits := d.Std()
		if !fits {
			std = time.Duration(1<<63 - 1)
		}
		act.Request = AppendRequest{CreatedAt: executedAt, Event: &TemporarilyTimedOut{BackoffExpiresAt: addSaturating(executedAt, std)}}
		return act
	}
	retval := RetFailure(FailureTimedOut, nil, nil)
	act.Request = AppendRequest{CreatedAt: executedAt, Event: &Finished{Retval: retval}}
	if parent, js, ok := l.ExecutionID.SplitToParts(); ok {
		act.RespondToParent = &AppendResponseToExecution{
			ParentExecutionID: parent, CreatedAt: executedAt, JoinSetID: js,
			ChildExecutionID: ExecutionIdDerived{l.ExecutionID}, FinishedVersion: l.NextVersion, Result: retval,
		}
	}
	return act
}

func addSaturating(t Timestamp, d time.Duration) Timestamp {
	max := TS(time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC))
	if d > max.Sub(t.Time) {
		return max
	}
	return t.Add(d)
}
