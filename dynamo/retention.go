package dynamo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
)

// Retention (store.Retainer): doc.go, "Retention", describes the design.

const (
	// AttrTTL is the table's time-to-live attribute: the epoch second at
	// which a finished tree's items expire. DynamoDB deletes an item some
	// time (typically within two days) after it; readers treat it as
	// absent from that second on.
	AttrTTL = "ttl"
	// AttrRetentionPK and AttrRetentionSK key IndexRetention: on the head of
	// every finished execution (while retention is not forever),
	// "RT#<shard>" and "<finish time>#<id>".
	AttrRetentionPK = "rp"
	AttrRetentionSK = "rs"
	// IndexRetention lists finished executions by finish time: the
	// candidates of the retention pass.
	IndexRetention = "retention"

	// DefaultRetentionLag is Options.RetentionLag's default.
	DefaultRetentionLag = 15 * time.Minute

	retentionPK = "RT#"
	// aFinishedAt is a head's finish time once its retention entry was
	// moved forward (rearm).
	aFinishedAt = "rf"
	// aChildren is the number of derived executions created by the
	// execution's own commits (present on heads this build created).
	aChildren = "nc"
	// The cursor of the retention pass: pk "SEQ#RETENTION", sk "C",
	// attribute c = the retention index key up to which every entry was
	// handled.
	pkRetention = "SEQ#RETENTION"
	skRetention = "C"
	aCursor     = "c"
	// refTreePrefix starts the sort key of a blob reference owned by an
	// execution tree: "P#<root id>".
	refTreePrefix = "P#"
	// markParallelism bounds the concurrent writes of one tree's marking.
	markParallelism = 16
)

var (
	_ store.Retainer    = (*Backend)(nil)
	_ store.RetentionTx = (*tx)(nil)
)

// headRetention is what a head item carries for retention.
type headRetention struct {
	// ttl is the tree's expiry in epoch seconds; 0 while unmarked.
	ttl int64
	// rs is "<finish time>#<id>", set once when the execution finished; on
	// a top-level head it is also the retention index sort key (derived
	// heads carry no entry: their tree is decided from its root, see
	// Retention in doc.go), moved forward by rearm.
	rs string
	// rf is the finish time, kept once rearm moved rs past it ("" until
	// then: the finish time is rs's).
	rf string
	// nc counts the derived executions created by this execution's
	// commits; ncKnown tells a head written by a build that counts them.
	nc      int64
	ncKnown bool
}

// encode writes r into a head item; indexed (a top-level head) gives a
// finished head its retention index entry.
func (r *headRetention) encode(it item, shard string, indexed bool) {
	if r.ttl > 0 {
		it[AttrTTL] = avN(r.ttl)
	}
	if r.rs != "" {
		if indexed {
			it[AttrRetentionPK] = avS(retentionPK + shard)
		}
		it[AttrRetentionSK] = avS(r.rs)
	}
	if r.rf != "" {
		it[aFinishedAt] = avS(r.rf)
	}
	if r.ncKnown {
		it[aChildren] = avN(r.nc)
	}
}

func (r *headRetention) decode(it item) error {
	var err error
	var ok bool
	if r.ttl, _, err = getN(it, AttrTTL); err != nil {
		return err
	}
	r.rs, _ = getS(it, AttrRetentionSK)
	r.rf, _ = getS(it, aFinishedAt)
	r.nc, ok, err = getN(it, aChildren)
	r.ncKnown = ok
	return err
}

// finishedAt is the finish time recorded in rs (zero if none).
func (r *headRetention) finishedAt() core.Timestamp {
	ts, _, _ := strings.Cut(r.rs, "#")
	if r.rf != "" {
		ts = r.rf
	}
	t, err := core.ParseSortableText(ts)
	if err != nil {
		return core.Timestamp{}
	}
	return t
}

// execRetention is what one transaction buffered for retention.
type execRetention struct {
	finishedAt *core.Timestamp
	expires    *core.Timestamp
	// children is the number of derived executions created in this
	// transaction with this execution as their parent.
	children int64
}

