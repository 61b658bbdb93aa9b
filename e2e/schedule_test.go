package e2e_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/core"
	sdk "github.com/stela-dev/stela/worker"
)

// TestScheduleThroughTheCLI: against `stela dev`, `stela schedule create`
// starts an every-second schedule that a worker with RegisterSchedules
// runs; each tick is created once and runs once; `stela schedule list`
// shows it and `stela schedule delete` stops it.
func TestScheduleThroughTheCLI(t *testing.T) {
	d := startDev(t, t.TempDir())
	defer d.stop(t)
	conn, err := client.New(d.url)
	if err != nil {
		t.Fatal(err)
	}
	w := sdk.New(conn, sdk.Options{PollWait: 200 * time.Millisecond})
	sdk.RegisterSchedules(w)
	const tick = "e2e:sched/activity.tick"
	var runs atomic.Int32
	sdk.Activity(w, tick, func(context.Context, string) (int, error) { return int(runs.Add(1)), nil })
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	defer runWorker(ctx, t, w)()
	out := d.mustCLI(t, "schedule", "create", "@every 1s", tick, `["x"]`)
	id, err := core.ParseExecutionId(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("schedule create printed %q: %v", out, err)
	}
	ticks := func() []core.ExecutionId {
		log, err := conn.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var ids []core.ExecutionId
		for _, e := range log.EventHistory() {
			if s, ok := e.Event.(*core.Schedule); ok {
				ids = append(ids, s.ExecutionID)
			}
		}
		return ids
	}
	for len(ticks()) < 2 {
		if ctx.Err() != nil {
			t.Fatal("no two ticks before the deadline")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if list := d.mustCLI(t, "schedule", "list"); !strings.Contains(list, id.String()) {
		t.Fatalf("schedule list lacks %s:\n%s", id, list)
	}
	d.mustCLI(t, "schedule", "delete", id.String())
	for {
		st, err := conn.GetPendingState(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if st.PendingState.State == core.StateFinished {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the deleted schedule did not finish")
		}
		time.Sleep(50 * time.Millisecond)
	}
	all := ticks()
	seen := map[core.ExecutionId]bool{}
	for _, tk := range all {
		if seen[tk] {
			t.Fatalf("tick %s created twice", tk)
		}
		seen[tk] = true
		if _, err := sdk.Await[int](ctx, w, tk); err != nil {
			t.Fatalf("tick %s: %v", tk, err)
		}
	}
	if got := int(runs.Load()); got != len(all) {
		t.Fatalf("the tick function ran %d times for %d ticks", got, len(all))
	}
}
