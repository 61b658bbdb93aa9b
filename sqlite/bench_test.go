package sqlite_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
)

// BenchmarkUpdate measures raw Update throughput: each op is one Update
// creating a head with its Created event. With -cpu 2 it runs 8 goroutines.
func BenchmarkUpdate(b *testing.B) {
	be := MustOpen(b)
	ctx := context.Background()
	b.SetParallelism(4)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			h := pendingHead(newID(), ffqnA, t0, t0)
			ev := createdEvent(h)
			if err := be.Update(ctx, func(tx store.Tx) error {
				return tx.CreateHead(h, []core.ExecutionEvent{ev})
			}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkActivityRoundTrip emulates what the service does for one activity
// execution: create; find it pending and lock it (read head, Created event and
// responses, write head and Locked); finish it (read head, write head and
// Finished). One op = one round trip = three Updates and one query.
func BenchmarkActivityRoundTrip(b *testing.B) {
	be := MustOpen(b)
	ctx := context.Background()
	by := lockedBy(1)
	b.SetParallelism(4)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := newID()
			h := pendingHead(id, ffqnA, t0, t0)
			ev := createdEvent(h)
			if err := be.Update(ctx, func(tx store.Tx) error {
				return tx.CreateHead(h, []core.ExecutionEvent{ev})
			}); err != nil {
				b.Error(err)
				return
			}
			if _, err := be.PendingByFFQN(ctx, ffqnA, t0, 1, nil); err != nil {
				b.Error(err)
				return
			}
			if err := be.Update(ctx, func(tx store.Tx) error {
				st, err := tx.Head(id)
				if err != nil {
					return err
				}
				if _, err := tx.Events(id, 0, st.Version+1); err != nil {
					return err
				}
				if _, err := tx.Responses(id, 1, st.MaxCursor+1); err != nil {
					return err
				}
				st.Version++
				st.State, st.At, st.LastLock = core.StateLocked, t0.Add(60e9), &by
				st.LastLockVersion, st.MaxRetries, st.RetryExpBackoffMillis = ver(st.Version), u32(0), u64(0)
				if err := tx.PutHead(st); err != nil {
					return err
				}
				return tx.AppendEvents(id, []core.ExecutionEvent{{CreatedAt: t0, Version: st.Version, Event: &core.Locked{
					ExecutorID: by.ExecutorID, RunID: by.RunID, LockExpiresAt: st.At, DeploymentID: depA,
					ComponentID: core.ComponentId{ComponentType: core.ComponentTypeActivity, Name: "c", ComponentDigest: digA},
				}}})
			}); err != nil {
				b.Error(err)
				return
			}
			if err := be.Update(ctx, func(tx store.Tx) error {
				st, err := tx.Head(id)
				if err != nil {
					return err
				}
				st.Version++
				rk := core.ResultKindOk()
				st.State, st.At, st.LastLock, st.ResultKind = core.StateFinished, t0, nil, &rk
				st.LastLockVersion, st.MaxRetries, st.RetryExpBackoffMillis = nil, nil, nil
				if err := tx.PutHead(st); err != nil {
					return err
				}
				return tx.AppendEvents(id, []core.ExecutionEvent{{CreatedAt: t0, Version: st.Version,
					Event: &core.Finished{Retval: core.RetOk(nil)}}})
			}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkServiceActivityRoundTrip measures activity round trips through
// store.Service: Create → LockPendingByFFQNs → Append(Finished), with
// finished trees kept forever and with `stela dev`'s default retention
// (each finish also records its time). Each goroutine (8 with -cpu 2) works
// on its own function name.
func BenchmarkServiceActivityRoundTrip(b *testing.B) {
	b.Run("retention=forever", func(b *testing.B) { benchServiceActivityRoundTrip(b, core.RetainForever) })
	b.Run("retention=default", func(b *testing.B) {
		benchServiceActivityRoundTrip(b, core.RetainFor(core.DefaultRetentionPeriod))
	})
}

func benchServiceActivityRoundTrip(b *testing.B, r core.Retention) {
	be := MustOpen(b)
	s := store.New(be, store.Options{Retention: r})
	ctx := context.Background()
	var worker atomic.Int64
	b.SetParallelism(4)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		w := worker.Add(1)
		ffqn := mustFFQN(fmt.Sprintf("ns:pkg/ifc.w%d", w))
		by := lockedBy(uint64(100 + 2*w))
		comp := core.ComponentId{ComponentType: core.ComponentTypeActivity, Name: "c", ComponentDigest: digA}
		for pb.Next() {
			now := core.TS(time.Now())
			id := newID()
			if _, err := s.Create(ctx, core.CreateRequest{CreatedAt: now, ExecutionID: id, FFQN: ffqn,
				Params: core.Params{[]byte(`"p"`)}, ScheduledAt: now, ComponentID: comp, DeploymentID: depA}); err != nil {
				b.Error(err)
				return
			}
			locked, err := s.LockPendingByFFQNs(ctx, core.LockRequest{BatchSize: 1, PendingAtOrSooner: now, CreatedAt: now,
				ComponentID: comp, DeploymentID: depA, ExecutorID: by.ExecutorID, RunID: by.RunID,
				LockExpiresAt: now.Add(time.Minute), RetryConfig: core.RetryConfigZero()}, []core.FunctionFqn{ffqn})
			if err != nil || len(locked) != 1 {
				b.Errorf("lock: %v, %d locked", err, len(locked))
				return
			}
			if _, err := s.Append(ctx, locked[0].ExecutionID, locked[0].NextVersion, core.AppendRequest{CreatedAt: now,
				Event: &core.Finished{Retval: core.RetOk(nil)}}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
	st := be.Stats()
	b.ReportMetric(float64(st.Requests)/float64(max(st.Batches, 1)), "updates/batch")
}

// cpuTime is the CPU time (user + system) this process has used; unlike
// ns/op it is not inflated by other processes competing for the cores.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkServiceLockBatches mirrors `stela bench embedded`: b.N executions
// are created first (not timed); then 8 workers lock them in batches of 10
// (one function name shared by all) and finish each one.
func BenchmarkServiceLockBatches(b *testing.B) {
	be := MustOpen(b)
	s := store.New(be, store.Options{})
	ctx := context.Background()
	ffqn := mustFFQN("ns:pkg/ifc.shared")
	comp := core.ComponentId{ComponentType: core.ComponentTypeActivity, Name: "c", ComponentDigest: digA}
	now := core.TS(time.Now())
	var wg sync.WaitGroup
	var next atomic.Int64
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if _, err := s.Create(ctx, core.CreateRequest{CreatedAt: now, ExecutionID: newID(), FFQN: ffqn,
					Params: core.Params{}, ScheduledAt: now, ComponentID: comp, DeploymentID: depA}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	var done, calls atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			by := lockedBy(uint64(1000 + 2*w))
			for done.Load() < int64(b.N) {
				t := core.TS(time.Now())
				locked, err := s.LockPendingByFFQNs(ctx, core.LockRequest{BatchSize: 10, PendingAtOrSooner: t, CreatedAt: t,
					ComponentID: comp, DeploymentID: depA, ExecutorID: by.ExecutorID, RunID: by.RunID,
					LockExpiresAt: t.Add(time.Minute), RetryConfig: core.RetryConfigZero()}, []core.FunctionFqn{ffqn})
				calls.Add(1)
				if err != nil {
					b.Error(err)
					return
				}
				var inner sync.WaitGroup
				for _, l := range locked {
					inner.Add(1)
					go func() {
						defer inner.Done()
						if _, err := s.Append(ctx, l.ExecutionID, l.NextVersion, core.AppendRequest{CreatedAt: t,
							Event: &core.Finished{Retval: core.RetOk(nil)}}); err != nil {
							b.Error(err)
						}
						done.Add(1)
					}()
				}
				inner.Wait()
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
	b.ReportMetric(float64(b.N)/float64(calls.Load()), "locked/call")
}