// ttlOf is the time-to-live value of an expiry: its epoch second, rounded
// up so that nothing expires early.
func ttlOf(at core.Timestamp) int64 {
	s := at.Unix()
	if at.Nanosecond() > 0 {
		s++
	}
	return max(s, 1)
}

// expiredTTL reports whether an item with time-to-live ttl is gone for
// readers now.
func (b *Backend) expiredTTL(ttl int64) bool {
	return ttl > 0 && core.RetentionExpired(core.TS(time.Unix(ttl, 0)), b.now())
}

// expiredItem reports whether it carries a time-to-live that has passed.
func (b *Backend) expiredItem(it item) bool {
	ttl, _, err := getN(it, AttrTTL)
	return err == nil && b.expiredTTL(ttl)
}

// --- the commit path --------------------------------------------------------------

// RecordFinished implements store.RetentionTx: the head of id gets its
// retention index entry in this commit and, when expires is set and the
// execution never created a derived one, its time-to-live.
func (t *tx) RecordFinished(id core.ExecutionId, at core.Timestamp, expires *core.Timestamp) error {
	if err := t.mustWrite(); err != nil {
		return err
	}
	ex := t.exec(id)
	ex.ret.finishedAt, ex.ret.expires = &at, expires
	return nil
}

// countChild counts a derived execution created in this transaction on
// its parent, when the parent is part of the transaction (its own commit).
func (t *tx) countChild(id core.ExecutionId) {
	parent, _, ok := id.SplitToParts()
	if !ok {
		return
	}
	if p, ok := t.execs[parent]; ok && p.exists() {
		p.ret.children++
	}
}

// planRetention sets the retention attributes of a head this transaction
// writes (created heads count their children from the start).
func (ex *execTx) planRetention(h *headRec, created bool) {
	r := &h.ret
	if created {
		r.ncKnown = true
	}
	r.nc += ex.ret.children
	if ex.ret.finishedAt != nil && r.rs == "" {
		r.rs = ex.ret.finishedAt.SortableText() + "#" + ex.id.String()
		if ex.ret.expires != nil && r.ncKnown && r.nc == 0 {
			r.ttl = ttlOf(*ex.ret.expires)
		}
	}
}

// stampRetention gives every item a commit writes into a marked
// execution's partition (pages, responses and their guards, timer rows,
// counters) the time-to-live of its head.
func stampRetention(p *plan) {
	ttls := map[core.ExecutionId]types.AttributeValue{}
	for _, o := range p.ops {
		if (o.kind == opHeadUpdate || o.kind == opHeadCreate) && o.put[AttrTTL] != nil {
			ttls[o.exec] = o.put[AttrTTL]
		}
	}
	if len(ttls) == 0 {
		return
	}
	for i := range p.ops {
		o := &p.ops[i]
		if o.put == nil || o.kind == opHeadUpdate || o.kind == opHeadCreate {
			continue
		}
		if ttl, ok := ttls[o.exec]; ok {
			o.put[AttrTTL] = ttl
			o.size = ItemSize(o.put)
		}
	}
}

// payloadOwner names who a payload belongs to, for its blob reference: an
// execution tree ("P#<root>", with the tree's time-to-live once marked) or,
// when zero, nobody that ever expires ("P": deployment TOML and WIT).
type payloadOwner struct {
	root core.ExecutionId
	ttl  int64
}

func ownerOf(id core.ExecutionId, h *headRec) payloadOwner {
	o := payloadOwner{root: id.TopLevel()}
	if h != nil {
		o.ttl = h.ret.ttl
	}
	return o
}

func (o payloadOwner) refSK() string {
	if o.root.IsZero() {
		return refPayload
	}
	return refTreePrefix + o.root.String()
}

// --- the retention pass -------------------------------------------------------------

// RetentionMarksAhead implements store.Retainer: a finished tree is marked
// at once; DynamoDB deletes it when due.
func (b *Backend) RetentionMarksAhead() bool { return true }

// ResumeExpiry implements store.Retainer: an interrupted marking is
// repaired by the cursor (the tree's entry is handled again).
func (b *Backend) ResumeExpiry(context.Context) (store.ExpireStats, error) {
	return store.ExpireStats{}, nil
}

