package e2e_test

import (
	"context"
	"testing"
	"time"

	"github.com/stela-dev/stela/client"
	sdk "github.com/stela-dev/stela/worker"
)

// TestConsoleShowsSDKLogsAndSignals: against `stela dev`, a workflow and
// its activity log through the SDK's execution loggers and the workflow
// waits for a signal; the console's execution page shows the SDK's log
// lines (levels kept) in its Logs section and the signal's stub child in
// its timeline.
func TestConsoleShowsSDKLogsAndSignals(t *testing.T) {
	chromiumPath(t)
	d := startDev(t, t.TempDir())
	defer d.stop(t)
	conn, err := client.New(d.url)
	if err != nil {
		t.Fatal(err)
	}
	w := sdk.New(conn, sdk.Options{PollWait: 200 * time.Millisecond})
	const act, wf = "e2e:sdk/activity.log", "e2e:sdk/workflow.approve"
	sdk.Activity(w, act, func(ctx context.Context, s string) (string, error) {
		sdk.Logger(ctx).Warn("activity says hello", "s", s)
		return s + "!", nil
	})
	sdk.Workflow(w, wf, func(wf *sdk.Context, s string) (string, error) {
		wf.Logger().Info("workflow waits for approval")
		by, err := sdk.WaitSignal[string](wf, "approve")
		if err != nil {
			return "", err
		}
		if err := wf.SetState("approved-by", by); err != nil {
			return "", err
		}
		return sdk.Call[string](wf, act, s+" by "+by)
	})
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	defer runWorker(ctx, t, w)()
	id, err := w.Submit(ctx, wf, "ok")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Signal(ctx, id, "approve", "ana"); err != nil {
		t.Fatal(err)
	}
	if got, err := sdk.Await[string](ctx, w, id); err != nil || got != "ok by ana!" {
		t.Fatalf("workflow: %q, %v", got, err)
	}
	d.mustCLI(t, "execution", "signal", "--help") // the CLI knows the command
	b := newTab(t, d.url)
	b.open(execPath(id))
	b.waitFor("the workflow's log line", `[...document.querySelectorAll('#logs pre')].some((p) => p.textContent.includes('workflow waits for approval'))`)
	b.waitFor("the signal's stub in the timeline", `document.body.textContent.includes('n:signal/approve/1')`)
	b.noErrors()
}
