package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/stela-dev/stela/core"
)

// Retention of finished execution trees (core/retention.go has the rules).
//
// The service records, in every commit that finishes an execution, when it
// finished by its own clock (RetentionTx.RecordFinished). A retention pass
// (ApplyRetention, run by the timers loop) asks the backend for candidate
// trees, reads each tree, lets core.DecideRetention decide and has the
// backend expire the trees it must. Backends differ in when a tree goes:
//
//   - SQLite and the in-memory backend remove a tree once its period has
//     passed (a purge in the timers loop); their candidates are the trees
//     that are finished and due.
//   - DynamoDB marks every item of a tree with its expiry as soon as the
//     tree is finished and lets the table's time-to-live delete them; its
//     readers treat an item whose expiry passed as absent. Its candidates
//     come from an index of finished executions, scanned with a cursor
//     (RetentionDone).
//
// A reader sees an expired execution as never stored: reads return
// core.ErrNotFound (HTTP 404), listings, logs, backtraces and responses
// no longer show it.

// logKeySince is the log attribute of when a retention candidate appeared.
const logKeySince = "since"

// RetentionCandidate names a tree that may be ready for a decision.
type RetentionCandidate struct {
	// Root is the tree's top-level execution.
	Root core.ExecutionId
	// Since is when the candidate appeared (the finish that made it one).
	Since core.Timestamp
	// Pos is the candidate's position in the backend's scan, given back to
	// RetentionDone once it and every candidate before it were handled
	// ("" for backends without a cursor).
	Pos string
}

// RetentionTree is a tree as a Retainer read it.
type RetentionTree struct {
	// Root is the tree's top-level execution.
	Root core.ExecutionId
	// Members are the executions read: the root (if it exists and has not
	// expired) and those derived from it, strongly consistent.
	Members []core.RetentionMember
	// Complete is true when the backend proved Members hold the whole tree.
	Complete bool
	// Backend is private to the backend that read the tree (ExpireTree
	// gets it back).
	Backend any
}

// ExpireStats counts what expiring trees removed or marked.
type ExpireStats struct {
	// Executions is the number of executions (heads) removed or marked.
	Executions int `json:"executions"`
	// Items is the number of rows deleted (SQLite, in-memory) or items
	// marked with their expiry (DynamoDB), heads included.
	Items int `json:"items"`
	// BlobRefs is the number of references to offloaded payloads removed
	// or marked, after which gc_orphan_files may collect their blobs.
	BlobRefs int `json:"blob_refs"`
}

func (e *ExpireStats) add(o ExpireStats) {
	e.Executions += o.Executions
	e.Items += o.Items
	e.BlobRefs += o.BlobRefs
}

// RetentionResult counts what one ApplyRetention call did.
type RetentionResult struct {
	// Trees is the number of trees decided.
	Trees int `json:"trees"`
	// Expired counts trees removed or marked; Kept those left as they are
	// (unfinished, or not due yet); Retried those to be decided again
	// because the backend could not read them completely yet.
	Expired int `json:"expired"`
	Kept    int `json:"kept"`
	Retried int `json:"retried"`
	ExpireStats
}

// retention is the service's retention state.
type retention struct {
	r  core.Retention
	mu sync.Mutex // one pass at a time per service
}

// Bounds of one ApplyRetention call.
const (
	// retentionBatch is how many candidates one backend query returns.
	retentionBatch = 100
	// retentionBatches bounds the candidate queries of one call.
	retentionBatches = 10
	// retentionRetryLimit: a tree the backend still cannot read completely
	// this long after it became a candidate is left alone (kept, logged)
	// so that it cannot hold the cursor back forever.
	retentionRetryLimit = time.Hour
)

// Retention returns the configured retention (Options.Retention).
func (s *Service) Retention() core.Retention { return s.ret.r }

