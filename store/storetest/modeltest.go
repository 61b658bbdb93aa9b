package storetest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
)

// runModel runs the randomized model test: random operation sequences applied
// to the store and to the reference model, comparing every outcome and,
// periodically and at the end, every execution.
func runModel(t *testing.T, newBackend NewBackend, opts RunOptions) {
	seeds := opts.scaled(*flagSeeds, 1)
	ops := opts.scaled(*flagOps, 10)
	first, last := uint64(1), uint64(seeds)
	if *flagSeed != 0 {
		first, last = uint64(*flagSeed), uint64(*flagSeed)
	}
	total := 0
	counts := map[string]int{}
	outcomes := map[string]int{}
	for seed := first; seed <= last; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			r := newModelRun(newHarness(t, newBackend, opts), seed)
			for r.step = 1; r.step <= ops; r.step++ {
				r.randomOp()
				if r.step%25 == 0 {
					r.checkAll()
				}
			}
			r.checkAll()
			total += ops
			for k, v := range r.counts {
				counts[k] += v
			}
			for k, v := range r.outcomes {
				outcomes[k] += v
			}
		})
	}
	t.Logf("model test: %d seeds × %d ops = %d operations; per kind: %s", last-first+1, ops, total, countsString(counts))
	t.Logf("model test outcomes: %s", countsString(outcomes))
}

func countsString(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%d ", k, m[k])
	}
	return b.String()
}

type delayRef struct {
	owner core.ExecutionId
	js    core.JoinSetId
	d     core.DelayId
}

type modelRun struct {
	h         *harness
	m         *model
	rng       *rand.Rand
	seed      uint64
	step      int
	op        string
	ids       []core.ExecutionId
	children  []core.ExecutionId
	nextChild map[core.ExecutionId]int
	nextDelay map[core.ExecutionId]int
	delays    []delayRef
	executors []core.ExecutorId
	deps      []core.DeploymentId
	counts    map[string]int
	outcomes  map[string]int
}

func newModelRun(h *harness, seed uint64) *modelRun {
	r := &modelRun{h: h, m: newModel(), rng: rand.New(rand.NewPCG(seed, 0x5eed)), seed: seed,
		nextChild: map[core.ExecutionId]int{}, nextDelay: map[core.ExecutionId]int{},
		counts: map[string]int{}, outcomes: map[string]int{}}
	r.executors = []core.ExecutorId{r.newExr(), r.newExr(), r.newExr()}
	r.deps = []core.DeploymentId{dep0, r.newDep()}
	return r
}

// rngReader feeds ULID entropy from the seeded generator, so that a seed
// replays the same ids (and hence the same tie-breaks) on every run.
type rngReader struct{ r *rand.Rand }

func (x rngReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(x.r.Uint32())
	}
	return len(p), nil
}

func (r *modelRun) newID() core.ExecutionId {
	id, err := core.NewExecutionId(0, rngReader{r.rng})
	if err != nil {
		panic(err)
	}
	return id
}

func (r *modelRun) newExr() core.ExecutorId {
	id, err := core.NewExecutorId(0, rngReader{r.rng})
	if err != nil {
		panic(err)
	}
	return id
}

func (r *modelRun) newRun() core.RunId {
	id, err := core.NewRunId(0, rngReader{r.rng})
	if err != nil {
		panic(err)
	}
	return id
}

func (r *modelRun) newDep() core.DeploymentId {
	id, err := core.NewDeploymentId(0, rngReader{r.rng})
	if err != nil {
		panic(err)
	}
	return id
}

func (r *modelRun) fail(format string, args ...any) {
	r.h.t.Helper()
	r.h.t.Fatalf("seed %d, step %d (%s): %s\nreplay with -storetest.seed=%d", r.seed, r.step, r.op, fmt.Sprintf(format, args...), r.seed)
}

