package dynamo_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/dynamo"
	"github.com/stela-dev/stela/store"
)

func attrS(it map[string]types.AttributeValue, name string) string {
	if v, ok := it[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// leases returns the lock leases stored, with their ids.
func leases(ctx context.Context, t *testing.T, b *dynamo.Backend) []map[string]types.AttributeValue {
	t.Helper()
	return must(b.RawLeases(ctx))(t)
}

func leaseID(it map[string]types.AttributeValue) string {
	return strings.TrimPrefix(attrS(it, dynamo.AttrPK), "K#")
}

// expiredIDs returns the ids ExpiredLocks reports at at, sorted, failing on
// a duplicate.
func expiredIDs(ctx context.Context, t *testing.T, b *dynamo.Backend, at core.Timestamp) []string {
	t.Helper()
	var out []string
	for _, st := range must(b.ExpiredLocks(ctx, at))(t) {
		out = append(out, st.ExecutionID.String())
	}
	slices.Sort(out)
	if len(slices.Compact(slices.Clone(out))) != len(out) {
		t.Fatalf("ExpiredLocks at %s reports a lock twice: %v", at, out)
	}
	return out
}

func idStrings(ids ...core.ExecutionId) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id.String()
	}
	slices.Sort(out)
	return out
}

func createActivities(ctx context.Context, t *testing.T, svc *store.Service, n int) []core.ExecutionId {
	t.Helper()
	ids := make([]core.ExecutionId, n)
	for i := range ids {
		ids[i] = newID()
		must(svc.Create(ctx, createReq(ids[i], ffqnAct, compAct, t0)))(t)
	}
	return ids
}

var okResult = core.RetOk(&core.WastValWithType{Type: "u32", Value: []byte(`1`)})

func finishLocked(ctx context.Context, t *testing.T, svc *store.Service, le core.LockedExecution) {
	t.Helper()
	must(svc.Append(ctx, le.ExecutionID, le.NextVersion, core.AppendRequest{CreatedAt: t0, Event: &core.Finished{Retval: okResult}}))(t)
}

