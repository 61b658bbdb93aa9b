package worker

import (
	"context"
	"errors"
	"fmt"

	"github.com/stela-dev/stela/core"
)

// UpgradeStore is what Worker.Upgrade needs besides the worker's Conn:
// listing executions by component digest and moving one to another digest
// under the expected-old-digest guard (docs/spec/semantics.md §6.4).
// *store.Service and *client.Client implement it.
type UpgradeStore interface {
	ListExecutions(ctx context.Context, filter core.ListExecutionsFilter, p core.ExecutionListPagination) ([]core.ExecutionWithState, error)
	UpgradeExecutionComponent(ctx context.Context, id core.ExecutionId, old, new core.ComponentDigest, reason core.ComponentUpgradeReason) error
}

// UpgradeReport is the outcome of Worker.Upgrade.
type UpgradeReport struct {
	// Upgraded are the executions moved to this worker's digests.
	Upgraded []core.ExecutionId
	// Diverged are the executions whose history this worker's code does
	// not replay, left on their digest, with their first divergence.
	Diverged []UpgradeRefusal
	// Skipped are the executions left alone for another reason: finished,
	// of a function this worker does not serve, already of its digest, or
	// moved by someone else meanwhile.
	Skipped []UpgradeRefusal
}

// UpgradeRefusal is an execution an upgrade did not move, and why.
type UpgradeRefusal struct {
	ID core.ExecutionId
	// Divergence is set for a diverged execution.
	Divergence *NondeterminismError
	Reason     string
}

// Upgrade moves executions to this worker's code after checking that it
// replays their history: the unfinished top-level executions of component
// digest from (when not nil; a deployment-wide upgrade from an old build)
// and the executions ids. For each, the worker reads its history
// (Conn.Get), replays a workflow's with Replay (an activity has no
// history to replay), and only when it replays cleanly moves it with
// db.UpgradeExecutionComponent from the digest it read to the digest of
// this worker's lock group for its function; the guard refuses the move
// when the execution changed digest meanwhile. A history that grew
// between the check and the move is checked again; if it no longer
// replays, the execution is moved back. Executions are only moved
// forward by a worker that runs the new code: the store runs no user code
// (docs/worker.md "Deployments and upgrades").
func (w *Worker) Upgrade(ctx context.Context, db UpgradeStore, from *core.ComponentDigest, ids ...core.ExecutionId) (UpgradeReport, error) {
	var rep UpgradeReport
	todo := append([]core.ExecutionId(nil), ids...)
	if from != nil {
		found, err := listByDigest(ctx, db, *from)
		if err != nil {
			return rep, err
		}
		todo = append(todo, found...)
	}
	digests := w.ComponentDigests()
	for _, id := range todo {
		if err := w.upgradeOne(ctx, db, id, digests, &rep); err != nil {
			return rep, fmt.Errorf("worker: upgrade %s: %w", id, err)
		}
	}
	return rep, nil
}

func listByDigest(ctx context.Context, db UpgradeStore, d core.ComponentDigest) ([]core.ExecutionId, error) {
	var out []core.ExecutionId
	p := core.ExecutionListPagination{ExecutionID: &core.Pagination[*core.ExecutionId]{Direction: core.OlderThan, Length: 100}}
	for {
		page, err := db.ListExecutions(ctx, core.ListExecutionsFilter{ComponentDigest: &d, HideFinished: true}, p)
		if err != nil {
			return nil, err
		}
		for _, e := range page {
			out = append(out, e.ExecutionID)
		}
		if len(page) < 100 {
			return out, nil
		}
		last := page[len(page)-1].ExecutionID
		p.ExecutionID.Cursor = &last
	}
}

func (w *Worker) upgradeOne(ctx context.Context, db UpgradeStore, id core.ExecutionId, digests map[string]core.ComponentDigest, rep *UpgradeReport) error {
	to := func(f core.FunctionFqn) (core.ComponentDigest, bool) { d, ok := digests[f.String()]; return d, ok }
	res, div, err := w.checkAndMove(ctx, db, id, nil, to)
	if err != nil {
		return err
	}
	switch res.Outcome {
	case core.UpgradeMoved:
		rep.Upgraded = append(rep.Upgraded, id)
	case core.UpgradeDiverged:
		rep.Diverged = append(rep.Diverged, UpgradeRefusal{ID: id, Divergence: div, Reason: res.Reason})
	default:
		rep.Skipped = append(rep.Skipped, UpgradeRefusal{ID: id, Reason: res.Reason})
	}
	return nil
}

// componentMover is the move of an upgrade: upgrade_execution_component
// under the expected-old-digest guard. *store.Service and *client.Client
// implement it.
type componentMover interface {
	UpgradeExecutionComponent(ctx context.Context, id core.ExecutionId, old, new core.ComponentDigest, reason core.ComponentUpgradeReason) error
}

