package worker

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"time"

	"github.com/stela-dev/stela/core"
)

// ExecutionID returns the id of the running workflow execution.
func (wf *Context) ExecutionID() core.ExecutionId { return wf.id }

// IsReplaying reports whether the workflow is re-executing calls already
// recorded in its history (useful to silence logs).
func (wf *Context) IsReplaying() bool {
	wf.l.mu.Lock()
	defer wf.l.mu.Unlock()
	return wf.replaying()
}

// Response is the answer to one member of a join set: a child execution's
// result or a delay's expiry.
type Response struct {
	// ChildID is the child execution, zero for a delay.
	ChildID core.ExecutionId
	// DelayID is the delay, zero for a child.
	DelayID core.DelayId
	// Result is the child's return value; for a delay, Ok when it fired and
	// Err when it was cancelled.
	Result core.ReturnValue
}

func responseOf(r core.ResponseWithCursor) Response {
	switch e := r.Event.Event.Event.(type) {
	case *core.ChildExecutionFinished:
		return Response{ChildID: e.ChildExecutionID.ExecutionId, Result: e.Result}
	case *core.DelayFinished:
		rv := core.RetOk(nil)
		if !e.Result {
			rv = core.RetErr(nil)
		}
		return Response{DelayID: e.DelayID, Result: rv}
	}
	return Response{}
}

// Err returns nil for a child that returned Ok and a delay that fired; a
// *ResultError for a child that returned its error or failed, and
// ErrDelayCancelled for a cancelled delay.
func (r Response) Err() error {
	if r.Result.Kind == core.ReturnOk {
		return nil
	}
	if !r.DelayID.IsZero() {
		return ErrDelayCancelled
	}
	return newResultError(r.ChildID, r.Result)
}

// Result decodes a child's Ok value into R, or returns r.Err().
func Result[R any](r Response) (R, error) {
	if err := r.Err(); err != nil {
		var zero R
		return zero, err
	}
	return decodeResult[R](r.Result)
}

// Call runs ffqn as a child execution and waits for its result (Obelisk's
// direct call): a one-off join set o:<n>-<function> is created, the child
// <id>.o:<n>-<function>_1 submitted with params (see Args) and awaited. A
// child that returned its error or failed yields a *ResultError; a function
// whose component type is unknown (see Worker.Declare) an error wrapping
// ErrUnknownFunction, before anything is recorded. Options (ScheduleToClose)
// change how the call is recorded.
func Call[R any](wf *Context, ffqn string, params any, opts ...CallOption) (R, error) {
	r, err := wf.call(ffqn, params, opts)
	if err != nil {
		var zero R
		return zero, err
	}
	return Result[R](r)
}

func (wf *Context) call(ffqn string, params any, opts []CallOption) (_ Response, err error) {
	target, ps, err := parseTarget(ffqn, params)
	if err != nil {
		return Response{}, err
	}
	return wf.callWith(target, ps, "", opts)
}

// callTarget is Call of target with encoded params; hint is the component
// type of a typed handle ("" for none, see callee).
func (wf *Context) callTarget(target core.FunctionFqn, ps core.Params, hint core.ComponentType) (_ Response, err error) {
	what := "Call " + target.String()
	wf.enter()
	defer wf.leave()
	defer wf.guard(what, &err)
	if err := wf.cancelledErr(what); err != nil {
		return Response{}, err
	}
	c, err := wf.callee(target, hint)
	if err != nil {
		return Response{}, err
	}
	wf.room(4)
	js := wf.newOneOff(target.FunctionName)
	wf.submitChild(js, wf.ids.NextChild(wf.id, js.id), target, ps, c)
	return responseOf(wf.awaitNext(js, &target, false, core.Timestamp{})), nil
}

