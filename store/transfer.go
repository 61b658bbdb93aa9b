package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/stela-dev/stela/core"
)

// Moving data between stores (`stela export` / `stela import`, package
// transfer, whose doc.go is the design note). The unit is an execution
// tree — a top-level execution and every execution derived from it — the
// unit of retention and of every invariant that spans executions (a
// child's response lives in its parent, a child finishes at most once per
// response). A tree is read as one consistent whole and written record by
// record, verbatim: core.ExecutionRecord (head, events, responses, timer
// rows, finish time, backtraces) and core.TreeLogs. The service makes the
// decisions; backends only read and write rows:
//
//   - Exporter (every backend) reads trees and deployments. SQLite and the
//     in-memory backend read everything in one snapshot; DynamoDB reads a
//     tree, then reads its heads again and reports ErrChanged if any moved
//     (every write to an execution's items rewrites its head), and
//     UnsettledError when a child's deferred response (Inbox) is not in its
//     parent yet, which the service then applies before reading again.
//   - Importer (DynamoDB) writes executions verbatim within its transaction
//     limits; backends without it import a tree's executions in one Update
//     (CreateHead with every event, AddResponse, PutDelay, RecordFinished).
//     Backtraces and logs are appended through Queries after the
//     executions (insert-if-absent, respectively the missing suffix).
//
// ImportTree is idempotent and resumable: what the destination already
// holds identically is kept, what an interrupted import left out is
// written, and anything that differs is a ConflictError — nothing of the
// tree is written then.

// ErrChanged means that what an export read changed (or was not visible
// completely yet, an index lagging) while it was read; reading again
// resolves it.
var ErrChanged = errors.New("store: changed while it was read")

// UnsettledError reports executions whose deferred responses (Inbox) are
// not applied yet: an export must see a child's response in its parent, so
// the service applies them (SettleResponses) and reads again.
type UnsettledError struct{ Parents []core.ExecutionId }

func (e *UnsettledError) Error() string {
	return fmt.Sprintf("store: %d executions have deferred responses to apply", len(e.Parents))
}

// TreeRecord is one execution tree as an export reads it.
type TreeRecord struct {
	// Root is the tree's top-level id (the root itself may not be stored).
	Root core.ExecutionId
	// Executions are the tree's executions in the source's creation order.
	Executions []core.ExecutionRecord
	// Logs are the tree's logs in the source's order.
	Logs core.TreeLogs
}

// Validate checks that every execution is valid, of this tree, unique, and
// listed after its parent when the parent is in the tree, and that the logs
// are of this tree.
func (t *TreeRecord) Validate() error {
	seen := map[core.ExecutionId]bool{}
	for i := range t.Executions {
		r := &t.Executions[i]
		id := r.Head.ExecutionID
		if err := r.Validate(); err != nil {
			return err
		}
		if id.TopLevel() != t.Root {
			return &core.ValidationError{Reason: fmt.Sprintf("tree %s: execution %s is of another tree", t.Root, id)}
		}
		if seen[id] {
			return &core.ValidationError{Reason: fmt.Sprintf("tree %s: execution %s twice", t.Root, id)}
		}
		seen[id] = true
	}
	for id := range seen {
		if parent, _, ok := id.SplitToParts(); ok && seen[parent] && t.index(parent) > t.index(id) {
			return &core.ValidationError{Reason: fmt.Sprintf("tree %s: execution %s listed before its parent", t.Root, id)}
		}
	}
	if t.Logs.Root != t.Root {
		return &core.ValidationError{Reason: fmt.Sprintf("tree %s: logs of tree %s", t.Root, t.Logs.Root)}
	}
	return t.Logs.Validate()
}

func (t *TreeRecord) index(id core.ExecutionId) int {
	for i := range t.Executions {
		if t.Executions[i].Head.ExecutionID == id {
			return i
		}
	}
	return -1
}

// ExportReader reads a store for an export, inside Service.Export.
type ExportReader struct {
	s   *Service
	tx  ExportTx
	ctx context.Context
}

// Export runs fn with a reader of the whole store (see Exporter: a
// snapshot on SQLite and in memory). It fails with core.ErrNotImplemented
// when the backend cannot export.
func (s *Service) Export(ctx context.Context, fn func(r *ExportReader) error) error {
	ex := s.caps.exporter
	if ex == nil {
		return fmt.Errorf("store: backend %T cannot export: %w", s.b, core.ErrNotImplemented)
	}
	return ex.ExportView(ctx, func(tx ExportTx) error { return fn(&ExportReader{s: s, tx: tx, ctx: ctx}) })
}

