package dynamo

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
)

// Lock leases (doc.go, "Lock leases"): one item per lock call's chunk of
// candidates carries the lock-expiry index entry of every head it covers.
const (
	prefixLease = "K#"
	skLease     = "K"

	aLease        = "lk" // on a head: the lease covering its lock
	aLeaseMembers = "m"  // on a lease: the member ids, space-separated
	aLeaseClosed  = "c"  // on a lease: its lock call returned; m is what it locked

	// LeaseLag is how long after its expiry a lease that was never closed
	// (its lock call died or failed) is kept while none of its members is
	// locked under it: longer than any lock commit planned under it can
	// take to land, as Options.RetentionLag for retention.
	LeaseLag = 15 * time.Minute
)

var _ store.LockLeaser = (*Backend)(nil)

var leaseIDEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

func pkLease(id string) string { return prefixLease + id }

// OpenLockLease implements store.LockLeaser: one PutItem of a new lease
// item (a random key, so a retry after an unseen success rewrites the same
// item) with its entry in the timers index at expiry.
func (b *Backend) OpenLockLease(ctx context.Context, ids []core.ExecutionId, expiry core.Timestamp) (store.LockLease, error) {
	if err := b.checkOpen(); err != nil {
		return store.LockLease{}, err
	}
	var raw [10]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return store.LockLease{}, err
	}
	id := leaseIDEncoding.EncodeToString(raw[:])
	members := make([]string, len(ids))
	for i, x := range ids {
		members[i] = x.String()
	}
	it := item{
		AttrPK: avS(pkLease(id)), AttrSK: avS(skLease),
		AttrTimerPK: avS(timerLock + strconv.Itoa(shardOf(id, b.shards))), AttrTimerSK: avS(expiry.SortableText()),
		aLeaseMembers: avS(strings.Join(members, " ")),
	}
	if _, err := b.api.PutItem(ctx, &dynamodb.PutItemInput{TableName: b.tableName(), Item: it}, b.optFns...); err != nil {
		return store.LockLease{}, fmt.Errorf("dynamo: open lock lease: %w", err)
	}
	return store.LockLease{ID: id, Expiry: expiry, Members: append([]core.ExecutionId(nil), ids...)}, nil
}

// CloseLockLease implements store.LockLeaser: an UpdateItem setting c and
// the members to locked (the index entry stays as it is), or the lease's
// deletion when nothing was locked. A lease already removed stays removed.
func (b *Backend) CloseLockLease(ctx context.Context, l store.LockLease, locked []core.ExecutionId) error {
	if err := b.checkOpen(); err != nil {
		return err
	}
	key := keyOf(pkLease(l.ID), skLease)
	if len(locked) == 0 {
		_, err := b.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: b.tableName(), Key: key}, b.optFns...)
		if err != nil {
			return fmt.Errorf("dynamo: close lock lease %s: %w", l.ID, err)
		}
		return nil
	}
	members := make([]string, len(locked))
	for i, x := range locked {
		members[i] = x.String()
	}
	_, err := b.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: b.tableName(), Key: key,
		UpdateExpression:          aws.String("SET #c = :t, #m = :m"),
		ConditionExpression:       aws.String("attribute_exists(#pk)"),
		ExpressionAttributeNames:  map[string]string{"#c": aLeaseClosed, "#m": aLeaseMembers, "#pk": AttrPK},
		ExpressionAttributeValues: item{":t": avBool(true), ":m": avS(strings.Join(members, " "))},
	}, b.optFns...)
	var ccf *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &ccf) {
		return fmt.Errorf("dynamo: close lock lease %s: %w", l.ID, err)
	}
	return nil
}

// leaseFor returns the id of the lease in t's context that covers a lock of
// id expiring at expiry, or "".
func (t *tx) leaseFor(id core.ExecutionId, expiry core.Timestamp) string {
	l, ok := store.LockLeaseOf(t.ctx)
	if !ok || !l.Expiry.Equal(expiry) {
		return ""
	}
	for _, m := range l.Members {
		if m == id {
			return l.ID
		}
	}
	return ""
}