// sameErr compares outcomes: the sentinel and, for typed errors, their details.
func sameErr(got, want error) bool {
	if errKind(got) != errKind(want) {
		return false
	}
	if w, ok := errorsAs[*core.VersionConflictError](want); ok {
		g, ok := errorsAs[*core.VersionConflictError](got)
		return ok && *g == *w
	}
	if w, ok := errorsAs[*core.IllegalStateError](want); ok {
		g, ok := errorsAs[*core.IllegalStateError](got)
		return ok && g.Reason == w.Reason
	}
	if w, ok := errorsAs[*core.ValidationError](want); ok {
		g, ok := errorsAs[*core.ValidationError](got)
		return ok && g.Reason == w.Reason
	}
	if w, ok := errorsAs[*core.UnlockedCannotBeAppendedError](want); ok {
		g, ok := errorsAs[*core.UnlockedCannotBeAppendedError](got)
		return ok && g.State == w.State
	}
	return true
}

func (r *modelRun) wantSame(got, want error) bool {
	r.h.t.Helper()
	if !sameErr(got, want) {
		r.fail("store returned %v (%s), model %v (%s)", got, errKind(got), want, errKind(want))
	}
	if r.outcomes != nil {
		r.outcomes[errKind(want)]++
	}
	return want == nil
}

func (r *modelRun) wantEqual(what string, got, want any) {
	r.h.t.Helper()
	if g, w := jsonOrErr(got), jsonOrErr(want); g != w {
		r.fail("%s:\n store %s\n model %s", what, g, w)
	}
}

// --- random choices -----------------------------------------------------------------

func (r *modelRun) now() core.Timestamp { return r.h.now() }

func (r *modelRun) chance(p float64) bool { return r.rng.Float64() < p }

func pick[T any](r *modelRun, xs []T) T { return xs[r.rng.IntN(len(xs))] }

// ts is a time near now with millisecond granularity.
func (r *modelRun) ts() core.Timestamp {
	return r.now().Add(time.Duration(r.rng.IntN(4000)-1000) * time.Millisecond)
}

// pickExec returns a random execution, preferring unfinished ones.
func (r *modelRun) pickExec() (core.ExecutionId, bool) {
	if len(r.ids) == 0 {
		return core.ExecutionId{}, false
	}
	for i := 0; i < 5; i++ {
		id := pick(r, r.ids)
		if !r.m.execs[id].state.IsFinished() || r.chance(0.1) {
			return id, true
		}
	}
	return pick(r, r.ids), true
}

// version is mostly the next version, sometimes a stale or future one.
func (r *modelRun) version(id core.ExecutionId) core.Version {
	v := r.m.execs[id].state.NextVersion()
	switch {
	case r.chance(0.88):
		return v
	case v > 0 && r.chance(0.5):
		return v - 1
	}
	return v + 1
}

var modelJoinSets = []core.JoinSetId{mustJS("n:a"), mustJS("n:b"), mustJS("o:")}

var modelDigests = []core.ComponentDigest{{}, digest1, digest2}

func (r *modelRun) retval() core.ReturnValue {
	switch r.rng.IntN(5) {
	case 0:
		return core.RetErr(nil)
	case 1:
		return core.RetFailure(core.FailureCancelled, nil, nil)
	case 2:
		return core.RetOk(&core.WastValWithType{Type: "u32", Value: json.RawMessage(fmt.Sprint(r.rng.IntN(3)))})
	}
	return ok0
}

func (r *modelRun) retryConfig() core.ComponentRetryConfig {
	switch r.rng.IntN(3) {
	case 0:
		return retry0()
	case 1:
		return retryN(2, 100*time.Millisecond)
	}
	return retryForever(100 * time.Millisecond)
}

func (r *modelRun) lockRequest() core.LockRequest {
	now := r.now()
	ct := core.ComponentTypeActivity
	if r.chance(0.5) {
		ct = core.ComponentTypeWorkflow
	}
	return core.LockRequest{BatchSize: uint32(1 + r.rng.IntN(3)), PendingAtOrSooner: now, CreatedAt: now,
		ComponentID:  core.ComponentId{ComponentType: ct, ComponentDigest: pick(r, modelDigests)},
		DeploymentID: pick(r, r.deps), ExecutorID: pick(r, r.executors), RunID: r.newRun(),
		LockExpiresAt: now.Add(time.Duration(1+r.rng.IntN(4)) * time.Second), RetryConfig: r.retryConfig()}
}

