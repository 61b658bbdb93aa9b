package worker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/httpapi"
	"github.com/stela-dev/stela/internal/apitest"
	"github.com/stela-dev/stela/internal/backendtest"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/worker"
)

// routeV1 takes activity a for "x" and b for anything else, then sleeps an hour.
func routeV1(wf *worker.Context, p string) (string, error) {
	if p == "x" {
		step(wf, actA)
	} else {
		step(wf, actB)
	}
	return p, wf.Sleep(time.Hour)
}

// routeV2 always takes a: it replays x's v1 history, not y's.
func routeV2(wf *worker.Context, p string) (string, error) {
	step(wf, actA)
	return p + "2", wf.Sleep(time.Hour)
}

// runInBackground runs w until the test ends (or stop is called).
func runInBackground(t *testing.T, w *worker.Worker) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var stopped bool
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(stop)
	return stop
}

// sleeping reports whether id's workflow is blocked at its durable sleep.
func sleeping(ctx context.Context, conn *client.Client, id core.ExecutionId) bool {
	log, err := conn.Get(ctx, id)
	if err != nil || log.PendingState.State != core.StateBlockedByJoinSet {
		return false
	}
	for _, e := range log.EventHistory() {
		if r, ok := e.Event.(*core.JoinSetRequestEvent); ok {
			if _, ok := r.Request.(*core.DelayRequest); ok {
				return true
			}
		}
	}
	return false
}

