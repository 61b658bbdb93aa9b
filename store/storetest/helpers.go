package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
)

func (h *harness) now() core.Timestamp { return h.clock.Now() }

func (h *harness) advance(d time.Duration) core.Timestamp { return h.clock.Advance(d) }

// createReq is docs/spec/scenarios.md's create(X): created now, ffqn F, ACT, DEP0,
// scheduled now, no parent, not paused. mods adjust it.
func (h *harness) createReq(id core.ExecutionId, mods ...func(*core.CreateRequest)) core.CreateRequest {
	now := h.now()
	req := core.CreateRequest{
		CreatedAt: now, ExecutionID: id, FFQN: ffqnF, Params: core.Params{}, ScheduledAt: now,
		ComponentID: compACT, DeploymentID: dep0, Metadata: core.ExecutionMetadata{},
	}
	for _, m := range mods {
		m(&req)
	}
	return req
}

func withFFQN(f core.FunctionFqn) func(*core.CreateRequest) {
	return func(r *core.CreateRequest) { r.FFQN = f }
}

func withComp(c core.ComponentId) func(*core.CreateRequest) {
	return func(r *core.CreateRequest) { r.ComponentID = c }
}

func withSched(at core.Timestamp) func(*core.CreateRequest) {
	return func(r *core.CreateRequest) { r.ScheduledAt = at }
}

func withPaused() func(*core.CreateRequest) { return func(r *core.CreateRequest) { r.Paused = true } }

func withDep(d core.DeploymentId) func(*core.CreateRequest) {
	return func(r *core.CreateRequest) { r.DeploymentID = d }
}

func withParent(p core.ExecutionId, js core.JoinSetId) func(*core.CreateRequest) {
	return func(r *core.CreateRequest) { r.Parent = &core.Parent{ExecutionID: p, JoinSetID: js} }
}

// mustCreateReq creates req and checks the returned next version (1, or 2 when paused).
func (h *harness) mustCreateReq(req core.CreateRequest) {
	h.t.Helper()
	v, err := h.db.Create(h.ctx, req)
	if err != nil {
		h.t.Fatalf("create %s: %v", req.ExecutionID, err)
	}
	want := core.Version(1)
	if req.Paused {
		want = 2
	}
	if v != want {
		h.t.Fatalf("create %s returned version %d, want %d", req.ExecutionID, v, want)
	}
}

// create creates a fresh execution (create(X) of §0.2, adjusted by mods) and returns its id.
func (h *harness) create(mods ...func(*core.CreateRequest)) core.ExecutionId {
	h.t.Helper()
	id := newExecID()
	h.mustCreateReq(h.createReq(id, mods...))
	return id
}

// createWithID creates id with mods.
func (h *harness) createWithID(id core.ExecutionId, mods ...func(*core.CreateRequest)) {
	h.t.Helper()
	h.mustCreateReq(h.createReq(id, mods...))
}

// lockReq is the request of docs/spec/scenarios.md's lock(exr, run, exp): batch 1,
// pending at or sooner = created at = now, ACT, DEP0, RETRY0.
func (h *harness) lockReq(exr core.ExecutorId, run core.RunId, exp core.Timestamp) core.LockRequest {
	now := h.now()
	return core.LockRequest{BatchSize: 1, PendingAtOrSooner: now, CreatedAt: now, ComponentID: compACT,
		DeploymentID: dep0, ExecutorID: exr, RunID: run, LockExpiresAt: exp, RetryConfig: retry0()}
}

// lockStrategy is one of the two locking strategies of [LS2] scenarios.
type lockStrategy struct {
	name string
	// lock locks by ffqns (default [F]) or by req's component digest.
	lock func(h *harness, req core.LockRequest, ffqns ...core.FunctionFqn) ([]core.LockedExecution, error)
}

var lockStrategies = []lockStrategy{
	{"ByFFQNs", func(h *harness, req core.LockRequest, ffqns ...core.FunctionFqn) ([]core.LockedExecution, error) {
		if len(ffqns) == 0 {
			ffqns = []core.FunctionFqn{ffqnF}
		}
		return h.db.LockPendingByFFQNs(h.ctx, req, ffqns)
	}},
	{"ByComponentDigest", func(h *harness, req core.LockRequest, _ ...core.FunctionFqn) ([]core.LockedExecution, error) {
		return h.db.LockPendingByComponentDigest(h.ctx, req)
	}},
}

// forEachLockStrategy runs fn once per strategy, each against a fresh store.
func (h *harness) forEachLockStrategy(fn func(h *harness, ls lockStrategy)) {
	for _, ls := range lockStrategies {
		h.fresh(ls.name, func(h *harness) { fn(h, ls) })
	}
}

