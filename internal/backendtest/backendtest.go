// Package backendtest gives tests a Stela store on each durable backend —
// the embedded SQLite store and DynamoDB (Local in CI) — so that a test
// runs the same scenario on every backend (internal/apitest serves one
// over HTTP, for the other worker transport). DynamoDB tests skip when no
// endpoint is configured (AWS_ENDPOINT_URL_DYNAMODB or AWS_ENDPOINT_URL)
// and fail instead when CI=true. It does not import httpapi, whose route
// tests use it.
package backendtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/stela-dev/stela/cas"
	"github.com/stela-dev/stela/dynamo"
	"github.com/stela-dev/stela/sqlite"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/timers"
)

// Backend opens a fresh store for one test.
type Backend struct {
	Name string
	Open func(t testing.TB) *store.Service
}

// Backends are the durable backends, embedded first.
var Backends = []Backend{{"sqlite", SQLite}, {"dynamodb", DynamoDB}}

// Each runs fn as a subtest on every backend.
func Each(t *testing.T, fn func(t *testing.T, svc *store.Service)) {
	for _, b := range Backends {
		t.Run(b.Name, func(t *testing.T) { fn(t, b.Open(t)) })
	}
}

// Options are the store options of SQLite and DynamoDB: a short poll
// interval and no logs.
func Options() store.Options {
	return store.Options{PollInterval: 20 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)}
}

// SQLite opens an embedded store in a temporary directory.
func SQLite(t testing.TB) *store.Service {
	t.Helper()
	return SQLiteWith(t, Options())
}

// SQLiteWith is SQLite with the store options opts.
func SQLiteWith(t testing.TB, opts store.Options) *store.Service {
	t.Helper()
	b, err := sqlite.Open(filepath.Join(t.TempDir(), "stela.db"), sqlite.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	svc := store.New(b, opts)
	t.Cleanup(func() { _ = svc.Close() })
	return svc
}

// DynamoDB opens a store on a fresh table of the configured endpoint
// (deleted when the test ends), or skips the test without one.
func DynamoDB(t testing.TB) *store.Service {
	t.Helper()
	return DynamoDBWith(t, Options())
}

// DynamoDBWith is DynamoDB with the store options opts.
func DynamoDBWith(t testing.TB, opts store.Options) *store.Service {
	t.Helper()
	SkipWithoutDynamoDB(t)
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.DisableValidateResponseChecksum = true })
	var buf [6]byte
	_, _ = rand.Read(buf[:])
	table := "stela-test-" + hex.EncodeToString(buf[:])
	if err := dynamo.CreateTable(ctx, client, table); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})
	blobs, err := cas.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, err := dynamo.New(client, dynamo.Options{Table: table, Cas: blobs})
	if err != nil {
		t.Fatal(err)
	}
	svc := store.New(b, opts)
	t.Cleanup(func() { _ = svc.Close() })
	return svc
}

// SkipWithoutDynamoDB skips the test when no DynamoDB endpoint is
// configured (AWS_ENDPOINT_URL_DYNAMODB or AWS_ENDPOINT_URL), and fails it
// instead when CI=true.
func SkipWithoutDynamoDB(t testing.TB) {
	t.Helper()
	if os.Getenv("AWS_ENDPOINT_URL_DYNAMODB") == "" && os.Getenv("AWS_ENDPOINT_URL") == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but no DynamoDB endpoint is configured (AWS_ENDPOINT_URL_DYNAMODB)")
		}
		t.Skip("no DynamoDB endpoint: start one with `eval \"$(scripts/ci/start-dynamodb-local.sh)\"`")
	}
}

// Timers runs the server's timers (delays, expired locks, cancellations)
// against svc every interval until the test ends, as `stela dev` does.
func Timers(t testing.TB, svc *store.Service, interval time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = timers.Run(ctx, svc, store.SystemClock{}, timers.Options{Interval: interval, Logger: slog.New(slog.DiscardHandler)})
	}()
	t.Cleanup(func() { cancel(); <-done })
}
