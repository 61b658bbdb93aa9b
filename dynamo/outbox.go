package dynamo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
)

// deferredChild is a child creation that did not fit into the transaction:
// its head item (and version-0 event item, if any), written later with
// attribute_not_exists.
type deferredChild struct {
	ID    core.ExecutionId `json:"id"`
	Items []avJSON         `json:"items"`
}

// fit makes p respect TransactWriteItems' limits. When it has too many
// actions or bytes, creations of new executions (children) are moved, last
// first, into an outbox item written beside the first updated head (the
// anchor), which also gets ob = <request id>. Everything else must fit.
func (t *tx) fit(p *plan) error {
	count, bytes := len(p.ops), 0
	for _, o := range p.ops {
		bytes += o.size
	}
	if count <= maxTxActions && bytes <= maxTxBytes {
		return nil
	}
	anchor := -1
	for i, o := range p.ops {
		if o.kind == opHeadUpdate {
			anchor = i
			break
		}
	}
	tooLarge := func() error {
		return &core.ValidationError{Reason: fmt.Sprintf(
			"dynamo: a commit of %d items / %d bytes exceeds DynamoDB's transaction limits", count, bytes)}
	}
	if anchor < 0 {
		return tooLarge()
	}
	// Group the ops of each created execution; only executions whose ops are
	// all creation ops can be deferred.
	groups := map[core.ExecutionId][]int{}
	deferrable := map[core.ExecutionId]bool{}
	var order []core.ExecutionId
	for i, o := range p.ops {
		if o.kind == opGuardCheck {
			continue
		}
		if _, ok := groups[o.exec]; !ok {
			order = append(order, o.exec)
			deferrable[o.exec] = true
		}
		groups[o.exec] = append(groups[o.exec], i)
		if o.kind != opHeadCreate && !(o.kind == opEvent && o.unique) {
			deferrable[o.exec] = false
		}
	}
	drop := map[int]bool{}
	var children []deferredChild
	for k := len(order) - 1; k >= 0 && (count+1 > maxTxActions || bytes > maxTxBytes-outboxInline); k-- {
		id := order[k]
		if !deferrable[id] {
			continue
		}
		c := deferredChild{ID: id}
		for _, i := range groups[id] {
			drop[i] = true
			count--
			bytes -= p.ops[i].size
			c.Items = append(c.Items, encodeAV(p.ops[i].put))
		}
		children = append(children, c)
	}
	if len(children) == 0 || count+1 > maxTxActions || bytes > maxTxBytes-outboxInline {
		return tooLarge()
	}
	data, err := json.Marshal(children)
	if err != nil {
		return fmt.Errorf("dynamo: encode outbox: %w", err)
	}
	payload, err := t.b.putPayload(t.ctx, data, outboxInline, ownerOf(p.ops[anchor].exec, nil))
	if err != nil {
		return err
	}
	kept := make([]op, 0, count+1)
	for i, o := range p.ops {
		if !drop[i] {
			kept = append(kept, o)
		}
	}
	anchorID := p.ops[anchor].exec
	for i := range kept {
		if kept[i].kind == opHeadUpdate && kept[i].exec == anchorID {
			kept[i].put[aOutbox] = avS(p.rq)
			kept[i].size = ItemSize(kept[i].put)
		}
	}
	ob := item{AttrPK: avS(pkExec(anchorID)), AttrSK: avS(prefixOutbox + p.rq), aPayload: avS(payload), aReq: avS(p.rq)}
	kept = append(kept, newPut(opOutbox, anchorID, ob, false, "outbox of "+anchorID.String()))
	p.ops = kept
	p.deferred = children
	p.anchor = anchorID
	t.b.stats.deferred.Add(int64(len(children)))
	return nil
}

// precheckDeferred proves, with strongly consistent reads, that no deferred
// child exists yet (a create of an existing id must fail the whole commit).
func (b *Backend) precheckDeferred(ctx context.Context, p *plan) error {
	keys := make([]item, 0, len(p.deferred))
	for _, c := range p.deferred {
		keys = append(keys, keyOf(pkExec(c.ID), skHead))
	}
	found, err := b.batchGet(ctx, keys, true, AttrPK)
	if err != nil {
		return fmt.Errorf("dynamo: check children: %w", err)
	}
	for _, it := range found {
		pk, _ := getS(it, AttrPK)
		return conflict("execution %s already exists", pk[len(prefixExec):])
	}
	return nil
}

