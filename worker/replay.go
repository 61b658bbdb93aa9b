package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/stela-dev/stela/core"
)

// replayCheck marks a run as a replay check: it writes nothing.
type replayCheck struct{}

// replayEndSig ends a replay check: at the program's first event beyond
// the history (next), at a divergence, or at a JoinNext whose response
// the history lacks.
type replayEndSig struct {
	next            core.HistoryEvent
	divergence      *NondeterminismError
	missingResponse bool
}

// ReplayResult is the outcome of replaying an execution's history against
// the registered code (Replay).
type ReplayResult struct {
	// Divergence is the first event where the code does not do what the
	// history recorded: its version and the expected (stored) against the
	// actual (asked for) event in Detail. Nil when the history replays
	// cleanly.
	Divergence *NondeterminismError
	// Replayed is the number of history events the code went through.
	Replayed int
	// Finished is set when the code returned within the history; Result is
	// then what it returned.
	Finished bool
	Result   core.ReturnValue
	// Next describes the first event the code asks for beyond the history
	// (empty when it finished or waits for a response the history lacks).
	Next string
}

// OK reports whether the history replayed without divergence.
func (r ReplayResult) OK() bool { return r.Divergence == nil }

// Replay runs the registered workflow of h against h's recorded events and
// responses, as a worker resuming the execution would, but writes nothing
// and stops at the first event beyond the history: the check a test runs
// in CI against exported histories (workertest.Replay) before deploying a
// code change, and the one an upgrade makes before moving an execution to
// new code. A history that finished is also checked against the result
// the code returns (the kind, and the value of an Ok or Err result) and
// against code that carries on beyond it. The worker need not run; it
// reads nothing from its Conn except the component of a function it
// neither serves nor declared.
func (w *Worker) Replay(ctx context.Context, h core.ExecutionHistory) (ReplayResult, error) {
	created, ok := h.Created()
	if !ok {
		return ReplayResult{}, fmt.Errorf("worker: replay %s: no Created event", h.ExecutionID)
	}
	w.mu.Lock()
	f := w.funcs[h.FFQN]
	w.mu.Unlock()
	if f == nil || f.kind != core.ComponentTypeWorkflow {
		return ReplayResult{}, fmt.Errorf("worker: replay %s: %s is not a workflow registered on this worker", h.ExecutionID, h.FFQN)
	}
	far := core.TS(time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC))
	le := core.LockedExecution{ExecutionID: h.ExecutionID, FFQN: h.FFQN, Params: created.Params, Parent: created.Parent,
		Metadata: created.Metadata, NextVersion: core.Version(len(h.Events)), LockedEvent: core.Locked{LockExpiresAt: far}}
	hist := core.EventHistoryOf(h.Events)
	wf := newContext(w, f, le, hist, h.Responses)
	wf.replay = &replayCheck{}
	out := wf.runUser()
	if out.replayEnd == nil && out.abort == nil && out.fail == nil {
		out = wf.finishOutcome(out)
	}
	res := ReplayResult{Replayed: wf.cur}
	var stored *core.ReturnValue
	var finishedAt core.Version
	if n := len(h.Events); n > 0 {
		if fin, ok := h.Events[n-1].Event.(*core.Finished); ok {
			stored, finishedAt = &fin.Retval, h.Events[n-1].Version
		}
	}
	switch {
	case out.replayEnd != nil && out.replayEnd.divergence != nil:
		res.Divergence = out.replayEnd.divergence
	case out.replayEnd != nil && out.replayEnd.next != nil:
		res.Next = describe(out.replayEnd.next)
		if stored != nil {
			res.Divergence = &NondeterminismError{Version: finishedAt,
				Detail: fmt.Sprintf("the history finished at version %d but the workflow goes on with %s", finishedAt, res.Next)}
		}
	case out.replayEnd != nil: // waits for a response the history lacks
	case out.abort != nil:
		return res, fmt.Errorf("worker: replay %s: the run was aborted", h.ExecutionID)
	default:
		rv := out.rv
		if out.fail != nil {
			rv = *out.fail
		} else if out.err != nil {
			rv = core.RetErr(errorValue(out.err))
		}
		if rv.Failure != nil && rv.Failure.Kind == core.FailureNondeterminismDetected {
			detail := ""
			if rv.Failure.Detail != nil {
				detail = *rv.Failure.Detail
			}
			res.Divergence = &NondeterminismError{Detail: detail}
			break
		}
		res.Finished, res.Result = true, rv
		if stored != nil && !sameResult(*stored, rv) {
			res.Divergence = &NondeterminismError{Version: finishedAt,
				Detail: fmt.Sprintf("the history finished at version %d with %s but the workflow returns %s", finishedAt, resultText(*stored), resultText(rv))}
		}
	}
	return res, nil
}

// sameResult compares two return values by kind, and by value for Ok and Err.
func sameResult(a, b core.ReturnValue) bool {
	if a.Kind != b.Kind {
		return false
	}
	if a.Failure != nil {
		return a.Failure.Kind == b.Failure.Kind
	}
	return resultText(a) == resultText(b)
}

func resultText(rv core.ReturnValue) string {
	b, err := json.Marshal(rv)
	if err != nil {
		return fmt.Sprintf("%+v", rv)
	}
	return string(b)
}
