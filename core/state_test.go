package core_test

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
)

var (
	t0     = core.UnixEpoch
	holder = core.LockedBy{ExecutorID: mustExr("Exr_01KBNJ2T3D8W7H3X6Q4M9R5V1A"), RunID: mustRun("Run_01KBNJ2V0P6C4Y8N2B7K3T5W9E")}
	other  = core.LockedBy{ExecutorID: mustExr("Exr_01KBNJ2T3D8W7H3X6Q4M9R5V1B"), RunID: mustRun("Run_01KBNJ2V0P6C4Y8N2B7K3T5W9F")}
	jsJ    = mustJS("g:1")
	jsK    = mustJS("g:2")
)

func mustExr(s string) core.ExecutorId {
	v, err := core.ParseExecutorId(s)
	if err != nil {
		panic(err)
	}
	return v
}

func mustRun(s string) core.RunId {
	v, err := core.ParseRunId(s)
	if err != nil {
		panic(err)
	}
	return v
}

func mustJS(s string) core.JoinSetId {
	v, err := core.ParseJoinSetId(s)
	if err != nil {
		panic(err)
	}
	return v
}

func mustExec(s string) core.ExecutionId {
	v, err := core.ParseExecutionId(s)
	if err != nil {
		panic(err)
	}
	return v
}

// stateFor builds the state row for one column of the §3.17 matrix. Every
// state is at version 3 with its At at t0+10s (lock/block deadlines, pending time).
func stateFor(name string) core.ExecutionState {
	at := t0.Add(10 * time.Second)
	st := core.ExecutionState{
		ExecutionID: mustExec("E_01KBNHM5FQW81KP5Y3XMNX31K4"), FFQN: core.FunctionFqn{IfcFqn: "ns:pkg/ifc", FunctionName: "fn"},
		ComponentType: core.ComponentTypeWorkflow, Version: 3, Lifecycle: core.LifecycleActive, At: at,
	}
	lockV := core.Version(1)
	lastLock := holder
	st.LastLock = &lastLock
	underlying, lifecycle := name, core.LifecycleActive
	switch {
	case strings.HasPrefix(name, "P·"):
		underlying, lifecycle = strings.TrimPrefix(name, "P·"), core.LifecyclePaused
	case strings.HasPrefix(name, "C·"):
		underlying, lifecycle = strings.TrimPrefix(name, "C·"), core.LifecycleCancelling
	}
	st.Lifecycle = lifecycle
	switch underlying {
	case "PA":
		st.State = core.StatePendingAt
	case "L":
		st.State = core.StateLocked
		st.LastLockVersion = &lockV
		zero := uint32(0)
		st.MaxRetries = &zero
	case "B":
		st.State = core.StateBlockedByJoinSet
		js := jsJ
		st.JoinSetID = &js
	case "F":
		st.State = core.StateFinished
		st.LastLock = nil
		rk := core.ResultKindOk()
		st.ResultKind = &rk
	default:
		panic(name)
	}
	if err := st.Validate(); err != nil {
		panic(fmt.Sprintf("%s: %v", name, err))
	}
	return st
}

// lookupWith answers JoinNext lookups: n-th response of J present when present is true.
type lookupWith struct{ present bool }

func (l lookupWith) JoinNextCount(core.JoinSetId) uint32 { return 0 }
func (l lookupWith) NthResponse(js core.JoinSetId, n uint32) (core.Timestamp, bool) {
	if l.present && js == jsJ && n == 1 {
		return t0.Add(20 * time.Second), true
	}
	return core.Timestamp{}, false
}

func hist(h core.HistoryEvent) core.ExecutionRequest { return &core.HistoryEventRequest{Event: h} }

