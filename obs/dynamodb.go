package obs

import (
	"context"
	"errors"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
)

// throttleCodes are the DynamoDB error codes (and transaction cancellation
// reasons) of a throttled request.
var throttleCodes = map[string]bool{
	"ThrottlingException": true, "Throttling": true, "ThrottlingError": true,
	"ProvisionedThroughputExceededException": true, "ProvisionedThroughputExceeded": true,
	"RequestLimitExceeded": true,
}

// DynamoDBMiddleware counts every failed DynamoDB request attempt — inside
// the SDK's retry loop, so the throttles it retried silently count too —
// by operation and error code, and the throttled ones (a cancelled
// transaction counts when one of its reasons is a throttle). Add it to the
// client's options: o.APIOptions = append(o.APIOptions, m.DynamoDBMiddleware).
func (m *Metrics) DynamoDBMiddleware(stack *middleware.Stack) error {
	return stack.Finalize.Insert(middleware.FinalizeMiddlewareFunc("StelaMetrics",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleFinalize(ctx, in)
			if err != nil {
				m.dynamoError(awsmiddleware.GetOperationName(ctx), err)
			}
			return out, md, err
		}), "Retry", middleware.After)
}

func (m *Metrics) dynamoError(op string, err error) {
	code := "transport"
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	} else if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		code = "canceled"
	}
	throttled := throttleCodes[code]
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		for _, r := range tce.CancellationReasons {
			if r.Code != nil && throttleCodes[*r.Code] {
				throttled = true
			}
		}
	}
	m.dynamoErrs.with(op, code).inc()
	if throttled {
		m.throttles.inc()
	}
}