// TreeRoots returns the roots of every tree in the order their first
// executions were created (ExportTx.TreeRoots).
func (r *ExportReader) TreeRoots() ([]core.ExecutionId, error) { return r.tx.TreeRoots() }

// exportAttempts bounds the reads of one tree that changes (or whose
// index lags) while it is read; with backoff they span about a minute.
const exportAttempts = 100

// Tree reads root's tree as one consistent whole: on a backend without
// snapshots it reads again (after a backoff) while the tree changes, and
// applies deferred responses first, so that every child's response is in
// its parent.
func (r *ExportReader) Tree(root core.ExecutionId) (TreeRecord, error) {
	var recs []core.ExecutionRecord
	err := Retry(r.ctx, "store: export tree "+root.String(), exportAttempts, func(int) error {
		var err error
		recs, err = r.tx.Tree(root)
		var u *UnsettledError
		switch {
		case errors.As(err, &u):
			for _, p := range u.Parents {
				if err := r.s.settle(r.ctx, p); err != nil {
					return err
				}
			}
			return Again(err)
		case errors.Is(err, ErrChanged):
			return Again(err)
		}
		return err
	})
	if err != nil {
		return TreeRecord{}, err
	}
	rows, err := r.tx.TreeLogs(root)
	if err != nil {
		return TreeRecord{}, err
	}
	return TreeRecord{Root: root, Executions: recs, Logs: core.TreeLogs{Root: root, Rows: rows}}, nil
}

// Deployments returns every deployment with its files and components, by id.
func (r *ExportReader) Deployments() ([]core.StoredDeployment, error) {
	var out []core.StoredDeployment
	p := core.Pagination[*core.DeploymentId]{Direction: core.NewerThan, Length: 100}
	for {
		page, err := r.tx.Deployments(p, true, true)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(page) < int(p.Length) {
			return out, nil
		}
		last := page[len(page)-1].Record.DeploymentID
		p.Cursor = &last
	}
}

// ComponentMetadata returns the stored metadata of digests (absent ones omitted).
func (r *ExportReader) ComponentMetadata(digests []core.ComponentDigest) (map[core.ComponentDigest]core.ComponentMetadataRecord, error) {
	return r.tx.ComponentMetadata(digests)
}

// SourceMappingsOf returns every source mapping of component.
func (r *ExportReader) SourceMappingsOf(component core.ComponentDigest) ([]core.SourceMapping, error) {
	return r.tx.SourceMappingsOf(component)
}

// --- import ---------------------------------------------------------------------------

// ImportOutcome is what an import did with one record.
type ImportOutcome uint8

// Import outcomes.
const (
	// ImportWritten: the destination had none of it; it is written.
	ImportWritten ImportOutcome = iota + 1
	// ImportResumed: the destination had part of it, identical (an
	// interrupted import); the rest is written.
	ImportResumed
	// ImportUnchanged: the destination holds it identically already.
	ImportUnchanged
	// ImportExpired: a finished tree whose retention period, under the
	// destination's retention, has passed: the destination would delete it
	// at once, so it is not written.
	ImportExpired
)

func (o ImportOutcome) String() string {
	switch o {
	case ImportWritten:
		return "written"
	case ImportResumed:
		return "resumed"
	case ImportUnchanged:
		return "unchanged"
	case ImportExpired:
		return "expired"
	}
	return fmt.Sprintf("ImportOutcome(%d)", o)
}

// ImportResult says what ImportTree did.
type ImportResult struct {
	Outcome ImportOutcome
	// Executions, Backtraces and Logs count what was written.
	Executions, Backtraces, Logs int
}

// ConflictError reports that the destination holds something else under a
// record's key; nothing of the record was written. It wraps core.ErrConflict.
type ConflictError struct {
	// What names the record ("execution E_…", "deployment Dep_…").
	What string
	// Reason says how the destination differs.
	Reason string
}

func (e *ConflictError) Error() string { return e.What + ": " + e.Reason }

// Unwrap makes the error match core.ErrConflict.
func (e *ConflictError) Unwrap() error { return core.ErrConflict }