// event returns a random non-Created event for id; ts supplies its times.
func (r *modelRun) event(id core.ExecutionId, ts func() core.Timestamp) core.ExecutionRequest {
	js := pick(r, modelJoinSets)
	switch r.rng.IntN(16) {
	case 0:
		return &core.Unlocked{UnlockedAt: ts(), Reason: "executor closing"}
	case 1:
		return &core.TemporarilyFailed{BackoffExpiresAt: ts(), Reason: "activity trap: boom", Detail: strp("detail")}
	case 2:
		return &core.TemporarilyTimedOut{BackoffExpiresAt: ts()}
	case 3:
		return finished(r.retval())
	case 4, 5:
		return jsc(js)
	case 6, 7:
		r.nextDelay[id]++
		d := core.NewDelayId(id, js, uint64(r.nextDelay[id]))
		r.delays = append(r.delays, delayRef{id, js, d})
		return hist(&core.JoinSetRequestEvent{JoinSetID: js, Request: &core.DelayRequest{DelayID: d, ExpiresAt: ts(),
			ScheduleAt: schedNow, Paused: r.chance(0.1)}})
	case 8, 9:
		return hist(&core.JoinNext{JoinSetID: js, RunExpiresAt: ts(), Closing: r.chance(0.1)})
	case 10:
		return hist(&core.JoinNextTry{JoinSetID: js, Outcome: core.JoinNextTryPending})
	case 11:
		return persist(byte(r.rng.IntN(256)))
	case 12:
		if r.chance(0.5) {
			return &core.Paused{}
		}
		return &core.Unpaused{}
	case 13:
		return &core.CancellationRequested{}
	case 14:
		o := core.ComponentUpgradeOutcome{Success: r.chance(0.5), Reason: core.ComponentUpgradeReason{}, FailedReason: "replay failed"}
		if o.Success {
			o.FailedReason = ""
		}
		return &core.ComponentUpgradeFinished{ComponentDigest: pick(r, modelDigests), DeploymentID: pick(r, r.deps), Outcome: o}
	}
	by := pick(r, r.executors)
	run := r.newRun()
	if last := r.m.execs[id].state.LastLock; last != nil && r.chance(0.5) {
		by, run = last.ExecutorID, last.RunID
	}
	return &core.Locked{ComponentID: compACT, ExecutorID: by, DeploymentID: dep0, RunID: run,
		LockExpiresAt: r.now().Add(time.Duration(1+r.rng.IntN(3)) * time.Second), RetryConfig: r.retryConfig()}
}

// --- operations -----------------------------------------------------------------------

type weightedOp struct {
	name   string
	weight int
	run    func(r *modelRun)
}

var modelOps = []weightedOp{
	{"create", 10, (*modelRun).opCreate},
	{"lock_pending", 10, (*modelRun).opLockPending},
	{"lock_one", 5, (*modelRun).opLockOne},
	{"append", 26, (*modelRun).opAppend},
	{"submit_child", 6, (*modelRun).opSubmitChild},
	{"finish_child", 6, (*modelRun).opFinishChild},
	{"delay_response", 5, (*modelRun).opDelayResponse},
	{"raw_response", 2, (*modelRun).opRawResponse},
	{"pause", 3, (*modelRun).opPause},
	{"unpause", 3, (*modelRun).opUnpause},
	{"cancel", 4, (*modelRun).opCancel},
	{"upgrade", 2, (*modelRun).opUpgrade},
	{"pause_delay", 3, (*modelRun).opPauseDelay},
	{"batch_with_delay_response", 3, (*modelRun).opBatchWithDelay},
	{"stub", 2, (*modelRun).opStub},
	{"sweep", 6, (*modelRun).opSweep},
	{"advance", 4, (*modelRun).opAdvance},
}

