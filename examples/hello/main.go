// Command hello runs the hello activity against `stela dev`: it submits
// greet("World") (or the first argument), runs it on an in-process worker
// and prints the result.
//
//	go run ./cmd/stela dev &      # in another terminal
//	go run ./examples/hello
package main

import (
	"context"
	"os"

	"github.com/stela-dev/stela/examples/demo"
	"github.com/stela-dev/stela/worker"
)

func main() {
	os.Exit(demo.Main(os.Args, os.Stdout, os.Stderr, func(ctx context.Context, w *worker.Worker) (any, error) {
		return demo.Hello(ctx, w, "World")
	}))
}
