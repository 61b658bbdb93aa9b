package worker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/worker"
	"github.com/stela-dev/stela/worker/workertest"
)

const routeFFQN = "test:upgrade/wf.route"

// routeCode registers the activities and, as routeFFQN, body.
func routeCode(w *worker.Worker, body func(wf *worker.Context, p string) (string, error)) {
	orderCode(w, &calls{}, v1)
	worker.Workflow(w, routeFFQN, body)
}

// TestUpgradeMovesOnlyCleanReplays: a deployment-wide upgrade from v1's
// digest moves the execution whose history v2 replays and leaves the
// divergent one to v1's pinned worker, naming its divergence; both finish.
func TestUpgradeMovesOnlyCleanReplays(t *testing.T) {
	e := workertest.New(t, worker.Options{BuildID: "v1", Pinned: true})
	routeCode(e.Worker, func(wf *worker.Context, p string) (string, error) {
		if p == "x" {
			step(wf, actA)
		} else {
			step(wf, actB)
		}
		return p, wf.Sleep(time.Minute)
	})
	x := e.Submit(routeFFQN, "x")
	y := e.Submit(routeFFQN, "y")
	e.Run() // both sleep
	from := e.Worker.ComponentDigests()[routeFFQN]

	v2 := e.NewWorker(nil, worker.Options{BuildID: "v2", Pinned: true})
	routeCode(v2, func(wf *worker.Context, p string) (string, error) {
		step(wf, actA) // y's history has b here
		return p + "2", wf.Sleep(time.Minute)
	})
	ctx := context.Background()
	rep, err := v2.Upgrade(ctx, e.Store, &from)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Upgraded) != 1 || rep.Upgraded[0] != x || len(rep.Diverged) != 1 || rep.Diverged[0].ID != y ||
		rep.Diverged[0].Divergence == nil || rep.Diverged[0].Divergence.Version == 0 {
		t.Fatalf("report %+v", rep)
	}
	to := v2.ComponentDigests()[routeFFQN]
	if st, _ := e.Store.GetPendingState(ctx, x); st.ComponentDigest != to {
		t.Fatalf("x on %s, want %s", st.ComponentDigest, to)
	}
	if st, _ := e.Store.GetPendingState(ctx, y); st.ComponentDigest != from {
		t.Fatalf("y on %s, want %s", st.ComponentDigest, from)
	}
	// Again: nothing left to move, y still refused.
	if again, err := v2.Upgrade(ctx, e.Store, &from); err != nil || len(again.Upgraded) != 0 || len(again.Diverged) != 1 {
		t.Fatalf("second upgrade %+v, %v", again, err)
	}

	e.Advance(time.Minute) // v1 finishes y
	if err := v2.RunUntilIdle(ctx); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[core.ExecutionId]string{x: "x2", y: "y"} {
		if got, err := workertest.Result[string](e, id); err != nil || got != want {
			t.Fatalf("%s: %q, %v; want %q", id, got, err, want)
		}
	}
}

// TestPinnedDivergenceIsPausedNotFinished: a pinned worker whose code no
// longer replays an execution of its own digest (the build id was not
// changed with the code) pauses it with the divergence as the reason
// instead of finishing it; rolling the code back and unpausing finishes it.
func TestPinnedDivergenceIsPausedNotFinished(t *testing.T) {
	e := workertest.New(t, worker.Options{BuildID: "same", Pinned: true})
	orderCode(e.Worker, &calls{}, v1)
	id := e.Submit(upgradeFFQN, nil)
	e.Run() // a done, sleeping
	e.Worker.Close()

	changed := e.NewWorker(nil, worker.Options{BuildID: "same", Pinned: true})
	orderCode(changed, &calls{}, unpatched)
	e.Worker = changed
	e.Advance(time.Minute)
	st := e.Status(id)
	if st.Finished != nil || st.Lifecycle != core.LifecyclePaused {
		t.Fatalf("after the divergence: %s, want paused", st)
	}
	log := e.Log(id)
	var reason string
	for _, ev := range log.Events {
		if u, ok := ev.Event.(*core.Unlocked); ok {
			reason = u.Reason
		}
	}
	if !strings.Contains(reason, "nondeterminism detected, execution paused: version 2") {
		t.Fatalf("unlock reason %q", reason)
	}

	back := e.NewWorker(nil, worker.Options{BuildID: "same", Pinned: true})
	orderCode(back, &calls{}, v1)
	e.Worker = back
	if _, err := e.Store.UnpauseExecution(context.Background(), id, e.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	e.Run()
	if got, err := workertest.Result[string](e, id); err != nil || got != "v1" {
		t.Fatalf("after rollback: %q, %v", got, err)
	}
}
