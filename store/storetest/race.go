package storetest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stela-dev/stela/core"
)

// raceGoroutines is the number of concurrent writers in the race tests.
const raceGoroutines = 16

// raceTests run real goroutines against one store.
func raceTests() []contractTest {
	return []contractTest{
		{"Race_LockersGrantEachExecutionExactlyOnce", raceLock},
		{"Race_AppendersAtOneVersionExactlyOneWins", raceAppend},
		{"Race_ResponseVersusJoinNextNeverStaysBlocked", raceResponseJoinNext},
		{"Race_ConcurrentResponsesGetGaplessCursors", raceResponses},
		{"Race_ConcurrentCreatesOfOneIdExactlyOneWins", raceCreate},
		{"Race_SiblingsFinishingTogetherUnblockTheParentOnce", raceSiblings},
		{"Race_ChildFinishVersusJoinNextNeverStaysBlocked", raceChildJoinNext},
	}
}

// goAll runs fn(i) for i in [0, n) on n goroutines released together and waits for all.
func goAll(n int, fn func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			fn(i)
		}()
	}
	close(start)
	wg.Wait()
}

// errs collects errors from goroutines; the test fails on the main goroutine.
type errs struct {
	mu   sync.Mutex
	list []string
}

func (e *errs) add(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.list) < 20 {
		e.list = append(e.list, fmt.Sprintf(format, args...))
	}
}

func (e *errs) check(h *harness) {
	h.t.Helper()
	if len(e.list) > 0 {
		h.t.Fatalf("%d failures, first ones:\n%s", len(e.list), joinLines(e.list))
	}
}

func joinLines(l []string) string {
	s := ""
	for _, x := range l {
		s += "  " + x + "\n"
	}
	return s
}

type grant struct {
	le core.LockedExecution
	by core.LockedBy
}

func raceLock(h *harness) {
	rounds, m := h.opts.scaled(3, 1), h.opts.scaled(64, 8)
	calls := int64(0)
	for r := 0; r < rounds; r++ {
		ids := map[core.ExecutionId]bool{}
		for i := 0; i < m; i++ {
			ids[h.create()] = true
		}
		var mu sync.Mutex
		var grants []grant
		var locked atomic.Int64
		var failures errs
		goAll(raceGoroutines, func(g int) {
			exr := newExr()
			for iter := 0; locked.Load() < int64(m) && iter < 10*m && h.ctx.Err() == nil; iter++ {
				run := newRun()
				req := h.lockReq(exr, run, h.now().Add(time.Hour))
				req.BatchSize = uint32(1 + (g+iter)%4)
				var got []core.LockedExecution
				var err error
				atomic.AddInt64(&calls, 1)
				if g%2 == 0 {
					got, err = h.db.LockPendingByFFQNs(h.ctx, req, []core.FunctionFqn{ffqnF})
				} else {
					got, err = h.db.LockPendingByComponentDigest(h.ctx, req)
				}
				if err != nil {
					failures.add("goroutine %d: lock: %v", g, err)
					return
				}
				if len(got) > int(req.BatchSize) {
					failures.add("goroutine %d: %d locked with batch size %d", g, len(got), req.BatchSize)
				}
				mu.Lock()
				for _, le := range got {
					grants = append(grants, grant{le, lockedBy(exr, run)})
				}
				mu.Unlock()
				locked.Add(int64(len(got)))
			}
		})
		failures.check(h)
		seen := map[core.ExecutionId]int{}
		for _, g := range grants {
			seen[g.le.ExecutionID]++
			if !ids[g.le.ExecutionID] {
				h.t.Fatalf("granted unknown execution %s", g.le.ExecutionID)
			}
			if g.le.NextVersion != 2 {
				h.t.Fatalf("%s granted with next_version %d, want 2", g.le.ExecutionID, g.le.NextVersion)
			}
		}
		for id := range ids {
			if seen[id] != 1 {
				h.t.Fatalf("round %d: %s granted %d times, want exactly once", r, id, seen[id])
			}
		}
		for _, g := range grants {
			h.wantState(g.le.ExecutionID, psLocked(g.by, h.now().Add(time.Hour)))
			h.wantNextVersion(g.le.ExecutionID, 2)
		}
		// Everything is locked now: nothing more is granted.
		if got, err := h.db.LockPendingByFFQNs(h.ctx, h.lockReq(newExr(), newRun(), h.now().Add(time.Hour)), []core.FunctionFqn{ffqnF}); err != nil || len(got) != 0 {
			h.t.Fatalf("after the race: %d locked, err %v", len(got), err)
		}
	}

	// lock_one racing on a single execution and version.
	oneRounds := h.opts.scaled(10, 2)
	for r := 0; r < oneRounds; r++ {
		x := h.create()
		var wins atomic.Int64
		var failures errs
		goAll(raceGoroutines, func(g int) {
			_, err := h.lockOne(x, 1, newExr(), newRun(), h.now().Add(time.Hour))
			var ise *core.IllegalStateError
			switch {
			case err == nil:
				wins.Add(1)
			case errors.As(err, &ise) && ise.Reason == "cannot lock, already locked":
			default:
				if _, ok := errorsAs[*core.VersionConflictError](err); !ok {
					failures.add("goroutine %d: lock_one: %v", g, err)
				}
			}
		})
		failures.check(h)
		if wins.Load() != 1 {
			h.t.Fatalf("lock_one race on %s: %d winners, want 1", x, wins.Load())
		}
		h.wantNextVersion(x, 2)
	}
	h.t.Logf("lock race: %d rounds × %d executions × %d goroutines (%d lock calls); lock_one race: %d rounds × %d goroutines",
		rounds, m, raceGoroutines, calls, oneRounds, raceGoroutines)
}

