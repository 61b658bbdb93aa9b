package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
)

// deploymentOptions are the Options the deployment rows keep.
type deploymentOptions struct {
	noCounts bool
}

func (b *Backend) now() core.Timestamp {
	if b.clock == nil {
		return store.SystemClock{}.Now()
	}
	return b.clock.Now()
}

// aheadParallelism bounds the PutItem calls of writeAhead.
const aheadParallelism = 8

// writeAhead writes a plan's ahead items before its commit, a few at a
// time; the first failure cancels the others.
func (b *Backend) writeAhead(ctx context.Context, ahead []aheadPut) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(aheadParallelism)
	for _, a := range ahead {
		g.Go(func() error {
			in := &dynamodb.PutItemInput{TableName: b.tableName(), Item: a.it}
			if a.ifAbsent {
				in.ConditionExpression, in.ExpressionAttributeNames = aws.String(condNotExists), map[string]string{"#pk": AttrPK}
			}
			_, err := b.api.PutItem(gctx, in, b.optFns...)
			var ccf *types.ConditionalCheckFailedException
			if err != nil && !(a.ifAbsent && errors.As(err, &ccf)) {
				pk, _ := getS(a.it, AttrPK)
				return fmt.Errorf("dynamo: write %s before the commit: %w", pk, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// recordPayloadRef records that an item refers to the offloaded payload d
// (blob reference "REF#<d>"/"P#<root>" for an execution tree's payload,
// "P" for a deployment's). putPayload calls it after the blob is written
// and before the referring item is committed, so gc_orphan_files never
// sees an offloaded payload without its reference. A tree's reference
// expires with the tree (retention.go), a deployment's is never removed;
// a commit that fails after it leaves a blob that gc keeps until then.
func (b *Backend) recordPayloadRef(ctx context.Context, d core.ContentDigest, owner payloadOwner) error {
	it := item{AttrPK: avS(prefixRef + d.String()), AttrSK: avS(owner.refSK()), aRefAt: avS(b.now().String())}
	if owner.ttl > 0 {
		it[AttrTTL] = avN(owner.ttl)
	}
	_, err := b.api.PutItem(ctx, &dynamodb.PutItemInput{TableName: b.tableName(), Item: it}, b.optFns...)
	if err != nil {
		return fmt.Errorf("dynamo: record reference to payload %s: %w", d, err)
	}
	return nil
}

// BlobReferences implements store.Queries: one strongly consistent Query
// of each candidate's reference items. A payload or source mapping
// reference counts as is. A deployment reference names the insert that
// wrote it (deployment id and request id); it counts if that insert
// committed (the deployment item was created by the same request) or if it
// is younger than grace (an insert in flight). An older one was left by a
// failed insert and is deleted.
func (b *Backend) BlobReferences(ctx context.Context, candidates []core.ContentDigest, grace time.Duration) (map[core.ContentDigest]bool, error) {
	if err := b.checkOpen(); err != nil {
		return nil, err
	}
	refs := map[core.ContentDigest]bool{}
	for _, d := range candidates {
		in := &dynamodb.QueryInput{TableName: b.tableName(), ConsistentRead: aws.Bool(true),
			KeyConditionExpression:    aws.String("#pk = :pk"),
			ExpressionAttributeNames:  map[string]string{"#pk": AttrPK},
			ExpressionAttributeValues: item{":pk": avS(prefixRef + d.String())}}
	pages:
		for {
			out, err := b.api.Query(ctx, in, b.optFns...)
			if err != nil {
				return nil, fmt.Errorf("dynamo: references of %s: %w", d, err)
			}
			for _, it := range out.Items {
				live, err := b.liveRef(ctx, it, grace)
				if err != nil {
					return nil, err
				}
				if live {
					refs[d] = true
					break pages
				}
			}
			if out.LastEvaluatedKey == nil {
				break
			}
			in.ExclusiveStartKey = out.LastEvaluatedKey
		}
	}
	return refs, nil
}

func (b *Backend) liveRef(ctx context.Context, it item, grace time.Duration) (bool, error) {
	if b.expiredItem(it) {
		return false, nil // its tree expired (retention.go)
	}
	sk, _ := getS(it, AttrSK)
	rest, ok := strings.CutPrefix(sk, "D#")
	if !ok {
		return true, nil
	}
	if at, err := getTS(it, aRefAt); err != nil || !at.Add(grace).Before(b.now()) {
		return true, nil
	}
	dep, rq, _ := strings.Cut(rest, "#")
	out, err := b.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: b.tableName(), Key: keyOf(pkDeployments, dep),
		ConsistentRead: aws.Bool(true)}, b.optFns...)
	if err != nil {
		return false, fmt.Errorf("dynamo: deployment %s of a blob reference: %w", dep, err)
	}
	if cur := out.Item; cur != nil {
		// cq is the insert's request id; items written before cq existed
		// carry it in rq, which nothing rewrote then.
		created, ok := getS(cur, aCreateReq)
		if !ok {
			created, _ = getS(cur, aReq)
		}
		if created == rq {
			return true, nil
		}
	}
	_, err = b.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: b.tableName(),
		Key: item{AttrPK: it[AttrPK], AttrSK: it[AttrSK]}}, b.optFns...)
	if err != nil {
		b.log.WarnContext(ctx, "delete stale blob reference", core.LogKeyRow, sk, core.LogKeyErr, err)
	}
	return false, nil
}
