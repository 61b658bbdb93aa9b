package cas_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stela-dev/stela/cas"
	"github.com/stela-dev/stela/core"
)

// harness is one empty, isolated store plus back doors into its storage
// that bypass the store's own checks.
type harness struct {
	store cas.Store
	// corrupt replaces the stored bytes of blob d with data, behind the
	// store's back (edit the file / overwrite the object with the raw client).
	corrupt func(t *testing.T, d core.ContentDigest, data []byte)
	// rawExists reports whether the object or file for d exists at the
	// documented location, computed independently of the store.
	rawExists func(t *testing.T, d core.ContentDigest) bool
	// age makes blob d look written `by` earlier than it was (Dir: move its
	// modification time back; S3 in-process: move the emulator's clock
	// forward, which ages every blob). nil when the store offers no way.
	age func(t *testing.T, d core.ContentDigest, by time.Duration)
	// now is the current time of the store's own clock (the one ModTime
	// comes from).
	now func() time.Time
}

// casTestSuite checks the behaviour every cas.Store must have. newStore must
// return an empty, isolated store on each call.
func casTestSuite(t *testing.T, newStore func(t *testing.T) harness) {
	ctx := context.Background()

	t.Run("WriteThenReadRoundTrips", func(t *testing.T) {
		h := newStore(t)
		data := []byte("hello, content-addressed world")
		d, err := h.store.WriteBlob(ctx, data)
		if err != nil {
			t.Fatalf("WriteBlob: %v", err)
		}
		if want := core.ContentDigestOf(data); d != want {
			t.Fatalf("digest=%s, want %s", d, want)
		}
		got, err := h.store.ReadBlob(ctx, d)
		if err != nil {
			t.Fatalf("ReadBlob: %v", err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("ReadBlob=%q, want %q", got, data)
		}
		mustContain(t, h.store, d, true)
		if size, err := h.store.Size(ctx, d); err != nil || size != int64(len(data)) {
			t.Fatalf("Size=%d, %v, want %d, nil", size, err, len(data))
		}
		if !h.rawExists(t, d) {
			t.Fatalf("blob %s is not at its documented key", d)
		}
	})

	t.Run("EmptyBlobRoundTrips", func(t *testing.T) {
		h := newStore(t)
		d, err := h.store.WriteBlob(ctx, nil)
		if err != nil {
			t.Fatalf("WriteBlob: %v", err)
		}
		got, err := h.store.ReadBlob(ctx, d)
		if err != nil || len(got) != 0 {
			t.Fatalf("ReadBlob=%q, %v, want empty, nil", got, err)
		}
		if err := h.store.PutBlob(ctx, d, bytes.NewReader(nil), 0); err != nil {
			t.Fatalf("PutBlob of the empty blob: %v", err)
		}
	})

	t.Run("DoubleWriteIsIdempotent", func(t *testing.T) {
		h := newStore(t)
		data := []byte("twice")
		d1, err1 := h.store.WriteBlob(ctx, data)
		d2, err2 := h.store.WriteBlob(ctx, data)
		if err1 != nil || err2 != nil {
			t.Fatalf("WriteBlob errors: %v, %v", err1, err2)
		}
		if d1 != d2 {
			t.Fatalf("second digest=%s, want %s", d2, d1)
		}
		if err := h.store.PutBlob(ctx, d1, bytes.NewReader(data), int64(len(data))); err != nil {
			t.Fatalf("PutBlob of a stored blob: %v", err)
		}
		if got := listAll(t, h.store); len(got) != 1 || got[0].d != d1 {
			t.Fatalf("List=%v, want just %s", got, d1)
		}
		mustRead(t, h.store, d1, data)
	})

	t.Run("MissingBlobIsNotFound", func(t *testing.T) {
		h := newStore(t)
		d := core.ContentDigestOf([]byte("never written"))
		if _, err := h.store.ReadBlob(ctx, d); !errors.Is(err, core.ErrNotFound) {
			t.Fatalf("ReadBlob err=%v, want ErrNotFound", err)
		}
		if _, _, err := h.store.Open(ctx, d); !errors.Is(err, core.ErrNotFound) {
			t.Fatalf("Open err=%v, want ErrNotFound", err)
		}
		if _, err := h.store.Size(ctx, d); !errors.Is(err, core.ErrNotFound) {
			t.Fatalf("Size err=%v, want ErrNotFound", err)
		}
		mustContain(t, h.store, d, false)
		if err := h.store.Delete(ctx, d); err != nil {
			t.Fatalf("Delete of an absent blob: %v", err)
		}
	})

	t.Run("PutBlobWithWrongContentIsRejectedAndNothingStored", func(t *testing.T) {
		big := genBytes(3, 1<<20)
		lastByteFlipped := slices.Clone(big)
		lastByteFlipped[len(lastByteFlipped)-1] ^= 1
		cases := []struct {
			name     string
			declared []byte // the blob whose digest is declared
			body     []byte // what the reader yields
			size     int64
		}{
			{"OtherBytesSameLength", []byte("aaaa"), []byte("bbbb"), 4},
			{"LastByteOfOneMiBDiffers", big, lastByteFlipped, int64(len(big))},
			{"ReaderShorterThanSize", []byte("abcdef"), []byte("abc"), 6},
			{"ReaderLongerThanSize", []byte("abc"), []byte("abcdef"), 3},
			{"EmptyReaderForNonEmptyBlob", []byte("x"), nil, 0},
			{"NonEmptyReaderForEmptyBlob", nil, []byte("x"), 0},
			{"NegativeSize", []byte("abc"), []byte("abc"), -1},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				h := newStore(t)
				d := core.ContentDigestOf(c.declared)
				err := h.store.PutBlob(ctx, d, bytes.NewReader(c.body), c.size)
				if !errors.Is(err, core.ErrValidation) {
					t.Fatalf("PutBlob err=%v, want ErrValidation", err)
				}
				mustContain(t, h.store, d, false)
				mustContain(t, h.store, core.ContentDigestOf(c.body), false)
				if got := listAll(t, h.store); len(got) != 0 {
					t.Fatalf("List=%v, want nothing stored", got)
				}
			})
		}
	})

	t.Run("PutBlobWithWrongContentForStoredDigestIsRejected", func(t *testing.T) {
		h := newStore(t)
		data := []byte("the real blob")
		d := mustWrite(t, h.store, data)
		bad := []byte("not the real blob")
		if err := h.store.PutBlob(ctx, d, bytes.NewReader(bad), int64(len(bad))); !errors.Is(err, core.ErrValidation) {
			t.Fatalf("PutBlob err=%v, want ErrValidation", err)
		}
		mustRead(t, h.store, d, data)
	})

	t.Run("ReadOfCorruptBlobFailsClosed", func(t *testing.T) {
		for _, c := range []struct {
			name string
			bad  []byte
		}{
			{"SameLength", []byte("hellO world")},
			{"Shorter", []byte("hello")},
			{"Longer", []byte("hello world, and more")},
			{"Empty", []byte{}},
		} {
			t.Run(c.name, func(t *testing.T) {
				h := newStore(t)
				d := mustWrite(t, h.store, []byte("hello world"))
				h.corrupt(t, d, c.bad)
				if b, err := h.store.ReadBlob(ctx, d); !errors.Is(err, cas.ErrCorrupt) {
					t.Fatalf("ReadBlob=%q, %v, want ErrCorrupt", b, err)
				}
				rc, _, err := h.store.Open(ctx, d)
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				defer rc.Close()
				if b, err := io.ReadAll(rc); !errors.Is(err, cas.ErrCorrupt) {
					t.Fatalf("reading Open=%q, %v, want ErrCorrupt", b, err)
				}
			})
		}
	})

	t.Run("ListReportsEveryBlobInDigestOrderAndDeleteRemovesOne", func(t *testing.T) {
		h := newStore(t)
		var want []entry
		for _, s := range []string{"one", "two two", "three three three"} {
			want = append(want, entry{mustWrite(t, h.store, []byte(s)), int64(len(s))})
		}
		slices.SortFunc(want, func(a, b entry) int { return bytes.Compare(a.d.Digest[:], b.d.Digest[:]) })
		if got := listAll(t, h.store); !slices.Equal(got, want) {
			t.Fatalf("List=%v, want %v", got, want)
		}

		if err := h.store.Delete(ctx, want[1].d); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		mustContain(t, h.store, want[1].d, false)
		if _, err := h.store.ReadBlob(ctx, want[1].d); !errors.Is(err, core.ErrNotFound) {
			t.Fatalf("ReadBlob after Delete err=%v, want ErrNotFound", err)
		}
		if err := h.store.Delete(ctx, want[1].d); err != nil {
			t.Fatalf("second Delete: %v", err)
		}
		want = slices.Delete(want, 1, 2)
		if got := listAll(t, h.store); !slices.Equal(got, want) {
			t.Fatalf("List after Delete=%v, want %v", got, want)
		}
	})

	t.Run("ListStopsAtCallbackError", func(t *testing.T) {
		h := newStore(t)
		mustWrite(t, h.store, []byte("a"))
		mustWrite(t, h.store, []byte("b"))
		stop := errors.New("stop")
		calls := 0
		err := h.store.List(ctx, func(core.ContentDigest, int64) error { calls++; return stop })
		if err != stop || calls != 1 {
			t.Fatalf("List=%v after %d calls, want the callback's error after 1", err, calls)
		}
	})

	t.Run("TwentyMBBlobStreamsThroughPutBlobAndOpen", func(t *testing.T) {
		h := newStore(t)
		const size = 20 << 20
		d := genDigest(7, size)
		if err := h.store.PutBlob(ctx, d, genReader(7, size), size); err != nil {
			t.Fatalf("PutBlob: %v", err)
		}
		rc, n, err := h.store.Open(ctx, d)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer rc.Close()
		if n != size {
			t.Fatalf("Open size=%d, want %d", n, size)
		}
		hash := sha256.New()
		copied, err := io.Copy(hash, rc)
		if err != nil || copied != size {
			t.Fatalf("reading Open: %d bytes, %v; want %d, nil", copied, err, size)
		}
		if got := hash.Sum(nil); !bytes.Equal(got, d.Digest[:]) {
			t.Fatalf("streamed content hashes to %x, want %s", got, d)
		}
		if got := listAll(t, h.store); len(got) != 1 || got[0] != (entry{d, size}) {
			t.Fatalf("List=%v, want [{%s %d}]", got, d, size)
		}
	})

	t.Run("ConcurrentWritesOfTheSameBlobAllSucceed", func(t *testing.T) {
		h := newStore(t)
		data := genBytes(11, 256<<10)
		want := core.ContentDigestOf(data)
		const writers = 8
		errs := make([]error, writers)
		var wg sync.WaitGroup
		for i := range writers {
			wg.Go(func() {
				if i%2 == 0 {
					var d core.ContentDigest
					d, errs[i] = h.store.WriteBlob(ctx, data)
					if errs[i] == nil && d != want {
						errs[i] = errors.New("WriteBlob returned digest " + d.String())
					}
					return
				}
				errs[i] = h.store.PutBlob(ctx, want, bytes.NewReader(data), int64(len(data)))
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("writer %d: %v", i, err)
			}
		}
		if got := listAll(t, h.store); len(got) != 1 || got[0] != (entry{want, int64(len(data))}) {
			t.Fatalf("List=%v, want one blob %s", got, want)
		}
		mustRead(t, h.store, want, data)
	})

	t.Run("StatAndListInfoReportSizeAndModTime", func(t *testing.T) {
		h := newStore(t)
		data := []byte("described")
		before := h.now().Add(-2 * time.Second) // S3 reports whole seconds
		d := mustWrite(t, h.store, data)
		after := h.now().Add(2 * time.Second)
		bi, err := h.store.Stat(ctx, d)
		if err != nil {
			t.Fatalf("Stat: %v", err)
		}
		if bi.Digest != d || bi.Size != int64(len(data)) || bi.ModTime.Before(before) || bi.ModTime.After(after) {
			t.Fatalf("Stat=%+v, want digest %s, size %d, ModTime in [%v, %v]", bi, d, len(data), before, after)
		}
		var listed []cas.BlobInfo
		if err := h.store.ListInfo(ctx, func(bi cas.BlobInfo) error { listed = append(listed, bi); return nil }); err != nil {
			t.Fatalf("ListInfo: %v", err)
		}
		if len(listed) != 1 || listed[0].Digest != d || listed[0].Size != int64(len(data)) ||
			listed[0].ModTime.Before(before) || listed[0].ModTime.After(after) {
			t.Fatalf("ListInfo=%+v, want one blob like %+v", listed, bi)
		}
		if _, err := h.store.Stat(ctx, core.ContentDigestOf([]byte("absent"))); !errors.Is(err, core.ErrNotFound) {
			t.Fatalf("Stat of an absent blob err=%v, want ErrNotFound", err)
		}
	})

	t.Run("WritingAStoredBlobAgainRefreshesItsModTime", func(t *testing.T) {
		if newStore(t).age == nil {
			t.Skip("the store cannot age a blob")
		}
		for _, c := range []struct {
			name  string
			write func(h harness, data []byte) error
		}{
			{"WriteBlob", func(h harness, data []byte) error { _, err := h.store.WriteBlob(ctx, data); return err }},
			{"PutBlob", func(h harness, data []byte) error {
				return h.store.PutBlob(ctx, core.ContentDigestOf(data), bytes.NewReader(data), int64(len(data)))
			}},
			{"PutBlobEmpty", func(h harness, _ []byte) error {
				return h.store.PutBlob(ctx, core.ContentDigestOf(nil), bytes.NewReader(nil), 0)
			}},
		} {
			t.Run(c.name, func(t *testing.T) {
				h := newStore(t)
				data := []byte("written twice, an hour apart")
				if c.name == "PutBlobEmpty" {
					data = nil
				}
				d := mustWrite(t, h.store, data)
				h.age(t, d, 2*time.Hour)
				old, err := h.store.Stat(ctx, d)
				if err != nil {
					t.Fatalf("Stat: %v", err)
				}
				if age := h.now().Sub(old.ModTime); age < 119*time.Minute {
					t.Fatalf("aged blob is %v old, want about 2h", age)
				}
				if err := c.write(h, data); err != nil {
					t.Fatalf("second write: %v", err)
				}
				fresh, err := h.store.Stat(ctx, d)
				if err != nil {
					t.Fatalf("Stat: %v", err)
				}
				if age := h.now().Sub(fresh.ModTime); age > time.Minute {
					t.Fatalf("after writing it again the blob is %v old, want fresh", age)
				}
				mustRead(t, h.store, d, data)
			})
		}
	})

	t.Run("CollectOrphansDeletesOnlyUnreferencedBlobsOlderThanTheGrace", func(t *testing.T) {
		h := newStore(t)
		if h.age == nil {
			t.Skip("the store cannot age a blob")
		}
		kept := mustWrite(t, h.store, []byte("referenced"))
		orphan := mustWrite(t, h.store, []byte("orphan"))
		h.age(t, kept, 2*time.Hour)
		h.age(t, orphan, 2*time.Hour)
		young := mustWrite(t, h.store, []byte("uploaded just now, not yet referenced"))
		var asked []core.ContentDigest
		refs := func(_ context.Context, c []core.ContentDigest) (map[core.ContentDigest]bool, error) {
			asked = append(asked, c...)
			return map[core.ContentDigest]bool{kept: true}, nil
		}
		n, err := cas.CollectOrphans(ctx, h.store, h.now(), time.Hour, refs)
		if err != nil || n != 1 {
			t.Fatalf("CollectOrphans=%d, %v, want 1, nil", n, err)
		}
		if slices.Contains(asked, young) {
			t.Errorf("young blob %s was a candidate", young)
		}
		mustContain(t, h.store, kept, true)
		mustContain(t, h.store, young, true)
		mustContain(t, h.store, orphan, false)
		if n, err := cas.CollectOrphans(ctx, h.store, h.now(), time.Hour, refs); err != nil || n != 0 {
			t.Fatalf("second CollectOrphans=%d, %v, want 0, nil", n, err)
		}
	})
}

