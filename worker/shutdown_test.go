package worker_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/httpapi"
	"github.com/stela-dev/stela/internal/backendtest"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/worker"
	"github.com/stela-dev/stela/worker/workertest"
)

// lateLockConn's first lock request commits its locks in the store, then
// answers only once the test lets it: like a long poll whose response is on
// its way while the worker stops. As the contract wants, the locks granted
// are returned even though the worker's context ended meanwhile.
type lateLockConn struct {
	*store.Service
	armed    atomic.Bool
	locked   chan struct{} // closed once the store granted the locks
	answer   chan struct{} // closed by the test: the answer arrives
	lockOnce sync.Once
}

func (c *lateLockConn) LockPending(ctx context.Context, req core.LockRequest, ffqns []core.FunctionFqn, wait time.Duration) ([]core.LockedExecution, error) {
	locked, err := c.Service.LockPending(ctx, req, ffqns, wait)
	if err != nil || len(locked) == 0 || !c.armed.CompareAndSwap(false, true) {
		return locked, err
	}
	c.lockOnce.Do(func() { close(c.locked) })
	<-c.answer
	return locked, nil
}

// lastEvent returns the execution's last event.
func lastEvent(t *testing.T, env *workertest.Env, id core.ExecutionId) core.ExecutionRequest {
	t.Helper()
	return env.Log(id).LastEvent().Event
}

// wantReleased fails unless the execution's last event is Unlocked with reason.
func wantReleased(t *testing.T, ev core.ExecutionRequest, reason string) {
	t.Helper()
	u, ok := ev.(*core.Unlocked)
	if !ok || u.Reason != reason {
		t.Fatalf("want Unlocked(%s) last, got %#v", reason, ev)
	}
}

// TestShutdownReleasesTheLocksOfItsLastPoll: the worker is told to stop
// while its lock request is on its way back with locks the store already
// granted. Those locks must be released (Unlocked "executor closing", so
// another worker takes the executions at once), not dropped with the
// request: an activity without retries used to finish `timed_out` a lease
// later with its body never run.
func TestShutdownReleasesTheLocksOfItsLastPoll(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	conn := &lateLockConn{Service: env.Store, locked: make(chan struct{}), answer: make(chan struct{})}
	a := env.NewWorker(conn, worker.Options{PollWait: 50 * time.Millisecond, LockExpiry: time.Minute})
	var ranOnA atomic.Int32
	worker.Activity(a, slowFFQN, func(context.Context, string) (string, error) { ranOnA.Add(1); return "A", nil },
		worker.RetryPolicy(0, time.Second))
	id := env.Submit(slowFFQN, "it")
	ctx, stop := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- a.Run(ctx) }()
	waitFor(t, conn.locked, "the lock to be granted")
	stop()             // SIGTERM while the answer is on its way
	close(conn.answer) // the answer arrives after the stop
	if err := waitFor(t, runDone, "Run to return"); err != nil {
		t.Fatal(err)
	}
	wantReleased(t, lastEvent(t, env, id), "executor closing")
	if n := ranOnA.Load(); n != 0 {
		t.Fatalf("a stopping worker ran %d activities it locked after the stop", n)
	}
	b := env.NewWorker(nil, worker.Options{})
	worker.Activity(b, slowFFQN, func(_ context.Context, s string) (string, error) { return "B did " + s, nil },
		worker.RetryPolicy(0, time.Second))
	if err := b.RunUntilIdle(context.Background()); err != nil { // no clock advance: pending at once
		t.Fatal(err)
	}
	if got, err := workertest.Result[string](env, id); err != nil || got != "B did it" {
		t.Fatalf("got %q, %v", got, err)
	}
}

// gateDB holds the first lock that finds work, server side, until the test
// opens the gate: the store then commits it whatever became of the
// request, as a lock racing a worker's SIGTERM does.
type gateDB struct {
	core.DbExternalApi
	armed  atomic.Bool
	inside chan struct{} // closed when the gated lock reached the store
	gate   chan struct{} // closed by the test
	done   chan struct{} // closed once the gated lock committed
}

func (g *gateDB) LockPendingByFFQNs(ctx context.Context, req core.LockRequest, ffqns []core.FunctionFqn) ([]core.LockedExecution, error) {
	if !g.armed.CompareAndSwap(false, true) {
		return g.DbExternalApi.LockPendingByFFQNs(ctx, req, ffqns)
	}
	close(g.inside)
	<-g.gate
	defer close(g.done)
	return g.DbExternalApi.LockPendingByFFQNs(context.Background(), req, ffqns)
}