// mustLockWith locks exactly one execution with ls and returns it.
func (h *harness) mustLockWith(ls lockStrategy, req core.LockRequest, ffqns ...core.FunctionFqn) core.LockedExecution {
	h.t.Helper()
	got, err := ls.lock(h, req, ffqns...)
	if err != nil {
		h.t.Fatalf("lock (%s): %v", ls.name, err)
	}
	if len(got) != 1 {
		h.t.Fatalf("lock (%s) locked %d executions, want 1", ls.name, len(got))
	}
	return got[0]
}

// mustLock is lock(exr, run, exp) by ffqns, expecting exactly one execution.
func (h *harness) mustLock(exr core.ExecutorId, run core.RunId, exp core.Timestamp) core.LockedExecution {
	h.t.Helper()
	return h.mustLockWith(lockStrategies[0], h.lockReq(exr, run, exp))
}

// lockAny locks the single pending execution with a fresh executor and run.
func (h *harness) lockAny(exp core.Timestamp) core.LockedExecution {
	h.t.Helper()
	return h.mustLock(newExr(), newRun(), exp)
}

// lockOne is lock_one(now, ACT, DEP0, id, run, v, exr, exp, RETRY0).
func (h *harness) lockOne(id core.ExecutionId, v core.Version, exr core.ExecutorId, run core.RunId, exp core.Timestamp) (core.LockedExecution, error) {
	return h.db.LockOne(h.ctx, h.lockReq(exr, run, exp), id, v)
}

// appendAt appends ev at version v with created_at = at.
func (h *harness) appendAt(id core.ExecutionId, v core.Version, ev core.ExecutionRequest, at core.Timestamp) (core.Version, error) {
	return h.db.Append(h.ctx, id, v, core.AppendRequest{CreatedAt: at, Event: ev})
}

// mustAppend appends ev at v (created now) and checks the returned version:
// v+1, or v for Finished.
func (h *harness) mustAppend(id core.ExecutionId, v core.Version, ev core.ExecutionRequest) core.Version {
	h.t.Helper()
	got, err := h.appendAt(id, v, ev, h.now())
	if err != nil {
		h.t.Fatalf("append %s@%d %s: %v", id, v, ev.Variant(), err)
	}
	want := v + 1
	if _, ok := ev.(*core.Finished); ok {
		want = v
	}
	if got != want {
		h.t.Fatalf("append %s@%d %s returned %d, want %d", id, v, ev.Variant(), got, want)
	}
	return got
}

// respond is RESP(id, resp, at=now) through the test back door.
func (h *harness) respond(id core.ExecutionId, resp core.JoinSetResponseEvent) error {
	return h.db.AppendResponse(h.ctx, h.now(), id, resp)
}

func (h *harness) mustRespond(id core.ExecutionId, resp core.JoinSetResponseEvent) {
	h.t.Helper()
	if err := h.respond(id, resp); err != nil {
		h.t.Fatalf("append_response %s: %v", id, err)
	}
}

func (h *harness) get(id core.ExecutionId) *core.ExecutionLog {
	h.t.Helper()
	l, err := h.db.Get(h.ctx, id)
	if err != nil {
		h.t.Fatalf("get %s: %v", id, err)
	}
	return l
}

func (h *harness) pendingState(id core.ExecutionId) core.PendingState {
	h.t.Helper()
	return h.get(id).PendingState
}

// wantState compares the execution's pending state (from Get and from
// GetPendingState) with want, as JSON.
func (h *harness) wantState(id core.ExecutionId, want core.PendingState) {
	h.t.Helper()
	w := jsonOrErr(want)
	if got := jsonOrErr(h.get(id).PendingState); got != w {
		h.t.Fatalf("pending state of %s (get):\n got %s\nwant %s", id, got, w)
	}
	ws, err := h.db.GetPendingState(h.ctx, id)
	if err != nil {
		h.t.Fatalf("get_pending_state %s: %v", id, err)
	}
	if got := jsonOrErr(ws.PendingState); got != w {
		h.t.Fatalf("pending state of %s (get_pending_state):\n got %s\nwant %s", id, got, w)
	}
}

// wantStatus checks only the state and lifecycle of the execution.
func (h *harness) wantStatus(id core.ExecutionId, state core.StateKind, lc core.Lifecycle) core.PendingState {
	h.t.Helper()
	p := h.pendingState(id)
	if p.State != state || p.Lifecycle != lc {
		h.t.Fatalf("state of %s = %s/%s (%s), want %s/%s", id, p.State, p.Lifecycle, jsonOrErr(p), state, lc)
	}
	return p
}

