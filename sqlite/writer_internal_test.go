package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
)

func openInternal(t *testing.T) *Backend {
	t.Helper()
	b, err := Open(filepath.Join(t.TempDir(), "stela.db"), Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

var idCounter uint64

func testID(t *testing.T) core.ExecutionId {
	t.Helper()
	idCounter++
	var e [10]byte
	binary.BigEndian.PutUint64(e[2:], idCounter)
	id, err := core.NewExecutionId(1_700_000_000_000, bytes.NewReader(e[:]))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func testHead(id core.ExecutionId) core.ExecutionState {
	ts := core.TS(time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC))
	ffqn, _ := core.ParseFunctionFqn("ns:pkg/ifc.fn")
	return core.ExecutionState{ExecutionID: id, FFQN: ffqn, CreatedAt: ts, FirstScheduledAt: ts,
		ComponentType: core.ComponentTypeActivity, State: core.StatePendingAt, Lifecycle: core.LifecycleActive, At: ts}
}

// blockWriter occupies the writer with an Update that waits for release, so
// that the requests queued meanwhile are committed together in the next batch.
func blockWriter(t *testing.T, b *Backend) (release func()) {
	t.Helper()
	started, gate, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- b.Update(context.Background(), func(store.Tx) error {
			close(started)
			<-gate
			return nil
		})
	}()
	<-started
	return func() {
		close(gate)
		if err := <-done; err != nil {
			t.Errorf("blocking update: %v", err)
		}
	}
}

// waitQueued waits until n requests are queued behind the blocked writer.
func waitQueued(b *Backend, n int) {
	for len(b.queue) < n {
		runtime.Gosched()
	}
}

type outcome struct {
	err   error
	panic any
}

// goUpdate runs Update in a goroutine and reports its outcome (including a
// re-raised panic) on the returned channel; it returns once the request is
// queued (the writer must be blocked).
func goUpdate(b *Backend, ctx context.Context, fn func(store.Tx) error) <-chan outcome {
	ch := make(chan outcome, 1)
	n := len(b.queue)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				ch <- outcome{panic: p}
			}
		}()
		ch <- outcome{err: b.Update(ctx, fn)}
	}()
	waitQueued(b, n+1)
	return ch
}