// outcome renders a result as "<lifecycle·>state" or "err:<kind>".
func outcome(st core.ExecutionState, err error) string {
	if err != nil {
		var u *core.UnlockedCannotBeAppendedError
		switch {
		case errors.As(err, &u):
			return "err:Unlocked(" + u.State + ")"
		case errors.Is(err, core.ErrAlreadyFinished):
			return "err:AlreadyFinished"
		case errors.Is(err, core.ErrIllegalState):
			return "err:IllegalState"
		case errors.Is(err, core.ErrValidation):
			return "err:Validation"
		case errors.Is(err, core.ErrVersionConflict):
			return "err:VersionConflict"
		}
		return "err:" + err.Error()
	}
	short := map[core.StateKind]string{core.StatePendingAt: "PA", core.StateLocked: "L", core.StateBlockedByJoinSet: "B", core.StateFinished: "F"}[st.State]
	switch st.Lifecycle {
	case core.LifecyclePaused:
		return "P·" + short
	case core.LifecycleCancelling:
		return "C·" + short
	}
	return short
}

var columns = []string{"PA", "L", "B", "P·PA", "P·B", "C·PA", "C·L", "C·B", "F"}

// TestTransitionMatrix covers every cell of docs/spec/semantics.md §3.17 (plus the lock and
// Unlocked sub-cases), illegal cells included.
func TestTransitionMatrix(t *testing.T) {
	due := t0.Add(10 * time.Second) // == At of every column: PendingAt is due
	lockBy := func(by core.LockedBy, createdAt core.Timestamp) core.ExecutionRequest {
		return &core.Locked{ExecutorID: by.ExecutorID, RunID: by.RunID, LockExpiresAt: createdAt.Add(time.Minute), RetryConfig: core.RetryConfigZero()}
	}
	type row struct {
		name      string
		createdAt core.Timestamp
		event     core.ExecutionRequest
		lookup    core.JoinSetLookup
		want      []string // one per column
	}
	rows := []row{
		{"Locked by other, due", due, lockBy(other, due), nil,
			[]string{"L", "err:IllegalState", "err:IllegalState", "err:IllegalState", "err:IllegalState", "err:IllegalState", "err:IllegalState", "err:IllegalState", "err:IllegalState"}},
		{"Locked by other, not yet due", t0, lockBy(other, t0), nil,
			[]string{"err:Validation", "err:IllegalState", "err:IllegalState", "err:IllegalState", "err:IllegalState", "err:IllegalState", "err:IllegalState", "err:IllegalState", "err:IllegalState"}},
		{"Locked by last holder, not yet due (extend)", t0, lockBy(holder, t0), nil,
			[]string{"L", "L", "err:IllegalState", "err:IllegalState", "err:IllegalState", "err:IllegalState", "err:IllegalState", "err:IllegalState", "err:IllegalState"}},
		{"Unlocked earlier than scheduled", t0, &core.Unlocked{UnlockedAt: t0.Add(time.Second), Reason: "r"}, nil,
			[]string{"PA", "PA", "B", "err:Unlocked(paused)", "err:Unlocked(paused)", "err:Unlocked(cancelling)", "err:Unlocked(cancelling)", "err:Unlocked(cancelling)", "err:AlreadyFinished"}},
		{"Unlocked at or after scheduled", t0, &core.Unlocked{UnlockedAt: t0.Add(10 * time.Second), Reason: "r"}, nil,
			[]string{"err:Unlocked(pending)", "PA", "B", "err:Unlocked(paused)", "err:Unlocked(paused)", "err:Unlocked(cancelling)", "err:Unlocked(cancelling)", "err:Unlocked(cancelling)", "err:AlreadyFinished"}},
		{"TemporarilyFailed", t0, &core.TemporarilyFailed{BackoffExpiresAt: t0.Add(time.Hour), Reason: "x"}, nil,
			[]string{"PA", "PA", "PA", "P·PA", "P·PA", "C·PA", "C·PA", "C·PA", "err:AlreadyFinished"}},
		{"TemporarilyTimedOut", t0, &core.TemporarilyTimedOut{BackoffExpiresAt: t0.Add(time.Hour)}, nil,
			[]string{"PA", "PA", "PA", "P·PA", "P·PA", "C·PA", "C·PA", "C·PA", "err:AlreadyFinished"}},
		{"Finished", t0, &core.Finished{Retval: core.RetOk(nil)}, nil,
			[]string{"F", "F", "F", "F", "F", "F", "F", "F", "err:AlreadyFinished"}},
		{"JoinNext, response present", t0, hist(&core.JoinNext{JoinSetID: jsJ, RunExpiresAt: t0}), lookupWith{true},
			[]string{"PA", "PA", "PA", "P·PA", "P·PA", "C·PA", "C·PA", "C·PA", "err:AlreadyFinished"}},
		{"JoinNext, response absent", t0, hist(&core.JoinNext{JoinSetID: jsJ, RunExpiresAt: t0}), lookupWith{false},
			[]string{"B", "B", "B", "P·B", "P·B", "C·B", "C·B", "C·B", "err:AlreadyFinished"}},
		{"JoinSetCreate", t0, hist(&core.JoinSetCreate{JoinSetID: jsK}), nil,
			[]string{"PA", "L", "B", "P·PA", "P·B", "C·PA", "C·L", "C·B", "err:AlreadyFinished"}},
		{"DelayRequest", t0, hist(&core.JoinSetRequestEvent{JoinSetID: jsK, Request: &core.DelayRequest{
			DelayID: core.NewDelayId(mustExec("E_01KBNHM5FQW81KP5Y3XMNX31K4"), jsK, 1), ExpiresAt: t0, ScheduleAt: core.ScheduleAt{Kind: "now"}}}), nil,
			[]string{"PA", "L", "B", "P·PA", "P·B", "C·PA", "C·L", "C·B", "err:AlreadyFinished"}},
		{"Paused", t0, &core.Paused{}, nil,
			[]string{"P·PA", "err:IllegalState", "P·B", "err:IllegalState", "err:IllegalState", "err:IllegalState", "err:IllegalState", "err:IllegalState", "err:AlreadyFinished"}},
		{"Unpaused", t0, &core.Unpaused{}, nil,
			[]string{"err:IllegalState", "err:IllegalState", "err:IllegalState", "PA", "B", "err:IllegalState", "err:IllegalState", "err:IllegalState", "err:AlreadyFinished"}},
		{"CancellationRequested", t0, &core.CancellationRequested{}, nil,
			[]string{"C·PA", "C·L", "C·B", "C·PA", "C·B", "err:IllegalState", "err:IllegalState", "err:IllegalState", "err:AlreadyFinished"}},
		{"ComponentUpgradeFinished", t0, &core.ComponentUpgradeFinished{Outcome: core.ComponentUpgradeOutcome{Success: true}}, nil,
			[]string{"PA", "L", "B", "P·PA", "P·B", "C·PA", "C·L", "C·B", "err:AlreadyFinished"}},
	}
	cells := 0
	for _, r := range rows {
		for i, col := range columns {
			t.Run(r.name+"/"+col, func(t *testing.T) {
				st := stateFor(col)
				before := st.Clone()
				res, err := core.AppendBatch(st, 4, []core.AppendRequest{{CreatedAt: r.createdAt, Event: r.event}}, r.lookup, core.AppendOptions{})
				got := outcome(res.State, err)
				if got != r.want[i] {
					t.Fatalf("got %s, want %s", got, r.want[i])
				}
				if !reflect.DeepEqual(st, before) {
					t.Fatalf("input state was modified")
				}
				if err == nil {
					if err := res.State.Validate(); err != nil {
						t.Fatalf("result violates §3.1: %v", err)
					}
					if _, ok := r.event.(*core.Finished); !ok && res.State.Version != 4 {
						t.Fatalf("version = %d, want 4", res.State.Version)
					}
				}
			})
			cells++
		}
	}
	// The last row of §3.17: a response for J arrives (no event, no version bump).
	wantResp := []string{"PA", "L", "PA", "P·PA", "P·PA", "C·PA", "C·L", "C·B", "F"}
	for i, col := range columns {
		t.Run("response for J/"+col, func(t *testing.T) {
			st := stateFor(col)
			got, cursor, unblocked := core.ApplyResponse(st, jsJ, t0.Add(30*time.Second))
			if o := outcome(got, nil); o != wantResp[i] {
				t.Fatalf("got %s, want %s", o, wantResp[i])
			}
			if got.Version != st.Version || cursor != 1 {
				t.Fatalf("version %d→%d cursor %d", st.Version, got.Version, cursor)
			}
			if unblocked != (col == "B" || col == "P·B") {
				t.Fatalf("unblocked = %v", unblocked)
			}
			if unblocked && !got.At.Equal(t0.Add(30*time.Second)) {
				t.Fatalf("scheduled at %v, want max(lock expiry, response time)", got.At)
			}
		})
		t.Run("response for other join set/"+col, func(t *testing.T) {
			st := stateFor(col)
			got, _, unblocked := core.ApplyResponse(st, jsK, t0)
			if unblocked || outcome(got, nil) != col {
				t.Fatalf("response for another join set changed state to %s", outcome(got, nil))
			}
		})
		cells += 2
	}
	t.Logf("%d transition cells checked", cells)
}

