package worker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/internal/apitest"
	"github.com/stela-dev/stela/internal/backendtest"
	"github.com/stela-dev/stela/worker"
)

// TestExecutionLogsOverHTTP: a worker over the client writes its
// workflow's and activity's records through POST /v1/worker/logs; the
// public logs route (what `stela execution logs` and the console read)
// returns them with their levels.
func TestExecutionLogsOverHTTP(t *testing.T) {
	svc := backendtest.SQLite(t)
	url := apitest.Server(t, svc)
	conn, err := client.New(url)
	if err != nil {
		t.Fatal(err)
	}
	w := worker.New(conn, worker.Options{})
	worker.Activity(w, "demo:test/activity.http-logs", func(ctx context.Context, n int) (int, error) {
		worker.Logger(ctx).Info("working", "n", n)
		return n * 3, nil
	})
	const ffqn = "demo:test/workflow.http-logs"
	worker.Workflow(w, ffqn, func(wf *worker.Context, n int) (int, error) {
		wf.Logger().Warn("starting")
		m, err := worker.Call[int](wf, "demo:test/activity.http-logs", n)
		wf.Logger().WithGroup("out").Error("done", "m", m)
		return m, err
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id, err := w.Submit(ctx, ffqn, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.RunUntilIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := worker.Await[int](ctx, w, id); err != nil || got != 6 {
		t.Fatalf("result %d, %v", got, err)
	}
	got := fmt.Sprint(execLogs(t, conn.ListLogs, id))
	want := fmt.Sprint([]logLine{{core.LogWarn, "starting"}, {core.LogInfo, "working n=2"}, {core.LogError, "done out.m=6"}})
	if got != want {
		t.Fatalf("logs over HTTP\n got %s\nwant %s", got, want)
	}
}
