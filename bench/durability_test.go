package bench

import (
	"context"
	"testing"

	"github.com/stela-dev/stela/sqlite"
)

// TestBenchStoreDurability proves the mode `stela bench embedded` opens its
// store at, read back from the writer connection.
func TestBenchStoreDurability(t *testing.T) {
	ctx := context.Background()
	for _, d := range []sqlite.Durability{sqlite.DurabilityFsync, sqlite.DurabilityOSCrashUnsafe} {
		b, err := openBenchStore(ctx, t.TempDir(), d)
		if err != nil {
			t.Fatal(err)
		}
		want := map[sqlite.Durability]int{sqlite.DurabilityFsync: 2, sqlite.DurabilityOSCrashUnsafe: 1}[d]
		if got, err := b.Synchronous(ctx); err != nil || got != want {
			t.Errorf("%v: writer PRAGMA synchronous = %d (%v), want %d", d, got, err, want)
		}
		_ = b.Close()
	}
}
