package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/stela-dev/stela/infra/stelacdk"
)

// AppProps configure NewAppStack.
type AppProps struct {
	awscdk.StackProps
	// StelaBuildDir, if set, holds Stela's own functions (api, lock,
	// append, timers: <name>/bootstrap); empty: the construct builds them
	// from the Stela module this go.mod requires.
	StelaBuildDir string
	// WorkerAssetDir, if set, holds the worker's built bootstrap; empty:
	// the construct builds ../cmd/worker itself.
	WorkerAssetDir string
}

// NewAppStack is the whole deployment: Stela and one worker on it.
func NewAppStack(scope constructs.Construct, id string, props *AppProps) awscdk.Stack {
	stack := awscdk.NewStack(scope, jsii.String(id), &props.StackProps)
	stela := stelacdk.NewStela(stack, "Stela", &stelacdk.StelaProps{BuildDir: props.StelaBuildDir,
		BuildFromSource: props.StelaBuildDir == ""})
	worker := &stelacdk.WorkerProps{Stela: stela, Entry: "../cmd/worker", MemoryMB: 256}
	if props.WorkerAssetDir != "" {
		worker.Entry, worker.AssetDir = "", props.WorkerAssetDir
	}
	stelacdk.NewWorker(stack, "OrdersWorker", worker)
	return stack
}
