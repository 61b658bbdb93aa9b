package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Key attributes of the table and its indexes (doc.go describes every item
// kind). All key attributes are strings.
const (
	// AttrPK and AttrSK are the table's partition and sort key.
	AttrPK = "pk"
	AttrSK = "sk"
	// AttrOrdinal is the sort key of IndexOrdinals (LSI): "J#<join set>#<ordinal>"
	// on spilled JoinNext events, "R#<join set>#<ordinal>" on responses.
	AttrOrdinal = "l1"
	// AttrPendingFFQN, AttrPendingDigest and AttrPendingSort key the pending
	// indexes; present only while state = pending_at and lifecycle = active.
	AttrPendingFFQN   = "pf"
	AttrPendingDigest = "pd"
	AttrPendingSort   = "ps"
	// AttrTimerPK and AttrTimerSK key IndexTimers: locked heads ("L#<shard>",
	// lock expiry) and unpaused delays ("D#<shard>", expiry).
	AttrTimerPK = "tp"
	AttrTimerSK = "ts"
	// AttrCancelPK and AttrCancelSK key IndexCancelling while lifecycle = cancelling.
	AttrCancelPK = "cp"
	AttrCancelSK = "cs"
	// AttrListPK and AttrListSK key IndexList (every head); AttrListPK and
	// AttrPK key IndexListByID.
	AttrListPK = "lp"
	AttrListSK = "ls"
	// AttrIncompatible is the head's incompatible digest, projected into
	// IndexPendingFFQN for the auto-upgrade filter.
	AttrIncompatible = "ic"
)

// Index names.
const (
	IndexOrdinals      = "ordinals"
	IndexPendingFFQN   = "pending-ffqn"
	IndexPendingDigest = "pending-digest"
	IndexTimers        = "timers"
	IndexCancelling    = "cancelling"
	IndexList          = "list"
	IndexListByID      = "list-id"
)

// Projection types of TableIndex.Projection.
const (
	ProjectionKeysOnly = "KEYS_ONLY"
	ProjectionInclude  = "INCLUDE"
	ProjectionAll      = "ALL"
)

// TableKey is a partition key and an optional sort key.
type TableKey struct {
	PartitionKey string
	SortKey      string
}

// TableAttribute is an attribute definition; Type is "S", "N" or "B".
type TableAttribute struct {
	Name string
	Type string
}

// TableIndex describes a secondary index.
type TableIndex struct {
	Name string
	Key  TableKey
	// Projection is ProjectionKeysOnly, ProjectionInclude or ProjectionAll.
	Projection string
	// NonKeyAttributes are projected when Projection is ProjectionInclude.
	NonKeyAttributes []string
}

// TableSchema describes the table in plain Go types, so that infra/ (CDK)
// creates exactly what CreateTable creates. Billing is on-demand.
type TableSchema struct {
	Attributes    []TableAttribute
	Key           TableKey
	GlobalIndexes []TableIndex
	LocalIndexes  []TableIndex
}

// Schema is the single-table schema (see doc.go for the item kinds).
var Schema = TableSchema{
	Attributes: []TableAttribute{
		{AttrPK, "S"}, {AttrSK, "S"}, {AttrOrdinal, "S"},
		{AttrPendingFFQN, "S"}, {AttrPendingDigest, "S"}, {AttrPendingSort, "S"},
		{AttrTimerPK, "S"}, {AttrTimerSK, "S"},
		{AttrCancelPK, "S"}, {AttrCancelSK, "S"},
		{AttrListPK, "S"}, {AttrListSK, "S"},
		{AttrDeployPK, "S"}, {AttrDeploySK, "S"},
		{AttrRetentionPK, "S"}, {AttrRetentionSK, "S"},
	},
	Key: TableKey{PartitionKey: AttrPK, SortKey: AttrSK},
	GlobalIndexes: []TableIndex{
		{Name: IndexPendingFFQN, Key: TableKey{AttrPendingFFQN, AttrPendingSort},
			Projection: ProjectionInclude, NonKeyAttributes: []string{AttrIncompatible}},
		{Name: IndexPendingDigest, Key: TableKey{AttrPendingDigest, AttrPendingSort}, Projection: ProjectionKeysOnly},
		{Name: IndexTimers, Key: TableKey{AttrTimerPK, AttrTimerSK}, Projection: ProjectionKeysOnly},
		{Name: IndexCancelling, Key: TableKey{AttrCancelPK, AttrCancelSK}, Projection: ProjectionKeysOnly},
		{Name: IndexList, Key: TableKey{AttrListPK, AttrListSK}, Projection: ProjectionKeysOnly},
		// Sorted by the head's own pk "E#<id>": execution-id pages of
		// list_executions. No attribute of its own, so DynamoDB backfills it
		// from the existing heads when it is added to a table.
		{Name: IndexListByID, Key: TableKey{AttrListPK, AttrPK}, Projection: ProjectionKeysOnly},
		{Name: IndexDeployments, Key: TableKey{AttrDeployPK, AttrDeploySK}, Projection: ProjectionKeysOnly},
		// Finished executions by finish time: the retention pass's
		// candidates (retention.go).
		{Name: IndexRetention, Key: TableKey{AttrRetentionPK, AttrRetentionSK}, Projection: ProjectionKeysOnly},
	},
	LocalIndexes: []TableIndex{
		{Name: IndexOrdinals, Key: TableKey{AttrPK, AttrOrdinal}, Projection: ProjectionAll},
	},
}

// CreateTableInput returns the CreateTable request for Schema (on-demand).
func CreateTableInput(tableName string) *dynamodb.CreateTableInput {
	in := &dynamodb.CreateTableInput{
		TableName:   aws.String(tableName),
		BillingMode: types.BillingModePayPerRequest,
		KeySchema:   keySchema(Schema.Key),
	}
	for _, a := range Schema.Attributes {
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{
			AttributeName: aws.String(a.Name), AttributeType: types.ScalarAttributeType(a.Type)})
	}
	for _, ix := range Schema.GlobalIndexes {
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, types.GlobalSecondaryIndex{
			IndexName: aws.String(ix.Name), KeySchema: keySchema(ix.Key), Projection: projection(ix)})
	}
	for _, ix := range Schema.LocalIndexes {
		in.LocalSecondaryIndexes = append(in.LocalSecondaryIndexes, types.LocalSecondaryIndex{
			IndexName: aws.String(ix.Name), KeySchema: keySchema(ix.Key), Projection: projection(ix)})
	}
	return in
}

