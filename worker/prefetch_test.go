package worker_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/worker"
	"github.com/stela-dev/stela/worker/workertest"
)

// gatedActivity reports each run's input on started and returns once it
// takes a token from proceed; most is the largest number running at once.
type gatedActivity struct {
	started chan string
	proceed chan struct{}
	running atomic.Int32
	most    atomic.Int32
}

func newGated() *gatedActivity {
	return &gatedActivity{started: make(chan string, 64), proceed: make(chan struct{}, 64)}
}

func (g *gatedActivity) fn(ctx context.Context, s string) (string, error) {
	r := g.running.Add(1)
	defer g.running.Add(-1)
	for m := g.most.Load(); r > m && !g.most.CompareAndSwap(m, r); m = g.most.Load() {
	}
	g.started <- s
	select {
	case <-g.proceed:
		return s, nil
	case <-ctx.Done():
		return "", context.Cause(ctx)
	}
}

// lockCount is how many Locked events id's log holds.
func lockCount(env *workertest.Env, id core.ExecutionId) int {
	return len(lockedEvents(env.Log(id)))
}

// TestPrefetchLocksAheadOfTheSlots: while a backlog lasts, the lock
// request sent when a slot frees also asks for one more execution per free
// slot, which waits in the worker for the next slot and then runs without
// a lock request of its own; Concurrency still bounds what runs. With
// NoPrefetch the request asks only for the free slot.
func TestPrefetchLocksAheadOfTheSlots(t *testing.T) {
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("NoPrefetch=%v", off), func(t *testing.T) {
			const conc, n = 2, 6
			env := workertest.New(t, worker.Options{})
			conn := &lockRecorder{Service: env.Store, longPollNew: make(chan struct{}, 1)}
			finished := make(chan core.ExecutionId, n)
			w := env.NewWorker(conn, worker.Options{Concurrency: conc, NoPrefetch: off, LockExpiry: time.Hour,
				OnFinished: func(id core.ExecutionId, _ core.ReturnValue) { finished <- id }})
			g := newGated()
			worker.Activity(w, slowFFQN, g.fn)
			ids := make([]core.ExecutionId, n)
			for i := range ids {
				ids[i] = env.Submit(slowFFQN, strconv.Itoa(i))
			}
			stop := runInBackground(t, w)
			defer stop()
			started := map[string]bool{}
			for range conc {
				started[waitFor(t, g.started, "the first runs")] = true
			}
			// One run ends: its slot frees while the backlog lasts.
			g.proceed <- struct{}{}
			started[waitFor(t, g.started, "the run on the freed slot")] = true
			// The answer that brought that run also brought the
			// prefetched one (when on): it is locked, not running.
			lockedIdle := 0
			for i, id := range ids {
				if !started[strconv.Itoa(i)] && lockCount(env, id) > 0 {
					lockedIdle++
				}
			}
			if want := map[bool]int{false: 1, true: 0}[off]; lockedIdle != want {
				t.Fatalf("%d executions locked to the worker and not running while %d run, want %d", lockedIdle, conc, want)
			}
			if m := g.most.Load(); m > conc {
				t.Fatalf("%d runs at once, concurrency %d", m, conc)
			}
			for range n {
				g.proceed <- struct{}{}
			}
			for range n {
				waitFor(t, finished, "every execution to finish")
			}
			if m := g.most.Load(); m > conc {
				t.Fatalf("%d runs at once, concurrency %d", m, conc)
			}
			for _, id := range ids {
				if c := lockCount(env, id); c != 1 {
					t.Fatalf("%s was locked %d times, want once (history %v)", id, c, variants(env.Log(id)))
				}
			}
			conn.mu.Lock()
			defer conn.mu.Unlock()
			for i, wt := range conn.waits {
				if limit := uint32(map[bool]int{false: 2 * conc, true: conc}[off]); wt == 0 && conn.sizes[i] > limit {
					t.Errorf("burst request %d asked for %d, more than %d", i, conn.sizes[i], limit)
				}
			}
		})
	}
}

