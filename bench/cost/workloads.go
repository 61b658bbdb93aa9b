package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
	sdkworker "github.com/stela-dev/stela/worker"
)

func newID(t0 core.Timestamp, i int) core.ExecutionId {
	var entropy [10]byte
	_, _ = rand.Read(entropy[:])
	id, err := core.NewExecutionId(uint64(t0.UnixMilli())+uint64(i), bytesReader(entropy[:]))
	if err != nil {
		panic(err)
	}
	return id
}

type bytesReader []byte

func (b bytesReader) Read(p []byte) (int, error) { return copy(p, b), nil }

var (
	ffqnAct = mustV(core.ParseFunctionFqn("bench:pkg/activities.work"))
	ffqnWf  = mustV(core.ParseFunctionFqn("bench:pkg/workflows.fan-out"))
	digest  = mustV(core.ParseComponentDigest("sha256:" + "ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12"))
	dep     = mustV(core.ParseDeploymentId("Dep_01KBNJ2T3D8W7H3X6Q4M9R5V1A"))
	exr     = mustV(core.ParseExecutorId("Exr_01KBNJ2T3D8W7H3X6Q4M9R5V1A"))
	compAct = core.ComponentId{ComponentType: core.ComponentTypeActivity, Name: "activities", ComponentDigest: digest}
	compWf  = core.ComponentId{ComponentType: core.ComponentTypeWorkflow, Name: "workflows", ComponentDigest: digest}
)

func mustV[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func createReq(id core.ExecutionId, ffqn core.FunctionFqn, comp core.ComponentId, at core.Timestamp) core.CreateRequest {
	return core.CreateRequest{CreatedAt: at, ExecutionID: id, FFQN: ffqn, ScheduledAt: at, ComponentID: comp,
		DeploymentID: dep, Params: core.Params{[]byte(`"https://example.com/item/42"`), []byte(`{"retries":3}`)},
		Metadata: core.ExecutionMetadata{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}
}

func lockReq(at core.Timestamp, comp core.ComponentId, run, batch int) core.LockRequest {
	return core.LockRequest{BatchSize: uint32(batch), PendingAtOrSooner: at, CreatedAt: at, ComponentID: comp, DeploymentID: dep,
		ExecutorID: exr, RunID: mustV(core.NewRunId(uint64(run), nil)), LockExpiresAt: at.Add(time.Minute),
		RetryConfig: core.ComponentRetryConfig{MaxRetries: ptr(uint32(3)), RetryExpBackoff: core.DurationOf(time.Second)}}
}

func ptr[T any](v T) *T { return &v }

func hist(h core.HistoryEvent) core.ExecutionRequest { return &core.HistoryEventRequest{Event: h} }

// parallelDo runs fn(i) for i in [0, n) on p goroutines; the first error
// wins and stops handing out the rest.
func parallelDo(n, p int, fn func(i int) error) error {
	g, ctx := errgroup.WithContext(context.Background())
	g.SetLimit(max(p, 1))
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error { return fn(i) })
	}
	return g.Wait()
}

// together runs fn(i) for i in [0, n) on n goroutines released at the same
// moment and returns the first error.
func together(n int, fn func(i int) error) error {
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = fn(i)
		})
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// lockAll locks every pending execution of ffqn in batches of 10.
func (bn *bench) lockAll(ctx context.Context, label string, at core.Timestamp, ffqn core.FunctionFqn, comp core.ComponentId, want int) ([]core.LockedExecution, error) {
	var mu sync.Mutex
	var out []core.LockedExecution
	run := 0
	p := bn.cfg.parallel
	for len(out) < want {
		before := len(out)
		calls := min(p, (want-len(out)+9)/10)
		if !bn.cfg.contended {
			calls = 1
		}
		err := parallelDo(calls, p, func(int) error {
			mu.Lock()
			run++
			r := run
			mu.Unlock()
			var locked []core.LockedExecution
			err := bn.step(ctx, label, worker, 0, func(ctx context.Context) error {
				var err error
				locked, err = bn.svc.LockPendingByFFQNs(ctx, lockReq(at, comp, r, 10), []core.FunctionFqn{ffqn})
				return err
			})
			mu.Lock()
			out = append(out, locked...)
			mu.Unlock()
			bn.addTransitions(label, len(locked))
			return err
		})
		if err != nil {
			return nil, err
		}
		if len(out) == before {
			return nil, fmt.Errorf("%s: only %d of %d executions became lockable", label, len(out), want)
		}
	}
	return out, nil
}

