package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"

	"github.com/stela-dev/stela/analysis/determinism"
)

// vetCommand is `stela vet`: the determinism analyzer over Go packages.
func vetCommand() *command {
	return &command{
		name: "vet", summary: "check workflow code for what breaks its deterministic replay", args: "[packages]", maxArgs: -1,
		doc: "Runs the determinism analyzer (package analysis/determinism) over the Go packages (go list\n" +
			"patterns, default ./...): in workflow code — functions registered with worker.Workflow or\n" +
			"taking a *worker.Context, and what they call in the module — it reports the wall clock,\n" +
			"timers, math/rand and crypto/rand, goroutines, select and channels, range over maps, the\n" +
			"environment and files, network and database calls, mutable package variables, sync\n" +
			"primitives and the SDK's activity-only APIs, each with the deterministic alternative.\n" +
			"A reviewed line carries `//stela:nondeterministic-ok <reason>`. Exits 1 on findings.\n" +
			"Needs the go command. See docs/worker.md, \"Determinism rules\".",
		flags: func(fs *flag.FlagSet, e *Env) func(context.Context, []string) error {
			dir := fs.String("dir", ".", "directory to load the packages from (inside the module to check)")
			tests := fs.Bool("tests", true, "check the packages' test files too")
			asJSON := fs.Bool("json", false, "print the findings as a JSON array")
			return func(_ context.Context, patterns []string) error {
				if len(patterns) == 0 {
					patterns = []string{"./..."}
				}
				found, err := determinism.Check(*dir, patterns, *tests)
				if err != nil {
					return err
				}
				if *asJSON {
					type finding struct {
						Pos     string `json:"pos"`
						Rule    string `json:"rule"`
						Message string `json:"message"`
					}
					out := []finding{}
					for _, f := range found {
						out = append(out, finding{fmt.Sprintf("%s:%d:%d", f.Pos.Filename, f.Pos.Line, f.Pos.Column), f.Rule, f.Message})
					}
					b, _ := json.MarshalIndent(out, "", "  ")
					fmt.Fprintln(e.Stdout, string(b))
				} else {
					for _, f := range found {
						fmt.Fprintln(e.Stdout, f)
					}
				}
				if len(found) > 0 {
					return fmt.Errorf("%d finding(s) in workflow code", len(found))
				}
				return nil
			}
		},
	}
}
