package worker

import (
	"context"
	"time"

	"github.com/stela-dev/stela/core"
)

// The built-in replay check (core.UpgradeCheckFFQN). PUT
// /v1/executions/{id}/upgrade records a check execution created for the
// new component digest; only a worker of that digest locks it (by digest:
// a pinned worker's normal lock; an unpinned worker's extra lock by digest
// every Options.UpgradeCheckPoll), runs checkAndMove for the execution it
// names, and finishes it with a core.UpgradeCheckResult. The server waits
// for that result and answers the upgrade request with it. The built-in is
// no registered function: it is in no deployment, never in a lock by ffqn,
// and its result goes to no OnFinished.

// DefaultUpgradeCheckPoll is how often an unpinned worker looks for replay
// checks of its digests (Options.UpgradeCheckPoll).
const DefaultUpgradeCheckPoll = 10 * time.Second

// runUpgradeCheck runs a locked check execution: the digest it moves to
// is the digest it was locked by (its own, the worker's lock group's). An
// error reading or writing the store releases it (retried at the next
// lock, until the server gives up and cancels it); every outcome,
// refusals included, finishes it with its result.
func (w *Worker) runUpgradeCheck(le core.LockedExecution) {
	ctx, cancel := w.ioContext()
	defer cancel()
	to := le.LockedEvent.ComponentID.ComponentDigest
	res, err := w.upgradeCheck(ctx, le, to)
	if err != nil {
		w.log.Warn("upgrade check failed; releasing it", "execution_id", le.ExecutionID.String(), "err", err)
		w.release(le.ExecutionID, le.NextVersion, "upgrade check failed: "+err.Error())
		return
	}
	w.log.Debug("upgrade check", "check_id", le.ExecutionID.String(), "outcome", string(res.Outcome), "reason", res.Reason)
	rv, err := res.ReturnValue()
	if err != nil {
		w.release(le.ExecutionID, le.NextVersion, "upgrade check failed: "+err.Error())
		return
	}
	now := w.clock.Now()
	if _, err := w.conn.Append(ctx, le.ExecutionID, le.NextVersion, core.AppendRequest{CreatedAt: now,
		Event: &core.Finished{Retval: rv}}); err != nil {
		w.log.Warn("cannot record the upgrade check's result", "execution_id", le.ExecutionID.String(), "err", err)
	}
}

func (w *Worker) upgradeCheck(ctx context.Context, le core.LockedExecution, to core.ComponentDigest) (core.UpgradeCheckResult, error) {
	p, err := core.ParseUpgradeCheckParams(le.Params)
	if err != nil {
		return core.UpgradeCheckResult{Outcome: core.UpgradeNotServed, Reason: err.Error()}, nil
	}
	mover, ok := w.conn.(componentMover)
	if !ok {
		return core.UpgradeCheckResult{Outcome: core.UpgradeNotServed, Reason: "this worker's connection cannot move executions"}, nil
	}
	digests := w.ComponentDigests()
	target := func(f core.FunctionFqn) (core.ComponentDigest, bool) {
		d, ok := digests[f.String()]
		return to, ok && d == to
	}
	res, _, err := w.checkAndMove(ctx, mover, p.ExecutionID, &p.Old, target)
	if err == nil && res.Outcome == core.UpgradeNotServed {
		res.Reason = "component " + to.String() + " does not export the execution's function"
	}
	return res, err
}

// lockUpgradeChecks is an unpinned worker's lock by g's digest, made at
// most every Options.UpgradeCheckPoll (a pinned worker's every lock is by
// digest already): it finds the replay checks created for the digest (and
// any execution of it, which the worker runs as usual). It takes up to n
// slots' worth and returns what it locked; the caller runs it.
func (w *Worker) lockUpgradeChecks(ctx context.Context, g *lockGroup, n int, last *time.Time) []core.LockedExecution {
	if w.opts.Pinned || w.opts.UpgradeCheckPoll < 0 {
		return nil
	}
	now := time.Now()
	if !last.IsZero() && now.Sub(*last) < w.opts.UpgradeCheckPoll {
		return nil
	}
	*last = now
	req := w.request(g, n)
	req.ByComponentDigest = true
	locked, err := w.conn.LockPending(ctx, req, nil, 0)
	if err != nil {
		w.log.Debug("upgrade check poll failed", "err", err)
	}
	return locked
}