// logChunk bounds the rows of one AppendLogs call of an import.
const logChunk = 500

// ImportTree writes tree (valid: TreeRecord.Validate) into this store, as
// it was in the source. Executions the store holds identically are kept,
// missing ones written (their backtraces and the logs after them); if any
// execution differs, or the store's tree has an execution the record has
// not, or its logs are not a prefix of the record's (nor the reverse),
// nothing is written and the error is a *ConflictError. After writing, the
// tree is read back and must be identical (digests), else the error is a
// *ConflictError too (the destination changed it at once). A finished
// tree already expired under this store's retention is skipped
// (ImportExpired).
func (s *Service) ImportTree(ctx context.Context, tree TreeRecord) (ImportResult, error) {
	ids := make([]core.ExecutionId, len(tree.Executions))
	for i := range tree.Executions {
		ids[i] = tree.Executions[i].Head.ExecutionID
	}
	dest, err := s.readTree(ctx, tree.Root, ids, true)
	if err != nil {
		return ImportResult{}, err
	}
	plan, err := planImport(&tree, dest)
	if err != nil {
		return ImportResult{}, err
	}
	res := ImportResult{Outcome: ImportResumed}
	switch {
	case len(plan.missing) == 0 && len(plan.backtraces) == 0 && len(plan.logs) == 0:
		return ImportResult{Outcome: ImportUnchanged}, nil
	case len(dest.recs) == 0 && len(dest.logs) == 0:
		res.Outcome = ImportWritten
	}
	d := s.treeRetention(&tree)
	if d.Action == core.RetentionExpire && core.RetentionExpired(d.ExpiresAt, s.clock.Now()) {
		return ImportResult{Outcome: ImportExpired}, nil
	}
	if len(plan.missing) > 0 {
		var expires *core.Timestamp
		if rb := s.caps.retainer; rb != nil && rb.RetentionMarksAhead() && d.Action == core.RetentionExpire {
			expires = &d.ExpiresAt
		}
		if err := s.importExecutions(ctx, plan.missing, expires); err != nil {
			if errors.Is(err, core.ErrConflict) {
				return ImportResult{}, &ConflictError{What: "tree " + tree.Root.String(), Reason: err.Error()}
			}
			return ImportResult{}, fmt.Errorf("store: import tree %s: %w", tree.Root, err)
		}
		res.Executions = len(plan.missing)
	}
	if len(plan.backtraces) > 0 {
		if _, err := s.b.AppendBacktraces(ctx, plan.backtraces); err != nil {
			return res, fmt.Errorf("store: import the backtraces of tree %s: %w", tree.Root, err)
		}
		res.Backtraces = len(plan.backtraces)
	}
	for start := 0; start < len(plan.logs); start += logChunk {
		if err := s.b.AppendLogs(ctx, plan.logs[start:min(start+logChunk, len(plan.logs))]); err != nil {
			return res, fmt.Errorf("store: import the logs of tree %s: %w", tree.Root, err)
		}
	}
	res.Logs = len(plan.logs)
	return res, s.verifyImport(ctx, &tree, ids)
}

// destTree is what the destination holds of a tree being imported.
type destTree struct {
	recs    map[core.ExecutionId]core.ExecutionRecord
	members []core.ExecutionId
	logs    []core.LogInfoAppendRow
}

// readTree reads the records of ids and, with extra, the tree's members
// and logs. When the record has the tree's root and the store has not,
// neither is read: an import writes parents first and logs last, so such a
// tree holds nothing an import wrote (only executions created here under
// derived ids of an absent root, which Create allows, or logs of executions
// that do not exist), and reading them (on DynamoDB an index query per
// shard and a query of the log partition) would double the cost of
// importing a small tree.
func (s *Service) readTree(ctx context.Context, root core.ExecutionId, ids []core.ExecutionId, extra bool) (destTree, error) {
	dt := destTree{recs: map[core.ExecutionId]core.ExecutionRecord{}}
	err := s.Export(ctx, func(r *ExportReader) error {
		recs, err := r.executions(ids)
		if err != nil {
			return err
		}
		for _, rec := range recs {
			dt.recs[rec.Head.ExecutionID] = rec
		}
		if _, haveRoot := dt.recs[root]; !extra || (!haveRoot && slices.Contains(ids, root)) {
			return nil
		}
		if dt.members, err = r.tx.TreeMembers(root); err != nil {
			return err
		}
		dt.logs, err = r.tx.TreeLogs(root)
		return err
	})
	if err != nil {
		return destTree{}, fmt.Errorf("store: import tree %s: read the destination: %w", root, err)
	}
	return dt, nil
}

