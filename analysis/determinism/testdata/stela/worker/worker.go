// Package worker is a stub of Stela's worker SDK for the analyzer's tests.
package worker

import (
	"context"
	"time"

	"github.com/stela-dev/stela/core"
)

type Conn interface{}

type Options struct{ Name string }

type Stats struct{}

type Worker struct{}

func New(conn Conn, opts Options) *Worker { return &Worker{} }

func (w *Worker) Submit(ctx context.Context, ffqn string, params any) (core.ExecutionId, error) {
	return core.ExecutionId{}, nil
}
func (w *Worker) Run(ctx context.Context) error          { return nil }
func (w *Worker) RunUntilIdle(ctx context.Context) error { return nil }
func (w *Worker) Close()                                 {}
func (w *Worker) Stats() Stats                           { return Stats{} }
func (w *Worker) ExecutorID() core.ExecutorId            { return core.ExecutorId{} }

type function struct{}

type FuncOption func(*function)

func RetryPolicy(maxRetries uint32, backoff time.Duration) FuncOption { return nil }

func Activity[P, R any](w *Worker, ffqn string, fn func(ctx context.Context, params P) (R, error), opts ...FuncOption) {
}

func Workflow[P, R any](w *Worker, ffqn string, fn func(wf *Context, params P) (R, error), opts ...FuncOption) {
}

func Await[R any](ctx context.Context, w *Worker, id core.ExecutionId) (R, error) {
	var r R
	return r, nil
}

type Unit = struct{}

type Args []any

type Context struct{}

func (wf *Context) ExecutionID() core.ExecutionId          { return core.ExecutionId{} }
func (wf *Context) IsReplaying() bool                      { return false }
func (wf *Context) Now() time.Time                         { return time.Time{} }
func (wf *Context) Sleep(d time.Duration) error            { return nil }
func (wf *Context) SleepUntil(t time.Time) error           { return nil }
func (wf *Context) Random(min, maxInclusive uint64) uint64 { return min }
func (wf *Context) RandomString(minLen, maxLenExclusive int) string {
	return ""
}
func (wf *Context) NewJoinSet() *JoinSet { return &JoinSet{} }
func (wf *Context) Schedule(ffqn string, params any, at ScheduleAt) (core.ExecutionId, error) {
	return core.ExecutionId{}, nil
}

type ScheduleAt = core.ScheduleAt

func In(d time.Duration) ScheduleAt { return ScheduleAt{} }

type CallOption func(*callOptions)

type callOptions struct{}

func Call[R any](wf *Context, ffqn string, params any, opts ...CallOption) (R, error) {
	var r R
	return r, nil
}

type Response struct {
	ChildID core.ExecutionId
	DelayID core.DelayId
	Result  core.ReturnValue
}

func (r Response) Err() error { return nil }

func Result[R any](r Response) (R, error) {
	var zero R
	return zero, nil
}

type JoinSet struct{}

func (j *JoinSet) Submit(ffqn string, params any) (core.ExecutionId, error) {
	return core.ExecutionId{}, nil
}
func (j *JoinSet) SubmitDelay(d time.Duration) (core.DelayId, error) { return core.DelayId{}, nil }
func (j *JoinSet) Next() (Response, error)                           { return Response{}, nil }
func (j *JoinSet) Close()                                            {}

type Func[P, R any] struct{}

func (f Func[P, R]) Call(wf *Context, params P, opts ...CallOption) (R, error) {
	var r R
	return r, nil
}
func (f Func[P, R]) Start(ctx context.Context, w *Worker, params P) (core.ExecutionId, error) {
	return core.ExecutionId{}, nil
}
func (f Func[P, R]) Await(ctx context.Context, w *Worker, id core.ExecutionId) (R, error) {
	var r R
	return r, nil
}

type ActivityFunc[P, R any] struct{ Func[P, R] }

type WorkflowFunc[P, R any] struct{ Func[P, R] }

func DefineActivity[P, R any](ffqn string) ActivityFunc[P, R] { return ActivityFunc[P, R]{} }
func DefineWorkflow[P, R any](ffqn string) WorkflowFunc[P, R] { return WorkflowFunc[P, R]{} }

func (a ActivityFunc[P, R]) Register(w *Worker, fn func(ctx context.Context, params P) (R, error), opts ...FuncOption) {
}
func (h WorkflowFunc[P, R]) Register(w *Worker, fn func(wf *Context, params P) (R, error), opts ...FuncOption) {
}
