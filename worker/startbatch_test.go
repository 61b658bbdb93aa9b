package worker_test

import (
	"bytes"
	"context"
	"errors"
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
	"github.com/stela-dev/stela/internal/backendtest"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/wire"
	"github.com/stela-dev/stela/worker"
)

// gatedStarts holds the first CreateLocked until gate is closed, and
// counts the creates and the batch sizes the store sees.
type gatedStarts struct {
	*store.Service
	entered chan struct{} // closed when the first CreateLocked arrives
	gate    chan struct{}
	once    sync.Once
	singles atomic.Int32
	mu      sync.Mutex
	batches []int
}

func (g *gatedStarts) CreateLocked(ctx context.Context, req core.CreateRequest, lock core.EagerLock) (core.Version, []core.LockedExecution, error) {
	g.singles.Add(1)
	first := false
	g.once.Do(func() { first = true; close(g.entered) })
	if first {
		<-g.gate
	}
	return g.Service.CreateLocked(ctx, req, lock)
}

func (g *gatedStarts) CreateLockedMany(ctx context.Context, reqs []core.CreateRequest, lock core.EagerLock) ([]core.CreateLockedResult, error) {
	g.mu.Lock()
	g.batches = append(g.batches, len(reqs))
	g.mu.Unlock()
	return g.Service.CreateLockedMany(ctx, reqs, lock)
}

// oldBatchServer answers create-locked bodies carrying `requests` as a
// server that predates batches does (422 unknown field) and serves the
// rest with h.
type oldBatchServer struct {
	h       http.Handler
	refused atomic.Int32
}

