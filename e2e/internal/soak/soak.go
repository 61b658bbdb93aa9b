// Package soak holds the functions of the e2e soak test (e2e/soak_test.go),
// which its worker processes (e2e/soakworker) serve.
package soak

import (
	"context"
	"fmt"
	"time"

	"github.com/stela-dev/stela/worker"
)

// The soak's functions.
const (
	WorkFFQN  = "soak:act/work.run"  // a short activity: 10–60 ms
	SlowFFQN  = "soak:act/work.slow" // outlives the await window
	FlowFFQN  = "soak:wf/flow.run"   // the workflow the test submits
	ChildFFQN = "soak:wf/flow.child" // its child workflow
)

// ActivitiesPerFlow is how many activities one FlowFFQN execution runs
// (itself and its child).
const ActivitiesPerFlow = 7

// Register registers the soak's functions on w; record is called with an
// activity's token at the start of every run of its body.
func Register(w *worker.Worker, record func(token string) error, slow time.Duration) {
	worker.Activity(w, WorkFFQN, func(ctx context.Context, token string) (string, error) {
		if err := record(token); err != nil {
			return "", err
		}
		d := 10*time.Millisecond + time.Duration(len(token)%6)*10*time.Millisecond
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return "", context.Cause(ctx)
		}
		return "done " + token, nil
	})
	worker.Activity(w, SlowFFQN, func(ctx context.Context, token string) (string, error) {
		if err := record(token); err != nil {
			return "", err
		}
		select {
		case <-time.After(slow):
		case <-ctx.Done():
			return "", context.Cause(ctx)
		}
		return "slow " + token, nil
	})
	worker.Workflow(w, ChildFFQN, func(wf *worker.Context, _ worker.Unit) (int, error) {
		id := wf.ExecutionID().String()
		for i := range 2 {
			if _, err := worker.Call[string](wf, WorkFFQN, fmt.Sprintf("%s/%d", id, i)); err != nil {
				return 0, err
			}
		}
		return 2, nil
	})
	worker.Workflow(w, FlowFFQN, func(wf *worker.Context, n int) (int, error) {
		id := wf.ExecutionID().String()
		done := 0
		if _, err := worker.Call[string](wf, WorkFFQN, id+"/first"); err != nil {
			return done, err
		}
		done++
		if err := wf.Sleep(time.Duration(wf.Random(50, 300)) * time.Millisecond); err != nil {
			return done, err
		}
		k, err := worker.Call[int](wf, ChildFFQN, nil)
		if err != nil {
			return done, err
		}
		done += k
		js := wf.NewJoinSet()
		for i := range 3 {
			if _, err := js.Submit(WorkFFQN, fmt.Sprintf("%s/fan%d", id, i)); err != nil {
				return done, err
			}
		}
		for range 3 {
			r, err := js.Next()
			if err != nil {
				return done, err
			}
			if _, err := worker.Result[string](r); err != nil {
				return done, err
			}
			done++
		}
		// A response that arrives after the await window: the workflow
		// gives its execution back and any worker resumes it.
		if _, err := worker.Call[string](wf, SlowFFQN, id+"/slow"); err != nil {
			return done, err
		}
		return done + 1, nil
	})
}