// createAndLock submits n executions of ffqn through the public route
// (ids from offset on), then locks them all.
func (bn *bench) createAndLock(ctx context.Context, createLabel, lockLabel string, t0 core.Timestamp, offset, n int, ffqn core.FunctionFqn, comp core.ComponentId) ([]core.LockedExecution, error) {
	ids := make([]core.ExecutionId, n)
	for i := range ids {
		ids[i] = newID(t0, offset+i)
	}
	if err := parallelDo(n, bn.cfg.parallel, func(i int) error {
		return bn.step(ctx, createLabel, public, 1, func(ctx context.Context) error {
			_, err := bn.svc.Create(ctx, createReq(ids[i], ffqn, comp, t0))
			return err
		})
	}); err != nil {
		return nil, err
	}
	return bn.lockAll(ctx, lockLabel, t0, ffqn, comp, n)
}

func (bn *bench) activities(ctx context.Context, t0 core.Timestamp, n int) error {
	locked, err := bn.createAndLock(ctx, "activity: create", "activity: lock (batch of 10)", t0, 0, n, ffqnAct, compAct)
	if err != nil {
		return err
	}
	if err := bn.finishAll(ctx, "activity: finish", t0, locked); err != nil {
		return err
	}
	return bn.sweepPastLocks(ctx, "activity: sweep past the lock expiry", t0, 0)
}

// eagerStartLockReq is the lock a worker sends with the create of an
// execution of a function it serves (eager start: worker.planEagerStart,
// Worker.request; client.CreateLocked; the create-locked route's
// wire.LockParams.Request): one execution, a run id of its own, the
// worker's default lease, no history (it has none at version 1).
func eagerStartLockReq(at core.Timestamp, comp core.ComponentId, run int) core.EagerLock {
	return core.EagerLock{Request: core.LockRequest{BatchSize: 1, PendingAtOrSooner: at, CreatedAt: at, ComponentID: comp,
		DeploymentID: dep, ExecutorID: exr, RunID: mustV(core.NewRunId(uint64(run), nil)),
		LockExpiresAt: at.Add(sdkworker.DefaultLockExpiry), SkipHistory: true,
		RetryConfig: core.ComponentRetryConfig{MaxRetries: ptr(uint32(3)), RetryExpBackoff: core.DurationOf(time.Second)}},
		FFQNs: []core.FunctionFqn{ffqnAct}}
}

// eagerStartActivities is the activity workload as a worker submitting
// activities it serves runs it (-eager-start): each is created already
// locked to the worker (store.Service.CreateLocked, what POST
// /v1/worker/create-locked calls), so it never enters the pending indexes
// and takes no lock request; with -start-batch k > 1 they are created k at
// a time by one lock (store.Service.CreateLockedMany, the route's
// `requests`: a worker's submissions that queued while its previous
// create-locked was in flight), each in its own commit, sharing a lock
// lease from 3 on. Then they finish as in activities, and a sweep pass
// after the leases' expiry runs.
func (bn *bench) eagerStartActivities(ctx context.Context, t0 core.Timestamp, n int) error {
	const offset = 200000
	k := max(bn.cfg.startBatch, 1)
	locked := make([]core.LockedExecution, n)
	if err := parallelDo((n+k-1)/k, bn.cfg.parallel, func(b int) error {
		lo, hi := b*k, min(b*k+k, n)
		return bn.step(ctx, "eager activity: create-locked", worker, 2*(hi-lo), func(ctx context.Context) error {
			lock := eagerStartLockReq(t0, compAct, offset+lo)
			if k == 1 {
				_, les, err := bn.svc.CreateLocked(ctx, createReq(newID(t0, offset+lo), ffqnAct, compAct, t0), lock)
				if err == nil && len(les) != 1 {
					err = fmt.Errorf("create-locked locked %d executions, want 1", len(les))
				}
				if err == nil {
					locked[lo] = les[0]
				}
				return err
			}
			reqs := make([]core.CreateRequest, hi-lo)
			for i := range reqs {
				reqs[i] = createReq(newID(t0, offset+lo+i), ffqnAct, compAct, t0)
			}
			lock.Request.BatchSize = uint32(len(reqs))
			res, err := bn.svc.CreateLockedMany(ctx, reqs, lock)
			if err != nil {
				return err
			}
			for i, r := range res {
				if r.Err != nil {
					return r.Err
				}
				if r.Locked == nil {
					return fmt.Errorf("create-locked batch: item %d created pending, want locked", i)
				}
				locked[lo+i] = *r.Locked
			}
			return nil
		})
	}); err != nil {
		return err
	}
	if err := bn.finishAll(ctx, "eager activity: finish", t0, locked); err != nil {
		return err
	}
	return bn.sweepPastLocks(ctx, "eager activity: sweep past the lock expiry", t0, 0)
}

