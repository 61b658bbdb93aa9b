// Command soakworker is the worker process of the e2e soak test
// (e2e/soak_test.go): a Go SDK worker over HTTP that serves the soak's
// activities and workflows until SIGTERM (then a graceful shutdown) or
// SIGKILL. Every run of an activity body appends its token (the
// activity's parameter) to the runs file before doing its work, so the
// test can count the runs of each execution across processes.
//
//	soakworker -url http://127.0.0.1:8080 -runs /tmp/runs.txt
//
// With -acks, the time each execution it finished was acknowledged stored
// (OnFinished) is appended to that file as "<id> <unix nanoseconds>". It
// prints "executor <id>" on stdout once it runs, so the test can tell whose
// locks were whose.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/e2e/internal/soak"
	"github.com/stela-dev/stela/worker"
)

func main() {
	url := flag.String("url", "", "server URL")
	runs := flag.String("runs", "", "file each activity body run appends its token to")
	acks := flag.String("acks", "", "file each stored Finished appends its execution id and time to")
	lease := flag.Duration("lease", 2*time.Second, "LockExpiry")
	window := flag.Duration("await-window", 300*time.Millisecond, "AwaitWindow")
	poll := flag.Duration("poll", time.Second, "PollWait")
	slow := flag.Duration("slow", 600*time.Millisecond, "how long "+soak.SlowFFQN+" takes")
	flag.Parse()
	if err := run(*url, *runs, *acks, *lease, *window, *poll, *slow); err != nil {
		fmt.Fprintln(os.Stderr, "soakworker:", err)
		os.Exit(1)
	}
}

func run(url, runsPath, acksPath string, lease, window, poll, slow time.Duration) error {
	record, err := appender(runsPath)
	if err != nil {
		return err
	}
	var onFinished func(core.ExecutionId, core.ReturnValue)
	if acksPath != "" {
		ack, err := appender(acksPath)
		if err != nil {
			return err
		}
		onFinished = func(id core.ExecutionId, _ core.ReturnValue) {
			_ = ack(fmt.Sprintf("%s %d", id, time.Now().UnixNano()))
		}
	}
	conn, err := client.New(url)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	w := worker.New(conn, worker.Options{Name: "soak", LockExpiry: lease, AwaitWindow: window, PollWait: poll,
		ShutdownGrace: 3 * time.Second, Logger: logger, OnFinished: onFinished})
	soak.Register(w, record, slow)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	fmt.Printf("executor %s\n", w.ExecutorID())
	return w.Run(ctx)
}

// appender returns a function appending a line to the file at path: one
// write(2) with O_APPEND, so whole lines across processes.
func appender(path string) (func(line string) error, error) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	return func(line string) error {
		mu.Lock()
		defer mu.Unlock()
		_, err := f.WriteString(line + "\n")
		return err
	}, nil
}
