package transfer_test

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/stela-dev/stela/cas"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/dynamo"
	"github.com/stela-dev/stela/dynamo/dynamoenv"
	"github.com/stela-dev/stela/sqlite"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/store/mem"
	"github.com/stela-dev/stela/store/storetest"
	"github.com/stela-dev/stela/store/transfer"
)

// end returns a fresh store: a service on b with its own clock and CAS.
func end(t *testing.T, name string, b store.Backend, blobs core.Cas, clock *storetest.SimClock) storetest.TransferEnd {
	t.Helper()
	if clock == nil {
		clock = storetest.NewSimClock(core.UnixEpoch)
	}
	svc := store.New(b, store.Options{Clock: clock, Cas: blobs})
	t.Cleanup(func() { _ = svc.Close() })
	return storetest.TransferEnd{Name: name, Service: svc, Cas: blobs, Clock: clock}
}

func memEnd(t *testing.T) storetest.TransferEnd {
	t.Helper()
	return end(t, "memory", mem.New(), dirCas(t), nil)
}

func dirCas(t *testing.T) core.Cas {
	t.Helper()
	c, err := cas.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func sqliteEnd(t *testing.T) storetest.TransferEnd {
	t.Helper()
	b, err := sqlite.Open(filepath.Join(t.TempDir(), "stela.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return end(t, "embedded", b, dirCas(t), nil)
}

// dynamoEnd returns a DynamoDB Local table (created, deleted after the
// test) with an S3 CAS (gofakes3 in-process), whose inline threshold
// (the minimum, 1 KiB) makes the data set offload many payloads.
func dynamoEnd(t *testing.T) storetest.TransferEnd {
	t.Helper()
	if os.Getenv("AWS_ENDPOINT_URL_DYNAMODB") == "" && os.Getenv("AWS_ENDPOINT_URL") == "" {
		const how = `no DynamoDB endpoint: source /work/tools-shared/env.sh or run eval "$(scripts/ci/start-dynamodb-local.sh)"`
		if os.Getenv("CI") == "true" {
			t.Fatal(how + " (CI=true: never skipped)")
		}
		t.Skip(how)
	}
	ctx := context.Background()
	client, err := dynamoenv.NewClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var buf [4]byte
	_, _ = crand.Read(buf[:])
	table := "stela-transfer-" + hex.EncodeToString(buf[:])
	if err := dynamo.CreateTable(ctx, client, table); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})
	srv := httptest.NewServer(gofakes3.New(s3mem.New(), gofakes3.WithAutoBucket(true)).Server())
	t.Cleanup(srv.Close)
	blobs := cas.NewS3FromConfig(aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "test", SecretAccessKey: "test", Source: "test"}, nil
		})}, "stela", "cas/")
	clock := storetest.NewSimClock(core.UnixEpoch)
	b, err := dynamo.New(client, dynamo.Options{Table: table, Cas: blobs, Clock: clock, InlineThreshold: 1024})
	if err != nil {
		t.Fatal(err)
	}
	e := end(t, "DynamoDB", b, blobs, clock)
	e.ByCreation = true
	return e
}

// TestEmbeddedToDynamoAndBack is the path from a laptop to AWS and back:
// the data set goes from the embedded store through a stream into
// DynamoDB Local (+ an S3 CAS), directly from there into a fresh embedded
// store, and reads back identical (every record's digest, every read and
// the next steps).
func TestEmbeddedToDynamoAndBack(t *testing.T) {
	storetest.RunTransferChain(t, 3, sqliteEnd(t), dynamoEnd(t), sqliteEnd(t))
}

// TestMemoryToEmbeddedAndBack is the same chain without emulators.
func TestMemoryToEmbeddedAndBack(t *testing.T) {
	storetest.RunTransferChain(t, 2, memEnd(t), sqliteEnd(t), memEnd(t))
}

