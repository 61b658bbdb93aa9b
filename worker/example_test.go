package worker_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/store/mem"
	"github.com/stela-dev/stela/store/storetest"
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

// Handles of ExampleDefineWorkflow: defined once, used to register, call,
// start and await.
var (
	addHandle   = worker.DefineActivity[worker.Params2[int, int], int]("demo:calc/math.add")
	totalHandle = worker.DefineWorkflow[[]int, int]("demo:calc/workflow.total")
)

func ExampleDefineWorkflow() {
	w := worker.New(store.New(mem.New(), store.Options{}), worker.Options{})
	defer w.Close()
	addHandle.Register(w, func(_ context.Context, p worker.Params2[int, int]) (int, error) {
		return p.P1 + p.P2, nil // WIT add(a: s64, b: s64) -> s64: params [a, b]
	})
	totalHandle.Register(w, func(wf *worker.Context, xs []int) (int, error) {
		js := wf.NewJoinSet()
		for i := 0; i+1 < len(xs); i += 2 {
			if _, err := addHandle.Submit(js, worker.Params2[int, int]{P1: xs[i], P2: xs[i+1]}); err != nil {
				return 0, err
			}
		}
		total := 0
		for js.Pending() > 0 {
			r, err := js.Next()
			if err != nil {
				return 0, err
			}
			sum, err := addHandle.Result(r) // an int: addHandle's result type
			if err != nil {
				return 0, err
			}
			total += sum
		}
		return total, nil
	})
	ctx := context.Background()
	id, _ := totalHandle.Start(ctx, w, []int{1, 2, 3, 4})
	_ = w.RunUntilIdle(ctx)
	fmt.Println(totalHandle.Await(ctx, w, id))
	// Output: 10 <nil>
}

func ExampleStartToClose() {
	svc := store.New(mem.New(), store.Options{})
	w := worker.New(svc, worker.Options{})
	defer w.Close()
	worker.Activity(w, "demo:timeout/payments.charge", func(ctx context.Context, _ worker.Unit) (string, error) {
		if info, _ := worker.ActivityInfoFrom(ctx); info.Attempt == 1 {
			<-ctx.Done() // the first run hangs: its ctx is cancelled at the deadline
			return "", context.Cause(ctx)
		}
		return "charged", nil
	}, worker.StartToClose(50*time.Millisecond), worker.RetryPolicy(1, 0))
	ctx := context.Background()
	id, _ := w.Submit(ctx, "demo:timeout/payments.charge", nil)
	_ = w.RunUntilIdle(ctx)                           // the first run times out; the worker writes nothing
	_, _ = store.Sweep(ctx, svc, core.TS(time.Now())) // the server's timers: TemporarilyTimedOut
	_ = w.RunUntilIdle(ctx)                           // the retry
	fmt.Println(worker.Await[string](ctx, w, id))
	// Output: charged <nil>
}

func ExampleScheduleToClose() {
	clock := storetest.NewSimClock(core.TS(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))) // time moves when told
	svc := store.New(mem.New(), store.Options{Clock: clock})
	w := worker.New(svc, worker.Options{Clock: clock})
	defer w.Close()
	w.Declare("demo:deadline/quotes.fetch", core.ComponentTypeActivity) // served by nobody here
	worker.Workflow(w, "demo:deadline/workflow.quote", func(wf *worker.Context, _ worker.Unit) (string, error) {
		quote, err := worker.Call[string](wf, "demo:deadline/quotes.fetch", nil, worker.ScheduleToClose(time.Minute))
		if errors.Is(err, worker.ErrScheduleToCloseTimeout) {
			return "no quote in time", nil // the workflow goes on; the call's child is cancelled when it returns
		}
		return quote, err
	})
	ctx := context.Background()
	id, _ := w.Submit(ctx, "demo:deadline/workflow.quote", nil)
	_ = w.RunUntilIdle(ctx) // the call waits
	clock.Advance(time.Minute)
	for range 2 { // the server's timers: the delay fires; then the child's cancellation
		_, _ = store.Sweep(ctx, svc, clock.Now())
		_, _ = store.DriveCancellations(ctx, svc, clock.Now(), 10)
		_ = w.RunUntilIdle(ctx)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	fmt.Println(worker.Await[string](ctx, w, id))
	// Output: no quote in time <nil>
}

func ExampleCancellable() {
	svc := store.New(mem.New(), store.Options{})
	w := worker.New(svc, worker.Options{})
	defer w.Close()
	sleepy := func(wf *worker.Context, _ worker.Unit) (string, error) { return "woke", wf.Sleep(time.Hour) }
	order := worker.DefineWorkflow[worker.Unit, string]("demo:shop/workflow.order").Cancellable()
	order.Register(w, sleepy) // serves demo:shop/workflow.order-cancellable
	plain := worker.DefineWorkflow[worker.Unit, string]("demo:shop/workflow.quote")
	plain.Register(w, sleepy)
	ctx := context.Background()
	id, _ := order.Start(ctx, w, worker.Unit{})
	other, _ := plain.Start(ctx, w, worker.Unit{})
	_ = w.RunUntilIdle(ctx) // both park on their sleep
	_, err := svc.CancelWorkflow(ctx, id, core.TS(time.Now()))
	fmt.Println(order.FFQN(), err)
	_, err = svc.CancelWorkflow(ctx, other, core.TS(time.Now()))
	var refused *core.IllegalStateError
	fmt.Println(plain.FFQN(), errors.As(err, &refused))
	// Output:
	// demo:shop/workflow.order-cancellable <nil>
	// demo:shop/workflow.quote true
}

func ExampleCallStartToClose() {
	svc := store.New(mem.New(), store.Options{})
	w := worker.New(svc, worker.Options{})
	defer w.Close()
	worker.Activity(w, "demo:timeout/payments.charge", func(ctx context.Context, _ worker.Unit) (string, error) {
		if info, _ := worker.ActivityInfoFrom(ctx); info.Attempt == 1 {
			<-ctx.Done() // the first run hangs: its ctx is cancelled at the call's deadline
			return "", context.Cause(ctx)
		}
		return "charged", nil
	}, worker.RetryPolicy(1, 0)) // no StartToClose of its own
	worker.Workflow(w, "demo:timeout/workflow.pay", func(wf *worker.Context, _ worker.Unit) (string, error) {
		return worker.Call[string](wf, "demo:timeout/payments.charge", nil, worker.CallStartToClose(50*time.Millisecond))
	})
	ctx := context.Background()
	id, _ := w.Submit(ctx, "demo:timeout/workflow.pay", nil)
	_ = w.RunUntilIdle(ctx)                           // the child's first run times out; the worker writes nothing
	_, _ = store.Sweep(ctx, svc, core.TS(time.Now())) // the server's timers: TemporarilyTimedOut
	_ = w.RunUntilIdle(ctx)                           // the retry, then the workflow
	fmt.Println(worker.Await[string](ctx, w, id))
	// Output: charged <nil>
}
