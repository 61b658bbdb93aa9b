package worker_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/worker"
	"github.com/stela-dev/stela/worker/workertest"
)

// lockRecorder records the lock requests a worker sends: batch size and
// wait of each, and the largest sum of batch sizes of the non-waiting
// requests (bursts) in flight at once.
type lockRecorder struct {
	*store.Service
	mu          sync.Mutex
	waits       []time.Duration
	sizes       []uint32
	burstNow    uint32
	burstMax    uint32
	longPollNew chan struct{} // receives when a waiting request is sent
}

func (c *lockRecorder) LockPending(ctx context.Context, req core.LockRequest, ffqns []core.FunctionFqn, wait time.Duration) ([]core.LockedExecution, error) {
	c.mu.Lock()
	c.waits = append(c.waits, wait)
	c.sizes = append(c.sizes, req.BatchSize)
	if wait == 0 {
		c.burstNow += req.BatchSize
		c.burstMax = max(c.burstMax, c.burstNow)
	}
	c.mu.Unlock()
	if wait > 0 {
		select {
		case c.longPollNew <- struct{}{}:
		default:
		}
	}
	locked, err := c.Service.LockPending(ctx, req, ffqns, wait)
	if wait == 0 {
		c.mu.Lock()
		c.burstNow -= req.BatchSize
		c.mu.Unlock()
	}
	return locked, err
}

// TestLockBurstFollowsABacklog: a lock request that comes back full makes
// the worker ask again at once, without waiting (a burst), for the free
// slots, and never for more than are free; once the backlog is drained it
// goes back to one long poll. Concurrency is never exceeded.
func TestLockBurstFollowsABacklog(t *testing.T) {
	const conc, n = 4, 10
	env := workertest.New(t, worker.Options{})
	conn := &lockRecorder{Service: env.Store, longPollNew: make(chan struct{}, 1)}
	pollWait := 200 * time.Millisecond
	finished := make(chan core.ExecutionId, n)
	// Without prefetch (TestPrefetchLocksAheadOfTheSlots covers it): a
	// burst then asks for the free slots only.
	w := env.NewWorker(conn, worker.Options{Concurrency: conc, PollWait: pollWait, NoPrefetch: true,
		OnFinished: func(id core.ExecutionId, _ core.ReturnValue) { finished <- id }})
	var running, most atomic.Int32
	blk := newBlocking()
	worker.Activity(w, slowFFQN, func(ctx context.Context, s string) (string, error) {
		r := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); r > m && !most.CompareAndSwap(m, r); m = most.Load() {
		}
		return blk.fn(ctx, s)
	})
	ids := make([]core.ExecutionId, n)
	for i := range ids {
		ids[i] = env.Submit(slowFFQN, "x")
	}
	ctx, stop := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- w.Run(ctx) }()
	for range conc {
		waitFor(t, blk.started, "the first batch to start")
	}
	// Every slot is held: the worker asked for the first batch only.
	conn.mu.Lock()
	first := append([]uint32(nil), conn.sizes...)
	conn.mu.Unlock()
	if len(first) != 1 || first[0] != conc {
		t.Fatalf("while every slot is held, want one request for %d, got sizes %v", conc, first)
	}
	// Drain the long-poll signal of the first request, then let all run.
	select {
	case <-conn.longPollNew:
	default:
	}
	close(blk.release)
	for range n - conc {
		waitFor(t, blk.started, "the backlog to start")
	}
	waitFor(t, conn.longPollNew, "a long poll once the backlog is drained")
	for range ids {
		waitFor(t, finished, "every execution to finish")
	}
	stop()
	if err := waitFor(t, runDone, "Run to return"); err != nil {
		t.Fatal(err)
	}
	conn.mu.Lock()
	defer conn.mu.Unlock()
	bursts := 0
	for i, wt := range conn.waits {
		if wt == 0 {
			bursts++
			if conn.sizes[i] > conc {
				t.Errorf("burst request %d asked for %d > concurrency %d", i, conn.sizes[i], conc)
			}
		} else if wt != pollWait {
			t.Errorf("request %d waited %v, want 0 or PollWait", i, wt)
		}
	}
	if bursts == 0 {
		t.Fatalf("a full answer must be followed by non-waiting requests; got waits %v", conn.waits)
	}
	if conn.burstMax > conc {
		t.Fatalf("bursts in flight asked for %d executions at once, more than the %d slots", conn.burstMax, conc)
	}
	if m := most.Load(); m > conc {
		t.Fatalf("%d activities ran at once, concurrency %d", m, conc)
	}
}

