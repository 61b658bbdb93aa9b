package cas

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/stela-dev/stela/core"
)

// Dir is a Store in a local directory, the embedded default. Blob d lives
// in the file "<root>/sha256/<first 2 hex digits>/<64 hex digits>", written
// to a temporary file in the same directory, fsynced, then linked into place
// so that a blob file is either absent or complete. Blob files are read-only
// (0444). It is safe for concurrent use, also by several processes.
type Dir struct {
	root string
}

var _ Store = (*Dir)(nil)

// tmpPrefix starts the names of in-progress writes; List ignores them.
const tmpPrefix = ".tmp-"

// NewDir returns a store rooted at root, creating the directory if needed.
func NewDir(root string) (*Dir, error) {
	if err := os.MkdirAll(filepath.Join(root, "sha256"), 0o755); err != nil {
		return nil, fmt.Errorf("dir cas: create %s: %w", root, err)
	}
	return &Dir{root: root}, nil
}

// Path returns the file that holds blob d.
func (s *Dir) Path(d core.ContentDigest) string {
	h := keyHex(d)
	return filepath.Join(s.root, "sha256", h[:2], h)
}

// WriteBlob stores data under its SHA-256 unless it is already there and
// returns the digest (core.Cas).
func (s *Dir) WriteBlob(ctx context.Context, data []byte) (core.ContentDigest, error) {
	d := core.ContentDigestOf(data)
	if err := s.PutBlob(ctx, d, bytes.NewReader(data), int64(len(data))); err != nil {
		return core.ContentDigest{}, err
	}
	return d, nil
}

// PutBlob streams size bytes from r into the file of the declared digest
// (see Store.PutBlob). The temporary file is removed unless the bytes match.
func (s *Dir) PutBlob(ctx context.Context, d core.ContentDigest, r io.Reader, size int64) (err error) {
	what := "put " + d.String()
	if size < 0 {
		return fmt.Errorf("dir cas: %s: negative size %d: %w", what, size, core.ErrValidation)
	}
	v := newVerifier(ctxReader{ctx, r}, d, size, core.ErrValidation, what)
	final := s.Path(d)
	now := time.Now()
	switch err := os.Chtimes(final, now, now); {
	case err == nil:
		// Already stored: never rewrite it, but refresh its modification
		// time (the garbage collector's grace period starts again) and
		// still check the caller's bytes.
		if err := v.drain(); err != nil {
			return fmt.Errorf("dir cas: %w", err)
		}
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("dir cas: %s: refresh modification time: %w", what, err)
	}
	dir := filepath.Dir(final)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("dir cas: %s: %w", what, err)
	}
	f, err := os.CreateTemp(dir, tmpPrefix+"*")
	if err != nil {
		return fmt.Errorf("dir cas: %s: %w", what, err)
	}
	tmp := f.Name()
	defer func() {
		if f != nil {
			f.Close()
		}
		// After a successful link the temp name is a second link to the blob;
		// after a failure it is the partial file. Either way it goes.
		if rmErr := os.Remove(tmp); rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) && err == nil {
			err = fmt.Errorf("dir cas: %s: remove temp file: %w", what, rmErr)
		}
	}()
	if _, err := io.Copy(f, v); err != nil {
		return fmt.Errorf("dir cas: %w", err)
	}
	if err := v.finish(); err != nil {
		return fmt.Errorf("dir cas: %w", err)
	}
	if err := f.Chmod(0o444); err != nil {
		return fmt.Errorf("dir cas: %s: %w", what, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("dir cas: %s: fsync: %w", what, err)
	}
	cerr := f.Close()
	f = nil
	if cerr != nil {
		return fmt.Errorf("dir cas: %s: close: %w", what, cerr)
	}
	// link fails if the blob appeared meanwhile, so an existing file is never
	// replaced; rename is the fallback for file systems without hard links.
	if err := os.Link(tmp, final); err != nil && !errors.Is(err, fs.ErrExist) {
		if err := os.Rename(tmp, final); err != nil {
			return fmt.Errorf("dir cas: %s: %w", what, err)
		}
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("dir cas: %s: %w", what, err)
	}
	return nil
}

