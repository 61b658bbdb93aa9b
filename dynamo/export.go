package dynamo

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"golang.org/x/sync/errgroup"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
)

// Export (store.Exporter). DynamoDB has no snapshot across items, so a
// tree is read optimistically: its members (the list-id index), each
// member's partition (one strongly consistent Query: head, event pages,
// responses, timer rows, backtraces), then the members' heads again. Every
// write to an execution's items rewrites its head (its revision moves), so
// unchanged revisions prove the tree was read at one committed state;
// otherwise — or when a member counts more children (nc) than the index
// returned — Tree reports store.ErrChanged and the service reads again. A
// child whose response is deferred (pr, doc.go "Fan-in") and not yet in
// its parent is reported as store.UnsettledError: the service applies the
// parent's deferred responses, then reads again. The inbox, outbox,
// JoinNext counters, revisions and index keys are not part of a record:
// the importer (import.go) derives its own.

var _ store.Exporter = (*Backend)(nil)

// exportParallelism bounds the partitions one tree read queries at once.
const exportParallelism = 8

// ExportView implements store.Exporter: strongly consistent reads, no
// snapshot (see above).
func (b *Backend) ExportView(ctx context.Context, fn func(tx store.ExportTx) error) error {
	if err := b.checkOpen(); err != nil {
		return err
	}
	return fn(&exportTx{tx: b.newTx(ctx, false)})
}

type exportTx struct{ *tx }

// TreeRoots implements store.ExportTx: every head of the list index, over
// all shards in (created_at, id) order — the order the pending and
// cancelling indexes break ties in — each tree named at its first
// execution.
func (t *exportTx) TreeRoots() ([]core.ExecutionId, error) {
	b := t.b
	pks := append(b.shardKeys(listTop), b.shardKeys(listDeriv)...)
	m := b.newMerger(t.ctx, dynamodb.QueryInput{
		TableName: b.tableName(), IndexName: aws.String(IndexList),
		KeyConditionExpression:   aws.String("#pk = :pk"),
		ExpressionAttributeNames: map[string]string{"#pk": AttrListPK},
		Limit:                    aws.Int32(queryPageSize),
	}, AttrListSK, pks)
	seen := map[core.ExecutionId]bool{}
	var roots []core.ExecutionId
	for {
		it, err := m.next(t.ctx)
		if err != nil {
			return nil, fmt.Errorf("dynamo: tree roots: %w", err)
		}
		if it == nil {
			return roots, nil
		}
		pk, _ := getS(it, AttrPK)
		id, err := parseExecPK(pk)
		if err != nil {
			b.undecodable.Skip(t.ctx, b.log, "list index entry", pk, err)
			continue
		}
		if r := id.TopLevel(); !seen[r] {
			seen[r] = true
			roots = append(roots, r)
		}
	}
}

// TreeMembers implements store.ExportTx: the root and the derived
// executions the list-id index knows (eventually consistent).
func (t *exportTx) TreeMembers(root core.ExecutionId) ([]core.ExecutionId, error) {
	ids := []core.ExecutionId{root}
	err := t.b.eachDerived(t.ctx, root, func(it item) error {
		pk, _ := getS(it, AttrPK)
		id, err := parseExecPK(pk)
		if err != nil {
			t.b.undecodable.Skip(t.ctx, t.b.log, "list index entry", pk, err)
			return nil
		}
		ids = append(ids, id)
		return nil
	})
	return ids, err
}

// exported is one execution as read: its record and its head item.
type exported struct {
	rec  core.ExecutionRecord
	head *headRec
}

// Tree implements store.ExportTx (see the comment at the top).
func (t *exportTx) Tree(root core.ExecutionId) ([]core.ExecutionRecord, error) {
	ids, err := t.TreeMembers(root)
	if err != nil {
		return nil, err
	}
	got, err := t.read(ids)
	if err != nil {
		return nil, err
	}
	members := map[core.ExecutionId]*exported{}
	children := map[core.ExecutionId]int64{}
	for _, e := range got {
		id := e.rec.Head.ExecutionID
		members[id] = e
		if parent, _, ok := id.SplitToParts(); ok {
			children[parent]++
		}
	}
	var unsettled []core.ExecutionId
	for id, e := range members {
		if e.head.ret.ncKnown && children[id] < e.head.ret.nc {
			return nil, fmt.Errorf("dynamo: tree %s: %s counts %d children, the index shows %d: %w",
				root, id, e.head.ret.nc, children[id], store.ErrChanged)
		}
		if e.head.pr == "" {
			continue
		}
		parent, _, _ := id.SplitToParts()
		if p := members[parent]; p != nil && !answers(p.rec.Responses, id) && !slices.Contains(unsettled, parent) {
			unsettled = append(unsettled, parent)
		}
	}
	if len(unsettled) > 0 {
		return nil, &store.UnsettledError{Parents: unsettled}
	}
	return recordsInOrder(got), nil
}

