package demo_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stela-dev/stela/examples/demo"
	"github.com/stela-dev/stela/internal/apitest"
	"github.com/stela-dev/stela/internal/backendtest"
	"github.com/stela-dev/stela/worker"
)

// TestMainRunsAnExampleAgainstAServer runs the examples' main wiring
// (flags, client, worker, result printing) against an in-process server.
func TestMainRunsAnExampleAgainstAServer(t *testing.T) {
	svc := backendtest.SQLite(t)
	backendtest.Timers(t, svc, 20*time.Millisecond)
	url := apitest.Server(t, svc)
	var out, errb bytes.Buffer
	code := demo.Main([]string{"saga", "--url", url}, &out, &errb, func(ctx context.Context, w *worker.Worker) (any, error) {
		return demo.PlaceOrderAndWait(ctx, w, demo.Order{ID: "o1", Item: "pen", Amount: 3, CoolingOff: 50 * time.Millisecond})
	})
	if code != 0 || !strings.Contains(out.String(), `"tracking": "track-o1"`) {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out.String(), errb.String())
	}
}

func TestMainExplainsAnUnreachableServer(t *testing.T) {
	var out, errb bytes.Buffer
	code := demo.Main([]string{"hello", "--url", "http://127.0.0.1:1", "--timeout", "5s"}, &out, &errb,
		func(ctx context.Context, w *worker.Worker) (any, error) { return demo.Hello(ctx, w, "World") })
	if code != 1 || !strings.Contains(errb.String(), "stela dev") {
		t.Fatalf("exit %d, stderr: %s", code, errb.String())
	}
}
