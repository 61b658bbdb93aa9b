package worker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/httpapi"
	"github.com/stela-dev/stela/internal/apitest"
	"github.com/stela-dev/stela/internal/backendtest"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/wire"
	"github.com/stela-dev/stela/worker"
	"github.com/stela-dev/stela/worker/workertest"
)

const fanFFQN = "demo:test/workflow.fan"

// pollCounter counts the children a lock request (a poll) locked.
type pollCounter struct {
	*store.Service
	children atomic.Int32
}

func (c *pollCounter) LockPending(ctx context.Context, req core.LockRequest, ffqns []core.FunctionFqn, wait time.Duration) ([]core.LockedExecution, error) {
	locked, err := c.Service.LockPending(ctx, req, ffqns, wait)
	for _, le := range locked {
		if le.Parent != nil {
			c.children.Add(1)
		}
	}
	return locked, err
}

// childrenOf returns the children of parent (in creation order).
func childrenOf(t *testing.T, env *workertest.Env, parent core.ExecutionId, n int) []core.ExecutionId {
	t.Helper()
	out := make([]core.ExecutionId, 0, n)
	for _, ev := range env.Log(parent).Events {
		if h, ok := ev.Event.(*core.HistoryEventRequest); ok {
			if j, ok := h.Event.(*core.JoinSetRequestEvent); ok {
				if c, ok := j.Request.(*core.ChildExecutionRequest); ok {
					out = append(out, c.ChildExecutionID.ExecutionId)
				}
			}
		}
	}
	if len(out) != n {
		t.Fatalf("%s created %d children, want %d", parent, len(out), n)
	}
	return out
}

// lockedEvents returns the Locked events of id's log.
func lockedEvents(log *core.ExecutionLog) []*core.Locked {
	var out []*core.Locked
	for _, ev := range log.Events {
		if l, ok := ev.Event.(*core.Locked); ok {
			out = append(out, l)
		}
	}
	return out
}

// TestEagerChildrenRunWithoutAPoll: the children of a fan-out whose
// function the worker serves are created locked to it by the write that
// creates them ([Created, Locked] at versions 0 and 1) and run at once: no
// lock request takes any of them. With NoEagerDispatch every child is
// taken by a poll instead.
func TestEagerChildrenRunWithoutAPoll(t *testing.T) {
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("NoEagerDispatch=%v", off), func(t *testing.T) {
			env := workertest.New(t, worker.Options{})
			conn := &pollCounter{Service: env.Store}
			w := env.NewWorker(conn, worker.Options{NoEagerDispatch: off})
			worker.Activity(w, greetFFQN, greet)
			worker.Workflow(w, fanFFQN, greetAll)
			id := env.Submit(fanFFQN, 5)
			if err := w.RunUntilIdle(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got, err := workertest.Result[int](env, id); err != nil || got != 5*len("Hello, 0!") {
				t.Fatalf("got %d, %v", got, err)
			}
			eager, polled := w.Stats().Eager, conn.children.Load()
			if off {
				if eager != 0 || polled != 5 {
					t.Fatalf("eager dispatch off: %d eager runs, %d children polled; want 0 and 5", eager, polled)
				}
				return
			}
			if eager != 5 || polled != 0 {
				t.Fatalf("%d eager runs, %d children polled; want 5 and 0", eager, polled)
			}
			for _, c := range childrenOf(t, env, id, 5) {
				log := env.Log(c)
				if v := log.Events[1]; v.Version != 1 || v.Event.Variant() != "locked" {
					t.Fatalf("child %s event 1 is %s, want locked", c, v.Event.Variant())
				}
				if n := len(lockedEvents(log)); n != 1 {
					t.Fatalf("child %s was locked %d times, want once", c, n)
				}
			}
		})
	}
}

// dropFirstReply forwards requests to the server and, the first time a
// create-children request asks for eager locks, throws the answer away
// and fails as a connection reset after the request was sent would: the
// write committed, the worker never heard of it.
type dropFirstReply struct {
	dropped  atomic.Bool
	attempts atomic.Int32 // create-children requests with eager locks
}