func TestGroupCommit(t *testing.T) {
	t.Run("OneBatchIsolatesFailingFns", func(t *testing.T) {
		b := openInternal(t)
		x, y, z, w := testID(t), testID(t), testID(t), testID(t)
		release := blockWriter(t, b)
		before := b.Stats()
		errBoom := errors.New("boom")
		create := func(id core.ExecutionId) func(store.Tx) error {
			return func(tx store.Tx) error { return tx.CreateHead(testHead(id), nil) }
		}
		okX := goUpdate(b, context.Background(), create(x))
		failY := goUpdate(b, context.Background(), func(tx store.Tx) error {
			if err := tx.CreateHead(testHead(y), nil); err != nil {
				return err
			}
			return errBoom
		})
		panicZ := goUpdate(b, context.Background(), func(tx store.Tx) error {
			if err := tx.CreateHead(testHead(z), nil); err != nil {
				return err
			}
			panic("fn panicked")
		})
		var sawX error
		readX := goUpdate(b, context.Background(), func(tx store.Tx) error {
			_, sawX = tx.Head(x)
			return tx.CreateHead(testHead(w), nil)
		})
		dupX := goUpdate(b, context.Background(), func(tx store.Tx) error {
			_ = tx.CreateHead(testHead(x), nil) // conflict ignored by fn
			return nil
		})
		release()

		if o := <-okX; o.err != nil || o.panic != nil {
			t.Errorf("create x: %+v", o)
		}
		if o := <-failY; !errors.Is(o.err, errBoom) {
			t.Errorf("failing fn: err=%v, want boom", o.err)
		}
		if o := <-panicZ; o.panic != "fn panicked" {
			t.Errorf("panicking fn: panic=%v, want re-raised in the caller", o.panic)
		}
		if o := <-readX; o.err != nil {
			t.Errorf("read x: %v", o.err)
		}
		if sawX != nil {
			t.Errorf("a later fn of the batch could not read x: %v", sawX)
		}
		if o := <-dupX; !errors.Is(o.err, core.ErrConflict) {
			t.Errorf("ignored conflict: err=%v, want ErrConflict from Update", o.err)
		}
		if got := b.Stats().Sub(before); got.Batches != 1 || got.Transactions != 1 || got.Commits != 2 {
			t.Errorf("the five updates ran in %d batches, %d transactions, %d commits; want 1, 1 and 2 (x and w)",
				got.Batches, got.Transactions, got.Commits)
		}
		for id, want := range map[core.ExecutionId]bool{x: true, y: false, z: false, w: true} {
			err := b.View(context.Background(), func(tx store.ReadTx) error { _, err := tx.Head(id); return err })
			if got := err == nil; got != want {
				t.Errorf("head %s present=%v, want %v (err %v)", id, got, want, err)
			}
		}
	})

	// Updates from many goroutines that are ready while the writer is busy
	// (here: blocked by a hook; in production: waiting for the previous
	// fsync) share one write transaction, hence one fsync.
	t.Run("ConcurrentUpdatesShareOneTransaction", func(t *testing.T) {
		b := openInternal(t)
		const n = 64
		release := blockWriter(t, b)
		before := b.Stats()
		outs := make([]<-chan outcome, n)
		for i := range outs {
			id := testID(t)
			outs[i] = goUpdate(b, context.Background(), func(tx store.Tx) error { return tx.CreateHead(testHead(id), nil) })
		}
		release()
		for i, ch := range outs {
			if o := <-ch; o.err != nil || o.panic != nil {
				t.Fatalf("update %d: %+v", i, o)
			}
		}
		got := b.Stats().Sub(before)
		if got.Commits != n || got.Transactions != 1 {
			t.Errorf("%d acknowledged commits in %d write transactions, want %d in 1", got.Commits, got.Transactions, n)
		}
		if f := got.FsyncsPerCommit(); f != 1.0/n {
			t.Errorf("fsyncs per commit = %v, want 1/%d", f, n)
		}
	})

	// A batch whose fns only read commits no write transaction: nothing is
	// appended to the write-ahead log, so there is nothing to fsync.
	t.Run("ReadOnlyUpdatesCommitNothing", func(t *testing.T) {
		b := openInternal(t)
		id := testID(t)
		ctx := context.Background()
		if err := b.Update(ctx, func(tx store.Tx) error { return tx.CreateHead(testHead(id), nil) }); err != nil {
			t.Fatal(err)
		}
		wal := func() int64 {
			fi, err := os.Stat(b.path + "-wal")
			if err != nil {
				t.Fatal(err)
			}
			return fi.Size()
		}
		before, walBefore := b.Stats(), wal()
		for range 3 {
			if err := b.Update(ctx, func(tx store.Tx) error { _, err := tx.Head(id); return err }); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := b.Synchronous(ctx); err != nil {
			t.Fatal(err)
		}
		got := b.Stats().Sub(before)
		if got.Batches != 4 || got.Transactions != 0 || got.Commits != 0 {
			t.Errorf("read-only updates: %d batches, %d transactions, %d commits; want 4, 0, 0", got.Batches, got.Transactions, got.Commits)
		}
		if w := wal(); w != walBefore {
			t.Errorf("read-only updates grew the WAL from %d to %d bytes", walBefore, w)
		}
	})

	t.Run("CancelledCallerIsSkipped", func(t *testing.T) {
		b := openInternal(t)
		release := blockWriter(t, b)
		ctx, cancel := context.WithCancel(context.Background())
		ran := false
		ch := goUpdate(b, ctx, func(tx store.Tx) error { ran = true; return nil })
		cancel()
		release()
		if o := <-ch; !errors.Is(o.err, context.Canceled) {
			t.Errorf("err=%v, want context.Canceled", o.err)
		}
		if ran {
			t.Error("fn ran although its context was cancelled before the batch")
		}
	})

	t.Run("CloseCommitsQueuedUpdates", func(t *testing.T) {
		b := openInternal(t)
		id := testID(t)
		release := blockWriter(t, b)
		ch := goUpdate(b, context.Background(), func(tx store.Tx) error { return tx.CreateHead(testHead(id), nil) })
		closed := make(chan error, 1)
		go func() { closed <- b.Close() }()
		for {
			b.closeMu.RLock()
			c := b.closed
			b.closeMu.RUnlock()
			if c {
				break
			}
			runtime.Gosched()
		}
		release()
		if o := <-ch; o.err != nil {
			t.Errorf("queued update: %v", o.err)
		}
		if err := <-closed; err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := b.Update(context.Background(), func(store.Tx) error { return nil }); !errors.Is(err, core.ErrClosed) {
			t.Errorf("Update after Close: %v, want ErrClosed", err)
		}
	})
}

func TestTimestampText(t *testing.T) {
	t.Run("RoundTripsNanoseconds", func(t *testing.T) {
		for _, tm := range []time.Time{
			time.Date(2026, 8, 22, 10, 0, 0, 123_456_789, time.UTC),
			time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC),
			time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
			time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
			time.Date(2026, 8, 22, 12, 0, 0, 1, time.FixedZone("x", 7200)),
		} {
			ts := core.TS(tm)
			s := tsText(ts)
			got, err := parseTS(s)
			if err != nil {
				t.Fatalf("parse %q: %v", s, err)
			}
			if got != ts {
				t.Errorf("%v -> %q -> %v", ts, s, got)
			}
		}
	})
	t.Run("TextOrderIsChronological", func(t *testing.T) {
		base := time.Date(2026, 8, 22, 10, 0, 0, 0, time.UTC)
		steps := []time.Duration{0, 1, 999, 1000, 1_000_000, time.Second, 10 * time.Hour, 400 * 24 * time.Hour}
		for i := 1; i < len(steps); i++ {
			a, b := tsText(core.TS(base.Add(steps[i-1]))), tsText(core.TS(base.Add(steps[i])))
			if !(a < b) {
				t.Errorf("%q !< %q", a, b)
			}
		}
	})
	t.Run("OutOfRangeIsClamped", func(t *testing.T) {
		if got := tsText(core.TS(time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC))); got != "9999-12-31T23:59:59.999999999Z" {
			t.Errorf("got %q", got)
		}
		if got := tsText(core.TS(time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC))); got != "0000-01-01T00:00:00.000000000Z" {
			t.Errorf("got %q", got)
		}
	})
}

