// Package workertest runs workflows and activities written with package
// worker inside a test: an in-memory store, a simulated clock and a worker,
// without a server and without sleeping. Time moves only when the test
// calls Advance, which also fires the timers (delays, expired leases,
// cancellations) that became due.
//
//	env := workertest.New(t, worker.Options{})
//	worker.Activity(env.Worker, "demo:hello/greeter.greet", greet)
//	worker.Workflow(env.Worker, "demo:hello/workflow.twice", twice)
//	id := env.Submit("demo:hello/workflow.twice", "World")
//	env.Run()                  // runs until the workflow waits for its 1 s sleep
//	env.Advance(time.Second)   // the sleep fires; the workflow finishes
//	got, err := workertest.Result[string](env, id)
package workertest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/store/mem"
	"github.com/stela-dev/stela/worker"
)

// Start is the simulated clock's initial time.
var Start = core.TS(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))

// Clock is the simulated clock of an Env: a store.SimClock that also
// runs the timers the workers set (it is a worker.TimerClock: the cache's
// CacheTTL). Advance and Set fire the timers they move past, in deadline
// order, before returning.
type Clock struct {
	*store.SimClock
	mu     sync.Mutex
	timers []*simTimer
}

var _ worker.TimerClock = (*Clock)(nil)

type simTimer struct {
	at   core.Timestamp
	f    func()
	done bool
}

// AfterFunc implements worker.TimerClock: f runs once the clock is moved to
// d from now or later.
func (c *Clock) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	t := &simTimer{at: c.Now().Add(d), f: f}
	c.mu.Lock()
	c.timers = append(c.timers, t)
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		stopped := !t.done
		t.done = true
		return stopped
	}
}

// Advance moves the clock forward by d, fires the timers now due and
// returns the new time.
func (c *Clock) Advance(d time.Duration) core.Timestamp {
	now := c.SimClock.Advance(d)
	c.fire(now)
	return now
}

// Set moves the clock to ts and fires the timers now due.
func (c *Clock) Set(ts core.Timestamp) {
	c.SimClock.Set(ts)
	c.fire(ts)
}

// fire runs the timers due at now (earliest first), outside the lock: a
// timer may set another.
func (c *Clock) fire(now core.Timestamp) {
	for {
		c.mu.Lock()
		var next *simTimer
		live := c.timers[:0]
		for _, t := range c.timers {
			if t.done {
				continue
			}
			live = append(live, t)
			if !t.at.After(now) && (next == nil || t.at.Before(next.at)) {
				next = t
			}
		}
		c.timers = live
		if next != nil {
			next.done = true
		}
		c.mu.Unlock()
		if next == nil {
			return
		}
		next.f()
	}
}

// Env is one test's store, clock and worker.
type Env struct {
	t testing.TB
	// Clock is the simulated clock shared by the store and the workers.
	Clock *Clock
	// Store is the in-memory store.
	Store *store.Service
	// Worker is the worker to register functions on.
	Worker *worker.Worker
	// workers are Worker and those NewWorker returned.
	workers []*worker.Worker
}

// New returns an environment; opts configure the worker (its Clock is
// replaced by the simulated one). Everything is released when the test ends.
func New(t testing.TB, opts worker.Options) *Env {
	t.Helper()
	clock := &Clock{SimClock: store.NewSimClock(Start)}
	svc := store.New(mem.New(), store.Options{Clock: clock, PollInterval: 10 * time.Millisecond})
	opts.Clock = clock
	w := worker.New(svc, opts)
	t.Cleanup(func() {
		w.Close()
		_ = svc.Close()
	})
	return &Env{t: t, Clock: clock, Store: svc, Worker: w, workers: []*worker.Worker{w}}
}

func (e *Env) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	e.t.Cleanup(cancel)
	return ctx
}

// Submit creates a top-level execution of ffqn (params as for worker.Args)
// through Worker, or through the first worker of the environment that
// serves or declares ffqn (see worker.Worker.ComponentType) when Worker does
// not: the execution gets that component type.
func (e *Env) Submit(ffqn string, params any) core.ExecutionId {
	e.t.Helper()
	via := e.Worker
	if _, ok := via.ComponentType(ffqn); !ok {
		for _, w := range e.workers {
			if _, ok := w.ComponentType(ffqn); ok {
				via = w
				break
			}
		}
	}
	id, err := via.Submit(e.ctx(), ffqn, params)
	if err != nil {
		e.t.Fatalf("submit %s: %v", ffqn, err)
	}
	return id
}

// Run runs everything that is pending at the current simulated time, until
// nothing is left to do (workflows may be left waiting for a timer).
func (e *Env) Run() {
	e.t.Helper()
	if err := e.Worker.RunUntilIdle(e.ctx()); err != nil {
		e.t.Fatalf("run: %v", err)
	}
}

// Advance moves the clock by d, fires the timers that became due (delays,
// expired leases, cancellations) and runs what became pending.
func (e *Env) Advance(d time.Duration) {
	e.t.Helper()
	e.Clock.Advance(d)
	e.Sweep()
	e.Run()
}

// Sweep runs the server's timers once at the current simulated time.
func (e *Env) Sweep() {
	e.t.Helper()
	now := e.Clock.Now()
	if _, err := store.Sweep(e.ctx(), e.Store, now); err != nil {
		e.t.Fatalf("sweep: %v", err)
	}
	if _, err := store.DriveCancellations(e.ctx(), e.Store, now, 100); err != nil {
		e.t.Fatalf("cancellations: %v", err)
	}
}

// Status returns the execution's state.
func (e *Env) Status(id core.ExecutionId) core.PendingState {
	e.t.Helper()
	st, err := e.Store.GetPendingState(e.ctx(), id)
	if err != nil {
		e.t.Fatalf("status of %s: %v", id, err)
	}
	return st.PendingState
}

// Log returns the execution's events and responses.
func (e *Env) Log(id core.ExecutionId) *core.ExecutionLog {
	e.t.Helper()
	log, err := e.Store.Get(e.ctx(), id)
	if err != nil {
		e.t.Fatalf("log of %s: %v", id, err)
	}
	return log
}

// ReturnValue returns the finished execution's return value; the test
// fails if it is not finished.
func (e *Env) ReturnValue(id core.ExecutionId) core.ReturnValue {
	e.t.Helper()
	rv, ok := e.Log(id).FinishedResult()
	if !ok {
		e.t.Fatalf("%s is not finished: %s", id, e.Status(id))
	}
	return rv
}

// Result decodes the finished execution's Ok value into R, or returns its
// error (a *worker.ResultError); the test fails if it is not finished.
func Result[R any](e *Env, id core.ExecutionId) (R, error) {
	e.t.Helper()
	return worker.Decode[R](id, e.ReturnValue(id))
}

// NewWorker returns another worker on the same store and clock, over conn
// (nil: the store itself), e.g. to hand an execution from a crashed worker
// to a second one. Its cache is released when the test ends.
func (e *Env) NewWorker(conn worker.Conn, opts worker.Options) *worker.Worker {
	if conn == nil {
		conn = e.Store
	}
	opts.Clock = e.Clock
	w := worker.New(conn, opts)
	e.t.Cleanup(w.Close)
	e.workers = append(e.workers, w)
	return w
}
