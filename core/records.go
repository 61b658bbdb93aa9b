package core

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
)

// Records of the portable export format (`stela export` / `stela import`,
// package transfer): everything a store keeps of one execution, and the
// logs of one execution tree, with their canonical JSON and digest. A
// record is what the source store would answer for the execution, not how
// it lays it out: the ids, versions, timestamps and events' JSON are kept
// byte for byte, the store-private bookkeeping (SQLite's insertion
// sequence, DynamoDB's revisions, inboxes and index keys) is not — the
// destination derives its own from the record.

// ExecutionRecord is one execution as a store keeps it.
type ExecutionRecord struct {
	// Head is the execution's state (its ExecutionID names the record).
	Head ExecutionState
	// FinishRecordedAt is when the store recorded the finish by its own
	// clock (RetentionMember.FinishedAt); nil when the execution is not
	// finished or finished before the store recorded finishes.
	FinishRecordedAt *Timestamp
	// Events are versions 0 … Head.Version, ascending (BacktraceID nil).
	Events []ExecutionEvent
	// Responses are cursors 1 … Head.MaxCursor, ascending.
	Responses []ResponseWithCursor
	// Delays are the timer rows the execution owns (delays requested and
	// neither fired nor cancelled), by join set then delay id.
	Delays []DelayTimer
	// Backtraces are the execution's backtraces by version range.
	Backtraces []BacktraceInfo
}

// Normalize puts the delays and backtraces in the record's canonical order
// (backends return them in their own).
func (r *ExecutionRecord) Normalize() {
	slices.SortFunc(r.Delays, func(a, b DelayTimer) int {
		return cmp.Or(cmp.Compare(a.JoinSetID.String(), b.JoinSetID.String()), cmp.Compare(a.DelayID.String(), b.DelayID.String()))
	})
	slices.SortFunc(r.Backtraces, func(a, b BacktraceInfo) int {
		return cmp.Or(cmp.Compare(a.VersionMinIncluding, b.VersionMinIncluding), cmp.Compare(a.VersionMaxExcluding, b.VersionMaxExcluding))
	})
}

// Validate checks that the record is complete and self-consistent: a valid
// state, events 0 … Version without gaps starting with Created, responses
// 1 … MaxCursor, delays and backtraces of this execution (in canonical
// order), a finish time only on a finished execution.
func (r *ExecutionRecord) Validate() error {
	id := r.Head.ExecutionID
	bad := func(format string, args ...any) error {
		return invalidf("execution record %s: %s", id, fmt.Sprintf(format, args...))
	}
	if id.IsZero() {
		return invalidf("execution record without execution id")
	}
	if err := r.Head.Validate(); err != nil {
		return bad("%v", err)
	}
	if len(r.Events) != int(r.Head.Version)+1 {
		return bad("%d events for version %d", len(r.Events), r.Head.Version)
	}
	for i, ev := range r.Events {
		if ev.Version != Version(i) || ev.Event == nil || ev.BacktraceID != nil {
			return bad("event %d out of place (version %d)", i, ev.Version)
		}
	}
	if _, ok := r.Events[0].Event.(*Created); !ok {
		return bad("event 0 is %s, not created", r.Events[0].Event.Variant())
	}
	if len(r.Responses) != int(r.Head.MaxCursor) {
		return bad("%d responses for max cursor %d", len(r.Responses), r.Head.MaxCursor)
	}
	for i, resp := range r.Responses {
		if resp.Cursor != ResponseCursor(i+1) || resp.Event.Event.Event == nil {
			return bad("response %d out of place (cursor %d)", i+1, resp.Cursor)
		}
	}
	for _, d := range r.Delays {
		if owner, js := d.DelayID.SplitToParts(); d.ExecutionID != id || owner != id || js != d.JoinSetID {
			return bad("delay %s of another execution or join set", d.DelayID)
		}
	}
	for _, bt := range r.Backtraces {
		if bt.ExecutionID != id || bt.VersionMinIncluding >= bt.VersionMaxExcluding {
			return bad("backtrace [%d, %d) of %s", bt.VersionMinIncluding, bt.VersionMaxExcluding, bt.ExecutionID)
		}
	}
	c := *r
	c.Delays, c.Backtraces = slices.Clone(r.Delays), slices.Clone(r.Backtraces)
	c.Normalize()
	if !reflect.DeepEqual(c.Delays, r.Delays) || !reflect.DeepEqual(c.Backtraces, r.Backtraces) {
		return bad("delays or backtraces out of order")
	}
	if r.FinishRecordedAt != nil && !r.Head.IsFinished() {
		return bad("a finish time on an unfinished execution")
	}
	return nil
}

