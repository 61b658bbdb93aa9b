package sqlite

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/stela-dev/stela/core"
)

// Timestamps are stored in core's sortable form (core.Timestamp.SortableText):
// fixed-width UTC text whose byte order is chronological, nanoseconds kept.
var tsText = core.Timestamp.SortableText

func parseTS(s string) (core.Timestamp, error) {
	ts, err := core.ParseSortableText(s)
	if err != nil {
		return core.Timestamp{}, fmt.Errorf("stored timestamp: %w", err)
	}
	return ts, nil
}

// --- enums ----------------------------------------------------------------------

var stateNames = map[core.StateKind]string{
	core.StatePendingAt:        "pending_at",
	core.StateLocked:           "locked",
	core.StateBlockedByJoinSet: "blocked_by_join_set",
	core.StateFinished:         "finished",
}

var lifecycleNames = map[core.Lifecycle]string{
	core.LifecycleActive:     "active",
	core.LifecyclePaused:     "paused",
	core.LifecycleCancelling: "cancelling",
}

func stateText(k core.StateKind) (string, error) {
	if s, ok := stateNames[k]; ok {
		return s, nil
	}
	return "", fmt.Errorf("invalid state %d", k)
}

func lifecycleText(l core.Lifecycle) (string, error) {
	if s, ok := lifecycleNames[l]; ok {
		return s, nil
	}
	return "", fmt.Errorf("invalid lifecycle %d", l)
}

func parseState(s string) (core.StateKind, error) {
	switch s {
	case "pending_at":
		return core.StatePendingAt, nil
	case "locked":
		return core.StateLocked, nil
	case "blocked_by_join_set":
		return core.StateBlockedByJoinSet, nil
	case "finished":
		return core.StateFinished, nil
	}
	return 0, fmt.Errorf("invalid stored state %q", s)
}

func parseLifecycle(s string) (core.Lifecycle, error) {
	switch s {
	case "active":
		return core.LifecycleActive, nil
	case "paused":
		return core.LifecyclePaused, nil
	case "cancelling":
		return core.LifecycleCancelling, nil
	}
	return 0, fmt.Errorf("invalid stored lifecycle %q", s)
}

// --- heads ------------------------------------------------------------------------

// headCols is the column list read by scanHead, in order.
const headCols = `execution_id, ffqn, created_at, first_scheduled_at, component_type, component_digest,
	deployment_id, incompatible_digest, version, state, lifecycle, at, executor_id, run_id,
	last_lock_version, max_retries, retry_exp_backoff_millis, join_set_id, join_set_closing,
	result_kind, intermittent_event_count, max_cursor`