func (d *dropFirstReply) RoundTrip(r *http.Request) (*http.Response, error) {
	eager := false
	if r.URL.Path == wire.PathWorkerCreateChildren && r.Body != nil {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		eager = bytes.Contains(body, []byte(`"lock":[`))
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if !eager || err != nil {
		return resp, err
	}
	d.attempts.Add(1)
	if d.dropped.CompareAndSwap(false, true) {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return nil, errors.New("test: connection reset after the request was sent")
	}
	return resp, nil
}

// TestEagerLockSurvivesALostAnswer: the answer of an eager create-children
// write is lost after the commit; the client sends the same request again
// and the store answers it the same locks, so the worker runs every child
// at once, each locked exactly once (nothing left locked to nobody until a
// lease expires).
func TestEagerLockSurvivesALostAnswer(t *testing.T) {
	svc := backendtest.SQLite(t)
	url := apitest.Server(t, svc)
	drop := &dropFirstReply{}
	conn, err := client.New(url, client.WithHTTPClient(&http.Client{Transport: drop}))
	if err != nil {
		t.Fatal(err)
	}
	w := worker.New(conn, worker.Options{LockExpiry: time.Hour}) // an expiry would not come within the test
	worker.Activity(w, greetFFQN, greet)
	worker.Workflow(w, fanFFQN, greetAll)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id, err := w.Submit(ctx, fanFFQN, 4)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.RunUntilIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if !drop.dropped.Load() || drop.attempts.Load() < 2 {
		t.Fatalf("dropped %v after %d eager requests: the test did not lose an answer", drop.dropped.Load(), drop.attempts.Load())
	}
	if got, err := worker.Await[int](ctx, w, id); err != nil || got != 4*len("Hello, 0!") {
		t.Fatalf("got %d, %v", got, err)
	}
	if n := w.Stats().Eager; n != 4 {
		t.Fatalf("%d eager runs, want 4 (the retry answers the same locks)", n)
	}
	log, err := svc.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range log.Events {
		h, ok := ev.Event.(*core.HistoryEventRequest)
		if !ok {
			continue
		}
		j, ok := h.Event.(*core.JoinSetRequestEvent)
		if !ok {
			continue
		}
		c := j.Request.(*core.ChildExecutionRequest).ChildExecutionID.ExecutionId
		cl, err := svc.Get(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(lockedEvents(cl)); n != 1 {
			t.Fatalf("child %s was locked %d times, want once", c, n)
		}
	}
}

// lateEagerConn commits the first eager create-children write, then
// answers only once the test lets it: the answer arrives while the worker
// is stopping.
type lateEagerConn struct {
	*store.Service
	armed     atomic.Bool
	committed chan struct{}
	answer    chan struct{}
}

func (c *lateEagerConn) AppendBatchCreateNewExecutionLocked(ctx context.Context, now core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, v core.Version, children []core.CreateRequest, bts []core.BacktraceInfo, locks []core.EagerLock) (core.Version, []core.LockedExecution, error) {
	next, locked, err := c.Service.AppendBatchCreateNewExecutionLocked(ctx, now, batch, id, v, children, bts, locks)
	if err != nil || len(locked) == 0 || !c.armed.CompareAndSwap(false, true) {
		return next, locked, err
	}
	close(c.committed)
	<-c.answer
	return next, locked, nil
}

// TestShutdownReleasesEagerLocks: the store locks children eagerly to a
// worker whose stop begins before the answer arrives; the worker runs none
// of them and releases each at once (Unlocked "executor closing"), so
// another worker runs them without waiting for a lease to expire.
func TestShutdownReleasesEagerLocks(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	conn := &lateEagerConn{Service: env.Store, committed: make(chan struct{}), answer: make(chan struct{})}
	a := env.NewWorker(conn, worker.Options{PollWait: 50 * time.Millisecond, LockExpiry: time.Hour, ShutdownGrace: time.Second})
	var ranOnA atomic.Int32
	worker.Activity(a, greetFFQN, func(context.Context, string) (string, error) { ranOnA.Add(1); return "A", nil })
	worker.Workflow(a, fanFFQN, greetAll)
	id := env.Submit(fanFFQN, 3)
	ctx, stop := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- a.Run(ctx) }()
	waitFor(t, conn.committed, "the eager write to commit")
	stop()
	waitFor(t, a.Stopping(), "the worker to begin stopping")
	close(conn.answer)
	if err := waitFor(t, runDone, "Run to return"); err != nil {
		t.Fatal(err)
	}
	if n := ranOnA.Load(); n != 0 {
		t.Fatalf("a stopping worker ran %d children locked to it", n)
	}
	children := childrenOf(t, env, id, 3)
	for _, c := range children {
		wantReleased(t, lastEvent(t, env, c), "executor closing")
	}
	b := env.NewWorker(nil, worker.Options{})
	worker.Activity(b, greetFFQN, greet)
	worker.Workflow(b, fanFFQN, greetAll)
	if err := b.RunUntilIdle(context.Background()); err != nil { // no clock advance: nothing waits for an expiry
		t.Fatal(err)
	}
	if got, err := workertest.Result[int](env, id); err != nil || got != 3*len("Hello, 0!") {
		t.Fatalf("got %d, %v", got, err)
	}
}

// otherDigestConn creates the children of an eager write with another
// build's component digest (as if their function resolved to another
// build), keeping the locks the worker asked for.
type otherDigestConn struct {
	*store.Service
	digest core.ComponentDigest
}

func (c *otherDigestConn) AppendBatchCreateNewExecutionLocked(ctx context.Context, now core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, v core.Version, children []core.CreateRequest, bts []core.BacktraceInfo, locks []core.EagerLock) (core.Version, []core.LockedExecution, error) {
	moved := make([]core.CreateRequest, len(children))
	for i, ch := range children {
		ch.ComponentID.ComponentDigest = c.digest
		moved[i] = ch
	}
	return c.Service.AppendBatchCreateNewExecutionLocked(ctx, now, batch, id, v, moved, bts, locks)
}

// TestPinnedWorkerNeverGetsEagerChildrenOfAnotherDigest: a pinned worker's
// eager lock takes only children of its own digest; children created with
// another build's digest stay pending for that build, and the pinned
// worker never runs them.
func TestPinnedWorkerNeverGetsEagerChildrenOfAnotherDigest(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	var other core.ComponentDigest
	other.Digest[0] = 0xee
	conn := &otherDigestConn{Service: env.Store, digest: other}
	a := env.NewWorker(conn, worker.Options{Pinned: true, BuildID: "build-a"})
	var ran atomic.Int32
	worker.Activity(a, greetFFQN, func(context.Context, string) (string, error) { ran.Add(1); return "A", nil })
	worker.Workflow(a, fanFFQN, greetAll)
	id := env.Submit(fanFFQN, 3)
	if err := a.RunUntilIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, e := ran.Load(), a.Stats().Eager; n != 0 || e != 0 {
		t.Fatalf("the pinned worker ran %d children (%d eagerly) of another digest", n, e)
	}
	for _, c := range childrenOf(t, env, id, 3) {
		log := env.Log(c)
		if st := log.PendingState; st.State != core.StatePendingAt || len(lockedEvents(log)) != 0 {
			t.Fatalf("child %s of another digest: %s with %d locks, want pending and never locked", c, st, len(lockedEvents(log)))
		}
	}
}

// oldServer answers the requests to path (whose body holds match, when
// match is set) as a server that predates a route or a field does, with
// status and the JSON error answer, counting them, and serves the rest
// with h.
type oldServer struct {
	h       http.Handler
	path    string
	match   []byte
	status  int
	answer  string
	refused atomic.Int32
}

func (o *oldServer) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if r.URL.Path == o.path {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if o.match == nil || bytes.Contains(body, o.match) {
			o.refused.Add(1)
			rw.Header().Set("Content-Type", "application/json")
			rw.WriteHeader(o.status)
			_, _ = rw.Write([]byte(o.answer))
			return
		}
	}
	o.h.ServeHTTP(rw, r)
}

