package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/obs/tracemeta"
)

// Messages of the checked upgrade (Obelisk's texts, docs/spec webapi §4.19).
const (
	msgNewComponentNotFound = "new component not found"
	msgReplayFailed         = "Replay failed: "
)

// lateCheckGrace is how long past a locked check's lease the route still
// waits for its result once its own wait ended.
const lateCheckGrace = time.Second

// upgradeChecked is PUT …/upgrade without skip_determinism_check. The
// server runs no user code, so it records the request as an execution of
// the built-in core.UpgradeCheckFFQN created for component digest new:
// only a worker of that digest locks it, replays id's history against its
// code and moves id from old to new only when it replays cleanly (the
// store's expected-old-digest guard), and finishes the check with a
// core.UpgradeCheckResult. The route waits up to Options.UpgradeCheckWait
// for it. When no worker took it by then, the check is cancelled (a
// cancelling execution is never locked, so it never runs late) and the
// answer is 404 "new component not found"; a check a worker already
// locked is waited for until its lease ends. Every answer is re-checked
// against id's digest, so a move made by a worker whose result was lost
// still answers 200.
func (s *server) upgradeChecked(c *call, id core.ExecutionId, old, new core.ComponentDigest) error {
	ctx := c.ctx()
	st, err := s.db.GetPendingState(ctx, id)
	if err != nil {
		return err
	}
	if st.ComponentDigest != old {
		return core.ErrNotFound // as upgrade_execution_component's guard (404 "not found")
	}
	if st.PendingState.Finished != nil {
		return core.ErrAlreadyFinished
	}
	check, err := s.newExecutionID()
	if err != nil {
		return err
	}
	params, err := core.UpgradeCheckParams{ExecutionID: id, Old: old}.Params()
	if err != nil {
		return err
	}
	now := s.now()
	req := core.CreateRequest{CreatedAt: now, ExecutionID: check, FFQN: core.UpgradeCheckFunction(), Params: params,
		ScheduledAt: now, Metadata: tracemeta.ForRequest(ctx, c.r),
		ComponentID: core.ComponentId{ComponentType: core.ComponentTypeActivity, Name: core.UpgradeCheckComponentName, ComponentDigest: new}}
	if _, err := s.db.Create(ctx, req); err != nil {
		return err
	}
	c.w.Header().Set("Stela-Upgrade-Check", check.String())
	rv, done, err := s.waitCheck(ctx, check)
	if err != nil {
		return err
	}
	if !done {
		return s.checkNotTaken(c, id, new)
	}
	res, perr := core.ParseUpgradeCheckResult(rv)
	switch {
	case perr != nil:
		return s.checkNotTaken(c, id, new)
	case res.Outcome == core.UpgradeMoved:
		return c.ok(http.StatusOK, "upgraded")
	case res.Outcome == core.UpgradeDiverged:
		return httpErr(http.StatusUnprocessableEntity, msgReplayFailed+res.Reason)
	case res.Outcome == core.UpgradeStale:
		return &apiError{status: http.StatusNotFound, msg: "not found", err: fmt.Errorf("%w: %s", core.ErrNotFound, res.Reason)}
	case res.Outcome == core.UpgradeFinishedAlready:
		return core.ErrAlreadyFinished
	}
	return httpErr(http.StatusNotFound, msgNewComponentNotFound+": "+res.Reason)
}

// waitCheck waits for the check's result up to the upgrade wait; when it
// did not finish by then, it cancels it and, if a worker holds it, waits
// until its lease ends. done is false when no result came.
func (s *server) waitCheck(ctx context.Context, check core.ExecutionId) (core.ReturnValue, bool, error) {
	wait := func(d time.Duration) (core.ReturnValue, bool, error) {
		wctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		rv, err := s.db.WaitForFinishedResult(wctx, check)
		switch {
		case err == nil:
			return rv, true, nil
		case ctx.Err() == nil && (errors.Is(err, core.ErrTimeout) || errors.Is(err, context.DeadlineExceeded)):
			return rv, false, nil
		}
		return rv, false, err
	}
	rv, done, err := wait(s.upgradeWait)
	if done || err != nil && ctx.Err() == nil {
		return rv, done, err
	}
	// Give up: the check must never run after this answer. It runs on
	// even if the client went away, so the cancel does too.
	bg := context.WithoutCancel(ctx)
	if _, err := core.CancelExecution(bg, s.db, check, s.now()); err != nil {
		return rv, false, err
	}
	st, err := s.db.GetPendingState(bg, check)
	if err != nil {
		return rv, false, err
	}
	if l := st.PendingState.Locked; l != nil && ctx.Err() == nil {
		// A worker took it before the cancel: its result is coming.
		return wait(min(l.LockExpiresAt.Sub(s.now().Time), MaxFollowWait) + lateCheckGrace)
	}
	if st.PendingState.Finished != nil && ctx.Err() == nil {
		return wait(lateCheckGrace)
	}
	return rv, false, nil
}

// checkNotTaken answers a check that gave no result: 200 if id is of
// digest new after all (moved by a worker whose result was lost), else
// 404 "new component not found".
func (s *server) checkNotTaken(c *call, id core.ExecutionId, new core.ComponentDigest) error {
	if st, err := s.db.GetPendingState(c.ctx(), id); err == nil && st.ComponentDigest == new {
		return c.ok(http.StatusOK, "upgraded")
	}
	return httpErr(http.StatusNotFound, fmt.Sprintf("%s: no worker of component digest %s took the replay check within %s",
		msgNewComponentNotFound, new, s.upgradeWait))
}