func (r *modelRun) randomOp() {
	total := 0
	for _, o := range modelOps {
		total += o.weight
	}
	n := r.rng.IntN(total)
	for _, o := range modelOps {
		if n < o.weight {
			if len(r.ids) == 0 {
				o = modelOps[0]
			}
			r.op = o.name
			r.counts[o.name]++
			o.run(r)
			return
		}
		n -= o.weight
	}
}

func (r *modelRun) opCreate() {
	id := r.newID()
	if len(r.ids) > 0 && r.chance(0.03) {
		id = pick(r, r.ids) // duplicate → Conflict
	}
	req := r.h.createReq(id, func(c *core.CreateRequest) {
		c.FFQN = pick(r, []core.FunctionFqn{ffqnF, ffqnFC})
		c.ComponentID = pick(r, []core.ComponentId{compACT, compWF})
		c.ScheduledAt = r.now().Add(time.Duration(r.rng.IntN(3)) * time.Second)
		c.Paused = r.chance(0.1)
		c.DeploymentID = pick(r, r.deps)
	})
	want, werr := r.m.create(req)
	got, gerr := r.h.db.Create(r.h.ctx, req)
	if r.wantSame(gerr, werr) {
		r.wantEqual("create version", got, want)
		r.ids = append(r.ids, id)
	}
}

func (r *modelRun) opLockPending() {
	req := r.lockRequest()
	byDigest, auto := false, false
	ffqns := []core.FunctionFqn{ffqnF}
	var got []core.LockedExecution
	var err error
	switch r.rng.IntN(4) {
	case 0:
		byDigest = true
		got, err = r.h.db.LockPendingByComponentDigest(r.h.ctx, req)
	case 1:
		auto = true
		ffqns = []core.FunctionFqn{ffqnFC, ffqnF}
		got, err = r.h.db.LockPendingByFFQNsAuto(r.h.ctx, req, ffqns)
	default:
		ffqns = pick(r, [][]core.FunctionFqn{{ffqnF}, {ffqnFC}, {ffqnFC, ffqnF}})
		got, err = r.h.db.LockPendingByFFQNs(r.h.ctx, req, ffqns)
	}
	if err != nil {
		r.fail("lock_pending failed: %v", err)
	}
	groups := r.m.lockGroups(req, ffqns, byDigest, auto)
	pos, remaining := 0, int(req.BatchSize)
	var chosen []core.ExecutionId
	for _, g := range groups {
		k := min(remaining, len(g))
		if len(got) < pos+k {
			r.fail("locked %d executions, model expects at least %d (candidates per group %v)", len(got), pos+k, groups)
		}
		for i := 0; i < k; i++ {
			id := got[pos+i].ExecutionID
			e, ok := r.m.execs[id]
			if !ok || !contains(g, id) || !e.state.At.Equal(r.m.execs[g[i]].state.At) {
				r.fail("locked %v, model candidates in order %v (ties by scheduled_at may permute)", idsOfLocked(got), groups)
			}
			chosen = append(chosen, id)
		}
		pos += k
		remaining -= k
	}
	if pos != len(got) {
		r.fail("locked %v, model expects %d (candidates %v)", idsOfLocked(got), pos, groups)
	}
	want, werr := r.m.lockChosen(req, chosen, auto)
	if werr != nil {
		r.fail("model could not lock the store's selection: %v", werr)
	}
	for i := range want {
		r.wantEqual("locked execution", lockedJSON(got[i]), lockedJSON(want[i]))
	}
}

func contains(ids []core.ExecutionId, id core.ExecutionId) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func idsOfLocked(l []core.LockedExecution) []core.ExecutionId {
	out := make([]core.ExecutionId, len(l))
	for i, le := range l {
		out[i] = le.ExecutionID
	}
	return out
}

func (r *modelRun) opLockOne() {
	id, _ := r.pickExec()
	req := r.lockRequest()
	if last := r.m.execs[id].state.LastLock; last != nil && r.chance(0.4) {
		req.ExecutorID, req.RunID = last.ExecutorID, last.RunID
	}
	v := r.version(id)
	want, werr := r.m.lockOne(req, id, v)
	got, gerr := r.h.db.LockOne(r.h.ctx, req, id, v)
	if r.wantSame(gerr, werr) {
		r.wantEqual("lock_one", lockedJSON(got), lockedJSON(want))
	}
}

