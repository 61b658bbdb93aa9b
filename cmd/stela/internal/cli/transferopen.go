package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/stela-dev/stela/functions/app"
	"github.com/stela-dev/stela/obs"
	"github.com/stela-dev/stela/sqlite"
	"github.com/stela-dev/stela/store/transfer"
)

// The two ends of `stela export` and `stela import`: a store, opened the
// way `stela dev` opens it (openByKind), or a stream file.

// location is an end of a transfer, as given on the command line:
//
//	embedded:<data-dir>               the embedded store in <data-dir> (stela.db, blobs/)
//	dynamo:<table>[?bucket=…&prefix=…] a DynamoDB table, its CAS the S3 bucket (default
//	                                  $STELA_BUCKET, $STELA_BUCKET_PREFIX)
//	<file> or -                       a stream file (- is stdout or stdin)
type location struct {
	kind           string // backendEmbedded, backendDynamo or "file"
	dataDir, table string
	bucket, prefix *string
	path           string
	display        string
}

const locationFile = "file"

// locationUsage documents --from and --to.
const locationUsage = "embedded:<data-dir> (the embedded store), dynamo:<table>[?bucket=<b>&prefix=<p>]\n" +
	"(DynamoDB; its CAS the S3 bucket, default $STELA_BUCKET), or a stream file (- for stdin/stdout)"

func parseLocation(s string) (location, error) {
	l := location{display: s}
	switch {
	case s == "":
		return l, fmt.Errorf("empty location")
	case strings.HasPrefix(s, backendEmbedded+":"):
		l.kind, l.dataDir = backendEmbedded, strings.TrimPrefix(s, backendEmbedded+":")
		if l.dataDir == "" {
			return l, fmt.Errorf("%q: want embedded:<data-dir>", s)
		}
	case strings.HasPrefix(s, backendDynamo+":"):
		l.kind = backendDynamo
		table, query, _ := strings.Cut(strings.TrimPrefix(s, backendDynamo+":"), "?")
		if l.table = table; table == "" {
			return l, fmt.Errorf("%q: want dynamo:<table>", s)
		}
		q, err := url.ParseQuery(query)
		if err != nil {
			return l, fmt.Errorf("%q: %v", s, err)
		}
		for k, v := range q {
			switch k {
			case "bucket":
				l.bucket = &v[0]
			case "prefix":
				l.prefix = &v[0]
			default:
				return l, fmt.Errorf("%q: unknown parameter %q (want bucket, prefix)", s, k)
			}
		}
	default:
		l.kind, l.path = locationFile, s
	}
	return l, nil
}

// defaultStore is the store `stela dev` would use: DynamoDB when
// STELA_TABLE is set, else the embedded store in ./.stela.
func defaultStore(e *Env) string {
	if t := e.Getenv(app.EnvTable); t != "" {
		return backendDynamo + ":" + t
	}
	return backendEmbedded + ":.stela"
}

// storeOptions are what opening a store needs beyond its location.
type storeOptions struct {
	durability sqlite.Durability
	retention  retentionFlag
	existing   bool
}

