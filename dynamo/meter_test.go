package dynamo_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/dynamo"
	"github.com/stela-dev/stela/dynamo/dynamometer"
	"github.com/stela-dev/stela/store"
)

// TestCapacityMeterBillsEachIndexEntryOfAFanOut: a workflow submitting 10
// children in one append_batch_create_new_execution, through store.Service.
//
// By hand: the parent is locked before and after (its timers, list and
// deployments entries keep their keys; it has no pending entry), so its
// head rewrite changes no index entry. Each child is created pending, so its
// head gets an entry in pending-ffqn, pending-digest, list, list-id and
// deployments: 5 × 10 = 50 entries (1 WRU each: KEYS_ONLY / INCLUDE entries
// are well under 1 KB). The lean layout (no digest index, no deployment
// counts) leaves pending-ffqn, list and list-id: 3 × 10 = 30. DynamoDB Local's
// ConsumedCapacity bills this transaction's index writes once per index.
func TestCapacityMeterBillsEachIndexEntryOfAFanOut(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts dynamo.Options
		want int
	}{
		{"Default", dynamo.Options{}, 50},
		{"Lean", dynamo.Options{DisableDigestIndex: true, DisableDeploymentCounts: true}, 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			meter := dynamometer.NewCapacityMeter()
			b, _ := newBackend(t, tc.opts, meter.Register)
			svc := store.New(b, store.Options{Clock: &fixedClock{t0}})
			parent := newID()
			v := lockedWorkflow(t, svc, parent)
			batch, children := fanOut(parent, 10)
			for i := range children {
				children[i].ComponentID = compDigest
			}
			if _, err := svc.AppendBatchCreateNewExecution(dynamometer.WithMeterLabel(ctx, "submit"), t0, batch, parent, v, children, nil); err != nil {
				t.Fatal(err)
			}
			u := meter.Snapshot()["submit"]
			if u.IndexEntries != tc.want || u.IndexWrite != float64(tc.want) {
				t.Errorf("10-child submit: %d index entries, %v index WRU; want %d, %d", u.IndexEntries, u.IndexWrite, tc.want, tc.want)
			}
			if u.Transactions != 1 || u.Cancelled != 0 || u.UnknownImages != 0 {
				t.Errorf("10-child submit: %d transactions, %d cancelled, %d unknown images; want 1, 0, 0", u.Transactions, u.Cancelled, u.UnknownImages)
			}
			// 11 heads written in a transaction: at least 2 WRU each.
			if u.TxWrite < 22 {
				t.Errorf("10-child submit: %v transactional table WRU, want ≥ 22", u.TxWrite)
			}
		})
	}
}

var compDigest = core.ComponentId{ComponentType: core.ComponentTypeActivity, Name: "act",
	ComponentDigest: mustV(core.ParseComponentDigest("sha256:" + strings.Repeat("ab", 32)))}
