package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/internal/apitest"
	"github.com/stela-dev/stela/internal/backendtest"
	"github.com/stela-dev/stela/worker"
	"github.com/stela-dev/stela/worker/workertest"
)

// TestApprovalAgainstAServer: the command, against a server with timers
// (as `stela dev`), ends approved, rejected (compensated) or expired
// (compensated) as the decision says.
func TestApprovalAgainstAServer(t *testing.T) {
	svc := backendtest.SQLite(t)
	backendtest.Timers(t, svc, 50*time.Millisecond)
	url := apitest.Server(t, svc)
	for _, tc := range []struct {
		args []string
		want string
		log  string
	}{
		{[]string{"--decision", "approve"}, ": approved by ana", "progress: " + ProgressCharged},
		{[]string{"--decision", "reject", "--by", "bo"}, ": rejected by bo", "progress: " + ProgressReleased},
		{[]string{"--decision", "none", "--approval-timeout", "500ms"}, ": expired", "progress: " + ProgressReleased},
	} {
		var out, errb bytes.Buffer
		code := run(append([]string{"approval", "--url", url}, tc.args...), &out, &errb)
		if code != 0 || !strings.Contains(out.String(), tc.want) || !strings.Contains(errb.String(), tc.log) {
			t.Errorf("approval %q: exit %d, stdout %q, stderr %q; want %q and %q", tc.args, code, out.String(), errb.String(), tc.want, tc.log)
		}
	}
}

// TestApprovalInWorkertest: the workflow with a simulated clock — an
// approval signalled before the wait charges; no decision within the
// timeout releases the reservation; its logs are in the execution log.
func TestApprovalInWorkertest(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	Register(env.Worker)
	approved := env.Submit(OrderFFQN, Order{ID: "o1", Amount: 10, ApprovalTimeout: time.Hour})
	env.Signal(approved, "approval", Decision{Approved: true, By: "ana"})
	expired := env.Submit(OrderFFQN, Order{ID: "o2", Amount: 10, ApprovalTimeout: time.Hour})
	env.Run()
	var step string
	if !env.State(expired, "progress", &step) || step != ProgressReserved {
		t.Fatalf("o2 progress %q, want %q", step, ProgressReserved)
	}
	env.Advance(time.Hour)
	env.Advance(0) // the cancellation driver finishes the timed-out signal stub
	if got, err := workertest.Result[Outcome](env, approved); err != nil || got.Status != "approved" || got.Payment != "pay-o1" {
		t.Fatalf("o1: %+v, %v", got, err)
	}
	if got, err := workertest.Result[Outcome](env, expired); err != nil || got.Status != "expired" {
		t.Fatalf("o2: %+v, %v", got, err)
	}
	if !env.State(expired, "progress", &step) || step != ProgressReleased {
		t.Fatalf("o2 progress %q, want %q", step, ProgressReleased)
	}
	logs, err := env.Store.ListLogs(context.Background(), expired, true, core.LogFilter{ShowLogs: true},
		core.Pagination[core.LogCursor]{Direction: core.NewerThan, Length: 100, Cursor: core.LogCursorMin})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, r := range logs.Items {
		msgs = append(msgs, r.Entry.Message)
	}
	if all := strings.Join(msgs, "\n"); !strings.Contains(all, "order not approved; compensating") || !strings.Contains(all, "releasing stock") {
		t.Fatalf("o2 logs:\n%s", all)
	}
}