func (r *modelRun) appendBoth(id core.ExecutionId, v core.Version, batch []core.AppendRequest) {
	r.h.t.Helper()
	want, werr := r.m.appendBatch(id, v, batch)
	var got core.Version
	var gerr error
	if len(batch) == 1 && r.chance(0.5) {
		got, gerr = r.h.db.Append(r.h.ctx, id, v, batch[0])
	} else {
		got, gerr = r.h.db.AppendBatch(r.h.ctx, r.now(), batch, id, v)
	}
	if r.wantSame(gerr, werr) {
		r.wantEqual("appended version", got, want)
	}
}

func (r *modelRun) opAppend() {
	id, _ := r.pickExec()
	n := 1
	if r.chance(0.25) {
		n = 2 + r.rng.IntN(2)
	}
	var batch []core.AppendRequest
	for i := 0; i < n; i++ {
		batch = append(batch, core.AppendRequest{CreatedAt: r.now(), Event: r.event(id, r.ts)})
	}
	r.appendBoth(id, r.version(id), batch)
}

func (r *modelRun) opSubmitChild() {
	id, _ := r.pickExec()
	js := pick(r, modelJoinSets)
	r.nextChild[id]++
	child := id.NextLevel(js)
	for i := 1; i < r.nextChild[id]; i++ {
		child = child.Incremented()
	}
	if len(r.children) > 0 && r.chance(0.05) {
		child = pick(r, r.children) // existing id → Conflict
	}
	comp := pick(r, []core.ComponentId{compACT, compWF, {ComponentType: core.ComponentTypeActivityStub}})
	creqEv := creq(js, child)
	batch := []core.AppendRequest{{CreatedAt: r.now(), Event: creqEv}}
	if r.chance(0.5) {
		batch = append([]core.AppendRequest{{CreatedAt: r.now(), Event: jsc(js)}}, batch...)
	}
	if r.chance(0.3) {
		batch = append(batch, core.AppendRequest{CreatedAt: r.now(), Event: jnFor(js, r.ts(), nil)})
	}
	childReq := r.h.createReq(child, withParent(id, js), withComp(comp), func(c *core.CreateRequest) { c.Paused = r.chance(0.1) })
	v := r.version(id)
	if ec, ok := r.h.db.(core.EagerChildCreator); ok && r.chance(0.4) {
		// Eager dispatch: the child created locked when the lock takes it.
		req := r.lockRequest()
		req.BatchSize = 1
		req.ByComponentDigest = r.chance(0.3)
		locks := []core.EagerLock{{Request: req, FFQNs: []core.FunctionFqn{ffqnF}}}
		want, wantLocked, werr := r.m.createNewExecutionLocked(id, v, batch, []core.CreateRequest{childReq}, locks)
		got, gotLocked, gerr := ec.AppendBatchCreateNewExecutionLocked(r.h.ctx, r.now(), batch, id, v, []core.CreateRequest{childReq}, nil, locks)
		if r.wantSame(gerr, werr) {
			r.wantEqual("version", got, want)
			if len(gotLocked) != len(wantLocked) {
				r.fail("eager create-children locked %v, model %v", idsOfLocked(gotLocked), idsOfLocked(wantLocked))
			}
			for i := range gotLocked {
				r.wantEqual("eager lock", lockedJSON(gotLocked[i]), lockedJSON(wantLocked[i]))
			}
			r.ids = append(r.ids, child)
			r.children = append(r.children, child)
		}
		return
	}
	want, werr := r.m.createNewExecution(id, v, batch, []core.CreateRequest{childReq})
	got, gerr := r.h.db.AppendBatchCreateNewExecution(r.h.ctx, r.now(), batch, id, v, []core.CreateRequest{childReq}, nil)
	if r.wantSame(gerr, werr) {
		r.wantEqual("version", got, want)
		r.ids = append(r.ids, child)
		r.children = append(r.children, child)
	}
}

