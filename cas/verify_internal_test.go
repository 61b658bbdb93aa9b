package cas

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/stela-dev/stela/core"
)

// TestVerifierWithholdsTheFinalByteOfAWrongBlob checks the property the S3
// upload relies on: a consumer of a mismatching stream never receives size
// bytes, so an HTTP request with Content-Length: size cannot complete.
func TestVerifierWithholdsTheFinalByteOfAWrongBlob(t *testing.T) {
	good := []byte("0123456789")
	bad := []byte("012345678X")
	d := core.ContentDigestOf(good)
	for _, c := range []struct {
		name    string
		body    []byte
		size    int64
		wantErr bool
	}{
		{"Matching", good, 10, false},
		{"LastByteDiffers", bad, 10, true},
		{"Short", good[:9], 10, true},
		{"Long", append(bytes.Clone(good), '!'), 10, true},
	} {
		for _, oneByte := range []bool{false, true} {
			name := c.name
			if oneByte {
				name += "/OneByteAtATime"
			}
			t.Run(name, func(t *testing.T) {
				var src io.Reader = bytes.NewReader(c.body)
				if oneByte {
					src = iotest.OneByteReader(src)
				}
				got, err := io.ReadAll(newVerifier(src, d, c.size, core.ErrValidation, "test"))
				if !c.wantErr {
					if err != nil || !bytes.Equal(got, good) {
						t.Fatalf("read %q, %v; want %q, nil", got, err, good)
					}
					return
				}
				if !errors.Is(err, core.ErrValidation) {
					t.Fatalf("err=%v, want ErrValidation", err)
				}
				if int64(len(got)) >= c.size {
					t.Fatalf("consumer received %d bytes, want fewer than %d", len(got), c.size)
				}
			})
		}
	}
}
