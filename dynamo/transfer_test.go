package dynamo_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/dynamo"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/store/mem"
	"github.com/stela-dev/stela/store/storetest"
)

// What the contract's Transfer scenarios cannot show from outside: how an
// export of a table without snapshots stays consistent, what an import
// killed inside an execution leaves, and that an imported finished tree
// is marked as the retention pass would have marked it.

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := core.MarshalJSON(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// exportTree reads root's tree from svc.
func exportTree(t *testing.T, svc *store.Service, root core.ExecutionId) store.TreeRecord {
	t.Helper()
	var tree store.TreeRecord
	err := svc.Export(context.Background(), func(r *store.ExportReader) (err error) {
		tree, err = r.Tree(root)
		return err
	})
	if err != nil {
		t.Fatalf("export tree %s: %v", root, err)
	}
	return tree
}

// A commit landing while an export reads a tree makes it read the tree
// again: the record is the state after the commit, never a mix.
func TestExportReadsATreeAgainWhileItChanges(t *testing.T) {
	ctx := context.Background()
	b, _ := newBackend(t, dynamo.Options{})
	svc := store.New(b, store.Options{Clock: &fixedClock{t0}})
	id := newID()
	if _, err := svc.Create(ctx, createReq(id, ffqnAct, compAct, t0)); err != nil {
		t.Fatal(err)
	}
	var reads atomic.Int32
	b.SetAfterExportRead(func([]core.ExecutionId) {
		if reads.Add(1) == 1 {
			if _, err := svc.PauseExecution(ctx, id, t0); err != nil {
				t.Error(err)
			}
		}
	})
	tree := exportTree(t, svc, id)
	if n := reads.Load(); n != 2 {
		t.Fatalf("the tree was read %d times, want 2 (once more after the commit)", n)
	}
	if got := tree.Executions[0].Head; got.Lifecycle != core.LifecyclePaused || got.Version != 1 || len(tree.Executions[0].Events) != 2 {
		t.Fatalf("exported %s at version %d with %d events, want the paused state (version 1, 2 events)",
			got.Lifecycle, got.Version, len(tree.Executions[0].Events))
	}
}

// An import killed after an execution's items but before its head leaves
// nothing a reader or the sweep finds; importing again completes it.
func TestImportKilledInsideAnExecutionResumes(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewSimClock(t0)
	src := store.New(mem.New(), store.Options{Clock: clock})
	fixture := storetest.BuildTree(t, src, clock, false, true)
	tree := exportTree(t, src, fixture.Root)

	b, _ := newBackend(t, dynamo.Options{Clock: clock, InlineThreshold: 1024})
	dst := store.New(b, store.Options{Clock: clock})
	crash := errors.New("killed")
	b.SetBeforeImportHead(func(id core.ExecutionId) error {
		if id == fixture.Root {
			return crash
		}
		return nil
	})
	if _, err := dst.ImportTree(ctx, tree); !errors.Is(err, crash) {
		t.Fatalf("import: %v, want the crash", err)
	}
	parts, err := b.RawPartition(ctx, "E#"+fixture.Root.String())
	if err != nil || len(parts) == 0 {
		t.Fatalf("the killed import left %d items of the root (%v), want its pages and responses", len(parts), err)
	}
	for _, it := range parts {
		if sk := skOf(it); sk == "H" || strings.HasPrefix(sk, "D#") {
			t.Fatalf("the killed import wrote %s before the head was due", sk)
		}
	}
	if _, err := dst.Get(ctx, fixture.Root); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("get after the killed import: %v, want NotFound", err)
	}
	if timers, err := dst.GetExpiredTimers(ctx, t0.Add(10_000*time.Hour)); err != nil || len(timers) != 0 {
		t.Fatalf("timers after the killed import: %v, %v; want none", timers, err)
	}
	b.SetBeforeImportHead(nil)
	res, err := dst.ImportTree(ctx, tree)
	if err != nil || res.Outcome != store.ImportWritten || res.Executions != len(tree.Executions) {
		t.Fatalf("import again: %+v, %v; want every execution written", res, err)
	}
	if got, want := exportTree(t, dst, fixture.Root), tree; len(got.Executions) != len(want.Executions) {
		t.Fatalf("read back %d executions, want %d", len(got.Executions), len(want.Executions))
	}
	far := clock.Now().Add(10_000 * time.Hour)
	got, err1 := dst.GetExpiredTimers(ctx, far)
	want, err2 := src.GetExpiredTimers(ctx, far)
	if err := errors.Join(err1, err2); err != nil || len(got) == 0 || jsonOf(t, got) != jsonOf(t, want) {
		t.Fatalf("timers after the import: %s (%v), want the source's %s", jsonOf(t, got), err, jsonOf(t, want))
	}
}