// headJSON is the portable form of ExecutionState (t_state's columns).
type headJSON struct {
	FFQN                   FunctionFqn      `json:"ffqn"`
	CreatedAt              Timestamp        `json:"created_at"`
	FirstScheduledAt       Timestamp        `json:"first_scheduled_at"`
	ComponentType          ComponentType    `json:"component_type"`
	ComponentDigest        ComponentDigest  `json:"component_digest"`
	DeploymentID           DeploymentId     `json:"deployment_id"`
	IncompatibleDigest     *ComponentDigest `json:"incompatible_digest"`
	Version                Version          `json:"version"`
	State                  string           `json:"state"`
	Lifecycle              string           `json:"lifecycle"`
	At                     Timestamp        `json:"at"`
	LastLock               *LockedBy        `json:"last_lock"`
	LastLockVersion        *Version         `json:"last_lock_version"`
	MaxRetries             *uint32          `json:"max_retries"`
	RetryExpBackoffMillis  *uint64          `json:"retry_exp_backoff_millis"`
	JoinSetID              *JoinSetId       `json:"join_set_id"`
	JoinSetClosing         bool             `json:"join_set_closing"`
	ResultKind             *ResultKind      `json:"result_kind"`
	IntermittentEventCount uint32           `json:"intermittent_event_count"`
	MaxCursor              ResponseCursor   `json:"max_cursor"`
}

// delayJSON is a timer row of the record's execution.
type delayJSON struct {
	JoinSetID JoinSetId `json:"join_set_id"`
	DelayID   DelayId   `json:"delay_id"`
	ExpiresAt Timestamp `json:"expires_at"`
	Paused    bool      `json:"paused"`
}

// executionRecordJSON is the record's JSON: every field is required (null
// where nullable), unknown fields are refused.
type executionRecordJSON struct {
	ExecutionID      ExecutionId          `json:"execution_id"`
	Head             headJSON             `json:"head"`
	FinishRecordedAt *Timestamp           `json:"finish_recorded_at"`
	Events           []ExecutionEvent     `json:"events"`
	Responses        []ResponseWithCursor `json:"responses"`
	Delays           []delayJSON          `json:"delays"`
	Backtraces       []BacktraceInfo      `json:"backtraces"`
}

// MarshalJSON encodes the record canonically (core.MarshalJSON of its
// fields in declaration order; the delays and backtraces in the order the
// record holds them, see Normalize).
func (r ExecutionRecord) MarshalJSON() ([]byte, error) {
	s := &r.Head
	j := executionRecordJSON{
		ExecutionID: s.ExecutionID,
		Head: headJSON{FFQN: s.FFQN, CreatedAt: s.CreatedAt, FirstScheduledAt: s.FirstScheduledAt,
			ComponentType: s.ComponentType, ComponentDigest: s.ComponentDigest, DeploymentID: s.DeploymentID,
			IncompatibleDigest: s.IncompatibleDigest, Version: s.Version, State: s.State.String(),
			Lifecycle: s.Lifecycle.String(), At: s.At, LastLock: s.LastLock, LastLockVersion: s.LastLockVersion,
			MaxRetries: s.MaxRetries, RetryExpBackoffMillis: s.RetryExpBackoffMillis, JoinSetID: s.JoinSetID,
			JoinSetClosing: s.JoinSetClosing, ResultKind: s.ResultKind, IntermittentEventCount: s.IntermittentEventCount,
			MaxCursor: s.MaxCursor},
		FinishRecordedAt: r.FinishRecordedAt,
		Events:           nonNil(r.Events),
		Responses:        nonNil(r.Responses),
		Delays:           make([]delayJSON, len(r.Delays)),
		Backtraces:       nonNil(r.Backtraces),
	}
	for i, d := range r.Delays {
		j.Delays[i] = delayJSON{JoinSetID: d.JoinSetID, DelayID: d.DelayID, ExpiresAt: d.ExpiresAt, Paused: d.Paused}
	}
	return MarshalJSON(j)
}

