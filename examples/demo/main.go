package demo

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/worker"
)

// Main is the body of an example's main: it connects to the server
// (--url, else $STELA_URL, else http://127.0.0.1:8080; --token, else
// $STELA_API_TOKEN), runs a worker with every example function, calls run,
// prints its result as JSON, and stops the worker. It returns the exit code.
func Main(args []string, stdout, stderr io.Writer, run func(ctx context.Context, w *worker.Worker) (any, error)) int {
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", envOr("STELA_URL", "http://127.0.0.1:8080"), "Stela server (start one with `go run ./cmd/stela dev`)")
	token := fs.String("token", os.Getenv("STELA_API_TOKEN"), "bearer token of the server, if it requires one")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	conn, err := client.New(*url, client.WithToken(*token))
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	w := worker.New(conn, worker.Options{Name: "examples", PollWait: time.Second})
	Register(w)
	runCtx, stopWorker := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()

	res, err := run(ctx, w)
	stopWorker()
	<-done
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		if client.IsUnreachable(err) {
			fmt.Fprintln(stderr, "is the server running? start one with `go run ./cmd/stela dev`")
		}
		return 1
	}
	out, _ := json.MarshalIndent(res, "", "  ")
	fmt.Fprintln(stdout, string(out))
	return 0
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
