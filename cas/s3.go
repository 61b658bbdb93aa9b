package cas

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"

	"github.com/stela-dev/stela/core"
)

// S3API is the subset of *s3.Client that S3 uses. Pass an *s3.Client, or a
// fake in unit tests.
type S3API interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, optFns ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	// CopyObject refreshes the modification time of a blob that is written
	// again (a copy of the object onto itself).
	CopyObject(ctx context.Context, in *s3.CopyObjectInput, optFns ...func(*s3.Options)) (*s3.CopyObjectOutput, error)
}

// S3 is a Store on an S3 bucket. Blob d lives at key
// "<prefix>sha256/<64 lower-case hex digits of d>". It is safe for
// concurrent use.
type S3 struct {
	client S3API
	bucket string
	prefix string
}

var _ Store = (*S3)(nil)

// NewS3 returns a store over bucket whose keys start with prefix (use "" or
// a string ending in "/", e.g. "cas/").
func NewS3(client S3API, bucket, prefix string) *S3 {
	return &S3{client: client, bucket: bucket, prefix: prefix}
}

// NewS3FromConfig builds an S3 client from cfg with path-style addressing
// (which emulators on localhost need and AWS accepts) and returns NewS3 over
// it. The endpoint comes from cfg, e.g. AWS_ENDPOINT_URL_S3.
func NewS3FromConfig(cfg aws.Config, bucket, prefix string) *S3 {
	client := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
	return NewS3(client, bucket, prefix)
}

// Key returns the object key of blob d.
func (s *S3) Key(d core.ContentDigest) string { return s.prefix + "sha256/" + keyHex(d) }

// WriteBlob stores data under its SHA-256 unless it is already there and
// returns the digest (core.Cas).
func (s *S3) WriteBlob(ctx context.Context, data []byte) (core.ContentDigest, error) {
	d := core.ContentDigestOf(data)
	const attempts = 5
	for i := 0; ; i++ {
		existed, err := s.put(ctx, d, bytes.NewReader(data), int64(len(data)))
		if err != nil && (!errors.Is(err, errConditionalConflict) || i == attempts-1) {
			// S3 may answer 412 and reset the connection mid-upload, which
			// the transport reports as a write error (see PutBlob).
			if ok, herr := s.ContainsBlob(ctx, d); herr != nil || !ok {
				return core.ContentDigest{}, fmt.Errorf("s3 cas: write %s: %w", d, err)
			}
			existed, err = true, nil
		}
		if err == nil {
			if !existed {
				return d, nil
			}
			// Already stored: refresh its modification time. If it was
			// deleted meanwhile (garbage collection), upload it again.
			terr := s.touch(ctx, d)
			if terr == nil {
				return d, nil
			}
			if !errors.Is(terr, core.ErrNotFound) || i == attempts-1 {
				return core.ContentDigest{}, fmt.Errorf("s3 cas: write %s: %w", d, terr)
			}
			continue
		}
		t := time.NewTimer(time.Duration(50<<i) * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return core.ContentDigest{}, fmt.Errorf("s3 cas: write %s: %w", d, ctx.Err())
		case <-t.C:
		}
	}
}

