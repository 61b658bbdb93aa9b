package dynamo

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// described is the description of a table created by CreateTableInput,
// every index in status st.
func described(tableStatus types.TableStatus, st types.IndexStatus) *types.TableDescription {
	in := CreateTableInput("t")
	d := &types.TableDescription{TableName: aws.String("t"), TableStatus: tableStatus}
	for _, ix := range in.GlobalSecondaryIndexes {
		d.GlobalSecondaryIndexes = append(d.GlobalSecondaryIndexes, types.GlobalSecondaryIndexDescription{IndexName: ix.IndexName, IndexStatus: st})
	}
	for _, ix := range in.LocalSecondaryIndexes {
		d.LocalSecondaryIndexes = append(d.LocalSecondaryIndexes, types.LocalSecondaryIndexDescription{IndexName: ix.IndexName})
	}
	return d
}

func TestCheckTable(t *testing.T) {
	if err := checkTable(described(types.TableStatusActive, types.IndexStatusActive), false); err != nil {
		t.Errorf("active table and indexes: %v", err)
	}
	if err := checkTable(described(types.TableStatusUpdating, types.IndexStatusActive), false); err == nil || !strings.Contains(err.Error(), "UPDATING") {
		t.Errorf("updating table: %v, want not ready", err)
	}
	if err := checkTable(described(types.TableStatusActive, types.IndexStatusCreating), false); err == nil || !strings.Contains(err.Error(), "CREATING") {
		t.Errorf("index being created (backfill): %v, want not ready", err)
	}
	d := described(types.TableStatusActive, types.IndexStatusActive)
	var kept []types.GlobalSecondaryIndexDescription
	for _, ix := range d.GlobalSecondaryIndexes {
		if aws.ToString(ix.IndexName) != IndexPendingDigest {
			kept = append(kept, ix)
		}
	}
	d.GlobalSecondaryIndexes = kept
	if err := checkTable(d, false); err == nil || !strings.Contains(err.Error(), IndexPendingDigest) {
		t.Errorf("table without the digest index: %v, want it named", err)
	}
	if err := checkTable(d, true); err != nil {
		t.Errorf("table without the digest index, DisableDigestIndex: %v", err)
	}
}
