package worker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/worker"
	"github.com/stela-dev/stela/worker/workertest"
)

const logWF = "demo:test/workflow.logs"

// registerLogging: an activity and a workflow that log at several levels,
// the workflow on both sides of a sleep (so a replay re-runs the first).
func registerLogging(w *worker.Worker) {
	worker.Activity(w, "demo:test/activity.logs", func(ctx context.Context, n int) (int, error) {
		worker.Logger(ctx).With("n", n).Warn("activity warns")
		return n + 1, nil
	})
	worker.Workflow(w, logWF, func(wf *worker.Context, n int) (int, error) {
		log := wf.Logger()
		log.Debug("before", "n", n)
		m, err := worker.Call[int](wf, "demo:test/activity.logs", n)
		if err != nil {
			return 0, err
		}
		if err := wf.Sleep(time.Minute); err != nil {
			return 0, err
		}
		log.Error("after", "m", m)
		return m, nil
	})
}

type logLine struct {
	level core.LogLevel
	msg   string
}

func execLogs(t *testing.T, list func(context.Context, core.ExecutionId, bool, core.LogFilter, core.Pagination[core.LogCursor]) (core.ListLogsResponse, error), id core.ExecutionId) []logLine {
	t.Helper()
	resp, err := list(context.Background(), id, true, core.LogFilter{ShowLogs: true},
		core.Pagination[core.LogCursor]{Direction: core.NewerThan, Length: 100, Cursor: core.LogCursorMin})
	if err != nil {
		t.Fatal(err)
	}
	var out []logLine
	for _, r := range resp.Items {
		out = append(out, logLine{r.Entry.Level, r.Entry.Message})
	}
	return out
}

// TestExecutionLogsKeepLevelsAndAreNotRepeatedOnReplay: the workflow's and
// the activity's records land in their execution logs with their levels;
// the workflow's replay after the sleep (its run was forgotten) does not
// write the first record again.
func TestExecutionLogsKeepLevelsAndAreNotRepeatedOnReplay(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	registerLogging(env.Worker)
	id := env.Submit(logWF, 1)
	env.Run()
	env.Worker.Close() // the next lock replays "before"
	env.Advance(time.Minute)
	if got, err := workertest.Result[int](env, id); err != nil || got != 2 {
		t.Fatalf("result %d, %v", got, err)
	}
	got := fmt.Sprint(execLogs(t, env.Store.ListLogs, id))
	want := fmt.Sprint([]logLine{{core.LogDebug, "before n=1"}, {core.LogWarn, "activity warns n=1"}, {core.LogError, "after m=2"}})
	if got != want {
		t.Fatalf("logs (with the child's)\n got %s\nwant %s", got, want)
	}
}
