package mem

import (
	"context"
	"fmt"
	"slices"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
)

// Retention (store.Retainer): a tree is removed, all at once under the
// mutex, when its period has passed; the in-memory backend marks nothing
// ahead.
var _ store.Retainer = (*Backend)(nil)

// The transaction records finishes for retention.
var _ store.RetentionTx = (*tx)(nil)

// RecordFinished implements store.RetentionTx.
func (t *tx) RecordFinished(id core.ExecutionId, at core.Timestamp, _ *core.Timestamp) error {
	t.writes = append(t.writes, func() {
		if e, ok := t.b.execs[id]; ok {
			e.finishedAt = at
		}
	})
	return nil
}

// RetentionMarksAhead implements store.Retainer: trees are removed when due.
func (b *Backend) RetentionMarksAhead() bool { return false }

// ResumeExpiry implements store.Retainer: ExpireTree is atomic here.
func (b *Backend) ResumeExpiry(context.Context) (store.ExpireStats, error) {
	return store.ExpireStats{}, nil
}

// RetentionDone implements store.Retainer (no cursor).
func (b *Backend) RetentionDone(context.Context, string) error { return nil }

func (e *execution) retentionMember() core.RetentionMember {
	return core.RetentionMember{State: e.head.Clone(), FinishedAt: e.finishedAt}
}

// RetentionCandidates implements store.Retainer: the roots of trees whose
// executions are all finished and were recorded finished at or before
// now minus the period, oldest first.
func (b *Backend) RetentionCandidates(_ context.Context, now core.Timestamp, r core.Retention, limit int) ([]store.RetentionCandidate, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	due := now.Add(-r.Period())
	type tree struct {
		last  core.Timestamp
		ready bool
	}
	trees := map[core.ExecutionId]*tree{}
	for id, e := range b.execs {
		root := id.TopLevel()
		tr, ok := trees[root]
		if !ok {
			tr = &tree{ready: true}
			trees[root] = tr
		}
		m := e.retentionMember()
		if !m.State.IsFinished() {
			tr.ready = false
		}
		if at := m.FinishTime(); at.After(tr.last) {
			tr.last = at
		}
	}
	var out []store.RetentionCandidate
	for root, tr := range trees {
		if _, ok := b.execs[root]; ok && tr.ready && !tr.last.After(due) {
			out = append(out, store.RetentionCandidate{Root: root, Since: tr.last})
		}
	}
	slices.SortFunc(out, func(a, c store.RetentionCandidate) int {
		if n := a.Since.Compare(c.Since); n != 0 {
			return n
		}
		return a.Root.Compare(c.Root)
	})
	return out[:min(len(out), limit)], nil
}

// treeIDs returns the ids of root's tree present in b (root first).
func (b *Backend) treeIDs(root core.ExecutionId) []core.ExecutionId {
	var ids []core.ExecutionId
	for id := range b.execs {
		if id.TopLevel() == root {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, c core.ExecutionId) int { return a.Compare(c) })
	return ids
}

// RetentionTree implements store.Retainer.
func (b *Backend) RetentionTree(_ context.Context, root core.ExecutionId) (store.RetentionTree, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	tr := store.RetentionTree{Root: root, Complete: true}
	for _, id := range b.treeIDs(root) {
		tr.Members = append(tr.Members, b.execs[id].retentionMember())
	}
	return tr, nil
}

// ExpireTree implements store.Retainer: it removes every execution of the
// tree with its events, responses, response guards, timer rows, logs and
// backtraces, if the tree is still exactly what RetentionTree read.
func (b *Backend) ExpireTree(_ context.Context, tree store.RetentionTree, _ core.Timestamp) (store.ExpireStats, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var st store.ExpireStats
	if b.closed {
		return st, core.ErrClosed
	}
	ids := b.treeIDs(tree.Root)
	if len(ids) != len(tree.Members) {
		return st, fmt.Errorf("mem: tree %s changed: %w", tree.Root, core.ErrConflict)
	}
	for _, m := range tree.Members {
		e, ok := b.execs[m.State.ExecutionID]
		if !ok || !e.head.IsFinished() || e.head.Version != m.State.Version {
			return st, fmt.Errorf("mem: tree %s changed: %w", tree.Root, core.ErrConflict)
		}
	}
	inTree := func(id core.ExecutionId) bool { return id.TopLevel() == tree.Root }
	for _, id := range ids {
		e := b.execs[id]
		for _, raw := range e.responses {
			r, err := decodeResponse(raw)
			if err != nil {
				return st, err
			}
			switch ev := r.Event.Event.Event.(type) {
			case *core.ChildExecutionFinished:
				delete(b.childResp, ev.ChildExecutionID.ExecutionId)
			case *core.DelayFinished:
				delete(b.delayResp, ev.DelayID)
			}
			st.Items++ // the response's guard
		}
		st.Items += 1 + len(e.events) + len(e.responses)
		st.Executions++
		delete(b.execs, id)
	}
	for k := range b.delays {
		if inTree(k.id) {
			delete(b.delays, k)
			st.Items++
		}
	}
	for k := range b.bts {
		if inTree(k.id) {
			delete(b.bts, k)
			st.Items++
		}
	}
	n := len(b.logs)
	b.logs = slices.DeleteFunc(b.logs, func(r core.LogEntryRow) bool { return inTree(r.ExecutionID) })
	st.Items += n - len(b.logs)
	return st, nil
}
