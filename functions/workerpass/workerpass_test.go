package workerpass_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/examples/demo"
	"github.com/stela-dev/stela/functions/lambdatest"
	"github.com/stela-dev/stela/functions/workerpass"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/store/mem"
	"github.com/stela-dev/stela/worker"
)

func newStore() *store.Service { return store.New(mem.New(), store.Options{}) }

func TestWorkerFunction(t *testing.T) {
	scheduled := lambdatest.MustReadEvent(t, "testdata/scheduled-event.json")

	t.Run("PassRunsWhatIsPendingAndStopsWhenIdle", func(t *testing.T) {
		svc := newStore()
		w := worker.New(svc, worker.Options{})
		demo.Register(w)
		t.Cleanup(w.Close)
		ctx := context.Background()
		hello, err := w.Submit(ctx, demo.GreetFFQN, "Lambda")
		if err != nil {
			t.Fatal(err)
		}
		fan, err := w.Submit(ctx, demo.SumOfSquaresFFQN, 3)
		if err != nil {
			t.Fatal(err)
		}
		h := workerpass.New(w, workerpass.Options{})
		out := lambdatest.MustInvoke(t, lambdatest.Context(t, "lambda-worker", time.Minute), h.Handle, scheduled)
		var res workerpass.Result
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("decode result: %v\n%s", err, out)
		}
		// hello + 3 squares; the workflow runs at least twice (fan-out, then fan-in).
		if !res.Idle || res.Activities != 4 || res.Workflows < 2 {
			t.Errorf("result %+v", res)
		}
		// An idle pass has run everything: the results are stored (the
		// deadline turns a pass that left work behind into a failure, not
		// a hung test).
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if got, err := worker.Await[string](actx, w, hello); err != nil || got != "Hello, Lambda!" {
			t.Errorf("hello: %q, %v", got, err)
		}
		if got, err := worker.Await[int64](actx, w, fan); err != nil || got != 14 {
			t.Errorf("fan-out: %d, %v", got, err)
		}
	})

	t.Run("WorkThatDoesNotFitIsReleased", func(t *testing.T) {
		svc := newStore()
		w := worker.New(svc, worker.Options{ShutdownGrace: 10 * time.Millisecond})
		worker.Activity(w, "demo:slow/forever.wait", func(ctx context.Context, _ worker.Unit) (worker.Unit, error) {
			<-ctx.Done() // never finishes on its own
			return worker.Unit{}, ctx.Err()
		})
		id, err := w.Submit(context.Background(), "demo:slow/forever.wait", nil)
		if err != nil {
			t.Fatal(err)
		}
		h := workerpass.New(w, workerpass.Options{SafetyMargin: time.Second})
		// The invocation's deadline leaves a 100 ms pass before the margin.
		out := lambdatest.MustInvoke(t, lambdatest.Context(t, "lambda-worker", 1100*time.Millisecond), h.Handle, scheduled)
		var res workerpass.Result
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("decode result: %v\n%s", err, out)
		}
		if res.Idle || res.Activities != 1 {
			t.Errorf("result %+v, want a pass cut by its budget", res)
		}
		log, err := svc.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if u, ok := log.LastEvent().Event.(*core.Unlocked); !ok || u.Reason != "executor closing" {
			t.Fatalf("the unfinished activity must be released, last event %#v", log.LastEvent().Event)
		}
	})
}