// TestShutdownReleasesTheLocksOfItsLastPollOverHTTP is the same race over
// HTTP against the server: the worker stops while its long poll is in the
// server, which then locks an execution. The worker must wait for the
// answer (not cancel the request, which loses it) and release the lock.
func TestShutdownReleasesTheLocksOfItsLastPollOverHTTP(t *testing.T) {
	svc := backendtest.SQLite(t)
	db := &gateDB{DbExternalApi: svc, inside: make(chan struct{}), gate: make(chan struct{}), done: make(chan struct{})}
	srv := httptest.NewServer(httpapi.New(db, nil, httpapi.Options{Authorizer: httpapi.AllowAll(),
		FollowWait: 2 * time.Second, Logger: slog.New(slog.DiscardHandler)}))
	t.Cleanup(srv.Close)
	conn, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	a := worker.New(conn, worker.Options{PollWait: 2 * time.Second, LockExpiry: time.Minute})
	worker.Activity(a, slowFFQN, func(context.Context, string) (string, error) { return "A", nil }, worker.RetryPolicy(0, time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id, err := a.Submit(ctx, slowFFQN, "it")
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- a.Run(runCtx) }()
	waitFor(t, db.inside, "the lock request to reach the store")
	stop()
	close(db.gate)
	if err := waitFor(t, runDone, "Run to return"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, db.done, "the server to lock")
	log, err := svc.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if u, ok := log.LastEvent().Event.(*core.Unlocked); !ok || u.Reason != "executor closing" {
		t.Fatalf("want the lock granted during the stop released, got %#v last", log.LastEvent().Event)
	}
	b := worker.New(svc, worker.Options{})
	worker.Activity(b, slowFFQN, func(_ context.Context, s string) (string, error) { return "B did " + s, nil },
		worker.RetryPolicy(0, time.Second))
	if err := b.RunUntilIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := worker.Await[string](ctx, b, id); err != nil || got != "B did it" {
		t.Fatalf("got %q, %v", got, err)
	}
}

// lockOnceConn lets a worker lock only once: later lock requests find
// nothing (a worker busy elsewhere), so only another worker can resume
// what it gave back.
type lockOnceConn struct {
	*store.Service
	used atomic.Bool
}

func (c *lockOnceConn) LockPending(ctx context.Context, req core.LockRequest, ffqns []core.FunctionFqn, wait time.Duration) ([]core.LockedExecution, error) {
	if c.used.Load() {
		return []core.LockedExecution{}, nil
	}
	locked, err := c.Service.LockPending(ctx, req, ffqns, wait)
	if len(locked) > 0 {
		c.used.Store(true)
	}
	return locked, err
}

// signal returns a channel that receives every id f is called with.
func signal() (chan core.ExecutionId, func(core.ExecutionId)) {
	ch := make(chan core.ExecutionId, 16)
	return ch, func(id core.ExecutionId) { ch <- id }
}

// TestAwaitWindowGivesTheExecutionBack: a workflow waits for its child in
// memory for AwaitWindow, then parks. Its JoinNext kept the execution until
// the lease's end, so parking must give it back (Unlocked): when the
// child's response arrives later, any worker — here a second one, the
// first being busy — locks it at once, not a lease later. (A 6 s child
// used to resume the workflow 5 s late.)
func TestAwaitWindowGivesTheExecutionBack(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	a := env.NewWorker(&lockOnceConn{Service: env.Store}, worker.Options{LockExpiry: time.Hour,
		AwaitWindow: 20 * time.Millisecond, PollWait: 50 * time.Millisecond})
	a.Declare(answerFFQN, core.ComponentTypeActivity)
	ask := func(wf *worker.Context, _ worker.Unit) (int, error) { return worker.Call[int](wf, answerFFQN, nil) }
	worker.Workflow(a, askFFQN, ask)
	parked, onParked := signal()
	a.OnParked(onParked)
	id := env.Submit(askFFQN, nil)
	runFor(t, a)
	waitFor(t, parked, "the window to end without the response")
	wantReleased(t, lastEvent(t, env, id), "await window ended")

	b := env.NewWorker(nil, worker.Options{})
	worker.Activity(b, answerFFQN, func(context.Context, worker.Unit) (int, error) { return 42, nil })
	worker.Workflow(b, askFFQN, ask)
	if err := b.RunUntilIdle(context.Background()); err != nil { // the child, then (no clock advance) its parent
		t.Fatal(err)
	}
	if got, err := workertest.Result[int](env, id); err != nil || got != 42 {
		t.Fatalf("got %d, %v (%s)", got, err, env.Status(id))
	}
}

// TestShutdownReleasesAwaitingWorkflowsAtOnce: a worker stops while a
// workflow waits in memory for its child (a long window). The workflow must
// give its execution back at once — not after the window or the shutdown
// grace — so that another worker resumes it as soon as the child answers.
func TestShutdownReleasesAwaitingWorkflowsAtOnce(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	a := env.NewWorker(nil, worker.Options{LockExpiry: time.Hour, AwaitWindow: time.Hour,
		ShutdownGrace: time.Hour, PollWait: 50 * time.Millisecond})
	a.Declare(answerFFQN, core.ComponentTypeActivity)
	ask := func(wf *worker.Context, _ worker.Unit) (int, error) { return worker.Call[int](wf, answerFFQN, nil) }
	worker.Workflow(a, askFFQN, ask)
	awaiting, onAwaiting := signal()
	a.OnAwaiting(onAwaiting)
	id := env.Submit(askFFQN, nil)
	ctx, stop := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- a.Run(ctx) }()
	waitFor(t, awaiting, "the workflow to wait in memory")
	stop()
	if err := waitFor(t, runDone, "Run to return (the waiting workflow must not hold it)"); err != nil {
		t.Fatal(err)
	}
	wantReleased(t, lastEvent(t, env, id), "executor closing")

	b := env.NewWorker(nil, worker.Options{})
	worker.Activity(b, answerFFQN, func(context.Context, worker.Unit) (int, error) { return 42, nil })
	worker.Workflow(b, askFFQN, ask)
	if err := b.RunUntilIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, err := workertest.Result[int](env, id); err != nil || got != 42 {
		t.Fatalf("got %d, %v (%s)", got, err, env.Status(id))
	}
}
