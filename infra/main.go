// Command infra is Stela's CDK app: it synthesizes the StelaStack
// CloudFormation template into cdk.out (`cd infra && go run .`, or
// `cdk synth` through cdk.json). The functions' bootstrap binaries must be
// in build/<name>/bootstrap first (scripts/build-lambdas.sh); with
// STELA_PLACEHOLDER_ASSETS=1 missing ones are replaced by placeholders, for
// template checks only.
//
// Context (cdk -c key=value, or the CDK_CONTEXT_JSON environment variable):
// jwtIssuer and jwtAudience (comma-separated) select a JWT authorizer instead
// of IAM; packaging=sam makes the template deployable with `sam deploy`;
// throttleRate / throttleBurst limit the API stage.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

// StackName is the stack id and the name of the template file
// (cdk.out/StelaStack.template.json).
const StackName = "StelaStack"

func main() {
	defer jsii.Close()
	buildDir := "build"
	if err := checkAssets(buildDir, os.Getenv("STELA_PLACEHOLDER_ASSETS") == "1"); err != nil {
		fmt.Fprintln(os.Stderr, "infra:", err)
		os.Exit(1)
	}
	app := awscdk.NewApp(&awscdk.AppProps{
		// Asset and path metadata let `sam local` find each function's code
		// in cdk.out and name it by construct path, even when the app runs
		// without the cdk CLI (`go run .`).
		Context: &map[string]any{"aws:cdk:enable-asset-metadata": true, "aws:cdk:enable-path-metadata": true},
	})
	NewStelaStack(app, StackName, &StelaStackProps{
		StackProps: awscdk.StackProps{Env: envFromCLI()},
		BuildDir:   buildDir,
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

// checkAssets makes sure every function has build/<name>/bootstrap. With
// placeholders set, missing ones are created as stubs that exit 1.
func checkAssets(buildDir string, placeholders bool) error {
	for _, spec := range functionSpecs {
		p := filepath.Join(buildDir, spec.Name, "bootstrap")
		if _, err := os.Stat(p); err == nil {
			continue
		} else if !placeholders {
			return fmt.Errorf("%s is missing: run scripts/build-lambdas.sh (or set STELA_PLACEHOLDER_ASSETS=1 to synthesize with placeholders)", p)
		}
		if err := WritePlaceholder(p); err != nil {
			return err
		}
	}
	return nil
}

// WritePlaceholder writes a stand-in bootstrap (a shell script that exits 1)
// at path, so that the stack synthesizes without cross-compiled binaries.
func WritePlaceholder(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("placeholder %s: %w", path, err)
	}
	const stub = "#!/bin/sh\necho 'placeholder bootstrap: build the function with scripts/build-lambdas.sh' >&2\nexit 1\n"
	if err := os.WriteFile(path, []byte(stub), 0o755); err != nil {
		return fmt.Errorf("placeholder %s: %w", path, err)
	}
	return nil
}
