package worker_test

import (
	"context"
	"fmt"

	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/store/mem"
	"github.com/stela-dev/stela/worker"
)

// The examples below are the runnable snippets of docs/worker.md: each runs
// a worker over an in-memory store until nothing is left to do.

func ExampleActivityInfoFrom() {
	w := worker.New(store.New(mem.New(), store.Options{}), worker.Options{})
	defer w.Close()
	worker.Activity(w, "demo:info/payments.charge", func(ctx context.Context, amount int) (string, error) {
		info, _ := worker.ActivityInfoFrom(ctx)
		// The execution id is the same on every retry: an idempotency key.
		key := info.ExecutionID.String()
		return fmt.Sprintf("charged %d (attempt %d, key of %d chars)", amount, info.Attempt, len(key)), nil
	})
	ctx := context.Background()
	id, _ := w.Submit(ctx, "demo:info/payments.charge", 30)
	_ = w.RunUntilIdle(ctx)
	fmt.Println(worker.Await[string](ctx, w, id))
	// Output: charged 30 (attempt 1, key of 28 chars) <nil>
}
