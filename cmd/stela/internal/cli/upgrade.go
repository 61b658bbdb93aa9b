package cli

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/stela-dev/stela/core"
)

// historyCommand: stela execution history export ID.
func historyCommand() *command {
	return &command{
		name: "history", summary: "export an execution's history for replay tests",
		doc: "stela execution history export ID [--out FILE]: writes the execution's events and responses\n" +
			"(format stela-history/1, the same from `stela dev` and from DynamoDB) for\n" +
			"workertest.ReplayFile, the replay test a deploy runs in CI (docs/worker.md \"Replay tests\").",
		sub: []*command{{
			name: "export", summary: "write an execution's history as JSON", args: "<execution-id>", minArgs: 1, maxArgs: 1,
			flags: func(fs *flag.FlagSet, e *Env) func(context.Context, []string) error {
				cf := addClientFlags(fs, e)
				out := fs.String("out", "", "write to this `file` instead of stdout")
				return func(ctx context.Context, a []string) error {
					id, err := core.ParseExecutionId(a[0])
					if err != nil {
						return usagef("invalid execution id %q: %v", a[0], err)
					}
					c, err := cf.client()
					if err != nil {
						return err
					}
					log, err := c.Get(ctx, id)
					if err != nil {
						return err
					}
					h, err := core.HistoryOf(log)
					if err != nil {
						return err
					}
					b, err := h.Marshal()
					if err != nil {
						return err
					}
					if *out != "" {
						return os.WriteFile(*out, b, 0o644)
					}
					_, err = e.Stdout.Write(b)
					return err
				}
			},
		}},
	}
}

// upgradeCommand: stela execution upgrade ID --to DIGEST --skip-check.
func upgradeCommand() *command {
	return &command{
		name: "upgrade", summary: "move an execution to another component digest", args: "<execution-id>", minArgs: 1, maxArgs: 1,
		doc: "stela execution upgrade ID --to DIGEST [--from DIGEST] --skip-check: moves the execution to\n" +
			"component digest --to, guarded by its current digest (--from, default: the one read now).\n" +
			"The server runs no user code, so this command cannot check that the new code replays the\n" +
			"history: it needs --skip-check. The checked upgrade runs in the new build's program\n" +
			"(worker.Worker.Upgrade: replay, then move only clean executions), or check first with\n" +
			"`stela execution history export` and workertest.ReplayFile (docs/worker.md \"Upgrades\").",
		flags: func(fs *flag.FlagSet, e *Env) func(context.Context, []string) error {
			cf := addClientFlags(fs, e)
			to := fs.String("to", "", "the new component `digest` (sha256:…)")
			from := fs.String("from", "", "the expected current `digest` (default: the execution's now)")
			skip := fs.Bool("skip-check", false, "move without a replay check (required: see above)")
			return func(ctx context.Context, a []string) error {
				id, err := core.ParseExecutionId(a[0])
				if err != nil {
					return usagef("invalid execution id %q: %v", a[0], err)
				}
				newD, err := core.ParseComponentDigest(*to)
				if err != nil {
					return usagef("invalid --to %q: expected sha256:<64 hex digits>", *to)
				}
				if !*skip {
					return usagef("the server cannot replay your code: pass --skip-check, or upgrade with worker.Worker.Upgrade in the new build")
				}
				c, err := cf.client()
				if err != nil {
					return err
				}
				var old core.ComponentDigest
				if *from != "" {
					if old, err = core.ParseComponentDigest(*from); err != nil {
						return usagef("invalid --from %q: expected sha256:<64 hex digits>", *from)
					}
				} else {
					st, err := c.GetPendingState(ctx, id)
					if err != nil {
						return err
					}
					old = st.ComponentDigest
				}
				if err := c.Upgrade(ctx, id, old, newD); err != nil {
					return err
				}
				_, err = fmt.Fprintf(e.Stdout, "upgraded %s: %s -> %s\n", id, old, newD)
				return err
			}
		},
	}
}