// openStore opens a store location as `stela dev` does; close closes it.
func openStore(ctx context.Context, e *Env, l location, so storeOptions) (*devStack, transfer.Store, error) {
	logger := slog.New(slog.NewTextHandler(e.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	tel := devTelemetry{metrics: obs.NewMetrics()}
	o := &devOptions{dataDir: l.dataDir, retention: so.retention, existing: so.existing}
	env := e
	switch l.kind {
	case backendEmbedded:
	case backendDynamo:
		getenv := e.Getenv
		env = &Env{Stdout: e.Stdout, Stderr: e.Stderr, Getenv: func(k string) string {
			switch {
			case k == app.EnvTable:
				return l.table
			case k == app.EnvBucket && l.bucket != nil:
				return *l.bucket
			case k == app.EnvBucketPrefix && l.prefix != nil:
				return *l.prefix
			}
			return getenv(k)
		}}
		o.dataDir = ".stela" // the blobs directory when no bucket is set, as stela dev
	default:
		return nil, transfer.Store{}, fmt.Errorf("%s is not a store", l.display)
	}
	st, err := openByKind(ctx, env, l.kind, o, so.durability, logger, tel)
	if err != nil {
		return nil, transfer.Store{}, err
	}
	return st, transfer.Store{Service: st.svc, Cas: st.cas}, nil
}

// describeAll names a store for the stream's header.
func (st *devStack) describeAll() string {
	parts := make([]string, len(st.describe))
	for i, d := range st.describe {
		parts[i] = strings.Join(strings.Fields(d), " ")
	}
	return strings.Join(parts, "; ")
}

// openStream opens a stream file for writing (create: it must not exist)
// or reading; "-" is stdout or stdin.
func openStream(e *Env, l location, write bool) (io.ReadWriteCloser, func() error, error) {
	if l.path == "-" {
		if write {
			return nopCloser{w: e.Stdout}, func() error { return nil }, nil
		}
		return nopCloser{r: os.Stdin}, func() error { return nil }, nil
	}
	if !write {
		f, err := os.Open(l.path)
		if err != nil {
			return nil, nil, err
		}
		return f, f.Close, nil
	}
	// Written beside its name, renamed when complete: a file with the name
	// is always a finished export.
	tmp := l.path + ".partial"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, nil, err
	}
	finish := func() error {
		err := f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp, l.path)
		}
		return err
	}
	return f, finish, nil
}

type nopCloser struct {
	r io.Reader
	w io.Writer
}

func (n nopCloser) Read(p []byte) (int, error)  { return n.r.Read(p) }
func (n nopCloser) Write(p []byte) (int, error) { return n.w.Write(p) }
func (n nopCloser) Close() error                { return nil }

// progress prints the running totals to w at most every interval.
func progress(w io.Writer, verb string, interval time.Duration) func(transfer.Summary) {
	last := time.Now()
	return func(s transfer.Summary) {
		if time.Since(last) < interval {
			return
		}
		last = time.Now()
		fmt.Fprintf(w, "… %s %d executions in %d trees\n", verb, s.Executions, s.Trees)
	}
}

// printSummary reports a transfer on w.
func printSummary(w io.Writer, verb string, s transfer.Summary, took time.Duration) {
	rate := ""
	if secs := took.Seconds(); secs > 0 {
		rate = fmt.Sprintf(": %.0f executions/s", float64(s.Executions)/secs)
	}
	fmt.Fprintf(w, "%s %d executions in %d trees in %s%s\n", verb, s.Executions, s.Trees, took.Round(time.Millisecond), rate)
	fmt.Fprintf(w, "  %d events, %d responses, %d delays, %d backtraces, %d log rows\n",
		s.Events, s.Responses, s.Delays, s.Backtraces, s.LogRows)
	fmt.Fprintf(w, "  %d deployments, %d component metadata, %d source mappings, %d blobs (%d bytes)\n",
		s.Deployments, s.ComponentMetadata, s.SourceMappings, s.Blobs, s.BlobBytes)
	if s.Written+s.Resumed+s.Unchanged+s.Expired > 0 {
		fmt.Fprintf(w, "  trees: %d written, %d resumed (completed), %d unchanged, %d expired (past the destination's retention, not written)\n",
			s.Written, s.Resumed, s.Unchanged, s.Expired)
		fmt.Fprintf(w, "  deployment records: %d written, %d unchanged\n", s.RecordsWritten, s.RecordsUnchanged)
	}
	if s.Locked > 0 {
		fmt.Fprintf(w, "warning: %d executions were locked (running) when exported: in the destination their locks\n"+
			"  expire at their lock_expires_at and they are retried, as after a worker that crashed\n", s.Locked)
	}
	if len(s.MissingBlobs) > 0 {
		fmt.Fprintf(w, "warning: %d blobs the deployments or source mappings name are not in the source's CAS (not copied)\n", len(s.MissingBlobs))
	}
	for i, c := range s.Conflicts {
		if i == 20 {
			fmt.Fprintf(w, "  … and %d more\n", len(s.Conflicts)-i)
			break
		}
		fmt.Fprintf(w, "conflict: %s\n", c)
	}
}
