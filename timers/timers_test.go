package timers_test

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/store/mem"
	"github.com/stela-dev/stela/timers"
)

// waitLimit bounds every wait on observable state; it is a failure
// deadline, never a synchronisation delay.
const waitLimit = 20 * time.Second

var t0 = core.TS(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))

// fixedClock reads one instant that tests move.
type fixedClock struct {
	mu  sync.Mutex
	now core.Timestamp
}

func (c *fixedClock) Now() core.Timestamp {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fixedClock) set(ts core.Timestamp) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = ts
}

// countingClock forwards to a shared clock and counts this loop's reads
// (two per pass), signalling each on read.
type countingClock struct {
	inner core.Clock
	calls atomic.Int64
	read  chan struct{}
}

func newCountingClock(inner core.Clock) *countingClock {
	return &countingClock{inner: inner, read: make(chan struct{}, 1)}
}

func (c *countingClock) Now() core.Timestamp {
	c.calls.Add(1)
	select {
	case c.read <- struct{}{}:
	default:
	}
	return c.inner.Now()
}

// waitReads waits until the clock has been read at least n more times.
func (c *countingClock) waitReads(tb testing.TB, n int64) {
	tb.Helper()
	want := c.calls.Load() + n
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for c.calls.Load() < want {
		select {
		case <-c.read:
		case <-deadline.C:
			tb.Fatalf("timers loop stalled: %d clock reads, want %d", c.calls.Load(), want)
		}
	}
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func mustParse[T any](tb testing.TB, f func(string) (T, error), s string) T {
	tb.Helper()
	v, err := f(s)
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

func newID(tb testing.TB) core.ExecutionId {
	tb.Helper()
	id, err := core.NewExecutionId(uint64(t0.UnixMilli()), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	return id
}

type fixture struct {
	svc      *store.Service
	clock    *fixedClock
	delays   []core.ExecutionId // workflows blocked on one due delay each
	locks    []core.ExecutionId // activities whose lock expired (no retries left)
	cancels  []core.ExecutionId // activities that are cancelling and unlocked
	wf, act  core.FunctionFqn
	exr      core.ExecutorId
	run      core.RunId
	delayDur time.Duration
}

func newFixture(tb testing.TB) *fixture {
	tb.Helper()
	clock := &fixedClock{now: t0}
	return &fixture{
		svc:      store.New(mem.New(), store.Options{Clock: clock, Logger: quietLogger(), PollInterval: 5 * time.Millisecond}),
		clock:    clock,
		wf:       mustParse(tb, core.ParseFunctionFqn, "test:timers/wf.sleep"),
		act:      mustParse(tb, core.ParseFunctionFqn, "test:timers/act.work"),
		exr:      mustParse(tb, core.ParseExecutorId, "Exr_01KBNJ2T3D8W7H3X6Q4M9R5V1A"),
		run:      mustParse(tb, core.ParseRunId, "Run_01KBNJ2V0P6C4Y8N2B7K3T5W9E"),
		delayDur: time.Second,
	}
}

func (f *fixture) create(tb testing.TB, ffqn core.FunctionFqn, ct core.ComponentType) core.ExecutionId {
	tb.Helper()
	id := newID(tb)
	_, err := f.svc.Create(context.Background(), core.CreateRequest{CreatedAt: t0, ExecutionID: id, FFQN: ffqn,
		ScheduledAt: t0, ComponentID: core.ComponentId{ComponentType: ct}, Params: core.Params{}})
	if err != nil {
		tb.Fatalf("create %s: %v", id, err)
	}
	return id
}

func (f *fixture) lock(tb testing.TB, id core.ExecutionId, ct core.ComponentType, expires core.Timestamp) core.Version {
	tb.Helper()
	retry := core.RetryConfigZero()
	if ct == core.ComponentTypeWorkflow {
		retry.MaxRetries = nil
	}
	le, err := f.svc.LockOne(context.Background(), core.LockRequest{CreatedAt: t0, PendingAtOrSooner: t0,
		ComponentID: core.ComponentId{ComponentType: ct}, ExecutorID: f.exr, RunID: f.run,
		LockExpiresAt: expires, RetryConfig: retry}, id, 1)
	if err != nil {
		tb.Fatalf("lock %s: %v", id, err)
	}
	return le.NextVersion
}

// addDelayed creates a workflow blocked on a delay due at t0+delayDur.
func (f *fixture) addDelayed(tb testing.TB) {
	tb.Helper()
	id := f.create(tb, f.wf, core.ComponentTypeWorkflow)
	v := f.lock(tb, id, core.ComponentTypeWorkflow, t0.Add(time.Hour))
	js := mustParse(tb, core.ParseJoinSetId, "o:sleep")
	batch := []core.AppendRequest{
		{CreatedAt: t0, Event: &core.HistoryEventRequest{Event: &core.JoinSetCreate{JoinSetID: js}}},
		{CreatedAt: t0, Event: &core.HistoryEventRequest{Event: &core.JoinSetRequestEvent{JoinSetID: js,
			Request: &core.DelayRequest{DelayID: core.NewDelayId(id, js, 1), ExpiresAt: t0.Add(f.delayDur),
				ScheduleAt: core.ScheduleAt{Kind: "in", In: core.DurationOf(f.delayDur)}}}}},
		{CreatedAt: t0, Event: &core.HistoryEventRequest{Event: &core.JoinNext{JoinSetID: js, RunExpiresAt: t0.Add(time.Hour)}}},
	}
	if _, err := f.svc.AppendBatch(context.Background(), t0, batch, id, v); err != nil {
		tb.Fatalf("append delay batch: %v", err)
	}
	f.delays = append(f.delays, id)
}

// addExpiredLock creates an activity locked until t0+1s with no retries left.
func (f *fixture) addExpiredLock(tb testing.TB) {
	tb.Helper()
	id := f.create(tb, f.act, core.ComponentTypeActivity)
	f.lock(tb, id, core.ComponentTypeActivity, t0.Add(time.Second))
	f.locks = append(f.locks, id)
}

// addCancelling creates an unlocked activity with a cancellation request.
func (f *fixture) addCancelling(tb testing.TB) {
	tb.Helper()
	id := f.create(tb, f.act, core.ComponentTypeActivity)
	if _, err := f.svc.AppendActivityCancellationRequested(context.Background(), id, t0); err != nil {
		tb.Fatalf("cancel %s: %v", id, err)
	}
	f.cancels = append(f.cancels, id)
}

// waitResolved blocks (on the store's own notifications, bounded by
// waitLimit) until every delay has a response and every activity finished.
func (f *fixture) waitResolved(tb testing.TB) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	for _, id := range f.delays {
		if _, err := f.svc.SubscribeToNextResponses(ctx, id, 0); err != nil {
			tb.Fatalf("delay of %s never fired: %v", id, err)
		}
	}
	for _, id := range append(append([]core.ExecutionId{}, f.locks...), f.cancels...) {
		if _, err := f.svc.WaitForFinishedResult(ctx, id); err != nil {
			tb.Fatalf("%s never finished: %v", id, err)
		}
	}
}

func finishedCount(tb testing.TB, svc *store.Service, id core.ExecutionId) int {
	tb.Helper()
	log, err := svc.Get(context.Background(), id)
	if err != nil {
		tb.Fatal(err)
	}
	n := 0
	for _, e := range log.Events {
		if _, ok := e.Event.(*core.Finished); ok {
			n++
		}
	}
	return n
}

func TestRun(t *testing.T) {
	t.Run("TwoConcurrentLoopsFireEachDelayAndResolveEachLockExactlyOnce", func(t *testing.T) {
		f := newFixture(t)
		for range 20 {
			f.addDelayed(t)
			f.addExpiredLock(t)
		}
		for range 5 {
			f.addCancelling(t)
		}
		f.clock.set(t0.Add(2 * time.Second)) // everything is due now
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		clocks := []*countingClock{newCountingClock(f.clock), newCountingClock(f.clock)}
		stats := make([]timers.Stats, len(clocks))
		errs := make([]error, len(clocks))
		var wg sync.WaitGroup
		for i, c := range clocks {
			wg.Go(func() {
				stats[i], errs[i] = timers.Run(ctx, f.svc, c, timers.Options{Interval: time.Millisecond, Logger: quietLogger()})
			})
		}
		f.waitResolved(t)
		// Let each loop run a few more passes over the resolved store: a
		// duplicate would show up as a second response or Finished event.
		for _, c := range clocks {
			c.waitReads(t, 6)
		}
		cancel()
		wg.Wait()

		var total timers.Stats
		for i, s := range stats {
			if errs[i] != nil {
				t.Fatalf("loop %d: %v", i, errs[i])
			}
			if s.FailedPasses != 0 {
				t.Errorf("loop %d failed passes = %d, want 0", i, s.FailedPasses)
			}
			total.ExpiredDelays += s.ExpiredDelays
			total.ExpiredLocks += s.ExpiredLocks
			total.Cancelled += s.Cancelled
		}
		if got, want := total.ExpiredDelays, len(f.delays); got != want {
			t.Errorf("delays fired = %d, want %d (stats %+v)", got, want, stats)
		}
		if got, want := total.ExpiredLocks, len(f.locks); got != want {
			t.Errorf("locks resolved = %d, want %d (stats %+v)", got, want, stats)
		}
		if got, want := total.Cancelled, len(f.cancels); got != want {
			t.Errorf("cancellations finished = %d, want %d (stats %+v)", got, want, stats)
		}
		for _, id := range f.delays {
			log, err := f.svc.Get(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(log.Responses); got != 1 {
				t.Errorf("%s has %d responses, want 1", id, got)
			}
			if got := log.PendingState.Status(); got != "pending_at" {
				t.Errorf("%s is %s after its delay fired, want pending_at", id, got)
			}
		}
		for _, id := range append(append([]core.ExecutionId{}, f.locks...), f.cancels...) {
			if got := finishedCount(t, f.svc, id); got != 1 {
				t.Errorf("%s has %d Finished events, want 1", id, got)
			}
		}
		for _, id := range f.locks {
			rv, _ := f.svc.WaitForFinishedResult(context.Background(), id)
			if rv.Failure == nil || rv.Failure.Kind != core.FailureTimedOut {
				t.Errorf("%s finished with %+v, want timed_out", id, rv)
			}
		}
	})

	t.Run("ALateLoopFindsNothingLeftToDo", func(t *testing.T) {
		f := newFixture(t)
		f.addDelayed(t)
		f.addExpiredLock(t)
		f.clock.set(t0.Add(2 * time.Second))
		ctx, cancel := context.WithCancel(context.Background())
		first, err := runUntil(ctx, t, f, func() { f.waitResolved(t) })
		cancel()
		if err != nil || first.ExpiredDelays != 1 || first.ExpiredLocks != 1 {
			t.Fatalf("first loop = %+v, %v; want one delay and one lock", first, err)
		}
		// A late duplicate (EventBridge redelivery) sweeping at the old time.
		late := runPasses(t, f.svc, f.clock, timers.Options{Interval: time.Millisecond, Logger: quietLogger()}, 3)
		if late.ExpiredDelays+late.ExpiredLocks+late.Cancelled != 0 || late.FailedPasses != 0 {
			t.Errorf("late loop stats = %+v, want no work and no failure", late)
		}
		if got := finishedCount(t, f.svc, f.locks[0]); got != 1 {
			t.Errorf("Finished events = %d, want 1", got)
		}
	})

	t.Run("AFailedPassIsLoggedAndTheLoopGoesOn", func(t *testing.T) {
		f := newFixture(t)
		f.addDelayed(t)
		f.clock.set(t0.Add(2 * time.Second))
		flaky := &flakyDB{DbConnection: f.svc}
		flaky.failures.Store(3)
		var logs lockedBuffer
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var st timers.Stats
		var err error
		done := make(chan struct{})
		go func() {
			defer close(done)
			st, err = timers.Run(ctx, flaky, f.clock, timers.Options{Interval: time.Millisecond,
				Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
		}()
		f.waitResolved(t)
		cancel()
		<-done
		if err != nil {
			t.Fatal(err)
		}
		if st.FailedPasses != 3 || st.ExpiredDelays != 1 {
			t.Errorf("stats = %+v, want 3 failed passes then the delay fired", st)
		}
		if got := logs.String(); !containsAll(got, `"msg":"timers pass failed"`, `injected failure`, `"phase":"sweep"`) {
			t.Errorf("log lacks the failed pass: %s", got)
		}
	})

	t.Run("StopsWhenTheBudgetIsSpent", func(t *testing.T) {
		f := newFixture(t)
		st, err := timers.Run(context.Background(), f.svc, f.clock, timers.Options{Interval: time.Millisecond,
			Budget: 20 * time.Millisecond, Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		if st.Passes < 1 || st.FailedPasses != 0 {
			t.Errorf("stats = %+v, want at least one clean pass", st)
		}
	})

	t.Run("RunsOnePassEvenWhenTheBudgetIsSpentAtOnce", func(t *testing.T) {
		f := newFixture(t)
		f.addDelayed(t)
		f.clock.set(t0.Add(2 * time.Second))
		st, err := timers.Run(context.Background(), f.svc, f.clock, timers.Options{Interval: time.Hour,
			Budget: time.Nanosecond, Logger: quietLogger()})
		if err != nil || st.Passes != 1 || st.ExpiredDelays != 1 {
			t.Errorf("Run = %+v, %v; want exactly one pass that fired the delay", st, err)
		}
	})

	t.Run("StopsWhenTheContextIsDone", func(t *testing.T) {
		f := newFixture(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		st, err := timers.Run(ctx, f.svc, f.clock, timers.Options{Logger: quietLogger()})
		if err != nil || st.Passes != 0 {
			t.Errorf("Run on a done ctx = %+v, %v; want no pass, nil", st, err)
		}
	})

	t.Run("RejectsInvalidOptions", func(t *testing.T) {
		f := newFixture(t)
		for _, o := range []timers.Options{{Interval: -1}, {Leeway: -1}, {Batch: -1}, {Budget: -1}} {
			if _, err := timers.Run(context.Background(), f.svc, f.clock, o); err == nil {
				t.Errorf("Run(%+v) = nil error, want one", o)
			}
		}
	})

	t.Run("LeewayHoldsBackADelayUntilItHasPassed", func(t *testing.T) {
		f := newFixture(t)
		f.addDelayed(t)
		f.clock.set(t0.Add(f.delayDur + 500*time.Millisecond)) // due, but not by the 1 s leeway
		opts := timers.Options{Interval: time.Millisecond, Leeway: time.Second, Logger: quietLogger()}
		if st := runPasses(t, f.svc, f.clock, opts, 3); st.ExpiredDelays != 0 || st.Passes != 4 {
			t.Fatalf("inside the leeway: %+v; want 3 passes and no delay fired", st)
		}
		f.clock.set(t0.Add(f.delayDur + time.Second))
		if st := runPasses(t, f.svc, f.clock, opts, 3); st.ExpiredDelays != 1 || st.FailedPasses != 0 {
			t.Fatalf("past the leeway: %+v; want the delay fired", st)
		}
	})
}

// runUntil runs one loop until wait returns, then stops it.
func runUntil(ctx context.Context, tb testing.TB, f *fixture, wait func()) (timers.Stats, error) {
	tb.Helper()
	ctx, cancel := context.WithCancel(ctx)
	var st timers.Stats
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		st, err = timers.Run(ctx, f.svc, f.clock, timers.Options{Interval: time.Millisecond, Logger: quietLogger()})
	}()
	wait()
	cancel()
	<-done
	return st, err
}

// runPasses runs one loop over db for exactly n complete passes: the
// (n+1)th pass's first store read cancels the loop.
func runPasses(tb testing.TB, db core.DbConnection, clock core.Clock, opts timers.Options, n int64) timers.Stats {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pc := &passCounter{DbConnection: db, left: n, cancel: cancel}
	st, err := timers.Run(ctx, pc, clock, opts)
	if err != nil {
		tb.Fatal(err)
	}
	return st
}

// passCounter cancels the loop at the start of pass left+1.
type passCounter struct {
	core.DbConnection
	left   int64
	cancel context.CancelFunc
}

func (p *passCounter) GetExpiredTimers(ctx context.Context, at core.Timestamp) ([]core.ExpiredTimer, error) {
	if p.left--; p.left < 0 {
		p.cancel()
		return nil, ctx.Err()
	}
	return p.DbConnection.GetExpiredTimers(ctx, at)
}

// flakyDB fails GetExpiredTimers while failures > 0.
type flakyDB struct {
	core.DbConnection
	failures atomic.Int64
}

func (d *flakyDB) GetExpiredTimers(ctx context.Context, at core.Timestamp) ([]core.ExpiredTimer, error) {
	if d.failures.Add(-1) >= 0 {
		return nil, errors.New("injected failure")
	}
	return d.DbConnection.GetExpiredTimers(ctx, at)
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// simAlarms are alarms on the test's clock: they fire when advance moves the
// clock to or past them, and report every alarm armed.
type simAlarms struct {
	clock   *fixedClock
	mu      sync.Mutex
	pending map[*simAlarm]struct{}
	armed   chan core.Timestamp
}

type simAlarm struct {
	at core.Timestamp
	ch chan struct{}
}

func newSimAlarms(clock *fixedClock) *simAlarms {
	return &simAlarms{clock: clock, pending: map[*simAlarm]struct{}{}, armed: make(chan core.Timestamp, 1024)}
}

func (a *simAlarms) At(t core.Timestamp) (<-chan struct{}, func()) {
	al := &simAlarm{at: t, ch: make(chan struct{}, 1)}
	a.mu.Lock()
	if t.After(a.clock.Now()) {
		a.pending[al] = struct{}{}
	} else {
		al.ch <- struct{}{}
	}
	a.mu.Unlock()
	a.armed <- t
	return al.ch, func() {
		a.mu.Lock()
		delete(a.pending, al)
		a.mu.Unlock()
	}
}

// advance sets the clock to to and fires the alarms due.
func (a *simAlarms) advance(to core.Timestamp) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.clock.set(to)
	for al := range a.pending {
		if !al.at.After(to) {
			al.ch <- struct{}{}
			delete(a.pending, al)
		}
	}
}

// waitArmed waits until the loop arms an alarm at exactly at.
func (a *simAlarms) waitArmed(tb testing.TB, at core.Timestamp) {
	tb.Helper()
	limit := time.NewTimer(waitLimit)
	defer limit.Stop()
	for {
		select {
		case got := <-a.armed:
			if got.Equal(at) {
				return
			}
		case <-limit.C:
			tb.Fatalf("the loop never armed an alarm at %s", at)
		}
	}
}

// TestWakesAtTheEarliestDeadline: with the store's TimerWatch, the loop
// sleeps until the earliest delay or lock expiry — including timers created
// while it sleeps — instead of the next safety sweep (simulated clock, no
// sleeps).
func TestWakesAtTheEarliestDeadline(t *testing.T) {
	f := newFixture(t)
	watch := f.svc.WatchTimers()
	defer watch.Close()
	alarms := newSimAlarms(f.clock)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var st timers.Stats
	done := make(chan struct{})
	go func() {
		defer close(done)
		st, _ = timers.Run(ctx, f.svc, f.clock, timers.Options{Interval: time.Second, Deadlines: watch, Alarms: alarms, Logger: quietLogger()})
	}()
	alarms.waitArmed(t, t0.Add(time.Second)) // nothing known: the safety sweep

	f.delayDur = 300 * time.Millisecond
	f.addDelayed(t) // written while the loop sleeps
	alarms.waitArmed(t, t0.Add(300*time.Millisecond))
	act := f.create(t, f.act, core.ComponentTypeActivity)
	f.lock(t, act, core.ComponentTypeActivity, t0.Add(500*time.Millisecond))

	alarms.advance(t0.Add(300 * time.Millisecond))
	wctx, wcancel := context.WithTimeout(context.Background(), waitLimit)
	defer wcancel()
	rs, err := f.svc.SubscribeToNextResponses(wctx, f.delays[0], 0)
	if err != nil || len(rs) != 1 || !rs[0].Event.CreatedAt.Equal(t0.Add(300*time.Millisecond)) {
		t.Fatalf("delay response = %+v, %v; want one fired at t0+300ms", rs, err)
	}
	alarms.waitArmed(t, t0.Add(500*time.Millisecond)) // next: the lock expiry
	alarms.advance(t0.Add(500 * time.Millisecond))
	rv, err := f.svc.WaitForFinishedResult(wctx, act)
	if err != nil || rv.Failure == nil || rv.Failure.Kind != core.FailureTimedOut {
		t.Fatalf("expired lock: %+v, %v; want timed out", rv, err)
	}
	alarms.waitArmed(t, t0.Add(1500*time.Millisecond)) // nothing left: the next safety sweep
	cancel()
	<-done
	if st.Passes != 3 || st.ExpiredDelays != 1 || st.ExpiredLocks != 1 {
		t.Fatalf("stats %+v; want exactly 3 passes (t0, +300ms, +500ms)", st)
	}
}
