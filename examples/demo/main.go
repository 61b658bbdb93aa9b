package demo

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/worker"
)

// Main is the body of an example's main that takes no arguments but flags:
// MainArgs with none.
func Main(args []string, stdout, stderr io.Writer, run func(ctx context.Context, w *worker.Worker) (any, error)) int {
	return MainArgs(args, "", 0, stdout, stderr, func(ctx context.Context, w *worker.Worker, _ []string) (any, error) {
		return run(ctx, w)
	})
}

// MainArgs is the body of an example's main: it connects to the server
// (--url, else $STELA_URL, else http://127.0.0.1:8080; --token, else
// $STELA_API_TOKEN), runs a worker with every example function, calls run
// with the positional arguments, prints its result as JSON, and stops the
// worker. It returns the exit code: 2, with the usage, for bad flags or more
// than maxArgs arguments (synopsis describes them, e.g. "[name]"). Flags may
// come before or after the arguments.
func MainArgs(args []string, synopsis string, maxArgs int, stdout, stderr io.Writer,
	run func(ctx context.Context, w *worker.Worker, args []string) (any, error)) int {
	name := filepath.Base(args[0])
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: %s [flags]%s\n\nFlags:\n", name, strings.TrimRight(" "+synopsis, " "))
		fs.PrintDefaults()
	}
	url := fs.String("url", envOr("STELA_URL", "http://127.0.0.1:8080"), "Stela server `URL` (start one with: go run ./cmd/stela dev)")
	token := fs.String("token", os.Getenv("STELA_API_TOKEN"), "bearer token of the server, if it requires one")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	var pos []string
	for rest := args[1:]; ; {
		if err := fs.Parse(rest); errors.Is(err, flag.ErrHelp) {
			return 0
		} else if err != nil {
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(pos) > maxArgs {
		fmt.Fprintf(stderr, "%s: too many arguments: %q\n", name, pos)
		fs.Usage()
		return 2
	}
	// A person is watching: a server that is not running is reported
	// after about a second of refused connections, not the SDK's 10 s.
	retry := client.DefaultRetry
	retry.Refused = time.Second
	conn, err := client.New(*url, client.WithToken(*token), client.WithRetry(retry))
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

	res, err := run(ctx, w, pos)
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
