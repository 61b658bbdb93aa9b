package dynamo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/stela-dev/stela/core"
)

// Backtrace item attributes.
const (
	aBtComponent = "ci"
	aBtBody      = "bt"
)

// AppendBacktraces stores backtraces, each insert-if-absent per (execution,
// version_min, version_max), and returns how many were new.
func (b *Backend) AppendBacktraces(ctx context.Context, bts []core.BacktraceInfo) (int, error) {
	if err := b.checkOpen(); err != nil {
		return 0, err
	}
	var inserted atomic.Int64
	written := make([][]item, len(bts)) // the keys each put wrote
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(backtraceParallelism)
	for i, bt := range bts {
		g.Go(func() error {
			keys, ok, err := b.putBacktrace(gctx, bt)
			written[i] = keys
			if ok {
				inserted.Add(1)
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return int(inserted.Load()), err
	}
	// The writer's half of the retention handshake (retention.go).
	byExec := map[core.ExecutionId][]item{}
	for i, bt := range bts {
		byExec[bt.ExecutionID] = append(byExec[bt.ExecutionID], written[i]...)
	}
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(backtraceParallelism)
	for id, keys := range byExec {
		g.Go(func() error { return b.stampLate(gctx, id, keys) })
	}
	return int(inserted.Load()), g.Wait()
}

// backtraceParallelism bounds the concurrent writes of AppendBacktraces.
const backtraceParallelism = 8

// putBacktrace writes one backtrace (insert-if-absent) and returns the keys
// it wrote: the item and, for an offloaded body, its blob reference.
func (b *Backend) putBacktrace(ctx context.Context, bt core.BacktraceInfo) ([]item, bool, error) {
	comp, err := json.Marshal(bt.ComponentID)
	if err != nil {
		return nil, false, fmt.Errorf("dynamo: encode backtrace component: %w", err)
	}
	body, err := json.Marshal(bt.WasmBacktrace)
	if err != nil {
		return nil, false, fmt.Errorf("dynamo: encode backtrace: %w", err)
	}
	payload, err := b.putPayload(ctx, body, b.inline, ownerOf(bt.ExecutionID, nil))
	if err != nil {
		return nil, false, err
	}
	key := keyOf(pkExec(bt.ExecutionID), skBacktrace(bt.VersionMinIncluding, bt.VersionMaxExcluding))
	keys := []item{key}
	if ref := refKey(payload, bt.ExecutionID); ref != nil {
		keys = append(keys, ref)
	}
	_, err = b.api.PutItem(ctx, &dynamodb.PutItemInput{TableName: b.tableName(),
		Item:                     item{AttrPK: key[AttrPK], AttrSK: key[AttrSK], aBtComponent: avS(string(comp)), aBtBody: avS(payload)},
		ConditionExpression:      aws.String(condNotExists),
		ExpressionAttributeNames: map[string]string{"#pk": AttrPK},
	}, b.optFns...)
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return keys[1:], false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("dynamo: put backtrace %s@%d: %w", bt.ExecutionID, bt.VersionMinIncluding, err)
	}
	return keys, true, nil
}

// GetBacktrace finds the first, last or the backtrace containing a version.
func (b *Backend) GetBacktrace(ctx context.Context, id core.ExecutionId, filter core.BacktraceFilter) (core.BacktraceInfo, error) {
	if err := b.checkOpen(); err != nil {
		return core.BacktraceInfo{}, err
	}
	in := &dynamodb.QueryInput{
		TableName: b.tableName(), ConsistentRead: aws.Bool(true), Limit: aws.Int32(1),
		ExpressionAttributeNames: map[string]string{"#pk": AttrPK, "#sk": AttrSK},
	}
	vals := item{":pk": avS(pkExec(id))}
	switch filter.Kind {
	case "first":
		in.KeyConditionExpression = aws.String("#pk = :pk AND begins_with(#sk, :pre)")
		vals[":pre"] = avS(prefixBacktrace)
	case "last":
		in.KeyConditionExpression = aws.String("#pk = :pk AND begins_with(#sk, :pre)")
		vals[":pre"] = avS(prefixBacktrace)
		in.ScanIndexForward = aws.Bool(false)
	case "specific":
		// The range with the largest min <= v (ranges do not overlap).
		in.KeyConditionExpression = aws.String("#pk = :pk AND #sk BETWEEN :lo AND :hi")
		vals[":lo"] = avS(prefixBacktrace)
		vals[":hi"] = avS(fmt.Sprintf("%s%010d#~", prefixBacktrace, filter.Specific))
		in.ScanIndexForward = aws.Bool(false)
	default:
		return core.BacktraceInfo{}, &core.ValidationError{Reason: "unknown backtrace filter " + filter.Kind}
	}
	in.ExpressionAttributeValues = vals
	out, err := b.api.Query(ctx, in, b.optFns...)
	if err != nil {
		return core.BacktraceInfo{}, fmt.Errorf("dynamo: get backtrace of %s: %w", id, err)
	}
	if len(out.Items) == 0 || b.expiredItem(out.Items[0]) {
		return core.BacktraceInfo{}, notFound("backtrace of " + id.String())
	}
	bt, err := b.decodeBacktrace(ctx, id, out.Items[0])
	if err != nil {
		return core.BacktraceInfo{}, err
	}
	if filter.Kind == "specific" && !(bt.VersionMinIncluding <= filter.Specific && filter.Specific < bt.VersionMaxExcluding) {
		return core.BacktraceInfo{}, notFound(fmt.Sprintf("backtrace of %s at %d", id, filter.Specific))
	}
	return bt, nil
}

func (b *Backend) decodeBacktrace(ctx context.Context, id core.ExecutionId, it item) (core.BacktraceInfo, error) {
	bt := core.BacktraceInfo{ExecutionID: id}
	sk, _ := getS(it, AttrSK)
	var lo, hi uint32
	if _, err := fmt.Sscanf(sk, prefixBacktrace+"%d#%d", &lo, &hi); err != nil {
		return bt, fmt.Errorf("dynamo: backtrace key %q: %w", sk, err)
	}
	bt.VersionMinIncluding, bt.VersionMaxExcluding = core.Version(lo), core.Version(hi)
	comp, _ := getS(it, aBtComponent)
	if err := json.Unmarshal([]byte(comp), &bt.ComponentID); err != nil {
		return bt, fmt.Errorf("dynamo: decode backtrace component: %w", err)
	}
	s, _ := getS(it, aBtBody)
	body, err := b.getPayload(ctx, s)
	if err != nil {
		return bt, err
	}
	if err := json.Unmarshal(body, &bt.WasmBacktrace); err != nil {
		return bt, fmt.Errorf("dynamo: decode backtrace: %w", err)
	}
	return bt, nil
}

// BacktraceRanges returns [min, max) of every stored backtrace of id.
func (b *Backend) BacktraceRanges(ctx context.Context, id core.ExecutionId) ([][2]core.Version, error) {
	if err := b.checkOpen(); err != nil {
		return nil, err
	}
	var out [][2]core.Version
	err := b.queryAll(ctx, &dynamodb.QueryInput{
		TableName: b.tableName(), ConsistentRead: aws.Bool(true),
		KeyConditionExpression:    aws.String("#pk = :pk AND begins_with(#sk, :pre)"),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK, "#sk": AttrSK, "#ttl": AttrTTL},
		ExpressionAttributeValues: item{":pk": avS(pkExec(id)), ":pre": avS(prefixBacktrace)},
		ProjectionExpression:      aws.String("#sk, #ttl"),
	}, func(it item) (bool, error) {
		if b.expiredItem(it) {
			return true, nil // gone for readers (retention.go)
		}
		sk, _ := getS(it, AttrSK)
		var lo, hi uint32
		if _, err := fmt.Sscanf(sk, prefixBacktrace+"%d#%d", &lo, &hi); err != nil {
			return false, fmt.Errorf("dynamo: backtrace key %q: %w", sk, err)
		}
		out = append(out, [2]core.Version{core.Version(lo), core.Version(hi)})
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("dynamo: backtrace ranges of %s: %w", id, err)
	}
	return out, nil
}
