package demo_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/examples/demo"
	"github.com/stela-dev/stela/internal/apitest"
	"github.com/stela-dev/stela/internal/backendtest"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/worker"
)

// runExamples runs every example end to end against a worker on conn:
// submit, let the worker run it, check the result. fan is the fan-out's
// width (DynamoDB Local is slow on a loaded machine).
func runExamples(t *testing.T, svc *store.Service, conn worker.Conn, fan int64) {
	backendtest.Timers(t, svc, 20*time.Millisecond)
	w := worker.New(conn, worker.Options{PollWait: 200 * time.Millisecond})
	demo.Register(w)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	t.Run("hello", func(t *testing.T) {
		got, err := demo.Hello(ctx, w, "World")
		if err != nil || got != "Hello, World!" {
			t.Fatalf("got %q, %v", got, err)
		}
	})
	t.Run("fanout", func(t *testing.T) {
		got, err := demo.FanOut(ctx, w, fan)
		if want := fan * (fan + 1) * (2*fan + 1) / 6; err != nil || got != want {
			t.Fatalf("got %d, %v; want %d", got, err, want)
		}
	})
	t.Run("saga", func(t *testing.T) {
		got, err := demo.PlaceOrderAndWait(ctx, w, demo.Order{ID: "o1", Item: "book", Amount: 30, CoolingOff: 100 * time.Millisecond})
		if err != nil || got.Tracking != "track-o1" || got.Payment != "pay-o1" {
			t.Fatalf("got %+v, %v", got, err)
		}
	})
	t.Run("saga-compensation", func(t *testing.T) {
		id, err := w.Submit(ctx, demo.PlaceOrderFFQN, demo.Order{ID: "o2", Item: "car", Amount: demo.PaymentLimit + 1})
		if err != nil {
			t.Fatal(err)
		}
		_, err = worker.Await[demo.Receipt](ctx, w, id)
		var re *worker.ResultError
		if !errors.As(err, &re) || re.Result.Kind != core.ReturnErr || !strings.Contains(err.Error(), "rolled back") {
			t.Fatalf("want the order rolled back, got %v", err)
		}
		log, err := svc.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		released := false
		for _, h := range log.EventHistory() {
			if r, ok := h.Event.(*core.JoinSetRequestEvent); ok {
				if c, ok := r.Request.(*core.ChildExecutionRequest); ok && c.TargetFFQN.String() == demo.ReleaseFFQN {
					released = true
				}
			}
		}
		if !released {
			t.Fatal("the reservation was not released")
		}
	})
}

// TestExamplesInProcess runs the examples with the worker calling the
// store in-process, on the embedded store and on DynamoDB.
func TestExamplesInProcess(t *testing.T) {
	backendtest.Each(t, func(t *testing.T, svc *store.Service) { runExamples(t, svc, svc, fanWidth(t)) })
}

// TestExamplesOverHTTP runs them with the worker calling an in-process
// server (the HTTP API of `stela dev`) through package client.
func TestExamplesOverHTTP(t *testing.T) {
	backendtest.Each(t, func(t *testing.T, svc *store.Service) {
		conn, err := client.New(apitest.Server(t, svc))
		if err != nil {
			t.Fatal(err)
		}
		runExamples(t, svc, conn, fanWidth(t))
	})
}

// fanWidth is the fan-out example's width on the test's backend.
func fanWidth(t *testing.T) int64 {
	if strings.HasSuffix(t.Name(), "dynamodb") {
		return 8
	}
	return 50
}
