// Command cdk is the sample application's CDK app: `go run .` (or `cdk
// synth`) writes cdk.out/AwsApp.template.json. The Stela construct builds
// Stela's functions and the worker (../cmd/worker) for linux/arm64 while it
// synthesizes.
package main

import (
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

func main() {
	defer jsii.Close()
	var outdir *string
	if os.Getenv("CDK_OUTDIR") == "" { // set by the cdk CLI
		outdir = jsii.String("cdk.out")
	}
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: outdir})
	NewAppStack(app, "AwsApp", &AppProps{})
	app.Synth(nil)
}