// UnmarshalJSON decodes a record strictly: unknown fields anywhere in its
// own structure are an error, every field must be present, and the state
// and lifecycle must be known names. It does not Validate.
func (r *ExecutionRecord) UnmarshalJSON(b []byte) error {
	var j executionRecordJSON
	if err := decodeRecord(b, &j); err != nil {
		return fmt.Errorf("execution record: %w", err)
	}
	h := &j.Head
	st, err := parseStateKind(h.State)
	if err != nil {
		return err
	}
	lc, err := parseLifecycle(h.Lifecycle)
	if err != nil {
		return err
	}
	*r = ExecutionRecord{
		Head: ExecutionState{ExecutionID: j.ExecutionID, FFQN: h.FFQN, CreatedAt: h.CreatedAt,
			FirstScheduledAt: h.FirstScheduledAt, ComponentType: h.ComponentType, ComponentDigest: h.ComponentDigest,
			DeploymentID: h.DeploymentID, IncompatibleDigest: h.IncompatibleDigest, Version: h.Version, State: st,
			Lifecycle: lc, At: h.At, LastLock: h.LastLock, LastLockVersion: h.LastLockVersion, MaxRetries: h.MaxRetries,
			RetryExpBackoffMillis: h.RetryExpBackoffMillis, JoinSetID: h.JoinSetID, JoinSetClosing: h.JoinSetClosing,
			ResultKind: h.ResultKind, IntermittentEventCount: h.IntermittentEventCount, MaxCursor: h.MaxCursor},
		FinishRecordedAt: j.FinishRecordedAt,
		Events:           j.Events,
		Responses:        j.Responses,
		Backtraces:       j.Backtraces,
	}
	for _, d := range j.Delays {
		r.Delays = append(r.Delays, DelayTimer{ExecutionID: j.ExecutionID, JoinSetID: d.JoinSetID, DelayID: d.DelayID,
			ExpiresAt: d.ExpiresAt, Paused: d.Paused})
	}
	return nil
}

// Digest is the SHA-256 of the record's canonical JSON (MarshalJSON): two
// stores hold the same execution exactly when their records' digests are
// equal.
func (r *ExecutionRecord) Digest() (ContentDigest, error) { return digestOf(r.MarshalJSON) }

// digestOf is the SHA-256 of what marshal returns.
func digestOf(marshal func() ([]byte, error)) (ContentDigest, error) {
	b, err := marshal()
	if err != nil {
		return ContentDigest{}, err
	}
	return ContentDigestOf(b), nil
}

// TreeLogs are the logs of one execution tree (a top-level execution and
// every execution derived from it) in the order the store keeps them (its
// log cursors, which are store-private and not part of the record).
type TreeLogs struct {
	Root ExecutionId
	Rows []LogInfoAppendRow
}

// logJSON is one log row: a log line carries level and message, a stream
// chunk stream_type and payload (base64).
type logJSON struct {
	ExecutionID ExecutionId    `json:"execution_id"`
	RunID       RunId          `json:"run_id"`
	CreatedAt   Timestamp      `json:"created_at"`
	Level       *LogLevel      `json:"level,omitempty"`
	Message     *string        `json:"message,omitempty"`
	StreamType  *LogStreamType `json:"stream_type,omitempty"`
	Payload     *[]byte        `json:"payload,omitempty"`
}

