package wire

// Limits of the routes: the same on every backend (docs/http-api.md).
const (
	// MaxPageLength caps `length` on every listing route (larger values are clamped).
	MaxPageLength = 100
	// DefaultPageLength is the `length` of listing routes when absent.
	DefaultPageLength = 20
	// MaxLockBatch caps `batch_size` of the worker lock routes.
	MaxLockBatch = 25
	// MaxAppendBatch caps the events (plus created children) of one worker append.
	MaxAppendBatch = 90
	// MaxAppendMany caps the items of one POST /v1/worker/append-batch/many.
	MaxAppendMany = 100
	// MaxCreateLocked caps the `requests` of one POST /v1/worker/create-locked
	// (a batch of eager starts).
	MaxCreateLocked = 100
	// MaxLogBatch caps the rows of one worker log append.
	MaxLogBatch = 1000
	// MaxBacktraceBatch caps the backtraces of one worker backtrace append.
	MaxBacktraceBatch = 90
	// MaxCancellingBatch caps `batch_size` of GET /v1/worker/cancelling.
	MaxCancellingBatch = 100
)
