// Command lambda-worker is the optional `worker` Lambda of Stela's own
// stack (infra, context worker=true): it serves the example functions
// (examples/demo) through the worker entry point, one worker pass per
// invocation. A worker of your own is the same main in your module with
// your Register (docs/deploy.md, "Deploy your own workflows";
// examples/aws-app).
package main

import (
	"github.com/stela-dev/stela/examples/demo"
	"github.com/stela-dev/stela/lambdaworker"
)

func main() { lambdaworker.Start(demo.Register) }
