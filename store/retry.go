package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/stela-dev/stela/core"
)

// Again marks err as transient: Retry calls fn again after a backoff.
func Again(err error) error { return &againError{err} }

type againError struct{ err error }

func (e *againError) Error() string { return e.err.Error() }
func (e *againError) Unwrap() error { return e.err }

// Retry is the one retry loop of the store and its adapters. It calls fn
// (attempt = 1, 2, …) until fn returns nil or an error not marked with
// Again, at most attempts times, waiting Backoff(attempt) in between. When
// the attempts are used up it gives up with "<what> gave up after <n>
// attempts: unavailable: <last error>", wrapping both core.ErrUnavailable
// (the HTTP edge answers 503 with Retry-After) and the last error. A done
// ctx ends the wait with ctx.Err().
func Retry(ctx context.Context, what string, attempts int, fn func(attempt int) error) error {
	for attempt := 1; ; attempt++ {
		err := fn(attempt)
		var again *againError
		if !errors.As(err, &again) {
			return err
		}
		if attempt >= attempts {
			return fmt.Errorf("%s gave up after %d attempts: %w: %w", what, attempt, core.ErrUnavailable, again.err)
		}
		if err := Backoff(ctx, attempt); err != nil {
			return err
		}
	}
}

// Backoff waits a jittered, exponentially growing delay: 5 ms << attempt,
// capped at 640 ms, of which a random half is waited (so 5–10 ms after the
// first attempt). It returns ctx.Err() if ctx is done first.
func Backoff(ctx context.Context, attempt int) error {
	d := 5 * time.Millisecond << min(max(attempt, 0), 7)
	return Sleep(ctx, d/2+rand.N(d/2+1))
}

// Sleep waits d; it returns ctx.Err() if ctx is done first.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
