package cli

import (
	"context"
	"flag"

	"github.com/stela-dev/stela/core"
)

func importCommand() *command {
	return &command{
		name: "import", summary: "copy a stream file (stela export) or another store into a store", maxArgs: 0,
		doc: transferDoc + "\n\nExamples:\n" +
			"  stela import --from backup.jsonl                        # into the embedded store in ./.stela\n" +
			"  stela import --from backup.jsonl --to dynamo:stela      # into DynamoDB (+ $STELA_BUCKET)",
		flags: func(fs *flag.FlagSet, e *Env) func(context.Context, []string) error {
			o := &transferOptions{retention: retentionFlag{r: core.RetainFor(core.DefaultRetentionPeriod)}}
			fs.StringVar(&o.from, "from", "", "the source (required): a stream file or a store\n"+locationUsage)
			fs.StringVar(&o.to, "to", "", "the destination store (default: the store stela dev uses, "+defaultStoreDoc+")")
			o.register(fs)
			return func(ctx context.Context, _ []string) error {
				if o.from == "" {
					return usagef("--from is required")
				}
				if o.to == "" {
					o.to = defaultStore(e)
				}
				return runTransfer(ctx, e, o)
			}
		},
	}
}
