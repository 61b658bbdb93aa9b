// Command worker is the sample application's worker Lambda: one worker
// pass over the orders functions per invocation (package lambdaworker).
package main

import (
	"example.com/aws-app/orders"
	"github.com/stela-dev/stela/lambdaworker"
)

func main() { lambdaworker.Start(orders.Register) }