// callee returns the component of target for an execution this run is
// about to create (Worker.resolveCallee), before anything is recorded so
// that an unknown function leaves no trace a replay could diverge from.
// When replaying, the execution exists already: what the worker knows of
// target, possibly nothing (the stored execution tells its type when it
// matters, see cancelMembers). A typed handle's component type (hint, ""
// for none) counts as declared. A store that stays unreachable ends the
// run (check). mu is held.
func (wf *Context) callee(target core.FunctionFqn, hint core.ComponentType) (callee, error) {
	if wf.replaying() {
		c, ok := wf.w.knownCallee(target)
		if !ok && hint != "" {
			c = wf.w.localCallee(hint)
		}
		return c, nil
	}
	var c callee
	err := wf.w.retryWrite(wf.l, func(ctx context.Context) error {
		var err error
		c, err = wf.w.calleeWithHint(ctx, target, hint)
		return err
	})
	if errors.Is(err, ErrUnknownFunction) {
		return callee{}, err
	}
	wf.check(err)
	return c, nil
}

// parseTarget validates a call's function name and encodes its params.
func parseTarget(ffqn string, params any) (core.FunctionFqn, core.Params, error) {
	target, err := core.ParseFunctionFqn(ffqn)
	if err != nil {
		return core.FunctionFqn{}, nil, fmt.Errorf("worker: %w", err)
	}
	ps, err := encodeParams(params)
	return target, ps, err
}

// newOneOff creates the next one-off join set o:<n>-<suffix>. mu is held.
func (wf *Context) newOneOff(suffix string) *joinSetState {
	id, err := wf.ids.NextOneOffJoinSet(joinSetNamePart(suffix))
	if err != nil {
		panic(fmt.Sprintf("worker: one-off join set: %v", err)) // the name is sanitized
	}
	js := wf.createSet(id)
	js.oneOff = true
	return js
}

// joinSetNamePart maps a function name to join-set-name characters
// (letters, digits, '-', '/'); WIT names need no change.
func joinSetNamePart(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 128 && (r == '-' || r == '/' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9')) {
			return r
		}
		return '-'
	}, s)
}

// createSet records JoinSetCreate for id. mu is held.
func (wf *Context) createSet(id core.JoinSetId) *joinSetState {
	want := &core.JoinSetCreate{JoinSetID: id}
	if wf.match(want, func(got core.HistoryEvent) bool {
		c, ok := got.(*core.JoinSetCreate)
		return ok && c.JoinSetID == id
	}) == nil {
		wf.record(want, nil)
	}
	js := wf.set(id)
	js.created = true
	wf.order = append(wf.order, js)
	return js
}

// submitChild records the request of child in js and its creation as an
// execution of c. mu is held.
func (wf *Context) submitChild(js *joinSetState, child core.ExecutionId, target core.FunctionFqn, params core.Params, c callee) {
	req := &core.ChildExecutionRequest{ChildExecutionID: core.ExecutionIdDerived{ExecutionId: child}, TargetFFQN: target, Params: params}
	want := &core.JoinSetRequestEvent{JoinSetID: js.id, Request: req}
	if wf.match(want, func(got core.HistoryEvent) bool {
		j, ok := got.(*core.JoinSetRequestEvent)
		if !ok || j.JoinSetID != js.id {
			return false
		}
		c, ok := j.Request.(*core.ChildExecutionRequest)
		return ok && c.ChildExecutionID.ExecutionId == child && c.TargetFFQN == target && sameParams(c.Params, params)
	}) == nil {
		now := wf.w.clock.Now()
		wf.record(want, &core.CreateRequest{CreatedAt: now, ExecutionID: child, FFQN: target, Params: params,
			Parent: &core.Parent{ExecutionID: wf.id, JoinSetID: js.id}, ScheduledAt: now,
			ComponentID: c.component, DeploymentID: c.deployment, Metadata: wf.childMetadata()})
	}
	js.submitted++
	js.members = append(js.members, member{child: child, kind: c.component.ComponentType, ffqn: target})
}

