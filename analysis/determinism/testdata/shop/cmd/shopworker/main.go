// Command shopworker registers the module's workflows, some of them in place.
package main

import (
	"context"

	"example.com/shop/flows"
	"example.com/shop/helpers"
	"github.com/stela-dev/stela/worker"
)

func main() {
	w := worker.New(nil, worker.Options{})
	flows.Register(w)
	// A workflow of another package: reported there, nothing here.
	worker.Workflow(w, "shop:main/workflow.checkout-again", flows.Checkout)
	worker.Workflow(w, "shop:main/workflow.inline", func(wf *worker.Context, _ worker.Unit) (string, error) {
		return helpers.Stamp(), nil // want `^time.Now \(at example.com/shop/helpers/helpers.go:15:42\) in workflow "shop:main/workflow.inline" via helpers.Stamp:`
	})
	_ = w.Run(context.Background()) // not workflow code
}
