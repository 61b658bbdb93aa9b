package sqlite

import (
	"context"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
)

// A head's UPDATE sets only the columns whose values change (the writer
// knows the stored head), and what the database then holds is the head
// put, column for column: a random walk over every mutable column, each
// step in its own Update or several in one, read back by a reader (the
// database, not the writer's cache) after each commit.
func TestPutHeadSetsOnlyChangedColumns(t *testing.T) {
	b := openInternal(t)
	ctx := context.Background()
	id := testID(t)
	st := testHead(id)
	if err := b.Update(ctx, func(tx store.Tx) error { return tx.CreateHead(st, nil) }); err != nil {
		t.Fatal(err)
	}
	// Only max_cursor changes: the UPDATE sets it alone.
	st.MaxCursor = 3
	if err := b.Update(ctx, func(tx store.Tx) error { return tx.PutHead(st) }); err != nil {
		t.Fatal(err)
	}
	if !hasNarrow(b, "UPDATE t_state SET max_cursor = ? WHERE execution_id = ?") {
		t.Fatalf("no UPDATE of max_cursor alone among %v", b.writer.narrow)
	}
	checkStored(t, b, st)

	rng := rand.New(rand.NewPCG(1, 2))
	ts := func() core.Timestamp {
		return core.TS(time.Date(2026, 1, 2, 3, 4, rng.IntN(60), rng.IntN(1e9), time.UTC))
	}
	exr, _ := core.NewExecutorId(7, nil)
	run, _ := core.NewRunId(7, nil)
	js := core.GeneratedJoinSetId(2)
	u32 := func(v uint32) *uint32 { return &v }
	u64 := func(v uint64) *uint64 { return &v }
	dig := core.ComponentDigest{Digest: core.SHA256Digest([]byte("other"))}
	mutations := []func(*core.ExecutionState){
		func(s *core.ExecutionState) { s.Version++ },
		func(s *core.ExecutionState) { s.MaxCursor++ },
		func(s *core.ExecutionState) { s.At = ts() },
		func(s *core.ExecutionState) {
			s.State = core.StateLocked
			s.LastLock = &core.LockedBy{ExecutorID: exr, RunID: run}
			v := s.Version
			s.LastLockVersion = &v
		},
		func(s *core.ExecutionState) { s.State, s.LastLock = core.StatePendingAt, nil },
		func(s *core.ExecutionState) {
			s.State, s.JoinSetID, s.JoinSetClosing = core.StateBlockedByJoinSet, &js, rng.IntN(2) == 0
		},
		func(s *core.ExecutionState) { s.JoinSetID, s.JoinSetClosing = nil, false },
		func(s *core.ExecutionState) { s.Lifecycle = core.LifecyclePaused },
		func(s *core.ExecutionState) { s.Lifecycle = core.LifecycleActive },
		func(s *core.ExecutionState) { s.IntermittentEventCount++ },
		func(s *core.ExecutionState) {
			s.MaxRetries, s.RetryExpBackoffMillis = u32(rng.Uint32()), u64(rng.Uint64())
		},
		func(s *core.ExecutionState) { s.MaxRetries, s.RetryExpBackoffMillis = nil, nil },
		func(s *core.ExecutionState) { s.ComponentDigest = dig },
		func(s *core.ExecutionState) { s.IncompatibleDigest = &dig },
		func(s *core.ExecutionState) { s.IncompatibleDigest = nil },
		func(s *core.ExecutionState) {},
	}
	for step := range 300 {
		n := 1 + rng.IntN(3) // PutHeads in one fn
		var want core.ExecutionState
		err := b.Update(ctx, func(tx store.Tx) error {
			cur, err := tx.Head(id)
			if err != nil {
				return err
			}
			for range n {
				for range 1 + rng.IntN(3) {
					mutations[rng.IntN(len(mutations))](&cur)
				}
				if err := tx.PutHead(cur); err != nil {
					return err
				}
			}
			want = cur
			return nil
		})
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		checkStored(t, b, want)
	}
	// A finish records its time with the narrow statement too.
	if err := b.Update(ctx, func(tx store.Tx) error {
		cur, err := tx.Head(id)
		if err != nil {
			return err
		}
		cur.State, cur.ResultKind = core.StateFinished, &core.ResultKind{}
		if err := tx.(store.RetentionTx).RecordFinished(id, ts(), nil); err != nil {
			return err
		}
		return tx.PutHead(cur)
	}); err != nil {
		t.Fatal(err)
	}
	var got *string
	if err := b.withReader(ctx, func(c *conn) error {
		rows, err := c.query(ctx, `SELECT finished_recorded_at FROM t_state WHERE execution_id = ?`, id.String())
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if err := rows.Scan(&got); err != nil {
				return err
			}
		}
		return rows.Err()
	}); err != nil {
		t.Fatal(err)
	}
	if got == nil {
		t.Fatal("finished_recorded_at not written by the finishing UPDATE")
	}
	if len(b.writer.narrow) < 5 {
		t.Errorf("only %d narrow statement shapes over the walk: %v", len(b.writer.narrow), b.writer.narrow)
	}
}

func hasNarrow(b *Backend, q string) bool {
	for _, s := range b.writer.narrow {
		if s == q {
			return true
		}
	}
	return false
}

// checkStored reads id's head from the database (a reader, not the
// writer's cache) and requires want.
func checkStored(t *testing.T, b *Backend, want core.ExecutionState) {
	t.Helper()
	var got core.ExecutionState
	err := b.withReader(context.Background(), func(c *conn) error {
		var err error
		got, err = headByID(context.Background(), c, want.ExecutionID)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if w := normalizeHead(want); !reflect.DeepEqual(normalizeHead(got), w) {
		t.Fatalf("stored head %+v, want %+v", got, w)
	}
}
