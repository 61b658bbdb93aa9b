// Package lambdatest helps test Lambda handlers the way the runtime calls
// them: recorded event JSON goes through lambda.NewHandler(h).Invoke, which
// decodes the payload and encodes the result exactly as aws-lambda-go does.
package lambdatest

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

// Context returns a context like the runtime's: it carries a
// lambdacontext.LambdaContext with requestID and a deadline timeout from now.
func Context(tb testing.TB, requestID string, timeout time.Duration) context.Context {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	tb.Cleanup(cancel)
	return lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: requestID,
		InvokedFunctionArn: "arn:aws:lambda:us-east-1:123456789012:function:stela-test"})
}

// MustReadEvent returns the bytes of a recorded event file.
func MustReadEvent(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// MustInvoke feeds payload to handler (any signature lambda.NewHandler
// accepts) and returns the encoded result; a handler error fails the test.
func MustInvoke(tb testing.TB, ctx context.Context, handler any, payload []byte) []byte {
	tb.Helper()
	out, err := lambda.NewHandler(handler).Invoke(ctx, payload)
	if err != nil {
		tb.Fatalf("invoke: %v", err)
	}
	return out
}

// MustInvokeHTTP feeds the API Gateway v2 event in file path to handler and
// decodes the response.
func MustInvokeHTTP(tb testing.TB, ctx context.Context, handler any, path string) events.APIGatewayV2HTTPResponse {
	tb.Helper()
	out := MustInvoke(tb, ctx, handler, MustReadEvent(tb, path))
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		tb.Fatalf("decode response of %s: %v\n%s", path, err, out)
	}
	return resp
}

// Header returns the response header name, matched case-insensitively.
func Header(resp events.APIGatewayV2HTTPResponse, name string) string {
	for k, v := range resp.Headers {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	for k, vs := range resp.MultiValueHeaders {
		if strings.EqualFold(k, name) && len(vs) > 0 {
			return vs[0]
		}
	}
	return ""
}