// A lock call of at least three executions indexes their lock expiry once,
// in one lease; each head keeps its own expiry (state and Locked event)
// and ExpiredLocks finds every expired one exactly once, whether it is
// leased, extended (its own index entry then) or finished meanwhile. The
// lease goes once it covers no lock.
func TestLockLeaseCoversALockCall(t *testing.T) {
	ctx := context.Background()
	svc, b := newService(t, &fixedClock{t0}, dynamo.Options{Shards: 3})
	ids := createActivities(ctx, t, svc, 5)
	req := lockReq(t0, compAct)
	T := req.LockExpiresAt
	locked := must(svc.LockPendingByFFQNs(ctx, req, []core.FunctionFqn{ffqnAct}))(t)
	if len(locked) != 5 {
		t.Fatalf("locked %d, want 5", len(locked))
	}
	ls := leases(ctx, t, b)
	if len(ls) != 1 {
		t.Fatalf("%d leases, want 1", len(ls))
	}
	lid := leaseID(ls[0])
	if got := strings.Fields(attrS(ls[0], "m")); !slices.Equal(sortedCopy(got), idStrings(ids...)) {
		t.Fatalf("lease members %v, want %v", got, ids)
	}
	if _, closed := ls[0]["c"]; !closed {
		t.Fatal("the lease is not closed after its lock call returned")
	}
	for _, le := range locked {
		h := must(b.RawHead(ctx, le.ExecutionID))(t)
		if attrS(h, "lk") != lid || attrS(h, dynamo.AttrTimerPK) != "" {
			t.Fatalf("head %s: lk %q tp %q, want the lease and no entry of its own", le.ExecutionID, attrS(h, "lk"), attrS(h, dynamo.AttrTimerPK))
		}
		if !le.LockedEvent.LockExpiresAt.Equal(T) {
			t.Fatalf("Locked event expiry %s, want %s", le.LockedEvent.LockExpiresAt, T)
		}
		log := must(svc.Get(ctx, le.ExecutionID))(t)
		if l, ok := log.Events[len(log.Events)-1].Event.(*core.Locked); !ok || !l.LockExpiresAt.Equal(T) {
			t.Fatalf("stored Locked event of %s: %#v, want expiry %s", le.ExecutionID, log.Events[len(log.Events)-1].Event, T)
		}
	}
	if got := expiredIDs(ctx, t, b, T.Add(-time.Nanosecond)); len(got) != 0 {
		t.Fatalf("expired before the expiry: %v", got)
	}
	if got := expiredIDs(ctx, t, b, T); !slices.Equal(got, idStrings(ids...)) {
		t.Fatalf("expired at the expiry: %v, want all 5", got)
	}

	// The first extends its lock: its own entry, the lease no longer covers it.
	ext := req.LockedEvent()
	T2 := T.Add(time.Hour)
	ext.LockExpiresAt = T2
	must(svc.Append(ctx, locked[0].ExecutionID, locked[0].NextVersion, core.AppendRequest{CreatedAt: t0, Event: ext}))(t)
	h := must(b.RawHead(ctx, locked[0].ExecutionID))(t)
	if attrS(h, "lk") != "" || attrS(h, dynamo.AttrTimerSK) != T2.SortableText() {
		t.Fatalf("extended head: lk %q ts %q, want no lease and its own entry at %s", attrS(h, "lk"), attrS(h, dynamo.AttrTimerSK), T2)
	}
	// Two finish.
	finishLocked(ctx, t, svc, locked[1])
	finishLocked(ctx, t, svc, locked[2])
	if got := expiredIDs(ctx, t, b, T); !slices.Equal(got, idStrings(locked[3].ExecutionID, locked[4].ExecutionID)) {
		t.Fatalf("expired at T after an extension and two finishes: %v", got)
	}
	if len(leases(ctx, t, b)) != 1 {
		t.Fatal("a lease covering two locks was removed")
	}
	res := must(store.Sweep(ctx, svc, T))(t)
	if res.ExpiredLocks != 2 {
		t.Fatalf("sweep resolved %d locks, want 2", res.ExpiredLocks)
	}
	// The next pass finds the lease spent and removes it; the extended lock
	// is still found by its own entry.
	if got := expiredIDs(ctx, t, b, T); len(got) != 0 {
		t.Fatalf("expired at T after the sweep: %v", got)
	}
	if n := len(leases(ctx, t, b)); n != 0 {
		t.Fatalf("%d leases after every member left its lock, want 0", n)
	}
	if got := expiredIDs(ctx, t, b, T2); !slices.Equal(got, idStrings(locked[0].ExecutionID)) {
		t.Fatalf("expired at the extension's expiry: %v", got)
	}
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

// Fewer than three candidates, and a lock of one execution, take no lease:
// the heads index their own expiry.
func TestSmallLockCallsIndexTheirOwnExpiry(t *testing.T) {
	ctx := context.Background()
	svc, b := newService(t, &fixedClock{t0}, dynamo.Options{Shards: 3})
	ids := createActivities(ctx, t, svc, 3)
	req := lockReq(t0, compAct)
	req.BatchSize = 2
	locked := must(svc.LockPendingByFFQNs(ctx, req, []core.FunctionFqn{ffqnAct}))(t)
	one := must(svc.LockOne(ctx, req, ids[2], 1))(t)
	if len(locked) != 2 {
		t.Fatalf("locked %d, want 2", len(locked))
	}
	if n := len(leases(ctx, t, b)); n != 0 {
		t.Fatalf("%d leases, want none", n)
	}
	for _, id := range []core.ExecutionId{locked[0].ExecutionID, locked[1].ExecutionID, one.ExecutionID} {
		h := must(b.RawHead(ctx, id))(t)
		if attrS(h, "lk") != "" || attrS(h, dynamo.AttrTimerSK) != req.LockExpiresAt.SortableText() {
			t.Fatalf("head %s: lk %q ts %q, want its own entry", id, attrS(h, "lk"), attrS(h, dynamo.AttrTimerSK))
		}
	}
	if got := expiredIDs(ctx, t, b, req.LockExpiresAt); !slices.Equal(got, idStrings(ids...)) {
		t.Fatalf("expired %v, want all 3", got)
	}
}

// A lease whose lock call died before closing it (or whose lock Update
// failed) may still see a lock of that call land: it is kept, while none
// of its members is locked under it, until dynamo.LeaseLag after its
// expiry, and a lock landing within that lag is found expired.
func TestUnclosedLockLeaseOutlivesALateLock(t *testing.T) {
	ctx := context.Background()
	svc, b := newService(t, &fixedClock{t0}, dynamo.Options{Shards: 3})
	ids := createActivities(ctx, t, svc, 3)
	req := lockReq(t0, compAct)
	T := req.LockExpiresAt
	l := must(b.OpenLockLease(ctx, ids, T))(t)
	lctx := store.WithLockLease(ctx, l)
	// The call locks two and dies: no close.
	a := must(svc.LockOne(lctx, req, ids[0], 1))(t)
	must(svc.LockOne(lctx, req, ids[1], 1))(t)
	finishLocked(ctx, t, svc, a)
	if got := expiredIDs(ctx, t, b, T); !slices.Equal(got, idStrings(ids[1])) {
		t.Fatalf("expired at T: %v, want the unfinished one", got)
	}
	must(store.Sweep(ctx, svc, T))(t)
	if got := expiredIDs(ctx, t, b, T.Add(time.Minute)); len(got) != 0 {
		t.Fatalf("expired after the sweep: %v", got)
	}
	if n := len(leases(ctx, t, b)); n != 1 {
		t.Fatalf("%d leases: an open lease must outlive its members until its lag passed", n)
	}
	// The dead call's third lock lands late, inside the lag.
	must(svc.LockOne(lctx, req, ids[2], 1))(t)
	if got := expiredIDs(ctx, t, b, T.Add(2*time.Minute)); !slices.Equal(got, idStrings(ids[2])) {
		t.Fatalf("expired after a late lock: %v, want it", got)
	}
	must(store.Sweep(ctx, svc, T.Add(2*time.Minute)))(t)
	if got := expiredIDs(ctx, t, b, T.Add(dynamo.LeaseLag-time.Second)); len(got) != 0 || len(leases(ctx, t, b)) != 1 {
		t.Fatalf("before the lag: expired %v, %d leases; want none and the lease kept", got, len(leases(ctx, t, b)))
	}
	if got := expiredIDs(ctx, t, b, T.Add(dynamo.LeaseLag)); len(got) != 0 {
		t.Fatalf("expired at the lag: %v", got)
	}
	if n := len(leases(ctx, t, b)); n != 0 {
		t.Fatalf("%d leases after the lag, want 0", n)
	}
}

// eagerChildren locks a fresh workflow (its lock expiring in an hour) and
// writes a batch creating n children of ffqnAct with an eager lock of all
// of them expiring at lockReq's expiry; it returns the children locked.
func eagerChildren(ctx context.Context, t *testing.T, svc *store.Service, n int) []core.LockedExecution {
	t.Helper()
	p := newID()
	must(svc.Create(ctx, createReq(p, ffqnWf, compWf, t0)))(t)
	preq := lockReq(t0, compWf)
	preq.LockExpiresAt = t0.Add(time.Hour)
	le := must(svc.LockOne(ctx, preq, p, 1))(t)
	js := mustV(core.ParseJoinSetId("g:1"))
	batch := []core.AppendRequest{{CreatedAt: t0, Event: &core.HistoryEventRequest{Event: &core.JoinSetCreate{JoinSetID: js}}}}
	var children []core.CreateRequest
	c := p.NextLevel(js)
	for range n {
		batch = append(batch, core.AppendRequest{CreatedAt: t0, Event: &core.HistoryEventRequest{Event: &core.JoinSetRequestEvent{JoinSetID: js,
			Request: &core.ChildExecutionRequest{ChildExecutionID: core.ExecutionIdDerived{ExecutionId: c}, TargetFFQN: ffqnAct,
				Params: core.Params{[]byte(`"hello"`), []byte(`42`)}}}}})
		r := createReq(c, ffqnAct, compAct, t0)
		r.Parent = &core.Parent{ExecutionID: p, JoinSetID: js}
		children = append(children, r)
		c = c.Incremented()
	}
	lk := lockReq(t0, compAct)
	lk.BatchSize = uint32(n)
	_, locked, err := svc.AppendBatchCreateNewExecutionLocked(ctx, t0, batch, p, le.NextVersion, children, nil,
		[]core.EagerLock{{Request: lk, FFQNs: []core.FunctionFqn{ffqnAct}}})
	noErr(t, err)
	if len(locked) != n {
		t.Fatalf("eager write locked %d children, want %d", len(locked), n)
	}
	return locked
}

// A create-children write that creates at least three children locked
// (eager dispatch) indexes their lock expiry once, in one lease, as a lock
// call does: the created heads name it and have no entry of their own, the
// sweep finds each expired one once, and the lease goes once it covers no
// lock. Fewer than three index their own expiry.
func TestEagerChildrenShareALockLease(t *testing.T) {
	ctx := context.Background()
	svc, b := newService(t, &fixedClock{t0}, dynamo.Options{Shards: 3})
	T := lockReq(t0, compAct).LockExpiresAt
	locked := eagerChildren(ctx, t, svc, 4)
	ls := leases(ctx, t, b)
	if len(ls) != 1 {
		t.Fatalf("%d leases, want 1", len(ls))
	}
	var ids []core.ExecutionId
	for _, le := range locked {
		ids = append(ids, le.ExecutionID)
	}
	if got := strings.Fields(attrS(ls[0], "m")); !slices.Equal(sortedCopy(got), idStrings(ids...)) {
		t.Fatalf("lease members %v, want %v", got, ids)
	}
	if _, closed := ls[0]["c"]; !closed {
		t.Fatal("the lease is not closed after its write returned")
	}
	lid := leaseID(ls[0])
	for _, le := range locked {
		h := must(b.RawHead(ctx, le.ExecutionID))(t)
		if attrS(h, "lk") != lid || attrS(h, dynamo.AttrTimerPK) != "" {
			t.Fatalf("head %s: lk %q tp %q, want the lease and no entry of its own", le.ExecutionID, attrS(h, "lk"), attrS(h, dynamo.AttrTimerPK))
		}
		if !le.LockedEvent.LockExpiresAt.Equal(T) {
			t.Fatalf("Locked event expiry %s, want %s", le.LockedEvent.LockExpiresAt, T)
		}
	}
	if got := expiredIDs(ctx, t, b, T.Add(-time.Nanosecond)); len(got) != 0 {
		t.Fatalf("expired before the expiry: %v", got)
	}
	if got := expiredIDs(ctx, t, b, T); !slices.Equal(got, idStrings(ids...)) {
		t.Fatalf("expired at the expiry: %v, want the 4 children", got)
	}
	finishLocked(ctx, t, svc, locked[0])
	if res := must(store.Sweep(ctx, svc, T))(t); res.ExpiredLocks != 3 {
		t.Fatalf("sweep resolved %d locks, want 3", res.ExpiredLocks)
	}
	if got := expiredIDs(ctx, t, b, T); len(got) != 0 {
		t.Fatalf("expired at T after the sweep: %v", got)
	}
	if n := len(leases(ctx, t, b)); n != 0 {
		t.Fatalf("%d leases after every member left its lock, want 0", n)
	}

	for _, le := range eagerChildren(ctx, t, svc, 2) {
		h := must(b.RawHead(ctx, le.ExecutionID))(t)
		if attrS(h, "lk") != "" || attrS(h, dynamo.AttrTimerSK) != T.SortableText() {
			t.Fatalf("head %s of a 2-child eager write: lk %q ts %q, want its own entry", le.ExecutionID, attrS(h, "lk"), attrS(h, dynamo.AttrTimerSK))
		}
	}
	if n := len(leases(ctx, t, b)); n != 0 {
		t.Fatalf("a 2-child eager write opened %d leases, want none", n)
	}
}

// eagerStartBatch creates n top-level executions locked by one lock
// (store.Service.CreateLockedMany, a worker's batch of submissions) and
// returns them.
func eagerStartBatch(ctx context.Context, t *testing.T, svc *store.Service, n int) []core.LockedExecution {
	t.Helper()
	lk := lockReq(t0, compAct)
	lk.BatchSize = uint32(n)
	reqs := make([]core.CreateRequest, n)
	for i := range reqs {
		reqs[i] = createReq(newID(), ffqnAct, compAct, t0)
	}
	res := must(svc.CreateLockedMany(ctx, reqs, core.EagerLock{Request: lk, FFQNs: []core.FunctionFqn{ffqnAct}}))(t)
	var locked []core.LockedExecution
	for i, r := range res {
		if r.Err != nil || r.Locked == nil {
			t.Fatalf("item %d: locked %v err %v, want locked", i, r.Locked != nil, r.Err)
		}
		locked = append(locked, *r.Locked)
	}
	return locked
}

// TestEagerStartBatchSharesALockLease: the executions a batch of eager
// starts creates locked by one lock (each in its own commit) share one
// lock lease, as a lock call's do: no lock-expiry entry of their own, the
// lease closed with them once every create returned, every lock still
// expiring at its time. A batch of two takes no lease.
func TestEagerStartBatchSharesALockLease(t *testing.T) {
	ctx := context.Background()
	svc, b := newService(t, &fixedClock{t0}, dynamo.Options{Shards: 3})
	T := lockReq(t0, compAct).LockExpiresAt
	locked := eagerStartBatch(ctx, t, svc, 4)
	ls := leases(ctx, t, b)
	if len(ls) != 1 {
		t.Fatalf("%d leases, want 1", len(ls))
	}
	var ids []core.ExecutionId
	for _, le := range locked {
		ids = append(ids, le.ExecutionID)
	}
	if got := strings.Fields(attrS(ls[0], "m")); !slices.Equal(sortedCopy(got), idStrings(ids...)) {
		t.Fatalf("lease members %v, want %v", got, ids)
	}
	if _, closed := ls[0]["c"]; !closed {
		t.Fatal("the lease is not closed after the batch returned")
	}
	lid := leaseID(ls[0])
	for _, le := range locked {
		h := must(b.RawHead(ctx, le.ExecutionID))(t)
		if attrS(h, "lk") != lid || attrS(h, dynamo.AttrTimerPK) != "" {
			t.Fatalf("head %s: lk %q tp %q, want the lease and no entry of its own", le.ExecutionID, attrS(h, "lk"), attrS(h, dynamo.AttrTimerPK))
		}
	}
	if got := expiredIDs(ctx, t, b, T); !slices.Equal(got, idStrings(ids...)) {
		t.Fatalf("expired at the expiry: %v, want the 4 executions", got)
	}
	finishLocked(ctx, t, svc, locked[0])
	if res := must(store.Sweep(ctx, svc, T))(t); res.ExpiredLocks != 3 {
		t.Fatalf("sweep resolved %d locks, want 3", res.ExpiredLocks)
	}
	if got := expiredIDs(ctx, t, b, T); len(got) != 0 { // also reaps the spent lease
		t.Fatalf("expired at T after the sweep: %v", got)
	}
	if n := len(leases(ctx, t, b)); n != 0 {
		t.Fatalf("%d leases after every member left its lock, want 0", n)
	}

	for _, le := range eagerStartBatch(ctx, t, svc, 2) {
		h := must(b.RawHead(ctx, le.ExecutionID))(t)
		if attrS(h, "lk") != "" || attrS(h, dynamo.AttrTimerSK) != T.SortableText() {
			t.Fatalf("head %s of a batch of 2: lk %q ts %q, want its own entry", le.ExecutionID, attrS(h, "lk"), attrS(h, dynamo.AttrTimerSK))
		}
	}
	if n := len(leases(ctx, t, b)); n != 0 {
		t.Fatalf("a batch of 2 opened %d leases, want none", n)
	}
}