func raceAppend(h *harness) {
	rounds := h.opts.scaled(30, 4)
	x := h.create()
	v := core.Version(1)
	for r := 0; r < rounds; r++ {
		var wins atomic.Int64
		var failures errs
		goAll(raceGoroutines, func(g int) {
			js := mustJS(fmt.Sprintf("n:r%d-g%d", r, g))
			next, err := h.db.Append(h.ctx, x, v, core.AppendRequest{CreatedAt: h.now(), Event: jsc(js)})
			if err == nil {
				wins.Add(1)
				if next != v+1 {
					failures.add("winner got %d, want %d", next, v+1)
				}
				return
			}
			vc, ok := errorsAs[*core.VersionConflictError](err)
			if !ok {
				failures.add("goroutine %d: %v (%s), want a *core.VersionConflictError", g, err, errKind(err))
				return
			}
			if vc.Expected != v+1 || vc.Requested != v {
				failures.add("goroutine %d: VersionConflict{expected %d, requested %d}, want {%d, %d}", g, vc.Expected, vc.Requested, v+1, v)
			}
		})
		failures.check(h)
		if wins.Load() != 1 {
			h.t.Fatalf("round %d: %d winners at version %d, want 1", r, wins.Load(), v)
		}
		v++
		h.wantNextVersion(x, v)
	}
	if n := len(h.get(x).Events); n != int(v) {
		h.t.Fatalf("%d events, want %d", n, v)
	}
	h.t.Logf("append race: %d versions × %d goroutines", rounds, raceGoroutines)
}

