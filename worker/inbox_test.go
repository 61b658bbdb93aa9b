package worker_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/internal/apitest"
	"github.com/stela-dev/stela/internal/backendtest"
	"github.com/stela-dev/stela/worker"
	"github.com/stela-dev/stela/worker/workertest"
)

// TestChildResponsesAreHandedInMemory: a workflow awaiting children this
// worker runs (a call, then a fan-out of 20 through 4 slots) is handed
// their responses by the children's own writes (the store tells each
// response's cursor) and reads none from the store: no response
// subscription at all, in-process and over HTTP, and the results are the
// children's. The responses stored are the ones the run consumed (the
// history replays to the same result on a fresh worker).
func TestChildResponsesAreHandedInMemory(t *testing.T) {
	for _, transport := range []string{"in-process", "http"} {
		t.Run(transport, func(t *testing.T) {
			svc := backendtest.SQLite(t)
			backendtest.Timers(t, svc, 20*time.Millisecond)
			subs := &subscribeTimes{Service: svc}
			var conn worker.Conn = subs
			if transport == "http" {
				c, err := client.New(apitest.Server(t, svc))
				if err != nil {
					t.Fatal(err)
				}
				conn = c
			}
			w := worker.New(conn, worker.Options{Concurrency: 4, LockExpiry: 20 * time.Second, PollWait: 200 * time.Millisecond})
			worker.Activity(w, "demo:test/inbox.double", func(_ context.Context, n int) (int, error) { return 2 * n, nil })
			worker.Workflow(w, "demo:test/inbox.sum", func(wf *worker.Context, n int) (int, error) {
				first, err := worker.Call[int](wf, "demo:test/inbox.double", n)
				if err != nil {
					return 0, err
				}
				js := wf.NewJoinSet()
				for i := range 20 {
					if _, err := js.Submit("demo:test/inbox.double", i); err != nil {
						return 0, err
					}
				}
				sum := first
				for range 20 {
					r, err := js.Next()
					if err != nil {
						return 0, err
					}
					v, err := worker.Result[int](r)
					if err != nil {
						return 0, err
					}
					sum += v
				}
				return sum, nil
			})
			runFor(t, w)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			id, err := w.Submit(ctx, "demo:test/inbox.sum", 5)
			if err != nil {
				t.Fatal(err)
			}
			got, err := worker.Await[int](ctx, w, id)
			if err != nil {
				t.Fatal(err)
			}
			if want := 10 + 2*190; got != want {
				t.Fatalf("result %d, want %d", got, want)
			}
			st := w.Stats()
			if st.ResponsesInMemory < 1 {
				t.Errorf("Stats().ResponsesInMemory = %d, want at least 1", st.ResponsesInMemory)
			}
			subs.mu.Lock()
			n := len(subs.times)
			subs.mu.Unlock()
			if transport == "in-process" && int64(n)+st.ResponsesInMemory > 21 {
				t.Errorf("%d subscriptions besides %d responses handed in memory (21 responses)", n, st.ResponsesInMemory)
			}
			log, err := svc.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if len(log.Responses) != 21 {
				t.Fatalf("%d responses stored, want 21", len(log.Responses))
			}
			for i, r := range log.Responses {
				if r.Cursor != core.ResponseCursor(i+1) {
					t.Fatalf("response %d has cursor %d", i, r.Cursor)
				}
			}
			// A fresh worker replays the stored history to the same result:
			// what the run was handed is what the store holds.
			h, err := core.HistoryOf(log)
			if err != nil {
				t.Fatal(err)
			}
			if res := workertest.Replay(t, w, h); !res.Finished {
				t.Errorf("replay of the stored history did not finish: next %s", res.Next)
			}
			t.Logf("%d of 21 responses handed in memory", st.ResponsesInMemory)
		})
	}
}

// TestHandedResponseBeyondAGapGoesToTheStore: while a workflow waits in
// memory for a slow child this worker runs, a response from elsewhere (a
// child another worker runs, in another join set) takes the next cursor;
// the slow child's response, handed with the cursor after it, is beyond a
// gap: the run reads the store, which gives both in order, and the
// workflow sees each response once.
func TestHandedResponseBeyondAGapGoesToTheStore(t *testing.T) {
	svc := backendtest.SQLite(t)
	backendtest.Timers(t, svc, 20*time.Millisecond)
	parent := make(chan core.ExecutionId, 1)
	w := worker.New(svc, worker.Options{LockExpiry: 20 * time.Second, PollWait: 200 * time.Millisecond})
	worker.Activity(w, "demo:test/inbox.slow", func(ctx context.Context, n int) (int, error) {
		// Answer only once the other child's response is stored: this
		// one's then gets the cursor after it.
		id := <-parent
		for {
			log, err := svc.Get(ctx, id)
			if err != nil {
				return 0, err
			}
			if len(log.Responses) > 0 {
				return n + 1, nil
			}
			select {
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-time.After(2 * time.Millisecond):
			}
		}
	})
	worker.Workflow(w, "demo:test/inbox.gap", func(wf *worker.Context, _ worker.Unit) (string, error) {
		far := wf.NewJoinSet()
		if _, err := far.Submit("demo:test/inbox.far", 1); err != nil {
			return "", err
		}
		near := wf.NewJoinSet()
		if _, err := near.Submit("demo:test/inbox.slow", 10); err != nil {
			return "", err
		}
		r, err := near.Next()
		if err != nil {
			return "", err
		}
		a, err := worker.Result[int](r)
		if err != nil {
			return "", err
		}
		if r, err = far.Next(); err != nil {
			return "", err
		}
		b, err := worker.Result[int](r)
		if err != nil {
			return "", err
		}
		return fmt.Sprint(a, " ", b), nil
	})
	other := worker.New(svc, worker.Options{PollWait: 50 * time.Millisecond})
	worker.Activity(other, "demo:test/inbox.far", func(_ context.Context, n int) (int, error) { return n * 100, nil })
	w.Declare("demo:test/inbox.far", core.ComponentTypeActivity)
	runFor(t, w)
	runFor(t, other)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id, err := w.Submit(ctx, "demo:test/inbox.gap", worker.Unit{})
	if err != nil {
		t.Fatal(err)
	}
	parent <- id
	got, err := worker.Await[string](ctx, w, id)
	if err != nil {
		t.Fatal(err)
	}
	if got != "11 100" {
		t.Fatalf("result %q, want %q", got, "11 100")
	}
	log, err := svc.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(log.Responses) != 2 {
		t.Fatalf("%d responses stored, want 2", len(log.Responses))
	}
	if n := countLocks(log); n != 1 {
		t.Errorf("locked %d times, want once (the waits were in memory)", n)
	}
	// The slow child's response came after the other's, beyond the gap.
	// (The second join set is g:2, its first child g:2_1.)
	if cf, ok := log.Responses[1].Event.Event.Event.(*core.ChildExecutionFinished); !ok || !strings.HasSuffix(cf.ChildExecutionID.String(), ".g:2_1") {
		t.Errorf("second response %+v, want the slow child's", log.Responses[1].Event.Event.Event)
	}
	if n := w.Stats().ResponsesInMemory; n != 0 {
		t.Errorf("%d responses taken from memory, want 0 (the one handed was beyond a gap)", n)
	}
}