func TestAppendChecksInObeliskOrder(t *testing.T) {
	st := stateFor("F")
	// Finished is checked before the version.
	_, err := core.AppendBatch(st, 99, []core.AppendRequest{{CreatedAt: t0, Event: &core.Paused{}}}, nil, core.AppendOptions{})
	if !errors.Is(err, core.ErrAlreadyFinished) {
		t.Fatalf("got %v, want AlreadyFinished", err)
	}
	// A Locked event on a finished execution is IllegalState("already finished"), not AlreadyFinished.
	_, err = core.AppendBatch(st, 3, []core.AppendRequest{{CreatedAt: t0, Event: &core.Locked{ExecutorID: holder.ExecutorID, RunID: holder.RunID, LockExpiresAt: t0.Add(time.Second)}}}, nil, core.AppendOptions{})
	var ise *core.IllegalStateError
	if !errors.As(err, &ise) || ise.Reason != "already finished" {
		t.Fatalf("got %v", err)
	}
	// Created is always rejected.
	_, err = core.AppendBatch(stateFor("PA"), 4, []core.AppendRequest{{CreatedAt: t0, Event: &core.Created{}}}, nil, core.AppendOptions{})
	if !errors.Is(err, core.ErrValidation) {
		t.Fatalf("got %v", err)
	}
	// Stale version → VersionConflict{expected, requested}.
	_, err = core.AppendBatch(stateFor("PA"), 2, []core.AppendRequest{{CreatedAt: t0, Event: &core.Paused{}}}, nil, core.AppendOptions{})
	var vc *core.VersionConflictError
	if !errors.As(err, &vc) || vc.Expected != 4 || vc.Requested != 2 {
		t.Fatalf("got %v", err)
	}
	// Lock expiry is validated before anything else.
	_, err = core.AppendBatch(stateFor("PA"), 2, []core.AppendRequest{{CreatedAt: t0, Event: &core.Locked{LockExpiresAt: t0}}}, nil, core.AppendOptions{})
	if !errors.Is(err, core.ErrValidation) {
		t.Fatalf("got %v", err)
	}
}

