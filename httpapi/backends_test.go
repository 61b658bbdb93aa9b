package httpapi

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
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/dynamo"
	"github.com/stela-dev/stela/sqlite"
	"github.com/stela-dev/stela/store"
)

// The route suite runs on every backend: the handler must behave the same on
// the embedded store and on DynamoDB.

func TestRoutesOnSQLite(t *testing.T) {
	runRouteTests(t, func(t *testing.T) core.DbExternalApi {
		b, err := sqlite.Open(filepath.Join(t.TempDir(), "stela.db"), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		svc := store.New(b, store.Options{Clock: &testClock{now: t0}, PollInterval: 10 * time.Millisecond,
			Logger: slog.New(slog.DiscardHandler)})
		t.Cleanup(func() { _ = svc.Close() })
		return svc
	})
}

func TestRoutesOnDynamoDB(t *testing.T) {
	if os.Getenv("AWS_ENDPOINT_URL_DYNAMODB") == "" && os.Getenv("AWS_ENDPOINT_URL") == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but no DynamoDB endpoint is configured (AWS_ENDPOINT_URL_DYNAMODB)")
		}
		t.Skip("no DynamoDB endpoint: start one with `eval \"$(scripts/ci/start-dynamodb-local.sh)\"`")
	}
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.DisableValidateResponseChecksum = true })
	runRouteTests(t, func(t *testing.T) core.DbExternalApi {
		var buf [6]byte
		_, _ = rand.Read(buf[:])
		table := "stela-httpapi-" + hex.EncodeToString(buf[:])
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
		svc := store.New(b, store.Options{Clock: &testClock{now: t0}, PollInterval: 10 * time.Millisecond,
			Logger: slog.New(slog.DiscardHandler)})
		t.Cleanup(func() { _ = svc.Close() })
		return svc
	})
}