// sameParams compares params as JSON values (the store keeps them verbatim).
func sameParams(a, b core.Params) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if bytes.Equal(a[i], b[i]) {
			continue
		}
		var x, y any
		if json.Unmarshal(a[i], &x) != nil || json.Unmarshal(b[i], &y) != nil || !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

// Sleep waits durably for d (a one-off join set o:<n>-sleep with one
// delay, fired by the server's timers); the workflow is parked meanwhile
// and may resume on another worker. It returns ErrDelayCancelled if the
// delay was cancelled.
func (wf *Context) Sleep(d time.Duration) error {
	_, err := wf.sleep(core.ScheduleAt{Kind: "in", In: core.DurationOf(d)}, "sleep")
	return err
}

// SleepUntil waits durably until t.
func (wf *Context) SleepUntil(t time.Time) error {
	_, err := wf.sleep(core.ScheduleAt{Kind: "at", At: core.TS(t)}, "sleep")
	return err
}

// Now returns the current time, persisted so that replays see the same
// value: Obelisk's sleep(now), a delay that is already due (o:<n>-now)
// answered in the same write. Once the execution is cancelled it returns
// the worker's clock, unrecorded.
func (wf *Context) Now() time.Time {
	at, err := wf.sleep(core.ScheduleAt{Kind: "now"}, "now")
	if errors.Is(err, ErrCancelled) {
		return timeOf(wf.w.clock.Now())
	}
	return timeOf(at)
}

// sleep records a one-off delay and awaits it; it returns the delay's expiry.
func (wf *Context) sleep(at core.ScheduleAt, suffix string) (_ core.Timestamp, err error) {
	what := "Sleep"
	wf.enter()
	defer wf.leave()
	defer wf.guard(what, &err)
	if err := wf.cancelledErr(what); err != nil {
		return core.Timestamp{}, err
	}
	if len(wf.children) > 0 {
		wf.flush() // an already-due delay is answered in a write that cannot create children
	}
	wf.room(3)
	js := wf.newOneOff(suffix)
	delay := wf.ids.NextDelay(wf.id, js.id)
	expires := wf.submitDelay(js, delay, at)
	r, answered := wf.awaitDueDelay(js, delay, expires)
	if !answered {
		r = responseOf(wf.awaitNext(js, nil, false, expires))
	}
	return expires, r.Err()
}

// awaitDueDelay handles a new JoinNext on a one-off delay that is already
// due: the JoinNext and the delay's response are written together (no
// timer round trip). mu is held.
func (wf *Context) awaitDueDelay(js *joinSetState, delay core.DelayId, expires core.Timestamp) (Response, bool) {
	now := wf.w.clock.Now()
	if wf.replaying() || expires.After(now) {
		return Response{}, false
	}
	if err := wf.settleFire(); err != nil { // the delay-response route cannot carry it
		wf.check(err)
	}
	js.joinNexts++
	wf.record(&core.JoinNext{JoinSetID: js.id, RunExpiresAt: wf.l.locked.LockExpiresAt}, nil)
	batch := wf.buf
	wf.check(wf.w.retryWrite(wf.l, func(ctx context.Context) error {
		next, err := wf.w.conn.AppendBatchWithDelayResponse(ctx, now, batch, wf.id, wf.l.next, js.id, delay)
		if err == nil {
			wf.l.next = next
		}
		return err
	}))
	wf.buf = wf.buf[:0]
	// The response arrives with a later read; it is this set's only one.
	js.consumed++
	js.members = nil
	return Response{DelayID: delay, Result: core.RetOk(nil)}, true
}

