package worker_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/worker"
	"github.com/stela-dev/stela/worker/workertest"
)

type receipt struct {
	Order string `json:"order"`
	Total int    `json:"total"`
}

// TestFinishedResultsAreTyped: what OnFinished reports decodes with
// worker.Decode into the function's result type (or a *ResultError), and
// AwaitFinished returns the decoded value with the time the execution
// finished.
func TestFinishedResultsAreTyped(t *testing.T) {
	var mu sync.Mutex
	reported := map[core.ExecutionId]core.ReturnValue{}
	env := workertest.New(t, worker.Options{OnFinished: func(id core.ExecutionId, rv core.ReturnValue) {
		mu.Lock()
		reported[id] = rv
		mu.Unlock()
	}})
	worker.Activity(env.Worker, "demo:shop/orders.total", func(_ context.Context, order string) (receipt, error) {
		if order == "" {
			return receipt{}, worker.Permanent(errors.New("no order"))
		}
		return receipt{Order: order, Total: 42}, nil
	})
	ok := env.Submit("demo:shop/orders.total", "o1")
	bad := env.Submit("demo:shop/orders.total", "")
	env.Clock.Advance(time.Minute)
	finishedAt := env.Clock.Now()
	env.Run()

	mu.Lock()
	rvOK, rvBad := reported[ok], reported[bad]
	mu.Unlock()
	if got, err := worker.Decode[receipt](ok, rvOK); err != nil || got != (receipt{Order: "o1", Total: 42}) {
		t.Fatalf("Decode(OnFinished's result) = %+v, %v", got, err)
	}
	var re *worker.ResultError
	if _, err := worker.Decode[receipt](bad, rvBad); !errors.As(err, &re) || re.ID != bad {
		t.Fatalf("Decode of an error: %v, want a *ResultError for %s", err, bad)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, err := worker.AwaitFinished[receipt](ctx, env.Worker, ok)
	if err != nil || f.Value.Total != 42 || f.ID != ok || f.Result.Kind != core.ReturnOk {
		t.Fatalf("AwaitFinished = %+v, %v", f, err)
	}
	if !f.FinishedAt.Equal(finishedAt.Time) {
		t.Fatalf("finished at %s, want %s", f.FinishedAt, finishedAt)
	}
	if f, err := worker.AwaitFinished[receipt](ctx, env.Worker, bad); !errors.As(err, &re) || f.FinishedAt.IsZero() {
		t.Fatalf("AwaitFinished of an error = %+v, %v", f, err)
	}
}
