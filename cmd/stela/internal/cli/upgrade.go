package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/stela-dev/stela/client"
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

// upgradeCommand: stela execution upgrade ID --to DIGEST, or --from A --to B --all.
func upgradeCommand() *command {
	return &command{
		name: "upgrade", summary: "move executions to another component digest after a replay check", args: "[<execution-id>]", minArgs: 0, maxArgs: 1,
		doc: "stela execution upgrade ID --to DIGEST [--from DIGEST] [--skip-check]\n" +
			"stela execution upgrade --from DIGEST --to DIGEST --all [--skip-check]\n" +
			"moves an execution (or every unfinished execution of digest --from, children included) to\n" +
			"component digest --to, guarded by its current digest (--from, default: the one read now).\n" +
			"The server runs no user code: a worker of digest --to (a running SDK worker of that build)\n" +
			"replays each history against its code first and moves only the ones that replay cleanly;\n" +
			"the others keep their digest and are listed with their first divergence. With no worker\n" +
			"of --to running, the server answers `new component not found` after its wait (20 s).\n" +
			"--skip-check moves without the replay. Prints one line per execution: upgraded,\n" +
			"diverged (version N: …) or skipped (why); exits 1 when one diverged or failed\n" +
			"(docs/worker.md \"Upgrades\").",
		flags: func(fs *flag.FlagSet, e *Env) func(context.Context, []string) error {
			cf := addClientFlags(fs, e)
			to := fs.String("to", "", "the new component `digest` (sha256:…)")
			from := fs.String("from", "", "the expected current `digest` (default: the execution's now; required with --all)")
			all := fs.Bool("all", false, "upgrade every unfinished execution of digest --from")
			skip := fs.Bool("skip-check", false, "move without the replay check")
			return func(ctx context.Context, a []string) error {
				newD, err := core.ParseComponentDigest(*to)
				if err != nil {
					return usagef("invalid --to %q: expected sha256:<64 hex digits>", *to)
				}
				var old *core.ComponentDigest
				if *from != "" {
					d, err := core.ParseComponentDigest(*from)
					if err != nil {
						return usagef("invalid --from %q: expected sha256:<64 hex digits>", *from)
					}
					old = &d
				}
				var ids []core.ExecutionId
				switch {
				case *all && len(a) > 0:
					return usagef("give an execution id or --all, not both")
				case *all && old == nil:
					return usagef("--all needs --from: the digest whose executions move")
				case !*all && len(a) == 0:
					return usagef("give an execution id, or --from DIGEST --all")
				case !*all:
					id, err := core.ParseExecutionId(a[0])
					if err != nil {
						return usagef("invalid execution id %q: %v", a[0], err)
					}
					ids = append(ids, id)
				}
				c, err := cf.client()
				if err != nil {
					return err
				}
				if *all {
					for st, err := range c.Executions(ctx, core.ListExecutionsFilter{ComponentDigest: old, HideFinished: true, ShowDerived: true}, 100) {
						if err != nil {
							return err
						}
						ids = append(ids, st.ExecutionID)
					}
				}
				u := upgrader{c: c, out: e.Stdout, to: newD, skip: *skip}
				for _, id := range ids {
					if err := u.one(ctx, id, old); err != nil {
						return err
					}
				}
				if *all {
					fmt.Fprintf(e.Stdout, "%d upgraded, %d diverged, %d skipped\n", u.moved, u.diverged, u.skipped)
				}
				if !*all && u.moved == 0 {
					return fmt.Errorf("%s not upgraded", ids[0])
				}
				if u.diverged > 0 {
					return fmt.Errorf("%d diverged: they keep their digest (keep a worker of it running, or fix the code and upgrade again)", u.diverged)
				}
				return nil
			}
		},
	}
}

// upgrader upgrades executions one by one and counts the outcomes.
type upgrader struct {
	c                        *client.Client
	out                      io.Writer
	to                       core.ComponentDigest
	skip                     bool
	moved, diverged, skipped int
}

// one upgrades id from old (nil: its digest now), printing the outcome. A
// refusal of this execution is printed and counted; an error that every
// other execution would meet too (no worker of the digest, the server
// unreachable) is returned.
func (u *upgrader) one(ctx context.Context, id core.ExecutionId, old *core.ComponentDigest) error {
	var from core.ComponentDigest
	if old != nil {
		from = *old
	} else {
		st, err := u.c.GetPendingState(ctx, id)
		if err != nil {
			return err
		}
		from = st.ComponentDigest
	}
	var err error
	if u.skip {
		err = u.c.Upgrade(ctx, id, from, u.to)
	} else {
		err = u.c.UpgradeChecked(ctx, id, from, u.to)
	}
	var ae *client.Error
	switch {
	case err == nil:
		u.moved++
		_, err = fmt.Fprintf(u.out, "upgraded %s: %s -> %s\n", id, from, u.to)
		return err
	case !errors.As(err, &ae):
		return err
	case ae.Status == http.StatusUnprocessableEntity && strings.HasPrefix(ae.Message, "Replay failed: "):
		u.diverged++
		_, err = fmt.Fprintf(u.out, "diverged %s: stays on %s: %s\n", id, from, strings.TrimPrefix(ae.Message, "Replay failed: "))
		return err
	case ae.Status == http.StatusNotFound && strings.HasPrefix(ae.Message, "new component not found"):
		return fmt.Errorf("%s: %s (start a worker of that build)", id, ae.Message)
	case ae.Status == http.StatusNotFound:
		why := "its digest is no longer " + from.String()
		if st, gerr := u.c.GetPendingState(ctx, id); gerr == nil && st.ComponentDigest == u.to {
			why = "already of " + u.to.String()
		}
		u.skipped++
		_, err = fmt.Fprintf(u.out, "skipped %s: %s\n", id, why)
		return err
	case ae.Status == http.StatusConflict:
		u.skipped++
		_, err = fmt.Fprintf(u.out, "skipped %s: finished\n", id)
		return err
	}
	return err
}
