package dynamo

import (
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// describer is the part of the DynamoDB client Ready calls.
type describer interface {
	DescribeTable(context.Context, *dynamodb.DescribeTableInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// Ready implements store.ReadyChecker with one DescribeTable call (IAM
// action dynamodb:DescribeTable): the table is ACTIVE and has every index
// of Schema (DisableDigestIndex leaves that one out of the check), each
// ACTIVE. A client without DescribeTable (a test double) is checked with a
// strongly consistent GetItem instead: reachable, schema unknown.
func (b *Backend) Ready(ctx context.Context) error {
	if err := b.checkOpen(); err != nil {
		return err
	}
	d, ok := b.api.(describer)
	if !ok {
		_, err := b.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: b.tableName(), ConsistentRead: aws.Bool(true),
			Key: item{AttrPK: avS("ready"), AttrSK: avS("ready")}}, b.optFns...)
		if err != nil {
			return fmt.Errorf("dynamo: not ready: %w", err)
		}
		return nil
	}
	out, err := d.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: b.tableName()}, b.optFns...)
	if err != nil {
		return fmt.Errorf("dynamo: not ready: %w", err)
	}
	return checkTable(out.Table, b.noDigestIndex)
}

// checkTable compares a described table with Schema.
func checkTable(t *types.TableDescription, noDigestIndex bool) error {
	if t == nil {
		return fmt.Errorf("dynamo: not ready: no table description")
	}
	name := aws.ToString(t.TableName)
	if t.TableStatus != types.TableStatusActive {
		return fmt.Errorf("dynamo: not ready: table %s is %s", name, t.TableStatus)
	}
	status := map[string]types.IndexStatus{}
	for _, ix := range t.GlobalSecondaryIndexes {
		status[aws.ToString(ix.IndexName)] = ix.IndexStatus
	}
	local := map[string]bool{}
	for _, ix := range t.LocalSecondaryIndexes {
		local[aws.ToString(ix.IndexName)] = true
	}
	var missing []string
	for _, ix := range Schema.GlobalIndexes {
		if noDigestIndex && ix.Name == IndexPendingDigest {
			continue
		}
		st, ok := status[ix.Name]
		switch {
		case !ok:
			missing = append(missing, ix.Name)
		case st != types.IndexStatusActive:
			return fmt.Errorf("dynamo: not ready: index %s of table %s is %s", ix.Name, name, st)
		}
	}
	for _, ix := range Schema.LocalIndexes {
		if !local[ix.Name] {
			missing = append(missing, ix.Name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("dynamo: not ready: table %s lacks the indexes %v (schema older than this build?)", name, missing)
	}
	return nil
}
