// Command stela runs Stela locally (`stela dev`), operates executions,
// delays and deployments over the HTTP API, and benchmarks a server
// (`stela bench`). Run `stela --help` for the commands.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/stela-dev/stela/cmd/stela/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], cli.Env{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv})
	stop()
	os.Exit(code)
}