// TestEagerFallsBackOnAnOldServer: a server that does not know the `lock`
// field refuses it once; the client sends the write again without it and
// later writes go without it, so the workflow runs as before (children
// taken by polls).
func TestEagerFallsBackOnAnOldServer(t *testing.T) {
	svc := backendtest.SQLite(t)
	// A server that predates eager dispatch refuses the `lock` field.
	old := &oldServer{h: httpapi.New(svc, nil, httpapi.Options{Authorizer: httpapi.AllowAll(), FollowWait: 2 * time.Second}),
		path: wire.PathWorkerCreateChildren, match: []byte(`"lock":`), status: http.StatusUnprocessableEntity,
		answer: `{"err":"invalid request body: unknown field ` + "`lock`" + `"}`}
	srv := httptest.NewServer(old)
	t.Cleanup(srv.Close)
	conn, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	w := worker.New(conn, worker.Options{})
	worker.Activity(w, greetFFQN, greet)
	worker.Workflow(w, fanFFQN, greetAll)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for range 2 {
		id, err := w.Submit(ctx, fanFFQN, 3)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.RunUntilIdle(ctx); err != nil {
			t.Fatal(err)
		}
		if got, err := worker.Await[int](ctx, w, id); err != nil || got != 3*len("Hello, 0!") {
			t.Fatalf("got %d, %v", got, err)
		}
	}
	if n := old.refused.Load(); n != 1 {
		t.Fatalf("the old server refused %d eager requests, want 1 (then the client stops asking)", n)
	}
	if n := w.Stats().Eager; n != 0 {
		t.Fatalf("%d eager runs against an old server", n)
	}
}