func (h *harness) wantNextVersion(id core.ExecutionId, want core.Version) {
	h.t.Helper()
	if got := h.get(id).NextVersion; got != want {
		h.t.Fatalf("next_version of %s = %d, want %d", id, got, want)
	}
}

// wantLastEvent checks the variant (and, for unit variants, the whole event) of the last event.
func (h *harness) wantLastEvent(id core.ExecutionId, want core.ExecutionRequest) core.ExecutionEvent {
	h.t.Helper()
	l := h.get(id)
	last := l.LastEvent()
	if got, w := jsonOrErr(last.Event), jsonOrErr(want); got != w {
		h.t.Fatalf("last event of %s = %s, want %s", id, got, w)
	}
	return last
}

// wantEventsTail checks the variants of the last len(variants) events.
func (h *harness) wantEventsTail(id core.ExecutionId, variants ...string) {
	h.t.Helper()
	evs := h.get(id).Events
	if len(evs) < len(variants) {
		h.t.Fatalf("%s has %d events, want at least %d", id, len(evs), len(variants))
	}
	tail := evs[len(evs)-len(variants):]
	for i, v := range variants {
		if got := tail[i].Event.Variant(); got != v {
			h.t.Fatalf("event %d of %s is %s, want %s (tail %v)", tail[i].Version, id, got, v, variantsOf(tail))
		}
	}
}

func variantsOf(evs []core.ExecutionEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Event.Variant()
	}
	return out
}

func (h *harness) wantJSON(what string, got, want any) {
	h.t.Helper()
	if g, w := jsonOrErr(got), jsonOrErr(want); g != w {
		h.t.Fatalf("%s:\n got %s\nwant %s", what, g, w)
	}
}

// --- error assertions ----------------------------------------------------------------

func (h *harness) wantErr(what string, err, target error) {
	h.t.Helper()
	if !errors.Is(err, target) {
		h.t.Fatalf("%s: err = %v (%s), want %v", what, err, errKind(err), target)
	}
}

func (h *harness) wantNoErr(what string, err error) {
	h.t.Helper()
	if err != nil {
		h.t.Fatalf("%s: %v", what, err)
	}
}

func (h *harness) wantIllegal(what string, err error, reason string) {
	h.t.Helper()
	var ise *core.IllegalStateError
	if !errors.As(err, &ise) {
		h.t.Fatalf("%s: err = %v (%s), want IllegalState(%q)", what, err, errKind(err), reason)
	}
	if reason != "" && ise.Reason != reason {
		h.t.Fatalf("%s: IllegalState reason %q, want %q", what, ise.Reason, reason)
	}
}

func (h *harness) wantValidation(what string, err error, reason string) {
	h.t.Helper()
	var ve *core.ValidationError
	if !errors.As(err, &ve) {
		h.t.Fatalf("%s: err = %v (%s), want ValidationFailed(%q)", what, err, errKind(err), reason)
	}
	if reason != "" && ve.Reason != reason {
		h.t.Fatalf("%s: ValidationFailed reason %q, want %q", what, ve.Reason, reason)
	}
}

func (h *harness) wantVersionConflict(what string, err error, expected, requested core.Version) {
	h.t.Helper()
	var vc *core.VersionConflictError
	if !errors.As(err, &vc) {
		h.t.Fatalf("%s: err = %v (%s), want VersionConflict{expected %d, requested %d}", what, err, errKind(err), expected, requested)
	}
	if vc.Expected != expected || vc.Requested != requested {
		h.t.Fatalf("%s: VersionConflict{expected %d, requested %d}, want {expected %d, requested %d}",
			what, vc.Expected, vc.Requested, expected, requested)
	}
}

func (h *harness) wantUnlockedRejected(what string, err error, state string) {
	h.t.Helper()
	var ue *core.UnlockedCannotBeAppendedError
	if !errors.As(err, &ue) {
		h.t.Fatalf("%s: err = %v (%s), want UnlockedCannotBeAppended(%q)", what, err, errKind(err), state)
	}
	if ue.State != state {
		h.t.Fatalf("%s: UnlockedCannotBeAppended(%q), want %q", what, ue.State, state)
	}
}

// generous bounds waits that must end because of a write the test makes: it
// is a hang guard, not a performance assertion.
const generous = 30 * time.Second

func contextWithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, d)
}

// with returns a copy of h that reports to t (same store and clock).
func (h *harness) with(t *testing.T) *harness {
	c := *h
	c.t = t
	return &c
}
