package store_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/store/mem"
)

// leasingBackend is mem without its optional capabilities (so locks take
// one Update per candidate, as on DynamoDB) plus a recording LockLeaser.
type leasingBackend struct {
	store.Backend
	mu     sync.Mutex
	log    []string
	open   map[string]store.LockLease
	onOpen func(ids []core.ExecutionId)
	failOn core.ExecutionId // an Update under a lease touching it fails
}

func (b *leasingBackend) record(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.log = append(b.log, fmt.Sprintf(format, args...))
}

func (b *leasingBackend) OpenLockLease(_ context.Context, ids []core.ExecutionId, expiry core.Timestamp) (store.LockLease, error) {
	l := store.LockLease{ID: rand.Text()[:6], Expiry: expiry, Members: ids}
	b.mu.Lock()
	b.open[l.ID] = l
	b.mu.Unlock()
	b.record("open %v", ids)
	if b.onOpen != nil {
		b.onOpen(ids)
	}
	return l, nil
}

func (b *leasingBackend) CloseLockLease(_ context.Context, l store.LockLease, locked []core.ExecutionId) error {
	b.mu.Lock()
	delete(b.open, l.ID)
	b.mu.Unlock()
	b.record("close %v", locked)
	return nil
}

func (b *leasingBackend) Update(ctx context.Context, fn func(store.Tx) error) error {
	l, leased := store.LockLeaseOf(ctx)
	if leased {
		b.mu.Lock()
		_, open := b.open[l.ID]
		b.mu.Unlock()
		if !open {
			return errors.New("an Update ran under a lease that is not open")
		}
	}
	return b.Backend.Update(ctx, func(tx store.Tx) error {
		if leased && b.failOn != (core.ExecutionId{}) {
			if _, err := tx.Head(b.failOn); err == nil && slices.Contains(l.Members, b.failOn) {
				return errors.New("injected: lock Update failed")
			}
		}
		return fn(tx)
	})
}

