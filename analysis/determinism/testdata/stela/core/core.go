// Package core is a stub of Stela's core types for the analyzer's tests.
package core

import "time"

type ExecutionId struct{ s string }

func (id ExecutionId) String() string { return id.s }

type JoinSetId struct{ s string }

type DelayId struct{ s string }

type ExecutorId struct{ s string }

type Timestamp struct{ t time.Time }

type Duration struct{ Secs, Nanos uint64 }

type ScheduleAt struct {
	Kind string
	At   Timestamp
	In   Duration
}

type ReturnValue struct{}

type ExecutionLog struct{}
