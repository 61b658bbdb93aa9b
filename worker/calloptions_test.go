package worker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/worker"
	"github.com/stela-dev/stela/worker/workertest"
)

const (
	elsewhereFFQN = "demo:deadline/activity.elsewhere"
	deadlineFFQN  = "demo:deadline/workflow.call"
)

// deadlineCall calls ffqn with a schedule-to-close timeout of d and tells
// how it went: the result, or "timeout of <child>" for a *TimeoutError.
func deadlineCall(ffqn string, d time.Duration) func(wf *worker.Context, _ worker.Unit) (string, error) {
	return func(wf *worker.Context, _ worker.Unit) (string, error) {
		got, err := worker.Call[string](wf, ffqn, nil, worker.ScheduleToClose(d))
		var te *worker.TimeoutError
		if errors.As(err, &te) && errors.Is(err, worker.ErrScheduleToCloseTimeout) {
			return "timeout of " + te.ID.String(), nil
		}
		return got, err
	}
}

// TestScheduleToCloseTimesOut: a call whose child does not answer within
// its schedule-to-close timeout (nobody serves it) returns a *TimeoutError
// as soon as the delay fires; the workflow goes on and finishes, its join
// set's close cancelling the child.
func TestScheduleToCloseTimesOut(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	env.Worker.Declare(elsewhereFFQN, core.ComponentTypeActivity)
	worker.Workflow(env.Worker, deadlineFFQN, deadlineCall(elsewhereFFQN, time.Minute))
	id := env.Submit(deadlineFFQN, nil)
	env.Run()
	env.Advance(59 * time.Second)
	if st := env.Status(id); st.State == core.StateFinished {
		t.Fatalf("finished before the deadline: %s", st)
	}
	env.Advance(time.Second)
	env.Advance(0) // the close's cancellation answered
	got, err := workertest.Result[string](env, id)
	child := id.NextLevel(core.JoinSetId{Kind: core.JoinSetKindGenerated, Name: "1"})
	if err != nil || got != "timeout of "+child.String() {
		t.Fatalf("got %q, %v; want the timeout of %s", got, err, child)
	}
	if rv := env.ReturnValue(child); rv.Kind != core.ReturnExecutionFailure || rv.Failure.Kind != core.FailureCancelled {
		t.Fatalf("the child: %+v, want cancelled", rv)
	}
}

// TestScheduleToCloseInTime: a child answering before the deadline gives
// its result, and the deadline's delay is cancelled.
func TestScheduleToCloseInTime(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	worker.Activity(env.Worker, elsewhereFFQN, func(context.Context, worker.Unit) (string, error) { return "fast", nil })
	worker.Workflow(env.Worker, deadlineFFQN, deadlineCall(elsewhereFFQN, time.Hour))
	id := env.Submit(deadlineFFQN, nil)
	env.Run()
	env.Advance(0)
	if got, err := workertest.Result[string](env, id); err != nil || got != "fast" {
		t.Fatalf("got %q, %v", got, err)
	}
	var delayCancelled bool
	for _, r := range env.Log(id).Responses {
		if d, ok := r.Event.Event.Event.(*core.DelayFinished); ok && !bool(d.Result) {
			delayCancelled = true
		}
	}
	if !delayCancelled {
		t.Fatal("the deadline's delay was not cancelled")
	}
}

// TestScheduleToCloseOverHTTP: over HTTP with a running activity that
// hangs until cancelled, the call returns its timeout and the workflow
// finishes within a couple of seconds of the deadline (the close cancels
// the activity, which notices within Options.CancelCheck), not after the
// next lease extension.
func TestScheduleToCloseOverHTTP(t *testing.T) {
	w := worker.New(httpConn(t), worker.Options{Name: "deadline-http", PollWait: 200 * time.Millisecond})
	worker.Activity(w, elsewhereFFQN, func(ctx context.Context, _ worker.Unit) (string, error) {
		<-ctx.Done()
		return "", context.Cause(ctx)
	})
	worker.Workflow(w, deadlineFFQN, deadlineCall(elsewhereFFQN, 500*time.Millisecond))
	runFor(t, w)
	ctx := testCtx(t)
	start := time.Now()
	id, err := w.Submit(ctx, deadlineFFQN, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := worker.Await[string](ctx, w, id)
	if err != nil || len(got) < len("timeout of ") || got[:len("timeout of ")] != "timeout of " {
		t.Fatalf("got %q, %v", got, err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("the workflow finished %v after it started (deadline 500 ms)", took)
	}
}

// TestCallRetryPolicy: a call's retry policy overrides the activity's
// registration for that child only: recorded in its metadata, its lock
// extended with it, its failures retried by it (here: 2 retries instead of
// the registration's none), while a call without it keeps the registration's.
func TestCallRetryPolicy(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	runs := map[string]int{}
	worker.Activity(env.Worker, elsewhereFFQN, func(ctx context.Context, key string) (string, error) {
		runs[key]++
		if info, _ := worker.ActivityInfoFrom(ctx); info.Attempt < 3 {
			return "", errors.New("flaky")
		}
		return "ok", nil
	}, worker.RetryPolicy(0, time.Second))
	worker.Workflow(env.Worker, deadlineFFQN, func(wf *worker.Context, _ worker.Unit) (string, error) {
		got, err := worker.Call[string](wf, elsewhereFFQN, "override", worker.CallRetryPolicy(2, time.Second))
		if err != nil {
			return "", err
		}
		_, err = worker.Call[string](wf, elsewhereFFQN, "default")
		var re *worker.ResultError
		if !errors.As(err, &re) || re.Message != "flaky" {
			return "", worker.Permanent(errors.New("the second call must fail at once"))
		}
		return got, nil
	})
	id := env.Submit(deadlineFFQN, nil)
	env.Run()
	env.Advance(time.Second)
	env.Advance(2 * time.Second)
	env.Advance(0)
	if got, err := workertest.Result[string](env, id); err != nil || got != "ok" {
		t.Fatalf("got %q, %v", got, err)
	}
	if runs["override"] != 3 || runs["default"] != 1 {
		t.Fatalf("runs %v, want 3 with the call's policy and 1 with the registration's", runs)
	}
	child := id.NextLevel(core.JoinSetId{Kind: core.JoinSetKindOneOff, Name: "1-elsewhere"})
	var policies []string
	for _, e := range env.Log(child).Events {
		if l, ok := e.Event.(*core.Locked); ok && l.RetryConfig.MaxRetries != nil {
			policies = append(policies, fmt.Sprintf("%dms/%d", l.RetryConfig.RetryExpBackoff.Millis(), *l.RetryConfig.MaxRetries))
		}
	}
	if len(policies) != 6 || policies[1] != "1000ms/2" {
		t.Fatalf("locks of the child: %v, want each lock followed by an extension with the call's policy", policies)
	}
}
