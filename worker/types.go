package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/stela-dev/stela/core"
)

// ErrUnknownFunction is wrapped by the error of a call that would create an
// execution of a function whose component type (activity or workflow) the
// worker cannot tell: it does not serve it, it was not declared (Declare),
// and the store's current deployment does not export it. The type is never
// guessed: a workflow created as an activity is cancelled when its join set
// closes, listed and cancelled as an activity.
var ErrUnknownFunction = errors.New("worker: unknown component type")

// typeCacheTTL is how long a worker trusts what the store said about a
// function's component (a deployment switch may change it).
const typeCacheTTL = time.Minute

// callee is what a worker records in the Created event of an execution it
// creates for a function: its component and deployment.
type callee struct {
	component  core.ComponentId
	deployment core.DeploymentId
}

// storeTypes caches the store's answers about functions' components.
type storeTypes struct {
	mu sync.Mutex
	m  map[core.FunctionFqn]storeType
}

type storeType struct {
	c  callee
	at time.Time
}

// knownCallee returns the component of f when the worker knows it without
// asking the store: registered here, declared, or a recent store answer.
func (w *Worker) knownCallee(f core.FunctionFqn) (callee, bool) {
	w.mu.Lock()
	fn, registered := w.funcs[f]
	declared, isDeclared := w.declared[f]
	w.mu.Unlock()
	local := func(t core.ComponentType) callee {
		return callee{component: core.ComponentId{ComponentType: t, Name: w.opts.Name}, deployment: w.deploymentID()}
	}
	switch {
	case registered:
		return w.ownCallee(fn), true
	case isDeclared:
		return local(declared), true
	}
	w.types.mu.Lock()
	defer w.types.mu.Unlock()
	if e, ok := w.types.m[f]; ok && time.Since(e.at) < typeCacheTTL {
		return e.c, true
	}
	return callee{}, false
}

// resolveCallee returns the component of f for an execution this worker
// creates, in this order: the function registered on this worker, the type
// given to Declare, the component of the store's current deployment that
// exports it. (Workers that register their functions as deployment
// components make the last source answer for every function served
// anywhere.) A function none of them knows is an error wrapping
// ErrUnknownFunction; a store that cannot be read is another error.
func (w *Worker) resolveCallee(ctx context.Context, f core.FunctionFqn) (callee, error) {
	if c, ok := w.knownCallee(f); ok {
		return c, nil
	}
	c, err := w.storeCallee(ctx, f)
	switch {
	case err == nil:
		w.types.mu.Lock()
		if w.types.m == nil {
			w.types.m = map[core.FunctionFqn]storeType{}
		}
		w.types.m[f] = storeType{c: c, at: time.Now()}
		w.types.mu.Unlock()
		return c, nil
	case errors.Is(err, core.ErrNotFound), errors.Is(err, core.ErrNotImplemented):
		return callee{}, fmt.Errorf("%w of %s: this worker does not serve it, it was not declared and the store's "+
			"current deployment does not export it; declare it: w.Declare(%q, core.ComponentTypeActivity) "+
			"(or core.ComponentTypeWorkflow)", ErrUnknownFunction, f, f.String())
	}
	return callee{}, fmt.Errorf("worker: component type of %s: %w", f, err)
}

// firstLockNextVersion is an execution's next version after its first
// lock: Created at version 0, Locked at 1.
const firstLockNextVersion = 2

// checkType refuses a top-level execution of a registered workflow whose
// stored component type is not workflow (e.g. one submitted as an
// activity, the CLI's old default: listed and cancelled as an activity): it
// is finished at once with an uncategorized execution failure saying so,
// logged at ERROR, instead of running. The store keeps the type for good,
// so the check is made once, at the execution's first lock (a mismatch
// never gets a second one). The lock carries the stored type
// (LockedExecution.ComponentType); only from a server that predates it is
// the state read, once per top-level workflow execution, and a state the
// worker cannot read does not stop the run. Children are not checked: their
// creator took the type from the function's registration or deployment
// (see resolveCallee); nor are activities, as that read would nearly
// double an activity's requests. It reports whether the run may go on.
func (w *Worker) checkType(le core.LockedExecution, f *function) bool {
	if f.kind != core.ComponentTypeWorkflow || le.Parent != nil || le.NextVersion != firstLockNextVersion {
		return true
	}
	stored := le.ComponentType
	if stored == "" {
		ctx, cancel := w.ioContext()
		st, err := w.conn.GetPendingState(ctx, le.ExecutionID)
		cancel()
		if err != nil {
			return true
		}
		stored = st.ComponentType
	}
	if typeFits(stored, f.kind) {
		return true
	}
	reason := fmt.Sprintf("component type mismatch: the execution was created as %s but %s is registered as %s; submit it as %s",
		stored, f.ffqn, f.kind, f.kind)
	w.log.Error("refusing an execution of the wrong component type", "execution_id", le.ExecutionID.String(),
		"stored", string(stored), "registered", string(f.kind))
	if err := w.finishWithFailure(le, newLease(w, le), reason); err != nil {
		w.log.Warn("cannot refuse the execution; releasing it", "execution_id", le.ExecutionID.String(), "err", err)
		w.release(le.ExecutionID, le.NextVersion, reason)
	}
	return false
}

// typeFits reports whether an execution stored as stored may be run by a
// function registered as registered.
func typeFits(stored, registered core.ComponentType) bool {
	if registered == core.ComponentTypeWorkflow {
		return stored == core.ComponentTypeWorkflow
	}
	return stored.IsActivity()
}

// storeCallee asks the store which component of its current deployment
// exports f.
func (w *Worker) storeCallee(ctx context.Context, f core.FunctionFqn) (callee, error) {
	comp, dep, err := w.conn.FunctionComponent(ctx, f)
	return callee{component: comp, deployment: dep}, err
}
