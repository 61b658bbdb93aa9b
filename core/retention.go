package core

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Retention of finished executions. An execution tree is a top-level
// execution (its root) and every execution derived from it (ids
// "<root>.…", docs/spec/semantics.md §1.2); a top-level execution scheduled by
// a workflow is the root of its own tree. A tree is finished when all of its
// executions are; it expires when its retention period has passed since
// its last execution finished, and then everything stored for it goes
// (store.Service.ApplyRetention). Nothing of an unfinished tree is ever
// removed, so a parent's children are kept while the parent runs and a
// child that outlives its parent keeps the whole tree.
//
// The finish time is the store's own clock at the commit that finished the
// execution (RetentionMember.FinishedAt), not the Finished event's
// created_at, which a worker writes: a worker's clock can neither make an
// execution vanish at once nor keep it forever.

// Retention is how long a finished execution tree is kept. The zero value
// keeps trees forever.
type Retention struct {
	period time.Duration
}

// DefaultRetentionPeriod is the retention `stela dev` and the Lambda
// functions use when none is configured: 30 days, long enough to inspect
// and debug a month of executions (the functions' CloudWatch log groups
// keep one month too), short enough that storage stops growing with every
// execution ever run.
const DefaultRetentionPeriod = 30 * 24 * time.Hour

// RetainForever keeps every tree (the zero Retention).
var RetainForever = Retention{}

// RetainFor keeps a finished tree for d; d <= 0 means forever.
func RetainFor(d time.Duration) Retention {
	if d <= 0 {
		return RetainForever
	}
	return Retention{period: d}
}

// Forever reports whether trees are kept forever.
func (r Retention) Forever() bool { return r.period <= 0 }

// Period is how long a finished tree is kept (0 when forever).
func (r Retention) Period() time.Duration { return max(r.period, 0) }

// String returns "forever", a whole number of days ("30d") or a Go duration
// ("36h0m0s"); ParseRetention reads each back.
func (r Retention) String() string {
	switch {
	case r.Forever():
		return "forever"
	case r.period%(24*time.Hour) == 0:
		return strconv.FormatInt(int64(r.period/(24*time.Hour)), 10) + "d"
	default:
		return r.period.String()
	}
}

// minRetention is the shortest period ParseRetention accepts: DynamoDB's
// time-to-live has a resolution of one second.
const minRetention = time.Second

// ParseRetention parses "forever", a number of days ("30d") or a Go
// duration ("720h", "90m"); a period must be at least one second.
func ParseRetention(s string) (Retention, error) {
	s = strings.TrimSpace(s)
	if s == "forever" {
		return RetainForever, nil
	}
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseUint(days, 10, 32)
		if err != nil || n > 100*365 {
			return Retention{}, fmt.Errorf("retention %q: want a number of days such as 30d", s)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return Retention{}, fmt.Errorf("retention %q: want forever, a number of days (30d) or a Go duration (720h)", s)
		}
	}
	if d < minRetention {
		return Retention{}, fmt.Errorf("retention %q: the period must be at least %s (or forever)", s, minRetention)
	}
	return RetainFor(d), nil
}

// Set implements flag.Value.
func (r *Retention) Set(s string) error {
	v, err := ParseRetention(s)
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// RetentionMember is one execution of a tree as the retention decision
// sees it.
type RetentionMember struct {
	State ExecutionState
	// FinishedAt is when the store recorded the execution's finish (its own
	// clock, at the finishing commit). Zero when it was not recorded (an
	// execution finished before retention existed): State.At, the Finished
	// event's time, stands in.
	FinishedAt Timestamp
}

// FinishTime is FinishedAt, or State.At when it was not recorded.
func (m *RetentionMember) FinishTime() Timestamp {
	if m.FinishedAt.IsZero() {
		return m.State.At
	}
	return m.FinishedAt
}

// RetentionAction is what DecideRetention decided for a tree.
type RetentionAction uint8

const (
	// RetentionKeep: the tree stays as it is (an execution of it is not
	// finished, its period has not passed on a backend that expires trees
	// when they are due, or retention is forever).
	RetentionKeep RetentionAction = iota
	// RetentionExpire: the tree expires at ExpiresAt; the backend removes
	// it now (it is due) or marks every item with ExpiresAt.
	RetentionExpire
	// RetentionRetry: every execution read is finished but the backend
	// could not prove it read the whole tree (an index not caught up yet);
	// decide again later.
	RetentionRetry
)

// String names the action.
func (a RetentionAction) String() string {
	switch a {
	case RetentionKeep:
		return "keep"
	case RetentionExpire:
		return "expire"
	case RetentionRetry:
		return "retry"
	}
	return "RetentionAction(" + strconv.Itoa(int(a)) + ")"
}

// RetentionDecision is the outcome of DecideRetention.
type RetentionDecision struct {
	Action RetentionAction
	// FinishedAt is the latest finish of the tree's executions (set when
	// all are finished).
	FinishedAt Timestamp
	// ExpiresAt is FinishedAt plus the period (set with FinishedAt).
	ExpiresAt Timestamp
}

// DecideRetention decides what happens to the tree of root given the
// executions read for it (members, the root among them). complete tells
// whether the reader proved that members holds every execution of the
// tree. ahead is true for backends that mark a finished tree with its
// expiry at once and let the database delete it when due (DynamoDB's
// time-to-live); the others (SQLite, in-memory) remove a tree only once
// ExpiresAt is not after now.
//
// A tree whose root was not read (absent or already expired), or with a
// member that is neither the root nor derived from it, is kept: the
// decision never removes what it was not asked about.
func DecideRetention(root ExecutionId, members []RetentionMember, complete bool, r Retention, now Timestamp, ahead bool) RetentionDecision {
	if r.Forever() || !root.IsTopLevel() {
		return RetentionDecision{}
	}
	var d RetentionDecision
	rootSeen := false
	for i := range members {
		m := &members[i]
		id := m.State.ExecutionID
		switch {
		case id == root:
			rootSeen = true
		case id.IsTopLevel() || id.TopLevel() != root:
			return RetentionDecision{}
		}
		if !m.State.IsFinished() {
			return RetentionDecision{}
		}
		if at := m.FinishTime(); at.After(d.FinishedAt) {
			d.FinishedAt = at
		}
	}
	if !rootSeen {
		return RetentionDecision{}
	}
	if !complete {
		return RetentionDecision{Action: RetentionRetry}
	}
	d.ExpiresAt = d.FinishedAt.Add(r.period)
	if !ahead && d.ExpiresAt.After(now) {
		return RetentionDecision{Action: RetentionKeep, FinishedAt: d.FinishedAt, ExpiresAt: d.ExpiresAt}
	}
	d.Action = RetentionExpire
	return d
}

// FinishExpiry is the expiry of the tree of st if st, a top-level
// execution finishing at finishedAt (the store's clock), turns out to be
// the whole tree (no derived execution was ever created from it): a
// backend that marks trees ahead can then mark its head in the finishing
// commit itself. ok is false when retention is forever or st is derived
// or not finished.
func FinishExpiry(st *ExecutionState, finishedAt Timestamp, r Retention) (Timestamp, bool) {
	if r.Forever() || !st.ExecutionID.IsTopLevel() || !st.IsFinished() {
		return Timestamp{}, false
	}
	return finishedAt.Add(r.period), true
}

// RetentionExpired reports whether something that expires at expiresAt is
// gone at now: readers treat it as absent from that instant, whether or not
// the database deleted it yet.
func RetentionExpired(expiresAt, now Timestamp) bool { return !expiresAt.After(now) }