// finishAll finishes each of locked with an Ok result a second after t0.
func (bn *bench) finishAll(ctx context.Context, label string, t0 core.Timestamp, locked []core.LockedExecution) error {
	result := core.RetOk(&core.WastValWithType{Type: "string", Value: []byte(`"done: 200 OK"`)})
	return parallelDo(len(locked), bn.cfg.parallel, func(i int) error {
		return bn.step(ctx, label, batchable, 1, func(ctx context.Context) error {
			_, err := bn.svc.Append(ctx, locked[i].ExecutionID, locked[i].NextVersion,
				core.AppendRequest{CreatedAt: t0.Add(time.Second), Event: &core.Finished{Retval: result}})
			return err
		})
	})
}

// sweepPastLocks runs one sweep pass two minutes after t0, when every lock
// the workload took expired (lockReq: a minute after its time, at or before
// t0), so what the sweep pays for lock expiry — the
// spent lock leases it reads and deletes on DynamoDB — is metered; want is
// the number of expired locks it must resolve (none: every lock ended).
func (bn *bench) sweepPastLocks(ctx context.Context, label string, t0 core.Timestamp, want int) error {
	return bn.step(ctx, label, inSweep, 0, func(ctx context.Context) error {
		res, err := store.Sweep(ctx, bn.svc, t0.Add(2*time.Minute))
		if err == nil && res.ExpiredLocks != want {
			err = fmt.Errorf("resolved %d expired locks, want %d", res.ExpiredLocks, want)
		}
		return err
	})
}

// submit appends the join set creation and n child requests of js to the
// locked workflow le, creating the children, with extra appended.
func (bn *bench) submit(ctx context.Context, label string, t0 core.Timestamp, le core.LockedExecution, js core.JoinSetId, n int, extra ...core.AppendRequest) (core.Version, error) {
	id := le.ExecutionID
	batch := []core.AppendRequest{{CreatedAt: t0, Event: hist(&core.JoinSetCreate{JoinSetID: js})}}
	var creqs []core.CreateRequest
	child := id.NextLevel(js)
	for range n {
		batch = append(batch, core.AppendRequest{CreatedAt: t0, Event: hist(&core.JoinSetRequestEvent{JoinSetID: js,
			Request: &core.ChildExecutionRequest{ChildExecutionID: core.ExecutionIdDerived{ExecutionId: child}, TargetFFQN: ffqnAct,
				Params: core.Params{[]byte(`"https://example.com/item/42"`)}}})})
		c := createReq(child, ffqnAct, compAct, t0)
		c.Params = core.Params{[]byte(`"https://example.com/item/42"`)}
		c.Parent = &core.Parent{ExecutionID: id, JoinSetID: js}
		creqs = append(creqs, c)
		child = child.Incremented()
	}
	batch = append(batch, extra...)
	var v core.Version
	var locked []core.LockedExecution
	err := bn.step(ctx, label, worker, len(batch)+n, func(ctx context.Context) error {
		var err error
		if bn.cfg.eager {
			lk := core.EagerLock{Request: lockReq(t0, compAct, 1, n), FFQNs: []core.FunctionFqn{ffqnAct}}
			v, locked, err = bn.svc.AppendBatchCreateNewExecutionLocked(ctx, t0, batch, id, le.NextVersion, creqs, nil, []core.EagerLock{lk})
			if err == nil && len(locked) != n {
				err = fmt.Errorf("eager submit locked %d of %d children", len(locked), n)
			}
			return err
		}
		v, err = bn.svc.AppendBatchCreateNewExecution(ctx, t0, batch, id, le.NextVersion, creqs, nil)
		return err
	})
	if err == nil && bn.cfg.eager {
		bn.addTransitions(label, len(locked)) // each child's Locked event
		bn.mu.Lock()
		bn.eagerKids = append(bn.eagerKids, locked...)
		bn.mu.Unlock()
	}
	return v, err
}

