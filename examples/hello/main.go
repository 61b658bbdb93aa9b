// Command hello runs the hello activity against `stela dev`: it submits
// greet(name) — the first argument, else "World" — runs it on an in-process
// worker and prints the result.
//
//	go run ./cmd/stela dev &      # in another terminal
//	go run ./examples/hello       # "Hello, World!"
//	go run ./examples/hello Ada   # "Hello, Ada!"
package main

import (
	"context"
	"io"
	"os"

	"github.com/stela-dev/stela/examples/demo"
	"github.com/stela-dev/stela/worker"
)

func main() { os.Exit(run(os.Args, os.Stdout, os.Stderr)) }

// run is main with its arguments and output streams; it returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	return demo.MainArgs(args, "[name]", 1, stdout, stderr, func(ctx context.Context, w *worker.Worker, names []string) (any, error) {
		name := "World"
		if len(names) == 1 {
			name = names[0]
		}
		return demo.Hello(ctx, w, name)
	})
}