// appendsLocked tells whether the transaction appends a Locked event to ex
// (a lock or a lock extension).
func (ex *execTx) appendsLocked() bool {
	for _, ne := range ex.events {
		if _, ok := ne.ev.Event.(*core.Locked); ok {
			return true
		}
	}
	return false
}

// lease is a lease item as the sweep reads it.
type lease struct {
	id      string
	expiry  core.Timestamp
	members []core.ExecutionId
	closed  bool
}

func decodeLease(it item) (lease, error) {
	pk, _ := getS(it, AttrPK)
	l := lease{id: strings.TrimPrefix(pk, prefixLease), closed: getBool(it, aLeaseClosed)}
	ts, _ := getS(it, AttrTimerSK)
	var err error
	if l.expiry, err = core.ParseSortableText(ts); err != nil {
		return l, fmt.Errorf("dynamo: lease %s: expiry: %w", l.id, err)
	}
	m, _ := getS(it, aLeaseMembers)
	for _, s := range strings.Fields(m) {
		id, err := core.ParseExecutionId(s)
		if err != nil {
			return l, fmt.Errorf("dynamo: lease %s: member: %w", l.id, err)
		}
		l.members = append(l.members, id)
	}
	return l, nil
}

// leasedLocks reads the leases named by timers-index entries and their
// members' heads (strongly consistent) and returns the heads locked under a
// lease whose lock expired at or before at. A lease none of whose members is
// locked under it any more is deleted when it was closed, or when LeaseLag
// passed since its expiry (a lock commit of its call can no longer land).
func (b *Backend) leasedLocks(ctx context.Context, entries []item, at core.Timestamp) ([]*headRec, error) {
	keys := make([]item, len(entries))
	for i, e := range entries {
		keys[i] = item{AttrPK: e[AttrPK], AttrSK: avS(skLease)}
	}
	items, err := b.batchGet(ctx, keys, true)
	if err != nil {
		return nil, fmt.Errorf("dynamo: read lock leases: %w", err)
	}
	var leases []lease
	var headKeys []item
	seen := map[core.ExecutionId]bool{}
	for _, it := range items {
		l, err := decodeLease(it)
		if err != nil {
			return nil, err
		}
		leases = append(leases, l)
		for _, m := range l.members {
			if !seen[m] {
				seen[m] = true
				headKeys = append(headKeys, keyOf(pkExec(m), skHead))
			}
		}
	}
	if len(leases) == 0 {
		return nil, nil
	}
	heads, err := b.batchGet(ctx, headKeys, true)
	if err != nil {
		return nil, fmt.Errorf("dynamo: read leased heads: %w", err)
	}
	byID := make(map[core.ExecutionId]*headRec, len(heads))
	for _, it := range heads {
		if b.expiredItem(it) {
			continue
		}
		h, err := decodeHead(it)
		if err != nil {
			return nil, err
		}
		byID[h.st.ExecutionID] = h
	}
	var out []*headRec
	for _, l := range leases {
		live := false
		for _, m := range l.members {
			h := byID[m]
			if h == nil || h.st.State != core.StateLocked || h.lk != l.id {
				continue
			}
			live = true
			if !h.st.At.After(at) {
				out = append(out, h)
			}
		}
		if live || !(l.closed || !at.Before(l.expiry.Add(LeaseLag))) {
			continue
		}
		// Spent: no member can be (or become) locked under it.
		if _, err := b.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: b.tableName(),
			Key: keyOf(pkLease(l.id), skLease)}, b.optFns...); err != nil {
			b.log.WarnContext(ctx, "delete spent lock lease", "lease", l.id, core.LogKeyErr, err)
		}
	}
	return out, nil
}
