// Package dynamoenv builds DynamoDB clients from the AWS SDK's default
// configuration chain (config.LoadDefaultConfig: environment, shared config
// and credentials files, SSO, web identity, container and instance roles)
// for the tools and tests that run on a developer's machine or in CI.
//
// It is not in package dynamo so that the Lambda functions, which link
// dynamo, do not link package config and its credential providers (SSO,
// STS, sign-in, IMDS: 1.5 MB of every function); they configure the SDK
// from the Lambda environment (functions/app.AWSConfigFromEnv).
package dynamoenv

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// NewClient builds a DynamoDB client from the default configuration chain
// (credentials, region, AWS_ENDPOINT_URL_DYNAMODB / AWS_ENDPOINT_URL). For
// a non-AWS endpoint (DynamoDB Local) it disables the response CRC32
// check, which such endpoints do not support on errors.
func NewClient(ctx context.Context, optFns ...func(*dynamodb.Options)) (*dynamodb.Client, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("dynamoenv: load AWS config: %w", err)
	}
	fns := append([]func(*dynamodb.Options){func(o *dynamodb.Options) {
		if o.BaseEndpoint != nil && isLocalEndpoint(*o.BaseEndpoint) {
			o.DisableValidateResponseChecksum = true
		}
	}}, optFns...)
	return dynamodb.NewFromConfig(cfg, fns...), nil
}

func isLocalEndpoint(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil {
		return false
	}
	host := u.Hostname()
	return !strings.HasSuffix(host, ".amazonaws.com") && !strings.HasSuffix(host, ".amazonaws.com.cn")
}