func (b *Backend) retentionCursor(ctx context.Context) (string, error) {
	out, err := b.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: b.tableName(), ConsistentRead: aws.Bool(true),
		Key: keyOf(pkRetention, skRetention)}, b.optFns...)
	if err != nil {
		return "", fmt.Errorf("dynamo: read the retention cursor: %w", err)
	}
	c, _ := getS(out.Item, aCursor)
	return c, nil
}

// RetentionCandidates implements store.Retainer: the entries of
// IndexRetention after the cursor and at least Options.RetentionLag old
// (a commit planned earlier may still land, an index may lag), merged over
// the shards in key order. The lag does not delay any expiry: a tree
// expires its period after its last finish, whenever it is marked.
func (b *Backend) RetentionCandidates(ctx context.Context, now core.Timestamp, _ core.Retention, limit int) ([]store.RetentionCandidate, error) {
	if err := b.checkOpen(); err != nil {
		return nil, err
	}
	cur, err := b.retentionCursor(ctx)
	if err != nil {
		return nil, err
	}
	lo, hi := max(cur, "0"), now.Add(-b.retentionLag).SortableText()+"#~"
	if lo >= hi {
		return nil, nil
	}
	m := b.newMerger(ctx, dynamodb.QueryInput{
		TableName: b.tableName(), IndexName: aws.String(IndexRetention),
		KeyConditionExpression:    aws.String("#pk = :pk AND #sk BETWEEN :lo AND :hi"),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrRetentionPK, "#sk": AttrRetentionSK},
		ExpressionAttributeValues: item{":lo": avS(lo), ":hi": avS(hi)},
		Limit:                     aws.Int32(int32(min(max(limit, 1), queryPageSize))),
	}, AttrRetentionSK, b.shardKeys(retentionPK))
	var out []store.RetentionCandidate
	for len(out) < limit {
		it, err := m.next(ctx)
		if err != nil {
			return nil, fmt.Errorf("dynamo: retention candidates: %w", err)
		}
		if it == nil {
			break
		}
		rs, _ := getS(it, AttrRetentionSK)
		if rs == cur {
			continue
		}
		pk, _ := getS(it, AttrPK)
		id, err := parseExecPK(pk)
		if err != nil {
			b.undecodable.Skip(ctx, b.log, "retention index entry", pk, err)
			continue
		}
		r := headRetention{rs: rs}
		out = append(out, store.RetentionCandidate{Root: id.TopLevel(), Since: r.finishedAt(), Pos: rs})
	}
	return out, nil
}

// RetentionDone implements store.Retainer: the cursor moves forward only
// (a slower, overlapping pass cannot move it back).
func (b *Backend) RetentionDone(ctx context.Context, pos string) error {
	_, err := b.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: b.tableName(),
		Key:                       keyOf(pkRetention, skRetention),
		UpdateExpression:          aws.String("SET #c = :c"),
		ConditionExpression:       aws.String("attribute_not_exists(#c) OR #c < :c"),
		ExpressionAttributeNames:  map[string]string{"#c": aCursor},
		ExpressionAttributeValues: item{":c": avS(pos)},
	}, b.optFns...)
	var ccf *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &ccf) {
		return fmt.Errorf("dynamo: move the retention cursor: %w", err)
	}
	return nil
}

