package worker_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/internal/apitest"
	"github.com/stela-dev/stela/internal/backendtest"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/worker"
)

func countLocks(log *core.ExecutionLog) int {
	n := 0
	for _, e := range log.Events {
		if _, ok := e.Event.(*core.Locked); ok {
			n++
		}
	}
	return n
}

// runFor runs w until ctx's test ends.
func runFor(t *testing.T, w *worker.Worker) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}

// TestWorkflowWaitsInMemoryUnderRun: under Run a workflow awaiting its
// child's result (and a short sleep) stays subscribed and continues when
// the response arrives: one lock for the whole execution, and its JoinNexts
// carry the lease's expiry.
func TestWorkflowWaitsInMemoryUnderRun(t *testing.T) {
	svc := backendtest.SQLite(t)
	backendtest.Timers(t, svc, 20*time.Millisecond)
	w := worker.New(svc, worker.Options{LockExpiry: 20 * time.Second, PollWait: 200 * time.Millisecond})
	worker.Activity(w, greetFFQN, greet)
	worker.Workflow(w, twiceFFQN, func(wf *worker.Context, name string) (string, error) {
		a, err := worker.Call[string](wf, greetFFQN, name)
		if err != nil {
			return "", err
		}
		if err := wf.Sleep(50 * time.Millisecond); err != nil {
			return "", err
		}
		return worker.Call[string](wf, greetFFQN, a)
	})
	runFor(t, w)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id, err := w.Submit(ctx, twiceFFQN, "World")
	if err != nil {
		t.Fatal(err)
	}
	got, err := worker.Await[string](ctx, w, id)
	if err != nil || got != "Hello, Hello, World!!" {
		t.Fatalf("got %q, %v", got, err)
	}
	log, err := svc.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if n := countLocks(log); n != 1 {
		t.Errorf("the workflow was locked %d times, want once", n)
	}
	lock := log.Events[1].Event.(*core.Locked)
	for _, h := range log.EventHistory() {
		if j, ok := h.Event.(*core.JoinNext); ok && !j.RunExpiresAt.Equal(lock.LockExpiresAt) {
			t.Errorf("JoinNext at v%d: run_expires_at %s, want the lease's expiry %s", h.Version, j.RunExpiresAt, lock.LockExpiresAt)
		}
	}
}

