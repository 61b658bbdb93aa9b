package worker

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/stela-dev/stela/core"
)

// WaitSignal waits durably for the next signal named name sent to this
// workflow execution (client.Signal, `stela execution signal`) and decodes
// its JSON value into T. Signals of one name are received in the order they
// were sent, each by one WaitSignal; a signal sent before the workflow
// waits for it is kept until it does. Names are 1…64 ASCII letters, digits
// and '-'.
//
// In the history, the k-th wait for name is Obelisk's stub pattern: a join
// set n:signal/<name>/<k>, a child request of the activity_stub
// <id>.n:signal/<name>/<k>_1 (function stela:sdk/signal.receive) and a
// JoinNext, answered by the stub's response when the signal arrives.
func WaitSignal[T any](wf *Context, name string) (T, error) {
	var zero T
	raw, _, err := wf.waitSignal(name, 0)
	if err != nil {
		return zero, err
	}
	return decodeSignal[T](name, raw)
}

// WaitSignalTimeout is WaitSignal bounded by a durable timer of d: ok is
// false when d passed first. A signal that arrives after the timeout is
// not lost: the next wait for name receives it (its stub was cancelled, so
// the sender uses the next sequence number). A signal that arrived at the
// same time as the timeout wins: ok is true.
func WaitSignalTimeout[T any](wf *Context, name string, d time.Duration) (v T, ok bool, err error) {
	if d <= 0 {
		return v, false, fmt.Errorf("worker: WaitSignalTimeout %q: timeout %v must be positive", name, d)
	}
	raw, ok, err := wf.waitSignal(name, d)
	if err != nil || !ok {
		return v, ok, err
	}
	v, err = decodeSignal[T](name, raw)
	return v, err == nil, err
}

func decodeSignal[T any](name string, raw json.RawMessage) (T, error) {
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, fmt.Errorf("worker: signal %q: cannot decode %s into %T: %w", name, raw, v, err)
	}
	return v, nil
}

// waitSignal records the next wait for name (with a delay of timeout when
// it is positive) and returns the signal's value, or ok=false on timeout.
func (wf *Context) waitSignal(name string, timeout time.Duration) (_ json.RawMessage, ok bool, err error) {
	if err := core.ValidateSignalName(name); err != nil {
		return nil, false, fmt.Errorf("worker: WaitSignal: %w", err)
	}
	what := "WaitSignal " + name
	wf.enter()
	defer wf.leave()
	defer wf.guard(what, &err)
	if err := wf.cancelledErr(what); err != nil {
		return nil, false, err
	}
	seq := wf.nextSignalSeq(name)
	req, err := core.SignalStubRequest(wf.id, name, seq, wf.w.clock.Now(), core.DeploymentId{})
	if err != nil {
		return nil, false, fmt.Errorf("worker: WaitSignal: %w", err)
	}
	js := wf.createSet(req.Parent.JoinSetID)
	wf.submitSignalStub(js, req)
	if timeout > 0 {
		delay := wf.ids.NextDelay(wf.id, js.id)
		wf.submitDelay(js, delay, core.ScheduleAt{Kind: "in", In: core.DurationOf(timeout)})
	}
	r := responseOf(wf.awaitNext(js, nil, false, core.Timestamp{}))
	if !r.DelayID.IsZero() {
		// Timed out: cancel the stub and await it; a signal that filled it
		// meanwhile is taken rather than lost.
		js.closed = true
		if !wf.replaying() {
			wf.flush()
			wf.cancelMembers(js)
		}
		r = responseOf(wf.awaitNext(js, nil, true, core.Timestamp{}))
		if r.Result.Kind != core.ReturnOk {
			return nil, false, nil
		}
	} else if timeout > 0 {
		wf.closeSet(js) // cancels the delay
	}
	if r.Result.Kind != core.ReturnOk {
		if err := wf.cancelledErr(what); err != nil {
			return nil, false, err
		}
		return nil, false, fmt.Errorf("worker: WaitSignal %q: the signal's stub %s finished with %v", name, r.ChildID, r.Result.ResultKind())
	}
	p, err := core.ParseSignal(r.Result)
	if err != nil {
		return nil, false, fmt.Errorf("worker: WaitSignal %q: %w", name, err)
	}
	return p.Value, true, nil
}

// nextSignalSeq is the sequence number of the next wait for name: one more
// than the waits for it the run went through (their join sets). mu is held.
func (wf *Context) nextSignalSeq(name string) uint64 {
	seq := uint64(1)
	for ; ; seq++ {
		js, err := core.SignalJoinSet(name, seq)
		if err != nil {
			panic(fmt.Sprintf("worker: signal join set: %v", err)) // the name was validated
		}
		if s, ok := wf.sets[js]; !ok || !s.created {
			return seq
		}
	}
}

// submitSignalStub records the request of the signal stub req in js and
// its creation (idempotent in the store: a sender may have created it
// first). mu is held.
func (wf *Context) submitSignalStub(js *joinSetState, req core.CreateRequest) {
	child := wf.ids.NextChild(wf.id, js.id)
	if child != req.ExecutionID {
		panic(fmt.Sprintf("worker: signal stub id %s, derived %s", req.ExecutionID, child))
	}
	cr := &core.ChildExecutionRequest{ChildExecutionID: core.ExecutionIdDerived{ExecutionId: child}, TargetFFQN: req.FFQN, Params: req.Params}
	want := &core.JoinSetRequestEvent{JoinSetID: js.id, Request: cr}
	if wf.match(want, func(got core.HistoryEvent) bool {
		j, ok := got.(*core.JoinSetRequestEvent)
		if !ok || j.JoinSetID != js.id {
			return false
		}
		c, ok := j.Request.(*core.ChildExecutionRequest)
		return ok && c.ChildExecutionID.ExecutionId == child && c.TargetFFQN == req.FFQN
	}) == nil {
		wf.record(want, &req)
	}
	js.submitted++
	js.members = append(js.members, member{child: child, kind: core.ComponentTypeActivityStub, ffqn: req.FFQN})
}