func keySchema(k TableKey) []types.KeySchemaElement {
	ks := []types.KeySchemaElement{{AttributeName: aws.String(k.PartitionKey), KeyType: types.KeyTypeHash}}
	if k.SortKey != "" {
		ks = append(ks, types.KeySchemaElement{AttributeName: aws.String(k.SortKey), KeyType: types.KeyTypeRange})
	}
	return ks
}

func projection(ix TableIndex) *types.Projection {
	p := &types.Projection{ProjectionType: types.ProjectionType(ix.Projection)}
	if len(ix.NonKeyAttributes) > 0 {
		p.NonKeyAttributes = append([]string(nil), ix.NonKeyAttributes...)
	}
	return p
}

// CreateTable creates the table with its indexes (on-demand billing),
// waits until it is ACTIVE and enables its time-to-live on AttrTTL (also on
// a table that existed without it). A table that already exists is not an
// error (its schema is not compared).
func CreateTable(ctx context.Context, client *dynamodb.Client, tableName string) error {
	_, err := client.CreateTable(ctx, CreateTableInput(tableName))
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("dynamo: create table %s: %w", tableName, err)
	}
	w := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = 200 * time.Millisecond
		o.MaxDelay = 2 * time.Second
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tableName)}, 5*time.Minute); err != nil {
		return fmt.Errorf("dynamo: wait for table %s: %w", tableName, err)
	}
	return enableTTL(ctx, client, tableName) // retention.go
}