// TestLongSleepParksAndResumes: a sleep longer than the await window gives
// the execution up (run_expires_at = now) and the run is resumed from the
// cache when the timer fires.
func TestLongSleepParksAndResumes(t *testing.T) {
	svc := backendtest.SQLite(t)
	backendtest.Timers(t, svc, 20*time.Millisecond)
	w := worker.New(svc, worker.Options{LockExpiry: 20 * time.Second, AwaitWindow: 10 * time.Millisecond,
		PollWait: 200 * time.Millisecond})
	calls := 0
	worker.Workflow(w, "demo:test/workflow.nap", func(wf *worker.Context, _ worker.Unit) (int, error) {
		calls++
		return calls, wf.Sleep(200 * time.Millisecond)
	})
	runFor(t, w)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id, err := w.Submit(ctx, "demo:test/workflow.nap", nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := worker.Await[int](ctx, w, id)
	if err != nil || got != 1 {
		t.Fatalf("got %d, %v (the run must resume from memory, not replay)", got, err)
	}
	log, err := svc.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if n := countLocks(log); n != 2 {
		t.Errorf("locked %d times, want twice (before and after the sleep)", n)
	}
	for _, h := range log.EventHistory() {
		if j, ok := h.Event.(*core.JoinNext); ok && !j.RunExpiresAt.Before(log.Events[1].Event.(*core.Locked).LockExpiresAt) {
			t.Errorf("a parking JoinNext must give the execution up at once, run_expires_at %s", j.RunExpiresAt)
		}
	}
}

// subscribeTimes records when each response subscription of an execution starts.
type subscribeTimes struct {
	*store.Service
	mu    sync.Mutex
	times []time.Time
}

func (c *subscribeTimes) SubscribeToNextResponses(ctx context.Context, id core.ExecutionId, last core.ResponseCursor) ([]core.ResponseWithCursor, error) {
	c.mu.Lock()
	c.times = append(c.times, time.Now())
	c.mu.Unlock()
	return c.Service.SubscribeToNextResponses(ctx, id, last)
}

// TestSleepInMemorySubscribesNearItsEnd: a workflow sleeping in memory
// does not hold a response subscription (a long poll, re-checked by the
// server) for the whole sleep: nothing but the timer answers it. With
// fire-and-continue (the default) the run goes on at the expiry and its
// Finished write fires the delay: no subscription at all. Without it the
// worker fires the delay at its expiry and is handed the response in
// memory, so it subscribes not at all (and never long before the expiry).
// Both continue without a new lock.
func TestSleepInMemorySubscribesNearItsEnd(t *testing.T) {
	for _, goOn := range []bool{true, false} {
		t.Run(map[bool]string{true: "fire-and-continue", false: "fire-then-continue"}[goOn], func(t *testing.T) {
			svc := backendtest.SQLite(t)
			backendtest.Timers(t, svc, 20*time.Millisecond)
			conn := &subscribeTimes{Service: svc}
			w := worker.New(conn, worker.Options{LockExpiry: 20 * time.Second, PollWait: 200 * time.Millisecond, NoFireAndContinue: !goOn})
			const nap = 300 * time.Millisecond
			worker.Workflow(w, "demo:test/workflow.nap", func(wf *worker.Context, _ worker.Unit) (worker.Unit, error) {
				return worker.Unit{}, wf.Sleep(nap)
			})
			runFor(t, w)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			id, err := w.Submit(ctx, "demo:test/workflow.nap", nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := worker.Await[worker.Unit](ctx, w, id); err != nil {
				t.Fatal(err)
			}
			log, err := svc.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if n := countLocks(log); n != 1 {
				t.Errorf("locked %d times, want once (the sleep is awaited in memory)", n)
			}
			expires := delayExpiry(log)
			if len(log.Responses) != 1 || !isFired(log.Responses[0]) {
				t.Fatalf("responses %+v, want the delay's DelayFinished(Ok)", log.Responses)
			}
			conn.mu.Lock()
			defer conn.mu.Unlock()
			// (The test's timers sweep may fire the delay first: the run
			// then subscribes once, near the expiry, or its Finished write
			// finds the delay fired.)
			inMemory := int(w.Stats().ResponsesInMemory)
			switch {
			case goOn && len(conn.times) != 0:
				t.Errorf("%d subscriptions; want none (the Finished write fires the delay)", len(conn.times))
			case !goOn && inMemory+len(conn.times) != 1:
				// The fire tells the cursor: the response is handed over.
				t.Errorf("%d responses handed in memory, %d subscriptions; want one of them", inMemory, len(conn.times))
			}
			// The lead is a few ms; a subscription started earlier waited for the timer.
			for _, at := range conn.times {
				if at.Before(expires.Add(-50 * time.Millisecond).Time) {
					t.Errorf("subscribed %s before the delay expired at %s", expires.Sub(at), expires)
				}
			}
		})
	}
}

// delayExpiry is the expiry of the last delay the log requested.
func delayExpiry(log *core.ExecutionLog) core.Timestamp {
	var expires core.Timestamp
	for _, h := range log.EventHistory() {
		if r, ok := h.Event.(*core.JoinSetRequestEvent); ok {
			expires = r.Request.(*core.DelayRequest).ExpiresAt
		}
	}
	return expires
}

// isFired reports whether r is a DelayFinished(Ok).
func isFired(r core.ResponseWithCursor) bool {
	d, ok := r.Event.Event.Event.(*core.DelayFinished)
	return ok && bool(d.Result)
}

// TestAwaitedSleepIsFiredByItsWorker: with no timers sweep running at all
// (on AWS the scheduled sweep runs once a minute), a sleep awaited in
// memory still ends at its expiry: the worker fires its own delay
// (core.DelayFirer), in-process and over HTTP, and the response is the one
// the sweep would write, stamped with the store's time at or after the
// expiry.
func TestAwaitedSleepIsFiredByItsWorker(t *testing.T) {
	for _, transport := range []string{"in-process", "http"} {
		t.Run(transport, func(t *testing.T) {
			svc := backendtest.SQLite(t) // no backendtest.Timers: nothing else fires delays
			var conn worker.Conn = svc
			if transport == "http" {
				c, err := client.New(apitest.Server(t, svc))
				if err != nil {
					t.Fatal(err)
				}
				conn = c
			}
			w := worker.New(conn, worker.Options{LockExpiry: 20 * time.Second, PollWait: 200 * time.Millisecond})
			const nap = 80 * time.Millisecond
			worker.Workflow(w, "demo:test/workflow.nap", func(wf *worker.Context, _ worker.Unit) (worker.Unit, error) {
				return worker.Unit{}, wf.Sleep(nap)
			})
			runFor(t, w)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // the sleep is 80 ms; without the fire it never ends
			defer cancel()
			id, err := w.Submit(ctx, "demo:test/workflow.nap", nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := worker.Await[worker.Unit](ctx, w, id); err != nil {
				t.Fatal(err)
			}
			w.WaitRuns() // the Finished write fires the delay: its answer may follow Await's read
			if n := w.Stats().DelaysFired; n != 1 {
				t.Errorf("Stats().DelaysFired = %d, want 1", n)
			}
			log, err := svc.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if n := countLocks(log); n != 1 {
				t.Errorf("locked %d times, want once (the sleep is awaited in memory)", n)
			}
			expires := delayExpiry(log)
			if len(log.Responses) != 1 {
				t.Fatalf("%d responses, want 1", len(log.Responses))
			}
			r := log.Responses[0].Event
			if d, ok := r.Event.Event.(*core.DelayFinished); !ok || !bool(d.Result) {
				t.Fatalf("response %#v, want a fired DelayFinished", r.Event.Event)
			}
			if r.CreatedAt.Before(expires) {
				t.Errorf("fired at %s, before the expiry %s", r.CreatedAt, expires)
			}
		})
	}
}
