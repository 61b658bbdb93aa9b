package dynamo_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/stela-dev/stela/cas"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/dynamo"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/store/storetest"
)

// DynamoDB Local does not delete expired items (neither does AWS at once:
// typically within two days). These tests therefore check the
// time-to-live of every item, then play AWS's deleter themselves
// (expireTTL: delete every item whose ttl has passed) and check what is
// left.

const testRetention = time.Hour

type retentionEnv struct {
	client *dynamodb.Client
	table  string
	clock  *storetest.SimClock
	blobs  *cas.Dir
	svc    *store.Service
}

func newRetentionEnv(t *testing.T, optFns ...func(*dynamodb.Options)) *retentionEnv {
	t.Helper()
	return newRetentionEnvWith(t, dynamo.Options{}, optFns...)
}

// newRetentionEnvWith is newRetentionEnv with the backend's options
// (table, clock, CAS and inline threshold are set).
func newRetentionEnvWith(t *testing.T, opts dynamo.Options, optFns ...func(*dynamodb.Options)) *retentionEnv {
	t.Helper()
	client := newClient(t, optFns...)
	e := &retentionEnv{client: client, table: newTable(t, client), clock: storetest.NewSimClock(core.TS(time.Now()))}
	var err error
	if e.blobs, err = cas.NewDir(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	opts.Table, opts.Clock, opts.Cas, opts.InlineThreshold = e.table, e.clock, e.blobs, 1024
	b, err := dynamo.New(client, opts)
	if err != nil {
		t.Fatal(err)
	}
	e.svc = store.New(b, store.Options{Clock: e.clock, Cas: e.blobs, GCGrace: time.Minute,
		Retention: core.RetainFor(testRetention)})
	t.Cleanup(func() { _ = e.svc.Close() })
	return e
}

// scan returns every item of the table.
func (e *retentionEnv) scan(t *testing.T) []map[string]types.AttributeValue {
	t.Helper()
	var out []map[string]types.AttributeValue
	in := &dynamodb.ScanInput{TableName: aws.String(e.table), ConsistentRead: aws.Bool(true)}
	for {
		res, err := e.client.Scan(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, res.Items...)
		if len(res.LastEvaluatedKey) == 0 {
			return out
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
}

// ownedBy reports whether an item belongs to the tree of root: every key
// of a tree's items names the root's ULID (execution ids "E_<ULID>…",
// delay ids "Delay_<ULID>…", log partitions and blob references "…E_<ULID>").
func ownedBy(it map[string]types.AttributeValue, root core.ExecutionId) bool {
	u := root.ULID().String()
	pk, sk := keyString(it, dynamo.AttrPK), keyString(it, dynamo.AttrSK)
	return strings.Contains(pk, u) || strings.Contains(sk, u)
}

func keyString(it map[string]types.AttributeValue, name string) string {
	if v, ok := it[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func ttlOfItem(t *testing.T, it map[string]types.AttributeValue) int64 {
	t.Helper()
	v, ok := it[dynamo.AttrTTL].(*types.AttributeValueMemberN)
	if !ok {
		return 0
	}
	n, err := time.ParseDuration(v.Value + "s")
	if err != nil {
		t.Fatalf("ttl %q: %v", v.Value, err)
	}
	return int64(n / time.Second)
}

// expireTTL plays DynamoDB's time-to-live deleter: it deletes every item
// whose ttl is at or before now, and returns how many it deleted.
func (e *retentionEnv) expireTTL(t *testing.T) int {
	t.Helper()
	n := 0
	for _, it := range e.scan(t) {
		if ttl := ttlOfItem(t, it); ttl > 0 && ttl <= e.clock.Now().Unix() {
			_, err := e.client.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(e.table),
				Key: map[string]types.AttributeValue{dynamo.AttrPK: it[dynamo.AttrPK], dynamo.AttrSK: it[dynamo.AttrSK]}})
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	return n
}

func (e *retentionEnv) owned(t *testing.T, root core.ExecutionId) []map[string]types.AttributeValue {
	t.Helper()
	var out []map[string]types.AttributeValue
	for _, it := range e.scan(t) {
		if ownedBy(it, root) {
			out = append(out, it)
		}
	}
	return out
}

func (e *retentionEnv) retain(t *testing.T) store.RetentionResult {
	t.Helper()
	res, err := e.svc.ApplyRetention(context.Background(), e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func (e *retentionEnv) blobCount(t *testing.T) int {
	t.Helper()
	n := 0
	if err := e.blobs.ListInfo(context.Background(), func(cas.BlobInfo) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// A finished tree is marked, every item of it with the same time-to-live
// (its last finish plus the period) — heads, event pages, responses and
// their guards, the waiting delay's timer row, JoinNext counters,
// backtraces, logs, the references of its offloaded payloads — also what
// is written after the marking (a log, a cancelled delay's response); an
// unfinished tree is untouched. Once the time-to-live passed, readers see
// nothing of the tree and blob GC collects the payloads only it used; once
// DynamoDB deleted the expired items, nothing of it is left.
func TestRetentionMarksEveryItemOfAFinishedTree(t *testing.T) {
	ctx := context.Background()
	e := newRetentionEnv(t)
	ttl, err := e.client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(e.table)})
	if err != nil || ttl.TimeToLiveDescription == nil || aws.ToString(ttl.TimeToLiveDescription.AttributeName) != dynamo.AttrTTL ||
		ttl.TimeToLiveDescription.TimeToLiveStatus != types.TimeToLiveStatusEnabled {
		t.Fatalf("CreateTable left the time-to-live at %+v (%v), want enabled on %s", ttl, err, dynamo.AttrTTL)
	}
	done := storetest.BuildTree(t, e.svc, e.clock, true, true)
	finish := e.clock.Now()
	open := storetest.BuildTree(t, e.svc, e.clock, false, true)
	wantTTL := finish.Add(testRetention).Unix() + 1 // rounded up: the clock has nanoseconds
	before := e.owned(t, done.Root)
	kinds := map[string]bool{}
	for _, it := range before {
		pk, sk := keyString(it, dynamo.AttrPK), keyString(it, dynamo.AttrSK)
		kinds[strings.SplitN(pk, "#", 2)[0]+"#"+sk[:1]] = true
	}
	for _, k := range []string{"E#H", "E#V", "E#J", "E#R", "E#D", "E#B", "G#G", "LG#0", "REF#P"} {
		if !kinds[k] {
			t.Fatalf("the fixture wrote no item of kind %s (kinds %v)", k, kinds)
		}
	}
	openBefore := len(e.owned(t, open.Root))

	// Marked once the retention lag passed, long before it expires.
	e.clock.Advance(30 * time.Minute)
	res := e.retain(t)
	if res.Expired != 1 {
		t.Fatalf("retention pass: %+v, want one tree marked", res)
	}
	t.Logf("marking a tree of %d executions (%d items): %+v", len(done.IDs), len(before), res)
	// Written after the marking: stamped by their writers.
	if err := e.svc.AppendLog(ctx, core.LogInfoAppendRow{ExecutionID: done.IDs[1], RunID: run,
		Entry: core.LogEntry{CreatedAt: e.clock.Now(), Level: core.LogInfo, Message: "late"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := core.CancelDelay(ctx, e.svc, done.Waiting, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	marked := e.owned(t, done.Root)
	if len(marked) != len(before)+2 { // the late log, the delay's response and guard, minus its timer row
		t.Fatalf("%d items after the late writes, want %d", len(marked), len(before)+2)
	}
	for _, it := range marked {
		if got := ttlOfItem(t, it); got != wantTTL {
			t.Errorf("item %s/%s: ttl %d, want %d", keyString(it, dynamo.AttrPK), keyString(it, dynamo.AttrSK), got, wantTTL)
		}
	}
	for _, it := range e.owned(t, open.Root) {
		if got := ttlOfItem(t, it); got != 0 {
			t.Errorf("item %s/%s of the unfinished tree: ttl %d, want none", keyString(it, dynamo.AttrPK), keyString(it, dynamo.AttrSK), got)
		}
	}
	if _, err := e.svc.Get(ctx, done.Root); err != nil {
		t.Fatalf("get before the expiry: %v", err)
	}
	if res := e.retain(t); res.Items != 0 {
		t.Fatalf("a second pass wrote %+v, want nothing", res)
	}

	// The blobs only this tree refers to (the child activity's Created
	// event, the grandchild's response, …; the grandchild's result is the
	// unfinished tree's too).
	refs := map[string][]string{}
	for _, it := range e.scan(t) {
		if pk := keyString(it, dynamo.AttrPK); strings.HasPrefix(pk, "REF#") {
			refs[pk] = append(refs[pk], keyString(it, dynamo.AttrSK))
		}
	}
	own := 0
	for _, sks := range refs {
		if len(sks) == 1 && sks[0] == "P#"+done.Root.String() {
			own++
		}
	}
	if own == 0 || own == len(refs) {
		t.Fatalf("blob references %v: want some only the finished tree's", refs)
	}

	// Expired: gone for readers, its references too, before DynamoDB
	// deletes anything: gc collects the blobs only it used.
	e.clock.Advance(31 * time.Minute)
	for _, id := range done.IDs {
		if _, err := e.svc.Get(ctx, id); !errors.Is(err, core.ErrNotFound) {
			t.Fatalf("get %s after the expiry: %v, want NotFound", id, err)
		}
	}
	blobs := e.blobCount(t)
	if n, err := e.svc.GCOrphanFiles(ctx); err != nil || int(n) != own || e.blobCount(t) != blobs-own {
		t.Fatalf("gc after the expiry: collected %d (%v), %d → %d blobs; want the expired tree's own %d", n, err, blobs, e.blobCount(t), own)
	}
	if deleted := e.expireTTL(t); deleted != len(marked) {
		t.Errorf("the time-to-live deleted %d items, want the tree's %d", deleted, len(marked))
	}
	if left := e.owned(t, done.Root); len(left) != 0 {
		t.Fatalf("%d items of the expired tree are left, e.g. %v", len(left), left[0])
	}
	if n := len(e.owned(t, open.Root)); n != openBefore {
		t.Fatalf("the unfinished tree has %d items, had %d", n, openBefore)
	}
	if n, err := e.svc.GCOrphanFiles(ctx); err != nil || n != 0 {
		t.Fatalf("gc after the deletion: %d, %v; want nothing more", n, err)
	}
	for _, id := range open.IDs {
		if _, err := e.svc.Get(ctx, id); err != nil {
			t.Fatalf("get %s of the unfinished tree after gc: %v", id, err)
		}
	}
	if _, err := e.svc.GetBacktrace(ctx, open.IDs[1], core.BacktraceFilter{Kind: "first"}); err != nil {
		t.Fatalf("the unfinished tree's offloaded backtrace after gc: %v", err)
	}
}

// crashUpdates fails every UpdateItem after the first `allow` ones while
// armed, as a process dying in the middle of a marking would leave it.
type crashUpdates struct {
	armed atomic.Bool
	allow atomic.Int64
}

func (c *crashUpdates) register(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
		return s.Initialize.Add(middleware.InitializeMiddlewareFunc("Crash",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				if _, ok := in.Parameters.(*dynamodb.UpdateItemInput); ok && c.armed.Load() && c.allow.Add(-1) < 0 {
					return middleware.InitializeOutput{}, middleware.Metadata{}, errors.New("crash")
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
	})
}

// A marking interrupted half-way (the process died) is completed by the
// next pass: the cursor did not move past the tree.
func TestRetentionRepairsAnInterruptedMarking(t *testing.T) {
	crash := &crashUpdates{}
	e := newRetentionEnv(t, crash.register)
	done := storetest.BuildTree(t, e.svc, e.clock, true, false)
	e.clock.Advance(30 * time.Minute)
	crash.allow.Store(3)
	crash.armed.Store(true)
	if _, err := e.svc.ApplyRetention(context.Background(), e.clock.Now()); err == nil {
		t.Fatal("the interrupted pass reported no error")
	}
	crash.armed.Store(false)
	unmarked := 0
	items := e.owned(t, done.Root)
	for _, it := range items {
		if ttlOfItem(t, it) == 0 {
			unmarked++
		}
	}
	if unmarked == 0 || unmarked == len(items) {
		t.Fatalf("%d of %d items unmarked after the crash, want some", unmarked, len(items))
	}
	res := e.retain(t)
	if res.Expired != 1 {
		t.Fatalf("repairing pass: %+v, want the tree marked", res)
	}
	for _, it := range e.owned(t, done.Root) {
		if ttlOfItem(t, it) == 0 {
			t.Errorf("item %s/%s still unmarked after the repair", keyString(it, dynamo.AttrPK), keyString(it, dynamo.AttrSK))
		}
	}
}

// Only a tree's root carries a retention index entry (doc.go, Retention:
// a tree is decided from its root, so a derived execution's finish writes
// one index entry less); derived heads keep their finish time in rs, which
// the decision reads. The tree is still marked whole, with the expiry of
// its last finish.
func TestRetentionEntryOnlyOnTheRoot(t *testing.T) {
	e := newRetentionEnv(t)
	done := storetest.BuildTree(t, e.svc, e.clock, true, false)
	finish := e.clock.Now()
	heads := 0
	for _, it := range e.owned(t, done.Root) {
		if keyString(it, dynamo.AttrSK) != "H" {
			continue
		}
		heads++
		pk := keyString(it, dynamo.AttrPK)
		_, indexed := it[dynamo.AttrRetentionPK]
		if rs := keyString(it, dynamo.AttrRetentionSK); rs == "" {
			t.Fatalf("finished head %s has no finish time (rs)", pk)
		}
		if root := pk == "E#"+done.Root.String(); indexed != root {
			t.Fatalf("head %s: retention index entry %v, want %v (only the root's)", pk, indexed, root)
		}
	}
	if heads < 4 {
		t.Fatalf("the fixture has %d heads, want a root and its derived executions", heads)
	}
	e.clock.Advance(30 * time.Minute)
	if res := e.retain(t); res.Expired != 1 {
		t.Fatalf("retention pass: %+v, want the tree marked", res)
	}
	want := finish.Add(testRetention).Unix() + 1
	for _, it := range e.owned(t, done.Root) {
		if got := ttlOfItem(t, it); got != want && keyString(it, dynamo.AttrPK)[:2] == "E#" {
			t.Fatalf("%s/%s: ttl %d, want %d", keyString(it, dynamo.AttrPK), keyString(it, dynamo.AttrSK), got, want)
		}
	}
}
