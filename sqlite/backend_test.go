package sqlite_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/sqlite"
	"github.com/stela-dev/stela/store"
)

func TestOpen(t *testing.T) {
	t.Run("ReopeningKeepsSchemaAndData", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "sub", "dir", "stela.db")
		b, err := sqlite.Open(path, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		h := pendingHead(newID(), ffqnA, t0, t0)
		MustCreate(t, b, h)
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		b2 := MustOpenAt(t, path)
		if got := MustHead(t, b2, h.ExecutionID); !reflect.DeepEqual(got, h) {
			t.Errorf("head after reopen = %+v, want %+v", got, h)
		}
	})

	t.Run("TwoBackendsShareOneFile", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "stela.db")
		b1, b2 := MustOpenAt(t, path), MustOpenAt(t, path)
		h1, h2 := pendingHead(newID(), ffqnA, t0, t0), pendingHead(newID(), ffqnA, t0, t0)
		MustCreate(t, b1, h1)
		MustCreate(t, b2, h2)
		MustHead(t, b1, h2.ExecutionID)
		MustHead(t, b2, h1.ExecutionID)
		err := b2.Update(context.Background(), func(tx store.Tx) error { return tx.CreateHead(h1, nil) })
		if !errors.Is(err, core.ErrConflict) {
			t.Errorf("duplicate create through the second backend: %v, want ErrConflict", err)
		}
	})

	t.Run("SchemaIsVersionedInWALMode", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "stela.db")
		MustOpenAt(t, path)
		db := rawDB(t, path)
		var v int
		var mode string
		if err := db.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if v != sqlite.SchemaVersion || mode != "wal" {
			t.Errorf("user_version=%d journal_mode=%s, want %d wal", v, mode, sqlite.SchemaVersion)
		}
	})

	t.Run("NewerSchemaIsRefused", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "stela.db")
		b, err := sqlite.Open(path, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		_ = b.Close()
		if _, err := rawDB(t, path).Exec(fmt.Sprintf("PRAGMA user_version = %d", sqlite.SchemaVersion+1)); err != nil {
			t.Fatal(err)
		}
		if b, err := sqlite.Open(path, sqlite.Options{}); err == nil {
			_ = b.Close()
			t.Fatal("Open accepted a database with a newer schema")
		}
	})

	t.Run("InvalidOptionsAreRejected", func(t *testing.T) {
		dir := t.TempDir()
		if _, err := sqlite.Open(filepath.Join(dir, "a.db"), sqlite.Options{Durability: 7}); err == nil {
			t.Error("invalid Durability accepted")
		}
		if _, err := sqlite.Open(":memory:", sqlite.Options{}); err == nil {
			t.Error(":memory: accepted")
		}
	})

	// The writer connection runs at synchronous=FULL (fsync before every
	// acknowledgement) unless the weaker mode is asked for by name.
	t.Run("DurabilityModeIsInForceOnTheWriter", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			opts sqlite.Options
			want int
		}{
			{"ZeroOptions", sqlite.Options{}, 2},
			{"Fsync", sqlite.Options{Durability: sqlite.DurabilityFsync}, 2},
			{"OSCrashUnsafe", sqlite.Options{Durability: sqlite.DurabilityOSCrashUnsafe}, 1},
		} {
			t.Run(tc.name, func(t *testing.T) {
				b, err := sqlite.Open(filepath.Join(t.TempDir(), "a.db"), tc.opts)
				if err != nil {
					t.Fatal(err)
				}
				defer b.Close()
				MustCreate(t, b, pendingHead(newID(), ffqnA, t0, t0))
				if got, err := b.Synchronous(context.Background()); err != nil || got != tc.want {
					t.Errorf("writer PRAGMA synchronous = %d (%v), want %d", got, err, tc.want)
				}
			})
		}
		// What the test helpers (and the benchmarks of this package) open.
		if got, err := MustOpen(t).Synchronous(context.Background()); err != nil || got != 2 {
			t.Errorf("MustOpen: writer PRAGMA synchronous = %d (%v), want 2", got, err)
		}
	})

	t.Run("DurabilityNames", func(t *testing.T) {
		for _, d := range []sqlite.Durability{sqlite.DurabilityFsync, sqlite.DurabilityOSCrashUnsafe} {
			if got, err := sqlite.ParseDurability(d.String()); err != nil || got != d {
				t.Errorf("ParseDurability(%q) = %v, %v", d.String(), got, err)
			}
		}
		if _, err := sqlite.ParseDurability("NORMAL"); err == nil {
			t.Error("ParseDurability accepted a PRAGMA value instead of a mode name")
		}
	})

	t.Run("ClosedBackendFailsWithErrClosed", func(t *testing.T) {
		b, err := sqlite.Open(filepath.Join(t.TempDir(), "a.db"), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		if err := b.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		ctx := context.Background()
		if err := b.Update(ctx, func(store.Tx) error { return nil }); !errors.Is(err, core.ErrClosed) {
			t.Errorf("Update: %v", err)
		}
		if err := b.View(ctx, func(store.ReadTx) error { return nil }); !errors.Is(err, core.ErrClosed) {
			t.Errorf("View: %v", err)
		}
		if _, err := b.Cancelling(ctx, 1); !errors.Is(err, core.ErrClosed) {
			t.Errorf("Cancelling: %v", err)
		}
		if err := b.AppendLogs(ctx, []core.LogInfoAppendRow{{ExecutionID: newID(), RunID: lockedBy(1).RunID}}); !errors.Is(err, core.ErrClosed) {
			t.Errorf("AppendLogs: %v", err)
		}
	})
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := core.MarshalJSON(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func TestDurability(t *testing.T) {
	t.Run("AcknowledgedWritesSurviveClose", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "stela.db")
		b, err := sqlite.Open(path, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		const workers, each = 8, 50
		ids := make([][]core.ExecutionId, workers)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range each {
					h := pendingHead(newID(), ffqnA, t0, t0)
					if err := b.Update(context.Background(), func(tx store.Tx) error {
						return tx.CreateHead(h, []core.ExecutionEvent{createdEvent(h)})
					}); err != nil {
						t.Error(err)
						return
					}
					ids[w] = append(ids[w], h.ExecutionID)
				}
			}()
		}
		wg.Wait()
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		b2 := MustOpenAt(t, path)
		for _, ws := range ids {
			for _, id := range ws {
				MustHead(t, b2, id)
			}
		}
	})

	// A child process appends and prints each acknowledged id; it is killed
	// with SIGKILL mid-stream. Every acknowledged write must be readable after
	// reopening (both durability modes keep commits across a process crash;
	// the child runs at the default, fsync).
	t.Run("AcknowledgedWritesSurviveProcessKill", func(t *testing.T) {
		if testing.Short() {
			t.Skip("spawns a child process")
		}
		path := filepath.Join(t.TempDir(), "stela.db")
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelper$", "-test.count=1")
		cmd.Env = append(os.Environ(), "STELA_SQLITE_CRASH_DB="+path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var acked []string
		sc := bufio.NewScanner(out)
		for sc.Scan() && len(acked) < 300 {
			if line := sc.Text(); len(line) > 4 && line[:4] == "ack " {
				acked = append(acked, line[4:])
			}
		}
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		if len(acked) < 300 {
			t.Fatalf("child acknowledged only %d writes", len(acked))
		}
		b := MustOpenAt(t, path)
		for _, s := range acked {
			id, err := core.ParseExecutionId(s)
			if err != nil {
				t.Fatal(err)
			}
			MustHead(t, b, id)
		}
	})
}

