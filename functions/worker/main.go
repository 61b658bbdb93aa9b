// Command worker is the Lambda that runs worker passes (workerpass.Pass)
// over the example functions (examples/demo): an EventBridge schedule and
// on-demand invocations each lock what is pending, run it and release what
// does not fit in the invocation. It calls the store directly (DynamoDB),
// like the timers function. Replace demo.Register with your own functions.
package main

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/stela-dev/stela/examples/demo"
	"github.com/stela-dev/stela/functions"
	"github.com/stela-dev/stela/functions/app"
	"github.com/stela-dev/stela/functions/workerpass"
	"github.com/stela-dev/stela/worker"
)

func main() {
	a, err := app.FromEnv(context.Background())
	if err != nil {
		slog.Error("init failed", "err", err)
		os.Exit(1)
	}
	w := worker.New(a.Store, worker.Options{Name: "lambda-worker", Clock: a.Clock, Logger: a.Logger, ShutdownGrace: 2 * time.Second})
	demo.Register(w)
	lambda.Start(functions.Instrument(a.Telemetry(), workerpass.New(w, workerpass.Options{Logger: a.Logger}).Handle))
}
