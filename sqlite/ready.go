package sqlite

import (
	"context"
	"fmt"
)

// Ready implements store.ReadyChecker: a reader connection answers and the
// database is at SchemaVersion (PRAGMA user_version).
func (b *Backend) Ready(ctx context.Context) error {
	var v int
	err := b.withReader(ctx, func(c *conn) error {
		rows, err := c.query(ctx, "PRAGMA user_version")
		if err != nil {
			return err
		}
		defer rows.Close()
		if !rows.Next() {
			return fmt.Errorf("no row: %w", rows.Err())
		}
		return rows.Scan(&v)
	})
	if err != nil {
		return fmt.Errorf("sqlite: not ready: %w", err)
	}
	if v != SchemaVersion {
		return fmt.Errorf("sqlite: not ready: schema version %d, this build expects %d", v, SchemaVersion)
	}
	return nil
}