// TestEagerChildTakesTheSlotItsParentGivesUp: on a worker with one slot,
// held by the workflow, the child it calls is still locked eagerly: the
// write ends with the JoinNext the workflow then waits at, giving its slot
// up, and the child runs on it. No poll takes any child.
func TestEagerChildTakesTheSlotItsParentGivesUp(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	conn := &pollCounter{Service: env.Store}
	w := env.NewWorker(conn, worker.Options{Concurrency: 1})
	worker.Activity(w, greetFFQN, greet)
	worker.Workflow(w, twiceFFQN, twice)
	id := env.Submit(twiceFFQN, "World")
	for range 3 { // the durable sleep between the two calls
		if err := w.RunUntilIdle(context.Background()); err != nil {
			t.Fatal(err)
		}
		env.Clock.Advance(time.Second)
		env.Sweep()
	}
	if got, err := workertest.Result[string](env, id); err != nil || got != "Hello, Hello, World!!" {
		t.Fatalf("got %q, %v", got, err)
	}
	if eager, polled := w.Stats().Eager, conn.children.Load(); eager != 2 || polled != 0 {
		t.Fatalf("%d eager runs, %d children polled; want 2 and 0", eager, polled)
	}
}

// dropFirstCreateLocked is dropFirstReply for POST /v1/worker/create-locked:
// the first eager start's answer is thrown away after the commit.
type dropFirstCreateLocked struct {
	dropped  atomic.Bool
	attempts atomic.Int32
}

func (d *dropFirstCreateLocked) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if r.URL.Path != wire.PathWorkerCreateLocked || err != nil {
		return resp, err
	}
	d.attempts.Add(1)
	if d.dropped.CompareAndSwap(false, true) {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return nil, errors.New("test: connection reset after the request was sent")
	}
	return resp, nil
}