// TestCrashHelper is the child process of AcknowledgedWritesSurviveProcessKill.
func TestCrashHelper(t *testing.T) {
	path := os.Getenv("STELA_SQLITE_CRASH_DB")
	if path == "" {
		t.Skip("helper process only")
	}
	b, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				h := pendingHead(newID(), ffqnA, t0, t0)
				if err := b.Update(context.Background(), func(tx store.Tx) error {
					return tx.CreateHead(h, []core.ExecutionEvent{createdEvent(h)})
				}); err != nil {
					return
				}
				mu.Lock()
				fmt.Printf("ack %s\n", h.ExecutionID)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

func TestHeadRoundTrip(t *testing.T) {
	b := MustOpen(t)
	parent := newID()
	js := mustJS("n:batch")
	child := parent.NextLevel(js)
	lb := lockedBy(7)
	inc := digB
	rkFail := core.ResultKindFailure(core.FailureTimedOut)
	rkErr := core.ResultKindError()
	heads := []core.ExecutionState{
		{ // locked, every optional lock field set, huge backoff
			ExecutionID: newID(), FFQN: ffqnA, CreatedAt: t0, FirstScheduledAt: t0.Add(time.Nanosecond),
			ComponentType: core.ComponentTypeWorkflow, ComponentDigest: digA, DeploymentID: depA, IncompatibleDigest: &inc,
			Version: 3, State: core.StateLocked, Lifecycle: core.LifecycleCancelling, At: t0.Add(time.Minute),
			LastLock: &lb, LastLockVersion: ver(3), MaxRetries: u32(5), RetryExpBackoffMillis: u64(1<<64 - 1),
			IntermittentEventCount: 2, MaxCursor: 9,
		},
		{ // blocked, derived
			ExecutionID: child, FFQN: ffqnB, CreatedAt: t0, FirstScheduledAt: t0, ComponentType: core.ComponentTypeActivity,
			ComponentDigest: digB, DeploymentID: mustDep(9), Version: 5, State: core.StateBlockedByJoinSet,
			Lifecycle: core.LifecyclePaused, At: t0, LastLock: &lb, JoinSetID: &js, JoinSetClosing: true,
		},
		{ExecutionID: newID(), FFQN: ffqnA, CreatedAt: t0, FirstScheduledAt: t0, ComponentType: core.ComponentTypeCron,
			ComponentDigest: digA, DeploymentID: depA, Version: 7, State: core.StateFinished, Lifecycle: core.LifecycleActive,
			At: t0, ResultKind: &rkFail},
		{ExecutionID: newID(), FFQN: ffqnA, CreatedAt: t0, FirstScheduledAt: t0, ComponentType: core.ComponentTypeActivity,
			ComponentDigest: digA, DeploymentID: depA, Version: 1, State: core.StateFinished, Lifecycle: core.LifecycleActive,
			At: t0, ResultKind: &rkErr},
	}
	MustCreate(t, b, heads...)
	for _, h := range heads {
		if got := MustHead(t, b, h.ExecutionID); !reflect.DeepEqual(got, h) {
			t.Errorf("round trip:\n got %+v\nwant %+v", got, h)
		}
	}
	// PutHead replaces every mutable field.
	upd := heads[0]
	upd.State, upd.Lifecycle, upd.At, upd.Version = core.StatePendingAt, core.LifecycleActive, t0.Add(time.Hour), 4
	upd.LastLockVersion, upd.MaxRetries, upd.RetryExpBackoffMillis, upd.IncompatibleDigest = nil, nil, nil, nil
	upd.ComponentDigest, upd.DeploymentID, upd.MaxCursor = digB, mustDep(3), 10
	if err := b.Update(context.Background(), func(tx store.Tx) error { return tx.PutHead(upd) }); err != nil {
		t.Fatal(err)
	}
	if got := MustHead(t, b, upd.ExecutionID); !reflect.DeepEqual(got, upd) {
		t.Errorf("after PutHead:\n got %+v\nwant %+v", got, upd)
	}
}

func TestConflicts(t *testing.T) {
	ctx := context.Background()
	b := MustOpen(t)
	parentA, parentB := pendingHead(newID(), ffqnA, t0, t0), pendingHead(newID(), ffqnA, t0, t0)
	MustCreate(t, b, parentA, parentB)
	js := mustJS("o:one")
	child := core.ExecutionIdDerived{ExecutionId: parentA.ExecutionID.NextLevel(js)}
	delay := core.NewDelayId(parentA.ExecutionID, js, 1)
	childResp := func(cursor core.ResponseCursor) core.ResponseWithCursor {
		return core.ResponseWithCursor{Cursor: cursor, Event: core.JoinSetResponseEventOuter{CreatedAt: t0,
			Event: core.JoinSetResponseEvent{JoinSetID: js, Event: &core.ChildExecutionFinished{
				ChildExecutionID: child, FinishedVersion: 2, Result: core.RetOk(nil)}}}}
	}
	delayResp := func(cursor core.ResponseCursor, ok bool) core.ResponseWithCursor {
		return core.ResponseWithCursor{Cursor: cursor, Event: core.JoinSetResponseEventOuter{CreatedAt: t0,
			Event: core.JoinSetResponseEvent{JoinSetID: js, Event: &core.DelayFinished{DelayID: delay, Result: core.UnitResult(ok)}}}}
	}
	timer := core.DelayTimer{ExecutionID: parentA.ExecutionID, JoinSetID: js, DelayID: delay, ExpiresAt: t0}
	mustUpdate := func(fn func(tx store.Tx) error) {
		t.Helper()
		if err := b.Update(ctx, fn); err != nil {
			t.Fatal(err)
		}
	}
	mustUpdate(func(tx store.Tx) error {
		if err := tx.AddResponse(parentA.ExecutionID, childResp(1)); err != nil {
			return err
		}
		if err := tx.AddResponse(parentA.ExecutionID, delayResp(2, true)); err != nil {
			return err
		}
		return tx.PutDelay(timer)
	})

	for name, fn := range map[string]func(tx store.Tx) error{
		"DuplicateExecutionId": func(tx store.Tx) error { return tx.CreateHead(parentA, nil) },
		"DuplicateEventVersion": func(tx store.Tx) error {
			return tx.AppendEvents(parentA.ExecutionID, []core.ExecutionEvent{createdEvent(parentA)})
		},
		"DuplicateCursor": func(tx store.Tx) error {
			r := childResp(2)
			r.Event.Event.Event = &core.ChildExecutionFinished{ChildExecutionID: core.ExecutionIdDerived{ExecutionId: child.Incremented()},
				FinishedVersion: 1, Result: core.RetOk(nil)}
			return tx.AddResponse(parentA.ExecutionID, r)
		},
		"SecondResponseForChildInAnotherExecution": func(tx store.Tx) error {
			return tx.AddResponse(parentB.ExecutionID, childResp(1))
		},
		"SecondResponseForDelayInAnotherExecution": func(tx store.Tx) error {
			return tx.AddResponse(parentB.ExecutionID, delayResp(1, false))
		},
		"DuplicateTimer": func(tx store.Tx) error { return tx.PutDelay(timer) },
	} {
		t.Run(name+"IsErrConflict", func(t *testing.T) {
			if err := b.Update(ctx, fn); !errors.Is(err, core.ErrConflict) {
				t.Errorf("err=%v, want ErrConflict", err)
			}
		})
	}

	t.Run("MissingRowsAreErrNotFound", func(t *testing.T) {
		missing := newID()
		err := b.Update(ctx, func(tx store.Tx) error {
			if _, err := tx.Head(missing); !errors.Is(err, core.ErrNotFound) {
				t.Errorf("Head: %v", err)
			}
			if _, err := tx.Event(parentA.ExecutionID, 99); !errors.Is(err, core.ErrNotFound) {
				t.Errorf("Event: %v", err)
			}
			if err := tx.SetDelayPaused(parentB.ExecutionID, js, delay, true); !errors.Is(err, core.ErrNotFound) {
				t.Errorf("SetDelayPaused: %v", err)
			}
			return nil
		})
		if err != nil {
			t.Errorf("Update: %v (a failed lookup is not a failed write)", err)
		}
		h := pendingHead(missing, ffqnA, t0, t0)
		if err := b.Update(ctx, func(tx store.Tx) error { return tx.PutHead(h) }); !errors.Is(err, core.ErrNotFound) {
			t.Errorf("PutHead of a missing execution: %v", err)
		}
	})

	t.Run("FailedUpdateWritesNothing", func(t *testing.T) {
		fresh := pendingHead(newID(), ffqnA, t0, t0)
		err := b.Update(ctx, func(tx store.Tx) error {
			if err := tx.CreateHead(fresh, []core.ExecutionEvent{createdEvent(fresh)}); err != nil {
				return err
			}
			return tx.CreateHead(parentA, nil)
		})
		if !errors.Is(err, core.ErrConflict) {
			t.Fatalf("err=%v", err)
		}
		err = b.View(ctx, func(tx store.ReadTx) error { _, err := tx.Head(fresh.ExecutionID); return err })
		if !errors.Is(err, core.ErrNotFound) {
			t.Errorf("head of the failed update: %v, want ErrNotFound", err)
		}
	})
}

func TestReadTx(t *testing.T) {
	ctx := context.Background()
	b := MustOpen(t)
	h := pendingHead(newID(), ffqnA, t0, t0)
	MustCreate(t, b, h)
	id := h.ExecutionID
	jsA, jsB := mustJS("n:a"), mustJS("n:b")
	lb := lockedBy(3)
	events := []core.ExecutionEvent{
		{CreatedAt: t0.Add(1), Version: 1, Event: &core.Locked{ExecutorID: lb.ExecutorID, RunID: lb.RunID, LockExpiresAt: t0.Add(time.Minute),
			ComponentID: core.ComponentId{ComponentType: core.ComponentTypeWorkflow, Name: "w", ComponentDigest: digA}, DeploymentID: depA}},
		{CreatedAt: t0.Add(2), Version: 2, Event: &core.HistoryEventRequest{Event: &core.JoinSetCreate{JoinSetID: jsA}}},
		{CreatedAt: t0.Add(3), Version: 3, Event: &core.HistoryEventRequest{Event: &core.JoinNext{JoinSetID: jsA, RunExpiresAt: t0, Closing: false}}},
		{CreatedAt: t0.Add(4), Version: 4, Event: &core.HistoryEventRequest{Event: &core.JoinNextTry{JoinSetID: jsA, Outcome: core.JoinNextTryOutcomeFromBool(false)}}},
		{CreatedAt: t0.Add(5), Version: 5, Event: &core.HistoryEventRequest{Event: &core.JoinNext{JoinSetID: jsA, RunExpiresAt: t0, Closing: true}}},
		{CreatedAt: t0.Add(6), Version: 6, Event: &core.HistoryEventRequest{Event: &core.JoinNext{JoinSetID: jsB, RunExpiresAt: t0}}},
	}
	delays := []core.DelayId{core.NewDelayId(id, jsA, 1), core.NewDelayId(id, jsB, 1), core.NewDelayId(id, jsA, 2)}
	resp := func(cursor core.ResponseCursor, js core.JoinSetId, d core.DelayId, ok bool) core.ResponseWithCursor {
		return core.ResponseWithCursor{Cursor: cursor, Event: core.JoinSetResponseEventOuter{CreatedAt: t0.Add(time.Duration(cursor) * time.Second),
			Event: core.JoinSetResponseEvent{JoinSetID: js, Event: &core.DelayFinished{DelayID: d, Result: core.UnitResult(ok)}}}}
	}
	responses := []core.ResponseWithCursor{resp(1, jsA, delays[0], true), resp(2, jsB, delays[1], false), resp(3, jsA, delays[2], true)}
	timer := core.DelayTimer{ExecutionID: id, JoinSetID: jsA, DelayID: core.NewDelayId(id, jsA, 3), ExpiresAt: t0.Add(time.Hour)}
	err := b.Update(ctx, func(tx store.Tx) error {
		if err := tx.AppendEvents(id, events); err != nil {
			return err
		}
		for _, r := range responses {
			if err := tx.AddResponse(id, r); err != nil {
				return err
			}
		}
		if err := tx.PutDelay(timer); err != nil {
			return err
		}
		return tx.SetDelayPaused(id, jsA, timer.DelayID, true)
	})
	if err != nil {
		t.Fatal(err)
	}
	err = b.View(ctx, func(tx store.ReadTx) error {
		got, err := tx.Events(id, 1, 4)
		if err != nil {
			return err
		}
		if !reflect.DeepEqual(got, events[:3]) {
			t.Errorf("Events[1,4) = %+v, want %+v", got, events[:3])
		}
		if got, _ := tx.Events(id, 4, 4); len(got) != 0 {
			t.Errorf("empty range returned %d events", len(got))
		}
		ev, err := tx.Event(id, 0)
		if err != nil || jsonOf(t, ev) != jsonOf(t, createdEvent(h)) {
			t.Errorf("Event(0) = %s, %v; want %s", jsonOf(t, ev), err, jsonOf(t, createdEvent(h)))
		}
		rs, err := tx.Responses(id, 2, 100)
		if err != nil || !reflect.DeepEqual(rs, responses[1:]) {
			t.Errorf("Responses[2,100) = %+v, %v", rs, err)
		}
		if n, err := tx.JoinNextCount(id, jsA); n != 2 || err != nil {
			t.Errorf("JoinNextCount(a) = %d, %v; want 2 (closing counted, JoinNextTry not)", n, err)
		}
		if n, _ := tx.JoinNextCount(id, mustJS("n:none")); n != 0 {
			t.Errorf("JoinNextCount(none) = %d", n)
		}
		if r, ok, err := tx.NthResponse(id, jsA, 2); !ok || err != nil || !reflect.DeepEqual(r, responses[2]) {
			t.Errorf("NthResponse(a, 2) = %+v %v %v, want cursor 3", r, ok, err)
		}
		if _, ok, _ := tx.NthResponse(id, jsB, 2); ok {
			t.Error("NthResponse(b, 2) found a response")
		}
		for i, want := range []bool{true, false, true} {
			if ok, found, err := tx.DelayOutcome(delays[i]); !found || ok != want || err != nil {
				t.Errorf("DelayOutcome(%s) = %v %v %v, want %v", delays[i], ok, found, err, want)
			}
		}
		if _, found, _ := tx.DelayOutcome(timer.DelayID); found {
			t.Error("DelayOutcome found a response for a pending timer")
		}
		want := timer
		want.Paused = true
		if d, ok, err := tx.Delay(id, jsA, timer.DelayID); !ok || err != nil || d != want {
			t.Errorf("Delay = %+v %v %v, want %+v", d, ok, err, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Update(ctx, func(tx store.Tx) error { return tx.DeleteDelay(id, jsA, timer.DelayID) }); err != nil {
		t.Fatal(err)
	}
	_ = b.View(ctx, func(tx store.ReadTx) error {
		if _, ok, _ := tx.Delay(id, jsA, timer.DelayID); ok {
			t.Error("timer still present after DeleteDelay")
		}
		return nil
	})
}

func TestConcurrentUpdatesAreSerializable(t *testing.T) {
	// Read-modify-write of one counter from many goroutines: no lost update.
	ctx := context.Background()
	b := MustOpen(t)
	h := pendingHead(newID(), ffqnA, t0, t0)
	MustCreate(t, b, h)
	const workers, each = 8, 40
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				err := b.Update(ctx, func(tx store.Tx) error {
					st, err := tx.Head(h.ExecutionID)
					if err != nil {
						return err
					}
					st.IntermittentEventCount++
					return tx.PutHead(st)
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if got := MustHead(t, b, h.ExecutionID).IntermittentEventCount; got != workers*each {
		t.Errorf("counter = %d, want %d", got, workers*each)
	}
	if s := b.Stats(); s.Requests < workers*each || s.Batches > s.Requests {
		t.Errorf("stats %+v", s)
	}
}

func TestViewIsASnapshot(t *testing.T) {
	ctx := context.Background()
	b := MustOpen(t)
	h := pendingHead(newID(), ffqnA, t0, t0)
	MustCreate(t, b, h)
	err := b.View(ctx, func(tx store.ReadTx) error {
		before, err := tx.Head(h.ExecutionID)
		if err != nil {
			return err
		}
		if err := b.Update(ctx, func(wtx store.Tx) error {
			st := before
			st.Version = 42
			return wtx.PutHead(st)
		}); err != nil {
			return err
		}
		after, err := tx.Head(h.ExecutionID)
		if err != nil {
			return err
		}
		if after.Version != before.Version {
			t.Errorf("a View saw a commit made after its first read (version %d -> %d)", before.Version, after.Version)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := MustHead(t, b, h.ExecutionID).Version; got != 42 {
		t.Errorf("version after the View = %d, want 42", got)
	}
}

// The writer serves Head from a cache; these tests pin that it always returns
// what the database holds.
func TestWriterHeadCache(t *testing.T) {
	ctx := context.Background()
	readInUpdate := func(t *testing.T, b *sqlite.Backend, id core.ExecutionId) core.ExecutionState {
		t.Helper()
		var st core.ExecutionState
		if err := b.Update(ctx, func(tx store.Tx) error {
			var err error
			st, err = tx.Head(id)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return st
	}

	t.Run("CachedHeadEqualsStoredHead", func(t *testing.T) {
		b := MustOpen(t)
		odd := pendingHead(newID(), ffqnA, core.Timestamp{Time: time.Date(2026, 1, 1, 12, 0, 0, 5, time.FixedZone("x", 3600))}, t0)
		rk := core.ResultKind{Failure: "ignored when ok"}
		odd.ResultKind = &rk
		MustCreate(t, b, odd)
		got, want := readInUpdate(t, b, odd.ExecutionID), MustHead(t, b, odd.ExecutionID)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("writer read %+v, stored %+v", got, want)
		}
	})

	t.Run("FailedFnLeavesNoTrace", func(t *testing.T) {
		b := MustOpen(t)
		h := pendingHead(newID(), ffqnA, t0, t0)
		MustCreate(t, b, h)
		boom := errors.New("boom")
		err := b.Update(ctx, func(tx store.Tx) error {
			st, err := tx.Head(h.ExecutionID)
			if err != nil {
				return err
			}
			st.Version = 99
			if err := tx.PutHead(st); err != nil {
				return err
			}
			if got, _ := tx.Head(h.ExecutionID); got.Version != 99 {
				t.Errorf("fn does not read its own write: version %d", got.Version)
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatal(err)
		}
		if got := readInUpdate(t, b, h.ExecutionID).Version; got != 0 {
			t.Errorf("version after the failed fn = %d, want 0", got)
		}
	})

	t.Run("CommitsOfAnotherBackendInvalidate", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "stela.db")
		b1, b2 := MustOpenAt(t, path), MustOpenAt(t, path)
		h := pendingHead(newID(), ffqnA, t0, t0)
		MustCreate(t, b1, h)
		readInUpdate(t, b1, h.ExecutionID) // cached by b1's writer
		if err := b2.Update(ctx, func(tx store.Tx) error {
			st, err := tx.Head(h.ExecutionID)
			if err != nil {
				return err
			}
			st.Version = 7
			return tx.PutHead(st)
		}); err != nil {
			t.Fatal(err)
		}
		if got := readInUpdate(t, b1, h.ExecutionID).Version; got != 7 {
			t.Errorf("b1 read version %d after b2 wrote 7", got)
		}
	})
}

// Events appended in one call are written by multi-row INSERTs of up to 16
// (sqlite/tx.go maxEventRows): every count across the chunk boundaries
// reads back complete, in order and byte for byte, and a duplicate version
// anywhere in a chunk fails the whole call with nothing written.
func TestAppendEventsAcrossInsertChunks(t *testing.T) {
	be := MustOpen(t)
	ctx := context.Background()
	for _, n := range []int{1, 2, 15, 16, 17, 33, 40} {
		id := newID()
		h := pendingHead(id, ffqnA, t0, t0)
		evs := make([]core.ExecutionEvent, n)
		for i := range evs {
			evs[i] = core.ExecutionEvent{CreatedAt: t0.Add(time.Duration(i) * time.Millisecond), Version: core.Version(i + 1),
				Event: &core.HistoryEventRequest{Event: &core.Persist{Value: core.Bytes{byte(i)},
					Kind: core.PersistKind{Type: "random_u64", Min: 0, MaxInclusive: 255}}}}
		}
		if err := be.Update(ctx, func(tx store.Tx) error {
			if err := tx.CreateHead(h, []core.ExecutionEvent{createdEvent(h)}); err != nil {
				return err
			}
			return tx.AppendEvents(id, evs)
		}); err != nil {
			t.Fatalf("%d events: %v", n, err)
		}
		var got []core.ExecutionEvent
		if err := be.View(ctx, func(tx store.ReadTx) error {
			var err error
			got, err = tx.Events(id, 1, core.Version(n+1))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if len(got) != n {
			t.Fatalf("%d events appended, %d read back", n, len(got))
		}
		for i := range got {
			a, _ := core.MarshalJSON(got[i])
			b, _ := core.MarshalJSON(evs[i])
			if got[i].Version != evs[i].Version || !bytes.Equal(a, b) {
				t.Fatalf("%d events: #%d read back as %s, want %s", n, i, a, b)
			}
		}

		dup := append([]core.ExecutionEvent(nil), evs...)
		for i := range dup {
			dup[i].Version += core.Version(n) // after the ones written
		}
		dup[len(dup)-1].Version = 1 // written above: a duplicate in the last chunk
		err := be.Update(ctx, func(tx store.Tx) error { return tx.AppendEvents(id, dup) })
		if err == nil {
			t.Fatalf("%d events with a duplicate version: appended", n)
		}
		if err := be.View(ctx, func(tx store.ReadTx) error {
			more, err := tx.Events(id, core.Version(n+1), core.Version(3*n+2))
			if err == nil && len(more) != 0 {
				t.Errorf("%d events with a duplicate version: %d of them written", n, len(more))
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// CreateHeads writes 1…40 heads with their events across INSERT chunks:
// each head and event reads back (from a reader, and through the
// pending index), and a duplicate id anywhere — an existing execution, or
// twice in the call — fails the call with core.ErrConflict and writes none.
func TestCreateHeadsAcrossInsertChunks(t *testing.T) {
	be := MustOpen(t)
	ctx := context.Background()
	for _, n := range []int{1, 2, 15, 16, 17, 33, 40} {
		heads := make([]store.NewHead, n)
		for i := range heads {
			h := pendingHead(newID(), ffqnA, t0, t0.Add(time.Duration(i)*time.Millisecond))
			evs := []core.ExecutionEvent{createdEvent(h)}
			if i%3 == 0 { // some with a second event, so that chunks of events and heads differ
				h.Version = 2
				evs = append(evs, core.ExecutionEvent{CreatedAt: t0, Version: 1, Event: &core.Paused{}})
				h.Lifecycle = core.LifecyclePaused
			}
			heads[i] = store.NewHead{State: h, Events: evs}
		}
		if err := be.Update(ctx, func(tx store.Tx) error { return tx.(store.HeadsCreator).CreateHeads(heads) }); err != nil {
			t.Fatalf("%d heads: %v", n, err)
		}
		if err := be.View(ctx, func(tx store.ReadTx) error {
			for _, h := range heads {
				got, err := tx.Head(h.State.ExecutionID)
				if err != nil {
					return err
				}
				if got.Version != h.State.Version || got.Lifecycle != h.State.Lifecycle || !got.At.Equal(h.State.At) {
					t.Errorf("%d heads: %s read back as %+v, want %+v", n, h.State.ExecutionID, got, h.State)
				}
				evs, err := tx.Events(h.State.ExecutionID, 0, core.Version(len(h.Events)))
				if err != nil {
					return err
				}
				if len(evs) != len(h.Events) {
					t.Errorf("%d heads: %s has %d events, want %d", n, h.State.ExecutionID, len(evs), len(h.Events))
				}
				for i := range evs {
					a, _ := core.MarshalJSON(evs[i])
					b, _ := core.MarshalJSON(h.Events[i])
					if !bytes.Equal(a, b) {
						t.Errorf("%d heads: %s #%d read back as %s, want %s", n, h.State.ExecutionID, i, a, b)
					}
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for _, dupAt := range []string{"existing", "repeated"} {
			more := make([]store.NewHead, n+1)
			for i := range more {
				h := pendingHead(newID(), ffqnA, t0, t0)
				more[i] = store.NewHead{State: h, Events: []core.ExecutionEvent{createdEvent(h)}}
			}
			if dupAt == "existing" {
				more[n] = heads[n-1] // in the last chunk
			} else {
				more[n] = more[0]
			}
			err := be.Update(ctx, func(tx store.Tx) error { return tx.(store.HeadsCreator).CreateHeads(more) })
			if !errors.Is(err, core.ErrConflict) {
				t.Fatalf("%d heads with an %s id: %v, want a conflict", n+1, dupAt, err)
			}
			if err := be.View(ctx, func(tx store.ReadTx) error {
				for _, h := range more[:n] {
					if _, err := tx.Head(h.State.ExecutionID); !errors.Is(err, core.ErrNotFound) {
						t.Errorf("%d heads with an %s id: %s written (%v)", n+1, dupAt, h.State.ExecutionID, err)
					}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
}
