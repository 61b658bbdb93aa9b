package timers_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/store/mem"
	"github.com/stela-dev/stela/timers"
)

// The loop runs retention passes beside the sweeps: a finished execution
// whose period has passed goes, one still within it stays.
func TestRunExpiresFinishedExecutions(t *testing.T) {
	f := newFixture(t)
	f.svc = store.New(mem.New(), store.Options{Clock: f.clock, Logger: quietLogger(), Retention: core.RetainFor(time.Hour)})
	old := f.create(t, f.act, core.ComponentTypeActivity)
	if _, err := f.svc.Append(context.Background(), old, 1, core.AppendRequest{CreatedAt: t0, Event: &core.Finished{Retval: core.RetOk(nil)}}); err != nil {
		t.Fatal(err)
	}
	f.clock.set(t0.Add(30 * time.Minute))
	recent := f.create(t, f.act, core.ComponentTypeActivity)
	if _, err := f.svc.Append(context.Background(), recent, 1, core.AppendRequest{CreatedAt: t0, Event: &core.Finished{Retval: core.RetOk(nil)}}); err != nil {
		t.Fatal(err)
	}
	f.clock.set(t0.Add(time.Hour + time.Minute))

	ctx, cancel := context.WithCancel(context.Background())
	r := &signallingRetainer{inner: f.svc, passes: make(chan store.RetentionResult, 1)}
	observed := &retentionRecorder{}
	done := make(chan timers.Stats)
	go func() {
		st, _ := timers.Run(ctx, f.svc, f.clock, timers.Options{Interval: time.Hour, Retention: r, Logger: quietLogger(),
			Observer: observed})
		done <- st
	}()
	select {
	case <-r.passes:
	case <-time.After(waitLimit):
		t.Fatal("no retention pass ran")
	}
	if _, err := f.svc.Get(context.Background(), old); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("the expired execution after a pass: %v, want NotFound", err)
	}
	cancel()
	st := <-done
	if _, err := f.svc.Get(context.Background(), recent); err != nil {
		t.Fatalf("the execution within its period: %v", err)
	}
	if st.ExpiredTrees != 1 || st.RetentionPasses != 1 || st.FailedRetentionPasses != 0 {
		t.Fatalf("stats %+v: want one tree expired, no failed retention pass", st)
	}
	// The observer (metrics) heard of the pass and what it expired.
	observed.mu.Lock()
	defer observed.mu.Unlock()
	if len(observed.passes) != 1 || observed.passes[0].Err != nil || observed.passes[0].Result.Expired != 1 {
		t.Fatalf("observed retention passes %+v, want one that expired one tree", observed.passes)
	}
}

// retentionRecorder is a timers.Observer that also records retention passes.
type retentionRecorder struct {
	mu     sync.Mutex
	passes []timers.RetentionPass
}

func (r *retentionRecorder) Pass(context.Context, timers.Pass) {}

func (r *retentionRecorder) RetentionPass(_ context.Context, p timers.RetentionPass) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.passes = append(r.passes, p)
}

// signallingRetainer reports each pass of the retainer it wraps.
type signallingRetainer struct {
	inner  timers.Retainer
	passes chan store.RetentionResult
}

func (r *signallingRetainer) ApplyRetention(ctx context.Context, now core.Timestamp) (store.RetentionResult, error) {
	res, err := r.inner.ApplyRetention(ctx, now)
	if err == nil {
		select {
		case r.passes <- res:
		default:
		}
	}
	return res, err
}