// finishChild finishes a locked child and responds to its parent.
func (bn *bench) finishChild(ctx context.Context, label string, at core.Timestamp, k core.LockedExecution, result core.ReturnValue) error {
	parent, js, _ := k.ExecutionID.SplitToParts()
	return bn.step(ctx, label, batchable, 2, func(ctx context.Context) error {
		_, err := bn.svc.AppendBatchRespondToParent(ctx,
			core.AppendEventsToExecution{ExecutionID: k.ExecutionID, Version: k.NextVersion, Batch: []core.AppendRequest{{CreatedAt: at, Event: &core.Finished{Retval: result}}}},
			core.AppendResponseToExecution{ParentExecutionID: parent, CreatedAt: at, JoinSetID: js,
				ChildExecutionID: core.ExecutionIdDerived{ExecutionId: k.ExecutionID}, FinishedVersion: k.NextVersion, Result: result}, at)
		return err
	})
}

func (bn *bench) workflows(ctx context.Context, t0 core.Timestamp, n, nChildren int) error {
	p := bn.cfg.parallel
	locked, err := bn.createAndLock(ctx, "wf 1: create", "wf 2: lock (batch of 10)", t0, 100000, n, ffqnWf, compWf)
	if err != nil {
		return err
	}
	fan := mustV(core.ParseJoinSetId("g:1"))
	sleep := mustV(core.ParseJoinSetId("o:2"))
	if err := parallelDo(len(locked), p, func(i int) error {
		le := locked[i]
		id := le.ExecutionID
		v, err := bn.submit(ctx, "wf 3: submit children", t0, le, fan, nChildren)
		if err != nil {
			return err
		}
		delay := core.NewDelayId(id, sleep, 1)
		await := []core.AppendRequest{
			{CreatedAt: t0, Event: hist(&core.JoinSetCreate{JoinSetID: sleep})},
			{CreatedAt: t0, Event: hist(&core.JoinSetRequestEvent{JoinSetID: sleep, Request: &core.DelayRequest{DelayID: delay,
				ExpiresAt: t0.Add(time.Second), ScheduleAt: core.ScheduleAt{Kind: "in", In: core.DurationOf(time.Second)}}})},
			{CreatedAt: t0, Event: hist(&core.JoinNext{JoinSetID: fan, RunExpiresAt: t0})},
		}
		return bn.step(ctx, "wf 4: await first child", worker, len(await), func(ctx context.Context) error {
			_, err := bn.svc.AppendBatch(ctx, t0, await, id, v)
			return err
		})
	}); err != nil {
		return err
	}
	t1 := t0.Add(500 * time.Millisecond)
	var kids []core.LockedExecution
	if bn.cfg.eager {
		kids = bn.eagerKids
	} else if kids, err = bn.lockAll(ctx, "child 1: lock (batch of 10)", t1, ffqnAct, compAct, n*nChildren); err != nil {
		return err
	}
	result := core.RetOk(&core.WastValWithType{Type: "u32", Value: []byte(`42`)})
	if err := parallelDo(len(kids), p, func(i int) error {
		return bn.finishChild(ctx, "child 2: finish + respond", t1, kids[i], result)
	}); err != nil {
		return err
	}
	relocked, err := bn.lockAll(ctx, "wf 5: relock (batch of 10)", t1, ffqnWf, compWf, n)
	if err != nil {
		return err
	}
	if err := parallelDo(len(relocked), p, func(i int) error {
		le := relocked[i]
		var rest []core.AppendRequest
		for range nChildren - 1 {
			rest = append(rest, core.AppendRequest{CreatedAt: t1, Event: hist(&core.JoinNext{JoinSetID: fan, RunExpiresAt: t1})})
		}
		rest = append(rest, core.AppendRequest{CreatedAt: t1, Event: hist(&core.JoinNext{JoinSetID: sleep, RunExpiresAt: t1})})
		return bn.step(ctx, "wf 6: await children, then the delay", worker, len(rest), func(ctx context.Context) error {
			_, err := bn.svc.AppendBatch(ctx, t1, rest, le.ExecutionID, le.NextVersion)
			return err
		})
	}); err != nil {
		return err
	}
	t2 := t0.Add(2 * time.Second)
	var due []core.ExpiredTimer
	if err := bn.step(ctx, "sweep 1: expired timers", sweeping, 0, func(ctx context.Context) error {
		var err error
		due, err = bn.svc.GetExpiredTimers(ctx, t2)
		return err
	}); err != nil {
		return err
	}
	if len(due) != n {
		return fmt.Errorf("sweep found %d timers, want %d", len(due), n)
	}
	if err := parallelDo(len(due), p, func(i int) error {
		d := due[i].Delay
		return bn.step(ctx, "sweep 2: fire delay", inSweep, 1, func(ctx context.Context) error {
			_, err := bn.svc.AppendDelayResponse(ctx, t2, d.ExecutionID, d.JoinSetID, d.DelayID, true)
			return err
		})
	}); err != nil {
		return err
	}
	final, err := bn.lockAll(ctx, "wf 7: relock (batch of 10)", t2, ffqnWf, compWf, n)
	if err != nil {
		return err
	}
	if err := parallelDo(len(final), p, func(i int) error {
		le := final[i]
		return bn.step(ctx, "wf 8: finish", batchable, 1, func(ctx context.Context) error {
			_, err := bn.svc.Append(ctx, le.ExecutionID, le.NextVersion, core.AppendRequest{CreatedAt: t2, Event: &core.Finished{Retval: result}})
			return err
		})
	}); err != nil {
		return err
	}
	return bn.sweepPastLocks(ctx, "sweep 3: past the lock expiry", t0, 0)
}