type treeLogsJSON struct {
	Root ExecutionId `json:"root"`
	Rows []logJSON   `json:"rows"`
}

// MarshalJSON encodes the logs canonically.
func (l TreeLogs) MarshalJSON() ([]byte, error) {
	j := treeLogsJSON{Root: l.Root, Rows: make([]logJSON, len(l.Rows))}
	for i, r := range l.Rows {
		e := r.Entry
		row := logJSON{ExecutionID: r.ExecutionID, RunID: r.RunID, CreatedAt: e.CreatedAt}
		if e.IsStream() {
			st, payload := e.StreamType, append([]byte{}, e.Payload...)
			row.StreamType, row.Payload = &st, &payload
		} else {
			lv, msg := e.Level, e.Message
			row.Level, row.Message = &lv, &msg
		}
		j.Rows[i] = row
	}
	return MarshalJSON(j)
}

// UnmarshalJSON decodes the logs strictly (see ExecutionRecord.UnmarshalJSON).
func (l *TreeLogs) UnmarshalJSON(b []byte) error {
	var j treeLogsJSON
	if err := decodeRecord(b, &j); err != nil {
		return fmt.Errorf("tree logs: %w", err)
	}
	*l = TreeLogs{Root: j.Root}
	for i, r := range j.Rows {
		row := LogInfoAppendRow{ExecutionID: r.ExecutionID, RunID: r.RunID, Entry: LogEntry{CreatedAt: r.CreatedAt}}
		switch {
		case r.StreamType != nil && r.Payload != nil && r.Level == nil && r.Message == nil && *r.StreamType != 0:
			row.Entry.StreamType, row.Entry.Payload = *r.StreamType, *r.Payload
		case r.Level != nil && r.Message != nil && r.StreamType == nil && r.Payload == nil:
			row.Entry.Level, row.Entry.Message = *r.Level, *r.Message
		default:
			return invalidf("tree logs of %s: row %d is neither a log line (level, message) nor a stream chunk (stream_type, payload)", j.Root, i)
		}
		l.Rows = append(l.Rows, row)
	}
	return nil
}

// Validate checks that every row belongs to the tree of Root.
func (l *TreeLogs) Validate() error {
	if !l.Root.IsTopLevel() {
		return invalidf("tree logs: root %q is not a top-level execution id", l.Root)
	}
	for i, r := range l.Rows {
		if r.ExecutionID.TopLevel() != l.Root {
			return invalidf("tree logs of %s: row %d belongs to %s", l.Root, i, r.ExecutionID)
		}
	}
	return nil
}

// Digest is the SHA-256 of the logs' canonical JSON.
func (l *TreeLogs) Digest() (ContentDigest, error) { return digestOf(l.MarshalJSON) }

// SameLogRow reports whether a and b are the same log row as the export
// format sees it (what TreeLogs' JSON keeps).
func SameLogRow(a, b LogInfoAppendRow) bool {
	if a.ExecutionID != b.ExecutionID || a.RunID != b.RunID || !a.Entry.CreatedAt.Equal(b.Entry.CreatedAt) ||
		a.Entry.IsStream() != b.Entry.IsStream() {
		return false
	}
	if a.Entry.IsStream() {
		return a.Entry.StreamType == b.Entry.StreamType && bytes.Equal(a.Entry.Payload, b.Entry.Payload)
	}
	return a.Entry.Level == b.Entry.Level && a.Entry.Message == b.Entry.Message
}

// decodeRecord decodes data into v refusing unknown fields of v's own
// structs (types with their own decoding check themselves), then checks
// that every required field is present.
func decodeRecord(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeErr(err)
	}
	if dec.More() {
		return invalid("trailing data after the record")
	}
	return checkRequired(data, reflect.TypeOf(v).Elem(), "", "")
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func parseStateKind(s string) (StateKind, error) {
	for k := StatePendingAt; k <= StateFinished; k++ {
		if k.String() == s {
			return k, nil
		}
	}
	return 0, invalidf("unknown state %q", s)
}

