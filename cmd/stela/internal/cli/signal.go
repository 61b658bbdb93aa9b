package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"

	"github.com/stela-dev/stela/core"
)

func signalCommand() *command {
	return &command{
		name: "signal", summary: "send a signal to a workflow execution", args: "<execution-id> <name> [value-json]", minArgs: 2, maxArgs: 3,
		doc: "Sends the signal <name> with a JSON value (default null) to a workflow execution; the workflow\n" +
			"receives it with worker.WaitSignal. A signal sent before the workflow waits is kept; signals of\n" +
			"one name are received in the order sent. Prints the signal's sequence number and its stub\n" +
			"execution. --key makes a repeated send (same key and value) deliver once.",
		flags: func(fs *flag.FlagSet, e *Env) func(context.Context, []string) error {
			cf := addClientFlags(fs, e)
			key := fs.String("key", "", "idempotency key (default: a random one)")
			return func(ctx context.Context, args []string) error {
				id, err := core.ParseExecutionId(args[0])
				if err != nil {
					return &usageError{msg: err.Error()}
				}
				value := json.RawMessage("null")
				if len(args) == 3 {
					if !json.Valid([]byte(args[2])) {
						return &usageError{msg: fmt.Sprintf("value %q is not JSON", args[2])}
					}
					value = json.RawMessage(args[2])
				}
				c, err := cf.client()
				if err != nil {
					return err
				}
				var seq uint64
				if *key != "" {
					seq, err = c.SignalWithKey(ctx, id, args[1], value, *key)
				} else {
					seq, err = c.Signal(ctx, id, args[1], value)
				}
				if err != nil {
					return err
				}
				stub, _, _ := core.SignalStubID(id, args[1], seq)
				_, err = fmt.Fprintf(e.Stdout, "signal %s #%d sent: %s\n", args[1], seq, stub)
				return err
			}
		},
	}
}