// raceResponseJoinNext races a JoinNext against the response it waits for
// (docs/spec/semantics.md §8.3): whichever commits first, the execution must end up
// PendingAt, never BlockedByJoinSet with its response present.
func raceResponseJoinNext(h *harness) {
	rounds := h.opts.scaled(120, 12)
	const workers = 4
	var failures errs
	goAll(workers, func(w int) {
		for r := w; r < rounds && h.ctx.Err() == nil; r += workers {
			x := newExecID()
			if _, err := h.db.Create(h.ctx, h.createReq(x)); err != nil {
				failures.add("create: %v", err)
				return
			}
			by := lockedBy(newExr(), newRun())
			if _, err := h.lockOne(x, 1, by.ExecutorID, by.RunID, t0.Add(time.Hour)); err != nil {
				failures.add("lock: %v", err)
				return
			}
			js := mustJS("o:")
			useDelay := r%2 == 1
			child := x.NextLevel(js)
			d := core.NewDelayId(x, js, 1)
			setup := []core.AppendRequest{{CreatedAt: t0, Event: jsc(js)}, {CreatedAt: t0, Event: creq(js, child)}}
			if useDelay {
				setup[1] = core.AppendRequest{CreatedAt: t0, Event: dreq(js, d, t0.Add(time.Hour), schedNow)}
			}
			if _, err := h.db.AppendBatch(h.ctx, t0, setup, x, 2); err != nil {
				failures.add("setup: %v", err)
				return
			}
			goAll(2, func(i int) {
				if i == 0 {
					if _, err := h.db.Append(h.ctx, x, 4, core.AppendRequest{CreatedAt: t0, Event: jnFor(js, t0, nil)}); err != nil {
						failures.add("round %d: JoinNext: %v", r, err)
					}
					return
				}
				var err error
				if useDelay {
					var out core.AppendDelayResponseOutcome
					out, err = h.db.AppendDelayResponse(h.ctx, t0, x, js, d, true)
					if err == nil && out != core.DelayResponseSuccess {
						err = fmt.Errorf("outcome %d", out)
					}
				} else {
					err = h.db.AppendResponse(h.ctx, t0, x, childResp(js, child, 1, ok0))
				}
				if err != nil {
					failures.add("round %d: response: %v", r, err)
				}
			})
			l, err := h.db.Get(h.ctx, x)
			if err != nil {
				failures.add("get: %v", err)
				return
			}
			if got, want := jsonOrErr(l.PendingState), jsonOrErr(psPendingAt(t0, &by)); got != want || len(l.Responses) != 1 || l.NextVersion != 5 {
				failures.add("round %d (delay %v): state %s with %d responses, next %d; want %s with 1 response, next 5",
					r, useDelay, got, len(l.Responses), l.NextVersion, want)
			}
		}
	})
	failures.check(h)
	h.t.Logf("response vs JoinNext race: %d rounds on %d workers (half child responses, half delay responses)", rounds, workers)
}

func raceResponses(h *harness) {
	rounds := h.opts.scaled(5, 1)
	for r := 0; r < rounds; r++ {
		x := h.create()
		js := mustJS("o:")
		var failures errs
		var successes atomic.Int64
		goAll(raceGoroutines, func(g int) {
			// Two goroutines per delay: one success, one AlreadyFinished.
			d := core.NewDelayId(x, js, uint64(g/2+1))
			out, err := h.db.AppendDelayResponse(h.ctx, t0, x, js, d, true)
			switch {
			case err != nil:
				failures.add("goroutine %d: %v", g, err)
			case out == core.DelayResponseSuccess:
				successes.Add(1)
			case out != core.DelayResponseAlreadyFinished:
				failures.add("goroutine %d: outcome %d", g, out)
			}
		})
		failures.check(h)
		want := raceGoroutines / 2
		if int(successes.Load()) != want {
			h.t.Fatalf("%d successful responses, want %d (one per delay)", successes.Load(), want)
		}
		l := h.get(x)
		for i, resp := range l.Responses {
			if resp.Cursor != core.ResponseCursor(i+1) {
				h.t.Fatalf("cursors %v, want 1..%d", cursorsOf(l.Responses), want)
			}
		}
		if len(l.Responses) != want {
			h.t.Fatalf("%d responses, want %d", len(l.Responses), want)
		}
		h.wantNextVersion(x, 1)
	}
	h.t.Logf("concurrent responses: %d rounds × %d goroutines on %d delays", rounds, raceGoroutines, raceGoroutines/2)
}

func raceCreate(h *harness) {
	rounds := h.opts.scaled(20, 3)
	for r := 0; r < rounds; r++ {
		req := h.createReq(newExecID())
		var wins atomic.Int64
		var failures errs
		goAll(raceGoroutines, func(g int) {
			v, err := h.db.Create(h.ctx, req)
			switch {
			case err == nil:
				wins.Add(1)
				if v != 1 {
					failures.add("create returned %d", v)
				}
			case !errors.Is(err, core.ErrConflict):
				failures.add("goroutine %d: %v (%s), want Conflict", g, err, errKind(err))
			}
		})
		failures.check(h)
		if wins.Load() != 1 {
			h.t.Fatalf("%d creates of %s succeeded, want 1", wins.Load(), req.ExecutionID)
		}
		if l := h.get(req.ExecutionID); len(l.Events) != 1 {
			h.t.Fatalf("%d events after racing creates, want 1", len(l.Events))
		}
	}
	h.t.Logf("create race: %d ids × %d goroutines", rounds, raceGoroutines)
}

