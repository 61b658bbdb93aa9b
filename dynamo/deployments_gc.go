package dynamo

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/stela-dev/stela/cas"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
)

// deploymentOptions are the Options the deployment store keeps.
type deploymentOptions struct {
	gcGrace  time.Duration
	noCounts bool
}

func (b *Backend) now() core.Timestamp {
	if b.clock == nil {
		return store.SystemClock{}.Now()
	}
	return b.clock.Now()
}

// recordPayloadRef records that an item refers to the offloaded payload d
// (blob reference "REF#<d>"/"P"). putPayload calls it after the blob is
// written and before the referring item is committed, so gc_orphan_files
// never sees an offloaded payload without its reference. The reference is
// never removed (executions are never deleted); a commit that fails after
// it leaves a blob that gc keeps.
func (b *Backend) recordPayloadRef(ctx context.Context, d core.ContentDigest) error {
	_, err := b.api.PutItem(ctx, &dynamodb.PutItemInput{TableName: b.tableName(), Item: item{
		AttrPK: avS(prefixRef + d.String()), AttrSK: avS(refPayload), aRefAt: avS(tsText(b.now()))}}, b.optFns...)
	if err != nil {
		return fmt.Errorf("dynamo: record reference to payload %s: %w", d, err)
	}
	return nil
}

// GCOrphanFiles implements core.DeploymentStore with cas.CollectOrphans:
// a blob last written more than Options.GCGrace ago is deleted unless a
// blob reference item names it (see referenced).
func (b *Backend) GCOrphanFiles(ctx context.Context) (uint64, error) {
	if err := b.checkOpen(); err != nil {
		return 0, err
	}
	if b.cas == nil {
		return 0, nil
	}
	c, ok := b.cas.(cas.Collectable)
	if !ok {
		return 0, fmt.Errorf("dynamo: gc: the CAS (%T) cannot list and delete blobs: %w", b.cas, core.ErrNotImplemented)
	}
	n, err := cas.CollectOrphans(ctx, c, b.now().Time, cas.GCGrace(b.deps.gcGrace), b.referenced)
	if err != nil {
		return n, fmt.Errorf("dynamo: %w", err)
	}
	return n, nil
}

// referenced is the cas.ReferencedFunc of GCOrphanFiles: one strongly
// consistent Query of the candidate's reference items. A payload or source
// mapping reference counts as is. A deployment reference names the insert
// that wrote it (deployment id and request id); it counts if that insert
// committed (the deployment item carries the same request id) or if it is
// younger than the grace period (an insert in flight). An older one was left
// by a failed insert and is deleted.
func (b *Backend) referenced(ctx context.Context, candidates []core.ContentDigest) (map[core.ContentDigest]bool, error) {
	refs := map[core.ContentDigest]bool{}
	grace := cas.GCGrace(b.deps.gcGrace)
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
	sk, _ := getS(it, AttrSK)
	rest, ok := strings.CutPrefix(sk, "D#")
	if !ok {
		return true, nil
	}
	if at, err := getTS(it, aRefAt); err != nil || !at.Add(grace).Before(b.now()) {
		return true, nil
	}
	dep, rq, _ := strings.Cut(rest, "#")
	cur, err := b.getItem(ctx, item{AttrPK: avS(pkDeployments), AttrSK: avS(dep)}, aDepReq)
	if err != nil {
		return false, fmt.Errorf("dynamo: deployment %s of a blob reference: %w", dep, err)
	}
	if got, _ := getS(cur, aDepReq); cur != nil && got == rq {
		return true, nil
	}
	_, err = b.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: b.tableName(),
		Key: item{AttrPK: it[AttrPK], AttrSK: it[AttrSK]}}, b.optFns...)
	if err != nil {
		b.log.WarnContext(ctx, "delete stale blob reference", "sk", sk, "err", err)
	}
	return false, nil
}