func TestFinishedFreezesNextVersion(t *testing.T) {
	res, err := core.AppendBatch(stateFor("L"), 4, []core.AppendRequest{{CreatedAt: t0, Event: &core.Finished{Retval: core.RetOk(nil)}}}, nil, core.AppendOptions{})
	if err != nil || res.NextVersion != 4 || res.State.NextVersion() != 4 {
		t.Fatalf("next=%d err=%v, want 4", res.NextVersion, err)
	}
	if res.State.LastLock != nil || res.State.Lifecycle != core.LifecycleActive {
		t.Fatalf("Finished must clear last lock and reset lifecycle")
	}
}

func TestCanBeRetriedAfter(t *testing.T) {
	two := uint32(2)
	sec := core.DurationOf(time.Second)
	for _, c := range []struct {
		count uint32
		max   *uint32
		want  time.Duration
		ok    bool
	}{
		{1, &two, time.Second, true},
		{2, &two, 2 * time.Second, true},
		{3, &two, 0, false},
		{10, nil, 512 * time.Second, true},
	} {
		d, ok := core.CanBeRetriedAfter(c.count, c.max, sec)
		got, _ := d.Std()
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("count %d: got %v/%v, want %v/%v", c.count, got, ok, c.want, c.ok)
		}
	}
	// Saturates instead of overflowing.
	d, ok := core.CanBeRetriedAfter(1<<31, nil, core.Duration{Secs: 1 << 40})
	if !ok || d.Secs != ^uint64(0) {
		t.Fatalf("saturation: %+v", d)
	}
}