// TestQueryPlans pins the index each hot query uses, so a schema or query
// change cannot silently turn one into a table scan.
func TestQueryPlans(t *testing.T) {
	b := openInternal(t)
	ctx := context.Background()
	ts := tsText(core.TS(time.Now()))
	dig := make([]byte, 32)
	id, _ := core.NewExecutionId(1, nil)
	now := core.TS(time.Now())
	afterCreated := core.ExecutionListPagination{CreatedBy: &core.Pagination[*core.Timestamp]{Direction: core.OlderThan, Length: 20, Cursor: &now}, CreatedByID: &id}
	newerCreated := core.ExecutionListPagination{CreatedBy: &core.Pagination[*core.Timestamp]{Direction: core.NewerThan, Length: 20, Cursor: &now}}
	afterID := core.ExecutionListPagination{ExecutionID: &core.Pagination[*core.ExecutionId]{Direction: core.OlderThan, Length: 20, Cursor: &id}}
	listQ := func(p core.ExecutionListPagination) string {
		q, _, _ := listExecutionsSQL(&core.ListExecutionsFilter{}, p)
		return q
	}
	listA := func(p core.ExecutionListPagination) []any {
		_, a, _ := listExecutionsSQL(&core.ListExecutionsFilter{}, p)
		return a
	}
	cases := []struct {
		name, q string
		args    []any
		want    string
	}{
		{"head", sqlHead, []any{"E_X"}, "SEARCH t_state USING PRIMARY KEY"},
		{"events", sqlEvents, []any{"E_X", 0, 5}, "SEARCH t_event USING PRIMARY KEY"},
		{"responses", sqlResponses, []any{"E_X", 0, 5}, "SEARCH t_response USING PRIMARY KEY"},
		{"join set events", sqlJoinSetEvents, []any{"E_X", 5, "o:a"}, "SEARCH t_event USING PRIMARY KEY"},
		{"join next count", sqlJoinNexts, []any{"E_X", "o:a"}, "idx_event_join_next"},
		{"nth response", sqlNthResponse, []any{"E_X", "o:a", 1}, "idx_response_join_set"},
		{"delay outcome", sqlDelayResult, []any{"Delay_X"}, "idx_response_delay"},
		{"pending by ffqn", sqlPendingByFFQN, []any{"ns:pkg/ifc.fn", ts, 10}, "idx_state_pending_ffqn"},
		{"pending by ffqn auto", sqlPendingByFFQNSkip, []any{"ns:pkg/ifc.fn", ts, dig, 10}, "idx_state_pending_ffqn"},
		{"pending by digest", sqlPendingByDigest, []any{dig, ts, 10}, "idx_state_pending_digest"},
		{"expired locks", sqlExpiredLocks, []any{ts}, "idx_state_locked"},
		{"expired delays", sqlExpiredDelays, []any{ts}, "idx_delay_expires"},
		{"cancelling", sqlCancelling, []any{10}, "idx_state_cancelling"},
		{"list executions", listQ(core.DefaultExecutionListPagination()), listA(core.DefaultExecutionListPagination()), "idx_state_created_id"},
		{"list executions after (created_at, id)", listQ(afterCreated), listA(afterCreated), "SEARCH t_state USING INDEX idx_state_created_id ((created_at,execution_id)<(?,?))"},
		{"list executions newer than created_at", listQ(newerCreated), listA(newerCreated), "SEARCH t_state USING INDEX idx_state_created_id (created_at>?)"},
		{"list executions after id", listQ(afterID), listA(afterID), "SEARCH t_state USING PRIMARY KEY (execution_id<?)"},
		{"logs", "SELECT id FROM t_log WHERE execution_id = ? AND id > ? ORDER BY id LIMIT 10", []any{"E_X", 0}, "idx_log_execution"},
		{"retention candidates", sqlRetentionCandidates, []any{ts, 10}, "SEARCH r USING INDEX idx_state_retention"},
		{"retention tree", sqlTreeHeads, treeArgs(id), "SEARCH t_state USING PRIMARY KEY (execution_id>? AND execution_id<?)"},
		{"purge events", purgeRows[0], append(treeArgs(id), 10), "SEARCH x USING PRIMARY KEY (execution_id>? AND execution_id<?)"},
		{"purge logs", purgeRows[3], append(treeArgs(id), 10), "SEARCH x USING COVERING INDEX idx_log_execution (execution_id>? AND execution_id<?)"},
		{"purge backtrace body", sqlPurgeBody, []any{dig}, "idx_execution_backtrace_hash"},
	}
	err := b.withReader(ctx, func(c *conn) error {
		for _, tc := range cases {
			rows, err := c.c.QueryContext(ctx, "EXPLAIN QUERY PLAN "+tc.q, tc.args...)
			if err != nil {
				return err
			}
			var plan []string
			for rows.Next() {
				var id, parent, unused int
				var detail string
				if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
					return err
				}
				plan = append(plan, detail)
			}
			rows.Close()
			joined := strings.Join(plan, "; ")
			if !strings.Contains(joined, tc.want) {
				t.Errorf("%s: plan %q does not use %q", tc.name, joined, tc.want)
			}
			if strings.Contains(joined, "TEMP B-TREE") {
				t.Errorf("%s: plan %q sorts in a temporary b-tree", tc.name, joined)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// cloneCreated must copy every reference field of core.Created; a new field
// must be added there (and here).
func TestCloneCreatedKnowsEveryField(t *testing.T) {
	known := []string{"FFQN", "Params", "Parent", "ScheduledAt", "ComponentID", "DeploymentID", "Metadata", "ScheduledBy"}
	typ := reflect.TypeOf(core.Created{})
	var got []string
	for i := range typ.NumField() {
		got = append(got, typ.Field(i).Name)
	}
	if !reflect.DeepEqual(got, known) {
		t.Errorf("core.Created fields %v, cloneCreated handles %v", got, known)
	}
}

func TestCreatedCache(t *testing.T) {
	b := openInternal(t)
	ctx := context.Background()
	id := testID(t)
	h := testHead(id)
	parent := testID(t)
	created := core.ExecutionEvent{CreatedAt: h.CreatedAt, Version: 0, Event: &core.Created{
		FFQN: h.FFQN, Params: core.Params{[]byte(`{ "a" : [1, 2] }`)}, ScheduledAt: h.At,
		Parent:   &core.Parent{ExecutionID: parent, JoinSetID: core.JoinSetId{Kind: core.JoinSetKindNamed, Name: "x"}},
		Metadata: core.ExecutionMetadata{"k": "v"}, ScheduledBy: &parent,
		ComponentID: core.ComponentId{ComponentType: core.ComponentTypeActivity, Name: "c"},
	}}
	if err := b.Update(ctx, func(tx store.Tx) error { return tx.CreateHead(h, []core.ExecutionEvent{created}) }); err != nil {
		t.Fatal(err)
	}
	e := b.createds.entry(id)
	if e == nil {
		t.Fatal("the Created event was not cached after Update returned")
	}
	if _, err := b.PendingByFFQN(ctx, h.FFQN, h.At, 10, nil); err != nil {
		t.Fatal(err)
	}
	if e.ev == nil {
		t.Error("PendingByFFQN did not decode its candidate's Created event")
	}
	var stored core.ExecutionEvent
	if err := b.View(ctx, func(tx store.ReadTx) error {
		var err error
		stored, err = tx.Event(id, 0)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		var cached core.ExecutionEvent
		if err := b.Update(ctx, func(tx store.Tx) error {
			var err error
			cached, err = tx.Event(id, 0)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(cached, stored) {
			t.Fatalf("cached %+v, stored %+v", cached, stored)
		}
		// Callers may scribble on what they got.
		c := cached.Event.(*core.Created)
		c.Params[0][0] = 'X'
		c.Metadata["k"] = "changed"
		c.Parent.ExecutionID = id
	}
}

// TestMigrationToV2 opens a version-1 database: the list index keyed
// (created_at, seq) is replaced by (created_at, execution_id).
func TestMigrationToV2(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stela.db")
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(migrations[0] + "PRAGMA user_version = 1;"); err != nil {
		t.Fatal(err)
	}
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	var indexes []string
	err = b.withReader(context.Background(), func(c *conn) error {
		rows, err := c.c.QueryContext(context.Background(), "SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'idx_state_created%' ORDER BY name")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				return err
			}
			indexes = append(indexes, n)
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(indexes, []string{"idx_state_created_id"}) {
		t.Fatalf("list indexes after migration: %v", indexes)
	}
}

// walCheckpointSeq reads the checkpoint sequence number of the WAL header,
// which SQLite increments each time it restarts the WAL from its beginning.
func walCheckpointSeq(t *testing.T, b *Backend) uint32 {
	t.Helper()
	f, err := os.Open(b.path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var hdr [16]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil {
		t.Fatal(err)
	}
	return binary.BigEndian.Uint32(hdr[12:])
}

// Under a steady stream of commits the background checkpointer never
// catches up with the writer by itself; the writer must finish its
// checkpoints so that the WAL restarts instead of growing without bound.
func TestWALRestartsUnderSteadyWrites(t *testing.T) {
	b := openInternal(t)
	ctx := context.Background()
	if err := b.Update(ctx, func(tx store.Tx) error { return tx.CreateHead(testHead(testID(t)), nil) }); err != nil {
		t.Fatal(err)
	}
	seq0 := walCheckpointSeq(t, b)
	ids := make(chan core.ExecutionId, 64)
	go func() {
		defer close(ids)
		for range 40 * checkpointEvery * 8 { // a failure limit, not a duration
			ids <- testID(t)
		}
	}()
	// Eight writers keep the writer busy: it is never idle between batches.
	var restarted atomic.Bool
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			n := 0
			for id := range ids {
				if restarted.Load() {
					continue // drain
				}
				if err := b.Update(ctx, func(tx store.Tx) error { return tx.CreateHead(testHead(id), nil) }); err != nil {
					t.Error(err)
					return
				}
				if n++; w == 0 && n%16 == 0 && walCheckpointSeq(t, b) != seq0 {
					restarted.Store(true)
				}
			}
		})
	}
	wg.Wait()
	st := b.Stats()
	if walCheckpointSeq(t, b) == seq0 {
		t.Errorf("the WAL never restarted: %d transactions, %d background checkpoints, %d finished by the writer, WAL up to %d pages",
			st.Transactions, st.Checkpoints, st.WriterCheckpoints, st.WALPagesMax)
	}
}
