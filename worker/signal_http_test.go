package worker_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/internal/apitest"
	"github.com/stela-dev/stela/internal/backendtest"
	"github.com/stela-dev/stela/worker"
)

// TestSignalsOverHTTP: a worker and a client over the real handler on the
// embedded store. A signal sent before the workflow runs and one sent
// while it waits are received in order; the stubs show in its history; a
// signal to a finished or unknown execution, or a malformed one, is a 4xx.
func TestSignalsOverHTTP(t *testing.T) {
	svc := backendtest.SQLite(t)
	url := apitest.Server(t, svc)
	conn, err := client.New(url)
	if err != nil {
		t.Fatal(err)
	}
	const ffqn = "demo:test/workflow.http-signals"
	w := worker.New(conn, worker.Options{PollWait: time.Second})
	worker.Workflow(w, ffqn, func(wf *worker.Context, _ struct{}) (string, error) {
		var got []string
		for range 2 {
			v, err := worker.WaitSignal[struct{ Name string }](wf, "item")
			if err != nil {
				return "", err
			}
			got = append(got, v.Name)
		}
		return strings.Join(got, ","), nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id, err := w.Submit(ctx, ffqn, nil)
	if err != nil {
		t.Fatal(err)
	}
	if seq, err := conn.Signal(ctx, id, "item", struct{ Name string }{"first"}); err != nil || seq != 1 {
		t.Fatalf("signal before the run: seq %d, %v", seq, err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	defer func() { stop(); <-done }()
	pollUntil(t, func() bool {
		st, err := conn.GetPendingState(ctx, id)
		return err == nil && st.PendingState.State == core.StateBlockedByJoinSet &&
			st.PendingState.Blocked.JoinSetID.String() == "n:signal/item/2"
	})
	if seq, err := conn.Signal(ctx, id, "item", struct{ Name string }{"second"}); err != nil || seq != 2 {
		t.Fatalf("signal while waiting: seq %d, %v", seq, err)
	}
	if got, err := worker.Await[string](ctx, w, id); err != nil || got != "first,second" {
		t.Fatalf("result %q, %v; want first,second", got, err)
	}
	log, err := conn.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	stubs := 0
	for _, e := range log.EventHistory() {
		if r, ok := e.Event.(*core.JoinSetRequestEvent); ok {
			if c, ok := r.Request.(*core.ChildExecutionRequest); ok && c.TargetFFQN == core.SignalFFQN {
				stubs++
			}
		}
	}
	if stubs != 2 || len(log.Responses) != 2 {
		t.Fatalf("history has %d signal stubs and %d responses, want 2 and 2", stubs, len(log.Responses))
	}

	if _, err := conn.Signal(ctx, id, "item", 1); !errors.Is(err, core.ErrAlreadyFinished) {
		t.Errorf("signal to a finished workflow: %v, want already finished", err)
	}
	if _, err := conn.Signal(ctx, core.ExecutionIdDeterministicAtUnixEpoch([32]byte{7}), "item", 1); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("signal to an unknown execution: %v, want not found", err)
	}
	for _, bad := range []struct{ path, body, want string }{
		{"/signals/item", `{"key":"k"}`, "`value`"},
		{"/signals/item", `{"value":1,"key":"` + strings.Repeat("k", 129) + `"}`, "`key`"},
		{"/signals/bad_name", `{"value":1}`, "`name`"},
		{"/signals/item", `{"value":1,"extra":2}`, "extra"},
	} {
		resp, err := http.Post(url+"/v1/executions/"+id.String()+bad.path, "application/json", bytes.NewBufferString(bad.body))
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode < 400 || resp.StatusCode >= 500 || !strings.Contains(b.String(), bad.want) {
			t.Errorf("POST %s %s: %d %s; want a 4xx naming %s", bad.path, bad.body, resp.StatusCode, b.String(), bad.want)
		}
	}
}

func pollUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 30 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
