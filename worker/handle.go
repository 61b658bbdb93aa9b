package worker

import (
	"context"
	"fmt"

	"github.com/stela-dev/stela/core"
)

// Typed function handles: a function is defined once, with its ffqn, its
// parameter and result types and its component type, and the handle is
// used everywhere else — to register it, call it, submit it into a join
// set, schedule it, start it from outside and read its result — so that a
// caller passing the wrong parameters or expecting the wrong result does
// not compile. The handle also tells the worker the function's component
// type (as Declare would), so a function served elsewhere needs no Declare.
//
//	var Charge = worker.DefineActivity[Order, Receipt]("demo:shop/payments.charge")
//	var PlaceOrder = worker.DefineWorkflow[Order, Receipt]("demo:shop/workflow.place-order")
//
//	Charge.Register(w, charge)           // func(context.Context, Order) (Receipt, error)
//	PlaceOrder.Register(w, placeOrder)   // func(*worker.Context, Order) (Receipt, error)
//	receipt, err := Charge.Call(wf, order)

// Func is a typed reference to a function of parameter type P and result
// type R: what ActivityFunc and WorkflowFunc share. For several WIT
// parameters use Params2, Params3 or Params4 as P; for none, Unit.
type Func[P, R any] struct {
	ffqn core.FunctionFqn
	kind core.ComponentType
}

// ActivityFunc is the handle of an activity (DefineActivity).
type ActivityFunc[P, R any] struct{ Func[P, R] }

// WorkflowFunc is the handle of a workflow (DefineWorkflow).
type WorkflowFunc[P, R any] struct{ Func[P, R] }

// DefineActivity returns the handle of the activity ffqn
// ("namespace:package/interface.function"); it panics on an invalid ffqn
// (handles are package-level declarations).
func DefineActivity[P, R any](ffqn string) ActivityFunc[P, R] {
	return ActivityFunc[P, R]{defineFunc[P, R](ffqn, core.ComponentTypeActivity)}
}

// DefineWorkflow returns the handle of the workflow ffqn; it panics on an
// invalid ffqn.
func DefineWorkflow[P, R any](ffqn string) WorkflowFunc[P, R] {
	return WorkflowFunc[P, R]{defineFunc[P, R](ffqn, core.ComponentTypeWorkflow)}
}

func defineFunc[P, R any](ffqn string, kind core.ComponentType) Func[P, R] {
	f, err := core.ParseFunctionFqn(ffqn)
	if err != nil {
		panic(fmt.Sprintf("worker: define %q: %v", ffqn, err))
	}
	return Func[P, R]{ffqn: f, kind: kind}
}

// Register registers fn as this activity on w (as Activity does).
func (a ActivityFunc[P, R]) Register(w *Worker, fn func(ctx context.Context, params P) (R, error), opts ...FuncOption) {
	Activity(w, a.ffqn.String(), fn, opts...)
}

// Register registers fn as this workflow on w (as Workflow does). The
// handle's ffqn is registered as it is: a cancellable workflow's handle is
// made with Cancellable, and Register panics when given the Cancellable
// option (the handle's calls would miss the suffixed name).
func (h WorkflowFunc[P, R]) Register(w *Worker, fn func(wf *Context, params P) (R, error), opts ...FuncOption) {
	probe := function{kind: core.ComponentTypeWorkflow}
	for _, o := range opts {
		o(&probe)
	}
	if probe.cancellable {
		panic(fmt.Sprintf("worker: register %q: use the handle's Cancellable method instead of the Cancellable option", h.ffqn))
	}
	Workflow(w, h.ffqn.String(), fn, opts...)
}

// Cancellable returns the handle of the cancellable workflow: its ffqn
// with the store's "-cancellable" suffix appended (see the Cancellable
// option), used by every registration, call, submission and start made
// with it:
//
//	var Order = worker.DefineWorkflow[Order, Receipt]("demo:shop/workflow.order").Cancellable()
//	// Order.FFQN() is demo:shop/workflow.order-cancellable
//
// It panics when the name already ends in "-cancellable" or the suffixed
// name is too long.
func (h WorkflowFunc[P, R]) Cancellable() WorkflowFunc[P, R] {
	f, err := cancellableName(h.ffqn, core.ComponentTypeWorkflow)
	if err != nil {
		panic(fmt.Sprintf("worker: define %q: %v", h.ffqn, err))
	}
	h.ffqn = f
	return h
}