func leaseFixture(t *testing.T, n int) (*store.Service, *leasingBackend, core.LockRequest, core.FunctionFqn, []core.ExecutionId) {
	t.Helper()
	_, clock, req, ffqn := lockPendingSetup(t)
	lb := &leasingBackend{Backend: mem.New(), open: map[string]store.LockLease{}}
	svc := store.New(lb, store.Options{Clock: clock})
	t.Cleanup(func() { _ = svc.Close() })
	ctx := context.Background()
	now := clock.Now()
	var ids []core.ExecutionId
	for i := range n {
		id := mustParse(t, core.ParseExecutionId, fmt.Sprintf("E_01KBNHM5FQW81KP5Y3XMNX3%03d", i))
		if _, err := svc.Create(ctx, core.CreateRequest{CreatedAt: now, ExecutionID: id, FFQN: ffqn, Params: core.Params{},
			ScheduledAt: now, ComponentID: req.ComponentID}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return svc, lb, req, ffqn, ids
}

// A lock call opens a lease for the candidates it will try before locking
// any, runs each lock Update under it and closes it with exactly the ones
// it locked; a chunk below three candidates takes no lease.
func TestLockCallLeasesItsCandidates(t *testing.T) {
	svc, lb, req, ffqn, ids := leaseFixture(t, 6)
	ctx := context.Background()
	// A concurrent locker takes ids[1] right after the lease is opened.
	lb.onOpen = func(open []core.ExecutionId) {
		lb.onOpen = nil
		r := req
		r.BatchSize = 1
		if _, err := svc.LockOne(ctx, r, ids[1], 1); err != nil {
			t.Error(err)
		}
	}
	req.BatchSize = 4
	locked, err := svc.LockPendingByFFQNs(ctx, req, []core.FunctionFqn{ffqn})
	if err != nil {
		t.Fatal(err)
	}
	var got []core.ExecutionId
	for _, le := range locked {
		got = append(got, le.ExecutionID)
	}
	want := []core.ExecutionId{ids[0], ids[2], ids[3], ids[4]}
	if !slices.Equal(got, want) {
		t.Fatalf("locked %v, want %v", got, want)
	}
	// First chunk: four slots, four candidates; one lost: a second chunk of
	// one candidate, too small for a lease.
	wantLog := []string{fmt.Sprint("open ", ids[:4]), fmt.Sprint("close ", []core.ExecutionId{ids[0], ids[2], ids[3]})}
	if !slices.Equal(lb.log, wantLog) {
		t.Fatalf("lease calls %q, want %q", lb.log, wantLog)
	}
}

// A lock Update that fails under a lease leaves the lease open: it may
// still land, and only an open lease says so.
func TestFailedLockLeavesItsLeaseOpen(t *testing.T) {
	svc, lb, req, ffqn, ids := leaseFixture(t, 4)
	lb.failOn = ids[2]
	req.BatchSize = 10
	if _, err := svc.LockPendingByFFQNs(context.Background(), req, []core.FunctionFqn{ffqn}); err == nil {
		t.Fatal("the lock call did not report its failed Update")
	}
	if len(lb.open) != 1 || len(lb.log) != 1 {
		t.Fatalf("lease calls %q, open %d; want one open lease, never closed", lb.log, len(lb.open))
	}
}

// Under contention a lease locks few of its candidates and costs more than
// it saves: after one that locked fewer than three, lock chunks take no
// lease but one in eight, until a lease pays again.
func TestLeasesPauseWhileTheyDoNotPay(t *testing.T) {
	svc, lb, req, ffqn, _ := leaseFixture(t, 50)
	ctx := context.Background()
	lb.onOpen = func(open []core.ExecutionId) {
		lb.onOpen = nil
		r := req
		for _, id := range open[2:] { // a concurrent locker wins 8 of 10
			if _, err := svc.LockOne(ctx, r, id, 1); err != nil {
				t.Error(err)
			}
		}
	}
	opens := func() int {
		n := 0
		for _, l := range lb.log {
			if len(l) > 4 && l[:4] == "open" {
				n++
			}
		}
		return n
	}
	lockN := func(n uint32) {
		t.Helper()
		r := req
		r.BatchSize = n
		locked, err := svc.LockPendingByFFQNs(ctx, r, []core.FunctionFqn{ffqn})
		if err != nil {
			t.Fatal(err)
		}
		if len(locked) != int(n) {
			t.Fatalf("locked %d, want %d", len(locked), n)
		}
	}
	lockN(10) // a lease locking 2 of 10, then a chunk of 8 without one
	if got := opens(); got != 1 {
		t.Fatalf("%d leases after the contended call, want 1 (its second chunk takes none)", got)
	}
	for range 6 {
		lockN(3)
	}
	if got := opens(); got != 1 {
		t.Fatalf("%d leases after 6 more chunks, want 1: leases pause after one that did not pay", got)
	}
	lockN(3) // the eighth chunk since the miss probes
	lockN(3) // the probe paid: leases again
	if got := opens(); got != 3 {
		t.Fatalf("%d leases, want 3: a probe, then leases again once it paid (log %q)", got, lb.log)
	}
}

// A create-children write that creates at least three children locked
// (eager dispatch) leases them like a lock call: the lease, opened before
// the write, lists the children of the first lock's expiry (a lock of
// another expiry keeps its own entries), the write runs under it, and it is
// closed with the members locked; a write that fails leaves it open.
func TestEagerChildrenWriteLeasesItsChildren(t *testing.T) {
	svc, lb, req, ffqn, _ := leaseFixture(t, 0)
	ctx := context.Background()
	now := req.CreatedAt
	wf := req
	wf.ComponentID = core.ComponentId{ComponentType: core.ComponentTypeWorkflow}
	p := mustParse(t, core.ParseExecutionId, "E_01KBNHM5FQW81KP5Y3XMNX3WF1")
	if _, err := svc.Create(ctx, core.CreateRequest{CreatedAt: now, ExecutionID: p, FFQN: mustParse(t, core.ParseFunctionFqn, "ns:pkg/ifc.wf"),
		Params: core.Params{}, ScheduledAt: now, ComponentID: wf.ComponentID}); err != nil {
		t.Fatal(err)
	}
	le, err := svc.LockOne(ctx, wf, p, 1)
	if err != nil {
		t.Fatal(err)
	}
	js := mustParse(t, core.ParseJoinSetId, "g:1")
	batch := []core.AppendRequest{{CreatedAt: now, Event: &core.HistoryEventRequest{Event: &core.JoinSetCreate{JoinSetID: js}}}}
	var children []core.CreateRequest
	c := p.NextLevel(js)
	for range 5 {
		batch = append(batch, core.AppendRequest{CreatedAt: now, Event: &core.HistoryEventRequest{Event: &core.JoinSetRequestEvent{JoinSetID: js,
			Request: &core.ChildExecutionRequest{ChildExecutionID: core.ExecutionIdDerived{ExecutionId: c}, TargetFFQN: ffqn, Params: core.Params{}}}}})
		children = append(children, core.CreateRequest{CreatedAt: now, ExecutionID: c, FFQN: ffqn, Params: core.Params{}, ScheduledAt: now,
			ComponentID: req.ComponentID, Parent: &core.Parent{ExecutionID: p, JoinSetID: js}})
		c = c.Incremented()
	}
	a, b := req, req
	a.BatchSize, b.BatchSize = 3, 2
	b.LockExpiresAt = a.LockExpiresAt.Add(time.Millisecond) // another group's lease, asked a moment later
	locks := []core.EagerLock{{Request: a, FFQNs: []core.FunctionFqn{ffqn}}, {Request: b, FFQNs: []core.FunctionFqn{ffqn}}}
	lb.log = nil
	// At a wrong version the write fails: its lease stays open.
	if _, _, err := svc.AppendBatchCreateNewExecutionLocked(ctx, now, batch, p, le.NextVersion+1, children, nil, locks); err == nil {
		t.Fatal("a write at a wrong version succeeded")
	}
	first := []core.ExecutionId{children[0].ExecutionID, children[1].ExecutionID, children[2].ExecutionID}
	if want := []string{fmt.Sprint("open ", first)}; !slices.Equal(lb.log, want) || len(lb.open) != 1 {
		t.Fatalf("failed write: lease calls %q, %d open; want %q and the lease open", lb.log, len(lb.open), want)
	}
	lb.log = nil
	_, locked, err := svc.AppendBatchCreateNewExecutionLocked(ctx, now, batch, p, le.NextVersion, children, nil, locks)
	if err != nil {
		t.Fatal(err)
	}
	if len(locked) != 5 {
		t.Fatalf("locked %d children, want 5", len(locked))
	}
	if want := []string{fmt.Sprint("open ", first), fmt.Sprint("close ", first)}; !slices.Equal(lb.log, want) {
		t.Fatalf("lease calls %q, want %q", lb.log, want)
	}
}
