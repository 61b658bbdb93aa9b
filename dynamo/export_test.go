package dynamo

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stela-dev/stela/core"
)

// SetSkipAfterCommit makes commits leave deferred child creations to the
// next reader, as if the process died right after the commit.
func (b *Backend) SetSkipAfterCommit(skip bool) { b.skipAfterCommit = skip }

// RawPartition returns every item whose partition key is pk.
func (b *Backend) RawPartition(ctx context.Context, pk string) ([]map[string]types.AttributeValue, error) {
	var out []map[string]types.AttributeValue
	err := b.queryAll(ctx, &dynamodb.QueryInput{
		TableName: b.tableName(), ConsistentRead: aws.Bool(true),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK},
		ExpressionAttributeValues: item{":pk": avS(pk)},
	}, func(it item) (bool, error) { out = append(out, it); return true, nil })
	return out, err
}

// RawSet sets string attributes on an existing item, bypassing every
// guard (tests use it to fake stale index entries).
func (b *Backend) RawSet(ctx context.Context, pk, sk string, attrs map[string]string) error {
	expr := "SET "
	names := map[string]string{}
	vals := item{}
	i := 0
	for k, v := range attrs {
		if i > 0 {
			expr += ", "
		}
		n, p := "#a"+string(rune('0'+i)), ":v"+string(rune('0'+i))
		expr += n + " = " + p
		names[n] = k
		vals[p] = avS(v)
		i++
	}
	_, err := b.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: b.tableName(), Key: keyOf(pk, sk),
		UpdateExpression: aws.String(expr), ExpressionAttributeNames: names, ExpressionAttributeValues: vals})
	return err
}

// RegisterResponse registers child's response in parent's inbox, as
// DeferResponse does, and reports whether it was elected (tests simulate a
// responder that dies after registering).
func (b *Backend) RegisterResponse(ctx context.Context, parent, child core.ExecutionId) (bool, error) {
	_, js, _ := child.SplitToParts()
	elected, _, err := b.register(ctx, parent, js.String(), inboxKey(parent, child))
	return elected, err
}

// SetAfterRegister runs fn after a response is registered (and deferred),
// before its transaction commits.
func (b *Backend) SetAfterRegister(fn func(child core.ExecutionId)) { b.afterRegister = fn }

// SetAfterExportRead runs fn between an export's read of partitions and
// its second read of their heads.
func (b *Backend) SetAfterExportRead(fn func(ids []core.ExecutionId)) { b.afterExportRead = fn }

// SetBeforeImportHead runs fn before an import writes a head; an error
// stops the import there (a killed process).
func (b *Backend) SetBeforeImportHead(fn func(id core.ExecutionId) error) { b.beforeImportHead = fn }

// RawPutGuard writes the uniqueness guard of child's response as if
// recipient held it (tests of conflicting imports).
func (b *Backend) RawPutGuard(ctx context.Context, child, recipient core.ExecutionId) error {
	_, err := b.api.PutItem(ctx, &dynamodb.PutItemInput{TableName: b.tableName(), Item: item{
		AttrPK: avS(prefixGuardChild + child.String()), AttrSK: avS(skGuard), "to": avS(recipient.String()), "c": avN(1),
		aReq: avS(newRequestID())}})
	return err
}

// RawLeases returns every lock lease item (lease.go) the timers index
// lists, read strongly consistently from the table.
func (b *Backend) RawLeases(ctx context.Context) ([]map[string]types.AttributeValue, error) {
	keys, err := b.timers(ctx, timerLock, core.TS(maxTime))
	if err != nil {
		return nil, err
	}
	var out []map[string]types.AttributeValue
	for _, k := range keys {
		pk, _ := getS(k, AttrPK)
		if len(pk) < len(prefixLease) || pk[:len(prefixLease)] != prefixLease {
			continue
		}
		got, err := b.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: b.tableName(), ConsistentRead: aws.Bool(true),
			Key: keyOf(pk, skLease)})
		if err != nil {
			return nil, err
		}
		if got.Item != nil {
			out = append(out, got.Item)
		}
	}
	return out, nil
}

// RawHead returns the head item of id as stored.
func (b *Backend) RawHead(ctx context.Context, id core.ExecutionId) (map[string]types.AttributeValue, error) {
	got, err := b.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: b.tableName(), ConsistentRead: aws.Bool(true),
		Key: keyOf(pkExec(id), skHead)})
	if err != nil {
		return nil, err
	}
	return got.Item, nil
}

var maxTime = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
