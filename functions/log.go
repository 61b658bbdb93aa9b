package functions

import (
	"context"
	"log/slog"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// LogKeyAWSRequestID is the attribute carrying the Lambda invocation's
// request id on every record logged with its context.
const LogKeyAWSRequestID = "aws_request_id"

// WithRequestID wraps h so that every record logged with a Lambda
// invocation context (slog's *Context methods) carries the invocation's
// request id as LogKeyAWSRequestID.
func WithRequestID(h slog.Handler) slog.Handler { return requestIDHandler{h} }

type requestIDHandler struct{ slog.Handler }

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	if lc, ok := lambdacontext.FromContext(ctx); ok && lc.AwsRequestID != "" {
		r = r.Clone()
		r.AddAttrs(slog.String(LogKeyAWSRequestID, lc.AwsRequestID))
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestIDHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return requestIDHandler{h.Handler.WithAttrs(as)}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.Handler.WithGroup(name)}
}
