package worker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/internal/apitest"
	"github.com/stela-dev/stela/internal/backendtest"
	"github.com/stela-dev/stela/worker"
	"github.com/stela-dev/stela/worker/workertest"
)

const (
	flakyInfoFFQN  = "demo:info/activity.flaky"
	infoCallerFFQN = "demo:info/workflow.caller"
)

// TestActivityInfo: an activity sees its execution id, ffqn, attempt
// (counting the recorded temporary failures), retry policy and parent from
// its context; a top-level run has no parent; another context has no info.
func TestActivityInfo(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	var seen []worker.ActivityInfo
	worker.Activity(env.Worker, flakyInfoFFQN, func(ctx context.Context, failUntil uint32) (uint32, error) {
		info, ok := worker.ActivityInfoFrom(ctx)
		if !ok {
			return 0, worker.Permanent(errors.New("no activity info"))
		}
		seen = append(seen, info)
		if info.Attempt < failUntil {
			return 0, errors.New("not yet")
		}
		return info.Attempt, nil
	}, worker.RetryPolicy(3, 0))
	worker.Workflow(env.Worker, infoCallerFFQN, func(wf *worker.Context, n uint32) (uint32, error) {
		return worker.Call[uint32](wf, flakyInfoFFQN, n)
	})
	if _, ok := worker.ActivityInfoFrom(context.Background()); ok {
		t.Fatal("a plain context has activity info")
	}

	top := env.Submit(flakyInfoFFQN, uint32(1))
	env.Run()
	if got, err := workertest.Result[uint32](env, top); err != nil || got != 1 {
		t.Fatalf("top-level: %d, %v", got, err)
	}
	if len(seen) != 1 {
		t.Fatalf("want 1 run, got %d", len(seen))
	}
	info := seen[0]
	if info.ExecutionID != top || info.FFQN.String() != flakyInfoFFQN || info.Attempt != 1 || info.Parent != nil ||
		info.MaxRetries == nil || *info.MaxRetries != 3 || info.LockExpiresAt.IsZero() || info.RunID.IsZero() || !info.Deadline.IsZero() {
		t.Fatalf("top-level info: %+v", info)
	}

	seen = nil
	wf := env.Submit(infoCallerFFQN, uint32(3))
	for range 5 {
		env.Advance(0) // the retries' backoff is 0: each is due at once
	}
	if got, err := workertest.Result[uint32](env, wf); err != nil || got != 3 {
		t.Fatalf("child: %d, %v", got, err)
	}
	if len(seen) != 3 {
		t.Fatalf("want 3 runs of the child, got %d", len(seen))
	}
	for i, info := range seen {
		if info.Attempt != uint32(i+1) {
			t.Errorf("run %d: attempt %d", i, info.Attempt)
		}
		if info.Parent == nil || info.Parent.ExecutionID != wf || info.ExecutionID == top || info.ExecutionID.String() <= wf.String() {
			t.Errorf("run %d: parent %+v of %s, want %s", i, info.Parent, info.ExecutionID, wf)
		}
	}
}

// TestActivityInfoOverHTTP: the same info reaches an activity run by a
// worker talking to the server over HTTP.
func TestActivityInfoOverHTTP(t *testing.T) {
	conn := httpConn(t)
	w := worker.New(conn, worker.Options{Name: "info-http"})
	got := make(chan worker.ActivityInfo, 1)
	worker.Activity(w, flakyInfoFFQN, func(ctx context.Context, _ worker.Unit) (worker.Unit, error) {
		info, _ := worker.ActivityInfoFrom(ctx)
		got <- info
		return worker.Unit{}, nil
	})
	worker.Workflow(w, infoCallerFFQN, func(wf *worker.Context, _ worker.Unit) (worker.Unit, error) {
		return worker.Call[worker.Unit](wf, flakyInfoFFQN, nil)
	})
	runFor(t, w)
	ctx := testCtx(t)
	id, err := w.Submit(ctx, infoCallerFFQN, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := worker.Await[worker.Unit](ctx, w, id); err != nil {
		t.Fatal(err)
	}
	info := <-got
	if info.Attempt != 1 || info.Parent == nil || info.Parent.ExecutionID != id || info.FFQN.String() != flakyInfoFFQN {
		t.Fatalf("info over HTTP: %+v", info)
	}
}

// httpConn starts a server over a fresh SQLite store with its timers and
// returns a client of it.
func httpConn(t *testing.T) *client.Client {
	t.Helper()
	svc := backendtest.SQLite(t)
	backendtest.Timers(t, svc, 20*time.Millisecond)
	c, err := client.New(apitest.Server(t, svc))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}