// sleeps runs n workflows (ids from offset on) that sleep once, the delay
// awaited in memory under their lock, and finish at its expiry: with
// fireAppend the worker fires the delay and appends Finished in one commit
// (fire-and-continue, store.Service.AppendBatchFiringDelay), else it fires
// it (FireDelay) and then appends Finished, two requests (a worker against
// a server without the one-commit route).
func (bn *bench) sleeps(ctx context.Context, t0 core.Timestamp, offset, n int, fireAppend bool) error {
	lbl := "sleep, two requests"
	if fireAppend {
		lbl = "sleep, fire-and-continue"
	}
	locked, err := bn.createAndLock(ctx, lbl+" 1: create", lbl+" 2: lock (batch of 10)", t0, offset, n, ffqnWf, compWf)
	if err != nil {
		return err
	}
	js := mustV(core.ParseJoinSetId("o:1"))
	t1 := t0.Add(time.Second)
	result := core.RetOk(&core.WastValWithType{Type: "u32", Value: []byte(`42`)})
	return parallelDo(len(locked), bn.cfg.parallel, func(i int) error {
		le := locked[i]
		id := le.ExecutionID
		delay := core.NewDelayId(id, js, 1)
		sleep := []core.AppendRequest{
			{CreatedAt: t0, Event: hist(&core.JoinSetCreate{JoinSetID: js})},
			{CreatedAt: t0, Event: hist(&core.JoinSetRequestEvent{JoinSetID: js, Request: &core.DelayRequest{DelayID: delay,
				ExpiresAt: t1, ScheduleAt: core.ScheduleAt{Kind: "in", In: core.DurationOf(time.Second)}}})},
			{CreatedAt: t0, Event: hist(&core.JoinNext{JoinSetID: js, RunExpiresAt: le.LockedEvent.LockExpiresAt})},
		}
		var v core.Version
		if err := bn.step(ctx, lbl+" 3: sleep (awaited in memory)", worker, len(sleep), func(ctx context.Context) error {
			var err error
			v, err = bn.svc.AppendBatch(ctx, t0, sleep, id, le.NextVersion)
			return err
		}); err != nil {
			return err
		}
		fin := []core.AppendRequest{{CreatedAt: t1, Event: &core.Finished{Retval: result}}}
		if fireAppend {
			return bn.step(ctx, lbl+" 4: fire + finish (one commit)", worker, 2, func(ctx context.Context) error {
				ans, err := bn.svc.AppendBatchFiringDelay(ctx, t1, fin, id, v, delay)
				if err == nil && ans.Outcome != core.DelayFired {
					err = fmt.Errorf("%s: fire-and-append answered %s, want fired", id, ans.Outcome)
				}
				return err
			})
		}
		if err := bn.step(ctx, lbl+" 4: fire", worker, 1, func(ctx context.Context) error {
			ans, err := bn.svc.FireDelay(ctx, delay)
			if err == nil && ans.Outcome != core.DelayFired {
				err = fmt.Errorf("%s: fire answered %s, want fired", id, ans.Outcome)
			}
			return err
		}); err != nil {
			return err
		}
		return bn.step(ctx, lbl+" 5: finish", batchable, 1, func(ctx context.Context) error {
			_, err := bn.svc.AppendBatch(ctx, t1, fin, id, v)
			return err
		})
	})
}

