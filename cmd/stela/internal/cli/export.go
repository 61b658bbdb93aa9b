package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/sqlite"
	"github.com/stela-dev/stela/store/transfer"
)

// transferOptions are the flags of `stela export` and `stela import`.
type transferOptions struct {
	from, to   string
	durability string
	retention  retentionFlag
	parallel   int
}

func (o *transferOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&o.durability, "durability", sqlite.DurabilityFsyncName,
		"an embedded destination: "+sqlite.DurabilityFsyncName+" or "+sqlite.DurabilityOSCrashUnsafeName+
			" (faster; an import\ninterrupted by an OS crash is resumed by running it again)")
	fs.Var(&o.retention, "retention", "the destination's retention, as its server runs it (stela dev --retention; DynamoDB:\n"+
		"default $STELA_RETENTION): finished trees already past it are not written, the others expire on time")
	fs.IntVar(&o.parallel, "parallel", 8, "trees imported at once into DynamoDB (an embedded destination takes them in order)")
}

const transferDoc = "Copies every execution (events, responses, delays, logs, backtraces), every deployment (with\n" +
	"its files, components, metadata and source mappings) and the CAS blobs they refer to, verbatim:\n" +
	"ids, versions, timestamps and the events' JSON are kept. An end is a store or a stream file:\n" +
	"  embedded:<data-dir>                  the embedded store of stela dev --data-dir <data-dir>\n" +
	"  dynamo:<table>[?bucket=…&prefix=…]   a DynamoDB table (AWS_* variables) and its S3 CAS\n" +
	"                                       (default $STELA_BUCKET and $STELA_BUCKET_PREFIX)\n" +
	"  <file>, -                            a stream file (JSON lines; - is stdout or stdin)\n" +
	"Every execution is verified by a digest; importing again writes only what is missing (an\n" +
	"interrupted import resumes), and what the destination holds differently is reported as a\n" +
	"conflict, never overwritten. The embedded store is read from one snapshot while stela dev\n" +
	"runs; executions locked (running) at export time are retried in the destination once their\n" +
	"locks expire. See docs/cli.md."

func exportCommand() *command {
	return transferCommand("export", "copy every execution and deployment of a store to a stream file or another store",
		"  stela export --to backup.jsonl                          # the embedded store in ./.stela to a file\n"+
			"  stela export --from embedded:.stela --to dynamo:stela   # laptop to AWS, directly",
		"the source store (default: the store stela dev uses, "+defaultStoreDoc+")",
		"the destination (required): a stream file or a store", true)
}

// transferCommand is `stela export` (exporting: --from defaults to the
// store stela dev uses, --to is required) or `stela import` (the reverse).
func transferCommand(name, summary, examples, fromUsage, toUsage string, exporting bool) *command {
	return &command{
		name: name, summary: summary, maxArgs: 0,
		doc: transferDoc + "\n\nExamples:\n" + examples,
		flags: func(fs *flag.FlagSet, e *Env) func(context.Context, []string) error {
			o := &transferOptions{retention: retentionFlag{r: core.RetainFor(core.DefaultRetentionPeriod)}}
			fs.StringVar(&o.from, "from", "", fromUsage+"\n"+locationUsage)
			fs.StringVar(&o.to, "to", "", toUsage)
			o.register(fs)
			return func(ctx context.Context, _ []string) error {
				given, other, what := &o.to, &o.from, "--to" // the end that is required, the one that defaults
				if !exporting {
					given, other, what = &o.from, &o.to, "--from"
				}
				if *given == "" {
					return usagef("%s is required", what)
				}
				if *other == "" {
					*other = defaultStore(e)
				}
				return runTransfer(ctx, e, o)
			}
		},
	}
}

const defaultStoreDoc = "dynamo:$STELA_TABLE when set, else embedded:.stela"

// runTransfer copies o.from to o.to: store to file (export), file to
// store (import) or store to store (directly).
func runTransfer(ctx context.Context, e *Env, o *transferOptions) error {
	from, err := parseLocation(o.from)
	if err != nil {
		return usagef("--from: %v", err)
	}
	to, err := parseLocation(o.to)
	if err != nil {
		return usagef("--to: %v", err)
	}
	if from.kind == locationFile && to.kind == locationFile {
		return usagef("--from and --to are both files: one end must be a store")
	}
	durability, err := sqlite.ParseDurability(o.durability)
	if err != nil {
		return usagef("--durability: %v", err)
	}
	if o.parallel < 1 {
		return usagef("--parallel must be at least 1")
	}
	// The summary goes to stdout unless the stream does.
	out := e.Stdout
	if to.kind == locationFile && to.path == "-" {
		out = e.Stderr
	}
	verb := "copied"
	switch {
	case to.kind == locationFile:
		verb = "exported"
	case from.kind == locationFile:
		verb = "imported"
	}
	topts := transfer.Options{Parallel: o.parallel, Progress: progress(e.Stderr, verb, 5*time.Second)}
	var src, dst transfer.Store
	if from.kind != locationFile {
		st, s, err := openStore(ctx, e, from, storeOptions{retention: o.retention, existing: true})
		if err != nil {
			return fmt.Errorf("open %s: %w", from.display, err)
		}
		defer closeStore(e, st)
		src, topts.Source = s, st.describeAll()
	}
	if to.kind != locationFile {
		st, s, err := openStore(ctx, e, to, storeOptions{durability: durability, retention: o.retention})
		if err != nil {
			return fmt.Errorf("open %s: %w", to.display, err)
		}
		defer closeStore(e, st)
		dst = s
	}
	start := time.Now()
	var sum transfer.Summary
	switch {
	case to.kind == locationFile:
		f, finish, err := openStream(e, to, true)
		if err != nil {
			return fmt.Errorf("--to: %w", err)
		}
		sum, err = transfer.Export(ctx, src, f, topts)
		if err != nil {
			_ = f.Close()
			return err
		}
		if err := finish(); err != nil {
			return fmt.Errorf("--to: %w", err)
		}
		printSummary(out, verb, sum, time.Since(start))
		fmt.Fprintf(out, "  %d bytes written to %s\n", sum.StreamBytes, to.display)
		return nil
	case from.kind == locationFile:
		f, finish, err := openStream(e, from, false)
		if err != nil {
			return fmt.Errorf("--from: %w", err)
		}
		defer func() { _ = finish() }()
		sum, err = transfer.Import(ctx, f, dst, topts)
		printSummary(out, verb, sum, time.Since(start))
		return transferError(err)
	default:
		sum, err = transfer.Copy(ctx, src, dst, topts)
		printSummary(out, verb, sum, time.Since(start))
		return transferError(err)
	}
}

// transferError says how to go on after a failed import.
func transferError(err error) error {
	switch {
	case errors.Is(err, transfer.ErrTruncated):
		return fmt.Errorf("%w\nthe trees before were imported; import a complete export again to finish (what is there already is kept)", err)
	case errors.Is(err, transfer.ErrConflicts):
		return fmt.Errorf("%w; everything else was imported", err)
	}
	return err
}

func closeStore(e *Env, st *devStack) {
	if err := st.svc.Close(); err != nil {
		fmt.Fprintf(e.Stderr, "close store: %v\n", err)
	}
}
