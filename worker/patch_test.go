package worker_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/worker"
	"github.com/stela-dev/stela/worker/workertest"
)

const (
	upgradeFFQN = "test:upgrade/wf.order"
	actA        = "test:upgrade/acts.a"
	actB        = "test:upgrade/acts.b"
	actC        = "test:upgrade/acts.c"
)

// calls records the activities run.
type calls struct {
	mu  sync.Mutex
	got []string
}

func (c *calls) list() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.got, ",")
}

// orderCode registers the activities and, as upgradeFFQN, body.
func orderCode(w *worker.Worker, c *calls, body func(wf *worker.Context) (string, error)) {
	for _, a := range []string{actA, actB, actC} {
		worker.Activity(w, a, func(ctx context.Context, _ worker.Unit) (string, error) {
			c.mu.Lock()
			c.got = append(c.got, a[len("test:upgrade/acts."):])
			c.mu.Unlock()
			return a, nil
		})
	}
	worker.Workflow(w, upgradeFFQN, func(wf *worker.Context, _ worker.Unit) (string, error) { return body(wf) })
}

func step(wf *worker.Context, ffqn string) string {
	r, err := worker.Call[string](wf, ffqn, nil)
	if err != nil {
		panic(err)
	}
	return r
}

// v1: a, sleep, b.
func v1(wf *worker.Context) (string, error) {
	step(wf, actA)
	if err := wf.Sleep(time.Minute); err != nil {
		return "", err
	}
	step(wf, actB)
	return "v1", nil
}

// v2 replaces a by c, behind a patch.
func v2(wf *worker.Context) (string, error) {
	if wf.Patched("c-instead-of-a") {
		step(wf, actC)
	} else {
		step(wf, actA)
	}
	if err := wf.Sleep(time.Minute); err != nil {
		return "", err
	}
	step(wf, actB)
	return "v1", nil
}

// v3 removed the patch (the second step of its removal).
func v3(wf *worker.Context) (string, error) {
	step(wf, actC)
	if err := wf.Sleep(time.Minute); err != nil {
		return "", err
	}
	step(wf, actB)
	return "v1", nil
}

// unpatched replaces a by c without a patch: a divergence for old histories.
func unpatched(wf *worker.Context) (string, error) { return v3(wf) }

// newCode is a worker (never run) with body registered, for replays.
func newCode(e *workertest.Env, body func(wf *worker.Context) (string, error)) *worker.Worker {
	w := e.NewWorker(nil, worker.Options{})
	orderCode(w, &calls{}, body)
	return w
}

// TestReplayReportsTheFirstDivergence: a history recorded by v1 replays
// cleanly against v1 and against v2 (patched), and against the unpatched
// change reports the version and the expected and actual events.
func TestReplayReportsTheFirstDivergence(t *testing.T) {
	e := workertest.New(t, worker.Options{})
	orderCode(e.Worker, &calls{}, v1)
	id := e.Submit(upgradeFFQN, nil)
	e.Run() // a done, sleeping
	h := e.History(id)

	if res := workertest.Replay(t, e.Worker, h); res.Finished || res.Replayed == 0 {
		t.Fatalf("v1 replay %+v", res)
	}
	workertest.Replay(t, newCode(e, v2), h)
	res, err := newCode(e, unpatched).Replay(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	d := res.Divergence
	if d == nil || d.Version != 2 || !strings.Contains(d.Detail, `"o:1-c"`) || !strings.Contains(d.Detail, `"o:1-a"`) {
		t.Fatalf("divergence %+v", d)
	}

	// The exported form round-trips (stela execution history export).
	b, err := h.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "order.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	workertest.ReplayFile(t, newCode(e, v2), path)

	// A finished history is also checked against the result.
	e.Advance(time.Minute)
	fin := e.History(id)
	workertest.Replay(t, newCode(e, v2), fin)
	other, err := newCode(e, func(wf *worker.Context) (string, error) {
		s, err := v1(wf)
		return s + "!", err
	}).Replay(context.Background(), fin)
	if err != nil || other.Divergence == nil || !strings.Contains(other.Divergence.Detail, "v1!") {
		t.Fatalf("changed result: %+v, %v", other, err)
	}
}

// TestPatchedOldExecutionsKeepTheOldPath: v2's worker finishes an
// execution v1 started on the old path (a), runs new ones on the new
// path (c, recorded with a patch marker), whose histories then replay
// against v2 and against v3 (the patch removed) but not against v1.
func TestPatchedOldExecutionsKeepTheOldPath(t *testing.T) {
	e := workertest.New(t, worker.Options{BuildID: "v1"})
	orderCode(e.Worker, &calls{}, v1)
	old := e.Submit(upgradeFFQN, nil)
	e.Run() // a done, sleeping

	var c calls
	w2 := e.NewWorker(nil, worker.Options{BuildID: "v2"})
	orderCode(w2, &c, v2)
	e.Worker = w2
	fresh := e.Submit(upgradeFFQN, nil)
	e.Advance(time.Minute)
	e.Advance(time.Minute)
	for _, id := range []core.ExecutionId{old, fresh} {
		if got, err := workertest.Result[string](e, id); err != nil || got != "v1" {
			t.Fatalf("%s: %q, %v", id, got, err)
		}
	}
	if got := c.list(); got != "b,c,b" && got != "c,b,b" {
		t.Fatalf("v2 ran %q, want the old execution's b and the new one's c, b", got)
	}
	h := e.History(fresh)
	marker := false
	for _, ev := range h.Events {
		if hr, ok := ev.Event.(*core.HistoryEventRequest); ok {
			if p, ok := hr.Event.(*core.Persist); ok && strings.HasPrefix(string(p.Value), "stela-patch:c-instead-of-a") {
				marker = true
			}
		}
	}
	if !marker {
		t.Fatalf("no patch marker in the new execution's history")
	}
	workertest.Replay(t, newCode(e, v2), h)
	workertest.Replay(t, newCode(e, v3), h)
	workertest.Replay(t, newCode(e, v2), e.History(old))
	if res, err := newCode(e, v1).Replay(context.Background(), h); err != nil || res.Divergence == nil {
		t.Fatalf("v1 replayed the patched history: %+v, %v", res, err)
	}
}
