package cas_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/stela-dev/stela/cas"
	"github.com/stela-dev/stela/core"
)

// fakePut is an S3API whose PutObject answers from a script and records how
// much of each body it read.
type fakePut struct {
	cas.S3API
	answers  []error // one per call; nil = read the whole body and succeed
	readBody bool    // whether a failing answer reads the body first
	calls    int
	copies   int
	copyErr  error
}

// CopyObject is the refresh of a blob that already exists: it answers
// copyErr (nil = success).
func (f *fakePut) CopyObject(context.Context, *s3.CopyObjectInput, ...func(*s3.Options)) (*s3.CopyObjectOutput, error) {
	f.copies++
	if f.copyErr != nil {
		return nil, f.copyErr
	}
	return &s3.CopyObjectOutput{}, nil
}

func TestS3RefreshOfAStoredBlob(t *testing.T) {
	data := []byte("stored before")
	d := core.ContentDigestOf(data)
	t.Run("CopiesTheObjectOntoItself", func(t *testing.T) {
		f := &fakePut{answers: []error{errPrecondition}}
		if got, err := cas.NewS3(f, "b", "").WriteBlob(t.Context(), data); err != nil || got != d {
			t.Fatalf("WriteBlob=%s, %v", got, err)
		}
		if f.copies != 1 {
			t.Fatalf("CopyObject calls=%d, want 1", f.copies)
		}
	})
	t.Run("ForbiddenRefreshStillSucceeds", func(t *testing.T) {
		f := &fakePut{answers: []error{errPrecondition}, copyErr: &smithy.GenericAPIError{Code: "AccessDenied", Message: "Access Denied"}}
		if got, err := cas.NewS3(f, "b", "").WriteBlob(t.Context(), data); err != nil || got != d {
			t.Fatalf("WriteBlob=%s, %v, want success without the refresh", got, err)
		}
	})
	t.Run("BlobDeletedBeforeTheRefreshIsUploadedAgain", func(t *testing.T) {
		f := &fakePut{answers: []error{errPrecondition, nil}, copyErr: &smithy.GenericAPIError{Code: "NoSuchKey", Message: "gone"}}
		if got, err := cas.NewS3(f, "b", "").WriteBlob(t.Context(), data); err != nil || got != d {
			t.Fatalf("WriteBlob=%s, %v", got, err)
		}
		if f.calls != 2 {
			t.Fatalf("PutObject calls=%d, want 2 (the upload after the blob vanished)", f.calls)
		}
	})
}

func (f *fakePut) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	var err error
	if f.calls < len(f.answers) {
		err = f.answers[f.calls]
	}
	f.calls++
	if err == nil || f.readBody {
		if _, rerr := io.Copy(io.Discard, in.Body); rerr != nil {
			return nil, rerr
		}
	}
	if err != nil {
		return nil, err
	}
	return &s3.PutObjectOutput{}, nil
}

var (
	errPrecondition = &smithy.GenericAPIError{Code: "PreconditionFailed", Message: "At least one of the pre-conditions you specified did not hold"}
	errCondConflict = &smithy.GenericAPIError{Code: "ConditionalRequestConflict", Message: "conflicting conditional operation"}
)

func TestS3PutBlobVerifiesCallerBytesWhenS3AnswersAlreadyExistsEarly(t *testing.T) {
	data := []byte("stored long ago")
	d := core.ContentDigestOf(data)

	t.Run("MatchingBytesSucceed", func(t *testing.T) {
		s := cas.NewS3(&fakePut{answers: []error{errPrecondition}}, "b", "")
		if err := s.PutBlob(t.Context(), d, bytes.NewReader(data), int64(len(data))); err != nil {
			t.Fatalf("PutBlob: %v", err)
		}
	})
	t.Run("WrongBytesAreValidationError", func(t *testing.T) {
		s := cas.NewS3(&fakePut{answers: []error{errPrecondition}}, "b", "")
		bad := []byte("stored long agO")
		if err := s.PutBlob(t.Context(), d, bytes.NewReader(bad), int64(len(bad))); !errors.Is(err, core.ErrValidation) {
			t.Fatalf("PutBlob err=%v, want ErrValidation", err)
		}
	})
}

func TestS3ConditionalRequestConflict(t *testing.T) {
	data := []byte("contended")
	d := core.ContentDigestOf(data)

	t.Run("WriteBlobRetriesUntilThePutSettles", func(t *testing.T) {
		f := &fakePut{answers: []error{errCondConflict, errCondConflict, errPrecondition}, readBody: true}
		got, err := cas.NewS3(f, "b", "").WriteBlob(t.Context(), data)
		if err != nil || got != d {
			t.Fatalf("WriteBlob=%s, %v, want %s, nil", got, err, d)
		}
		if f.calls != 3 {
			t.Fatalf("PutObject calls=%d, want 3", f.calls)
		}
	})
	t.Run("PutBlobReportsConflict", func(t *testing.T) {
		f := &fakePut{answers: []error{errCondConflict}, readBody: true}
		err := cas.NewS3(f, "b", "").PutBlob(t.Context(), d, bytes.NewReader(data), int64(len(data)))
		if !errors.Is(err, core.ErrConflict) {
			t.Fatalf("PutBlob err=%v, want ErrConflict", err)
		}
	})
}

