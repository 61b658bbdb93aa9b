package dynamometer_test

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stela-dev/stela/dynamo"
	"github.com/stela-dev/stela/dynamo/dynamoenv"
	"github.com/stela-dev/stela/dynamo/dynamometer"
)

type av = types.AttributeValue

func s(v string) av { return &types.AttributeValueMemberS{Value: v} }

// newClient returns a client for the configured endpoint (DynamoDB Local in
// CI: never skipped there).
func newClient(t *testing.T, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	t.Helper()
	if os.Getenv("AWS_ENDPOINT_URL_DYNAMODB") == "" && os.Getenv("AWS_ENDPOINT_URL") == "" {
		const how = `no DynamoDB endpoint: run eval "$(scripts/ci/start-dynamodb-local.sh)" first`
		if os.Getenv("CI") == "true" {
			t.Fatal(how + " (CI=true: never skipped)")
		}
		t.Skip(how)
	}
	c, err := dynamoenv.NewClient(context.Background(), optFns...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// newTable creates a fresh table with Stela's schema, deleted when the test ends.
func newTable(t *testing.T, client *dynamodb.Client) string {
	t.Helper()
	var buf [6]byte
	_, _ = crand.Read(buf[:])
	name := "stela-test-meter-" + hex.EncodeToString(buf[:])
	if err := dynamo.CreateTable(context.Background(), client, name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	return name
}

// TestCapacityMeterBillsKnownWrites: hand-made writes whose bill is derived
// by hand from AWS's rules (meter.go): every item here is under 1 KB, so
// each table write is 1 WRU (2 in a transaction) and each index entry put
// or delete 1 WRU.
func TestCapacityMeterBillsKnownWrites(t *testing.T) {
	ctx := context.Background()
	meter := dynamometer.NewCapacityMeter()
	c := newClient(t, meter.Register)
	table := newTable(t, c)
	tn := aws.String(table)
	head := map[string]av{"pk": s("E#x"), "sk": s("H"),
		dynamo.AttrPendingFFQN: s("f#1"), dynamo.AttrPendingDigest: s("d#1"), dynamo.AttrPendingSort: s("t1"),
		dynamo.AttrListPK: s("LT#1"), dynamo.AttrListSK: s("t0#x"), dynamo.AttrDeployPK: s("D#T#P#1"), dynamo.AttrDeploySK: s("t1#x")}
	step := func(label string, fn func(ctx context.Context) error) dynamometer.Usage {
		t.Helper()
		if err := fn(dynamometer.WithMeterLabel(ctx, label)); err != nil && !strings.HasPrefix(label, "fail") {
			t.Fatalf("%s: %v", label, err)
		}
		return meter.Snapshot()[label]
	}
	check := func(label string, u dynamometer.Usage, write, tx, idx float64, entries int) {
		t.Helper()
		if u.Write != write || u.TxWrite != tx || u.IndexWrite != idx || u.IndexEntries != entries || u.UnknownImages != 0 {
			t.Errorf("%s: table %v, tx %v, index %v WRU, %d entries, %d unknown images; want %v, %v, %v, %d, 0",
				label, u.Write, u.TxWrite, u.IndexWrite, u.IndexEntries, u.UnknownImages, write, tx, idx, entries)
		}
	}

	// A new pending head: entries in pending-ffqn, pending-digest, list,
	// list-id (keyed by the same lp and the item's pk) and deployments: 5.
	u := step("create", func(ctx context.Context) error {
		_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tn, Item: head,
			ConditionExpression: aws.String("attribute_not_exists(#pk)"), ExpressionAttributeNames: map[string]string{"#pk": "pk"}})
		return err
	})
	check("create", u, 1, 0, 5, 5)

	// Locked: pending-ffqn and pending-digest entries go (2), a timers entry
	// appears (1), the deployments entry moves to bucket L (delete + put:
	// 2), the list and list-id entries stay (0): 5.
	locked := map[string]av{"pk": s("E#x"), "sk": s("H"), dynamo.AttrTimerPK: s("L#1"), dynamo.AttrTimerSK: s("t9"),
		dynamo.AttrListPK: s("LT#1"), dynamo.AttrListSK: s("t0#x"), dynamo.AttrDeployPK: s("D#T#L#1"), dynamo.AttrDeploySK: s("x")}
	u = step("lock", func(ctx context.Context) error {
		_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tn, Item: locked})
		return err
	})
	check("lock", u, 1, 0, 5, 5)

	// One transaction: a response (ordinals LSI, projection ALL: 1 entry)
	// and the head deleted (timers, list, list-id, deployments: 4 entries).
	// Table: 2 × (1 + 1). Entries: 5.
	u = step("tx", func(ctx context.Context) error {
		_, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{TableName: tn, Item: map[string]av{"pk": s("E#x"), "sk": s("R#1"), dynamo.AttrOrdinal: s("R#g:1#1"), "e": s("{}")},
				ConditionExpression: aws.String("attribute_not_exists(#pk)"), ExpressionAttributeNames: map[string]string{"#pk": "pk"}}},
			{Delete: &types.Delete{TableName: tn, Key: map[string]av{"pk": s("E#x"), "sk": s("H")}}},
		}})
		return err
	})
	check("tx", u, 0, 4, 5, 5)
	if u.Transactions != 1 || u.Cancelled != 0 {
		t.Errorf("tx: %d transactions, %d cancelled; want 1, 0", u.Transactions, u.Cancelled)
	}
	// The other assumption bills the transaction's 5 index WRU twice.
	if u.TxIndexWrite != 5 || u.WRU() != 9 || u.WRUTxIndexTwice() != 14 {
		t.Errorf("tx: %v index WRU inside the transaction, %v WRU once, %v twice; want 5, 9, 14", u.TxIndexWrite, u.WRU(), u.WRUTxIndexTwice())
	}
	if u.ItemWrites != 2 || u.LargeWrites != 0 {
		t.Errorf("tx: %d item writes, %d over 1 KB; want 2, 0", u.ItemWrites, u.LargeWrites)
	}
	// A single write over 1 KB: 2 WRU, counted as large; its index updates
	// are not a transaction's.
	big := map[string]av{"pk": s("E#big"), "sk": s("H"), "z": s(strings.Repeat("x", 1100)), dynamo.AttrListPK: s("LT#1"), dynamo.AttrListSK: s("t0#big")}
	u = step("large", func(ctx context.Context) error {
		_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tn, Item: big})
		return err
	})
	check("large", u, 2, 0, 2, 2)
	if u.ItemWrites != 1 || u.LargeWrites != 1 || u.LargeWriteWRU != 2 || u.TxIndexWrite != 0 || u.WRUTxIndexTwice() != u.WRU() {
		t.Errorf("large: %d item writes, %d over 1 KB for %v WRU, %v index WRU in transactions; want 1, 1, 2, 0",
			u.ItemWrites, u.LargeWrites, u.LargeWriteWRU, u.TxIndexWrite)
	}

	// Cancelled (the condition check names a missing item): billed at 2 WRU
	// per KB per action, no index entry; counted as cancelled.
	u = step("fail: cancelled", func(ctx context.Context) error {
		_, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{TableName: tn, Item: head}},
			{ConditionCheck: &types.ConditionCheck{TableName: tn, Key: map[string]av{"pk": s("E#missing"), "sk": s("H")},
				ConditionExpression: aws.String("attribute_exists(#pk)"), ExpressionAttributeNames: map[string]string{"#pk": "pk"}}},
		}})
		return err
	})
	check("fail: cancelled", u, 0, 0, 0, 0)
	if u.Transactions != 1 || u.Cancelled != 1 || u.CancelledConflict != 0 || u.CancelledWrite != 4 || u.WRU() != 4 {
		t.Errorf("cancelled: %d transactions, %d cancelled (%d conflicts), %v WRU cancelled, %v in all; want 1, 1 (0), 4, 4",
			u.Transactions, u.Cancelled, u.CancelledConflict, u.CancelledWrite, u.WRU())
	}

	// A single write whose condition fails: 1 WRU (the existing item, under
	// 1 KB), no index entry.
	u = step("fail: condition", func(ctx context.Context) error {
		_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tn, Item: map[string]av{"pk": s("E#x"), "sk": s("R#1")},
			ConditionExpression: aws.String("attribute_not_exists(#pk)"), ExpressionAttributeNames: map[string]string{"#pk": "pk"}})
		return err
	})
	check("fail: condition", u, 0, 0, 0, 0)
	if u.ConditionFailed != 1 || u.FailedWrite != 1 {
		t.Errorf("failed condition: %d, %v WRU; want 1, 1", u.ConditionFailed, u.FailedWrite)
	}

	// An Update action inside a transaction is applied to the known image
	// (SET / REMOVE): the item gains a list entry and list-id entry (2) and
	// the next write of it knows its image.
	u = step("tx update", func(ctx context.Context) error {
		_, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Update: &types.Update{TableName: tn, Key: map[string]av{"pk": s("E#x"), "sk": s("S")},
				UpdateExpression:          aws.String("SET #lp = :lp, #ls = if_not_exists(#ls, :ls) REMOVE #gone"),
				ExpressionAttributeNames:  map[string]string{"#lp": dynamo.AttrListPK, "#ls": dynamo.AttrListSK, "#gone": "g"},
				ExpressionAttributeValues: map[string]av{":lp": s("LT#2"), ":ls": s("t0#s")}}},
		}})
		return err
	})
	check("tx update", u, 0, 2, 2, 2)
	u = step("after update", func(ctx context.Context) error {
		_, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: tn, Key: map[string]av{"pk": s("E#x"), "sk": s("S")}})
		return err
	})
	check("after update", u, 1, 0, 2, 2)

	// The meter hides the return values it asked for.
	out, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tn, Item: head})
	if err != nil || out.Attributes != nil {
		t.Errorf("PutItem returned attributes %v (%v) the caller did not ask for", out.Attributes, err)
	}
}
