package sqlite

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Backup writes a consistent copy of the database, as it was at one
// instant, to path, which must not exist (`stela backup`). It runs VACUUM
// INTO on a connection of its own: one read transaction of the WAL, so the
// writer (in this process or another, such as a running `stela dev`) and
// the readers go on meanwhile, and the copy holds every commit before that
// instant and none after. SQLite neither fsyncs nor names atomically what
// VACUUM INTO writes, so the copy goes to a file beside path, is fsynced,
// then renamed to path and its directory fsynced: an interrupted backup
// leaves no file at path, a completed one survives a power loss. The copy
// is compact (VACUUM), has this build's schema version and opens with Open.
func (b *Backend) Backup(ctx context.Context, path string) error {
	b.closeMu.RLock()
	closed := b.closed
	b.closeMu.RUnlock()
	if closed {
		return errClosed
	}
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("sqlite: backup to %s: the file exists", path)
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("sqlite: backup to %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	var suffix [6]byte
	_, _ = crand.Read(suffix[:])
	tmp := filepath.Join(dir, "."+filepath.Base(path)+".partial-"+hex.EncodeToString(suffix[:]))
	defer os.Remove(tmp)                          // after a failure (renamed away otherwise)
	db, err := openDB(b.dsn(roleCheckpointer), 1) // not query_only: VACUUM INTO writes the copy
	if err != nil {
		return fmt.Errorf("sqlite: backup: %w", err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?", tmp); err != nil {
		return fmt.Errorf("sqlite: backup to %s: %w", path, err)
	}
	if err := fsync(tmp); err != nil {
		return fmt.Errorf("sqlite: backup: fsync the copy: %w", err)
	}
	if err := os.Link(tmp, path); err != nil { // fails if path appeared meanwhile
		return fmt.Errorf("sqlite: backup to %s: %w", path, err)
	}
	if err := os.Remove(tmp); err != nil {
		return fmt.Errorf("sqlite: backup: %w", err)
	}
	if err := fsync(dir); err != nil {
		return fmt.Errorf("sqlite: backup: fsync %s: %w", dir, err)
	}
	return nil
}

// fsync flushes a file or directory to stable storage.
func fsync(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