func parseLifecycle(s string) (Lifecycle, error) {
	for l := LifecycleActive; l <= LifecycleCancelling; l++ {
		if l.String() == s {
			return l, nil
		}
	}
	return 0, invalidf("unknown lifecycle %q", s)
}

// Deployments in the export format: a deployment with its files,
// components and component files (in canonical order: files by path,
// components by name, component files by component then path; file sizes,
// which come from the CAS, are not part of it), component metadata and
// source mappings.

type deploymentJSON struct {
	DeploymentID   DeploymentId       `json:"deployment_id"`
	Description    *string            `json:"description"`
	Digest         ContentDigest      `json:"digest"`
	CreatedAt      Timestamp          `json:"created_at"`
	LastActiveAt   *Timestamp         `json:"last_active_at"`
	Status         DeploymentStatus   `json:"status"`
	DeploymentToml string             `json:"deployment_toml"`
	ObeliskVersion string             `json:"obelisk_version"`
	CreatedBy      *string            `json:"created_by"`
	Files          []depFileJSON      `json:"files"`
	Components     []depComponentJSON `json:"components"`
	ComponentFiles []depCompFileJSON  `json:"component_files"`
}

type depFileJSON struct {
	Path   string        `json:"path"`
	Digest ContentDigest `json:"digest"`
}

type depComponentJSON struct {
	ComponentName   string          `json:"component_name"`
	ComponentDigest ComponentDigest `json:"component_digest"`
	ComponentType   ComponentType   `json:"component_type"`
}

type depCompFileJSON struct {
	ComponentName string            `json:"component_name"`
	Path          string            `json:"path"`
	Role          ComponentFileRole `json:"role"`
}

// EncodeStoredDeployment returns d's canonical JSON; two stores hold the
// same deployment exactly when the encodings are equal.
func EncodeStoredDeployment(d StoredDeployment) ([]byte, error) {
	r := &d.Record
	j := deploymentJSON{DeploymentID: r.DeploymentID, Description: r.Description, Digest: r.Digest, CreatedAt: r.CreatedAt,
		LastActiveAt: r.LastActiveAt, Status: r.Status, DeploymentToml: r.DeploymentToml, ObeliskVersion: r.ObeliskVersion,
		CreatedBy: r.CreatedBy, Files: []depFileJSON{}, Components: []depComponentJSON{}, ComponentFiles: []depCompFileJSON{}}
	for _, f := range r.Files {
		j.Files = append(j.Files, depFileJSON{Path: f.Path, Digest: f.Digest})
	}
	for _, c := range d.Components {
		j.Components = append(j.Components, depComponentJSON{ComponentName: c.ComponentName,
			ComponentDigest: c.ComponentDigest, ComponentType: c.ComponentType})
	}
	for _, f := range d.ComponentFiles {
		j.ComponentFiles = append(j.ComponentFiles, depCompFileJSON{ComponentName: f.ComponentName, Path: f.Path, Role: f.Role})
	}
	slices.SortFunc(j.Files, func(a, b depFileJSON) int { return cmp.Compare(a.Path, b.Path) })
	slices.SortFunc(j.Components, func(a, b depComponentJSON) int { return cmp.Compare(a.ComponentName, b.ComponentName) })
	slices.SortFunc(j.ComponentFiles, func(a, b depCompFileJSON) int {
		return cmp.Or(cmp.Compare(a.ComponentName, b.ComponentName), cmp.Compare(a.Path, b.Path))
	})
	return MarshalJSON(j)
}