// fanouts runs n workflows one after the other, each submitting children
// child activities and awaiting the first; all its children then finish at
// the same moment (one goroutine each), and the workflow collects them.
func (bn *bench) fanouts(ctx context.Context, t0 core.Timestamp, n, children int) error {
	fan := mustV(core.ParseJoinSetId("g:fan"))
	result := core.RetOk(&core.WastValWithType{Type: "u32", Value: []byte(`7`)})
	for r := range n {
		at := t0.Add(time.Duration(10+r) * time.Minute)
		id := newID(at, 500000+r)
		if err := bn.step(ctx, "fan 1: create", public, 1, func(ctx context.Context) error {
			_, err := bn.svc.Create(ctx, createReq(id, ffqnWf, compWf, at))
			return err
		}); err != nil {
			return err
		}
		var le core.LockedExecution
		if err := bn.step(ctx, "fan 2: lock", worker, 1, func(ctx context.Context) error {
			var err error
			le, err = bn.svc.LockOne(ctx, lockReq(at, compWf, 900000+r, 1), id, 1)
			return err
		}); err != nil {
			return err
		}
		await := core.AppendRequest{CreatedAt: at, Event: hist(&core.JoinNext{JoinSetID: fan, RunExpiresAt: at})}
		v, err := bn.submit(ctx, "fan 3: submit children + await", at, le, fan, children, await)
		if err != nil {
			return err
		}
		kids, err := bn.lockAll(ctx, "fan 4: children lock (batch of 10)", at, ffqnAct, compAct, children)
		if err != nil {
			return err
		}
		if err := together(len(kids), func(i int) error {
			return bn.finishChild(ctx, "fan 5: children finish at once", at, kids[i], result)
		}); err != nil {
			return err
		}
		var re core.LockedExecution
		if err := bn.step(ctx, "fan 6: relock", worker, 1, func(ctx context.Context) error {
			var err error
			re, err = bn.svc.LockOne(ctx, lockReq(at, compWf, 910000+r, 1), id, v)
			return err
		}); err != nil {
			return err
		}
		rest := make([]core.AppendRequest, 0, children)
		for range children - 1 {
			rest = append(rest, core.AppendRequest{CreatedAt: at, Event: hist(&core.JoinNext{JoinSetID: fan, RunExpiresAt: at})})
		}
		rest = append(rest, core.AppendRequest{CreatedAt: at, Event: &core.Finished{Retval: result}})
		if err := bn.step(ctx, "fan 7: collect, finish", worker, len(rest), func(ctx context.Context) error {
			_, err := bn.svc.AppendBatch(ctx, at, rest, id, re.NextVersion)
			return err
		}); err != nil {
			return err
		}
	}
	return bn.sweepPastLocks(ctx, "fan 8: sweep past the lock expiry", t0.Add(time.Duration(10+n)*time.Minute), 0)
}
