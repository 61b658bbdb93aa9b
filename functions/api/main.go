// Command api is the Lambda behind API Gateway (HTTP API, payload 2.0) that
// serves Stela's whole HTTP API (package httpapi) on DynamoDB and S3.
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
	lambda.Start(functions.Instrument(a.Telemetry(), functions.NewAPI(a.Store, a.CAS, a.HTTPOptions()).Handle))
}
