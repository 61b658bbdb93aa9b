package storetest

import (
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/stela-dev/stela/core"
)

// Fixtures of docs/spec/scenarios.md §0.1.
var (
	// ffqnF is F = ns:pkg/ifc.fn.
	ffqnF = mustFFQN("ns:pkg/ifc.fn")
	// ffqnFC is FC, a cancellable workflow name.
	ffqnFC = mustFFQN("ns:pkg/ifc.fn-cancellable")
	// ffqnChild is F_CHILD.
	ffqnChild = mustFFQN("ns:pkg/ifc.fn-child")
	// compACT is the dummy activity component (empty name, zero digest).
	compACT = core.ComponentId{ComponentType: core.ComponentTypeActivity}
	// compWF is compACT with type workflow.
	compWF = core.ComponentId{ComponentType: core.ComponentTypeWorkflow}
	// dep0 is Dep_00000000000000000000000000.
	dep0 = core.DeploymentId{}
	// ok0 is Ok(None).
	ok0 = core.RetOk(nil)
	// t0 is the Unix epoch, where every SimClock of the suite starts.
	t0 = core.UnixEpoch
)

func mustFFQN(s string) core.FunctionFqn {
	f, err := core.ParseFunctionFqn(s)
	if err != nil {
		panic(err)
	}
	return f
}

func mustJS(s string) core.JoinSetId {
	js, err := core.ParseJoinSetId(s)
	if err != nil {
		panic(err)
	}
	return js
}

func mustDigest(hexByte byte) core.ComponentDigest {
	var d core.Digest
	for i := range d {
		d[i] = hexByte
	}
	return core.ComponentDigest{Digest: d}
}

func retry0() core.ComponentRetryConfig { return core.RetryConfigZero() }

func retryN(max uint32, backoff time.Duration) core.ComponentRetryConfig {
	return core.ComponentRetryConfig{MaxRetries: &max, RetryExpBackoff: core.DurationOf(backoff)}
}

func retryForever(backoff time.Duration) core.ComponentRetryConfig {
	return core.ComponentRetryConfig{RetryExpBackoff: core.DurationOf(backoff)}
}

// newExecID returns a random top-level execution id (ULID time 0; the
// randomness keeps ids unique across subtests that share a table).
func newExecID() core.ExecutionId {
	id, err := core.NewExecutionId(0, rand.Reader)
	if err != nil {
		panic(err)
	}
	return id
}

func newExr() core.ExecutorId {
	id, err := core.NewExecutorId(0, rand.Reader)
	if err != nil {
		panic(err)
	}
	return id
}

func newRun() core.RunId {
	id, err := core.NewRunId(0, rand.Reader)
	if err != nil {
		panic(err)
	}
	return id
}

func newDep() core.DeploymentId {
	id, err := core.NewDeploymentId(0, rand.Reader)
	if err != nil {
		panic(err)
	}
	return id
}

func strp(s string) *string { return &s }

// --- event constructors (docs/spec/scenarios.md §0.2) ---------------------------------------

func hist(e core.HistoryEvent) core.ExecutionRequest { return &core.HistoryEventRequest{Event: e} }

// jsc is JSC(js).
func jsc(js core.JoinSetId) core.ExecutionRequest { return hist(&core.JoinSetCreate{JoinSetID: js}) }

// dreq is DREQ(js, d, exp, sched).
func dreq(js core.JoinSetId, d core.DelayId, exp core.Timestamp, sched core.ScheduleAt) core.ExecutionRequest {
	return hist(&core.JoinSetRequestEvent{JoinSetID: js, Request: &core.DelayRequest{DelayID: d, ExpiresAt: exp, ScheduleAt: sched}})
}

// creq is CREQ(js, c) with target F.
func creq(js core.JoinSetId, c core.ExecutionId) core.ExecutionRequest {
	return creqTo(js, c, ffqnF)
}

func creqTo(js core.JoinSetId, c core.ExecutionId, target core.FunctionFqn) core.ExecutionRequest {
	return hist(&core.JoinSetRequestEvent{JoinSetID: js, Request: &core.ChildExecutionRequest{
		ChildExecutionID: core.ExecutionIdDerived{ExecutionId: c}, TargetFFQN: target, Params: core.Params{}}})
}

// jn is JN(js, runExp) with requested_ffqn F.
func jn(js core.JoinSetId, runExp core.Timestamp) core.ExecutionRequest {
	f := ffqnF
	return hist(&core.JoinNext{JoinSetID: js, RunExpiresAt: runExp, RequestedFFQN: &f})
}

func jnClosing(js core.JoinSetId, runExp core.Timestamp) core.ExecutionRequest {
	return hist(&core.JoinNext{JoinSetID: js, RunExpiresAt: runExp, Closing: true})
}