// PutBlob streams size bytes from r to the object of the declared digest
// (see Store.PutBlob). Three checks keep a wrong blob out: the bytes are
// hashed while they stream and the final chunk is withheld unless they match,
// so the request never completes; the request carries x-amz-checksum-sha256
// and a signed payload hash equal to the digest, so AWS itself rejects
// mismatching bytes. The body is not seekable, so the SDK does not retry a
// failed upload; the caller may.
func (s *S3) PutBlob(ctx context.Context, d core.ContentDigest, r io.Reader, size int64) error {
	what := "put " + d.String()
	if size < 0 {
		return fmt.Errorf("s3 cas: %s: negative size %d: %w", what, size, core.ErrValidation)
	}
	v := newVerifier(r, d, size, core.ErrValidation, what)
	if size == 0 {
		// The transport may not read an empty body at all: verify first.
		if err := v.drain(); err != nil {
			return fmt.Errorf("s3 cas: %w", err)
		}
		existed, err := s.put(ctx, d, bytes.NewReader(nil), 0)
		if err == nil && existed {
			if err = s.touch(ctx, d); errors.Is(err, core.ErrNotFound) {
				_, err = s.put(ctx, d, bytes.NewReader(nil), 0)
			}
		}
		return s.wrapPut(d, err)
	}
	// body is a bare io.Reader (no Seek), so the SDK reads it at most once
	// and cannot retry; retries are off so a failure reports its cause. The
	// transport may still be reading body after PutObject returns (S3 can
	// answer before the upload ends); detach cuts it off so v is ours again.
	body := &detachableReader{r: v}
	existed, err := s.put(ctx, d, body, size, func(o *s3.Options) { o.Retryer = aws.NopRetryer{} })
	body.detach()
	if v.err != nil && errors.Is(v.err, core.ErrValidation) {
		return fmt.Errorf("s3 cas: %w", v.err)
	}
	// From here on the caller's bytes matched as far as they were read;
	// wherever the upload ended early, read the rest to check them all.
	switch {
	case err == nil && !existed:
		return s.drained(v)
	case err == nil:
		// 412 (already stored), possibly before the whole body was sent.
		return s.touchDrained(ctx, d, v)
	case errors.Is(err, errConditionalConflict):
		if derr := s.drained(v); derr != nil {
			return derr
		}
		return fmt.Errorf("s3 cas: %s: a concurrent upload of the same blob is in progress, retry: %w", what, core.ErrConflict)
	}
	// S3 may answer 412 and close the connection while the body is still
	// being sent; the transport then reports a write error instead of the
	// answer. If the blob is there, this put has nothing left to do.
	if ok, herr := s.ContainsBlob(ctx, d); herr == nil && ok {
		return s.touchDrained(ctx, d, v)
	}
	return s.wrapPut(d, err)
}

// touchDrained refreshes the modification time of the existing blob d and
// reads the rest of the caller's stream through v. A blob deleted before it
// could be refreshed is core.ErrConflict: the stream cannot be replayed, so
// the caller must retry.
func (s *S3) touchDrained(ctx context.Context, d core.ContentDigest, v *verifier) error {
	terr := s.touch(ctx, d)
	if err := s.drained(v); err != nil {
		return err
	}
	if errors.Is(terr, core.ErrNotFound) {
		return fmt.Errorf("s3 cas: put %s: the blob was deleted while being written again, retry: %w", d, core.ErrConflict)
	}
	return terr
}

// touch refreshes the modification time (LastModified) of an existing blob
// by copying the object onto itself with fresh metadata, so that a blob that
// is written again gets a new garbage-collection grace period. An absent
// blob gives an error wrapping core.ErrNotFound.
func (s *S3) touch(ctx context.Context, d core.ContentDigest) error {
	key := s.Key(d)
	_, err := s.client.CopyObject(ctx, &s3.CopyObjectInput{
		Bucket:            aws.String(s.bucket),
		Key:               aws.String(key),
		CopySource:        aws.String(url.PathEscape(s.bucket) + "/" + escapeKey(key)),
		MetadataDirective: types.MetadataDirectiveReplace,
		Metadata:          map[string]string{"stela-written": time.Now().UTC().Format(time.RFC3339Nano)},
		ContentType:       aws.String("application/octet-stream"),
	})
	switch {
	case err == nil:
		return nil
	case isNotFound(err):
		return fmt.Errorf("s3 cas: refresh %s: %w: %w", d, core.ErrNotFound, err)
	case isAccessDenied(err):
		// A bucket or IAM policy that only allows writes with If-None-Match
		// forbids the copy: the blob keeps its old LastModified and only the
		// garbage collector's checks protect it (see the package doc).
		return nil
	}
	return fmt.Errorf("s3 cas: refresh %s: %w", d, err)
}

// isAccessDenied: 403 AccessDenied.
func isAccessDenied(err error) bool {
	return apiCode(err) == "AccessDenied" || httpStatus(err) == http.StatusForbidden
}

