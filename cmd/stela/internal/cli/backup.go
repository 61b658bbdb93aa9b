package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/stela-dev/stela/cas"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/sqlite"
)

func backupCommand() *command {
	return &command{
		name: "backup", summary: "take a consistent online copy of the embedded store (while stela dev runs)", maxArgs: 0,
		doc: "Copies <data-dir> — the database stela.db and the blobs — into the directory --to, which\n" +
			"must not exist or be empty; the copy is itself a data directory (stela dev --data-dir <to>).\n" +
			"The database is copied from one snapshot (SQLite VACUUM INTO): stela dev keeps serving and\n" +
			"writing, and the copy holds every write committed before the snapshot and none after. The\n" +
			"blobs are content-addressed files, copied (and verified) before and after the snapshot, so\n" +
			"the copy has every blob its database refers to. Everything is fsynced before it returns.\n\n" +
			"Example:\n  stela backup --data-dir ./.stela --to ./backups/$(date +%F)",
		flags: func(fs *flag.FlagSet, e *Env) func(context.Context, []string) error {
			var dataDir, to string
			fs.StringVar(&dataDir, "data-dir", ".stela", "the embedded store's directory (stela dev --data-dir)")
			fs.StringVar(&to, "to", "", "the directory to write the copy into (required; absent or empty)")
			return func(ctx context.Context, _ []string) error {
				if to == "" {
					return usagef("--to is required")
				}
				return runBackup(ctx, e, dataDir, to)
			}
		},
	}
}

func runBackup(ctx context.Context, e *Env, dataDir, to string) error {
	if entries, err := os.ReadDir(to); err == nil && len(entries) > 0 {
		return fmt.Errorf("--to %s is not empty", to)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("--to: %w", err)
	}
	st, _, err := openStore(ctx, e, location{kind: backendEmbedded, dataDir: dataDir, display: dataDir},
		storeOptions{existing: true, durability: sqlite.DurabilityFsync})
	if err != nil {
		return err
	}
	defer closeStore(e, st)
	if err := os.MkdirAll(to, 0o755); err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	src, ok := st.cas.(*cas.Dir)
	if !ok {
		return fmt.Errorf("the embedded store's blobs are not a directory (%T)", st.cas)
	}
	dst, err := cas.NewDir(filepath.Join(to, "blobs"))
	if err != nil {
		return err
	}
	start := time.Now()
	// The blobs, the snapshot, the blobs written since: a blob the
	// snapshot refers to existed at one of the two passes (blobs are
	// written before the deployments that name them, and gc deletes only
	// blobs nothing refers to).
	before, err := copyBlobs(ctx, src, dst)
	if err != nil {
		return err
	}
	if err := st.sqlite.Backup(ctx, filepath.Join(to, "stela.db")); err != nil {
		return err
	}
	after, err := copyBlobs(ctx, src, dst)
	if err != nil {
		return err
	}
	info, err := os.Stat(filepath.Join(to, "stela.db"))
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "backed up %s to %s in %s: stela.db %d bytes (one snapshot), %d blobs\n",
		dataDir, to, time.Since(start).Round(time.Millisecond), info.Size(), before+after)
	return nil
}

// copyBlobs copies the blobs of src that dst lacks (each verified against
// its digest as it is written) and returns how many it copied.
func copyBlobs(ctx context.Context, src, dst *cas.Dir) (int, error) {
	var digests []core.ContentDigest
	if err := src.List(ctx, func(d core.ContentDigest, _ int64) error {
		digests = append(digests, d)
		return nil
	}); err != nil {
		return 0, fmt.Errorf("list blobs: %w", err)
	}
	n := 0
	for _, d := range digests {
		if ok, err := dst.ContainsBlob(ctx, d); err != nil || ok {
			if err != nil {
				return n, err
			}
			continue
		}
		r, size, err := src.Open(ctx, d)
		if errors.Is(err, core.ErrNotFound) {
			continue // collected (gc_orphan_files) since it was listed
		}
		if err != nil {
			return n, fmt.Errorf("read blob %s: %w", d, err)
		}
		err = dst.PutBlob(ctx, d, r, size)
		if cerr := r.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return n, fmt.Errorf("copy blob %s: %w", d, err)
		}
		n++
	}
	return n, nil
}