// joinNextGate blocks the write of a workflow's JoinNext (the flush before
// it waits in memory) until open is closed; blocked receives when it is
// held.
type joinNextGate struct {
	*store.Service
	blocked chan struct{}
	open    chan struct{}
	once    sync.Once
}

func (c *joinNextGate) AppendBatch(ctx context.Context, now core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, v core.Version) (core.Version, error) {
	if h, ok := batch[len(batch)-1].Event.(*core.HistoryEventRequest); ok {
		if _, ok := h.Event.(*core.JoinNext); ok {
			c.once.Do(func() { close(c.blocked) })
			<-c.open
		}
	}
	return c.Service.AppendBatch(ctx, now, batch, id, v)
}

// TestAwaitLendsTheSlotBeforeTheWrite: a workflow about to wait in memory
// lends its concurrency slot before the write of its JoinNext returns, so
// that with Concurrency 1 an activity runs while that write is on its way.
func TestAwaitLendsTheSlotBeforeTheWrite(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	conn := &joinNextGate{Service: env.Store, blocked: make(chan struct{}), open: make(chan struct{})}
	w := env.NewWorker(conn, worker.Options{Concurrency: 1, PollWait: 50 * time.Millisecond, LockExpiry: time.Hour, AwaitWindow: time.Hour})
	worker.Workflow(w, "demo:test/wf.sleeper", func(wf *worker.Context, _ string) (string, error) {
		if err := wf.Sleep(time.Minute); err != nil {
			return "", err
		}
		return "slept", nil
	})
	blk := newBlocking()
	worker.Activity(w, slowFFQN, blk.fn)
	env.Submit("demo:test/wf.sleeper", "")
	runInBackground(t, w)
	waitFor(t, conn.blocked, "the JoinNext write")
	env.Submit(slowFFQN, "x")
	select {
	case <-blk.started:
	case <-time.After(10 * time.Second):
		close(conn.open)
		t.Fatal("the activity did not start while the waiting workflow's write was on its way: the slot was not lent")
	}
	close(conn.open)
	close(blk.release)
}

// finishedGate blocks the write of a workflow's Finished until open is
// closed; blocked is closed when it is held.
type finishedGate struct {
	*store.Service
	blocked chan struct{}
	open    chan struct{}
	once    sync.Once
}

func (c *finishedGate) AppendBatch(ctx context.Context, now core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, v core.Version) (core.Version, error) {
	if _, ok := batch[len(batch)-1].Event.(*core.Finished); ok {
		c.once.Do(func() { close(c.blocked) })
		<-c.open
	}
	return c.Service.AppendBatch(ctx, now, batch, id, v)
}

// TestFinishLendsTheSlotBeforeTheWrite: a workflow whose code returned
// lends its concurrency slot before the write of its Finished returns, so
// that with Concurrency 1 an activity runs while that write is on its way.
func TestFinishLendsTheSlotBeforeTheWrite(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	conn := &finishedGate{Service: env.Store, blocked: make(chan struct{}), open: make(chan struct{})}
	finished := make(chan core.ExecutionId, 2)
	w := env.NewWorker(conn, worker.Options{Concurrency: 1, PollWait: 50 * time.Millisecond,
		OnFinished: func(id core.ExecutionId, _ core.ReturnValue) { finished <- id }})
	worker.Workflow(w, "demo:test/wf.quick", func(wf *worker.Context, _ string) (string, error) { return "done", nil })
	blk := newBlocking()
	worker.Activity(w, slowFFQN, blk.fn)
	wid := env.Submit("demo:test/wf.quick", "")
	runInBackground(t, w)
	waitFor(t, conn.blocked, "the Finished write")
	env.Submit(slowFFQN, "x")
	select {
	case <-blk.started:
	case <-time.After(10 * time.Second):
		close(conn.open)
		t.Fatal("the activity did not start while the finished workflow's write was on its way: the slot was not lent")
	}
	close(conn.open)
	close(blk.release)
	for range 2 {
		waitFor(t, finished, "both to finish")
	}
	if got, err := workertest.Result[string](env, wid); err != nil || got != "done" {
		t.Fatalf("workflow result %q, %v", got, err)
	}
}

// outcomeGate blocks the write of the first activity outcome (a top-level
// activity's Finished, by Append) until open is closed.
type outcomeGate struct {
	*store.Service
	blocked chan struct{}
	open    chan struct{}
	once    sync.Once
}

