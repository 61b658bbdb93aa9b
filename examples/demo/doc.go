// Package demo holds the functions of Stela's examples, written with the
// worker SDK: the hello activity (examples/hello), a fan-out / fan-in
// workflow (examples/fanout) and an order saga with a compensation and a
// durable sleep (examples/saga). Each example's main connects to `stela
// dev`, registers these functions on a worker, submits an execution and
// prints its result; the tests run the same code on the embedded store and
// on DynamoDB Local, and examples/lambda-worker serves them from a Lambda (package lambdaworker).
package demo

import "github.com/stela-dev/stela/worker"

// Register registers every example function on w.
func Register(w *worker.Worker) {
	RegisterHello(w)
	RegisterFanOut(w)
	RegisterSaga(w)
}