// RetentionTree implements store.Retainer: the root's head, then (unless
// the root is unfinished, or counted no child) the derived executions the
// list-id index knows, each head read strongly consistently. The index
// may lag: the tree is complete when every member has at least as many
// children read as its head counts (nc), which the commit creating a
// child increments atomically with the creation.
func (b *Backend) RetentionTree(ctx context.Context, root core.ExecutionId) (store.RetentionTree, error) {
	tree := store.RetentionTree{Root: root, Complete: true}
	if err := b.checkOpen(); err != nil {
		return tree, err
	}
	heads := map[core.ExecutionId]*headRec{}
	tree.Backend = heads
	rh, err := b.readHead(ctx, root, true)
	if err != nil || rh == nil {
		return tree, err
	}
	heads[root] = rh
	tree.Members = append(tree.Members, rh.member())
	if !rh.st.IsFinished() || (rh.ret.ncKnown && rh.ret.nc == 0) {
		return tree, nil
	}
	var keys []item
	err = b.eachDerived(ctx, root, func(it item) error {
		keys = append(keys, item{AttrPK: it[AttrPK], AttrSK: avS(skHead)})
		return nil
	})
	if err != nil {
		return tree, err
	}
	items, err := b.batchGet(ctx, keys, true)
	if err != nil {
		return tree, fmt.Errorf("dynamo: derived heads of %s: %w", root, err)
	}
	for _, it := range items {
		h, err := decodeHead(it)
		if err != nil {
			return tree, err
		}
		if h.ob != "" {
			// A fan-out of this execution is still being written: finish
			// it (as every reader does) and decide again later.
			if _, err := b.readHead(ctx, h.st.ExecutionID, true); err != nil {
				return tree, err
			}
			tree.Complete = false
		}
		if b.expiredTTL(h.ret.ttl) {
			continue
		}
		heads[h.st.ExecutionID] = h
		tree.Members = append(tree.Members, h.member())
	}
	found := map[core.ExecutionId]int64{}
	for id := range heads {
		if parent, _, ok := id.SplitToParts(); ok {
			found[parent]++
		}
	}
	live := false
	for id, h := range heads {
		if found[id] < h.ret.nc {
			tree.Complete = false
		}
		live = live || !h.st.IsFinished()
	}
	if live {
		// The tree is kept (core.DecideRetention); its last finish will be
		// a derived execution's, which has no retention entry: decide it
		// again later.
		if err := b.rearm(ctx, root, rh); err != nil {
			return tree, err
		}
	}
	return tree, nil
}

// rearm moves the retention entry of a finished root whose tree still has
// unfinished members to now, so that a pass decides the tree again after
// Options.RetentionLag: derived executions write no entry of their own (a
// tree is decided from its root), so without it a tree whose last finish
// is a derived execution's would never be marked. The finish time moves to
// rf; the revision moves too, so that a commit that read the head before
// runs again rather than putting the old entry back. A lost race (another
// pass moved it, the head changed) leaves it to the winner.
func (b *Backend) rearm(ctx context.Context, root core.ExecutionId, h *headRec) error {
	rs := b.now().SortableText() + "#" + root.String()
	if h.ret.rs == "" || rs <= h.ret.rs {
		return nil
	}
	fin := h.ret.rf
	if fin == "" {
		fin, _, _ = strings.Cut(h.ret.rs, "#")
	}
	_, err := b.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: b.tableName(),
		Key:                       keyOf(pkExec(root), skHead),
		UpdateExpression:          aws.String("SET #rs = :rs, #rf = :rf, #rv = #rv + :one"),
		ConditionExpression:       aws.String("#rs = :old AND #rv = :rv"),
		ExpressionAttributeNames:  map[string]string{"#rs": AttrRetentionSK, "#rf": aFinishedAt, "#rv": aRev},
		ExpressionAttributeValues: item{":rs": avS(rs), ":rf": avS(fin), ":one": avN(1), ":old": avS(h.ret.rs), ":rv": avN(h.rev)},
	}, b.optFns...)
	var ccf *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &ccf) {
		return fmt.Errorf("dynamo: move the retention entry of %s: %w", root, err)
	}
	if err == nil {
		h.ret.rs, h.ret.rf = rs, fin
		h.rev++
	}
	return nil
}

// eachDerived calls fn with the entry of every execution derived from
// root that the list-id index knows (eventually consistent), in id order.
func (b *Backend) eachDerived(ctx context.Context, root core.ExecutionId, fn func(it item) error) error {
	m := b.newMerger(ctx, dynamodb.QueryInput{
		TableName: b.tableName(), IndexName: aws.String(IndexListByID),
		KeyConditionExpression:    aws.String("#pk = :pk AND begins_with(#id, :pre)"),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrListPK, "#id": AttrPK},
		ExpressionAttributeValues: item{":pre": avS(pkExec(root) + ".")},
		Limit:                     aws.Int32(queryPageSize),
	}, AttrPK, b.shardKeys(listDeriv))
	for {
		it, err := m.next(ctx)
		if err != nil {
			return fmt.Errorf("dynamo: derived executions of %s: %w", root, err)
		}
		if it == nil {
			return nil
		}
		if err := fn(it); err != nil {
			return err
		}
	}
}

