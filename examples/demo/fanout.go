package demo

import (
	"context"

	"github.com/stela-dev/stela/worker"
)

// Functions of the fan-out example.
const (
	// SquareFFQN is an activity: square(n) → n².
	SquareFFQN = "demo:fanout/math.square"
	// SumOfSquaresFFQN is a workflow: sum-of-squares(n) → 1² + … + n²,
	// computed by n square activities running in parallel.
	SumOfSquaresFFQN = "demo:fanout/workflow.sum-of-squares"
)

// Square is the activity each child runs.
func Square(_ context.Context, n int64) (int64, error) { return n * n, nil }

// SumOfSquares fans out one child per number into a join set, then fans
// in: it awaits the responses in the order they arrive and adds them up.
func SumOfSquares(wf *worker.Context, n int64) (int64, error) {
	js := wf.NewJoinSet()
	for i := int64(1); i <= n; i++ {
		if _, err := js.Submit(SquareFFQN, i); err != nil {
			return 0, err
		}
	}
	var sum int64
	for range n {
		resp, err := js.Next()
		if err != nil {
			return 0, err
		}
		sq, err := worker.Result[int64](resp)
		if err != nil {
			return 0, err
		}
		sum += sq
	}
	return sum, nil
}

// RegisterFanOut registers the fan-out example's functions.
func RegisterFanOut(w *worker.Worker) {
	worker.Activity(w, SquareFFQN, Square)
	worker.Workflow(w, SumOfSquaresFFQN, SumOfSquares)
}

// FanOut submits sum-of-squares(n) and waits for its result.
func FanOut(ctx context.Context, w *worker.Worker, n int64) (int64, error) {
	id, err := w.Submit(ctx, SumOfSquaresFFQN, n)
	if err != nil {
		return 0, err
	}
	return worker.Await[int64](ctx, w, id)
}
