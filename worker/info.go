package worker

import (
	"context"
	"time"

	"github.com/stela-dev/stela/core"
)

// ActivityInfo describes the activity execution a context belongs to (see
// ActivityInfoFrom).
type ActivityInfo struct {
	// ExecutionID is the activity's execution (a child's is derived from
	// its parent's: <parent id>.<join set>_<k>).
	ExecutionID core.ExecutionId
	// FFQN is the function the execution runs.
	FFQN core.FunctionFqn
	// Attempt is 1 for the first run and n+1 for a run after n recorded
	// temporary failures or timeouts (TemporarilyFailed, TemporarilyTimedOut:
	// the store's intermittent event count). A run released unfinished
	// (a worker stopping, a lost lease) is not counted, so the next run
	// has the same attempt.
	Attempt uint32
	// MaxRetries is the retry policy the run was locked with (nil:
	// unlimited); the last attempt is MaxRetries+1.
	MaxRetries *uint32
	// Deadline is when this run's start-to-close timeout ends (see
	// StartToClose), on the worker's clock; zero when it has none. The
	// ctx is then cancelled with cause ErrStartToCloseTimeout (ctx has no
	// Deadline of its own: the clock may be simulated).
	Deadline time.Time
	// LockExpiresAt is the lease's expiry when the run started; the worker
	// extends it while the function runs.
	LockExpiresAt time.Time
	// Parent is the workflow that called the activity and the join set it
	// awaits the result in; nil for a top-level execution.
	Parent *core.Parent
	// RunID identifies this run (the lock's run id).
	RunID core.RunId
}

type activityInfoKey struct{}

// ActivityInfoFrom returns the info of the activity run ctx was given to
// (an activity's ctx or one derived from it); false for any other context.
func ActivityInfoFrom(ctx context.Context) (ActivityInfo, bool) {
	info, ok := ctx.Value(activityInfoKey{}).(*ActivityInfo)
	if !ok {
		return ActivityInfo{}, false
	}
	out := *info
	if out.Parent != nil {
		p := *out.Parent
		out.Parent = &p
	}
	return out, true
}

// activityInfo builds the info of a run of le, whose start-to-close
// deadline is deadline (zero: none).
func activityInfo(le core.LockedExecution, deadline time.Time) *ActivityInfo {
	info := &ActivityInfo{ExecutionID: le.ExecutionID, FFQN: le.FFQN, Attempt: le.IntermittentEventCount + 1,
		Deadline: deadline, LockExpiresAt: le.LockedEvent.LockExpiresAt.Time, RunID: le.LockedEvent.RunID}
	if r := le.LockedEvent.RetryConfig.MaxRetries; r != nil {
		n := *r
		info.MaxRetries = &n
	}
	if le.Parent != nil {
		p := *le.Parent
		info.Parent = &p
	}
	return info
}

func withActivityInfo(ctx context.Context, info *ActivityInfo) context.Context {
	return context.WithValue(ctx, activityInfoKey{}, info)
}