func (h *headRec) member() core.RetentionMember {
	return core.RetentionMember{State: cloneState(h.st), FinishedAt: h.ret.finishedAt()}
}

// ExpireTree implements store.Retainer: every item of the tree gets the
// time-to-live of expiresAt. Each execution's head is marked first (its
// revision moves, so a commit that read it unmarked runs again and then
// stamps what it writes), then the rest of its partition is read and
// marked; the root goes last, then its logs, then the blob references of
// the payloads met on the way. A writer of logs or backtraces reads the
// head after writing and stamps its items itself when it finds it marked,
// so nothing written concurrently escapes. Items already carrying the
// value are skipped, so a repeated marking (after a crash) writes only
// what is missing.
func (b *Backend) ExpireTree(ctx context.Context, tree store.RetentionTree, expiresAt core.Timestamp) (store.ExpireStats, error) {
	var st store.ExpireStats
	if err := b.checkOpen(); err != nil {
		return st, err
	}
	heads, _ := tree.Backend.(map[core.ExecutionId]*headRec)
	if heads == nil || heads[tree.Root] == nil {
		return st, fmt.Errorf("dynamo: tree %s was not read by this backend: %w", tree.Root, core.ErrConflict)
	}
	ttl := ttlOf(expiresAt)
	mk := &marker{b: b, ttl: ttl, root: tree.Root, digests: map[string]bool{}}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(markParallelism / 4)
	for id, h := range heads {
		if id != tree.Root {
			g.Go(func() error { return mk.execution(gctx, h) })
		}
	}
	if err := g.Wait(); err != nil {
		return mk.stats(), err
	}
	if err := mk.execution(ctx, heads[tree.Root]); err != nil {
		return mk.stats(), err
	}
	if err := mk.logs(ctx); err != nil {
		return mk.stats(), err
	}
	err := mk.refs(ctx)
	return mk.stats(), err
}

// marker marks one tree.
type marker struct {
	b    *Backend
	ttl  int64
	root core.ExecutionId

	mu                    sync.Mutex
	digests               map[string]bool // offloaded payloads met
	heads, items, blobRef int
}

func (mk *marker) lock() func() {
	mk.mu.Lock()
	return mk.mu.Unlock
}

func (mk *marker) stats() store.ExpireStats {
	return store.ExpireStats{Executions: mk.heads, Items: mk.items, BlobRefs: mk.blobRef}
}

func (mk *marker) count(heads, items, refs int) {
	defer mk.lock()()
	mk.heads += heads
	mk.items += items
	mk.blobRef += refs
}

func (mk *marker) payload(s string) {
	if rest, ok := strings.CutPrefix(s, blobRef); ok {
		defer mk.lock()()
		mk.digests[rest] = true
	}
}

// setTTL writes the time-to-live on an existing item (never creating one).
func (mk *marker) setTTL(ctx context.Context, key item) error {
	_, err := mk.b.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: mk.b.tableName(), Key: key,
		UpdateExpression:          aws.String("SET #ttl = :ttl"),
		ConditionExpression:       aws.String("attribute_exists(#pk)"),
		ExpressionAttributeNames:  map[string]string{"#ttl": AttrTTL, "#pk": AttrPK},
		ExpressionAttributeValues: item{":ttl": avN(mk.ttl)},
	}, mk.b.optFns...)
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil // deleted meanwhile (an outbox, a timer row)
	}
	return err
}

// stamp marks every item of its lacking the time-to-live, a few at a time.
func (mk *marker) stamp(ctx context.Context, its []item) (int, error) {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(markParallelism)
	n := 0
	for _, it := range its {
		if ttl, _, _ := getN(it, AttrTTL); ttl == mk.ttl {
			continue
		}
		n++
		key := item{AttrPK: it[AttrPK], AttrSK: it[AttrSK]}
		g.Go(func() error { return mk.setTTL(gctx, key) })
	}
	return n, g.Wait()
}