// parentWithChildren creates a locked parent (next version 2) and n children
// of join set js in one append_batch_create_new_execution, with a JoinNext
// of js at the end when await is set, and locks every child (next version 2).
// It returns the parent's next version and its lock.
func (h *harness) parentWithChildren(js core.JoinSetId, n int, await bool) (p core.ExecutionId, children []core.ExecutionId, next core.Version, by core.LockedBy) {
	h.t.Helper()
	p = h.create()
	by = lockedBy(newExr(), newRun())
	if _, err := h.lockOne(p, 1, by.ExecutorID, by.RunID, t0.Add(time.Hour)); err != nil {
		h.t.Fatalf("lock parent: %v", err)
	}
	batch := []core.AppendRequest{{CreatedAt: t0, Event: jsc(js)}}
	var reqs []core.CreateRequest
	c := p.NextLevel(js)
	for range n {
		children = append(children, c)
		batch = append(batch, core.AppendRequest{CreatedAt: t0, Event: creqTo(js, c, ffqnChild)})
		reqs = append(reqs, h.createReq(c, withFFQN(ffqnChild), withParent(p, js), withSched(t0)))
		c = c.Incremented()
	}
	if await {
		batch = append(batch, core.AppendRequest{CreatedAt: t0, Event: jnFor(js, t0, nil)})
	}
	next, err := h.db.AppendBatchCreateNewExecution(h.ctx, t0, batch, p, 2, reqs, nil)
	if err != nil {
		h.t.Fatalf("submit %d children: %v", n, err)
	}
	for _, c := range children {
		if _, err := h.db.LockOne(h.ctx, h.lockReq(newExr(), newRun(), t0.Add(time.Hour)), c, 1); err != nil {
			h.t.Fatalf("lock child %s: %v", c, err)
		}
	}
	return p, children, next, by
}

// finishLockedChild appends Finished(rv) to a child locked at version 2 and
// responds to its parent (append_batch_respond_to_parent).
func (h *harness) finishLockedChild(c core.ExecutionId, rv core.ReturnValue) error {
	p, js, _ := c.SplitToParts()
	_, err := h.db.AppendBatchRespondToParent(h.ctx,
		core.AppendEventsToExecution{ExecutionID: c, Version: 2, Batch: []core.AppendRequest{{CreatedAt: t0, Event: finished(rv)}}},
		core.AppendResponseToExecution{ParentExecutionID: p, CreatedAt: t0, JoinSetID: js,
			ChildExecutionID: core.ExecutionIdDerived{ExecutionId: c}, FinishedVersion: 2, Result: rv}, t0)
	return err
}