// TestEagerStartRunsWithoutAPoll: an execution a running worker submits of
// a function it serves is created locked to it ([Created, Locked]) and
// runs at once, with no lock request — in process, and over HTTP where the
// first answer of the create is lost after its commit (the retry answers
// the same lock, so it is still locked exactly once). With NoEagerDispatch
// it is created pending and a poll takes it.
func TestEagerStartRunsWithoutAPoll(t *testing.T) {
	for _, tc := range []struct {
		name string
		off  bool
		http bool
	}{{"InProcess", false, false}, {"OverHTTPWithALostAnswer", false, true}, {"NoEagerDispatch", true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			svc := backendtest.SQLite(t)
			var conn worker.Conn = svc
			drop := &dropFirstCreateLocked{}
			if tc.http {
				c, err := client.New(apitest.Server(t, svc), client.WithHTTPClient(&http.Client{Transport: drop}))
				if err != nil {
					t.Fatal(err)
				}
				conn = c
			}
			w := worker.New(conn, worker.Options{NoEagerDispatch: tc.off, LockExpiry: time.Hour, PollWait: 50 * time.Millisecond})
			worker.Activity(w, greetFFQN, greet)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			runInBackground(t, w)
			for deadline := time.Now().Add(10 * time.Second); !w.EagerReady() && !tc.off; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the worker did not begin running")
				}
			}
			id, err := w.Submit(ctx, greetFFQN, "eager")
			if err != nil {
				t.Fatal(err)
			}
			if got, err := worker.Await[string](ctx, w, id); err != nil || got != "Hello, eager!" {
				t.Fatalf("got %q, %v", got, err)
			}
			log, err := svc.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(lockedEvents(log)); n != 1 {
				t.Fatalf("%s was locked %d times, want once", id, n)
			}
			eager := w.Stats().Eager
			if tc.off {
				if eager != 0 {
					t.Fatalf("eager dispatch off: %d eager runs, want 0", eager)
				}
				return
			}
			if eager != 1 {
				t.Fatalf("%d eager runs, want 1: the submitted execution was not locked by its create", eager)
			}
			if v := log.Events[1]; v.Version != 1 || v.Event.Variant() != "locked" {
				t.Fatalf("event 1 is %s, want locked", v.Event.Variant())
			}
			if tc.http && (!drop.dropped.Load() || drop.attempts.Load() < 2) {
				t.Fatalf("dropped %v after %d eager creates: the test did not lose an answer", drop.dropped.Load(), drop.attempts.Load())
			}
		})
	}
}

// TestEagerStartWithNoFreeSlotRunsOnTheNextOne: a submission while every
// slot is busy is still created locked to the worker (no pending-index
// round trip, no poll) and runs on the first slot that frees — never more
// runs at once than Options.Concurrency.
func TestEagerStartWithNoFreeSlotRunsOnTheNextOne(t *testing.T) {
	svc := backendtest.SQLite(t)
	w := worker.New(svc, worker.Options{Concurrency: 1, LockExpiry: time.Hour, PollWait: 50 * time.Millisecond})
	release := make(chan struct{})
	var running, most atomic.Int32
	enter := func() {
		n := running.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
	}
	worker.Activity(w, "demo:test/activity.hold", func(ctx context.Context, _ worker.Unit) (worker.Unit, error) {
		enter()
		defer running.Add(-1)
		<-release
		return worker.Unit{}, nil
	})
	worker.Activity(w, greetFFQN, func(ctx context.Context, name string) (string, error) {
		enter()
		defer running.Add(-1)
		return greet(ctx, name)
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	runInBackground(t, w)
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock) // before the worker's stop (cleanups run last first)
	for deadline := time.Now().Add(10 * time.Second); !w.EagerReady(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the worker did not begin running")
		}
	}
	hold, err := w.Submit(ctx, "demo:test/activity.hold", nil)
	if err != nil {
		t.Fatal(err)
	}
	for running.Load() == 0 { // the slot is taken
		time.Sleep(time.Millisecond)
	}
	id, err := w.Submit(ctx, greetFFQN, "later")
	if err != nil {
		t.Fatal(err)
	}
	log, err := svc.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(log.Events) != 2 || log.Events[1].Event.Variant() != "locked" {
		t.Fatalf("submitted with no free slot: history %v, want [created locked]", variants(log))
	}
	unblock()
	if got, err := worker.Await[string](ctx, w, id); err != nil || got != "Hello, later!" {
		t.Fatalf("got %q, %v", got, err)
	}
	if _, err := worker.Await[worker.Unit](ctx, w, hold); err != nil {
		t.Fatal(err)
	}
	if log, err = svc.Get(ctx, id); err != nil {
		t.Fatal(err)
	}
	if n := len(lockedEvents(log)); n != 1 {
		t.Fatalf("locked %d times, want once", n)
	}
	if m := most.Load(); m != 1 {
		t.Fatalf("%d runs at once, want at most Concurrency = 1", m)
	}
	if n := w.Stats().Eager; n != 2 {
		t.Fatalf("%d eager runs, want 2", n)
	}
}

func variants(log *core.ExecutionLog) []string {
	var out []string
	for _, e := range log.Events {
		out = append(out, e.Event.Variant())
	}
	return out
}