// submitDelay records a DelayRequest in js and returns its expiry (the
// recorded one when replaying). mu is held.
func (wf *Context) submitDelay(js *joinSetState, delay core.DelayId, at core.ScheduleAt) core.Timestamp {
	want := &core.DelayRequest{DelayID: delay, ScheduleAt: at}
	got := wf.match(&core.JoinSetRequestEvent{JoinSetID: js.id, Request: want}, func(got core.HistoryEvent) bool {
		j, ok := got.(*core.JoinSetRequestEvent)
		if !ok || j.JoinSetID != js.id {
			return false
		}
		d, ok := j.Request.(*core.DelayRequest)
		return ok && d.DelayID == delay && sameScheduleAt(d.ScheduleAt, at)
	})
	js.submitted++
	js.members = append(js.members, member{delay: delay})
	if got != nil {
		return got.(*core.JoinSetRequestEvent).Request.(*core.DelayRequest).ExpiresAt
	}
	expires, err := at.AsTimestamp(wf.w.clock.Now())
	if err != nil {
		panic(fmt.Sprintf("worker: delay %v: %v", at, err))
	}
	want.ExpiresAt = expires
	wf.record(&core.JoinSetRequestEvent{JoinSetID: js.id, Request: want}, nil)
	return expires
}

func sameScheduleAt(a, b core.ScheduleAt) bool {
	return a.Kind == b.Kind && a.At.Equal(b.At) && a.In == b.In
}