// recordFinished records, in the commit that finishes st, when it finished
// (for retention). Nothing is recorded when trees are kept forever.
func (s *Service) recordFinished(t *txn, st *core.ExecutionState) error {
	rt := t.caps.retention
	if rt == nil || s.ret.r.Forever() {
		return nil
	}
	now := s.clock.Now()
	var expires *core.Timestamp
	if e, ok := core.FinishExpiry(st, now, s.ret.r); ok {
		expires = &e
	}
	return rt.RecordFinished(st.ExecutionID, now, expires)
}

// ApplyRetention runs one retention pass at now: it finishes interrupted
// expiries, then decides the backend's candidate trees one after the other
// (core.DecideRetention) and expires those it must. It is level-triggered
// and idempotent; overlapping passes (several processes) are safe. A
// backend without the Retainer capability, or retention forever, makes it
// a no-op.
func (s *Service) ApplyRetention(ctx context.Context, now core.Timestamp) (RetentionResult, error) {
	var res RetentionResult
	rb := s.caps.retainer
	if rb == nil || s.ret.r.Forever() {
		return res, nil
	}
	s.ret.mu.Lock()
	defer s.ret.mu.Unlock()
	st, err := rb.ResumeExpiry(ctx)
	res.add(st)
	if err != nil {
		return res, fmt.Errorf("store: retention: resume: %w", err)
	}
	// A tree is decided once per call, however many of its executions'
	// finishes made it a candidate.
	decided := map[core.ExecutionId]bool{}
	for range retentionBatches {
		cands, err := rb.RetentionCandidates(ctx, now, s.ret.r, retentionBatch)
		if err != nil {
			return res, fmt.Errorf("store: retention: candidates: %w", err)
		}
		before := res.Expired
		complete, err := s.retainBatch(ctx, rb, cands, now, decided, &res)
		if err != nil || !complete || len(cands) < retentionBatch {
			return res, err
		}
		if cands[len(cands)-1].Pos == "" && res.Expired == before {
			return res, nil // no cursor and nothing removed: the next query would return the same
		}
	}
	return res, nil
}

// retainBatch decides cands in order and records the position up to which
// all were handled. It reports whether every candidate was.
func (s *Service) retainBatch(ctx context.Context, rb Retainer, cands []RetentionCandidate, now core.Timestamp, decided map[core.ExecutionId]bool, res *RetentionResult) (bool, error) {
	pos := ""
	complete := true
	for _, c := range cands {
		if !decided[c.Root] {
			tree, err := rb.RetentionTree(ctx, c.Root)
			if err != nil {
				complete = false
				_ = s.retentionDone(ctx, rb, pos)
				return false, fmt.Errorf("store: retention: read tree %s: %w", c.Root, err)
			}
			d := core.DecideRetention(c.Root, tree.Members, tree.Complete, s.ret.r, now, rb.RetentionMarksAhead())
			if d.Action == core.RetentionRetry && now.Sub(c.Since.Time) > retentionRetryLimit {
				s.log.ErrorContext(ctx, "retention: tree still cannot be read completely; left alone",
					core.LogKeyExecutionID, c.Root.String(), logKeySince, c.Since.String())
				d.Action = core.RetentionKeep
			}
			res.Trees++
			switch d.Action {
			case core.RetentionRetry:
				res.Retried++
				complete = false
			case core.RetentionKeep:
				res.Kept++
			case core.RetentionExpire:
				st, err := rb.ExpireTree(ctx, tree, d.ExpiresAt)
				res.add(st)
				if errors.Is(err, core.ErrConflict) {
					// The tree changed since it was read: decide it again
					// on the next pass.
					res.Retried++
					complete = false
					break
				}
				if err != nil {
					_ = s.retentionDone(ctx, rb, pos)
					return false, fmt.Errorf("store: retention: expire tree %s: %w", c.Root, err)
				}
				res.Expired++
			}
			decided[c.Root] = true
		}
		if !complete {
			break
		}
		pos = c.Pos
	}
	return complete, s.retentionDone(ctx, rb, pos)
}

func (s *Service) retentionDone(ctx context.Context, rb Retainer, pos string) error {
	if pos == "" {
		return nil
	}
	if err := rb.RetentionDone(ctx, pos); err != nil {
		return fmt.Errorf("store: retention: record progress: %w", err)
	}
	return nil
}
