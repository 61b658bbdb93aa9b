package dynamo

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"golang.org/x/sync/errgroup"

	"github.com/stela-dev/stela/core"
)

// stream pages through one index partition.
type stream struct {
	in   *dynamodb.QueryInput
	sort string // sort key attribute
	buf  []item
	done bool
	err  error
}

func (s *stream) fetch(ctx context.Context, b *Backend) {
	out, err := b.api.Query(ctx, s.in, b.optFns...)
	if err != nil {
		s.err, s.done = err, true
		return
	}
	s.buf = append(s.buf, out.Items...)
	if len(out.LastEvaluatedKey) == 0 {
		s.done = true
	} else {
		s.in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

func (s *stream) peek(ctx context.Context, b *Backend) (item, error) {
	for len(s.buf) == 0 && !s.done {
		s.fetch(ctx, b)
	}
	if s.err != nil {
		return nil, s.err
	}
	if len(s.buf) == 0 {
		return nil, nil
	}
	return s.buf[0], nil
}

// merger merges index partitions (shards) by sort key.
type merger struct {
	b       *Backend
	streams []*stream
	desc    bool
}

// newMerger starts one query per partition key value, fetching the first
// pages in parallel. base is copied per partition; pkAttr is bound to :pk.
func (b *Backend) newMerger(ctx context.Context, base dynamodb.QueryInput, sortAttr string, pks []string) *merger {
	m := &merger{b: b, desc: base.ScanIndexForward != nil && !*base.ScanIndexForward}
	var g errgroup.Group
	for _, pk := range pks {
		in := base
		vals := item{":pk": avS(pk)}
		for k, v := range base.ExpressionAttributeValues {
			vals[k] = v
		}
		in.ExpressionAttributeValues = vals
		s := &stream{in: &in, sort: sortAttr}
		m.streams = append(m.streams, s)
		g.Go(func() error { s.fetch(ctx, b); return nil }) // a failure is the stream's, reported by next
	}
	_ = g.Wait()
	return m
}

// next pops the item with the smallest (largest when descending) sort key.
func (m *merger) next(ctx context.Context) (item, error) {
	best, bestKey := -1, ""
	for i, s := range m.streams {
		it, err := s.peek(ctx, m.b)
		if err != nil {
			return nil, err
		}
		if it == nil {
			continue
		}
		k, _ := getS(it, s.sort)
		if best < 0 || (!m.desc && k < bestKey) || (m.desc && k > bestKey) {
			best, bestKey = i, k
		}
	}
	if best < 0 {
		return nil, nil
	}
	it := m.streams[best].buf[0]
	m.streams[best].buf = m.streams[best].buf[1:]
	return it, nil
}

func (b *Backend) shardKeys(prefix string) []string {
	pks := make([]string, b.shards)
	for i := range pks {
		pks[i] = prefix + strconv.Itoa(i)
	}
	return pks
}

// PendingByFFQN returns executions of ffqn pending at or before at, by
// scheduled time (then creation time), merged over the index shards.
func (b *Backend) PendingByFFQN(ctx context.Context, ffqn core.FunctionFqn, at core.Timestamp, limit int, skipIncompatible *core.ComponentDigest) ([]core.ExecutionId, error) {
	in := dynamodb.QueryInput{
		TableName: b.tableName(), IndexName: aws.String(IndexPendingFFQN),
		KeyConditionExpression:    aws.String("#pk = :pk AND #sk < :hi"),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPendingFFQN, "#sk": AttrPendingSort},
		ExpressionAttributeValues: item{":hi": avS(at.SortableText() + "$")},
		Limit:                     aws.Int32(int32(min(max(limit, 1), queryPageSize))),
	}
	if skipIncompatible != nil {
		in.FilterExpression = aws.String("attribute_not_exists(#ic) OR #ic <> :skip")
		in.ExpressionAttributeNames["#ic"] = AttrIncompatible
		in.ExpressionAttributeValues[":skip"] = avS(skipIncompatible.String())
	}
	return b.pending(ctx, in, ffqn.String()+"#", limit)
}

// PendingByDigest is PendingByFFQN keyed by the current component digest.
func (b *Backend) PendingByDigest(ctx context.Context, digest core.ComponentDigest, at core.Timestamp, limit int) ([]core.ExecutionId, error) {
	if b.noDigestIndex {
		return nil, fmt.Errorf("dynamo: pending by digest with Options.DisableDigestIndex: %w", core.ErrNotImplemented)
	}
	in := dynamodb.QueryInput{
		TableName: b.tableName(), IndexName: aws.String(IndexPendingDigest),
		KeyConditionExpression:    aws.String("#pk = :pk AND #sk < :hi"),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPendingDigest, "#sk": AttrPendingSort},
		ExpressionAttributeValues: item{":hi": avS(at.SortableText() + "$")},
		Limit:                     aws.Int32(int32(min(max(limit, 1), queryPageSize))),
	}
	return b.pending(ctx, in, digest.String()+"#", limit)
}