// executions is Executions, read again while an execution changes.
func (r *ExportReader) executions(ids []core.ExecutionId) ([]core.ExecutionRecord, error) {
	var recs []core.ExecutionRecord
	err := Retry(r.ctx, "store: read executions", exportAttempts, func(int) error {
		var err error
		if recs, err = r.tx.Executions(ids); errors.Is(err, ErrChanged) {
			return Again(err)
		}
		return err
	})
	return recs, err
}

// importPlan is what ImportTree must write.
type importPlan struct {
	missing    []core.ExecutionRecord
	backtraces []core.BacktraceInfo
	logs       []core.LogInfoAppendRow
}

// planImport compares the record with the destination and returns what is
// missing, or a *ConflictError for the first difference.
func planImport(tree *TreeRecord, dest destTree) (importPlan, error) {
	var p importPlan
	inRecord := map[core.ExecutionId]bool{}
	for i := range tree.Executions {
		rec := &tree.Executions[i]
		id := rec.Head.ExecutionID
		inRecord[id] = true
		have, ok := dest.recs[id]
		if !ok {
			p.missing = append(p.missing, *rec)
			p.backtraces = append(p.backtraces, rec.Backtraces...)
			continue
		}
		if reason, same := sameExecution(*rec, have); !same {
			return p, &ConflictError{What: "execution " + id.String(), Reason: reason}
		}
		bts, err := missingBacktraces(rec, &have)
		if err != nil {
			return p, err
		}
		p.backtraces = append(p.backtraces, bts...)
	}
	for _, id := range dest.members {
		if !inRecord[id] {
			return p, &ConflictError{What: "tree " + tree.Root.String(),
				Reason: "the destination has execution " + id.String() + ", which the record has not"}
		}
	}
	rows := tree.Logs.Rows
	switch {
	case isLogPrefix(dest.logs, rows):
		p.logs = rows[len(dest.logs):]
	case isLogPrefix(rows, dest.logs):
		// The destination has the record's logs and more written since.
	default:
		return p, &ConflictError{What: "logs of tree " + tree.Root.String(),
			Reason: fmt.Sprintf("the destination's %d log rows are not a prefix of the record's %d (nor the reverse)", len(dest.logs), len(rows))}
	}
	return p, nil
}

// sameExecution compares two records without their backtraces.
func sameExecution(want, have core.ExecutionRecord) (string, bool) {
	want.Backtraces, have.Backtraces = nil, nil
	a, errA := want.Digest()
	b, errB := have.Digest()
	if errA != nil || errB != nil {
		return fmt.Sprintf("cannot encode: %v", errors.Join(errA, errB)), false
	}
	if a != b {
		return fmt.Sprintf("the destination's execution differs (version %d, %s; the record's: version %d, %s)",
			have.Head.Version, have.Head.State, want.Head.Version, want.Head.State), false
	}
	return "", true
}

// missingBacktraces returns the record's backtraces the destination lacks;
// a backtrace of the same range with another content, or one the record
// has not, is a conflict.
func missingBacktraces(want, have *core.ExecutionRecord) ([]core.BacktraceInfo, error) {
	key := func(bt core.BacktraceInfo) [2]core.Version {
		return [2]core.Version{bt.VersionMinIncluding, bt.VersionMaxExcluding}
	}
	existing := map[[2]core.Version]core.BacktraceInfo{}
	for _, bt := range have.Backtraces {
		existing[key(bt)] = bt
	}
	var out []core.BacktraceInfo
	for _, bt := range want.Backtraces {
		got, ok := existing[key(bt)]
		if !ok {
			out = append(out, bt)
			continue
		}
		delete(existing, key(bt))
		a, errA := core.MarshalJSON(bt)
		b, errB := core.MarshalJSON(got)
		if errA != nil || errB != nil || string(a) != string(b) {
			return nil, &ConflictError{What: "execution " + want.Head.ExecutionID.String(),
				Reason: fmt.Sprintf("the destination's backtrace [%d, %d) differs", bt.VersionMinIncluding, bt.VersionMaxExcluding)}
		}
	}
	for k := range existing {
		return nil, &ConflictError{What: "execution " + want.Head.ExecutionID.String(),
			Reason: fmt.Sprintf("the destination has a backtrace [%d, %d) the record has not", k[0], k[1])}
	}
	return out, nil
}

