package cas

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"time"

	"github.com/stela-dev/stela/core"
)

// Store is the method set shared by every blob store in this package: the
// core.Cas port plus the streaming and maintenance methods that deployment
// upload, list_deployment_files and gc_orphan_files need. Implementations are
// safe for concurrent use.
type Store interface {
	core.Cas

	// PutBlob stores size bytes read from r under the digest the caller
	// declares. The bytes are hashed while they stream; if they do not hash
	// to digest, or r yields more or fewer than size bytes, PutBlob returns
	// an error wrapping core.ErrValidation and nothing is stored under any
	// key. Storing a blob that already exists succeeds (idempotent) and
	// never overwrites it; r is still read to the end and verified.
	PutBlob(ctx context.Context, digest core.ContentDigest, r io.Reader, size int64) error
	// Open streams a blob. The reader returns an error wrapping ErrCorrupt
	// instead of the final bytes if the content does not hash to digest, so
	// a consumer that reads to io.EOF has read verified bytes. The caller
	// must Close it. Returns an error wrapping core.ErrNotFound if absent.
	Open(ctx context.Context, digest core.ContentDigest) (io.ReadCloser, int64, error)
	// Size returns the blob's length in bytes, or an error wrapping
	// core.ErrNotFound if absent.
	Size(ctx context.Context, digest core.ContentDigest) (int64, error)
	// Delete removes a blob. Deleting an absent blob is not an error.
	Delete(ctx context.Context, digest core.ContentDigest) error
	// List calls fn for every stored blob with its size, in ascending digest
	// order. An error from fn stops the listing and is returned unchanged.
	List(ctx context.Context, fn func(core.ContentDigest, int64) error) error
	// ListInfo is List with each blob's BlobInfo (size and modification
	// time), in ascending digest order.
	ListInfo(ctx context.Context, fn func(BlobInfo) error) error
	// Stat returns the blob's BlobInfo, or an error wrapping
	// core.ErrNotFound if absent.
	Stat(ctx context.Context, digest core.ContentDigest) (BlobInfo, error)
}

// BlobInfo describes a stored blob.
type BlobInfo struct {
	Digest core.ContentDigest
	Size   int64
	// ModTime is when the blob was last written: created, or written again
	// while it already existed (WriteBlob and PutBlob refresh it, see
	// "Garbage collection" in the package documentation). It comes from the
	// store's clock (the file system, the S3 service), not from a core.Clock.
	ModTime time.Time
}

// ErrCorrupt is wrapped by read errors when a stored blob does not hash to
// the digest it is stored under. Reads fail closed: corrupt bytes are never
// returned as a blob.
var ErrCorrupt = errors.New("cas: stored blob does not match its digest")

// keyHex returns the lower-case hex of the digest, the name a blob is stored
// under (S3 key suffix, file name).
func keyHex(d core.ContentDigest) string { return hex.EncodeToString(d.Digest[:]) }

// parseKeyHex parses 64 lower-case hex digits (the form keyHex writes).
func parseKeyHex(s string) (core.ContentDigest, bool) {
	var d core.ContentDigest
	if len(s) != 2*len(d.Digest) {
		return d, false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return d, false
		}
	}
	if _, err := hex.Decode(d.Digest[:], []byte(s)); err != nil {
		return d, false
	}
	return d, true
}

// verifier hashes the bytes of a blob of known size as they pass through and
// checks them against the expected digest before it hands out the final
// byte. A consumer that uploads what it reads (an HTTP request body, a temp
// file) therefore never receives a complete wrong blob: the stream fails one
// chunk short of its declared length.
//
// Failures are sticky. mismatch is the sentinel wrapped when the content or
// length is wrong (core.ErrValidation for uploads, ErrCorrupt for reads).
type verifier struct {
	r        io.Reader
	want     core.ContentDigest
	size     int64
	mismatch error
	what     string // context for error messages, e.g. "put sha256:…"

	h        hash.Hash
	n        int64
	finished bool
	err      error
}

func newVerifier(r io.Reader, want core.ContentDigest, size int64, mismatch error, what string) *verifier {
	return &verifier{r: r, want: want, size: size, mismatch: mismatch, what: what, h: sha256.New()}
}

// Read implements io.Reader.
func (v *verifier) Read(p []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	if v.n < v.size {
		if rem := v.size - v.n; int64(len(p)) > rem {
			p = p[:rem]
		}
		n, err := v.r.Read(p)
		v.h.Write(p[:n])
		v.n += int64(n)
		if v.n < v.size {
			switch {
			case errors.Is(err, io.EOF):
				v.err = fmt.Errorf("cas: %s: got %d bytes, want %d: %w", v.what, v.n, v.size, v.mismatch)
				return 0, v.err
			case err != nil:
				v.err = err
				return n, err
			}
			return n, nil
		}
		// The last bytes are in p: verify before handing them out.
		if err := v.finish(); err != nil {
			return 0, err
		}
		return n, nil
	}
	if err := v.finish(); err != nil {
		return 0, err
	}
	return 0, io.EOF
}

// finish checks that the source has no bytes beyond size and that the
// content hashes to the expected digest. It is idempotent.
func (v *verifier) finish() error {
	if v.finished {
		return v.err
	}
	v.finished = true
	var probe [1]byte
	for i := 0; ; i++ {
		n, err := v.r.Read(probe[:])
		if n > 0 {
			v.err = fmt.Errorf("cas: %s: more than %d bytes: %w", v.what, v.size, v.mismatch)
			return v.err
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			v.err = err
			return err
		}
		if i >= 100 {
			v.err = fmt.Errorf("cas: %s: %w", v.what, io.ErrNoProgress)
			return v.err
		}
	}
	var got core.ContentDigest
	v.h.Sum(got.Digest[:0])
	if got != v.want {
		v.err = fmt.Errorf("cas: %s: content hashes to %s: %w", v.what, got, v.mismatch)
		return v.err
	}
	return nil
}

// drain reads the rest of the source through the verifier and reports
// whether the whole stream matched; used when the store stopped reading early
// (e.g. the blob already exists).
func (v *verifier) drain() error {
	if _, err := io.Copy(io.Discard, v); err != nil {
		return err
	}
	return v.err
}

// verifyingReadCloser closes the underlying body of a verifier.
type verifyingReadCloser struct {
	*verifier
	c io.Closer
}

func (v verifyingReadCloser) Close() error { return v.c.Close() }

// readVerified reads a whole blob of the given size from r into one buffer
// and verifies it; corruption is reported with ErrCorrupt.
func readVerified(r io.Reader, d core.ContentDigest, size int64, what string) ([]byte, error) {
	buf := make([]byte, size)
	v := newVerifier(r, d, size, ErrCorrupt, what)
	if _, err := io.ReadFull(v, buf); err != nil {
		return nil, err
	}
	if err := v.finish(); err != nil {
		return nil, err
	}
	return buf, nil
}
