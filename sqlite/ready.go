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
		var err error
		v, err = c.queryInt(ctx, "PRAGMA user_version")
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: not ready: %w", err)
	}
	if v != SchemaVersion {
		return fmt.Errorf("sqlite: not ready: schema version %d, this build expects %d", v, SchemaVersion)
	}
	return nil
}

// queryInt runs a query answering one integer (a PRAGMA).
func (c *conn) queryInt(ctx context.Context, q string) (int, error) {
	rows, err := c.query(ctx, q)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	if !rows.Next() {
		return 0, fmt.Errorf("no row: %w", rows.Err())
	}
	var v int
	err = rows.Scan(&v)
	return v, err
}
