package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/sqlite"
	"github.com/stela-dev/stela/store"
)

// A backup taken while a writer commits holds exactly the commits
// acknowledged before some instant during the backup — a prefix of the
// writer's sequence, each execution whole (its head and every event it
// claims) — and opens as a store.
func TestBackupUnderConcurrentWrites(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	// Commits without fsync keep the writer busy; 4 KB of params per
	// execution make the copy take a while.
	b, err := sqlite.Open(filepath.Join(dir, "stela.db"), sqlite.Options{Durability: sqlite.DurabilityOSCrashUnsafe})
	if err != nil {
		t.Fatal(err)
	}
	svc := store.New(b, store.Options{})
	t.Cleanup(func() { _ = svc.Close() })
	ffqn, _ := core.ParseFunctionFqn("ns:pkg/ifc.fn")
	at := core.TS(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	// The writer creates executions 0, 1, 2, … one after the other, each
	// then locked and finished: three commits per execution.
	ids := make([]core.ExecutionId, 100_000)
	var (
		mu     sync.Mutex
		cond   = sync.NewCond(&mu)
		acked  int64 // executions whose three commits were acknowledged
		failed bool
	)
	ack := func() {
		mu.Lock()
		acked++
		mu.Unlock()
		cond.Broadcast()
	}
	// waitFor waits until n executions were acknowledged (or the writer failed).
	waitFor := func(n int64) int64 {
		mu.Lock()
		defer mu.Unlock()
		for acked < n && !failed {
			cond.Wait()
		}
		return acked
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var writeErr error
	wg.Go(func() {
		defer func() {
			mu.Lock()
			failed = true // also when it stops: nobody waits any more
			mu.Unlock()
			cond.Broadcast()
		}()
		for i := range ids {
			select {
			case <-stop:
				return
			default:
			}
			id, err := core.NewExecutionId(uint64(i), nil)
			if err != nil {
				writeErr = err
				return
			}
			ids[i] = id
			req := core.CreateRequest{CreatedAt: at, ExecutionID: id, FFQN: ffqn, Params: core.Params{[]byte(fmt.Sprintf("%q", fmt.Sprint(i)+strings.Repeat(".", 4096)))},
				ScheduledAt: at, ComponentID: core.ComponentId{ComponentType: core.ComponentTypeActivity}}
			if _, err := svc.Create(ctx, req); err != nil {
				writeErr = err
				return
			}
			lock := core.LockRequest{BatchSize: 1, PendingAtOrSooner: at, CreatedAt: at, ComponentID: req.ComponentID,
				LockExpiresAt: at.Add(time.Hour), RetryConfig: core.RetryConfigZero()}
			if _, err := svc.LockOne(ctx, lock, id, 1); err != nil {
				writeErr = err
				return
			}
			if _, err := svc.Append(ctx, id, 2, core.AppendRequest{CreatedAt: at, Event: &core.Finished{Retval: core.RetOk(nil)}}); err != nil {
				writeErr = err
				return
			}
			ack()
		}
	})
	before := waitFor(1000)
	copyPath := filepath.Join(dir, "backup", "stela.db")
	if err := os.MkdirAll(filepath.Dir(copyPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := b.Backup(ctx, copyPath); err != nil {
		t.Fatalf("backup: %v", err)
	}
	after := waitFor(0)
	waitFor(after + 200) // the writer keeps going after the backup
	close(stop)
	wg.Wait()
	if writeErr != nil {
		t.Fatalf("writer: %v", writeErr)
	}
	if after == before {
		t.Fatalf("no write was acknowledged during the backup (%d before and after): it did not run concurrently", before)
	}

	cb, err := sqlite.Open(copyPath, sqlite.Options{})
	if err != nil {
		t.Fatalf("open the backup: %v", err)
	}
	copySvc := store.New(cb, store.Options{})
	t.Cleanup(func() { _ = copySvc.Close() })
	if err := copySvc.Ready(ctx); err != nil {
		t.Fatalf("the backup is not ready: %v", err)
	}
	var roots []core.ExecutionId
	var records []core.ExecutionRecord
	err = copySvc.Export(ctx, func(r *store.ExportReader) error {
		var err error
		if roots, err = r.TreeRoots(); err != nil {
			return err
		}
		for _, root := range roots {
			tree, err := r.Tree(root)
			if err != nil {
				return err
			}
			records = append(records, tree.Executions...)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("read the backup: %v", err)
	}
	n := int64(len(records))
	if n < before || n > after+1 {
		t.Fatalf("the backup holds %d executions; %d were acknowledged before it began and %d when it ended", n, before, after)
	}
	for i, r := range records {
		if r.Head.ExecutionID != ids[i] {
			t.Fatalf("execution %d of the backup is %s, want %s (not a prefix of the writes)", i, r.Head.ExecutionID, ids[i])
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("execution %d of the backup: %v", i, err)
		}
		// Every execution but possibly the last is finished; the last may
		// be caught between its commits.
		if int64(i) < n-1 && !r.Head.IsFinished() {
			t.Fatalf("execution %d of the backup is %s, want finished", i, r.Head.State)
		}
	}
	t.Logf("backup of %d executions taken while %d more were written", n, after-before)
}

// A backup never replaces a file, and one that cannot finish leaves none.
func TestBackupRefusesAnExistingFileAndLeavesNothingWhenItFails(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b, err := sqlite.Open(filepath.Join(dir, "stela.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	existing := filepath.Join(dir, "old.db")
	if err := os.WriteFile(existing, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := b.Backup(ctx, existing); err == nil {
		t.Fatal("backup over an existing file succeeded")
	}
	if got, _ := os.ReadFile(existing); string(got) != "precious" {
		t.Fatalf("the existing file now holds %q", got)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	target := filepath.Join(dir, "new.db")
	if err := b.Backup(cancelled, target); !errors.Is(err, context.Canceled) {
		t.Fatalf("backup with a cancelled context: %v, want context.Canceled", err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != "stela.db" && e.Name() != "stela.db-wal" && e.Name() != "stela.db-shm" && e.Name() != "old.db" {
			t.Fatalf("a failed backup left %s", e.Name())
		}
	}
}