// finishOutbox completes a fan-out recorded on the head of anchor: it reads
// the outbox item, creates the missing children and clears the outbox.
func (b *Backend) finishOutbox(ctx context.Context, anchor core.ExecutionId, rq string) error {
	out, err := b.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: b.tableName(), ConsistentRead: aws.Bool(true),
		Key: keyOf(pkExec(anchor), prefixOutbox+rq)}, b.optFns...)
	if err != nil {
		return fmt.Errorf("dynamo: read outbox of %s: %w", anchor, err)
	}
	if out.Item != nil {
		s, _ := getS(out.Item, aPayload)
		data, err := b.getPayload(ctx, s)
		if err != nil {
			return err
		}
		var children []deferredChild
		if err := json.Unmarshal(data, &children); err != nil {
			return fmt.Errorf("dynamo: decode outbox of %s: %w", anchor, err)
		}
		if err := b.materialise(ctx, children, rq); err != nil {
			return err
		}
	}
	return b.clearOutbox(ctx, anchor, rq)
}

// materialise writes each deferred child with attribute_not_exists. An
// existing item created by this same commit (cq/rq = rq) is fine; one
// created by somebody else is reported in the log (see doc.go, "Fan-out").
func (b *Backend) materialise(ctx context.Context, children []deferredChild, rq string) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(materialiseParallelism)
	for _, c := range children {
		for _, enc := range c.Items {
			it, err := decodeAV(enc)
			if err != nil {
				return errors.Join(fmt.Errorf("dynamo: decode outbox child %s: %w", c.ID, err), g.Wait())
			}
			g.Go(func() error {
				if err := b.putIfAbsent(gctx, c.ID, it, rq); err != nil {
					return err
				}
				b.stats.materialised.Add(1)
				return nil
			})
		}
	}
	return g.Wait()
}

// materialiseParallelism bounds the concurrent PutItem calls of materialise.
const materialiseParallelism = 16

func (b *Backend) putIfAbsent(ctx context.Context, id core.ExecutionId, it item, rq string) error {
	_, err := b.api.PutItem(ctx, &dynamodb.PutItemInput{TableName: b.tableName(), Item: it,
		ConditionExpression: aws.String(condNotExists), ExpressionAttributeNames: map[string]string{"#pk": AttrPK},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}, b.optFns...)
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		cq, _ := getS(ccf.Item, aCreateReq)
		orq, _ := getS(ccf.Item, aReq)
		if cq != rq && orq != rq {
			sk, _ := getS(it, AttrSK)
			b.log.ErrorContext(ctx, "fan-out child already created by another commit",
				core.LogKeyExecutionID, id.String(), core.LogKeyRow, sk, core.LogKeyRequestID, rq)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("dynamo: create child %s: %w", id, err)
	}
	return nil
}

// clearOutbox removes ob from the anchor head (bumping its revision so that
// transactions that read it with ob set re-run) and deletes the outbox item.
func (b *Backend) clearOutbox(ctx context.Context, anchor core.ExecutionId, rq string) error {
	_, err := b.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: b.tableName(),
		Key:                       keyOf(pkExec(anchor), skHead),
		UpdateExpression:          aws.String("REMOVE #ob SET #rv = #rv + :one"),
		ConditionExpression:       aws.String("#ob = :ob"),
		ExpressionAttributeNames:  map[string]string{"#ob": aOutbox, "#rv": aRev},
		ExpressionAttributeValues: item{":ob": avS(rq), ":one": avN(1)},
	}, b.optFns...)
	var ccf *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &ccf) {
		return fmt.Errorf("dynamo: clear outbox of %s: %w", anchor, err)
	}
	_, err = b.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: b.tableName(),
		Key: keyOf(pkExec(anchor), prefixOutbox+rq)}, b.optFns...)
	if err != nil {
		return fmt.Errorf("dynamo: delete outbox of %s: %w", anchor, err)
	}
	return nil
}

