package cli

import (
	"context"
	"errors"
	"flag"

	"github.com/stela-dev/stela/bench"
)

// benchCommand registers the benchmarks of package bench as `stela bench`.
func benchCommand() *command {
	g := &command{name: "bench", summary: bench.Summary, doc: bench.Doc}
	for _, b := range bench.Commands() {
		g.sub = append(g.sub, &command{name: b.Name, summary: b.Summary, doc: b.Doc, maxArgs: 0,
			flags: func(fs *flag.FlagSet, e *Env) func(context.Context, []string) error {
				run := b.Flags(fs, &bench.Env{Stdout: e.Stdout, Stderr: e.Stderr, ServerFlags: func(fs *flag.FlagSet) func() bench.Server {
					cf := addClientFlags(fs, e)
					return func() bench.Server {
						given := e.Getenv(envURL) != ""
						fs.Visit(func(f *flag.Flag) { given = given || f.Name == "url" })
						return bench.Server{URL: cf.url, Token: cf.token, Given: given}
					}
				}})
				return func(ctx context.Context, _ []string) error {
					err := run(ctx)
					if ue := (bench.UsageError{}); errors.As(err, &ue) {
						return usageError{ue.Msg}
					}
					return err
				}
			}})
	}
	return g
}