// syncDir makes a new directory entry durable.
func syncDir(dir string) error {
	df, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := df.Sync(); err != nil {
		df.Close()
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	return df.Close()
}

// ctxReader stops a long copy once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// ReadBlob returns the blob's bytes after checking they hash to d (core.Cas).
// A missing blob gives an error wrapping core.ErrNotFound, a corrupt one an
// error wrapping ErrCorrupt.
func (s *Dir) ReadBlob(ctx context.Context, d core.ContentDigest) ([]byte, error) {
	f, size, err := s.open(d)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := readVerified(ctxReader{ctx, f}, d, size, "read "+d.String())
	if err != nil {
		return nil, fmt.Errorf("dir cas: %w", err)
	}
	return b, nil
}

// Open streams the blob (see Store.Open).
func (s *Dir) Open(ctx context.Context, d core.ContentDigest) (io.ReadCloser, int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, fmt.Errorf("dir cas: open %s: %w", d, err)
	}
	f, size, err := s.open(d)
	if err != nil {
		return nil, 0, err
	}
	return verifyingReadCloser{newVerifier(f, d, size, ErrCorrupt, "read "+d.String()), f}, size, nil
}

func (s *Dir) open(d core.ContentDigest) (*os.File, int64, error) {
	f, err := os.Open(s.Path(d))
	if err != nil {
		return nil, 0, fmt.Errorf("dir cas: read %s: %w", d, notFound(err))
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("dir cas: read %s: %w", d, err)
	}
	return f, fi.Size(), nil
}

// notFound adds core.ErrNotFound to a missing-file error.
func notFound(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %w", core.ErrNotFound, err)
	}
	return err
}

// ContainsBlob reports whether the blob exists (core.Cas).
func (s *Dir) ContainsBlob(ctx context.Context, d core.ContentDigest) (bool, error) {
	_, err := s.Size(ctx, d)
	if errors.Is(err, core.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Size returns the blob's length (see Store.Size).
func (s *Dir) Size(ctx context.Context, d core.ContentDigest) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("dir cas: stat %s: %w", d, err)
	}
	fi, err := os.Stat(s.Path(d))
	if err != nil {
		return 0, fmt.Errorf("dir cas: stat %s: %w", d, notFound(err))
	}
	return fi.Size(), nil
}

// Delete removes the blob (see Store.Delete).
func (s *Dir) Delete(ctx context.Context, d core.ContentDigest) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("dir cas: delete %s: %w", d, err)
	}
	if err := os.Remove(s.Path(d)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("dir cas: delete %s: %w", d, err)
	}
	return nil
}

// List calls fn for every blob, in ascending digest order (see Store.List).
// Temporary files and other names that are not blob files are skipped.
func (s *Dir) List(ctx context.Context, fn func(core.ContentDigest, int64) error) error {
	return s.ListInfo(ctx, func(bi BlobInfo) error { return fn(bi.Digest, bi.Size) })
}

// ListInfo calls fn for every blob with its size and modification time, in
// ascending digest order (see Store.ListInfo).
func (s *Dir) ListInfo(ctx context.Context, fn func(BlobInfo) error) error {
	base := filepath.Join(s.root, "sha256")
	subs, err := os.ReadDir(base)
	if err != nil {
		return fmt.Errorf("dir cas: list: %w", err)
	}
	for _, sub := range subs {
		if !sub.IsDir() || len(sub.Name()) != 2 {
			continue
		}
		entries, err := os.ReadDir(filepath.Join(base, sub.Name()))
		if err != nil {
			return fmt.Errorf("dir cas: list: %w", err)
		}
		for _, e := range entries {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("dir cas: list: %w", err)
			}
			d, ok := parseKeyHex(e.Name())
			if !ok || !e.Type().IsRegular() || !strings.HasPrefix(e.Name(), sub.Name()) {
				continue
			}
			fi, err := e.Info()
			if errors.Is(err, fs.ErrNotExist) {
				continue // deleted since ReadDir
			}
			if err != nil {
				return fmt.Errorf("dir cas: list: %w", err)
			}
			if err := fn(BlobInfo{Digest: d, Size: fi.Size(), ModTime: fi.ModTime()}); err != nil {
				return err
			}
		}
	}
	return nil
}

// Stat returns the blob's size and modification time (see Store.Stat).
func (s *Dir) Stat(ctx context.Context, d core.ContentDigest) (BlobInfo, error) {
	if err := ctx.Err(); err != nil {
		return BlobInfo{}, fmt.Errorf("dir cas: stat %s: %w", d, err)
	}
	fi, err := os.Stat(s.Path(d))
	if err != nil {
		return BlobInfo{}, fmt.Errorf("dir cas: stat %s: %w", d, notFound(err))
	}
	return BlobInfo{Digest: d, Size: fi.Size(), ModTime: fi.ModTime()}, nil
}
