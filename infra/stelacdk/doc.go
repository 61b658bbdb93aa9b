// Package stelacdk is Stela's CDK construct library (Go CDK): a user's own
// CDK app composes it into its stacks.
//
//	stack := awscdk.NewStack(app, jsii.String("Shop"), nil)
//	stela := stelacdk.NewStela(stack, "Stela", &stelacdk.StelaProps{BuildFromSource: true})
//	stelacdk.NewWorker(stack, "Orders", &stelacdk.WorkerProps{Stela: stela, Entry: "../cmd/worker"})
//
// NewStela defines the store and its service: the DynamoDB table (the
// dynamo package's schema, TTL, point-in-time recovery), the CAS bucket,
// the api, lock, append and timers functions, the HTTP API (IAM or JWT) with
// its stage and routes, the worker function URLs, the timers schedule and
// its dead-letter queue, alarms, dashboard and retention; StelaProps are
// typed (FromContext reads them from the CDK context, as Stela's own app
// infra/main.go does through NewStelaStack).
//
// NewWorker adds a worker function running the user's main (a
// lambdaworker.Start call) on a Stela: its role grants exactly
// WorkerAccess on that Stela's table and bucket, an EventBridge schedule
// runs a pass, a managed policy allows invoking it on demand, failed
// scheduled passes go to its dead-letter queue, and its errors and dead
// letters alarm on the Stela's topic. Several workers may share a Stela.
//
// The module github.com/stela-dev/stela/infra is importable from another
// module (examples/aws-app does, with replace directives while it lives in
// this repository).
package stelacdk