// isLogPrefix reports whether a is a prefix of b.
func isLogPrefix(a, b []core.LogInfoAppendRow) bool {
	if len(a) > len(b) {
		return false
	}
	for i := range a {
		if !core.SameLogRow(a[i], b[i]) {
			return false
		}
	}
	return true
}

// treeRetention decides the tree's retention under this store's
// retention, from the record (read as one whole: complete).
func (s *Service) treeRetention(tree *TreeRecord) core.RetentionDecision {
	members := make([]core.RetentionMember, len(tree.Executions))
	for i := range tree.Executions {
		r := &tree.Executions[i]
		members[i] = core.RetentionMember{State: r.Head}
		if r.FinishRecordedAt != nil {
			members[i].FinishedAt = *r.FinishRecordedAt
		}
	}
	return core.DecideRetention(tree.Root, members, true, s.ret.r, s.clock.Now(), true)
}

// importExecutions writes recs through the backend's Importer, else in one
// Update.
func (s *Service) importExecutions(ctx context.Context, recs []core.ExecutionRecord, expires *core.Timestamp) error {
	if imp := s.caps.importer; imp != nil {
		return imp.ImportExecutions(ctx, recs, expires)
	}
	return s.b.Update(ctx, func(tx Tx) error {
		for i := range recs {
			if err := tx.CreateHead(recs[i].Head, recs[i].Events); err != nil {
				return err
			}
		}
		for i := range recs {
			r := &recs[i]
			id := r.Head.ExecutionID
			for _, resp := range r.Responses {
				if err := tx.AddResponse(id, resp); err != nil {
					return err
				}
			}
			for _, d := range r.Delays {
				if err := tx.PutDelay(d); err != nil {
					return err
				}
			}
			if rt := txCapabilitiesOf(tx).retention; rt != nil && r.FinishRecordedAt != nil {
				if err := rt.RecordFinished(id, *r.FinishRecordedAt, nil); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// verifyImport reads the tree back and compares it with the record.
func (s *Service) verifyImport(ctx context.Context, tree *TreeRecord, ids []core.ExecutionId) error {
	dest, err := s.readTree(ctx, tree.Root, ids, false)
	if err != nil {
		return err
	}
	if len(tree.Logs.Rows) > 0 {
		err := s.Export(ctx, func(r *ExportReader) (err error) {
			dest.logs, err = r.tx.TreeLogs(tree.Root)
			return err
		})
		if err != nil {
			return fmt.Errorf("store: import tree %s: read its logs back: %w", tree.Root, err)
		}
	}
	var problems []string
	for i := range tree.Executions {
		rec := &tree.Executions[i]
		have, ok := dest.recs[rec.Head.ExecutionID]
		if !ok {
			problems = append(problems, rec.Head.ExecutionID.String()+" is missing")
			continue
		}
		want, err1 := rec.Digest()
		got, err2 := have.Digest()
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		if want != got {
			problems = append(problems, fmt.Sprintf("%s reads back with digest %s, not %s", rec.Head.ExecutionID, got, want))
		}
	}
	if !isLogPrefix(tree.Logs.Rows, dest.logs) {
		problems = append(problems, fmt.Sprintf("its logs read back differently (%d rows, %d in the record)", len(dest.logs), len(tree.Logs.Rows)))
	}
	if len(problems) > 0 {
		// Written, but read back otherwise: the destination changed it at
		// once (its timers or workers run) or lost it. Either way it is not
		// what the record says: reported, like a conflict.
		return &ConflictError{What: "tree " + tree.Root.String(),
			Reason: "written, but read back differently (changed by the destination meanwhile?): " + strings.Join(problems, "; ")}
	}
	return nil
}

// ImportDeployment writes d (with its files, components and status) unless
// the store holds it identically already. A deployment that differs, or an
// active (enqueued) one while another is active (enqueued) here, is a
// *ConflictError and nothing is written. The insert and the status are one
// transaction.
func (s *Service) ImportDeployment(ctx context.Context, d core.StoredDeployment) (ImportOutcome, error) {
	id := d.Record.DeploymentID
	want, err := core.EncodeStoredDeployment(d)
	if err != nil {
		return 0, err
	}
	conflict := func(reason string) error { return &ConflictError{What: "deployment " + id.String(), Reason: reason} }
	outcome := ImportWritten
	err = s.b.Update(ctx, func(tx Tx) error {
		outcome = ImportWritten
		cur, err := tx.Deployment(id)
		switch {
		case err == nil:
			have, err := core.EncodeStoredDeployment(cur)
			if err != nil {
				return err
			}
			if string(have) != string(want) {
				return conflict("the destination's deployment differs")
			}
			outcome = ImportUnchanged
			return nil
		case !errors.Is(err, core.ErrNotFound):
			return err
		}
		status := d.Record.Status
		if status != core.DeploymentInactive {
			active, enqueued, err := tx.CurrentDeployments()
			if err != nil {
				return err
			}
			other := active
			if status == core.DeploymentEnqueued {
				other = enqueued
			}
			if other != nil {
				return conflict(fmt.Sprintf("the destination's %s deployment is %s", status, *other))
			}
		}
		// A deployment is inserted new (inactive, never active, as the
		// backends expect), then given its status and last activation.
		inactive := d.Clone()
		inactive.Record.Status, inactive.Record.LastActiveAt = core.DeploymentInactive, nil
		if err := tx.InsertDeployment(inactive); err != nil {
			return err
		}
		if status == core.DeploymentInactive && d.Record.LastActiveAt == nil {
			return nil
		}
		return tx.SetDeploymentStatus(id, status, d.Record.LastActiveAt)
	})
	if errors.Is(err, core.ErrConflict) && !errors.As(err, new(*ConflictError)) {
		err = conflict(err.Error())
	}
	return outcome, err
}

// ImportComponentMetadata writes m unless the store holds it identically
// (metadata is immutable: a different one is a *ConflictError).
func (s *Service) ImportComponentMetadata(ctx context.Context, m core.ComponentMetadataRecord) (ImportOutcome, error) {
	want, err := core.EncodeComponentMetadata(m)
	if err != nil {
		return 0, err
	}
	outcome := ImportWritten
	err = s.b.Update(ctx, func(tx Tx) error {
		outcome = ImportWritten
		cur, err := tx.ComponentMetadata([]core.ComponentDigest{m.ComponentDigest})
		if err != nil {
			return err
		}
		have, ok := cur[m.ComponentDigest]
		if !ok {
			return tx.InsertComponentMetadata([]core.ComponentMetadataRecord{m})
		}
		if b, err := core.EncodeComponentMetadata(have); err != nil || string(b) != string(want) {
			return &ConflictError{What: "component metadata " + m.ComponentDigest.String(), Reason: "the destination's metadata differs"}
		}
		outcome = ImportUnchanged
		return nil
	})
	return outcome, err
}

// ImportSourceMapping writes m unless the store maps its key identically;
// a mapping of the key to another blob is a *ConflictError.
func (s *Service) ImportSourceMapping(ctx context.Context, m core.SourceMapping) (ImportOutcome, error) {
	outcome := ImportWritten
	err := s.b.Update(ctx, func(tx Tx) error {
		outcome = ImportWritten
		cur, err := tx.SourceMappings(m.Component, []core.SourceKey{m.Key})
		if err != nil {
			return err
		}
		if len(cur) == 0 {
			return tx.PutSourceMapping(m)
		}
		if cur[0].Digest != m.Digest {
			return &ConflictError{What: fmt.Sprintf("source mapping %q of %s", m.Key.FrameKey, m.Component),
				Reason: "the destination maps it to " + cur[0].Digest.String()}
		}
		outcome = ImportUnchanged
		return nil
	})
	return outcome, err
}

// ParallelImport reports whether trees may be imported into this store
// concurrently: true for a backend that writes executions itself
// (Importer), whose order of creation is its own (DynamoDB breaks ties by
// creation time and id); false for one that orders executions by
// insertion (SQLite, in memory), into which trees are imported one after
// the other in the source's order.
func (s *Service) ParallelImport() bool {
	return s.caps.importer != nil
}