// answers reports whether responses hold the response of child.
func answers(responses []core.ResponseWithCursor, child core.ExecutionId) bool {
	for _, r := range responses {
		if cf, ok := r.Event.Event.Event.(*core.ChildExecutionFinished); ok && cf.ChildExecutionID.ExecutionId == child {
			return true
		}
	}
	return false
}

// recordsInOrder returns the records by (created_at, id): the order in
// which this backend breaks ties, parents before their children.
func recordsInOrder(got []*exported) []core.ExecutionRecord {
	slices.SortFunc(got, func(a, b *exported) int {
		if c := a.rec.Head.CreatedAt.Compare(b.rec.Head.CreatedAt); c != 0 {
			return c
		}
		return a.rec.Head.ExecutionID.Compare(b.rec.Head.ExecutionID)
	})
	out := make([]core.ExecutionRecord, len(got))
	for i, e := range got {
		out[i] = e.rec
	}
	return out
}

// Executions implements store.ExportTx.
func (t *exportTx) Executions(ids []core.ExecutionId) ([]core.ExecutionRecord, error) {
	got, err := t.read(ids)
	if err != nil {
		return nil, err
	}
	return recordsInOrder(got), nil
}

// read reads the partitions of ids (absent and expired ones omitted),
// then their heads again: store.ErrChanged if any moved meanwhile. Of
// more than two ids, the heads are read first (BatchGetItem, 100 a
// request) and only the partitions of those present are queried: an
// import's check of a tree it has not written yet costs a request per
// 100 executions.
func (t *exportTx) read(ids []core.ExecutionId) ([]*exported, error) {
	b := t.b
	if len(ids) > 2 {
		keys := make([]item, len(ids))
		for i, id := range ids {
			keys[i] = keyOf(pkExec(id), skHead)
		}
		heads, err := b.batchGet(t.ctx, keys, true, AttrPK, AttrTTL)
		if err != nil {
			return nil, fmt.Errorf("dynamo: read heads: %w", err)
		}
		present := map[string]bool{}
		for _, it := range heads {
			if !b.expiredItem(it) {
				pk, _ := getS(it, AttrPK)
				present[pk] = true
			}
		}
		ids = slices.DeleteFunc(slices.Clone(ids), func(id core.ExecutionId) bool { return !present[pkExec(id)] })
	}
	out := make([]*exported, len(ids))
	g, gctx := errgroup.WithContext(t.ctx)
	g.SetLimit(exportParallelism)
	for i, id := range ids {
		g.Go(func() error {
			e, err := b.readPartition(gctx, id)
			out[i] = e
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	out = slices.DeleteFunc(out, func(e *exported) bool { return e == nil })
	if b.afterExportRead != nil {
		b.afterExportRead(ids)
	}
	keys := make([]item, len(out))
	for i, e := range out {
		keys[i] = keyOf(pkExec(e.rec.Head.ExecutionID), skHead)
	}
	again, err := b.batchGet(t.ctx, keys, true, AttrPK, aRev, AttrTTL)
	if err != nil {
		return nil, fmt.Errorf("dynamo: read heads again: %w", err)
	}
	revs := map[string]int64{}
	for _, it := range again {
		if b.expiredItem(it) {
			continue
		}
		pk, _ := getS(it, AttrPK)
		revs[pk], _, _ = getN(it, aRev)
	}
	for _, e := range out {
		if rev, ok := revs[pkExec(e.rec.Head.ExecutionID)]; !ok || rev != e.head.rev {
			return nil, fmt.Errorf("dynamo: %s changed while it was read: %w", e.rec.Head.ExecutionID, store.ErrChanged)
		}
	}
	return out, nil
}

// readPartition reads an execution's record from one strongly consistent
// Query of its partition (nil when it has no head or has expired). A
// pending fan-out (outbox) is completed first, as every reader does.
func (b *Backend) readPartition(ctx context.Context, id core.ExecutionId) (*exported, error) {
	var (
		head       item
		pages      []item
		responses  []item
		delays     []item
		backtraces []item
	)
	err := b.queryAll(ctx, &dynamodb.QueryInput{
		TableName: b.tableName(), ConsistentRead: aws.Bool(true),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK},
		ExpressionAttributeValues: item{":pk": avS(pkExec(id))},
	}, func(it item) (bool, error) {
		sk, _ := getS(it, AttrSK)
		switch {
		case sk == skHead:
			head = it
		case strings.HasPrefix(sk, prefixEvent):
			pages = append(pages, it)
		case strings.HasPrefix(sk, prefixResponse):
			responses = append(responses, it)
		case strings.HasPrefix(sk, prefixDelay):
			delays = append(delays, it)
		case strings.HasPrefix(sk, prefixBacktrace):
			backtraces = append(backtraces, it)
		}
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("dynamo: read %s: %w", id, err)
	}
	if head == nil || b.expiredItem(head) {
		return nil, nil
	}
	h, err := decodeHead(head)
	if err != nil {
		return nil, err
	}
	if h.ob != "" {
		if err := b.finishOutbox(ctx, id, h.ob); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("dynamo: %s had a fan-out to finish: %w", id, store.ErrChanged)
	}
	rec := core.ExecutionRecord{Head: cloneState(h.st)}
	if at := h.ret.finishedAt(); !at.IsZero() {
		rec.FinishRecordedAt = &at
	}
	if rec.Events, err = b.partitionEvents(ctx, h, pages); err != nil {
		return nil, err
	}
	for _, it := range responses {
		r, err := b.decodeResponse(ctx, it)
		if err != nil {
			return nil, err
		}
		if r.Cursor <= h.st.MaxCursor { // a view never sees responses newer than its head
			rec.Responses = append(rec.Responses, r)
		}
	}
	for _, it := range delays {
		d, err := decodeDelay(it)
		if err != nil {
			return nil, err
		}
		rec.Delays = append(rec.Delays, d)
	}
	for _, it := range backtraces {
		if b.expiredItem(it) {
			continue
		}
		bt, err := b.decodeBacktrace(ctx, id, it)
		if err != nil {
			return nil, err
		}
		rec.Backtraces = append(rec.Backtraces, bt)
	}
	rec.Normalize()
	return &exported{rec: rec, head: h}, nil
}

// partitionEvents decodes the events 0 … Version from the head and the
// event pages read with it.
func (b *Backend) partitionEvents(ctx context.Context, h *headRec, pages []item) ([]core.ExecutionEvent, error) {
	var raw []inlineEvent
	if h.created != "" {
		raw = append(raw, inlineEvent{v: 0, e: h.created})
	}
	for _, it := range pages {
		evs, err := decodeZ(it[aEvents])
		if err != nil {
			return nil, err
		}
		raw = append(raw, evs...)
	}
	raw = append(raw, h.inline...)
	slices.SortFunc(raw, func(a, b inlineEvent) int { return int(a.v) - int(b.v) })
	out := make([]core.ExecutionEvent, 0, len(raw))
	for _, ie := range raw {
		if ie.v > h.st.Version || (len(out) > 0 && out[len(out)-1].Version == ie.v) {
			continue
		}
		ev, err := b.decodeEvent(ctx, ie.e)
		if err != nil {
			return nil, err
		}
		ev.Version = ie.v
		out = append(out, ev)
	}
	return out, nil
}

// SourceMappingsOf implements store.ExportTx: one Query of the
// component's mappings.
func (t *exportTx) SourceMappingsOf(component core.ComponentDigest) ([]core.SourceMapping, error) {
	var out []core.SourceMapping
	err := t.b.queryAll(t.ctx, &dynamodb.QueryInput{
		TableName: t.b.tableName(), ConsistentRead: aws.Bool(true),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK},
		ExpressionAttributeValues: item{":pk": avS(prefixSource + component.String())},
	}, func(it item) (bool, error) {
		sk, _ := getS(it, AttrSK)
		m := core.SourceMapping{Component: component}
		switch {
		case strings.HasPrefix(sk, "E#"):
			m.Key.FrameKey = sk[2:]
		case strings.HasPrefix(sk, "S#"):
			m.Key = core.SourceKey{FrameKey: sk[2:], IsSuffix: true}
		default:
			return true, nil
		}
		s, _ := getS(it, aSourceDigest)
		d, err := core.ParseContentDigest(s)
		if err != nil {
			return false, fmt.Errorf("dynamo: source mapping digest %q: %w", s, err)
		}
		m.Digest = d
		out = append(out, m)
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("dynamo: source mappings of %s: %w", component, err)
	}
	return out, nil
}

// TreeLogs implements store.ExportTx: the tree's log partition in cursor
// order (rows whose time-to-live passed are gone).
func (t *exportTx) TreeLogs(root core.ExecutionId) ([]core.LogInfoAppendRow, error) {
	var out []core.LogInfoAppendRow
	p := core.Pagination[core.LogCursor]{Direction: core.NewerThan, Length: 1000, Cursor: core.LogCursorMin}
	all := core.LogFilter{ShowLogs: true, ShowStreams: true}
	for {
		rows, err := t.b.ListLogs(t.ctx, root, true, all, p)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			out = append(out, core.LogInfoAppendRow{ExecutionID: r.ExecutionID, RunID: r.RunID, Entry: r.Entry})
		}
		if len(rows) < int(p.Length) {
			return out, nil
		}
		p.Cursor = rows[len(rows)-1].Cursor
	}
}
