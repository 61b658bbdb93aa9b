// Package handles registers and calls functions through typed handles.
package handles

import (
	"context"
	"time"

	"github.com/stela-dev/stela/worker"
)

var (
	Charge = worker.DefineActivity[int, string]("shop:handles/payments.charge")
	Order  = worker.DefineWorkflow[int, string]("shop:handles/workflow.order")
)

func Register(w *worker.Worker) {
	Charge.Register(w, func(ctx context.Context, n int) (string, error) {
		return time.Now().String(), nil // an activity may read the clock
	})
	Order.Register(w, func(wf *worker.Context, n int) (string, error) {
		s, err := Charge.Call(wf, n)
		_, _ = Order.Start(context.TODO(), nil, n) // want `^worker.Func.Start in workflow registered at handles.go:\d+: it talks to the store outside` `^context.TODO in workflow registered at handles.go:\d+: a workflow has no context`
		return s + time.Now().String(), err        // want `^time.Now in workflow registered at handles.go:\d+: the wall clock`
	})
}
