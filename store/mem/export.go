package mem

import (
	"cmp"
	"context"
	"slices"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
)

// Export (store.Exporter): the whole export runs under the backend's
// mutex, one snapshot; store.Service's generic import (one Update per
// tree) writes.
var _ store.Exporter = (*Backend)(nil)

// ExportView implements store.Exporter: fn reads under the mutex, so
// writers wait until it returns.
func (b *Backend) ExportView(ctx context.Context, fn func(tx store.ExportTx) error) error {
	return b.View(ctx, func(rt store.ReadTx) error { return fn(&exportTx{tx: rt.(*tx)}) })
}

type exportTx struct{ *tx }

// TreeRoots implements store.ExportTx: by the creation order of each
// tree's first execution.
func (t *exportTx) TreeRoots() ([]core.ExecutionId, error) {
	es := make([]*execution, 0, len(t.b.execs))
	for _, e := range t.b.execs {
		es = append(es, e)
	}
	slices.SortFunc(es, func(a, b *execution) int { return cmp.Compare(a.seq, b.seq) })
	seen := map[core.ExecutionId]bool{}
	var roots []core.ExecutionId
	for _, e := range es {
		if r := e.head.ExecutionID.TopLevel(); !seen[r] {
			seen[r] = true
			roots = append(roots, r)
		}
	}
	return roots, nil
}

// TreeMembers implements store.ExportTx.
func (t *exportTx) TreeMembers(root core.ExecutionId) ([]core.ExecutionId, error) {
	return t.b.treeIDs(root), nil
}

// Tree implements store.ExportTx.
func (t *exportTx) Tree(root core.ExecutionId) ([]core.ExecutionRecord, error) {
	return t.Executions(t.b.treeIDs(root))
}

// Executions implements store.ExportTx, in creation order.
func (t *exportTx) Executions(ids []core.ExecutionId) ([]core.ExecutionRecord, error) {
	var found []*execution
	for _, id := range ids {
		if e, ok := t.b.execs[id]; ok {
			found = append(found, e)
		}
	}
	slices.SortFunc(found, func(a, b *execution) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]core.ExecutionRecord, 0, len(found))
	for _, e := range found {
		id := e.head.ExecutionID
		r := core.ExecutionRecord{Head: e.head.Clone()}
		if !e.finishedAt.IsZero() {
			at := e.finishedAt
			r.FinishRecordedAt = &at
		}
		var err error
		if r.Events, err = t.Events(id, 0, e.head.Version+1); err != nil {
			return nil, err
		}
		if r.Responses, err = t.Responses(id, 1, e.head.MaxCursor+1); err != nil {
			return nil, err
		}
		for k, d := range t.b.delays {
			if k.id == id {
				r.Delays = append(r.Delays, d)
			}
		}
		for k, bt := range t.b.bts {
			if k.id == id {
				r.Backtraces = append(r.Backtraces, bt)
			}
		}
		r.Normalize()
		out = append(out, r)
	}
	return out, nil
}

// TreeLogs implements store.ExportTx.
func (t *exportTx) TreeLogs(root core.ExecutionId) ([]core.LogInfoAppendRow, error) {
	var out []core.LogInfoAppendRow
	for _, r := range t.b.logs {
		if r.ExecutionID.TopLevel() == root {
			out = append(out, core.LogInfoAppendRow{ExecutionID: r.ExecutionID, RunID: r.RunID, Entry: r.Entry})
		}
	}
	return out, nil
}

// SourceMappingsOf implements store.ExportTx.
func (t *exportTx) SourceMappingsOf(component core.ComponentDigest) ([]core.SourceMapping, error) {
	var out []core.SourceMapping
	for k, d := range t.b.deps.sources {
		if k.component == component {
			out = append(out, core.SourceMapping{Component: component, Key: k.key, Digest: d})
		}
	}
	slices.SortFunc(out, func(a, b core.SourceMapping) int {
		return cmp.Or(cmp.Compare(a.Key.FrameKey, b.Key.FrameKey), cmp.Compare(boolInt(a.Key.IsSuffix), boolInt(b.Key.IsSuffix)))
	})
	return out, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
