// Command approval runs an order that waits for a human's approval against
// `stela dev`: it submits the order workflow, waits until the workflow
// publishes that it awaits approval, plays the human by sending the
// "approval" signal (or not, to let the approval time out), and prints the
// outcome; the workflow logs into its execution log and, on rejection or
// timeout, releases its reservation.
//
//	go run ./cmd/stela dev &                        # in another terminal
//	go run ./examples/approval                      # approved by ana
//	go run ./examples/approval --decision reject    # rejected: the reservation is released
//	go run ./examples/approval --decision none --approval-timeout 3s   # expired
//
// Then `stela execution logs <id>` (printed on stderr) shows its logs, and
// the console its timeline, with the signal's stub child.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/worker"
)

func main() { os.Exit(run(os.Args, os.Stdout, os.Stderr)) }

// run is main with its arguments and output streams; it returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("approval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", envOr("STELA_URL", "http://127.0.0.1:8080"), "Stela server `URL` (start one with: go run ./cmd/stela dev)")
	token := fs.String("token", os.Getenv("STELA_API_TOKEN"), "bearer token of the server, if it requires one")
	decision := fs.String("decision", "approve", "the human's decision: approve, reject or none (let it time out)")
	by := fs.String("by", "ana", "who decides")
	approvalTimeout := fs.Duration("approval-timeout", time.Minute, "how long the order waits for the decision")
	timeout := fs.Duration("timeout", 2*time.Minute, "give up after this long")
	if err := fs.Parse(args[1:]); errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		return 2
	}
	if *decision != "approve" && *decision != "reject" && *decision != "none" || fs.NArg() > 0 {
		fmt.Fprintf(stderr, "approval: --decision must be approve, reject or none, and no arguments\n")
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

	w := worker.New(conn, worker.Options{Name: "approval-example", PollWait: time.Second})
	Register(w)
	runCtx, stopWorker := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	out, err := order(ctx, conn, w, stderr, *decision, *by, *approvalTimeout)
	stopWorker()
	<-done
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		if client.IsUnreachable(err) {
			fmt.Fprintln(stderr, "is the server running? start one with `go run ./cmd/stela dev`")
		}
		return 1
	}
	fmt.Fprintf(stdout, "%s: %s", out.OrderID, out.Status)
	if out.By != "" {
		fmt.Fprintf(stdout, " by %s", out.By)
	}
	fmt.Fprintln(stdout)
	return 0
}

func order(ctx context.Context, c *client.Client, w *worker.Worker, progress io.Writer, decision, by string, approvalTimeout time.Duration) (Outcome, error) {
	id, err := w.Submit(ctx, OrderFFQN, Order{ID: fmt.Sprintf("o-%d", time.Now().UnixMilli()), Amount: 30, ApprovalTimeout: approvalTimeout})
	if err != nil {
		return Outcome{}, err
	}
	fmt.Fprintf(progress, "submitted %s\n", id)
	var step string
	if err := c.WaitState(ctx, id, "progress", &step); err != nil {
		return Outcome{}, err
	}
	fmt.Fprintf(progress, "progress: %s\n", step)
	if decision != "none" {
		if _, err := c.Signal(ctx, id, "approval", Decision{Approved: decision == "approve", By: by}); err != nil {
			return Outcome{}, err
		}
		fmt.Fprintf(progress, "sent approval signal: %s by %s\n", decision, by)
	}
	out, err := worker.Await[Outcome](ctx, w, id)
	if err != nil {
		return Outcome{}, err
	}
	if _, err := c.GetState(ctx, id, "progress", &step); err == nil {
		fmt.Fprintf(progress, "progress: %s\n", step)
	}
	fmt.Fprintf(progress, "logs: stela execution logs --show-derived %s\n", id)
	return out, nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