// FFQN returns the function's name.
func (f Func[P, R]) FFQN() core.FunctionFqn { return f.ffqn }

// String returns the ffqn.
func (f Func[P, R]) String() string { return f.ffqn.String() }

// ComponentType returns the function's component type.
func (f Func[P, R]) ComponentType() core.ComponentType { return f.kind }

// Declare tells w the function's component type (Worker.Declare); the
// handle's own calls need no declaration, untyped calls by name do.
func (f Func[P, R]) Declare(w *Worker) { w.Declare(f.ffqn.String(), f.kind) }

// Call runs the function as a child execution and waits for its result,
// as worker.Call does (with the same options).
func (f Func[P, R]) Call(wf *Context, params P, opts ...CallOption) (R, error) {
	var zero R
	ps, err := encodeParams(params)
	if err != nil {
		return zero, err
	}
	r, err := wf.callWith(f.ffqn, ps, f.kind, opts)
	if err != nil {
		return zero, err
	}
	return Result[R](r)
}

// Submit starts the function as a child execution in js (as js.Submit
// does) and returns the child, whose Result reads its response.
func (f Func[P, R]) Submit(js *JoinSet, params P) (Child[R], error) {
	ps, err := encodeParams(params)
	if err != nil {
		return Child[R]{}, err
	}
	id, err := js.submitTarget(f.ffqn, ps, f.kind)
	return Child[R]{ID: id}, err
}

// Schedule creates a new top-level execution of the function (as
// wf.Schedule does) and returns its id.
func (f Func[P, R]) Schedule(wf *Context, params P, at ScheduleAt) (core.ExecutionId, error) {
	ps, err := encodeParams(params)
	if err != nil {
		return core.ExecutionId{}, err
	}
	return wf.scheduleTarget(f.ffqn, ps, at, f.kind)
}

// Start creates a top-level execution of the function through w (as
// w.Submit does, from outside a workflow) and returns its id.
func (f Func[P, R]) Start(ctx context.Context, w *Worker, params P) (core.ExecutionId, error) {
	ps, err := encodeParams(params)
	if err != nil {
		return core.ExecutionId{}, err
	}
	return w.submitTarget(ctx, f.ffqn, ps, f.kind)
}

// Await waits for execution id of the function to finish (as worker.Await
// does) and returns its result.
func (f Func[P, R]) Await(ctx context.Context, w *Worker, id core.ExecutionId) (R, error) {
	return Await[R](ctx, w, id)
}

// Result decodes a response of the function (js.Next's) into R, or returns
// its error (a *ResultError).
func (f Func[P, R]) Result(r Response) (R, error) { return Result[R](r) }

// Child is a child execution submitted with a typed handle (Func.Submit).
type Child[R any] struct {
	// ID is the child execution.
	ID core.ExecutionId
}

// Result decodes r, the child's response from js.Next, into R, or returns
// the child's error (a *ResultError). A response of another member of the
// join set is an error.
func (c Child[R]) Result(r Response) (R, error) {
	if r.ChildID != c.ID {
		var zero R
		return zero, fmt.Errorf("worker: the response of %s is not the one of child %s", responseMember(r), c.ID)
	}
	return Result[R](r)
}

// Is reports whether r is this child's response.
func (c Child[R]) Is(r Response) bool { return r.ChildID == c.ID }

func responseMember(r Response) string {
	if !r.DelayID.IsZero() {
		return r.DelayID.String()
	}
	return r.ChildID.String()
}

// localCallee is the component this worker records for a function of type
// t that it serves or that is declared.
func (w *Worker) localCallee(t core.ComponentType) callee {
	return callee{component: core.ComponentId{ComponentType: t, Name: w.opts.Name}, deployment: w.opts.DeploymentID}
}

// calleeWithHint is resolveCallee where a typed handle's component type
// (hint, "" for none) comes right after the registered and declared types.
func (w *Worker) calleeWithHint(ctx context.Context, f core.FunctionFqn, hint core.ComponentType) (callee, error) {
	if hint != "" {
		w.mu.Lock()
		fn, registered := w.funcs[f]
		declared, isDeclared := w.declared[f]
		w.mu.Unlock()
		switch {
		case registered:
			return w.localCallee(fn.kind), nil
		case isDeclared:
			return w.localCallee(declared), nil
		}
		return w.localCallee(hint), nil
	}
	return w.resolveCallee(ctx, f)
}