// Random returns a pseudorandom integer in [min, maxInclusive], persisted
// (Persist random_u64) so that replays get the same value.
func (wf *Context) Random(min, maxInclusive uint64) uint64 {
	if maxInclusive < min {
		panic("worker: Random: empty range")
	}
	wf.enter()
	defer wf.leave()
	defer wf.guard("Random", nil)
	v := min
	if span := maxInclusive - min; span == ^uint64(0) {
		v = wf.rng.Uint64()
	} else {
		v += wf.rng.Uint64N(span + 1)
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	wf.persist(b[:], core.PersistKind{Type: "random_u64", Min: min, MaxInclusive: maxInclusive})
	return v
}

// RandomString returns a pseudorandom alphanumeric string whose length is
// in [minLen, maxLenExclusive), persisted (Persist random_string).
func (wf *Context) RandomString(minLen, maxLenExclusive int) string {
	if minLen < 0 || maxLenExclusive <= minLen {
		panic("worker: RandomString: empty range")
	}
	const charset = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	wf.enter()
	defer wf.leave()
	defer wf.guard("RandomString", nil)
	n := minLen + wf.rng.IntN(maxLenExclusive-minLen)
	b := make([]byte, n)
	for i := range b {
		b[i] = charset[wf.rng.IntN(len(charset))]
	}
	wf.persist(b, core.PersistKind{Type: "random_string", MinLength: uint64(minLen), MaxLengthExclusive: uint64(maxLenExclusive)})
	return string(b)
}

// persist records a Persist event; a replay must draw the same value. mu is held.
func (wf *Context) persist(value []byte, kind core.PersistKind) {
	want := &core.Persist{Value: core.Bytes(value), Kind: kind}
	if wf.match(want, func(got core.HistoryEvent) bool {
		p, ok := got.(*core.Persist)
		return ok && p.Kind == kind && bytes.Equal(p.Value, value)
	}) == nil {
		wf.record(want, nil)
	}
}

// ScheduleAt says when a scheduled execution runs: Now(), At(t) or In(d).
type ScheduleAt = core.ScheduleAt

// Now schedules at once.
func Now() ScheduleAt { return core.ScheduleAt{Kind: "now"} }

// At schedules at t.
func At(t time.Time) ScheduleAt { return core.ScheduleAt{Kind: "at", At: core.TS(t)} }

// In schedules after d.
func In(d time.Duration) ScheduleAt { return core.ScheduleAt{Kind: "in", In: core.DurationOf(d)} }

// Schedule creates a new top-level execution of ffqn (not a child: nobody
// awaits it; its Created event names this workflow in scheduled_by) and
// returns its id. As in Obelisk, the id's random part is the next value of
// the workflow's seeded random stream (the one Random draws from); its
// time part is when this run schedules it (Obelisk takes the scheduling
// execution's own id time, which gives every execution of a
// self-rescheduling chain the first one's timestamp). The id is recorded
// in the Schedule event: a replay draws the same random part and takes the
// recorded id.
func (wf *Context) Schedule(ffqn string, params any, at ScheduleAt) (_ core.ExecutionId, err error) {
	target, ps, err := parseTarget(ffqn, params)
	if err != nil {
		return core.ExecutionId{}, err
	}
	return wf.scheduleTarget(target, ps, at, "")
}

// scheduleTarget is Schedule of target with encoded params; hint as for callTarget.
func (wf *Context) scheduleTarget(target core.FunctionFqn, ps core.Params, at ScheduleAt, hint core.ComponentType) (_ core.ExecutionId, err error) {
	ffqn := target.String()
	what := "Schedule " + ffqn
	wf.enter()
	defer wf.leave()
	defer wf.guard(what, &err)
	if err := wf.cancelledErr(what); err != nil {
		return core.ExecutionId{}, err
	}
	c, err := wf.callee(target, hint)
	if err != nil {
		return core.ExecutionId{}, err
	}
	var entropy [10]byte
	for i := range entropy {
		entropy[i] = byte(wf.rng.UintN(256))
	}
	now := wf.w.clock.Now()
	id, err := core.NewExecutionId(uint64(now.UnixMilli()), bytes.NewReader(entropy[:]))
	if err != nil {
		return core.ExecutionId{}, fmt.Errorf("worker: schedule id: %w", err)
	}
	want := &core.Schedule{ExecutionID: id, ScheduleAt: at}
	if got := wf.match(want, func(got core.HistoryEvent) bool {
		s, ok := got.(*core.Schedule)
		return ok && s.ExecutionID.IsTopLevel() && bytes.Equal(s.ExecutionID.ULID().Entropy(), entropy[:]) &&
			sameScheduleAt(s.ScheduleAt, at)
	}); got != nil {
		return got.(*core.Schedule).ExecutionID, nil
	}
	when, err := at.AsTimestamp(now)
	if err != nil {
		return core.ExecutionId{}, fmt.Errorf("worker: schedule %s: %w", ffqn, err)
	}
	scheduler := wf.id
	wf.record(want, &core.CreateRequest{CreatedAt: now, ExecutionID: id, FFQN: target, Params: ps, ScheduledAt: when,
		ComponentID: c.component, DeploymentID: c.deployment, Metadata: maps.Clone(wf.trace), ScheduledBy: &scheduler})
	return id, nil
}

// JoinSet groups child executions and delays whose responses the workflow
// awaits one at a time, in the order they arrive (fan-out / fan-in). Join
// sets left with unawaited members when the workflow returns are closed:
// their activities and delays are cancelled, then every member is awaited.
type JoinSet struct {
	wf *Context
	js *joinSetState
}

// NewJoinSet creates a join set named g:<n> (the n-th generated one).
func (wf *Context) NewJoinSet() *JoinSet {
	wf.enter()
	defer wf.leave()
	defer wf.guard("NewJoinSet", nil)
	return &JoinSet{wf: wf, js: wf.createSet(wf.ids.NextGeneratedJoinSet())}
}

// NewJoinSetNamed creates the join set n:<name>; the name may contain
// letters, digits, '-' and '/', and must be unique within the execution.
func (wf *Context) NewJoinSetNamed(name string) (_ *JoinSet, err error) {
	id, err := core.NamedJoinSetId(name)
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	what := "NewJoinSetNamed"
	wf.enter()
	defer wf.leave()
	defer wf.guard(what, &err)
	if err := wf.cancelledErr(what); err != nil {
		return nil, err
	}
	if s, ok := wf.sets[id]; ok && s.created {
		return nil, fmt.Errorf("worker: join set %s already exists", id)
	}
	return &JoinSet{wf: wf, js: wf.createSet(id)}, nil
}

// ID returns the join set's id.
func (j *JoinSet) ID() core.JoinSetId { return j.js.id }

// Submit starts ffqn as a child execution in the join set and returns its
// id (<workflow id>.<join set>_<k> for the k-th child of the set). The
// child is created with the next write of the workflow (at the latest when
// it awaits something).
func (j *JoinSet) Submit(ffqn string, params any) (_ core.ExecutionId, err error) {
	target, ps, err := parseTarget(ffqn, params)
	if err != nil {
		return core.ExecutionId{}, err
	}
	return j.submitTarget(target, ps, "")
}

// submitTarget is Submit of target with encoded params; hint as for callTarget.
func (j *JoinSet) submitTarget(target core.FunctionFqn, ps core.Params, hint core.ComponentType) (_ core.ExecutionId, err error) {
	what := "Submit " + target.String()
	wf := j.wf
	wf.enter()
	defer wf.leave()
	defer wf.guard(what, &err)
	if err := wf.cancelledErr(what); err != nil {
		return core.ExecutionId{}, err
	}
	if j.js.closed {
		return core.ExecutionId{}, fmt.Errorf("worker: join set %s is closed", j.js.id)
	}
	c, err := wf.callee(target, hint)
	if err != nil {
		return core.ExecutionId{}, err
	}
	child := wf.ids.NextChild(wf.id, j.js.id)
	wf.submitChild(j.js, child, target, ps, c)
	return child, nil
}

// SubmitDelay adds a delay of d to the join set; its response arrives
// (DelayID set) once the server's timers fire it.
func (j *JoinSet) SubmitDelay(d time.Duration) (_ core.DelayId, err error) {
	what := "SubmitDelay"
	wf := j.wf
	wf.enter()
	defer wf.leave()
	defer wf.guard(what, &err)
	if err := wf.cancelledErr(what); err != nil {
		return core.DelayId{}, err
	}
	if j.js.closed {
		return core.DelayId{}, fmt.Errorf("worker: join set %s is closed", j.js.id)
	}
	delay := wf.ids.NextDelay(wf.id, j.js.id)
	wf.submitDelay(j.js, delay, core.ScheduleAt{Kind: "in", In: core.DurationOf(d)})
	return delay, nil
}

// Next waits for the next response of the join set (in arrival order). It
// returns ErrAllProcessed, recording JoinNextTooMany, when every member was
// already awaited.
func (j *JoinSet) Next() (_ Response, err error) {
	what := "Next"
	wf := j.wf
	wf.enter()
	defer wf.leave()
	defer wf.guard(what, &err)
	if err := wf.cancelledErr(what); err != nil {
		return Response{}, err
	}
	js := j.js
	if js.closed {
		return Response{}, fmt.Errorf("worker: join set %s is closed", js.id)
	}
	if js.submitted <= js.joinNexts {
		want := &core.JoinNextTooMany{JoinSetID: js.id}
		if wf.match(want, func(got core.HistoryEvent) bool {
			t, ok := got.(*core.JoinNextTooMany)
			return ok && t.JoinSetID == js.id && t.RequestedFFQN == nil
		}) == nil {
			wf.record(want, nil)
		}
		return Response{}, ErrAllProcessed
	}
	return responseOf(wf.awaitNext(js, nil, false, core.Timestamp{})), nil
}

// Close closes the join set now instead of when the workflow returns: its
// unanswered activities and delays are cancelled, its cancellable child
// workflows asked to cancel, and every unawaited member is awaited.
func (j *JoinSet) Close() {
	wf := j.wf
	wf.enter()
	defer wf.leave()
	defer wf.guard("Close", nil)
	if wf.cancelled { // the store's cancellation driver closes it
		j.js.closed = true
		return
	}
	if !j.js.closed {
		wf.closeSet(j.js)
	}
}

// Pending returns how many members were submitted and not yet awaited.
func (j *JoinSet) Pending() int {
	j.wf.l.mu.Lock()
	defer j.wf.l.mu.Unlock()
	return len(j.js.members)
}
