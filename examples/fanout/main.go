// Command fanout runs the fan-out / fan-in workflow against `stela dev`:
// sum-of-squares(100) submits 100 square activities into one join set and
// adds their results up as they arrive.
//
//	go run ./examples/fanout
package main

import (
	"context"
	"os"

	"github.com/stela-dev/stela/examples/demo"
	"github.com/stela-dev/stela/worker"
)

func main() {
	os.Exit(demo.Main(os.Args, os.Stdout, os.Stderr, func(ctx context.Context, w *worker.Worker) (any, error) {
		return demo.FanOut(ctx, w, 100)
	}))
}