func (o *oldBatchServer) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if r.URL.Path == wire.PathWorkerCreateLocked {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"requests":`)) {
			o.refused.Add(1)
			rw.Header().Set("Content-Type", "application/json")
			rw.WriteHeader(http.StatusUnprocessableEntity)
			_, _ = rw.Write([]byte(`{"err":"invalid request body: unknown field ` + "`requests`" + `"}`))
			return
		}
	}
	o.h.ServeHTTP(rw, r)
}

// dropFirstBatch throws away the answer of the first create-locked batch
// after its commit (a connection reset the client retries).
type dropFirstBatch struct {
	dropped atomic.Bool
}

func (d *dropFirstBatch) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if r.URL.Path != wire.PathWorkerCreateLocked || err != nil || !bytes.Contains(body, []byte(`"requests":`)) {
		return resp, err
	}
	if d.dropped.CompareAndSwap(false, true) {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return nil, errors.New("test: connection reset after the request was sent")
	}
	return resp, nil
}

// TestConcurrentSubmitsShareACreateLockedRequest: while a worker's first
// eager start is in flight, the submissions that arrive queue up (no timer)
// and go together in the next create-locked request, one lock for all;
// each Submit returns its own id and each execution is created locked and
// runs exactly once — in process, over HTTP (also when the batch's answer
// is lost after its commit: the retry answers the same locks), and against
// a server that predates batches (the client then sends one create-locked
// each).
func TestConcurrentSubmitsShareACreateLockedRequest(t *testing.T) {
	for _, tc := range []struct {
		name            string
		http, old, drop bool
		conc, queued    int
	}{{"InProcess", false, false, false, 8, 5}, {"OverHTTP", true, false, false, 8, 5}, {"OverHTTPWithALostBatchAnswer", true, false, true, 8, 5},
		{"OverHTTPOldServer", true, true, false, 8, 5},
		// Concurrency 2: the first and one queued hold the slots, two more
		// wait for a slot (created locked all the same) in the same batch.
		{"InProcessMoreThanTheSlots", false, false, false, 2, 3}} {
		t.Run(tc.name, func(t *testing.T) {
			svc := backendtest.SQLite(t)
			g := &gatedStarts{Service: svc, entered: make(chan struct{}), gate: make(chan struct{})}
			var conn worker.Conn = g
			var old *oldBatchServer
			drop := &dropFirstBatch{}
			if tc.http {
				var h http.Handler = httpapi.New(g, nil, httpapi.Options{Authorizer: httpapi.AllowAll(), FollowWait: 2 * time.Second})
				if tc.old {
					old = &oldBatchServer{h: h}
					h = old
				}
				srv := httptest.NewServer(h)
				t.Cleanup(srv.Close)
				var opts []client.Option
				if tc.drop {
					opts = append(opts, client.WithHTTPClient(&http.Client{Transport: drop}))
				}
				c, err := client.New(srv.URL, opts...)
				if err != nil {
					t.Fatal(err)
				}
				conn = c
			}
			queued := tc.queued
			w := worker.New(conn, worker.Options{Concurrency: tc.conc, LockExpiry: time.Hour, PollWait: 50 * time.Millisecond})
			w.SetStartsInFlight(1) // one request in flight: every later Submit queues behind it
			worker.Activity(w, greetFFQN, greet)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			runInBackground(t, w)
			for deadline := time.Now().Add(10 * time.Second); !w.EagerReady(); time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the worker did not begin running")
				}
			}
			ids := make([]core.ExecutionId, queued+1)
			errs := make([]error, queued+1)
			var wg sync.WaitGroup
			submit := func(i int) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ids[i], errs[i] = w.Submit(ctx, greetFFQN, "n")
				}()
			}
			submit(0)
			<-g.entered // the first create is in flight
			for i := 1; i <= queued; i++ {
				submit(i)
			}
			for deadline := time.Now().Add(10 * time.Second); w.QueuedStarts() < queued; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d submissions queued, want %d", w.QueuedStarts(), queued)
				}
			}
			close(g.gate)
			wg.Wait()
			checkStartedLockedOnce(ctx, t, w, svc, ids, errs)
			if n := w.Stats().Eager; n != int64(queued+1) {
				t.Fatalf("%d eager runs, want %d", n, queued+1)
			}
			g.mu.Lock()
			batches := append([]int(nil), g.batches...)
			g.mu.Unlock()
			if tc.old {
				if len(batches) != 0 || g.singles.Load() != int32(queued+1) || old.refused.Load() != 1 {
					t.Fatalf("old server: batches %v, %d single creates, %d refused; want none, %d, 1", batches, g.singles.Load(), old.refused.Load(), queued+1)
				}
				return
			}
			if tc.drop {
				if !drop.dropped.Load() || len(batches) != 2 || batches[0] != queued || batches[1] != queued {
					t.Fatalf("dropped %v, batches %v: want the batch of %d sent twice (its answer lost once)", drop.dropped.Load(), batches, queued)
				}
			} else if len(batches) != 1 || batches[0] != queued {
				t.Fatalf("batches %v, want [%d]", batches, queued)
			}
			if g.singles.Load() != 1 {
				t.Fatalf("%d single creates, want 1", g.singles.Load())
			}
			if n := w.Stats().StartBatches; n != 1 {
				t.Fatalf("Stats.StartBatches %d, want 1", n)
			}
		})
	}
}

// allGated holds every single CreateLocked until gate is closed, telling
// entered of each, and records the batch sizes the store sees.
type allGated struct {
	*store.Service
	entered chan struct{}
	gate    chan struct{}
	mu      sync.Mutex
	batches []int
}

func (g *allGated) CreateLocked(ctx context.Context, req core.CreateRequest, lock core.EagerLock) (core.Version, []core.LockedExecution, error) {
	g.entered <- struct{}{}
	<-g.gate
	return g.Service.CreateLocked(ctx, req, lock)
}

func (g *allGated) CreateLockedMany(ctx context.Context, reqs []core.CreateRequest, lock core.EagerLock) ([]core.CreateLockedResult, error) {
	g.mu.Lock()
	g.batches = append(g.batches, len(reqs))
	g.mu.Unlock()
	return g.Service.CreateLockedMany(ctx, reqs, lock)
}

// TestSubmitsDoNotWaitForAnothersRoundTrip: up to four create-locked
// requests of a lock group are in flight at once — four concurrent
// Submits each send their own while none has returned — and the Submits
// after those queue and go together in one request when one returns.
func TestSubmitsDoNotWaitForAnothersRoundTrip(t *testing.T) {
	svc := backendtest.SQLite(t)
	g := &allGated{Service: svc, entered: make(chan struct{}, 16), gate: make(chan struct{})}
	w := worker.New(g, worker.Options{Concurrency: 16, LockExpiry: time.Hour, PollWait: 50 * time.Millisecond})
	worker.Activity(w, greetFFQN, greet)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	runInBackground(t, w)
	for deadline := time.Now().Add(10 * time.Second); !w.EagerReady(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the worker did not begin running")
		}
	}
	const inFlight, queued = 4, 3
	ids := make([]core.ExecutionId, inFlight+queued)
	errs := make([]error, inFlight+queued)
	var wg sync.WaitGroup
	for i := range ids {
		if i == inFlight {
			for range inFlight { // every one of the first four is in flight, none answered
				select {
				case <-g.entered:
				case <-time.After(10 * time.Second):
					t.Fatal("fewer than four create-locked requests in flight at once")
				}
			}
		}
		wg.Go(func() { ids[i], errs[i] = w.Submit(ctx, greetFFQN, "n") })
	}
	for deadline := time.Now().Add(10 * time.Second); w.QueuedStarts() < queued; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d submissions queued, want %d", w.QueuedStarts(), queued)
		}
	}
	select {
	case <-g.entered:
		t.Fatal("a fifth single create-locked request went while four were in flight")
	default:
	}
	close(g.gate)
	wg.Wait()
	checkStartedLockedOnce(ctx, t, w, svc, ids, errs)
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.batches) != 1 || g.batches[0] != queued {
		t.Fatalf("batches %v, want [%d]", g.batches, queued)
	}
}

// checkStartedLockedOnce checks that every Submit succeeded with its own
// id and that each execution, created locked and locked once, greeted.
func checkStartedLockedOnce(ctx context.Context, t *testing.T, w *worker.Worker, svc *store.Service, ids []core.ExecutionId, errs []error) {
	t.Helper()
	seen := map[core.ExecutionId]bool{}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("submit %d: %v", i, err)
		}
		if seen[ids[i]] {
			t.Fatalf("submit %d returned the id %s of another", i, ids[i])
		}
		seen[ids[i]] = true
	}
	for _, id := range ids {
		if got, err := worker.Await[string](ctx, w, id); err != nil || got != "Hello, n!" {
			t.Fatalf("%s: got %q, %v", id, got, err)
		}
		log, err := svc.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(lockedEvents(log)); n != 1 || log.Events[1].Event.Variant() != "locked" {
			t.Fatalf("%s: history %v, locked %d times; want created locked, once", id, variantsOf(log), n)
		}
	}
}

func variantsOf(log *core.ExecutionLog) []string {
	var out []string
	for _, e := range log.Events {
		out = append(out, e.Event.Variant())
	}
	return out
}