func (r *modelRun) pickChild() (core.ExecutionId, bool) {
	if len(r.children) == 0 {
		return core.ExecutionId{}, false
	}
	for i := 0; i < 5; i++ {
		c := pick(r, r.children)
		if !r.m.execs[c].state.IsFinished() {
			return c, true
		}
	}
	return pick(r, r.children), true
}

func (r *modelRun) opFinishChild() {
	c, ok := r.pickChild()
	if !ok {
		r.opSubmitChild()
		return
	}
	parent, js, _ := c.SplitToParts()
	v := r.version(c)
	rv := r.retval()
	batch := []core.AppendRequest{{CreatedAt: r.now(), Event: finished(rv)}}
	fv := v
	if r.chance(0.2) {
		batch = append([]core.AppendRequest{{CreatedAt: r.now(), Event: jnFor(js, r.now(), nil)}}, batch...)
		fv = v + 1
	}
	events := core.AppendEventsToExecution{ExecutionID: c, Version: v, Batch: batch}
	resp := core.AppendResponseToExecution{ParentExecutionID: parent, CreatedAt: r.now(), JoinSetID: js,
		ChildExecutionID: core.ExecutionIdDerived{ExecutionId: c}, FinishedVersion: fv, Result: rv}
	want, werr := r.m.respondToParent(events, resp)
	got, gerr := r.h.db.AppendBatchRespondToParent(r.h.ctx, events, resp, r.now())
	if r.wantSame(gerr, werr) {
		r.wantEqual("version", got, want)
	}
}

func (r *modelRun) opDelayResponse() {
	if len(r.delays) == 0 {
		r.opAppend()
		return
	}
	d := pick(r, r.delays)
	ok := r.chance(0.6)
	want, werr := r.m.appendDelayResponse(r.now(), d.owner, d.js, d.d, ok)
	got, gerr := r.h.db.AppendDelayResponse(r.h.ctx, r.now(), d.owner, d.js, d.d, ok)
	if r.wantSame(gerr, werr) {
		r.wantEqual("outcome", got, want)
	}
}

func (r *modelRun) opRawResponse() {
	id, _ := r.pickExec()
	js := pick(r, modelJoinSets)
	var ev core.JoinSetResponseEvent
	if len(r.children) > 0 && r.chance(0.5) {
		ev = childResp(js, pick(r, r.children), 1, ok0)
	} else {
		ev = childResp(js, r.newID().NextLevel(js), 1, r.retval())
	}
	werr := r.m.appendResponse(id, r.now(), ev)
	gerr := r.h.db.AppendResponse(r.h.ctx, r.now(), id, ev)
	r.wantSame(gerr, werr)
}

func (r *modelRun) opPause() {
	id, _ := r.pickExec()
	want, werr := r.m.pauseExecution(id, r.now())
	got, gerr := r.h.db.PauseExecution(r.h.ctx, id, r.now())
	if r.wantSame(gerr, werr) {
		r.wantEqual("version", got, want)
	}
}

func (r *modelRun) opUnpause() {
	id, _ := r.pickExec()
	want, werr := r.m.unpauseExecution(id, r.now())
	got, gerr := r.h.db.UnpauseExecution(r.h.ctx, id, r.now())
	if r.wantSame(gerr, werr) {
		r.wantEqual("version", got, want)
	}
}

func (r *modelRun) opCancel() {
	id, _ := r.pickExec()
	wf := r.chance(0.5)
	want, werr := r.m.cancel(id, r.now(), wf)
	var got core.CancelOutcome
	var gerr error
	if wf {
		got, gerr = r.h.db.CancelWorkflow(r.h.ctx, id, r.now())
	} else {
		got, gerr = r.h.db.AppendActivityCancellationRequested(r.h.ctx, id, r.now())
	}
	if r.wantSame(gerr, werr) {
		r.wantEqual("outcome", got, want)
	}
}

