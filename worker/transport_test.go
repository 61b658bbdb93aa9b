package worker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/internal/apitest"
	"github.com/stela-dev/stela/internal/backendtest"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/worker"
)

// Both transports satisfy Conn without an adapter.
var (
	_ worker.Conn = (*client.Client)(nil)
	_ worker.Conn = (*store.Service)(nil)
)

// TestSDKOnBothTransports runs the same workflows through the worker
// calling the store in-process and over HTTP, on every backend: a call, a
// durable sleep and a second call; and a fan-out (on SQLite to 50 children,
// more than one append of children; fewer on the slow DynamoDB Local)
// joined in arrival order.
func TestSDKOnBothTransports(t *testing.T) {
	backendtest.Each(t, func(t *testing.T, svc *store.Service) {
		width := 50
		if strings.HasSuffix(t.Name(), "dynamodb") {
			width = 10
		}
		backendtest.Timers(t, svc, 20*time.Millisecond)
		url := apitest.Server(t, svc)
		httpConn, err := client.New(url)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name string
			conn worker.Conn
		}{{"in-process", svc}, {"http", httpConn}} {
			t.Run(tc.name, func(t *testing.T) {
				w := worker.New(tc.conn, worker.Options{PollWait: 500 * time.Millisecond, Name: "transport-" + tc.name})
				fan := "demo:test/workflow.fan-" + tc.name
				worker.Activity(w, greetFFQN, greet)
				worker.Workflow(w, twiceFFQN, twice)
				worker.Workflow(w, fan, greetAll)
				runFor(t, w)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				id, err := w.Submit(ctx, twiceFFQN, "World")
				if err != nil {
					t.Fatal(err)
				}
				if got, err := worker.Await[string](ctx, w, id); err != nil || got != "Hello, Hello, World!!" {
					t.Fatalf("call-sleep-call: %q, %v", got, err)
				}
				id, err = w.Submit(ctx, fan, width)
				if err != nil {
					t.Fatal(err)
				}
				if got, err := worker.Await[int](ctx, w, id); err != nil || got != 10*len("Hello, 0!")+(width-10)*len("Hello, 10!") {
					t.Fatalf("fan-out: %d, %v", got, err)
				}
			})
		}
	})
}
