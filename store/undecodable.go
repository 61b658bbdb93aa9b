package store

import (
	"context"
	"log/slog"
	"sync/atomic"

	"github.com/stela-dev/stela/core"
)

// Undecodable counts the stored rows a backend could not decode and left out
// of an index query's result (a listing, a sweep's candidates), so that one
// corrupt row does not stop the rest of the system. Every skip is logged at
// ERROR with the running total; the count is readable through the
// backend's Stats. A read of that exact row (Head, Event, …) still fails
// with the decoding error: corruption is surfaced, never hidden. The zero
// value is ready to use and safe for concurrent use.
type Undecodable struct{ n atomic.Int64 }

// Skip records one skipped row (what names its kind, row its key or cursor).
func (u *Undecodable) Skip(ctx context.Context, log *slog.Logger, what, row string, err error) {
	n := u.n.Add(1)
	log.LogAttrs(ctx, slog.LevelError, "undecodable row left out of a query result (corrupt data)",
		slog.String(core.LogKeyRow, what+" "+row), slog.String(core.LogKeyErr, err.Error()),
		slog.Int64(core.LogKeyTotal, n))
}

// Count returns the number of rows skipped so far.
func (u *Undecodable) Count() int64 { return u.n.Load() }