// execution marks one execution: head first, then its partition and the
// response guards of its responses.
func (mk *marker) execution(ctx context.Context, h *headRec) error {
	b, id := mk.b, h.st.ExecutionID
	marked := 0
	if h.ret.ttl != mk.ttl {
		_, err := b.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: b.tableName(),
			Key:                       keyOf(pkExec(id), skHead),
			UpdateExpression:          aws.String("SET #ttl = :ttl, #rv = #rv + :one"),
			ConditionExpression:       aws.String("#s = :finished"),
			ExpressionAttributeNames:  map[string]string{"#ttl": AttrTTL, "#rv": aRev, "#s": aState},
			ExpressionAttributeValues: item{":ttl": avN(mk.ttl), ":one": avN(1), ":finished": avN(core.StateFinished)},
		}, b.optFns...)
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			return fmt.Errorf("dynamo: mark %s: not finished or gone: %w", id, core.ErrConflict)
		}
		if err != nil {
			return fmt.Errorf("dynamo: mark %s: %w", id, err)
		}
		marked++
	}
	for _, ev := range h.events() {
		mk.payload(ev.e)
	}
	var rest []item
	var guards []item
	err := b.queryAll(ctx, &dynamodb.QueryInput{TableName: b.tableName(), ConsistentRead: aws.Bool(true),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK},
		ExpressionAttributeValues: item{":pk": avS(pkExec(id))},
	}, func(it item) (bool, error) {
		sk, _ := getS(it, AttrSK)
		if sk == skHead {
			return true, nil
		}
		rest = append(rest, it)
		if s, ok := getS(it, aPayload); ok {
			mk.payload(s)
		}
		if s, ok := getS(it, aBtBody); ok {
			mk.payload(s)
		}
		if _, ok := it[aEvents]; ok {
			evs, err := decodeZ(it[aEvents])
			if err != nil {
				return false, err
			}
			for _, ev := range evs {
				mk.payload(ev.e)
			}
		}
		if strings.HasPrefix(sk, prefixResponse) {
			g, err := b.guardOf(ctx, it)
			if err != nil {
				return false, err
			}
			guards = append(guards, keyOf(g, skGuard))
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("dynamo: read %s to mark it: %w", id, err)
	}
	n, err := mk.stamp(ctx, rest)
	marked += n
	if err != nil {
		return fmt.Errorf("dynamo: mark the items of %s: %w", id, err)
	}
	if len(guards) > 0 {
		found, err := b.batchGet(ctx, guards, true, AttrPK, AttrSK, AttrTTL)
		if err != nil {
			return fmt.Errorf("dynamo: response guards of %s: %w", id, err)
		}
		n, err := mk.stamp(ctx, found)
		marked += n
		if err != nil {
			return fmt.Errorf("dynamo: mark the response guards of %s: %w", id, err)
		}
	}
	mk.count(1, marked, 0)
	return nil
}

// guardOf returns the partition key of the uniqueness guard of a response
// item (G#C#<child> or G#D#<delay>).
func (b *Backend) guardOf(ctx context.Context, it item) (string, error) {
	s, _ := getS(it, aPayload)
	data, err := b.getPayload(ctx, s)
	if err != nil {
		return "", err
	}
	var outer core.JoinSetResponseEventOuter
	if err := json.Unmarshal(data, &outer); err != nil {
		return "", fmt.Errorf("dynamo: decode a response to find its guard: %w", err)
	}
	switch ev := outer.Event.Event.(type) {
	case *core.ChildExecutionFinished:
		return prefixGuardChild + ev.ChildExecutionID.String(), nil
	case *core.DelayFinished:
		return prefixGuardDelay + ev.DelayID.String(), nil
	}
	return "", fmt.Errorf("dynamo: response of unknown kind %T", outer.Event.Event)
}

// logs marks the tree's log partition (after its root's head).
func (mk *marker) logs(ctx context.Context) error {
	var its []item
	err := mk.b.queryAll(ctx, &dynamodb.QueryInput{TableName: mk.b.tableName(), ConsistentRead: aws.Bool(true),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK, "#sk": AttrSK, "#ttl": AttrTTL},
		ExpressionAttributeValues: item{":pk": avS(pkLog(mk.root))},
		ProjectionExpression:      aws.String("#pk, #sk, #ttl"),
	}, func(it item) (bool, error) { its = append(its, it); return true, nil })
	if err != nil {
		return fmt.Errorf("dynamo: read the logs of %s to mark them: %w", mk.root, err)
	}
	n, err := mk.stamp(ctx, its)
	mk.count(0, n, 0)
	if err != nil {
		return fmt.Errorf("dynamo: mark the logs of %s: %w", mk.root, err)
	}
	return nil
}