func finished(rv core.ReturnValue) core.ExecutionRequest { return &core.Finished{Retval: rv} }

func persist(v byte) core.ExecutionRequest {
	return hist(&core.Persist{Value: core.Bytes{v}, Kind: core.PersistKind{Type: "random_u64", Min: 0, MaxInclusive: 255}})
}

var schedNow = core.ScheduleAt{Kind: "now"}

func schedIn(d time.Duration) core.ScheduleAt {
	return core.ScheduleAt{Kind: "in", In: core.DurationOf(d)}
}

// delayResp is DelayFinished{d, ok} in js.
func delayResp(js core.JoinSetId, d core.DelayId, ok bool) core.JoinSetResponseEvent {
	return core.JoinSetResponseEvent{JoinSetID: js, Event: &core.DelayFinished{DelayID: d, Result: core.UnitResult(ok)}}
}

// childResp is ChildExecutionFinished{c, v, rv} in js.
func childResp(js core.JoinSetId, c core.ExecutionId, v core.Version, rv core.ReturnValue) core.JoinSetResponseEvent {
	return core.JoinSetResponseEvent{JoinSetID: js, Event: &core.ChildExecutionFinished{
		ChildExecutionID: core.ExecutionIdDerived{ExecutionId: c}, FinishedVersion: v, Result: rv}}
}

// --- pending states ------------------------------------------------------------------

func psPendingAt(at core.Timestamp, last *core.LockedBy) core.PendingState {
	return core.PendingState{State: core.StatePendingAt, Lifecycle: core.LifecycleActive,
		PendingAt: &core.PendingStatePendingAt{ScheduledAt: at, LastLock: last}}
}

func psLocked(by core.LockedBy, exp core.Timestamp) core.PendingState {
	return core.PendingState{State: core.StateLocked, Lifecycle: core.LifecycleActive,
		Locked: &core.PendingStateLocked{LockedBy: by, LockExpiresAt: exp}}
}

func psBlocked(js core.JoinSetId, exp core.Timestamp, closing bool) core.PendingState {
	return core.PendingState{State: core.StateBlockedByJoinSet, Lifecycle: core.LifecycleActive,
		Blocked: &core.PendingStateBlockedByJoinSet{JoinSetID: js, LockExpiresAt: exp, Closing: closing}}
}

func psFinished(v core.Version, at core.Timestamp, rk core.ResultKind) core.PendingState {
	return core.PendingState{State: core.StateFinished, Lifecycle: core.LifecycleActive,
		Finished: &core.PendingStateFinished{Version: uint32(v), FinishedAt: at, ResultKind: rk}}
}

func psPaused(p core.PendingState) core.PendingState {
	p.Lifecycle = core.LifecyclePaused
	return p
}

func psCancelling(p core.PendingState) core.PendingState {
	p.Lifecycle = core.LifecycleCancelling
	return p
}

func lockedBy(exr core.ExecutorId, run core.RunId) core.LockedBy {
	return core.LockedBy{ExecutorID: exr, RunID: run}
}

// --- JSON ------------------------------------------------------------------------------

// marshal encodes v as stored: execution requests and history events in
// their tagged wire form (they are interfaces, so plain encoding would drop the tag).
func marshal(v any) ([]byte, error) {
	switch x := v.(type) {
	case core.ExecutionRequest:
		return core.EncodeExecutionRequest(x)
	case core.HistoryEvent:
		return core.EncodeHistoryEvent(x)
	}
	return core.MarshalJSON(v)
}

func mustJSON(v any) string {
	b, err := marshal(v)
	if err != nil {
		panic(fmt.Sprintf("storetest: marshal %T: %v", v, err))
	}
	return string(b)
}

func jsonOrErr(v any) string {
	b, err := marshal(v)
	if err != nil {
		return fmt.Sprintf("<marshal error: %v>", err)
	}
	return string(b)
}

// errKind names the sentinel err wraps, for comparing outcomes.
func errKind(err error) string {
	if err == nil {
		return "ok"
	}
	for _, k := range []struct {
		s    error
		name string
	}{
		{core.ErrNotFound, "NotFound"},
		{core.ErrConflict, "Conflict"},
		{core.ErrAlreadyFinished, "AlreadyFinished"},
		{core.ErrIllegalState, "IllegalState"},
		{core.ErrValidation, "Validation"},
		{core.ErrVersionConflict, "VersionConflict"},
		{core.ErrUnlockedCannotBeAppended, "UnlockedCannotBeAppended"},
		{core.ErrStubConflict, "StubConflict"},
		{core.ErrTimeout, "Timeout"},
		{core.ErrClosed, "Closed"},
		{core.ErrNotImplemented, "NotImplemented"},
	} {
		if errors.Is(err, k.s) {
			return k.name
		}
	}
	return "Other(" + err.Error() + ")"
}
