package dynamo

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
)

// Log item attributes.
const (
	aLogExec    = "x"
	aLogRun     = "r"
	aLogAt      = "t"
	aLogLevel   = "lv"
	aLogMessage = "m"
	aLogStream  = "st"
	aLogPayload = "pl"
	aSeq        = "n"
)

// AppendLogs stores log rows. Cursors come from one atomic counter item
// (UpdateItem ADD n, one call per batch), so they are int64, unique and
// increasing in allocation order; rows are written with BatchWriteItem into
// the partition of their top-level execution.
func (b *Backend) AppendLogs(ctx context.Context, rows []core.LogInfoAppendRow) error {
	if err := b.checkOpen(); err != nil {
		return err
	}
	if len(rows) == 0 {
		return nil
	}
	out, err := b.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: b.tableName(), Key: keyOf(pkLogSeq, skLogSeq),
		UpdateExpression:          aws.String("ADD #n :k"),
		ExpressionAttributeNames:  map[string]string{"#n": aSeq},
		ExpressionAttributeValues: item{":k": avN(len(rows))},
		ReturnValues:              types.ReturnValueUpdatedNew,
	}, b.optFns...)
	if err != nil {
		return fmt.Errorf("dynamo: allocate %d log cursors: %w", len(rows), err)
	}
	hi, _, err := getN(out.Attributes, aSeq)
	if err != nil {
		return err
	}
	first := hi - int64(len(rows)) + 1
	reqs := make([]types.WriteRequest, 0, len(rows))
	byRoot := map[core.ExecutionId][]item{} // for the retention handshake
	for i, r := range rows {
		root := r.ExecutionID.TopLevel()
		byRoot[root] = append(byRoot[root], keyOf(pkLog(r.ExecutionID), skLog(core.LogCursor(first+int64(i)))))
		it := item{
			AttrPK: avS(pkLog(r.ExecutionID)), AttrSK: avS(skLog(core.LogCursor(first + int64(i)))),
			aLogExec: avS(r.ExecutionID.String()), aLogRun: avS(r.RunID.String()), aLogAt: avS(r.Entry.CreatedAt.String()),
		}
		if r.Entry.IsStream() {
			it[aLogStream] = avN(r.Entry.StreamType)
			it[aLogPayload] = &types.AttributeValueMemberB{Value: append([]byte{}, r.Entry.Payload...)}
		} else {
			it[aLogLevel] = avN(r.Entry.Level)
			it[aLogMessage] = avS(r.Entry.Message)
		}
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: it}})
	}
	if err := b.batchWrite(ctx, reqs); err != nil {
		return err
	}
	// The writer's half of the retention handshake (retention.go).
	for root, keys := range byRoot {
		if err := b.stampLate(ctx, root, keys); err != nil {
			return err
		}
	}
	return nil
}

func (b *Backend) batchWrite(ctx context.Context, reqs []types.WriteRequest) error {
	for start := 0; start < len(reqs); start += 25 {
		pending := map[string][]types.WriteRequest{b.table: reqs[start:min(start+25, len(reqs))]}
		err := store.Retry(ctx, "dynamo: batch write", b.maxAttempts, func(int) error {
			out, err := b.api.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: pending}, b.optFns...)
			if err != nil {
				return fmt.Errorf("dynamo: batch write: %w", err)
			}
			if pending = out.UnprocessedItems; len(pending) > 0 {
				return store.Again(fmt.Errorf("%d items unprocessed (throttled)", len(pending[b.table])))
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// ListLogs returns log rows of id (and of ids having id as a string prefix
// when showDerived) matching filter, in scan order: ascending cursors for
// NewerThan, descending for OlderThan.
func (b *Backend) ListLogs(ctx context.Context, id core.ExecutionId, showDerived bool, filter core.LogFilter, p core.Pagination[core.LogCursor]) ([]core.LogEntryRow, error) {
	if err := b.checkOpen(); err != nil {
		return nil, err
	}
	if p.Length == 0 {
		return nil, nil
	}
	var op string
	switch p.Rel() {
	case ">":
		op = ">"
	case ">=":
		op = ">="
	case "<":
		op = "<"
	default:
		op = "<="
	}
	cond := "#pk = :pk"
	vals := item{":pk": avS(pkLog(id))}
	names := map[string]string{"#pk": AttrPK}
	// Cursors are >= 1; keys are zero-padded, so negative cursors need no bound.
	if p.Cursor >= 0 {
		cond += " AND #sk " + op + " :c"
		vals[":c"] = avS(skLog(p.Cursor))
		names["#sk"] = AttrSK
	} else if op == "<" || op == "<=" {
		return nil, nil
	}
	in := &dynamodb.QueryInput{
		TableName: b.tableName(), ConsistentRead: aws.Bool(true),
		KeyConditionExpression: aws.String(cond), ExpressionAttributeNames: names, ExpressionAttributeValues: vals,
		ScanIndexForward: aws.Bool(!p.IsDesc()), Limit: aws.Int32(int32(min(max(int(p.Length), 25), queryPageSize))),
	}
	idText := id.String()
	var out []core.LogEntryRow
	err := b.queryAll(ctx, in, func(it item) (bool, error) {
		if b.expiredItem(it) {
			return true, nil // gone for readers (retention.go)
		}
		x, _ := getS(it, aLogExec)
		if x != idText && !(showDerived && strings.HasPrefix(x, idText)) {
			return true, nil
		}
		row, err := decodeLog(it)
		if err != nil {
			return false, err
		}
		if !filter.Matches(&row.Entry) {
			return true, nil
		}
		out = append(out, row)
		return len(out) < int(p.Length), nil
	})
	if err != nil {
		return nil, fmt.Errorf("dynamo: list logs of %s: %w", id, err)
	}
	return out, nil
}

func decodeLog(it item) (core.LogEntryRow, error) {
	var row core.LogEntryRow
	sk, _ := getS(it, AttrSK)
	c, err := strconv.ParseInt(sk, 10, 64)
	if err != nil {
		return row, fmt.Errorf("dynamo: log key %q: %w", sk, err)
	}
	row.Cursor = core.LogCursor(c)
	x, _ := getS(it, aLogExec)
	if row.ExecutionID, err = core.ParseExecutionId(x); err != nil {
		return row, err
	}
	r, _ := getS(it, aLogRun)
	if row.RunID, err = core.ParseRunId(r); err != nil {
		return row, err
	}
	if row.Entry.CreatedAt, err = getTS(it, aLogAt); err != nil {
		return row, err
	}
	if n, ok, err := getN(it, aLogStream); ok {
		if err != nil {
			return row, err
		}
		row.Entry.StreamType = core.LogStreamType(n)
		if v, ok := it[aLogPayload].(*types.AttributeValueMemberB); ok {
			row.Entry.Payload = v.Value
		}
		return row, nil
	}
	n, _, err := getN(it, aLogLevel)
	if err != nil {
		return row, err
	}
	row.Entry.Level = core.LogLevel(n)
	row.Entry.Message, _ = getS(it, aLogMessage)
	return row, nil
}
