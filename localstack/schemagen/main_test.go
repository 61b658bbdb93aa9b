package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/stela-dev/stela/dynamo"
)

// The committed localstack/table.json is what LocalStack's init hook feeds to
// `aws dynamodb create-table`; it must never drift from dynamo.Schema.
func TestCommittedTableJSONIsCurrent(t *testing.T) {
	want, err := TableJSON(DefaultTable)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("..", "table.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("localstack/table.json is stale; run: go run ./localstack/schemagen -o localstack/table.json\ngot:\n%s\nwant:\n%s", got, want)
	}
}

func TestTableJSONDecodesToDynamoCreateTableInput(t *testing.T) {
	b, err := TableJSON("t1")
	if err != nil {
		t.Fatal(err)
	}
	var got dynamodb.CreateTableInput
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := dynamo.CreateTableInput("t1")
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if !bytes.Equal(gj, wj) {
		t.Fatalf("decoded input differs:\ngot  %s\nwant %s", gj, wj)
	}
	if len(got.GlobalSecondaryIndexes) != len(dynamo.Schema.GlobalIndexes) || len(got.LocalSecondaryIndexes) != len(dynamo.Schema.LocalIndexes) {
		t.Fatalf("indexes: %d global, %d local; want %d, %d", len(got.GlobalSecondaryIndexes), len(got.LocalSecondaryIndexes),
			len(dynamo.Schema.GlobalIndexes), len(dynamo.Schema.LocalIndexes))
	}
}

func TestTableJSONHasNoNullsForTheCLI(t *testing.T) {
	b, err := TableJSON("t1")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("null")) || bytes.Contains(b, []byte(`""`)) {
		t.Fatalf("JSON has null or empty members:\n%s", b)
	}
}

func TestCheckFlagRejectsAStaleFile(t *testing.T) {
	stale := filepath.Join(t.TempDir(), "table.json")
	if err := os.WriteFile(stale, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := run(context.Background(), []string{"-check", stale}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "stale") {
		t.Fatalf("run -check on a stale file = %v, want a stale error", err)
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-table", "x"}, &out); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(out.Bytes(), &m); err != nil || m["TableName"] != "x" {
		t.Fatalf("stdout JSON TableName = %v (err %v), want x", m["TableName"], err)
	}
	if !reflect.DeepEqual(m["BillingMode"], "PAY_PER_REQUEST") {
		t.Fatalf("BillingMode = %v", m["BillingMode"])
	}
}