// escapeKey URL-encodes each segment of an object key (CopySource).
func escapeKey(key string) string {
	parts := strings.Split(key, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// drained reads the rest of the caller's stream through v.
func (s *S3) drained(v *verifier) error {
	if err := v.drain(); err != nil {
		return fmt.Errorf("s3 cas: %w", err)
	}
	return nil
}

// detachableReader passes reads through until detach, after which reads
// fail and the underlying reader is no longer touched.
type detachableReader struct {
	mu       sync.Mutex
	r        io.Reader
	detached bool
}

var errDetached = errors.New("cas: upload body read after the request ended")

func (d *detachableReader) Read(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.detached {
		return 0, errDetached
	}
	return d.r.Read(p)
}

func (d *detachableReader) detach() {
	d.mu.Lock()
	d.detached = true
	d.mu.Unlock()
}

func (s *S3) wrapPut(d core.ContentDigest, err error) error {
	if err != nil {
		return fmt.Errorf("s3 cas: put %s: %w", d, err)
	}
	return nil
}

// errConditionalConflict marks S3's 409 ConditionalRequestConflict: another
// conditional write of the same key is in flight.
var errConditionalConflict = errors.New("conditional request conflict")

// put uploads body with If-None-Match: * so an existing blob is never
// overwritten; 412 PreconditionFailed means it is already stored and counts
// as success with existed set.
func (s *S3) put(ctx context.Context, d core.ContentDigest, body io.Reader, size int64, optFns ...func(*s3.Options)) (existed bool, err error) {
	in := &s3.PutObjectInput{
		Bucket:            aws.String(s.bucket),
		Key:               aws.String(s.Key(d)),
		Body:              body,
		ContentLength:     aws.Int64(size),
		ContentType:       aws.String("application/octet-stream"),
		IfNoneMatch:       aws.String("*"),
		ChecksumAlgorithm: types.ChecksumAlgorithmSha256,
		ChecksumSHA256:    aws.String(base64.StdEncoding.EncodeToString(d.Digest[:])),
	}
	_, err = s.client.PutObject(ctx, in, append(optFns, withSignedPayloadHash(keyHex(d)))...)
	switch {
	case err == nil:
		return false, nil
	case isAlreadyExists(err):
		return true, nil
	case isConditionalConflict(err):
		return false, fmt.Errorf("%w: %w", errConditionalConflict, err)
	}
	return false, err
}

// withSignedPayloadHash makes SigV4 sign the payload with the declared
// SHA-256 (hex) instead of hashing the body itself, which would need a
// seekable body over plain HTTP and a second pass over it. AWS verifies
// the signed hash against the bytes it receives.
func withSignedPayloadHash(hexSum string) func(*s3.Options) {
	return func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Finalize.Insert(middleware.FinalizeMiddlewareFunc("StelaDeclaredPayloadHash",
				func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (
					middleware.FinalizeOutput, middleware.Metadata, error,
				) {
					return next.HandleFinalize(v4.SetPayloadHash(ctx, hexSum), in)
				}), "ComputePayloadHash", middleware.Before)
		})
	}
}

// ReadBlob returns the blob's bytes after checking they hash to d (core.Cas).
// A missing blob gives an error wrapping core.ErrNotFound, a corrupt one an
// error wrapping ErrCorrupt.
func (s *S3) ReadBlob(ctx context.Context, d core.ContentDigest) ([]byte, error) {
	out, err := s.get(ctx, d)
	if err != nil {
		return nil, err
	}
	defer out.Body.Close()
	size := aws.ToInt64(out.ContentLength)
	if out.ContentLength == nil {
		// Not sent by S3 for a plain GET, but do not trust a missing length.
		b, err := io.ReadAll(out.Body)
		if err != nil {
			return nil, fmt.Errorf("s3 cas: read %s: %w", d, err)
		}
		if got := core.ContentDigestOf(b); got != d {
			return nil, fmt.Errorf("s3 cas: read %s: content hashes to %s: %w", d, got, ErrCorrupt)
		}
		return b, nil
	}
	b, err := readVerified(out.Body, d, size, "read "+d.String())
	if err != nil {
		return nil, fmt.Errorf("s3 cas: %w", err)
	}
	return b, nil
}

// Open streams the blob (see Store.Open).
func (s *S3) Open(ctx context.Context, d core.ContentDigest) (io.ReadCloser, int64, error) {
	out, err := s.get(ctx, d)
	if err != nil {
		return nil, 0, err
	}
	if out.ContentLength == nil {
		out.Body.Close()
		return nil, 0, fmt.Errorf("s3 cas: open %s: response has no Content-Length", d)
	}
	size := *out.ContentLength
	return verifyingReadCloser{newVerifier(out.Body, d, size, ErrCorrupt, "read "+d.String()), out.Body}, size, nil
}