func (r *modelRun) opUpgrade() {
	id, _ := r.pickExec()
	old := r.m.execs[id].state.ComponentDigest
	if r.chance(0.3) {
		old = pick(r, modelDigests)
	}
	newD := pick(r, modelDigests)
	reason := core.ComponentUpgradeReason{Manual: true, Force: r.chance(0.5)}
	werr := r.m.upgrade(id, old, newD, reason, r.now())
	gerr := r.h.db.UpgradeExecutionComponent(r.h.ctx, id, old, newD, reason)
	r.wantSame(gerr, werr)
}

func (r *modelRun) opPauseDelay() {
	if len(r.delays) == 0 {
		r.opAppend()
		return
	}
	d := pick(r, r.delays)
	paused := r.chance(0.5)
	werr := r.m.setDelayPaused(d.d, paused)
	var gerr error
	if paused {
		gerr = r.h.db.PauseDelay(r.h.ctx, d.d)
	} else {
		gerr = r.h.db.UnpauseDelay(r.h.ctx, d.d)
	}
	r.wantSame(gerr, werr)
}

func (r *modelRun) opBatchWithDelay() {
	id, _ := r.pickExec()
	r.nextDelay[id]++
	js := mustJS(fmt.Sprintf("o:%d-sleep", r.nextDelay[id]))
	d := core.NewDelayId(id, js, 1)
	batch := []core.AppendRequest{
		{CreatedAt: r.now(), Event: jsc(js)},
		{CreatedAt: r.now(), Event: dreq(js, d, r.now(), schedIn(0))},
		{CreatedAt: r.now(), Event: jnFor(js, r.ts(), nil)},
	}
	v := r.version(id)
	want, werr := r.m.batchWithDelayResponse(r.now(), id, v, batch, js, d)
	got, gerr := r.h.db.AppendBatchWithDelayResponse(r.h.ctx, r.now(), batch, id, v, js, d)
	if r.wantSame(gerr, werr) {
		r.wantEqual("version", got, want)
		r.delays = append(r.delays, delayRef{id, js, d})
	}
}

func (r *modelRun) opStub() {
	c, ok := r.pickChild()
	if !ok {
		r.opSubmitChild()
		return
	}
	parent, js, _ := c.SplitToParts()
	rv := pick(r, []core.ReturnValue{ok0, core.RetErr(nil)})
	req := core.AppendRequest{CreatedAt: r.now(), Event: finished(rv)}
	resp := core.AppendResponseToExecution{ParentExecutionID: parent, CreatedAt: r.now(), JoinSetID: js,
		ChildExecutionID: core.ExecutionIdDerived{ExecutionId: c}, FinishedVersion: 1, Result: rv}
	werr := r.m.upsertStub(c, 1, req, resp)
	gerr := r.h.db.UpsertStubResponse(r.h.ctx, core.ExecutionIdDerived{ExecutionId: c}, 1, req, resp, r.now())
	r.wantSame(gerr, werr)
}

func (r *modelRun) opAdvance() {
	r.h.advance(time.Duration(r.rng.IntN(1000)) * time.Millisecond)
}

func (r *modelRun) opSweep() {
	at := r.h.advance(time.Duration(r.rng.IntN(2000)) * time.Millisecond)
	r.checkTimers(at)
	before := map[core.ExecutionId]int{}
	for id, e := range r.m.execs {
		before[id] = len(e.responses)
	}
	wl, wd := r.m.sweep(at)
	res, err := store.Sweep(r.h.ctx, r.h.db, at)
	if err != nil {
		r.fail("sweep: %v", err)
	}
	gl, gd := sweepCounts(res)
	if gl != wl || gd != wd {
		r.fail("sweep handled %d locks and %d delays, model %d and %d", gl, gd, wl, wd)
	}
	// Responses written by one sweep may commit in any order: adopt the store's
	// order once the sets agree.
	for id, e := range r.m.execs {
		if len(e.responses) == before[id] {
			continue
		}
		l, err := r.h.db.Get(r.h.ctx, id)
		if err != nil {
			r.fail("get %s: %v", id, err)
		}
		if len(l.Responses) != len(e.responses) {
			r.fail("%s has %d responses after the sweep, model %d", id, len(l.Responses), len(e.responses))
		}
		modelNew := map[string]int{}
		for _, resp := range e.responses[before[id]:] {
			modelNew[jsonOrErr(resp.Event)]++
		}
		for i, resp := range l.Responses[before[id]:] {
			k := jsonOrErr(resp.Event)
			if modelNew[k] == 0 {
				r.fail("%s: store response %s not produced by the model sweep", id, k)
			}
			modelNew[k]--
			e.responses[before[id]+i] = core.ResponseWithCursor{Cursor: core.ResponseCursor(before[id] + i + 1), Event: resp.Event}
		}
	}
}