// An imported finished tree carries, on every item, the time-to-live the
// retention pass would have given it (its last recorded finish plus the
// period); once that passed it is gone for readers and DynamoDB's deleter
// leaves nothing of it. (A small head budget makes the finished root
// spill its events to pages and JoinNext counters.)
func TestImportMarksAFinishedTreeAsRetentionWould(t *testing.T) {
	ctx := context.Background()
	e := newRetentionEnvWith(t, dynamo.Options{HeadBudget: 128})
	src := store.New(mem.New(), store.Options{Clock: e.clock, Retention: core.RetainFor(testRetention)})
	done := storetest.BuildTree(t, src, e.clock, true, true)
	finish := e.clock.Now()
	tree := exportTree(t, src, done.Root)
	e.clock.Advance(time.Minute)
	if res, err := e.svc.ImportTree(ctx, tree); err != nil || res.Outcome != store.ImportWritten {
		t.Fatalf("import: %+v, %v", res, err)
	}
	wantTTL := finish.Add(testRetention).Unix() + 1 // rounded up: the clock has nanoseconds
	items := e.owned(t, done.Root)
	kinds := map[string]bool{}
	for _, it := range items {
		pk, sk := keyString(it, dynamo.AttrPK), keyString(it, dynamo.AttrSK)
		kinds[strings.SplitN(pk, "#", 2)[0]+"#"+sk[:1]] = true
		if got := ttlOfItem(t, it); got != wantTTL {
			t.Errorf("item %s/%s: ttl %d, want %d", pk, sk, got, wantTTL)
		}
	}
	for _, k := range []string{"E#H", "E#V", "E#J", "E#R", "E#D", "E#B", "G#G", "LG#0", "REF#P"} {
		if !kinds[k] {
			t.Fatalf("the import wrote no item of kind %s (kinds %v)", k, kinds)
		}
	}
	if res := e.retain(t); res.Items != 0 {
		t.Fatalf("a retention pass after the import wrote %+v, want nothing (already marked)", res)
	}
	e.clock.Set(finish.Add(testRetention + time.Second))
	for _, id := range done.IDs {
		if _, err := e.svc.Get(ctx, id); !errors.Is(err, core.ErrNotFound) {
			t.Fatalf("get %s after the expiry: %v, want NotFound", id, err)
		}
	}
	if deleted := e.expireTTL(t); deleted != len(items) {
		t.Errorf("the time-to-live deleted %d items, want the tree's %d", deleted, len(items))
	}
}

// A response whose guard another execution holds in the destination is a
// conflict: the execution is not written.
func TestImportRefusesAResponseAnotherExecutionHolds(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewSimClock(t0)
	src := store.New(mem.New(), store.Options{Clock: clock})
	fixture := storetest.BuildTree(t, src, clock, true, false)
	tree := exportTree(t, src, fixture.Root)
	b, _ := newBackend(t, dynamo.Options{Clock: clock})
	dst := store.New(b, store.Options{Clock: clock})
	// The same child's response, already held by another parent.
	child := fixture.IDs[1]
	other := newID()
	if err := b.RawPutGuard(ctx, child, other); err != nil {
		t.Fatal(err)
	}
	_, err := dst.ImportTree(ctx, tree)
	var ce *store.ConflictError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), child.String()) {
		t.Fatalf("import: %v, want a conflict naming %s", err, child)
	}
	if _, err := dst.Get(ctx, fixture.Root); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("get the root after the refused import: %v, want NotFound", err)
	}
}