// DecodeStoredDeployment decodes EncodeStoredDeployment's JSON strictly.
func DecodeStoredDeployment(b []byte) (StoredDeployment, error) {
	var j deploymentJSON
	if err := decodeRecord(b, &j); err != nil {
		return StoredDeployment{}, fmt.Errorf("deployment record: %w", err)
	}
	switch j.Status {
	case DeploymentInactive, DeploymentEnqueued, DeploymentActive:
	default:
		return StoredDeployment{}, invalidf("deployment record %s: unknown status %q", j.DeploymentID, j.Status)
	}
	d := StoredDeployment{Record: DeploymentRecord{DeploymentID: j.DeploymentID, Description: j.Description, Digest: j.Digest,
		CreatedAt: j.CreatedAt, LastActiveAt: j.LastActiveAt, Status: j.Status, DeploymentToml: j.DeploymentToml,
		ObeliskVersion: j.ObeliskVersion, CreatedBy: j.CreatedBy}}
	for _, f := range j.Files {
		d.Record.Files = append(d.Record.Files, DeploymentFileRecord{Path: f.Path, Digest: f.Digest})
	}
	for _, c := range j.Components {
		d.Components = append(d.Components, DeploymentComponentRecord{DeploymentID: j.DeploymentID,
			ComponentName: c.ComponentName, ComponentDigest: c.ComponentDigest, ComponentType: c.ComponentType})
	}
	for _, f := range j.ComponentFiles {
		d.ComponentFiles = append(d.ComponentFiles, DeploymentComponentFileRecord{ComponentName: f.ComponentName, Path: f.Path, Role: f.Role})
	}
	return d, nil
}

type componentMetadataJSON struct {
	ComponentDigest ComponentDigest             `json:"component_digest"`
	Imports         []PersistedFunctionMetadata `json:"imports"`
	Exports         []PersistedFunctionMetadata `json:"exports"`
	Wit             string                      `json:"wit"`
	WitOrigin       WitOrigin                   `json:"wit_origin"`
}

// EncodeComponentMetadata returns m's canonical JSON.
func EncodeComponentMetadata(m ComponentMetadataRecord) ([]byte, error) {
	return MarshalJSON(componentMetadataJSON{ComponentDigest: m.ComponentDigest, Imports: nonNil(m.Imports),
		Exports: nonNil(m.Exports), Wit: m.Wit, WitOrigin: m.WitOrigin})
}

// DecodeComponentMetadata decodes EncodeComponentMetadata's JSON strictly.
func DecodeComponentMetadata(b []byte) (ComponentMetadataRecord, error) {
	var j componentMetadataJSON
	if err := decodeRecord(b, &j); err != nil {
		return ComponentMetadataRecord{}, fmt.Errorf("component metadata record: %w", err)
	}
	if j.WitOrigin < WitOriginWasm || j.WitOrigin > WitOriginAuthored {
		return ComponentMetadataRecord{}, invalidf("component metadata record %s: unknown wit_origin %d", j.ComponentDigest, j.WitOrigin)
	}
	return ComponentMetadataRecord{ComponentDigest: j.ComponentDigest, Imports: j.Imports, Exports: j.Exports,
		Wit: j.Wit, WitOrigin: j.WitOrigin}, nil
}

type sourceMappingJSON struct {
	Component ComponentDigest `json:"component_digest"`
	FrameKey  string          `json:"frame_key"`
	IsSuffix  bool            `json:"is_suffix"`
	Digest    ContentDigest   `json:"digest"`
}

// EncodeSourceMapping returns m's canonical JSON.
func EncodeSourceMapping(m SourceMapping) ([]byte, error) {
	return MarshalJSON(sourceMappingJSON{Component: m.Component, FrameKey: m.Key.FrameKey, IsSuffix: m.Key.IsSuffix, Digest: m.Digest})
}

// DecodeSourceMapping decodes EncodeSourceMapping's JSON strictly.
func DecodeSourceMapping(b []byte) (SourceMapping, error) {
	var j sourceMappingJSON
	if err := decodeRecord(b, &j); err != nil {
		return SourceMapping{}, fmt.Errorf("source mapping record: %w", err)
	}
	return SourceMapping{Component: j.Component, Key: SourceKey{FrameKey: j.FrameKey, IsSuffix: j.IsSuffix}, Digest: j.Digest}, nil
}
