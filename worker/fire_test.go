package worker_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/httpapi"
	"github.com/stela-dev/stela/internal/backendtest"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/wire"
	"github.com/stela-dev/stela/worker"
)

// fireConn counts a worker's fires and lets a test act just before a
// fire-and-continue write reaches the store (a sweep or a cancellation
// winning the race), or answer it not_due (a store whose clock is behind).
type fireConn struct {
	*store.Service
	before      func(delay core.DelayId)
	notDue      atomic.Int32 // answer not_due this many times first
	fireAppends atomic.Int32
	fires       atomic.Int32
}

func (c *fireConn) AppendBatchFiringDelay(ctx context.Context, now core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, version core.Version, delay core.DelayId) (core.FireAppendAnswer, error) {
	c.fireAppends.Add(1)
	if c.notDue.Add(-1) >= 0 {
		return core.FireAppendAnswer{DelayFireAnswer: core.DelayFireAnswer{Outcome: core.DelayFireNotDue}}, nil
	}
	if c.before != nil {
		c.before(delay)
	}
	return c.Service.AppendBatchFiringDelay(ctx, now, batch, id, version, delay)
}

func (c *fireConn) FireDelay(ctx context.Context, delay core.DelayId) (core.DelayFireAnswer, error) {
	c.fires.Add(1)
	return c.Service.FireDelay(ctx, delay)
}

const napFFQN = "demo:test/workflow.nap"

// nap sleeps 50 ms and tells whether the sleep ended or was cancelled.
func nap(wf *worker.Context, _ worker.Unit) (string, error) {
	err := wf.Sleep(50 * time.Millisecond)
	if errors.Is(err, worker.ErrDelayCancelled) {
		return "cancelled", nil
	}
	return "slept", err
}