// raceSiblings finishes every child of a blocked parent at once while a
// reader pages its responses (docs/spec/semantics.md §8.3, §8.4, §8.13):
// the parent is unblocked, each child's response is stored once, and every
// read sees cursors 1..k without a gap, each cursor always naming the same
// child.
func raceSiblings(h *harness) {
	rounds := h.opts.scaled(3, 1)
	for r := 0; r < rounds; r++ {
		js := mustJS("g:")
		p, children, next, by := h.parentWithChildren(js, raceGoroutines, true)
		h.wantState(p, psBlocked(js, t0, false))
		var failures errs
		var done atomic.Bool
		var running atomic.Int64
		running.Store(raceGoroutines)
		seen := map[core.ResponseCursor]core.ExecutionId{}
		reads := 0
		goAll(raceGoroutines+1, func(g int) {
			if g < raceGoroutines {
				rv := core.RetOk(&core.WastValWithType{Type: "u32", Value: []byte(fmt.Sprint(g))})
				if err := h.finishLockedChild(children[g], rv); err != nil {
					failures.add("child %d: %v", g, err)
				}
				if running.Add(-1) == 0 {
					done.Store(true) // the reader reads once more, then stops
				}
				return
			}
			for last := false; !last; {
				last = done.Load()
				page, err := h.db.ListResponses(h.ctx, p, core.Pagination[core.ResponseCursor]{
					Direction: core.NewerThan, Length: 100, Cursor: 0}, nil)
				if err != nil {
					failures.add("read: %v", err)
					return
				}
				reads++
				for i, resp := range page.Responses {
					c := resp.Event.Event.Event.(*core.ChildExecutionFinished).ChildExecutionID.ExecutionId
					if resp.Cursor != core.ResponseCursor(i+1) {
						failures.add("read %d: cursors %v, want 1..%d", reads, cursorsOf(page.Responses), len(page.Responses))
						return
					}
					if was, ok := seen[resp.Cursor]; ok && was != c {
						failures.add("read %d: cursor %d names %s, earlier %s", reads, resp.Cursor, c, was)
						return
					}
					seen[resp.Cursor] = c
				}
				if len(seen) > len(page.Responses) {
					failures.add("read %d: %d responses, an earlier read saw %d", reads, len(page.Responses), len(seen))
					return
				}
			}
		})
		failures.check(h)
		h.wantState(p, psPendingAt(t0, &by))
		l := h.get(p)
		if len(l.Responses) != raceGoroutines {
			h.t.Fatalf("round %d: %d responses, want %d", r, len(l.Responses), raceGoroutines)
		}
		got := map[core.ExecutionId]bool{}
		for i, resp := range l.Responses {
			c := resp.Event.Event.Event.(*core.ChildExecutionFinished).ChildExecutionID.ExecutionId
			if resp.Cursor != core.ResponseCursor(i+1) || got[c] {
				h.t.Fatalf("round %d: cursors %v, child %s twice: %v", r, cursorsOf(l.Responses), c, got[c])
			}
			got[c] = true
			if was, ok := seen[resp.Cursor]; ok && was != c {
				h.t.Fatalf("round %d: cursor %d names %s, a concurrent read saw %s", r, resp.Cursor, c, was)
			}
		}
		// Every JoinNext of the set finds its response.
		var rest []core.AppendRequest
		for range raceGoroutines - 1 {
			rest = append(rest, core.AppendRequest{CreatedAt: t0, Event: jnFor(js, t0, nil)})
		}
		v, err := h.db.AppendBatch(h.ctx, t0, rest, p, next)
		h.wantNoErr("join next", err)
		if want := next + core.Version(raceGoroutines-1); v != want {
			h.t.Fatalf("round %d: next version %d, want %d", r, v, want)
		}
		h.wantState(p, psPendingAt(t0, &by))
		h.t.Logf("round %d: %d siblings finished together; %d concurrent reads", r, raceGoroutines, reads)
	}
}

// raceChildJoinNext races a parent's first JoinNext against its children's
// finishes through append_batch_respond_to_parent (docs/spec/semantics.md
// §8.3): whatever the interleaving, the parent ends up pending with every
// response, never blocked.
func raceChildJoinNext(h *harness) {
	rounds := h.opts.scaled(40, 6)
	const workers = 4
	var failures errs
	goAll(workers, func(w int) {
		for r := w; r < rounds && h.ctx.Err() == nil; r += workers {
			js := mustJS("g:")
			n := 1 + r%3
			p, children, next, by := h.parentWithChildren(js, n, false)
			goAll(n+1, func(i int) {
				if i == n {
					if _, err := h.db.Append(h.ctx, p, next, core.AppendRequest{CreatedAt: t0, Event: jnFor(js, t0, nil)}); err != nil {
						failures.add("round %d: JoinNext: %v", r, err)
					}
					return
				}
				if err := h.finishLockedChild(children[i], ok0); err != nil {
					failures.add("round %d: child %d: %v", r, i, err)
				}
			})
			l, err := h.db.Get(h.ctx, p)
			if err != nil {
				failures.add("get: %v", err)
				return
			}
			if got, want := jsonOrErr(l.PendingState), jsonOrErr(psPendingAt(t0, &by)); got != want || len(l.Responses) != n || l.NextVersion != next+1 {
				failures.add("round %d (%d children): state %s with %d responses, next %d; want %s with %d, next %d",
					r, n, got, len(l.Responses), l.NextVersion, want, n, next+1)
			}
		}
	})
	failures.check(h)
	h.t.Logf("child finish vs JoinNext race: %d rounds on %d workers, 1–3 children each", rounds, workers)
}