func (c *outcomeGate) Append(ctx context.Context, id core.ExecutionId, v core.Version, req core.AppendRequest) (core.Version, error) {
	if _, ok := req.Event.(*core.Finished); ok {
		first := false
		c.once.Do(func() { first = true; close(c.blocked) })
		if first {
			<-c.open
		}
	}
	return c.Service.Append(ctx, id, v, req)
}

// TestActivityLendsTheSlotBeforeTheWrite: an activity whose function
// returned lends its slot before the write of its outcome returns, so that
// with Concurrency 1 the next activity runs while that write is on its way.
func TestActivityLendsTheSlotBeforeTheWrite(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	conn := &outcomeGate{Service: env.Store, blocked: make(chan struct{}), open: make(chan struct{})}
	finished := make(chan core.ExecutionId, 2)
	w := env.NewWorker(conn, worker.Options{Concurrency: 1, PollWait: 50 * time.Millisecond,
		OnFinished: func(id core.ExecutionId, _ core.ReturnValue) { finished <- id }})
	started := make(chan string, 2)
	worker.Activity(w, slowFFQN, func(_ context.Context, s string) (string, error) { started <- s; return s, nil })
	env.Submit(slowFFQN, "first")
	runInBackground(t, w)
	waitFor(t, started, "the first activity")
	waitFor(t, conn.blocked, "the first outcome's write")
	env.Submit(slowFFQN, "second")
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		close(conn.open)
		t.Fatal("the second activity did not start while the first's outcome was being written: the slot was not lent")
	}
	close(conn.open)
	for range 2 {
		waitFor(t, finished, "both to finish")
	}
}

// TestMaxAwaitingHoldsWhileJoinNextWritesAreOnTheirWay: a workflow takes
// its place among the Options.MaxAwaiting waiting runs when it decides to
// wait in memory, before its JoinNext write returns; so with MaxAwaiting 1
// and the first sleeper's write held, a second sleeper parks (its
// JoinNext gives the execution up at once: run_expires_at = the time of
// the write) instead of also waiting in memory.
func TestMaxAwaitingHoldsWhileJoinNextWritesAreOnTheirWay(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	conn := &firstJoinNextGate{joinNextGate{Service: env.Store, blocked: make(chan struct{}), open: make(chan struct{})}}
	w := env.NewWorker(conn, worker.Options{Concurrency: 2, MaxAwaiting: 1, PollWait: 50 * time.Millisecond,
		LockExpiry: time.Hour, AwaitWindow: time.Hour})
	worker.Workflow(w, "demo:test/wf.sleeper", func(wf *worker.Context, _ string) (string, error) {
		if err := wf.Sleep(time.Minute); err != nil {
			return "", err
		}
		return "slept", nil
	})
	first := env.Submit("demo:test/wf.sleeper", "")
	runInBackground(t, w)
	waitFor(t, conn.blocked, "the first JoinNext write")
	second := env.Submit("demo:test/wf.sleeper", "")
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, ev := range env.Log(second).Events {
			h, ok := ev.Event.(*core.HistoryEventRequest)
			if !ok {
				continue
			}
			if j, ok := h.Event.(*core.JoinNext); ok {
				close(conn.open)
				if j.RunExpiresAt.After(ev.CreatedAt) {
					t.Fatalf("the second sleeper waits in memory (run_expires_at %v after its write at %v) while the first holds the only MaxAwaiting place", j.RunExpiresAt, ev.CreatedAt)
				}
				if env.Log(first).PendingState.State == core.StateFinished {
					t.Fatal("the first sleeper finished before its minute")
				}
				return
			}
		}
		if time.Now().After(deadline) {
			close(conn.open)
			t.Fatal("the second sleeper wrote no JoinNext")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// firstJoinNextGate holds only the first JoinNext write (joinNextGate
// holds every one).
type firstJoinNextGate struct{ joinNextGate }

func (c *firstJoinNextGate) AppendBatch(ctx context.Context, now core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, v core.Version) (core.Version, error) {
	if h, ok := batch[len(batch)-1].Event.(*core.HistoryEventRequest); ok {
		if _, ok := h.Event.(*core.JoinNext); ok {
			first := false
			c.once.Do(func() { first = true; close(c.blocked) })
			if first {
				<-c.open
			}
		}
	}
	return c.Service.AppendBatch(ctx, now, batch, id, v)
}
