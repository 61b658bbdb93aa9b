// Command saga runs the order saga against `stela dev`: one order that
// ships after a 2 s cooling-off period (a durable sleep), and one whose
// payment is declined, so its reservation is released (the compensation).
//
//	go run ./examples/saga
package main

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/stela-dev/stela/examples/demo"
	"github.com/stela-dev/stela/worker"
)

func main() {
	os.Exit(demo.Main(os.Args, os.Stdout, os.Stderr, func(ctx context.Context, w *worker.Worker) (any, error) {
		shipped, err := demo.PlaceOrderAndWait(ctx, w, demo.Order{ID: "o-1", Item: "book", Amount: 30, CoolingOff: 2 * time.Second})
		if err != nil {
			return nil, err
		}
		_, declined := demo.PlaceOrderAndWait(ctx, w, demo.Order{ID: "o-2", Item: "car", Amount: 25000})
		if declined == nil {
			return nil, errors.New("the order above the payment limit was not declined")
		}
		return map[string]any{"shipped": shipped, "declined": declined.Error()}, nil
	}))
}
