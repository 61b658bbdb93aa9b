package cas_test

import (
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stela-dev/stela/cas"
	"github.com/stela-dev/stela/core"
)

func TestDir(t *testing.T) {
	casTestSuite(t, newDirHarness)
}

func newDirHarness(t *testing.T) harness {
	root := t.TempDir()
	s, err := cas.NewDir(root)
	if err != nil {
		t.Fatalf("NewDir: %v", err)
	}
	// The documented layout, spelled out independently of Dir.Path.
	path := func(d core.ContentDigest) string {
		h := hex.EncodeToString(d.Digest[:])
		return filepath.Join(root, "sha256", h[:2], h)
	}
	return harness{
		store: s,
		corrupt: func(t *testing.T, d core.ContentDigest, data []byte) {
			t.Helper()
			p := path(d)
			if err := os.Chmod(p, 0o644); err != nil { // blob files are read-only
				t.Fatalf("chmod: %v", err)
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatalf("corrupt %s: %v", p, err)
			}
		},
		rawExists: func(t *testing.T, d core.ContentDigest) bool {
			t.Helper()
			_, err := os.Stat(path(d))
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("stat: %v", err)
			}
			return err == nil
		},
		age: func(t *testing.T, d core.ContentDigest, by time.Duration) {
			t.Helper()
			fi, err := os.Stat(path(d))
			if err != nil {
				t.Fatalf("age: %v", err)
			}
			old := fi.ModTime().Add(-by)
			if err := os.Chtimes(path(d), old, old); err != nil {
				t.Fatalf("age: %v", err)
			}
		},
		now: time.Now,
	}
}

func TestDirLeavesNoTempFilesBehind(t *testing.T) {
	h := newDirHarness(t)
	s := h.store.(*cas.Dir)
	d := mustWrite(t, s, []byte("kept"))
	bad := core.ContentDigestOf([]byte("declared"))
	if err := s.PutBlob(t.Context(), bad, strings.NewReader("other bytes"), 11); !errors.Is(err, core.ErrValidation) {
		t.Fatalf("PutBlob err=%v, want ErrValidation", err)
	}
	var files []string
	err := filepath.WalkDir(filepath.Dir(filepath.Dir(s.Path(d))), func(p string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || files[0] != s.Path(d) {
		t.Fatalf("files=%v, want only %s", files, s.Path(d))
	}
	fi, err := os.Stat(s.Path(d))
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o444 {
		t.Fatalf("blob file mode=%v, want 0444", got)
	}
}