// refs marks the tree's references of the offloaded payloads met.
func (mk *marker) refs(ctx context.Context) error {
	keys := make([]item, 0, len(mk.digests))
	for d := range mk.digests {
		keys = append(keys, keyOf(prefixRef+d, refTreePrefix+mk.root.String()))
	}
	slices.SortFunc(keys, func(a, b item) int {
		x, _ := getS(a, AttrPK)
		y, _ := getS(b, AttrPK)
		return strings.Compare(x, y)
	})
	found, err := mk.b.batchGet(ctx, keys, true, AttrPK, AttrSK, AttrTTL)
	if err != nil {
		return fmt.Errorf("dynamo: blob references of %s: %w", mk.root, err)
	}
	n, err := mk.stamp(ctx, found)
	mk.count(0, n, n)
	if err != nil {
		return fmt.Errorf("dynamo: mark the blob references of %s: %w", mk.root, err)
	}
	return nil
}

// --- writers outside Update --------------------------------------------------------

// stampLate is the writer's half of the marking handshake for items written
// outside a commit (logs, backtraces and their blob references): after
// writing them, it reads the head of owner; if the tree is marked, it marks
// them too. Either this read sees the mark, or the write happened before
// the marker read the partition, which then saw the items.
func (b *Backend) stampLate(ctx context.Context, owner core.ExecutionId, keys []item) error {
	out, err := b.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: b.tableName(), ConsistentRead: aws.Bool(true),
		Key: keyOf(pkExec(owner), skHead), ProjectionExpression: aws.String("#ttl"),
		ExpressionAttributeNames: map[string]string{"#ttl": AttrTTL}}, b.optFns...)
	if err != nil {
		return fmt.Errorf("dynamo: read the head of %s after a write: %w", owner, err)
	}
	ttl, _, err := getN(out.Item, AttrTTL)
	if err != nil || ttl == 0 {
		return err
	}
	mk := &marker{b: b, ttl: ttl, root: owner.TopLevel()}
	_, err = mk.stamp(ctx, keys)
	return err
}

// refKey is the key of the blob reference of an offloaded payload s owned
// by owner's tree (nil for an inline payload).
func refKey(s string, owner core.ExecutionId) item {
	d, ok := strings.CutPrefix(s, blobRef)
	if !ok {
		return nil
	}
	return keyOf(prefixRef+d, payloadOwner{root: owner.TopLevel()}.refSK())
}

// enableTTL turns the table's time-to-live on for AttrTTL unless it is on
// (or being turned on) already. A time-to-live on another attribute is an
// error: the table was not made for this package.
func enableTTL(ctx context.Context, client *dynamodb.Client, table string) error {
	status := func() (types.TimeToLiveStatus, string, error) {
		out, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
		if err != nil {
			return "", "", fmt.Errorf("dynamo: time-to-live of %s: %w", table, err)
		}
		d := out.TimeToLiveDescription
		if d == nil {
			return types.TimeToLiveStatusDisabled, "", nil
		}
		return d.TimeToLiveStatus, aws.ToString(d.AttributeName), nil
	}
	st, attr, err := status()
	if err != nil {
		return err
	}
	switch {
	case st == types.TimeToLiveStatusDisabled || st == "":
	case attr == AttrTTL:
		return nil
	default:
		return fmt.Errorf("dynamo: table %s has its time-to-live on attribute %q (%s), want %q", table, attr, st, AttrTTL)
	}
	_, err = client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(AttrTTL), Enabled: aws.Bool(true)}})
	if err != nil {
		// Another process may have turned it on meanwhile.
		if st, attr, derr := status(); derr == nil && attr == AttrTTL &&
			(st == types.TimeToLiveStatusEnabled || st == types.TimeToLiveStatusEnabling) {
			return nil
		}
		return fmt.Errorf("dynamo: enable the time-to-live of %s: %w", table, err)
	}
	return nil
}
