package core

// Keys of the log attributes every package writes (log/slog). core itself
// never logs; the keys live here, with the identifiers they name, so that
// the store, the adapters, the HTTP edge, the Lambda functions and the CLI
// write the same key for the same thing and a log query on one key finds
// them all.
const (
	// LogKeyErr is the error, as text.
	LogKeyErr = "err"
	// LogKeyExecutionID is an ExecutionId.
	LogKeyExecutionID = "execution_id"
	// LogKeyRequestID is the id of the request or commit being served: the
	// Lambda/HTTP request id, or a DynamoDB commit's request id.
	LogKeyRequestID = "request_id"
	// LogKeyDelayID is a DelayId.
	LogKeyDelayID = "delay_id"
	// LogKeyDigest is a ContentDigest or ComponentDigest.
	LogKeyDigest = "digest"
	// LogKeyPath is a file path or an HTTP path.
	LogKeyPath = "path"
	// LogKeyAttempt is the 1-based attempt of a retried operation.
	LogKeyAttempt = "attempt"
	// LogKeyRow names a stored row or item (its key or cursor).
	LogKeyRow = "row"
	// LogKeyTotal is a running total (e.g. of undecodable rows skipped).
	LogKeyTotal = "total"
)