// checkAndMove is one checked upgrade, shared by Worker.Upgrade and the
// built-in replay check: it reads id's state, refuses when its digest is
// not *expect (when set), when it finished, or when to has no digest for
// its function; replays a workflow's history and, only when it replays
// cleanly, moves it from the digest it read to to's with
// db.UpgradeExecutionComponent (the guard refuses the move when the digest
// changed meanwhile). Events appended between the check and the move are
// checked again; if they no longer replay, the execution is moved back.
// The divergence is returned with an UpgradeDiverged result.
func (w *Worker) checkAndMove(ctx context.Context, db componentMover, id core.ExecutionId, expect *core.ComponentDigest,
	to func(core.FunctionFqn) (core.ComponentDigest, bool)) (core.UpgradeCheckResult, *NondeterminismError, error) {
	skip := func(o core.UpgradeCheckOutcome, reason string) (core.UpgradeCheckResult, *NondeterminismError, error) {
		return core.UpgradeCheckResult{Outcome: o, Reason: reason}, nil, nil
	}
	diverged := func(d *NondeterminismError, reason string) (core.UpgradeCheckResult, *NondeterminismError, error) {
		return core.UpgradeCheckResult{Outcome: core.UpgradeDiverged, Reason: reason, Version: d.Version}, d, nil
	}
	st, err := w.conn.GetPendingState(ctx, id)
	if err != nil {
		return core.UpgradeCheckResult{}, nil, err
	}
	old := st.ComponentDigest
	if expect != nil && old != *expect {
		return skip(core.UpgradeStale, fmt.Sprintf("its digest is %s, not %s", old, *expect))
	}
	if st.PendingState.Finished != nil {
		return skip(core.UpgradeFinishedAlready, "finished")
	}
	target, ok := to(st.FFQN)
	switch {
	case !ok:
		return skip(core.UpgradeNotServed, "this worker does not serve "+st.FFQN.String())
	case old == target:
		return skip(core.UpgradeStale, "already of this worker's digest")
	}
	w.mu.Lock()
	replay := w.replayCheck
	w.mu.Unlock()
	workflow := st.ComponentType == core.ComponentTypeWorkflow
	var events int
	if workflow {
		if replay == nil {
			return skip(core.UpgradeNotServed, "this worker serves no workflow")
		}
		var d *NondeterminismError
		if events, d, err = replay(w, ctx, id); err != nil {
			return core.UpgradeCheckResult{}, nil, err
		} else if d != nil {
			return diverged(d, divergenceText(d))
		}
	}
	err = db.UpgradeExecutionComponent(ctx, id, old, target, core.ComponentUpgradeReason{Manual: true})
	switch {
	case errors.Is(err, core.ErrNotFound):
		return skip(core.UpgradeStale, "its digest changed meanwhile")
	case errors.Is(err, core.ErrAlreadyFinished):
		return skip(core.UpgradeFinishedAlready, "finished")
	case err != nil:
		return core.UpgradeCheckResult{}, nil, err
	}
	if workflow {
		// Events appended between the check and the move were not checked.
		after, d, err := replay(w, ctx, id)
		if err != nil {
			return core.UpgradeCheckResult{}, nil, err
		}
		if after > events+1 && d != nil {
			if err := db.UpgradeExecutionComponent(ctx, id, target, old, core.ComponentUpgradeReason{Manual: true}); err != nil && !errors.Is(err, core.ErrNotFound) && !errors.Is(err, core.ErrAlreadyFinished) {
				return core.UpgradeCheckResult{}, nil, err
			}
			return diverged(d, divergenceText(d)+" (moved back)")
		}
	}
	return core.UpgradeCheckResult{Outcome: core.UpgradeMoved, Reason: fmt.Sprintf("%s -> %s", old, target)}, nil, nil
}

// replayStored reads id's log and replays its history with this worker's
// code: the number of events read and the first divergence (nil: clean).
// Workflow sets it as Worker.replayCheck, so that a worker of activities
// only links no replay.
func replayStored(w *Worker, ctx context.Context, id core.ExecutionId) (int, *NondeterminismError, error) {
	log, err := w.conn.Get(ctx, id)
	if err != nil {
		return 0, nil, err
	}
	h, err := core.HistoryOf(log)
	if err != nil {
		return 0, nil, err
	}
	res, err := w.Replay(ctx, h)
	if err != nil {
		return 0, nil, err
	}
	return len(log.Events), res.Divergence, nil
}

// divergenceText is a divergence as a check result's reason.
func divergenceText(d *NondeterminismError) string {
	return fmt.Sprintf("version %d: %s", d.Version, d.Detail)
}

// divergedSig is raised by a pinned worker's replay that diverged.
type divergedSig struct{ err *NondeterminismError }

// reasonDiverged starts the Unlocked reason of an execution a pinned
// worker paused because its history diverged.
const reasonDiverged = "nondeterminism detected, execution paused: "

// pauseDiverged leaves an execution whose history this pinned worker's
// code does not replay recoverable instead of finishing it: Unlocked
// (reason: the divergence) and Paused in one write, nothing else. Rolling
// back (a worker of code that replays it) or Worker.Upgrade to such code,
// then `stela execution unpause`, resumes it.
func (wf *Context) pauseDiverged(d *NondeterminismError) {
	wf.l.mu.Lock()
	defer wf.l.mu.Unlock()
	now := wf.w.clock.Now()
	batch := []core.AppendRequest{
		{CreatedAt: now, Event: &core.Unlocked{UnlockedAt: now, Reason: fmt.Sprintf("%sversion %d: %s", reasonDiverged, d.Version, d.Detail)}},
		{CreatedAt: now, Event: &core.Paused{}},
	}
	if err := wf.writeBatch(batch, nil); err != nil {
		wf.w.log.Error("cannot pause the diverged execution", "execution_id", wf.id.String(), "err", err)
	}
}
