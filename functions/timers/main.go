// Command timers is the Lambda an EventBridge schedule invokes (e.g. every
// minute): it sweeps every second until shortly before its deadline, so
// delays fire and expired locks are resolved with about 1 s resolution.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/functions"
	"github.com/stela-dev/stela/functions/app"
)

func main() {
	a, err := app.FromEnv(context.Background())
	if err != nil {
		slog.Error("init failed", core.LogKeyErr, err)
		os.Exit(1)
	}
	lambda.Start(functions.NewTimers(a.Store, a.Clock, a.TimersOptions()).Handle)
}