func digestOf(t *testing.T, conn *client.Client, id core.ExecutionId) core.ComponentDigest {
	t.Helper()
	st, err := conn.GetPendingState(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return st.ComponentDigest
}

func wantAPIError(t *testing.T, what string, err error, status int, prefix string) {
	t.Helper()
	var ae *client.Error
	if !errors.As(err, &ae) || ae.Status != status || !strings.HasPrefix(ae.Message, prefix) {
		t.Fatalf("%s: %v; want %d %q…", what, err, status, prefix)
	}
}

// TestUpgradeOverHTTPIsCheckedByAWorkerOfTheNewDigest: PUT …/upgrade
// without skip_determinism_check, on the embedded store and on DynamoDB
// Local. A pinned v2 worker replays and moves the execution whose v1
// history its code replays (200) and refuses the divergent one (422
// "Replay failed: version N: …", left on v1); a digest no worker serves
// answers 404 "new component not found" after the wait, and a worker of
// that digest started afterwards never runs the check (its code would
// replay the history, so a late check would move it); an unpinned worker
// serves checks through its slow lock by digest.
func TestUpgradeOverHTTPIsCheckedByAWorkerOfTheNewDigest(t *testing.T) {
	backendtest.Each(t, func(t *testing.T, svc *store.Service) {
		const wait = 1500 * time.Millisecond
		url := apitest.ServerWith(t, svc, func(o *httpapi.Options) { o.UpgradeCheckWait = wait })
		conn, err := client.New(url)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		fast := worker.Options{Pinned: true, PollWait: 200 * time.Millisecond}
		build := func(id string, pinned bool, body func(*worker.Context, string) (string, error)) *worker.Worker {
			o := fast
			o.BuildID, o.Pinned, o.UpgradeCheckPoll = id, pinned, 100*time.Millisecond
			w := worker.New(conn, o)
			routeCode(w, body)
			return w
		}
		v1 := build("v1", true, routeV1)
		x, err := v1.Submit(ctx, routeFFQN, "x")
		if err != nil {
			t.Fatal(err)
		}
		y, err := v1.Submit(ctx, routeFFQN, "y")
		if err != nil {
			t.Fatal(err)
		}
		stopV1 := runInBackground(t, v1)
		for _, id := range []core.ExecutionId{x, y} {
			pollUntil(t, func() bool { return sleeping(ctx, conn, id) })
		}
		stopV1()
		d1 := v1.ComponentDigests()[routeFFQN]

		v2 := build("v2", true, routeV2)
		runInBackground(t, v2)
		d2 := v2.ComponentDigests()[routeFFQN]
		if err := conn.UpgradeChecked(ctx, x, d1, d2); err != nil {
			t.Fatalf("upgrade of x: %v", err)
		}
		if got := digestOf(t, conn, x); got != d2 {
			t.Fatalf("x on %s after the upgrade, want %s", got, d2)
		}
		wantAPIError(t, "upgrade of y", conn.UpgradeChecked(ctx, y, d1, d2), 422, "Replay failed: version ")
		if got := digestOf(t, conn, y); got != d1 {
			t.Fatalf("y on %s after a refused upgrade, want %s", got, d1)
		}
		wantAPIError(t, "x again", conn.UpgradeChecked(ctx, x, d1, d2), 404, "not found")

		// No worker of v3's digest: 404 after the wait, and never later.
		v3 := build("v3", true, routeV1)
		d3 := v3.ComponentDigests()[routeFFQN]
		start := time.Now()
		wantAPIError(t, "upgrade to a digest no worker runs", conn.UpgradeChecked(ctx, y, d1, d3), 404, "new component not found")
		if took := time.Since(start); took < wait {
			t.Fatalf("answered after %s, before the wait of %s", took, wait)
		}
		checks, err := svc.ListExecutions(ctx, core.ListExecutionsFilter{ComponentDigest: &d3},
			core.ExecutionListPagination{ExecutionID: &core.Pagination[*core.ExecutionId]{Direction: core.OlderThan, Length: 10}})
		if err != nil || len(checks) != 1 || checks[0].FFQN.String() != core.UpgradeCheckFFQN {
			t.Fatalf("checks of v3's digest: %+v, %v; want the one check", checks, err)
		}
		if err := v3.RunUntilIdle(ctx); err != nil {
			t.Fatal(err)
		}
		late := build("v3", false, routeV1) // unpinned, same digest: its lock by digest
		if err := late.RunUntilIdle(ctx); err != nil {
			t.Fatal(err)
		}
		if log, err := conn.Get(ctx, checks[0].ExecutionID); err != nil || len(log.Events) != 2 {
			t.Fatalf("the check after the answer: %v, %v; want Created and CancellationRequested only", log, err)
		} else if _, ok := log.Events[1].Event.(*core.CancellationRequested); !ok {
			t.Fatalf("the check's second event is %T, want CancellationRequested", log.Events[1].Event)
		}
		if got := digestOf(t, conn, y); got != d1 {
			t.Fatalf("y moved to %s by a late check", got)
		}

		// An unpinned worker of v4 (v1's code) takes the check by its slow poll.
		v4 := build("v4", false, routeV1)
		runInBackground(t, v4)
		d4 := v4.ComponentDigests()[routeFFQN]
		if err := conn.UpgradeChecked(ctx, y, d1, d4); err != nil {
			t.Fatalf("upgrade of y to the unpinned v4: %v", err)
		}
		if got := digestOf(t, conn, y); got != d4 {
			t.Fatalf("y on %s, want %s", got, d4)
		}
	})
}

// TestPinnedDivergenceIsPausedOverHTTP is TestPinnedDivergenceIsPausedNotFinished
// over the real handler, on the embedded store and DynamoDB Local, with the
// server's timers: a pinned worker whose code changed under the same build
// id meets the execution's history when its sleep ends, pauses it with the
// divergence as the Unlocked reason (not Finished), and the rolled-back
// code finishes it after an unpause.
func TestPinnedDivergenceIsPausedOverHTTP(t *testing.T) {
	backendtest.Each(t, func(t *testing.T, svc *store.Service) {
		backendtest.Timers(t, svc, 50*time.Millisecond)
		conn, err := client.New(apitest.Server(t, svc))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		body := func(first string) func(*worker.Context) (string, error) {
			return func(wf *worker.Context) (string, error) {
				step(wf, first)
				if err := wf.Sleep(500 * time.Millisecond); err != nil {
					return "", err
				}
				step(wf, actB)
				return "after " + first, nil
			}
		}
		build := func(first string) *worker.Worker {
			w := worker.New(conn, worker.Options{BuildID: "same", Pinned: true, PollWait: 200 * time.Millisecond})
			orderCode(w, &calls{}, body(first))
			return w
		}
		v1 := build(actA)
		id, err := v1.Submit(ctx, upgradeFFQN, nil)
		if err != nil {
			t.Fatal(err)
		}
		stop := runInBackground(t, v1)
		pollUntil(t, func() bool { return sleeping(ctx, conn, id) })
		stop()

		changed := build(actC) // a replaced by c, build id unchanged
		stop = runInBackground(t, changed)
		pollUntil(t, func() bool {
			st, err := conn.GetPendingState(ctx, id)
			return err == nil && st.PendingState.Lifecycle == core.LifecyclePaused
		})
		stop()
		log, err := conn.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if log.PendingState.Finished != nil {
			t.Fatalf("the divergence finished the execution: %s", log.PendingState)
		}
		var reason string
		for _, ev := range log.Events {
			if u, ok := ev.Event.(*core.Unlocked); ok {
				reason = u.Reason
			}
		}
		if !strings.HasPrefix(reason, "nondeterminism detected, execution paused: version 2: ") {
			t.Fatalf("unlock reason %q", reason)
		}

		back := build(actA)
		runInBackground(t, back)
		if err := conn.Unpause(ctx, id); err != nil {
			t.Fatal(err)
		}
		if got, err := worker.Await[string](ctx, back, id); err != nil || got != "after "+actA {
			t.Fatalf("after the rollback: %q, %v", got, err)
		}
	})
}