// TestImportChecksEveryRecord: a stream altered anywhere is refused at the
// record that does not check, after importing the records before it.
func TestImportChecksEveryRecord(t *testing.T) {
	src := memEnd(t)
	storetest.BuildDataSet(t, src.Service, src.Cas, src.Clock, 1)
	var buf bytes.Buffer
	ctx := context.Background()
	sum, err := transfer.Export(ctx, transfer.Store{Service: src.Service, Cas: src.Cas}, &buf, transfer.Options{Source: "test"})
	if err != nil {
		t.Fatal(err)
	}
	stream := buf.String()
	lines := strings.SplitAfter(stream, "\n")
	lines = lines[:len(lines)-1] // the empty string after the last newline
	find := func(prefix string, nth int) int {
		for i, l := range lines {
			if strings.HasPrefix(l, prefix) {
				if nth == 0 {
					return i
				}
				nth--
			}
		}
		t.Fatalf("no line %q", prefix)
		return -1
	}
	replace := func(i int, old, new string) string {
		c := append([]string(nil), lines...)
		if !strings.Contains(c[i], old) {
			t.Fatalf("line %d has no %q", i, old)
		}
		c[i] = strings.Replace(c[i], old, new, 1)
		return strings.Join(c, "")
	}
	drop := func(i int) string {
		c := append([]string(nil), lines...)
		return strings.Join(append(c[:i], c[i+1:]...), "")
	}
	// resign rewrites execution line i with mutate applied and a correct
	// digest: what only the record's validation can catch.
	resign := func(i int, mutate func(r *core.ExecutionRecord)) string {
		var l struct {
			Execution core.ExecutionRecord `json:"execution"`
		}
		if err := json.Unmarshal([]byte(lines[i]), &l); err != nil {
			t.Fatal(err)
		}
		mutate(&l.Execution)
		b, err := l.Execution.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		c := append([]string(nil), lines...)
		c[i] = `{"execution":` + string(b) + `,"digest":"` + core.ContentDigestOf(b).String() + "\"}\n"
		return strings.Join(c, "")
	}
	exec := find(`{"execution":`, 3)
	for name, tc := range map[string]struct {
		stream string
		want   string
		// late: the bad record comes after the trees, which are written.
		late bool
	}{
		"an event's time changed":      {replace(exec, `"created_at":"1970`, `"created_at":"1971`), "digest", false},
		"an execution left out":        {drop(exec), "announced", false},
		"its digest changed":           {replace(exec, `"digest":"sha256:`, `"digest":"sha256:00`), "digest", false},
		"an unknown field":             {replace(exec, `{"execution":{`, `{"execution":{"x":1,`), "unknown field", false},
		"two records on a line":        {replace(exec, `{"execution":`, `{"tree":{"root":"E_00000000000000000000000000","executions":1},"execution":`), "record keys", false},
		"a blob's bytes":               {replace(find(`{"blob":`, 1), `"data":"`, `"data":"AAAA`), "blob", true},
		"the end record's counts":      {replace(find(`{"end":`, 0), `"trees":`, `"trees":1`), "end record", true},
		"another format version":       {replace(0, `"version":1`, `"version":2`), "version", false},
		"a record after the end":       {stream + lines[exec], "after the end", true},
		"the end record left out":      {drop(find(`{"end":`, 0)), "ends before its end record", true},
		"the last line cut in half":    {stream[:len(stream)-10], "cut short", true},
		"an empty stream":              {"", "empty stream", false},
		"a logs record's digest":       {replace(find(`{"logs":`, 2), `"digest":"sha256:`, `"digest":"sha256:11`), "digest", false},
		"an event left out, re-signed": {resign(exec, func(r *core.ExecutionRecord) { r.Events = r.Events[:len(r.Events)-1] }), "events for version", false},
		"another execution's delay, re-signed": {resign(exec, func(r *core.ExecutionRecord) {
			other, _ := core.ParseExecutionId("E_00000000000000000000000000")
			js, _ := core.ParseJoinSetId("g:9")
			r.Delays = append(r.Delays, core.DelayTimer{ExecutionID: r.Head.ExecutionID, JoinSetID: js, DelayID: core.NewDelayId(other, js, 1)})
		}), "another execution", false},
	} {
		t.Run(name, func(t *testing.T) {
			dst := memEnd(t)
			got, err := transfer.Import(ctx, strings.NewReader(tc.stream), transfer.Store{Service: dst.Service, Cas: dst.Cas}, transfer.Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("import: %v, want an error about %q", err, tc.want)
			}
			if tc.late != (got.Written == sum.Trees) {
				t.Fatalf("import wrote %d of %d trees (late error: %v)", got.Written, sum.Trees, tc.late)
			}
		})
	}
	// The intact stream imports whole.
	dst := memEnd(t)
	got, err := transfer.Import(ctx, strings.NewReader(stream), transfer.Store{Service: dst.Service, Cas: dst.Cas}, transfer.Options{})
	if err != nil || got.Written != sum.Trees || got.Blobs != sum.Blobs || got.Deployments != sum.Deployments {
		t.Fatalf("import: %+v, %v; want what was exported: %+v", got, err, sum)
	}
	if !errors.Is(func() error {
		_, err := transfer.Import(ctx, strings.NewReader(stream[:len(stream)/2]), transfer.Store{Service: dst.Service, Cas: dst.Cas}, transfer.Options{})
		return err
	}(), transfer.ErrTruncated) {
		t.Fatal("half a stream: want ErrTruncated")
	}
}
