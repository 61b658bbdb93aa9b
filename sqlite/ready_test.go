package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stela-dev/stela/sqlite"
)

func TestReady(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "stela.db")
	b := MustOpenAt(t, path)
	if err := b.Ready(ctx); err != nil {
		t.Fatalf("Ready on a fresh store = %v, want nil", err)
	}
	// Another process (a newer build) migrates the file under this one.
	if _, err := rawDB(t, path).Exec(fmt.Sprintf("PRAGMA user_version = %d", sqlite.SchemaVersion+1)); err != nil {
		t.Fatal(err)
	}
	err := b.Ready(ctx)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("schema version %d", sqlite.SchemaVersion+1)) {
		t.Fatalf("Ready after a schema change = %v, want the version mismatch", err)
	}
	_ = b.Close()
	if err := b.Ready(ctx); err == nil {
		t.Fatal("Ready on a closed store = nil")
	}
}