// --- comparisons -------------------------------------------------------------------

func (r *modelRun) checkTimers(at core.Timestamp) {
	r.h.t.Helper()
	got, err := r.h.db.GetExpiredTimers(r.h.ctx, at)
	if err != nil {
		r.fail("get_expired_timers: %v", err)
	}
	sortTimers(got)
	want := r.m.expiredTimers(at)
	if (len(got) != 0 || len(want) != 0) && !reflect.DeepEqual(got, want) {
		r.fail("get_expired_timers(%s):\n store %s\n model %s", at, timersString(got), timersString(want))
	}
}

func (r *modelRun) checkAll() {
	r.h.t.Helper()
	r.op = "check"
	for _, id := range r.ids {
		r.checkExec(id)
	}
	r.checkTimers(r.now())
}

func (r *modelRun) checkExec(id core.ExecutionId) {
	r.h.t.Helper()
	e := r.m.execs[id]
	l, err := r.h.db.Get(r.h.ctx, id)
	if err != nil {
		r.fail("get %s: %v", id, err)
	}
	r.wantEqual(id.String()+" pending state", l.PendingState, e.state.PendingState())
	r.wantEqual(id.String()+" next version", l.NextVersion, e.state.NextVersion())
	r.wantEqual(id.String()+" events", l.Events, e.events)
	r.wantEqual(id.String()+" responses", l.Responses, e.responses)
	r.wantEqual(id.String()+" component", []any{l.ComponentDigest, l.ComponentType, l.DeploymentID},
		[]any{e.state.ComponentDigest, e.state.ComponentType, e.state.DeploymentID})
	ws, err := r.h.db.GetPendingState(r.h.ctx, id)
	if err != nil {
		r.fail("get_pending_state %s: %v", id, err)
	}
	r.wantEqual(id.String()+" execution with state", ws, e.state.WithState())
}

// --- T010 -------------------------------------------------------------------------------

// t010 is diff_proptest against the model: 5–10 arbitrary requests (no
// Created; Unpaused only right after Paused) with timestamps anywhere in
// 1970–2100 at µs precision, each appended at the then-current version,
// errors compared and ignored, then the logs compared.
func t010(h *harness) {
	seeds := h.opts.scaled(40, 4)
	lo := time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	hi := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	for seed := 1; seed <= seeds; seed++ {
		r := newModelRun(h, uint64(seed)+1000)
		r.op = "T010"
		ts := func() core.Timestamp { return core.TS(time.UnixMicro(lo + r.rng.Int64N(hi-lo)).UTC()) }
		x := r.newID()
		req := h.createReq(x, withSched(t0))
		if _, err := r.m.create(req); err != nil {
			h.t.Fatal(err)
		}
		h.mustCreateReq(req)
		r.ids = append(r.ids, x)
		var reqs []core.ExecutionRequest
		for len(reqs) < 5+r.rng.IntN(6) {
			ev := r.event(x, ts)
			switch e := ev.(type) {
			case *core.Unpaused:
				continue
			case *core.Locked:
				e.LockExpiresAt = ts()
			}
			reqs = append(reqs, ev)
			if _, ok := ev.(*core.Paused); ok {
				reqs = append(reqs, &core.Unpaused{})
			}
		}
		for i, ev := range reqs {
			r.step = i + 1
			r.appendBoth(x, r.m.execs[x].state.NextVersion(), []core.AppendRequest{{CreatedAt: ts(), Event: ev}})
		}
		r.checkAll()
	}
	h.t.Logf("T010: %d random scripts compared with the model", seeds)
}