// batchGet reads keys (in chunks of 100), optionally strongly consistent.
func (b *Backend) batchGet(ctx context.Context, keys []item, consistent bool, attrs ...string) ([]item, error) {
	var out []item
	for start := 0; start < len(keys); start += 100 {
		chunk := keys[start:min(start+100, len(keys))]
		ka := types.KeysAndAttributes{Keys: chunk, ConsistentRead: aws.Bool(consistent)}
		if len(attrs) > 0 {
			ka.ExpressionAttributeNames = map[string]string{}
			ka.ProjectionExpression = aws.String(projectionExpr(ka.ExpressionAttributeNames, attrs))
		}
		req := map[string]types.KeysAndAttributes{b.table: ka}
		err := store.Retry(ctx, "dynamo: batch get", b.maxAttempts, func(int) error {
			res, err := b.api.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req}, b.optFns...)
			if err != nil {
				return err
			}
			out = append(out, res.Responses[b.table]...)
			if req = res.UnprocessedKeys; len(req) > 0 {
				return store.Again(fmt.Errorf("%d keys unprocessed (throttled)", len(req[b.table].Keys)))
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// --- attribute values as JSON (for the outbox listing) ------------------------------

type avJSON struct {
	S    *string           `json:"S,omitempty"`
	N    *string           `json:"N,omitempty"`
	B    []byte            `json:"B,omitempty"`
	BOOL *bool             `json:"BOOL,omitempty"`
	NULL bool              `json:"NULL,omitempty"`
	L    *[]avJSON         `json:"L,omitempty"`
	M    map[string]avJSON `json:"M,omitempty"`
}

func encodeAV(it item) avJSON { return toAVJSON(&types.AttributeValueMemberM{Value: it}) }

func toAVJSON(v types.AttributeValue) avJSON {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return avJSON{S: aws.String(v.Value)}
	case *types.AttributeValueMemberN:
		return avJSON{N: aws.String(v.Value)}
	case *types.AttributeValueMemberB:
		return avJSON{B: v.Value}
	case *types.AttributeValueMemberBOOL:
		return avJSON{BOOL: aws.Bool(v.Value)}
	case *types.AttributeValueMemberNULL:
		return avJSON{NULL: true}
	case *types.AttributeValueMemberL:
		l := make([]avJSON, len(v.Value))
		for i, e := range v.Value {
			l[i] = toAVJSON(e)
		}
		return avJSON{L: &l}
	case *types.AttributeValueMemberM:
		m := make(map[string]avJSON, len(v.Value))
		for k, e := range v.Value {
			m[k] = toAVJSON(e)
		}
		return avJSON{M: m}
	}
	return avJSON{NULL: true}
}

func decodeAV(j avJSON) (item, error) {
	v, err := fromAVJSON(j)
	if err != nil {
		return nil, err
	}
	m, ok := v.(*types.AttributeValueMemberM)
	if !ok {
		return nil, errors.New("outbox entry is not a map")
	}
	return m.Value, nil
}

func fromAVJSON(j avJSON) (types.AttributeValue, error) {
	switch {
	case j.S != nil:
		return avS(*j.S), nil
	case j.N != nil:
		return &types.AttributeValueMemberN{Value: *j.N}, nil
	case j.B != nil:
		return &types.AttributeValueMemberB{Value: j.B}, nil
	case j.BOOL != nil:
		return avBool(*j.BOOL), nil
	case j.L != nil:
		l := make([]types.AttributeValue, len(*j.L))
		for i, e := range *j.L {
			v, err := fromAVJSON(e)
			if err != nil {
				return nil, err
			}
			l[i] = v
		}
		return &types.AttributeValueMemberL{Value: l}, nil
	case j.M != nil:
		m := make(map[string]types.AttributeValue, len(j.M))
		for k, e := range j.M {
			v, err := fromAVJSON(e)
			if err != nil {
				return nil, err
			}
			m[k] = v
		}
		return &types.AttributeValueMemberM{Value: m}, nil
	case j.NULL:
		return &types.AttributeValueMemberNULL{Value: true}, nil
	}
	return nil, errors.New("empty attribute value")
}
