package sqlite

import (
	"context"
	"errors"
	"maps"
	"path/filepath"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/store/storetest"
)

// treeTables are the tables holding rows of an execution tree.
var treeTables = []string{"t_state", "t_event", "t_response", "t_delay", "t_log", "t_execution_backtrace"}

// treeRows counts the rows of root's tree per table, plus the purge
// records and every backtrace body.
func treeRows(t *testing.T, b *Backend, root core.ExecutionId) map[string]int {
	t.Helper()
	ctx := context.Background()
	out := map[string]int{}
	err := b.withReader(ctx, func(c *conn) error {
		count := func(name, q string, args ...any) error {
			var n int
			if err := c.c.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
				return err
			}
			out[name] = n
			return nil
		}
		for _, tbl := range treeTables {
			if err := count(tbl, "SELECT count(*) FROM "+tbl+" WHERE "+treeCond, treeArgs(root)...); err != nil {
				return err
			}
		}
		if err := count("t_purge", "SELECT count(*) FROM t_purge"); err != nil {
			return err
		}
		return count("t_wasm_backtrace", "SELECT count(*) FROM t_wasm_backtrace")
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func openRetention(t *testing.T, path string, clock core.Clock) (*Backend, *store.Service) {
	t.Helper()
	b, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := store.New(b, store.Options{Clock: clock, Retention: core.RetainFor(time.Hour)})
	t.Cleanup(func() { _ = s.Close() })
	return b, s
}

// A finished tree past its period leaves no row behind — head, events,
// responses, timer rows, logs, backtraces, the body only it used — while an
// unfinished tree sharing a backtrace body keeps every row, the body too.
func TestRetentionPurgeLeavesNoRow(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewSimClock(core.UnixEpoch)
	b, s := openRetention(t, filepath.Join(t.TempDir(), "stela.db"), clock)
	done := storetest.BuildTree(t, s, clock, true, false)
	open := storetest.BuildTree(t, s, clock, false, false)
	before := treeRows(t, b, done.Root)
	for _, tbl := range treeTables {
		if before[tbl] == 0 {
			t.Fatalf("the fixture wrote no row to %s: %v", tbl, before)
		}
	}
	openBefore := treeRows(t, b, open.Root)

	clock.Advance(time.Hour - 2*time.Second)
	res, err := s.ApplyRetention(ctx, clock.Now())
	if err != nil || res.Expired != 0 {
		t.Fatalf("before the period passed: %+v, %v; want nothing expired", res, err)
	}
	clock.Advance(time.Second)
	res, err = s.ApplyRetention(ctx, clock.Now())
	if err != nil || res.Expired != 1 || res.Kept != 0 {
		t.Fatalf("after the period passed: %+v, %v; want one tree expired", res, err)
	}
	after := treeRows(t, b, done.Root)
	for _, tbl := range append(treeTables, "t_purge") {
		if after[tbl] != 0 {
			t.Errorf("%s still holds %d rows of the expired tree", tbl, after[tbl])
		}
	}
	if after["t_wasm_backtrace"] != before["t_wasm_backtrace"]-1 {
		t.Errorf("backtrace bodies %d → %d, want only the expired tree's own one gone", before["t_wasm_backtrace"], after["t_wasm_backtrace"])
	}
	deleted := 1 // its own backtrace body
	for _, tbl := range treeTables {
		deleted += before[tbl]
	}
	if res.Items != deleted || res.Executions != len(done.IDs) {
		t.Errorf("the pass reports %d rows of %d executions, want %d rows of %d", res.Items, res.Executions, deleted, len(done.IDs))
	}
	t.Logf("rows deleted for a tree of %d executions: %d (%v)", len(done.IDs), res.Items, before)
	want := maps.Clone(openBefore)
	want["t_wasm_backtrace"]-- // the expired tree's own body
	if got := treeRows(t, b, open.Root); !maps.Equal(got, want) {
		t.Errorf("the unfinished tree changed: %v → %v", openBefore, got)
	}
	for _, id := range open.IDs {
		if _, err := s.Get(ctx, id); err != nil {
			t.Errorf("get %s of the unfinished tree: %v", id, err)
		}
	}
}

// A purge interrupted after its first transaction (the heads are gone,
// the rest is not) is completed by the next pass, also after a restart.
func TestRetentionPurgeResumesAfterACrash(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewSimClock(core.UnixEpoch)
	path := filepath.Join(t.TempDir(), "stela.db")
	b, s := openRetention(t, path, clock)
	tree := storetest.BuildTree(t, s, clock, true, false)
	crash := errors.New("crash")
	b.purgeFault = func(core.ExecutionId) error { return crash }
	clock.Advance(time.Hour)
	if _, err := s.ApplyRetention(ctx, clock.Now()); !errors.Is(err, crash) {
		t.Fatalf("interrupted pass: %v, want the crash", err)
	}
	mid := treeRows(t, b, tree.Root)
	if mid["t_state"] != 0 || mid["t_event"] == 0 || mid["t_purge"] != 1 {
		t.Fatalf("after the crash: %v, want no head, the other rows and the purge record", mid)
	}
	if _, err := s.Get(ctx, tree.Root); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("get the root after the crash: %v, want NotFound", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	b, s = openRetention(t, path, clock)
	res, err := s.ApplyRetention(ctx, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	after := treeRows(t, b, tree.Root)
	for _, tbl := range append(treeTables, "t_purge") {
		if after[tbl] != 0 {
			t.Errorf("%s still holds %d rows of the purged tree after the repair", tbl, after[tbl])
		}
	}
	if res.Items == 0 {
		t.Errorf("the repairing pass reports no row deleted: %+v", res)
	}
}
