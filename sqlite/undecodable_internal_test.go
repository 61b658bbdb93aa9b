package sqlite

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
)

// A corrupt row is left out of a listing, but counted, logged at ERROR, and
// a read of that very row fails: corruption is never hidden.
func TestUndecodableRowIsCountedLoggedAndSurfaced(t *testing.T) {
	ctx := context.Background()
	var logs bytes.Buffer
	b, err := Open(filepath.Join(t.TempDir(), "stela.db"), Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	good, bad := testID(t), testID(t)
	err = b.Update(ctx, func(tx store.Tx) error {
		for _, id := range []core.ExecutionId{good, bad} {
			if err := tx.CreateHead(testHead(id), nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = b.write(ctx, func(tx *writeTx) error {
		return tx.c.exec(ctx, `UPDATE t_state SET component_digest = x'0102' WHERE execution_id = ?`, bad.String())
	})
	if err != nil {
		t.Fatal(err)
	}

	list, err := b.ListExecutions(ctx, core.ListExecutionsFilter{ShowDerived: true}, core.DefaultExecutionListPagination())
	if err != nil {
		t.Fatalf("ListExecutions: %v", err)
	}
	if len(list) != 1 || list[0].ExecutionID != good {
		t.Fatalf("listing = %v, want only the decodable %s", list, good)
	}
	if n := b.Stats().Undecodable; n != 1 {
		t.Fatalf("Stats().Undecodable = %d, want 1", n)
	}
	if !strings.Contains(logs.String(), `"level":"ERROR"`) || !strings.Contains(logs.String(), `"total":1`) {
		t.Fatalf("no ERROR log with the running total: %s", logs.String())
	}
	err = b.View(ctx, func(tx store.ReadTx) error { _, err := tx.Head(bad); return err })
	if err == nil || errors.Is(err, core.ErrNotFound) {
		t.Fatalf("Head of the corrupt row: err=%v, want a decoding error", err)
	}
}