// TestPrefetchedLockIsReleasedWhenNoSlotFrees: a prefetched execution
// whose slot does not free within half its lease is released (Unlocked
// "no free slot") for any worker to take, then locked again and run once a
// slot frees.
func TestPrefetchedLockIsReleasedWhenNoSlotFrees(t *testing.T) {
	const lease = 400 * time.Millisecond
	env := workertest.New(t, worker.Options{})
	finished := make(chan core.ExecutionId, 3)
	conn := &unlockSpy{Service: env.Store, unlocked: make(chan core.ExecutionId, 4)}
	w := env.NewWorker(conn, worker.Options{Concurrency: 1, LockExpiry: lease,
		OnFinished: func(id core.ExecutionId, _ core.ReturnValue) { finished <- id }})
	g := newGated()
	worker.Activity(w, slowFFQN, g.fn)
	ids := make([]core.ExecutionId, 3)
	for i := range ids {
		ids[i] = env.Submit(slowFFQN, strconv.Itoa(i))
	}
	stop := runInBackground(t, w)
	defer stop()
	first := waitFor(t, g.started, "the first run")
	g.proceed <- struct{}{}
	second := waitFor(t, g.started, "the second run")
	idle := -1
	for i := range ids {
		if s := strconv.Itoa(i); s != first && s != second {
			idle = i
		}
	}
	// The third was prefetched with the second; no slot frees while the
	// second runs, so after half the lease it is given back.
	if got := waitFor(t, conn.unlocked, "the prefetched execution's release"); got != ids[idle] {
		t.Fatalf("%s released, want %s", got, ids[idle])
	}
	g.proceed <- struct{}{}
	if got := waitFor(t, g.started, "the released execution to run"); got != strconv.Itoa(idle) {
		t.Fatalf("run %s started, want %d", got, idle)
	}
	g.proceed <- struct{}{}
	for range ids {
		waitFor(t, finished, "every execution to finish")
	}
	log := env.Log(ids[idle])
	want := []string{"created", "locked", "unlocked", "locked", "finished"}
	if got := variants(log); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("history %v, want %v", got, want)
	}
	if u := log.Events[2].Event.(*core.Unlocked); u.Reason != "no free slot" {
		t.Fatalf("unlocked for %q, want %q", u.Reason, "no free slot")
	}
}

// unlockSpy reports the executions the worker releases (Unlocked appended).
type unlockSpy struct {
	*store.Service
	unlocked chan core.ExecutionId
}

func (c *unlockSpy) Append(ctx context.Context, id core.ExecutionId, v core.Version, req core.AppendRequest) (core.Version, error) {
	next, err := c.Service.Append(ctx, id, v, req)
	if _, ok := req.Event.(*core.Unlocked); ok && err == nil {
		c.unlocked <- id
	}
	return next, err
}

// TestFanOutPrefetchesChildrenBeyondTheFreeSlots: on a worker of
// concurrency 2 (one slot held by the workflow), a fan-out of 4 is created
// with every child locked to the worker: one on the free slot, one on the
// slot the parent gives up when it waits, two prefetched to wait for a
// slot. No poll takes any child, and no more than 2 run at once. With
// NoPrefetch the two others are polled.
func TestFanOutPrefetchesChildrenBeyondTheFreeSlots(t *testing.T) {
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("NoPrefetch=%v", off), func(t *testing.T) {
			env := workertest.New(t, worker.Options{})
			conn := &pollCounter{Service: env.Store}
			w := env.NewWorker(conn, worker.Options{Concurrency: 2, NoPrefetch: off})
			var running, most atomic.Int32
			worker.Activity(w, greetFFQN, func(ctx context.Context, name string) (string, error) {
				r := running.Add(1)
				defer running.Add(-1)
				for m := most.Load(); r > m && !most.CompareAndSwap(m, r); m = most.Load() {
				}
				return greet(ctx, name)
			})
			worker.Workflow(w, fanFFQN, greetAll)
			id := env.Submit(fanFFQN, 4)
			if err := w.RunUntilIdle(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got, err := workertest.Result[int](env, id); err != nil || got != 4*len("Hello, 0!") {
				t.Fatalf("got %d, %v", got, err)
			}
			eager, polled := w.Stats().Eager, conn.children.Load()
			want := map[bool][2]int64{false: {4, 0}, true: {2, 2}}[off]
			if eager != want[0] || int64(polled) != want[1] {
				t.Fatalf("%d eager runs, %d children polled; want %d and %d", eager, polled, want[0], want[1])
			}
			if m := most.Load(); m > 2 {
				t.Fatalf("%d children ran at once, concurrency 2", m)
			}
			for _, c := range childrenOf(t, env, id, 4) {
				if n := lockCount(env, c); n != 1 {
					t.Fatalf("child %s was locked %d times, want once (history %v)", c, n, variants(env.Log(c)))
				}
			}
		})
	}
}
