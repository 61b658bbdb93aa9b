package worker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/internal/apitest"
	"github.com/stela-dev/stela/internal/backendtest"
	"github.com/stela-dev/stela/worker"
)

// TestPublishedStateOverHTTP: a client reads and waits for a workflow's
// published state over the real handler on the embedded store, while it
// runs and after it finished.
func TestPublishedStateOverHTTP(t *testing.T) {
	svc := backendtest.SQLite(t)
	url := apitest.Server(t, svc)
	conn, err := client.New(url)
	if err != nil {
		t.Fatal(err)
	}
	w := worker.New(conn, worker.Options{PollWait: time.Second})
	registerPublishing(w)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id, err := w.Submit(ctx, stateWF, 5)
	if err != nil {
		t.Fatal(err)
	}
	var p progress
	if found, err := conn.GetState(ctx, id, "progress", &p); err != nil || found {
		t.Fatalf("before the run: found %v, %v", found, err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	defer func() { stop(); <-done }()
	if err := conn.WaitState(ctx, id, "progress", &p); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, func() bool {
		found, err := conn.GetState(ctx, id, "progress", &p)
		return err == nil && found && p == progress{"worked", 10}
	})
	if _, err := conn.Signal(ctx, id, "finish", nil); err != nil {
		t.Fatal(err)
	}
	if got, err := worker.Await[int](ctx, w, id); err != nil || got != 10 {
		t.Fatalf("result %d, %v", got, err)
	}
	if found, err := conn.GetState(ctx, id, "progress", &p); err != nil || !found || p != (progress{"done", 10}) {
		t.Fatalf("after the finish: %+v found %v, %v", p, found, err)
	}
	if err := conn.WaitState(ctx, id, "never", &p); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("WaitState of a key a finished workflow never set: %v, want not found", err)
	}
}