func TestDecideExpiredLock(t *testing.T) {
	id := mustExec("E_01KBNHM5FQW81KP5Y3XMNX31K4")
	child := id.NextLevel(jsJ)
	zero := uint32(0)
	one := uint32(1)
	at := t0.Add(time.Second)
	// Workflow that made progress → Unlocked("made progress").
	a := core.DecideExpiredLock(core.ExpiredLock{ExecutionID: id, LockedAtVersion: 1, NextVersion: 3}, at)
	if u, ok := a.Request.Event.(*core.Unlocked); !ok || u.Reason != "made progress" || a.Version != 3 {
		t.Fatalf("progress: %#v", a)
	}
	// Retry allowed → TemporarilyTimedOut(at + backoff·2^count).
	a = core.DecideExpiredLock(core.ExpiredLock{ExecutionID: id, LockedAtVersion: 1, NextVersion: 2, MaxRetries: &one, RetryExpBackoff: core.DurationOf(300 * time.Millisecond)}, at)
	if tt, ok := a.Request.Event.(*core.TemporarilyTimedOut); !ok || !tt.BackoffExpiresAt.Equal(at.Add(300*time.Millisecond)) {
		t.Fatalf("retry: %#v", a.Request.Event)
	}
	// Out of retries, derived → Finished(timed_out) responding to the parent.
	a = core.DecideExpiredLock(core.ExpiredLock{ExecutionID: child, LockedAtVersion: 1, NextVersion: 2, MaxRetries: &zero}, at)
	f, ok := a.Request.Event.(*core.Finished)
	if !ok || f.Retval.Failure.Kind != core.FailureTimedOut || a.RespondToParent == nil ||
		a.RespondToParent.ParentExecutionID != id || a.RespondToParent.JoinSetID != jsJ || a.RespondToParent.FinishedVersion != 2 {
		t.Fatalf("timeout: %#v %#v", a.Request.Event, a.RespondToParent)
	}
}

func TestBacktraceHashFormat(t *testing.T) {
	line, col := uint32(1), uint32(2)
	f2, file := "f2", "file"
	a := core.WasmBacktrace{Frames: []core.FrameInfo{{Module: "m", FuncName: "f", Symbols: []core.FrameSymbol{{FuncName: &f2, File: &file, Line: &line, Col: &col}}}}}
	b := core.WasmBacktrace{Frames: []core.FrameInfo{{Module: "m", FuncName: "f"}}}
	ha, hb := core.BacktraceHashOf(a), core.BacktraceHashOf(b)
	if ha[0] != 1 || hb[0] != 1 || ha == hb {
		t.Fatalf("hashes must carry version 1 and differ: %x %x", ha, hb)
	}
	// Manual encoding of b: "F|m|f|".
	want := sha256.Sum256([]byte("F|m|f|"))
	if string(hb[1:]) != string(want[:]) {
		t.Fatalf("hash of b = %x, want 01%x", hb, want)
	}
}