// TestS3PutRequestCarriesTheDigest pins what AWS needs to reject a wrong
// upload and an overwrite on its side: the emulator does not check these
// headers, so the test inspects them on the wire.
func TestS3PutRequestCarriesTheDigest(t *testing.T) {
	var mu sync.Mutex
	var puts []http.Header
	fake := gofakes3.New(s3mem.New(), gofakes3.WithAutoBucket(true)).Server()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/sha256/") && r.Header.Get("X-Amz-Copy-Source") == "" {
			mu.Lock()
			puts = append(puts, r.Header.Clone())
			mu.Unlock()
		}
		fake.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	cfg := aws.Config{
		Region: "us-east-1",
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "test", SecretAccessKey: "test"}, nil
		}),
		BaseEndpoint: aws.String(ts.URL),
	}
	s := cas.NewS3FromConfig(cfg, "headers", "p/")

	data := []byte("on the wire")
	d := core.ContentDigestOf(data)
	if _, err := s.WriteBlob(t.Context(), data); err != nil {
		t.Fatalf("WriteBlob: %v", err)
	}
	if err := s.PutBlob(t.Context(), d, io.MultiReader(bytes.NewReader(data)), int64(len(data))); err != nil {
		t.Fatalf("PutBlob: %v", err)
	}
	if len(puts) != 2 {
		t.Fatalf("saw %d PUTs of blobs, want 2", len(puts))
	}
	want := map[string]string{
		"If-None-Match":         "*",
		"X-Amz-Checksum-Sha256": base64.StdEncoding.EncodeToString(d.Digest[:]),
		"X-Amz-Content-Sha256":  hex.EncodeToString(d.Digest[:]),
		"Content-Length":        "11",
	}
	for i, h := range puts {
		for k, v := range want {
			if got := h.Get(k); got != v {
				t.Errorf("PUT %d: %s=%q, want %q", i, k, got, v)
			}
		}
	}
}

// TestS3PutBlobOverHTTPWhenServerAnswers412Early runs the early-answer path
// through the real SDK transport: the blob exists and the server rejects the
// PUT with 412 without reading the body. The transport may still be reading
// the body when PutObject returns (run with -race), and often reports the
// reset connection instead of the 412.
func TestS3PutBlobOverHTTPWhenServerAnswers412Early(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead { // the blob exists
			w.Header().Set("Content-Length", "4194304")
			return
		}
		if r.Header.Get("X-Amz-Copy-Source") != "" { // the refresh of the existing blob
			w.Header().Set("Content-Type", "application/xml")
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><CopyObjectResult><ETag>"x"</ETag></CopyObjectResult>`)
			return
		}
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusPreconditionFailed)
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>PreconditionFailed</Code>`+
			`<Message>At least one of the pre-conditions you specified did not hold</Message></Error>`)
	}))
	t.Cleanup(ts.Close)
	cfg := aws.Config{
		Region: "us-east-1",
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "test", SecretAccessKey: "test"}, nil
		}),
		BaseEndpoint: aws.String(ts.URL),
	}
	s := cas.NewS3FromConfig(cfg, "early", "")
	const size = 4 << 20
	data := genBytes(5, size)
	d := core.ContentDigestOf(data)

	if err := s.PutBlob(t.Context(), d, bytes.NewReader(data), size); err != nil {
		t.Fatalf("PutBlob of matching bytes: %v", err)
	}
	if got, err := s.WriteBlob(t.Context(), data); err != nil || got != d {
		t.Fatalf("WriteBlob=%s, %v, want %s, nil", got, err, d)
	}
	bad := bytes.Clone(data)
	bad[size-1] ^= 1
	if err := s.PutBlob(t.Context(), d, bytes.NewReader(bad), size); !errors.Is(err, core.ErrValidation) {
		t.Fatalf("PutBlob of wrong bytes err=%v, want ErrValidation", err)
	}
	small := []byte("small body")
	if err := s.PutBlob(t.Context(), core.ContentDigestOf([]byte("other")), bytes.NewReader(small), int64(len(small))); !errors.Is(err, core.ErrValidation) {
		t.Fatalf("PutBlob of wrong small bytes err=%v, want ErrValidation", err)
	}
}
