//go:build tools

// Package deps pins the modules the adapters use so that go.mod stays stable
// while they are written in parallel. It is never built.
package deps

import (
	_ "github.com/aws/aws-lambda-go/lambda"
	_ "github.com/aws/aws-sdk-go-v2/aws"
	_ "github.com/aws/aws-sdk-go-v2/config"
	_ "github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	_ "github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	_ "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	_ "github.com/aws/aws-sdk-go-v2/service/s3"
	_ "github.com/aws/smithy-go"
	_ "github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"
	_ "github.com/johannesboyne/gofakes3"
	_ "github.com/oklog/ulid/v2"
	_ "modernc.org/sqlite"
)
