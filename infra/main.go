// Command infra is Stela's CDK app: it synthesizes the StelaStack
// (package stelacdk: one stack holding the Stela construct, with the props
// read from the CDK context) CloudFormation template into cdk.out (`cd infra && go run .`, or
// `cdk synth` through cdk.json). The functions' bootstrap binaries must be
// in build/<name>/bootstrap first (scripts/build-lambdas.sh). With
// STELA_PLACEHOLDER_ASSETS=1 and a binary missing, every function gets a
// placeholder from a temporary directory instead, for template checks only
// (never written into build/, so it cannot be deployed by mistake).
//
// Context (cdk -c key=value, or the CDK_CONTEXT_JSON environment variable):
// jwtIssuer and jwtAudience (comma-separated) select a JWT authorizer instead
// of IAM; packaging=sam makes the template deployable with `sam deploy`;
// throttleRate / throttleBurst limit the API stage; worker=true adds the
// example worker function (examples/lambda-worker) with its schedule and
// invoke policy;
// alarmTopicArn, alarmEmail, the alarm* thresholds, tracing=xray and
// otelEndpoint configure the monitoring (monitoring.go, docs/operations.md).
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/stela-dev/stela/infra/stelacdk"
)

func main() {
	defer jsii.Close()
	var outdir *string
	if os.Getenv("CDK_OUTDIR") == "" { // set by the cdk CLI
		outdir = jsii.String("cdk.out")
	}
	app := awscdk.NewApp(&awscdk.AppProps{
		Outdir: outdir,
		// Asset and path metadata let `sam local` find each function's code
		// in cdk.out and name it by construct path, even when the app runs
		// without the cdk CLI (`go run .`).
		Context: &map[string]any{"aws:cdk:enable-asset-metadata": true, "aws:cdk:enable-path-metadata": true},
	})
	var props stelacdk.StelaProps
	stelacdk.FromContext(app.Node(), &props)
	buildDir, cleanup, err := assetDir("build", stelacdk.FunctionNames(props), os.Getenv("STELA_PLACEHOLDER_ASSETS") == "1")
	if err != nil {
		fmt.Fprintln(os.Stderr, "infra:", err)
		os.Exit(1)
	}
	defer cleanup()
	props.BuildDir = buildDir
	stelacdk.NewStelaStack(app, stelacdk.StackName, &stelacdk.StelaStackProps{
		StackProps: awscdk.StackProps{Env: envFromCLI()},
		StelaProps: props,
	})
	app.Synth(nil)
}

// envFromCLI pins the stack to the account and region of the cdk CLI, when
// it runs us; otherwise the template stays environment-agnostic.
func envFromCLI() *awscdk.Environment {
	acct, region := os.Getenv("CDK_DEFAULT_ACCOUNT"), os.Getenv("CDK_DEFAULT_REGION")
	if acct == "" || region == "" {
		return nil
	}
	return &awscdk.Environment{Account: jsii.String(acct), Region: jsii.String(region)}
}

// assetDir returns buildDir when every function of names has
// <name>/bootstrap in it. Otherwise, with placeholders set, it returns a
// temporary directory of placeholders (removed by cleanup); without, an error.
func assetDir(buildDir string, names []string, placeholders bool) (dir string, cleanup func(), err error) {
	var missing []string
	for _, name := range names {
		p := filepath.Join(buildDir, name, "bootstrap")
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) == 0 {
		return buildDir, func() {}, nil
	}
	if !placeholders {
		return "", nil, fmt.Errorf("missing %v: run scripts/build-lambdas.sh (or set STELA_PLACEHOLDER_ASSETS=1 to synthesize with placeholders)", missing)
	}
	tmp, err := os.MkdirTemp("", "stela-placeholder-assets-")
	if err != nil {
		return "", nil, err
	}
	cleanup = func() { os.RemoveAll(tmp) }
	for _, name := range names {
		if err := stelacdk.WritePlaceholder(filepath.Join(tmp, name, "bootstrap")); err != nil {
			cleanup()
			return "", nil, err
		}
	}
	fmt.Fprintf(os.Stderr, "infra: %v missing; synthesizing with placeholder functions (not deployable)\n", missing)
	return tmp, cleanup, nil
}