func (s *S3) get(ctx context.Context, d core.ContentDigest) (*s3.GetObjectOutput, error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.Key(d))},
		withoutResponseChecksum)
	if err != nil {
		if isNotFound(err) {
			return nil, fmt.Errorf("s3 cas: read %s: %w: %w", d, core.ErrNotFound, err)
		}
		return nil, fmt.Errorf("s3 cas: read %s: %w", d, err)
	}
	return out, nil
}

// withoutResponseChecksum turns off the SDK's own check of the checksum S3
// stored with the object: the key is the expected SHA-256, which readers
// verify themselves (a stronger check, since the stored checksum travels with
// the bytes), and a second hash pass would only cost CPU and report
// corruption with an error that does not wrap ErrCorrupt.
func withoutResponseChecksum(o *s3.Options) {
	o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
}

// ContainsBlob reports whether the blob exists (core.Cas).
func (s *S3) ContainsBlob(ctx context.Context, d core.ContentDigest) (bool, error) {
	_, err := s.Size(ctx, d)
	if errors.Is(err, core.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Size returns the blob's length (see Store.Size).
func (s *S3) Size(ctx context.Context, d core.ContentDigest) (int64, error) {
	bi, err := s.Stat(ctx, d)
	return bi.Size, err
}

// Stat returns the blob's size and LastModified (see Store.Stat).
func (s *S3) Stat(ctx context.Context, d core.ContentDigest) (BlobInfo, error) {
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.Key(d))})
	if err != nil {
		if isNotFound(err) {
			return BlobInfo{}, fmt.Errorf("s3 cas: head %s: %w: %w", d, core.ErrNotFound, err)
		}
		return BlobInfo{}, fmt.Errorf("s3 cas: head %s: %w", d, err)
	}
	return BlobInfo{Digest: d, Size: aws.ToInt64(out.ContentLength), ModTime: aws.ToTime(out.LastModified)}, nil
}

// Delete removes the blob (see Store.Delete).
func (s *S3) Delete(ctx context.Context, d core.ContentDigest) error {
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.Key(d))})
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("s3 cas: delete %s: %w", d, err)
	}
	return nil
}

// List calls fn for every blob under the prefix, in ascending digest order
// (see Store.List). Keys under "<prefix>sha256/" that are not 64 lower-case
// hex digits are not blobs of this store and are skipped.
func (s *S3) List(ctx context.Context, fn func(core.ContentDigest, int64) error) error {
	return s.ListInfo(ctx, func(bi BlobInfo) error { return fn(bi.Digest, bi.Size) })
}

// ListInfo calls fn for every blob with its size and LastModified, in
// ascending digest order (see Store.ListInfo).
func (s *S3) ListInfo(ctx context.Context, fn func(BlobInfo) error) error {
	keyPrefix := s.prefix + "sha256/"
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{
		Bucket: aws.String(s.bucket),
		Prefix: aws.String(keyPrefix),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("s3 cas: list %s: %w", keyPrefix, err)
		}
		for _, obj := range page.Contents {
			d, ok := parseKeyHex(strings.TrimPrefix(aws.ToString(obj.Key), keyPrefix))
			if !ok {
				continue
			}
			if err := fn(BlobInfo{Digest: d, Size: aws.ToInt64(obj.Size), ModTime: aws.ToTime(obj.LastModified)}); err != nil {
				return err
			}
		}
	}
	return nil
}

// --- error classification ---------------------------------------------------

func httpStatus(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// isNotFound: NoSuchKey (GET), NotFound or a bare 404 (HEAD, whose response
// has no body to name the error). NoSuchBucket is a configuration error, not
// a missing blob.
func isNotFound(err error) bool {
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	if errors.As(err, &nsk) || errors.As(err, &nf) {
		return true
	}
	code := apiCode(err)
	if code == "NoSuchBucket" {
		return false
	}
	return code == "NoSuchKey" || code == "NotFound" || httpStatus(err) == http.StatusNotFound
}

// isAlreadyExists: the If-None-Match: * precondition failed because the key
// exists. Some S3-compatible servers phrase it as "already exists".
func isAlreadyExists(err error) bool {
	if apiCode(err) == "PreconditionFailed" || httpStatus(err) == http.StatusPreconditionFailed {
		return true
	}
	var ae smithy.APIError
	return errors.As(err, &ae) && strings.Contains(strings.ToLower(ae.ErrorMessage()), "already exists")
}

func isConditionalConflict(err error) bool {
	return apiCode(err) == "ConditionalRequestConflict"
}
