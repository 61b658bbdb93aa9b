package httpapi

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/internal/backendtest"
	"github.com/stela-dev/stela/store"
)

// The route suite runs on every backend: the handler must behave the same on
// the embedded store and on DynamoDB. The stores are opened by backendtest,
// on the suite's clock.

func routeStoreOptions() store.Options {
	return store.Options{Clock: &testClock{now: t0}, PollInterval: 10 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)}
}

func TestRoutesOnSQLite(t *testing.T) {
	runRouteTests(t, func(t *testing.T) core.DbExternalApi { return backendtest.SQLiteWith(t, routeStoreOptions()) })
}

func TestRoutesOnDynamoDB(t *testing.T) {
	backendtest.SkipWithoutDynamoDB(t)
	runRouteTests(t, func(t *testing.T) core.DbExternalApi { return backendtest.DynamoDBWith(t, routeStoreOptions()) })
}