func (b *Backend) pending(ctx context.Context, in dynamodb.QueryInput, prefix string, limit int) ([]core.ExecutionId, error) {
	if err := b.checkOpen(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	m := b.newMerger(ctx, in, AttrPendingSort, b.shardKeys(prefix))
	var ids []core.ExecutionId
	for len(ids) < limit {
		it, err := m.next(ctx)
		if err != nil {
			return nil, fmt.Errorf("dynamo: pending %s: %w", prefix, err)
		}
		if it == nil {
			break
		}
		pk, _ := getS(it, AttrPK)
		id, err := parseExecPK(pk)
		if err != nil {
			b.undecodable.Skip(ctx, b.log, "pending index entry", pk, err)
			continue
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// timers returns every IndexTimers entry of kind (lock/delay) due at at.
func (b *Backend) timers(ctx context.Context, kind string, at core.Timestamp) ([]item, error) {
	if err := b.checkOpen(); err != nil {
		return nil, err
	}
	pks := b.shardKeys(kind)
	res := make([][]item, len(pks))
	g, gctx := errgroup.WithContext(ctx)
	for i, pk := range pks {
		g.Go(func() error {
			err := b.queryAll(gctx, &dynamodb.QueryInput{
				TableName: b.tableName(), IndexName: aws.String(IndexTimers),
				KeyConditionExpression:    aws.String("#pk = :pk AND #sk <= :at"),
				ExpressionAttributeNames:  map[string]string{"#pk": AttrTimerPK, "#sk": AttrTimerSK},
				ExpressionAttributeValues: item{":pk": avS(pk), ":at": avS(at.SortableText())},
			}, func(it item) (bool, error) { res[i] = append(res[i], it); return true, nil })
			if err != nil {
				return fmt.Errorf("dynamo: timers %s: %w", pk, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return slices.Concat(res...), nil
}

// ExpiredLocks returns the heads of locked executions whose lock expired at
// or before at (any lifecycle): those with their own timers-index entry and
// those covered by a lock lease (lease.go), whose spent leases it deletes.
func (b *Backend) ExpiredLocks(ctx context.Context, at core.Timestamp) ([]core.ExecutionState, error) {
	keys, err := b.timers(ctx, timerLock, at)
	if err != nil {
		return nil, err
	}
	var own, leases []item
	for _, k := range keys {
		if pk, _ := getS(k, AttrPK); strings.HasPrefix(pk, prefixLease) {
			leases = append(leases, k)
		} else {
			own = append(own, k)
		}
	}
	heads, err := b.heads(ctx, own)
	if err != nil {
		return nil, err
	}
	leased, err := b.leasedLocks(ctx, leases, at) // lease.go
	if err != nil {
		return nil, err
	}
	var out []core.ExecutionState
	seen := map[core.ExecutionId]bool{}
	for _, h := range append(heads, leased...) {
		if h.st.State == core.StateLocked && !h.st.At.After(at) && !seen[h.st.ExecutionID] {
			seen[h.st.ExecutionID] = true
			out = append(out, h.st)
		}
	}
	return out, nil
}

// ExpiredDelays returns unpaused timers with expires_at <= at.
func (b *Backend) ExpiredDelays(ctx context.Context, at core.Timestamp) ([]core.ExpiredDelay, error) {
	keys, err := b.timers(ctx, timerDelay, at)
	if err != nil {
		return nil, err
	}
	out := make([]core.ExpiredDelay, 0, len(keys))
	for _, it := range keys {
		pk, _ := getS(it, AttrPK)
		sk, _ := getS(it, AttrSK)
		id, err := parseExecPK(pk)
		if err != nil {
			return nil, err
		}
		js, d, err := parseDelaySK(sk)
		if err != nil {
			return nil, err
		}
		ts, _ := getS(it, AttrTimerSK) // the index key: the delay's expires_at
		expires, err := core.ParseSortableText(ts)
		if err != nil {
			return nil, fmt.Errorf("dynamo: delay %s: timer key: %w", sk, err)
		}
		out = append(out, core.ExpiredDelay{ExecutionID: id, JoinSetID: js, DelayID: d, ExpiresAt: expires})
	}
	return out, nil
}

// heads reads the head items named by index entries (eventually consistent;
// callers re-check inside Update), in the order of keys.
func (b *Backend) heads(ctx context.Context, entries []item) ([]*headRec, error) {
	keys := make([]item, len(entries))
	for i, e := range entries {
		keys[i] = item{AttrPK: e[AttrPK], AttrSK: avS(skHead)}
	}
	items, err := b.batchGet(ctx, keys, false)
	if err != nil {
		return nil, fmt.Errorf("dynamo: read heads: %w", err)
	}
	byPK := make(map[string]*headRec, len(items))
	for _, it := range items {
		if b.expiredItem(it) {
			continue // gone for readers (retention.go)
		}
		h, err := decodeHead(it)
		if err != nil {
			pk, _ := getS(it, AttrPK)
			b.undecodable.Skip(ctx, b.log, "head", pk, err)
			continue
		}
		byPK[pkExec(h.st.ExecutionID)] = h
	}
	out := make([]*headRec, 0, len(entries))
	for _, e := range entries {
		pk, _ := getS(e, AttrPK)
		if h, ok := byPK[pk]; ok {
			out = append(out, h)
		}
	}
	return out, nil
}

// Cancelling returns up to limit cancelling executions by created_at.
func (b *Backend) Cancelling(ctx context.Context, limit int) ([]core.ExecutionId, error) {
	if err := b.checkOpen(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	m := b.newMerger(ctx, dynamodb.QueryInput{
		TableName: b.tableName(), IndexName: aws.String(IndexCancelling),
		KeyConditionExpression:   aws.String("#pk = :pk"),
		ExpressionAttributeNames: map[string]string{"#pk": AttrCancelPK},
		Limit:                    aws.Int32(int32(min(limit, queryPageSize))),
	}, AttrCancelSK, b.shardKeys(cancelPK))
	var ids []core.ExecutionId
	for len(ids) < limit {
		it, err := m.next(ctx)
		if err != nil {
			return nil, fmt.Errorf("dynamo: cancelling: %w", err)
		}
		if it == nil {
			break
		}
		pk, _ := getS(it, AttrPK)
		id, err := parseExecPK(pk)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// ListExecutions walks the top-level partitions of a list index (plus the
// derived ones with ShowDerived), merged in the order of
// core.ExecutionListPagination.Compare: IndexList (ls = "<created_at>#<id>")
// for created_at pages, IndexListByID (pk = "E#<id>") for execution-id pages.
// The cursor is a key condition on the same sort key, so the merge order and
// the cursor agree. Heads are read in batches, filtered, and the page is
// returned newest first.
func (b *Backend) ListExecutions(ctx context.Context, f core.ListExecutionsFilter, p core.ExecutionListPagination) ([]core.ExecutionState, error) {
	if err := b.checkOpen(); err != nil {
		return nil, err
	}
	if p.CreatedBy == nil && p.ExecutionID == nil {
		p = core.DefaultExecutionListPagination()
	}
	desc, length := p.Window()
	if length <= 0 {
		return nil, nil
	}
	index, sortAttr, bound, rel := listKeyCondition(p)
	names := map[string]string{"#pk": AttrListPK}
	cond := "#pk = :pk"
	in := dynamodb.QueryInput{
		TableName: b.tableName(), IndexName: aws.String(index),
		ScanIndexForward: aws.Bool(!desc), Limit: aws.Int32(int32(min(max(length, 25), queryPageSize))),
	}
	if rel != "" {
		names["#sk"] = sortAttr
		cond += " AND #sk " + rel + " :b"
		in.ExpressionAttributeValues = item{":b": avS(bound)}
	}
	in.KeyConditionExpression, in.ExpressionAttributeNames = aws.String(cond), names
	pks := b.shardKeys(listTop)
	if f.ShowDerived {
		pks = append(pks, b.shardKeys(listDeriv)...)
	}
	m := b.newMerger(ctx, in, sortAttr, pks)
	var out []core.ExecutionState
	for len(out) < length {
		var batch []item
		for len(batch) < 50 {
			it, err := m.next(ctx)
			if err != nil {
				return nil, fmt.Errorf("dynamo: list executions: %w", err)
			}
			if it == nil {
				break
			}
			batch = append(batch, it)
		}
		if len(batch) == 0 {
			break
		}
		heads, err := b.heads(ctx, batch)
		if err != nil {
			return nil, err
		}
		for _, h := range heads {
			if len(out) < length && f.Matches(&h.st) {
				out = append(out, h.st)
			}
		}
	}
	p.SortNewestFirst(out)
	return out, nil
}

// listKeyCondition returns the list index for p, its sort key attribute and
// the cursor as a key condition "#sk <rel> bound" (rel "" without a cursor).
// Sort keys: ls = created_at.SortableText() + "#" + id and pk = "E#" + id; "#" < "$"
// and every id character sorts after "#", so a bare instant T bounds the
// whole group created at T: < T and >= T compare with T.SortableText(), <= T and
// > T with T.SortableText() + "$".
func listKeyCondition(p core.ExecutionListPagination) (index, sortAttr, bound, rel string) {
	if c := p.ExecutionID; c != nil {
		if c.Cursor == nil {
			return IndexListByID, AttrPK, "", ""
		}
		return IndexListByID, AttrPK, pkExec(*c.Cursor), c.Rel()
	}
	c := p.CreatedBy
	if c == nil || c.Cursor == nil {
		return IndexList, AttrListSK, "", ""
	}
	ts := (*c.Cursor).SortableText()
	if p.CreatedByID != nil {
		return IndexList, AttrListSK, ts + "#" + p.CreatedByID.String(), c.Rel()
	}
	switch c.Rel() {
	case ">":
		return IndexList, AttrListSK, ts + "$", ">"
	case ">=":
		return IndexList, AttrListSK, ts, ">="
	case "<":
		return IndexList, AttrListSK, ts, "<"
	}
	return IndexList, AttrListSK, ts + "$", "<"
}