type entry struct {
	d    core.ContentDigest
	size int64
}

func (e entry) String() string { return fmt.Sprintf("%s/%d", e.d, e.size) }

func listAll(t *testing.T, s cas.Store) []entry {
	t.Helper()
	var out []entry
	if err := s.List(context.Background(), func(d core.ContentDigest, size int64) error {
		out = append(out, entry{d, size})
		return nil
	}); err != nil {
		t.Fatalf("List: %v", err)
	}
	return out
}

func mustWrite(t *testing.T, s cas.Store, data []byte) core.ContentDigest {
	t.Helper()
	d, err := s.WriteBlob(context.Background(), data)
	if err != nil {
		t.Fatalf("WriteBlob: %v", err)
	}
	return d
}

func mustRead(t *testing.T, s cas.Store, d core.ContentDigest, want []byte) {
	t.Helper()
	got, err := s.ReadBlob(context.Background(), d)
	if err != nil {
		t.Fatalf("ReadBlob(%s): %v", d, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("ReadBlob(%s) returned %d bytes that differ from the %d written", d, len(got), len(want))
	}
}

func mustContain(t *testing.T, s cas.Store, d core.ContentDigest, want bool) {
	t.Helper()
	got, err := s.ContainsBlob(context.Background(), d)
	if err != nil {
		t.Fatalf("ContainsBlob(%s): %v", d, err)
	}
	if got != want {
		t.Fatalf("ContainsBlob(%s)=%v, want %v", d, got, want)
	}
}

// genReader yields size deterministic pseudo-random bytes without holding
// them in memory.
func genReader(seed uint64, size int64) io.Reader {
	var key [32]byte
	key[0] = byte(seed)
	return io.LimitReader(rand.NewChaCha8(key), size)
}

func genBytes(seed uint64, size int64) []byte {
	b, err := io.ReadAll(genReader(seed, size))
	if err != nil {
		panic(err)
	}
	return b
}

func genDigest(seed uint64, size int64) core.ContentDigest {
	h := sha256.New()
	if _, err := io.Copy(h, genReader(seed, size)); err != nil {
		panic(err)
	}
	var d core.ContentDigest
	h.Sum(d.Digest[:0])
	return d
}
