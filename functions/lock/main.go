// Command lock is the Lambda serving the worker lock routes
// (/v1/worker/lock/…, functions.LockRoutes) behind API Gateway, so lock
// traffic gets its own concurrency and IAM policy.
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
	lambda.Start(functions.Instrument(a.Telemetry(), functions.NewWorker(a.Store, a.CAS, a.HTTPOptions(), functions.LockRoutes).Handle))
}
