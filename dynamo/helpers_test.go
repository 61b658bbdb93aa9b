package dynamo_test

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/dynamo"
	"github.com/stela-dev/stela/dynamo/dynamoenv"
	"github.com/stela-dev/stela/store"
)

// requireEndpoint skips (or, in CI, fails) when no DynamoDB endpoint is set.
func requireEndpoint(t testing.TB) {
	t.Helper()
	if os.Getenv("AWS_ENDPOINT_URL_DYNAMODB") != "" || os.Getenv("AWS_ENDPOINT_URL") != "" {
		return
	}
	const how = `no DynamoDB endpoint: run eval "$(scripts/ci/start-dynamodb-local.sh)" first`
	if os.Getenv("CI") == "true" {
		t.Fatal(how + " (CI=true: never skipped)")
	}
	t.Skip(how)
}

// newClient returns a client for the configured endpoint.
func newClient(t testing.TB, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	t.Helper()
	requireEndpoint(t)
	c, err := dynamoenv.NewClient(context.Background(), optFns...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var tableSeq atomic.Int64

// newTable creates a fresh table, deleted when the test ends.
func newTable(t testing.TB, client *dynamodb.Client) string {
	t.Helper()
	var buf [4]byte
	_, _ = crand.Read(buf[:])
	name := "stela-test-" + hex.EncodeToString(buf[:]) + "-" + time.Now().Format("150405") + "-" +
		string(rune('a'+tableSeq.Add(1)%26))
	ctx := context.Background()
	if err := dynamo.CreateTable(ctx, client, name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	return name
}

// newBackend returns a Backend on a fresh table; opts.Table is filled in and
// opts.Cas defaults to an in-memory CAS.
func newBackend(t testing.TB, opts dynamo.Options, optFns ...func(*dynamodb.Options)) (*dynamo.Backend, *memCas) {
	t.Helper()
	client := newClient(t, optFns...)
	opts.Table = newTable(t, client)
	cas, _ := opts.Cas.(*memCas)
	if opts.Cas == nil {
		cas = newMemCas()
		opts.Cas = cas
	}
	b, err := dynamo.New(client, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b, cas
}

// newService wraps a fresh backend in store.Service.
func newService(t testing.TB, clock core.Clock, opts dynamo.Options) (*store.Service, *dynamo.Backend) {
	t.Helper()
	b, _ := newBackend(t, opts)
	return store.New(b, store.Options{Clock: clock, PollInterval: 20 * time.Millisecond}), b
}

// memCas is an in-memory core.Cas that counts its calls.
type memCas struct {
	mu     sync.Mutex
	blobs  map[core.ContentDigest][]byte
	writes int
	reads  int
}

func newMemCas() *memCas { return &memCas{blobs: map[core.ContentDigest][]byte{}} }

func (c *memCas) WriteBlob(_ context.Context, data []byte) (core.ContentDigest, error) {
	d := core.ContentDigestOf(data)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes++
	if _, ok := c.blobs[d]; !ok {
		c.blobs[d] = append([]byte(nil), data...)
	}
	return d, nil
}

func (c *memCas) ReadBlob(_ context.Context, d core.ContentDigest) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	b, ok := c.blobs[d]
	if !ok {
		return nil, core.ErrNotFound
	}
	return append([]byte(nil), b...), nil
}

func (c *memCas) ContainsBlob(_ context.Context, d core.ContentDigest) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.blobs[d]
	return ok, nil
}

func (c *memCas) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.blobs)
}

type fixedClock struct{ t core.Timestamp }

func (c *fixedClock) Now() core.Timestamp { return c.t }

// must(f())(t) fails the test when f returns an error.
func must[T any](v T, err error) func(testing.TB) T {
	return func(t testing.TB) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func noErr(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// fixture ids and values shared by the tests.
var (
	t0      = core.TS(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	ffqnAct = mustV(core.ParseFunctionFqn("ns:pkg/ifc.act"))
	ffqnWf  = mustV(core.ParseFunctionFqn("ns:pkg/ifc.wf"))
	compAct = core.ComponentId{ComponentType: core.ComponentTypeActivity}
	compWf  = core.ComponentId{ComponentType: core.ComponentTypeWorkflow}
	exr     = mustV(core.ParseExecutorId("Exr_01KBNJ2T3D8W7H3X6Q4M9R5V1A"))
	run     = mustV(core.ParseRunId("Run_01KBNJ2V0P6C4Y8N2B7K3T5W9E"))
)

func mustV[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

var idSeq atomic.Uint64

// newID returns a fresh top-level execution id.
func newID() core.ExecutionId {
	var entropy [10]byte
	_, _ = crand.Read(entropy[:])
	id, err := core.NewExecutionId(uint64(t0.UnixMilli())+idSeq.Add(1), bytesReader(entropy[:]))
	if err != nil {
		panic(err)
	}
	return id
}

type bytesReader []byte

func (b bytesReader) Read(p []byte) (int, error) { return copy(p, b), nil }

func createReq(id core.ExecutionId, ffqn core.FunctionFqn, comp core.ComponentId, at core.Timestamp) core.CreateRequest {
	return core.CreateRequest{CreatedAt: at, ExecutionID: id, FFQN: ffqn, ScheduledAt: at, ComponentID: comp,
		Params: core.Params{[]byte(`"hello"`), []byte(`42`)}}
}

func lockReq(at core.Timestamp, comp core.ComponentId) core.LockRequest {
	return core.LockRequest{BatchSize: 10, PendingAtOrSooner: at, CreatedAt: at, ComponentID: comp,
		ExecutorID: exr, RunID: run, LockExpiresAt: at.Add(time.Minute), RetryConfig: core.RetryConfigZero()}
}

func skOf(it map[string]types.AttributeValue) string {
	if v, ok := it[dynamo.AttrSK].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}