// runNap runs nap once on a worker over conn and returns its result and log.
func runNap(t *testing.T, conn *fireConn, opts worker.Options) (string, *core.ExecutionLog) {
	t.Helper()
	opts.LockExpiry, opts.PollWait = 20*time.Second, 100*time.Millisecond
	w := worker.New(conn, opts)
	worker.Workflow(w, napFFQN, nap)
	runFor(t, w)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id, err := w.Submit(ctx, napFFQN, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := worker.Await[string](ctx, w, id)
	if err != nil {
		t.Fatal(err)
	}
	log, err := conn.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return got, log
}

// unlockReasons returns the reasons of id's Unlocked events.
func unlockReasons(log *core.ExecutionLog) []string {
	var out []string
	for _, e := range log.Events {
		if u, ok := e.Event.(*core.Unlocked); ok {
			out = append(out, u.Reason)
		}
	}
	return out
}

// TestFireAndContinueFiresWithTheNextWrite: a sleep awaited in memory goes
// on at its expiry, and the run's Finished write fires the delay in the
// same commit: one fire-and-append request, no fire of its own, one lock,
// and the store holds the delay's DelayFinished(Ok), stamped at or after
// the expiry. With NoFireAndContinue the run fires first (FireDelay). No
// timers sweep runs: only the worker can fire the delay.
func TestFireAndContinueFiresWithTheNextWrite(t *testing.T) {
	for _, off := range []bool{false, true} {
		t.Run(map[bool]string{false: "on", true: "off"}[off], func(t *testing.T) {
			conn := &fireConn{Service: backendtest.SQLite(t)}
			got, log := runNap(t, conn, worker.Options{NoFireAndContinue: off})
			if got != "slept" {
				t.Fatalf("result %q, want slept", got)
			}
			wantAppends, wantFires := int32(1), int32(0)
			if off {
				wantAppends, wantFires = 0, 1
			}
			if a, f := conn.fireAppends.Load(), conn.fires.Load(); a != wantAppends || f != wantFires {
				t.Errorf("%d fire-and-append writes and %d fires, want %d and %d", a, f, wantAppends, wantFires)
			}
			if n := countLocks(log); n != 1 {
				t.Errorf("locked %d times, want once", n)
			}
			if r := unlockReasons(log); len(r) != 0 {
				t.Errorf("unlocked %v, want never", r)
			}
			expires := delayExpiry(log)
			if len(log.Responses) != 1 || !isFired(log.Responses[0]) {
				t.Fatalf("responses %+v, want one DelayFinished(Ok)", log.Responses)
			}
			if at := log.Responses[0].Event.CreatedAt; at.Before(expires) {
				t.Errorf("fired at %s, before the expiry %s", at, expires)
			}
		})
	}
}

// TestFireAndContinueWhenTheSweepFiredFirst: the sweep fires the delay just
// before the run's write: the write finds it fired (answered) and appends
// the events alone. One response, one lock, no give-back.
func TestFireAndContinueWhenTheSweepFiredFirst(t *testing.T) {
	conn := &fireConn{Service: backendtest.SQLite(t)}
	conn.before = func(delay core.DelayId) {
		owner, js := delay.SplitToParts()
		if _, err := conn.AppendDelayResponse(context.Background(), core.TS(time.Now()), owner, js, delay, true); err != nil {
			t.Error(err)
		}
	}
	got, log := runNap(t, conn, worker.Options{})
	if got != "slept" {
		t.Fatalf("result %q, want slept", got)
	}
	if n := countLocks(log); n != 1 {
		t.Errorf("locked %d times, want once", n)
	}
	if len(log.Responses) != 1 || !isFired(log.Responses[0]) {
		t.Errorf("responses %+v, want the sweep's DelayFinished(Ok) alone", log.Responses)
	}
	if r := unlockReasons(log); len(r) != 0 {
		t.Errorf("unlocked %v, want never", r)
	}
}

// TestFireAndContinueGivesBackACancelledDelay: the delay is cancelled just
// before the run's write, so the run went on after a sleep that did not
// end: the write is refused (nothing of the events after the sleep is
// stored), the execution is given back, and the next run replays the
// cancellation: the workflow sees ErrDelayCancelled, as it would have
// without fire-and-continue.
func TestFireAndContinueGivesBackACancelledDelay(t *testing.T) {
	conn := &fireConn{Service: backendtest.SQLite(t)}
	conn.before = func(delay core.DelayId) {
		if _, err := core.CancelDelay(context.Background(), conn.Service, delay, core.TS(time.Now())); err != nil {
			t.Error(err)
		}
	}
	got, log := runNap(t, conn, worker.Options{})
	if got != "cancelled" {
		t.Fatalf("result %q, want cancelled (the replay of the cancelled delay)", got)
	}
	if r := unlockReasons(log); len(r) != 1 || r[0] != "awaited delay did not fire" {
		t.Errorf("unlocked %q, want once, the delay not fired", r)
	}
	if n := countLocks(log); n != 2 {
		t.Errorf("locked %d times, want twice (the run given back, then its replay)", n)
	}
	if len(log.Responses) != 1 || isFired(log.Responses[0]) {
		t.Errorf("responses %+v, want the cancellation alone", log.Responses)
	}
	if conn.fireAppends.Load() != 1 {
		t.Errorf("%d fire-and-append writes, want 1 (the replay has the response)", conn.fireAppends.Load())
	}
}

// TestFireAndContinueAsksAgainWhileNotDue: a store whose clock is behind
// the worker's answers not_due; the write is asked again after short
// pauses and then fires. When the delay stays not due (paused at the
// store), the run gives the execution back and the sweep's fire is
// replayed by the next run.
func TestFireAndContinueAsksAgainWhileNotDue(t *testing.T) {
	t.Run("then due", func(t *testing.T) {
		conn := &fireConn{Service: backendtest.SQLite(t)}
		conn.notDue.Store(2)
		got, log := runNap(t, conn, worker.Options{})
		if got != "slept" || countLocks(log) != 1 || conn.fireAppends.Load() != 3 {
			t.Errorf("result %q, %d locks, %d fire-and-append writes; want slept, 1, 3", got, countLocks(log), conn.fireAppends.Load())
		}
	})
	t.Run("never due", func(t *testing.T) {
		svc := backendtest.SQLite(t)
		backendtest.Timers(t, svc, 20*time.Millisecond)
		conn := &fireConn{Service: svc}
		conn.notDue.Store(1 << 20)
		got, log := runNap(t, conn, worker.Options{})
		if got != "slept" {
			t.Fatalf("result %q, want slept (the sweep's fire, replayed)", got)
		}
		if r := unlockReasons(log); len(r) != 1 || r[0] != "awaited delay did not fire" {
			t.Errorf("unlocked %q, want once, the delay not fired", r)
		}
		if n := countLocks(log); n != 2 {
			t.Errorf("locked %d times, want twice", n)
		}
		if len(log.Responses) != 1 || !isFired(log.Responses[0]) {
			t.Errorf("responses %+v, want the sweep's DelayFinished(Ok)", log.Responses)
		}
	})
}

// TestFireAndContinueBeforeAWriteThatCannotCarryIt: a child workflow whose
// sleep is followed by its Finished (respond-to-parent) and a workflow
// whose sleep is followed by a fan-out (create-children) fire the delay on
// its own first (FireDelay), then write: the results are right and no
// fire-and-append write is made.
func TestFireAndContinueBeforeAWriteThatCannotCarryIt(t *testing.T) {
	const parentFFQN, childFFQN = "demo:test/workflow.parent", "demo:test/workflow.napper"
	conn := &fireConn{Service: backendtest.SQLite(t)}
	w := worker.New(conn, worker.Options{LockExpiry: 20 * time.Second, PollWait: 100 * time.Millisecond})
	worker.Activity(w, greetFFQN, greet)
	worker.Workflow(w, childFFQN, func(wf *worker.Context, _ worker.Unit) (string, error) {
		if err := wf.Sleep(50 * time.Millisecond); err != nil {
			return "", err
		}
		return "child slept", nil
	})
	worker.Workflow(w, parentFFQN, func(wf *worker.Context, _ worker.Unit) (string, error) {
		a, err := worker.Call[string](wf, childFFQN, worker.Unit{})
		if err != nil {
			return "", err
		}
		if err := wf.Sleep(50 * time.Millisecond); err != nil {
			return "", err
		}
		n, err := greetAll(wf, 3)
		if err != nil {
			return "", err
		}
		if n != 3*len("Hello, 0!") {
			t.Errorf("greeted %d bytes", n)
		}
		return a, nil
	})
	runFor(t, w)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id, err := w.Submit(ctx, parentFFQN, worker.Unit{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := worker.Await[string](ctx, w, id)
	if err != nil || got != "child slept" {
		t.Fatalf("got %q, %v", got, err)
	}
	if a, f := conn.fireAppends.Load(), conn.fires.Load(); a != 0 || f != 2 {
		t.Errorf("%d fire-and-append writes and %d fires, want 0 and 2", a, f)
	}
	log, err := conn.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if n := countLocks(log); n != 1 {
		t.Errorf("parent locked %d times, want once", n)
	}
}

// TestFireAndContinueOnAServerWithoutTheRoute: against a server that does
// not know the fire-and-append route, the client fires and then appends
// (two requests) after the first refusal, and asks the route no more:
// sleeps still end at their expiry, in one lock.
func TestFireAndContinueOnAServerWithoutTheRoute(t *testing.T) {
	svc := backendtest.SQLite(t)
	// A server that predates the route answers the mux's 404.
	old := &oldServer{h: httpapi.New(svc, nil, httpapi.Options{Authorizer: httpapi.AllowAll(), FollowWait: 2 * time.Second}),
		path: wire.PathWorkerFireAppend, status: http.StatusNotFound, answer: `{"err":"not found"}`}
	srv := httptest.NewServer(old)
	t.Cleanup(srv.Close)
	conn, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	w := worker.New(conn, worker.Options{LockExpiry: 20 * time.Second, PollWait: 100 * time.Millisecond})
	worker.Workflow(w, napFFQN, nap)
	runFor(t, w)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for range 2 {
		id, err := w.Submit(ctx, napFFQN, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := worker.Await[string](ctx, w, id); err != nil || got != "slept" {
			t.Fatalf("got %q, %v", got, err)
		}
		log, err := svc.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if n := countLocks(log); n != 1 || len(log.Responses) != 1 || !isFired(log.Responses[0]) {
			t.Errorf("%d locks, responses %+v; want 1 lock and the delay fired", n, log.Responses)
		}
	}
	if n := old.refused.Load(); n != 1 {
		t.Errorf("the route was refused %d times, want once (then the client stops asking)", n)
	}
}