const sqlInsertHead = `INSERT INTO t_state (` + headCols + `, is_top_level, seq)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// sqlUpdateHead writes only the mutable columns, so the indexes over
// immutable ones (created_at, ffqn, is_top_level) are not touched.
const sqlUpdateHead = `UPDATE t_state SET component_digest = ?, deployment_id = ?, incompatible_digest = ?,
	version = ?, state = ?, lifecycle = ?, at = ?, executor_id = ?, run_id = ?, last_lock_version = ?,
	max_retries = ?, retry_exp_backoff_millis = ?, join_set_id = ?, join_set_closing = ?, result_kind = ?,
	intermittent_event_count = ?, max_cursor = ?
	WHERE execution_id = ?`

// sqlUpdateHeadFinished is sqlUpdateHead that also records when the
// service saw the execution finish (RecordFinished), in the same statement.
const sqlUpdateHeadFinished = `UPDATE t_state SET component_digest = ?, deployment_id = ?, incompatible_digest = ?,
	version = ?, state = ?, lifecycle = ?, at = ?, executor_id = ?, run_id = ?, last_lock_version = ?,
	max_retries = ?, retry_exp_backoff_millis = ?, join_set_id = ?, join_set_closing = ?, result_kind = ?,
	intermittent_event_count = ?, max_cursor = ?, finished_recorded_at = ?
	WHERE execution_id = ?`

// updateCols are the columns sqlUpdateHeadFinished sets, in its order (the
// first len-1 are sqlUpdateHead's).
var updateCols = []string{"component_digest", "deployment_id", "incompatible_digest", "version", "state",
	"lifecycle", "at", "executor_id", "run_id", "last_lock_version", "max_retries", "retry_exp_backoff_millis",
	"join_set_id", "join_set_closing", "result_kind", "intermittent_event_count", "max_cursor", "finished_recorded_at"}

// maxNarrowUpdates bounds the narrow UPDATE statements a connection
// prepares (one per set of changed columns; a handful occur).
const maxNarrowUpdates = 64

// changedColumns returns the UPDATE of a head from prev (as the database
// holds it) to args (updateArgs, or updateFinishedArgs with the finish
// time) that sets only the columns whose values differ (a finish time
// always), and its arguments; ok is false when the full statement should
// run instead (prev does not encode, every column changes, or too many
// statement shapes). SQLite leaves alone an index none of whose columns an
// UPDATE sets: a head whose state, lifecycle, time and deployment stay
// (a response to a waiting parent, a lease extension) no longer rewrites
// its entries in the pending, locked, deployment and retention indexes.
func (c *conn) changedColumns(prev *core.ExecutionState, args []any) (string, []any, bool) {
	old, err := encodeHead(prev)
	if err != nil {
		return "", nil, false
	}
	before := old.updateArgs()
	n := len(args) - 1 // the last argument is the id
	var mask uint32
	for i := range n {
		if i >= len(before)-1 || !sameArg(before[i], args[i]) { // finished_recorded_at: always set
			mask |= 1 << i
		}
	}
	if mask == 1<<n-1 {
		return "", nil, false // every column changes: the full statement
	}
	q, ok := c.narrow[mask]
	if !ok {
		if len(c.narrow) >= maxNarrowUpdates {
			return "", nil, false
		}
		var b strings.Builder
		b.WriteString("UPDATE t_state SET ")
		sep := ""
		for i := range n {
			if mask&(1<<i) != 0 {
				b.WriteString(sep + updateCols[i] + " = ?")
				sep = ", "
			}
		}
		if mask == 0 { // nothing changed: still check that the row is there
			b.WriteString("version = version")
		}
		b.WriteString(" WHERE execution_id = ?")
		q = b.String()
		if c.narrow == nil {
			c.narrow = map[uint32]string{}
		}
		c.narrow[mask] = q
	}
	out := make([]any, 0, n+1)
	for i := range n {
		if mask&(1<<i) != 0 {
			out = append(out, args[i])
		}
	}
	return q, append(out, args[n]), true
}

// sameArg reports whether two column values of updateArgs are equal.
func sameArg(a, b any) bool {
	if x, ok := a.([]byte); ok {
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	}
	if _, ok := b.([]byte); ok {
		return false
	}
	return a == b
}

// headRow holds the column values of a head, in headCols order.
type headRow struct {
	id, ffqn, createdAt, firstScheduledAt, componentType string
	componentDigest                                      []byte
	deploymentID                                         string
	incompatibleDigest                                   []byte
	version                                              int64
	state, lifecycle, at                                 string
	executorID, runID                                    any
	lastLockVersion, maxRetries, retryBackoff            any
	joinSetID                                            any
	joinSetClosing                                       int64
	resultKind                                           any
	intermittent, maxCursor                              int64
}

func encodeHead(st *core.ExecutionState) (headRow, error) {
	var r headRow
	if st.ExecutionID.IsZero() {
		return r, fmt.Errorf("zero execution id")
	}
	state, err := stateText(st.State)
	if err != nil {
		return r, err
	}
	lc, err := lifecycleText(st.Lifecycle)
	if err != nil {
		return r, err
	}
	r = headRow{
		id: st.ExecutionID.String(), ffqn: st.FFQN.String(), createdAt: tsText(st.CreatedAt),
		firstScheduledAt: tsText(st.FirstScheduledAt), componentType: string(st.ComponentType),
		componentDigest: digestBytes(st.ComponentDigest.Digest), deploymentID: st.DeploymentID.String(),
		version: int64(st.Version), state: state, lifecycle: lc, at: tsText(st.At),
		intermittent: int64(st.IntermittentEventCount), maxCursor: int64(st.MaxCursor),
	}
	if st.IncompatibleDigest != nil {
		r.incompatibleDigest = digestBytes(st.IncompatibleDigest.Digest)
	}
	if st.LastLock != nil {
		r.executorID, r.runID = st.LastLock.ExecutorID.String(), st.LastLock.RunID.String()
	}
	if st.LastLockVersion != nil {
		r.lastLockVersion = int64(*st.LastLockVersion)
	}
	if st.MaxRetries != nil {
		r.maxRetries = int64(*st.MaxRetries)
	}
	if st.RetryExpBackoffMillis != nil {
		// Bit-cast: values above MaxInt64 (saturated durations) round-trip.
		r.retryBackoff = int64(*st.RetryExpBackoffMillis)
	}
	if st.JoinSetID != nil {
		r.joinSetID = st.JoinSetID.String()
	}
	if st.JoinSetClosing {
		r.joinSetClosing = 1
	}
	if st.ResultKind != nil {
		b, err := json.Marshal(st.ResultKind)
		if err != nil {
			return r, fmt.Errorf("encode result kind: %w", err)
		}
		r.resultKind = string(b)
	}
	return r, nil
}

func (r *headRow) insertArgs(seq int64) []any {
	top := 0
	if isTopLevelString(r.id) {
		top = 1
	}
	return []any{r.id, r.ffqn, r.createdAt, r.firstScheduledAt, r.componentType, r.componentDigest,
		r.deploymentID, nullBytes(r.incompatibleDigest), r.version, r.state, r.lifecycle, r.at, r.executorID, r.runID,
		r.lastLockVersion, r.maxRetries, r.retryBackoff, r.joinSetID, r.joinSetClosing,
		r.resultKind, r.intermittent, r.maxCursor, top, seq}
}

func (r *headRow) updateArgs() []any {
	return []any{r.componentDigest, r.deploymentID, nullBytes(r.incompatibleDigest), r.version, r.state,
		r.lifecycle, r.at, r.executorID, r.runID, r.lastLockVersion, r.maxRetries, r.retryBackoff,
		r.joinSetID, r.joinSetClosing, r.resultKind, r.intermittent, r.maxCursor, r.id}
}

// updateFinishedArgs are the arguments of sqlUpdateHeadFinished.
func (r *headRow) updateFinishedArgs(finishedAt string) []any {
	return []any{r.componentDigest, r.deploymentID, nullBytes(r.incompatibleDigest), r.version, r.state,
		r.lifecycle, r.at, r.executorID, r.runID, r.lastLockVersion, r.maxRetries, r.retryBackoff,
		r.joinSetID, r.joinSetClosing, r.resultKind, r.intermittent, r.maxCursor, finishedAt, r.id}
}

// isTopLevelString reports whether a canonical execution id is top-level
// (derived ids contain '.').
func isTopLevelString(id string) bool {
	for i := 0; i < len(id); i++ {
		if id[i] == '.' {
			return false
		}
	}
	return true
}

func nullBytes(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}

func digestBytes(d core.Digest) []byte { return append([]byte(nil), d[:]...) }

func bytesDigest(b []byte) (core.Digest, error) {
	var d core.Digest
	if len(b) != len(d) {
		return d, fmt.Errorf("invalid stored digest of %d bytes", len(b))
	}
	copy(d[:], b)
	return d, nil
}

type scanner interface{ Scan(dest ...any) error }

// scanHead reads one row of headCols.
func scanHead(s scanner) (core.ExecutionState, error) {
	var (
		id, ffqn, createdAt, firstScheduledAt, componentType string
		digest, incompatible                                 []byte
		deploymentID                                         string
		version                                              int64
		state, lifecycle, at                                 string
		executorID, runID, joinSetID, resultKind             sql.NullString
		lastLockVersion, maxRetries, retryBackoff            sql.NullInt64
		closing, intermittent, maxCursor                     int64
	)
	if err := s.Scan(&id, &ffqn, &createdAt, &firstScheduledAt, &componentType, &digest, &deploymentID,
		&incompatible, &version, &state, &lifecycle, &at, &executorID, &runID, &lastLockVersion,
		&maxRetries, &retryBackoff, &joinSetID, &closing, &resultKind, &intermittent, &maxCursor); err != nil {
		return core.ExecutionState{}, err
	}
	var st core.ExecutionState
	var err error
	if st.ExecutionID, err = core.ParseExecutionId(id); err != nil {
		return st, fmt.Errorf("decode head: %w", err)
	}
	fail := func(err error) (core.ExecutionState, error) {
		return core.ExecutionState{}, fmt.Errorf("decode head %s: %w", id, err)
	}
	if st.FFQN, err = core.ParseFunctionFqn(ffqn); err != nil {
		return fail(err)
	}
	if st.CreatedAt, err = parseTS(createdAt); err != nil {
		return fail(err)
	}
	if st.FirstScheduledAt, err = parseTS(firstScheduledAt); err != nil {
		return fail(err)
	}
	st.ComponentType = core.ComponentType(componentType)
	if st.ComponentDigest.Digest, err = bytesDigest(digest); err != nil {
		return fail(err)
	}
	if st.DeploymentID, err = core.ParseDeploymentId(deploymentID); err != nil {
		return fail(err)
	}
	if incompatible != nil {
		d, err := bytesDigest(incompatible)
		if err != nil {
			return fail(err)
		}
		st.IncompatibleDigest = &core.ComponentDigest{Digest: d}
	}
	st.Version = core.Version(version)
	if st.State, err = parseState(state); err != nil {
		return fail(err)
	}
	if st.Lifecycle, err = parseLifecycle(lifecycle); err != nil {
		return fail(err)
	}
	if st.At, err = parseTS(at); err != nil {
		return fail(err)
	}
	if executorID.Valid && runID.Valid {
		var lb core.LockedBy
		if lb.ExecutorID, err = core.ParseExecutorId(executorID.String); err != nil {
			return fail(err)
		}
		if lb.RunID, err = core.ParseRunId(runID.String); err != nil {
			return fail(err)
		}
		st.LastLock = &lb
	}
	if lastLockVersion.Valid {
		v := core.Version(lastLockVersion.Int64)
		st.LastLockVersion = &v
	}
	if maxRetries.Valid {
		v := uint32(maxRetries.Int64)
		st.MaxRetries = &v
	}
	if retryBackoff.Valid {
		v := uint64(retryBackoff.Int64)
		st.RetryExpBackoffMillis = &v
	}
	if joinSetID.Valid {
		js, err := core.ParseJoinSetId(joinSetID.String)
		if err != nil {
			return fail(err)
		}
		st.JoinSetID = &js
	}
	st.JoinSetClosing = closing != 0
	if resultKind.Valid {
		var rk core.ResultKind
		if err := json.Unmarshal([]byte(resultKind.String), &rk); err != nil {
			return fail(err)
		}
		st.ResultKind = &rk
	}
	st.IntermittentEventCount = uint32(intermittent)
	st.MaxCursor = core.ResponseCursor(maxCursor)
	return st, nil
}

// --- events and responses -----------------------------------------------------------

// eventColumns derives the indexed columns of an event row.
func eventColumns(r core.ExecutionRequest) (variant string, joinSet, historyType any) {
	variant = r.Variant()
	if js, ok := core.RequestJoinSetID(r); ok {
		joinSet = js.String()
	}
	if h, ok := r.(*core.HistoryEventRequest); ok && h.Event != nil {
		historyType = h.Event.HistoryType()
	}
	return variant, joinSet, historyType
}

func scanEvent(s scanner) (core.ExecutionEvent, error) {
	var (
		version   int64
		createdAt string
		body      []byte
	)
	if err := s.Scan(&version, &createdAt, &body); err != nil {
		return core.ExecutionEvent{}, err
	}
	ts, err := parseTS(createdAt)
	if err != nil {
		return core.ExecutionEvent{}, fmt.Errorf("decode event %d: %w", version, err)
	}
	req, err := core.DecodeExecutionRequest(body)
	if err != nil {
		return core.ExecutionEvent{}, fmt.Errorf("decode event %d: %w", version, err)
	}
	return core.ExecutionEvent{CreatedAt: ts, Event: req, Version: core.Version(version)}, nil
}

func scanResponse(s scanner) (core.ResponseWithCursor, error) {
	var (
		cursor    int64
		createdAt string
		body      []byte
	)
	if err := s.Scan(&cursor, &createdAt, &body); err != nil {
		return core.ResponseWithCursor{}, err
	}
	ts, err := parseTS(createdAt)
	if err != nil {
		return core.ResponseWithCursor{}, fmt.Errorf("decode response %d: %w", cursor, err)
	}
	var ev core.JoinSetResponseEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return core.ResponseWithCursor{}, fmt.Errorf("decode response %d: %w", cursor, err)
	}
	return core.ResponseWithCursor{
		Event:  core.JoinSetResponseEventOuter{CreatedAt: ts, Event: ev},
		Cursor: core.ResponseCursor(cursor),
	}, nil
}
