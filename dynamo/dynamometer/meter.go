// Package dynamometer bills the DynamoDB calls of a client as AWS bills
// them (CapacityMeter: write units from item images, by AWS's published
// rules). It is a tool of the cost benchmark and of the adapter's tests,
// kept out of package dynamo so that no program using the store links it.
package dynamometer

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/stela-dev/stela/dynamo"
)

// CapacityMeter bills the DynamoDB calls of a client per label (set with
// WithMeterLabel on the context of the calls) as AWS bills them. Register it
// on a client with dynamodb.NewFromConfig(cfg, meter.Register) (or as an
// option of NewClient).
//
// Writes are not taken from the endpoint's ConsumedCapacity (DynamoDB Local
// bills a transaction's index updates once per index, not per entry, and
// reports nothing for cancelled transactions): the meter keeps the image of
// every item it has seen written (or read whole) — every item of a table it
// saw created is known, as absent until written — and bills each write from
// the item's image before and after it, by AWS's rules (package dynamo's documentation, "Cost"):
//
//   - table: 1 WRU per started KB of the larger of the two images (a delete:
//     of the deleted item); 2 per KB inside a committed TransactWriteItems,
//     ConditionCheck included (of the checked item);
//   - each secondary index (Schema): an entry that appears costs 1 WRU per KB
//     of the projected entry, one that goes 1, one whose index key changes 2
//     (delete + put), one whose projected attributes change 1;
//   - a single-item write whose condition fails: 1 WRU per KB of the existing
//     item (at least 1); no index write;
//   - a cancelled TransactWriteItems: 2 WRU per KB of every action, as if it
//     had committed, and no index write (an upper bound: AWS does not
//     document the capacity a cancelled transaction consumes).
//
// Whether the index updates of a committed transaction are doubled like its
// table writes AWS does not document either: Usage.WRU bills them once,
// Usage.WRUTxIndexTwice twice (Usage.TxIndexWrite is their share). Usage
// also counts the item writes over 1 KB (LargeWrites), the share a layout
// keeping items under one write unit would save.
//
// Reads are billed as the endpoint reports them (ReturnConsumedCapacity =
// TOTAL is set on every read).
//
// The meter keeps every item image it sees: it is for benchmarks and tests,
// not for long-running clients. Reset forgets the usage, not the images.
type CapacityMeter struct {
	mu     sync.Mutex
	labels map[string]*Usage
	// images: table + key → the last known image; a nil value means known
	// absent, a missing entry unknown (known absent in a table of fresh).
	images map[string]item
	// fresh: tables created through the meter; it has seen every write.
	fresh map[string]bool
}

// Usage is the capacity consumed under one label.
type Usage struct {
	// Calls counts DynamoDB requests.
	Calls int
	// ByOperation counts requests per DynamoDB operation.
	ByOperation map[string]int
	// Read is the read capacity (table and index reads), as reported.
	Read float64
	// Write is the table write capacity of successful single-item writes
	// (PutItem, UpdateItem, DeleteItem, BatchWriteItem).
	Write float64
	// TxWrite is the table write capacity of committed TransactWriteItems.
	TxWrite float64
	// IndexWrite is the write capacity of secondary index updates of
	// successful writes, transactional or not.
	IndexWrite float64
	// TxIndexWrite is the part of IndexWrite made by committed
	// TransactWriteItems. WRU bills it once; WRUTxIndexTwice a second time
	// (AWS does not document whether a transaction doubles its index
	// updates as it doubles its table writes; see package dynamo, "Cost").
	TxIndexWrite float64
	// IndexEntries counts index entries put or deleted (a key change is a
	// delete and a put: 2).
	IndexEntries int
	// ItemWrites counts table item writes of successful writes (puts,
	// updates, deletes, transaction actions but ConditionChecks);
	// LargeWrites those billed for more than 1 KB (the larger image over
	// 1,024 bytes), LargeWriteWRU the table write units they were billed.
	ItemWrites    int
	LargeWrites   int
	LargeWriteWRU float64
	// ConditionFailed counts single-item writes whose condition failed;
	// FailedWrite is their write capacity.
	ConditionFailed int
	FailedWrite     float64
	// Transactions counts TransactWriteItems calls answered (committed or
	// cancelled); Cancelled those cancelled, CancelledConflict those of them
	// cancelled for a TransactionConflict (the rest: a failed condition).
	Transactions      int
	Cancelled         int
	CancelledConflict int
	// CancelledWrite is the write capacity billed for cancelled transactions
	// (the upper bound described on CapacityMeter).
	CancelledWrite float64
	// UnknownImages counts writes to items whose image before the write the
	// meter did not know (assumed absent: a delete or a changed index entry
	// may then be missed). Zero when the meter saw the table created.
	UnknownImages int
}

// WRU is the total write capacity: committed, failed and cancelled writes,
// index updates inside transactions billed once.
func (u Usage) WRU() float64 {
	return u.Write + u.TxWrite + u.IndexWrite + u.FailedWrite + u.CancelledWrite
}

// WRUTxIndexTwice is WRU with the index updates of committed transactions
// billed twice, like their table writes (the other assumption).
func (u Usage) WRUTxIndexTwice() float64 {
	return u.WRU() + u.TxIndexWrite
}

// Add adds v to u.
func (u *Usage) Add(v Usage) {
	u.Calls += v.Calls
	if u.ByOperation == nil {
		u.ByOperation = map[string]int{}
	}
	for op, n := range v.ByOperation {
		u.ByOperation[op] += n
	}
	u.Read += v.Read
	u.Write += v.Write
	u.TxWrite += v.TxWrite
	u.IndexWrite += v.IndexWrite
	u.TxIndexWrite += v.TxIndexWrite
	u.IndexEntries += v.IndexEntries
	u.ItemWrites += v.ItemWrites
	u.LargeWrites += v.LargeWrites
	u.LargeWriteWRU += v.LargeWriteWRU
	u.ConditionFailed += v.ConditionFailed
	u.FailedWrite += v.FailedWrite
	u.Transactions += v.Transactions
	u.Cancelled += v.Cancelled
	u.CancelledConflict += v.CancelledConflict
	u.CancelledWrite += v.CancelledWrite
	u.UnknownImages += v.UnknownImages
}

// item is a DynamoDB item, as package dynamo holds it.
type item = map[string]types.AttributeValue

type meterLabelKey struct{}

// WithMeterLabel attributes the DynamoDB calls made with ctx to label.
func WithMeterLabel(ctx context.Context, label string) context.Context {
	return context.WithValue(ctx, meterLabelKey{}, label)
}

// NewCapacityMeter returns an empty meter.
func NewCapacityMeter() *CapacityMeter {
	return &CapacityMeter{labels: map[string]*Usage{}, images: map[string]item{}, fresh: map[string]bool{}}
}

// Register adds the meter to a client's options.
func (m *CapacityMeter) Register(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
		return s.Initialize.Add(middleware.InitializeMiddlewareFunc("StelaCapacityMeter", m.handle), middleware.After)
	})
}

// Snapshot returns a copy of the usage per label.
func (m *CapacityMeter) Snapshot() map[string]Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]Usage, len(m.labels))
	for k, u := range m.labels {
		var c Usage
		c.Add(*u)
		out[k] = c
	}
	return out
}

// Labels returns the labels seen, sorted.
func (m *CapacityMeter) Labels() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.labels))
	for k := range m.labels {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Reset forgets the usage measured so far (the item images are kept).
func (m *CapacityMeter) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.labels = map[string]*Usage{}
}

// handle is the middleware: it asks for what it needs, lets the call run,
// and bills its outcome.
func (m *CapacityMeter) handle(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	const total = types.ReturnConsumedCapacityTotal
	// Single-item writes return the image the meter lacks (the old one of a
	// put or delete, the new one of an update) unless the caller asked for
	// something else; it is removed from the output again.
	var restore func()
	switch p := in.Parameters.(type) {
	case *dynamodb.GetItemInput:
		p.ReturnConsumedCapacity = total
	case *dynamodb.QueryInput:
		p.ReturnConsumedCapacity = total
	case *dynamodb.BatchGetItemInput:
		p.ReturnConsumedCapacity = total
	case *dynamodb.PutItemInput:
		if p.ReturnValues == "" || p.ReturnValues == types.ReturnValueNone {
			rv := p.ReturnValues
			p.ReturnValues, restore = types.ReturnValueAllOld, func() { p.ReturnValues = rv }
		}
	case *dynamodb.DeleteItemInput:
		if p.ReturnValues == "" || p.ReturnValues == types.ReturnValueNone {
			rv := p.ReturnValues
			p.ReturnValues, restore = types.ReturnValueAllOld, func() { p.ReturnValues = rv }
		}
	case *dynamodb.UpdateItemInput:
		if p.ReturnValues == "" || p.ReturnValues == types.ReturnValueNone {
			rv := p.ReturnValues
			p.ReturnValues, restore = types.ReturnValueAllNew, func() { p.ReturnValues = rv }
		}
	}
	out, md, err := next.HandleInitialize(ctx, in)
	if restore != nil {
		restore()
	}
	label, _ := ctx.Value(meterLabelKey{}).(string)
	if label == "" {
		label = "(unlabelled)"
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.labels[label]
	if u == nil {
		u = &Usage{ByOperation: map[string]int{}}
		m.labels[label] = u
	}
	u.Calls++
	u.ByOperation[middleware.GetOperationName(ctx)]++
	m.bill(u, in.Parameters, out.Result, err, restore != nil)
	return out, md, err
}

// bill accounts one answered call; m.mu is held. stripped: the meter asked
// for the returned attributes, which it removes from the caller's output.
func (m *CapacityMeter) bill(u *Usage, params, result any, err error, stripped bool) {
	var ccf *types.ConditionalCheckFailedException
	failed := errors.As(err, &ccf)
	switch p := params.(type) {
	case *dynamodb.CreateTableInput:
		if err == nil {
			m.fresh[aws.ToString(p.TableName)] = true
		}
	case *dynamodb.DeleteTableInput:
		if err == nil {
			table := aws.ToString(p.TableName)
			delete(m.fresh, table)
			for k := range m.images {
				if strings.HasPrefix(k, table+"\x00") {
					delete(m.images, k)
				}
			}
		}
	case *dynamodb.GetItemInput:
		if r, ok := result.(*dynamodb.GetItemOutput); ok && err == nil {
			u.Read += consumed(r.ConsumedCapacity)
			if p.ProjectionExpression == nil && len(p.AttributesToGet) == 0 {
				m.learn(aws.ToString(p.TableName), p.Key, r.Item)
			}
		}
	case *dynamodb.QueryInput:
		if r, ok := result.(*dynamodb.QueryOutput); ok && err == nil {
			u.Read += consumed(r.ConsumedCapacity)
			if p.IndexName == nil && p.ProjectionExpression == nil && len(p.AttributesToGet) == 0 &&
				(p.Select == "" || p.Select == types.SelectAllAttributes) {
				for _, it := range r.Items {
					m.learn(aws.ToString(p.TableName), it, it)
				}
			}
		}
	case *dynamodb.BatchGetItemInput:
		if r, ok := result.(*dynamodb.BatchGetItemOutput); ok && err == nil {
			for _, cc := range r.ConsumedCapacity {
				u.Read += consumed(&cc)
			}
			for table, its := range r.Responses {
				if ka, ok := p.RequestItems[table]; ok && ka.ProjectionExpression == nil && len(ka.AttributesToGet) == 0 {
					for _, it := range its {
						m.learn(table, it, it)
					}
				}
			}
		}
	case *dynamodb.PutItemInput:
		var returned *item
		if r, ok := result.(*dynamodb.PutItemOutput); ok && stripped {
			returned = &r.Attributes
		}
		m.billSingle(u, aws.ToString(p.TableName), p.Item, p.Item,
			notExists(p.ConditionExpression, p.ExpressionAttributeNames), returned, err)
	case *dynamodb.DeleteItemInput:
		var returned *item
		if r, ok := result.(*dynamodb.DeleteItemOutput); ok && stripped {
			returned = &r.Attributes
		}
		m.billSingle(u, aws.ToString(p.TableName), p.Key, nil, false, returned, err)
	case *dynamodb.UpdateItemInput:
		table := aws.ToString(p.TableName)
		switch {
		case failed:
			m.billFailed(u, table, p.Key, ccf.Item)
		case err == nil:
			r, _ := result.(*dynamodb.UpdateItemOutput)
			var attrs item
			if r != nil {
				attrs = r.Attributes
				if stripped {
					r.Attributes = nil
				}
			}
			m.billUpdate(u, table, p.Key, p.ReturnValues, stripped, attrs)
		}
	case *dynamodb.BatchWriteItemInput:
		if err != nil {
			return
		}
		r, _ := result.(*dynamodb.BatchWriteItemOutput)
		for table, reqs := range p.RequestItems {
			for _, wr := range reqs {
				if r != nil && unprocessed(r.UnprocessedItems[table], wr) {
					continue
				}
				switch {
				case wr.PutRequest != nil:
					m.billWrite(u, table, wr.PutRequest.Item, wr.PutRequest.Item, nil, false, false, 1)
				case wr.DeleteRequest != nil:
					m.billWrite(u, table, wr.DeleteRequest.Key, nil, nil, false, false, 1)
				}
			}
		}
	case *dynamodb.TransactWriteItemsInput:
		m.billTransaction(u, p, err)
	}
}

// billSingle bills a PutItem (after: the item) or DeleteItem (after: nil)
// answered with err. returned: the output's Attributes, the old image the
// meter asked for (nil if it did not); they are removed from the output.
func (m *CapacityMeter) billSingle(u *Usage, table string, key, after item, absent bool, returned *item, err error) {
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		m.billFailed(u, table, key, ccf.Item)
	case err == nil:
		var old item
		if returned != nil {
			old, *returned = *returned, nil
		}
		m.billWrite(u, table, key, after, old, returned != nil, absent, 1)
	}
}

// billTransaction bills a TransactWriteItems: committed, every action at
// 2 WRU per KB plus its index updates; cancelled, the upper bound.
func (m *CapacityMeter) billTransaction(u *Usage, p *dynamodb.TransactWriteItemsInput, err error) {
	var tce *types.TransactionCanceledException
	cancelled := errors.As(err, &tce)
	if err != nil && !cancelled {
		return // not answered, or rejected as invalid: nothing known to be consumed
	}
	u.Transactions++
	if cancelled {
		u.Cancelled++
		for i, r := range tce.CancellationReasons {
			if aws.ToString(r.Code) == "TransactionConflict" {
				u.CancelledConflict++
				break
			}
			// ALL_OLD images returned for failed conditions are current.
			if r.Item != nil && i < len(p.TransactItems) {
				table, key := actionKey(p.TransactItems[i])
				m.learn(table, key, r.Item)
			}
		}
		for _, ti := range p.TransactItems {
			table, key := actionKey(ti)
			after := item(nil)
			if ti.Put != nil {
				after = ti.Put.Item
			}
			before, _ := m.image(table, key)
			u.CancelledWrite += 2 * kb(max(dynamo.ItemSize(before), dynamo.ItemSize(after)))
		}
		return
	}
	for _, ti := range p.TransactItems {
		table, key := actionKey(ti)
		switch {
		case ti.ConditionCheck != nil:
			before, _ := m.image(table, key)
			u.TxWrite += 2 * kb(dynamo.ItemSize(before))
		case ti.Put != nil:
			m.billWrite(u, table, key, ti.Put.Item, nil, false,
				notExists(ti.Put.ConditionExpression, ti.Put.ExpressionAttributeNames), 2)
		case ti.Delete != nil:
			m.billWrite(u, table, key, nil, nil, false, false, 2)
		case ti.Update != nil:
			before, known := m.image(table, key)
			up := ti.Update
			if after, ok := applyUpdate(before, key, aws.ToString(up.UpdateExpression), up.ExpressionAttributeNames,
				up.ExpressionAttributeValues); ok && known {
				m.billWrite(u, table, key, after, before, true, false, 2)
				continue
			}
			// An expression the meter cannot apply: billed on the old
			// image, which it forgets.
			if !known {
				u.UnknownImages++
			}
			u.TxWrite += 2 * kb(dynamo.ItemSize(before))
			delete(m.images, imageKey(table, key))
		}
	}
}

// billWrite bills a successful write of after (nil: a delete) to key at
// factor WRU per KB (2 inside a transaction), with its index updates.
// old/oldKnown: the before image returned by DynamoDB; absent: the write's
// condition proved the item did not exist.
func (m *CapacityMeter) billWrite(u *Usage, table string, key, after, old item, oldKnown, absent bool, factor float64) {
	before, known := old, oldKnown
	if !known && absent {
		before, known = nil, true
	}
	if !known {
		before, known = m.image(table, key)
	}
	if !known {
		u.UnknownImages++
	}
	size := max(dynamo.ItemSize(before), dynamo.ItemSize(after))
	if factor == 1 {
		u.Write += kb(size)
	} else {
		u.TxWrite += factor * kb(size)
	}
	u.ItemWrites++
	if size > 1024 {
		u.LargeWrites++
		u.LargeWriteWRU += factor * kb(size)
	}
	wru, entries := indexWrites(before, after)
	u.IndexWrite += wru
	if factor != 1 {
		u.TxIndexWrite += wru
	}
	u.IndexEntries += entries
	m.images[imageKey(table, key)] = after
}

// billUpdate bills a successful UpdateItem from the images it can know: the
// new one returned (ALL_NEW), or the old one merged with the updated
// attributes (UPDATED_NEW; removals are then missed).
func (m *CapacityMeter) billUpdate(u *Usage, table string, key item, rv types.ReturnValue, stripped bool, attrs item) {
	before, known := m.image(table, key)
	var after item
	switch {
	case stripped || rv == types.ReturnValueAllNew:
		after = attrs
	case rv == types.ReturnValueUpdatedNew && known:
		after = item{}
		for k, v := range before {
			after[k] = v
		}
		for k, v := range key {
			after[k] = v
		}
		for k, v := range attrs {
			after[k] = v
		}
	default:
		known = false
		after = nil
	}
	if after == nil {
		// New image unknown: bill the old one, forget the item.
		u.UnknownImages++
		u.Write += kb(dynamo.ItemSize(before))
		delete(m.images, imageKey(table, key))
		return
	}
	m.billWrite(u, table, key, after, before, known, false, 1)
}

// billFailed bills a single-item write whose condition failed: 1 WRU per KB
// of the existing item (returned with ALL_OLD, or known), at least 1.
func (m *CapacityMeter) billFailed(u *Usage, table string, key, current item) {
	u.ConditionFailed++
	if current != nil {
		m.learn(table, key, current)
	} else {
		current, _ = m.image(table, key)
	}
	u.FailedWrite += kb(dynamo.ItemSize(current))
}

// learn records an image read from the table (or returned by a failed
// condition), unless a write the meter saw already recorded one.
func (m *CapacityMeter) learn(table string, key, it item) {
	k := imageKey(table, key)
	if _, ok := m.images[k]; !ok {
		m.images[k] = it
	}
}

// image returns the known image of key (nil: absent) and whether it is known.
func (m *CapacityMeter) image(table string, key item) (item, bool) {
	it, ok := m.images[imageKey(table, key)]
	return it, ok || m.fresh[table]
}

// indexWrites returns the write units and the number of entries changed in
// the secondary indexes of Schema when an item goes from before to after
// (either nil: absent).
func indexWrites(before, after item) (float64, int) {
	var wru float64
	var entries int
	for _, ix := range allIndexes() {
		eb, ea := indexEntry(ix, before), indexEntry(ix, after)
		switch {
		case eb == nil && ea == nil:
		case eb == nil:
			wru, entries = wru+kb(dynamo.ItemSize(ea)), entries+1
		case ea == nil:
			wru, entries = wru+kb(dynamo.ItemSize(eb)), entries+1
		case !sameAttrs(eb, ea, keyAttrs(ix)):
			wru, entries = wru+kb(dynamo.ItemSize(eb))+kb(dynamo.ItemSize(ea)), entries+2
		case !reflect.DeepEqual(eb, ea):
			wru, entries = wru+kb(dynamo.ItemSize(ea)), entries+1
		}
	}
	return wru, entries
}

func allIndexes() []dynamo.TableIndex {
	return append(append([]dynamo.TableIndex(nil), dynamo.Schema.GlobalIndexes...), dynamo.Schema.LocalIndexes...)
}

// keyAttrs are the attributes that place an entry in the index: the index
// key and the table key.
func keyAttrs(ix dynamo.TableIndex) []string {
	out := []string{dynamo.Schema.Key.PartitionKey, dynamo.Schema.Key.SortKey, ix.Key.PartitionKey}
	if ix.Key.SortKey != "" {
		out = append(out, ix.Key.SortKey)
	}
	return out
}

// indexEntry is the entry it has in ix (nil when it has none: sparse index).
func indexEntry(ix dynamo.TableIndex, it item) item {
	if it == nil {
		return nil
	}
	e := item{}
	for _, a := range keyAttrs(ix) {
		v, ok := it[a]
		if !ok {
			return nil
		}
		e[a] = v
	}
	switch ix.Projection {
	case dynamo.ProjectionAll:
		return it
	case dynamo.ProjectionInclude:
		for _, a := range ix.NonKeyAttributes {
			if v, ok := it[a]; ok {
				e[a] = v
			}
		}
	}
	return e
}

func sameAttrs(a, b item, names []string) bool {
	for _, n := range names {
		if !reflect.DeepEqual(a[n], b[n]) {
			return false
		}
	}
	return true
}

// kb is the billed write size: started KB, at least 1.
func kb(size int) float64 { return float64(max(1, (size+1023)/1024)) }

func consumed(cc *types.ConsumedCapacity) float64 {
	if cc == nil {
		return 0
	}
	return aws.ToFloat64(cc.CapacityUnits)
}

// notExists reports whether cond is attribute_not_exists of the partition
// key: the write succeeding proves the item was absent.
func notExists(cond *string, names map[string]string) bool {
	c := strings.ReplaceAll(aws.ToString(cond), " ", "")
	if c == "attribute_not_exists("+dynamo.Schema.Key.PartitionKey+")" {
		return true
	}
	for alias, name := range names {
		if name == dynamo.Schema.Key.PartitionKey && c == "attribute_not_exists("+alias+")" {
			return true
		}
	}
	return false
}

// actionKey returns the table and key a transaction action writes.
func actionKey(ti types.TransactWriteItem) (string, item) {
	switch {
	case ti.Put != nil:
		return aws.ToString(ti.Put.TableName), ti.Put.Item
	case ti.Delete != nil:
		return aws.ToString(ti.Delete.TableName), ti.Delete.Key
	case ti.Update != nil:
		return aws.ToString(ti.Update.TableName), ti.Update.Key
	case ti.ConditionCheck != nil:
		return aws.ToString(ti.ConditionCheck.TableName), ti.ConditionCheck.Key
	}
	return "", nil
}

// imageKey identifies an item: its table and primary key.
func imageKey(table string, it item) string {
	var b strings.Builder
	b.WriteString(table)
	for _, a := range []string{dynamo.Schema.Key.PartitionKey, dynamo.Schema.Key.SortKey} {
		b.WriteByte(0)
		switch v := it[a].(type) {
		case *types.AttributeValueMemberS:
			b.WriteString(v.Value)
		case *types.AttributeValueMemberN:
			b.WriteString("N" + v.Value)
		case *types.AttributeValueMemberB:
			b.WriteString("B" + string(v.Value))
		}
	}
	return b.String()
}

// unprocessed reports whether wr came back in UnprocessedItems.
func unprocessed(left []types.WriteRequest, wr types.WriteRequest) bool {
	for _, l := range left {
		if reflect.DeepEqual(l, wr) {
			return true
		}
	}
	return false
}

// applyUpdate applies an update expression of the forms Stela sends
// ("SET #a = :v, #b = if_not_exists(#b, :v)", "REMOVE #a", "ADD #n :v" on
// numbers and string sets, "DELETE #s :v" on string sets) to a copy of
// before (nil: absent, created with key). ok is false for anything else.
func applyUpdate(before, key item, expr string, names map[string]string, values item) (item, bool) {
	after := item{}
	for k, v := range before {
		after[k] = v
	}
	for k, v := range key {
		after[k] = v
	}
	name := func(tok string) string {
		if n, ok := names[tok]; ok {
			return n
		}
		return tok
	}
	section := ""
	for _, clause := range splitClauses(expr) {
		f := strings.Fields(clause)
		if len(f) > 0 {
			switch strings.ToUpper(f[0]) {
			case "SET", "REMOVE", "ADD", "DELETE":
				section, f = strings.ToUpper(f[0]), f[1:]
			}
		}
		c := strings.Join(f, " ")
		switch section {
		case "SET":
			lhs, rhs, ok := strings.Cut(c, "=")
			if !ok {
				return nil, false
			}
			a, rhs := name(strings.TrimSpace(lhs)), strings.TrimSpace(rhs)
			if inner, ok := strings.CutPrefix(rhs, "if_not_exists("); ok {
				_, v, ok := strings.Cut(strings.TrimSuffix(inner, ")"), ",")
				if !ok {
					return nil, false
				}
				if _, exists := after[a]; exists {
					continue
				}
				rhs = strings.TrimSpace(v)
			}
			v, ok := values[rhs]
			if !ok {
				return nil, false
			}
			after[a] = v
		case "REMOVE":
			delete(after, name(c))
		case "ADD", "DELETE":
			if len(f) != 2 {
				return nil, false
			}
			a, v := name(f[0]), values[f[1]]
			switch v := v.(type) {
			case *types.AttributeValueMemberN:
				if section != "ADD" {
					return nil, false
				}
				var cur int64
				if n, ok := after[a].(*types.AttributeValueMemberN); ok {
					cur, _ = strconv.ParseInt(n.Value, 10, 64)
				}
				d, err := strconv.ParseInt(v.Value, 10, 64)
				if err != nil {
					return nil, false
				}
				after[a] = &types.AttributeValueMemberN{Value: strconv.FormatInt(cur+d, 10)}
			case *types.AttributeValueMemberSS:
				set := map[string]bool{}
				if ss, ok := after[a].(*types.AttributeValueMemberSS); ok {
					for _, e := range ss.Value {
						set[e] = true
					}
				}
				for _, e := range v.Value {
					set[e] = section == "ADD"
				}
				var out []string
				for e, in := range set {
					if in {
						out = append(out, e)
					}
				}
				sort.Strings(out)
				if len(out) == 0 {
					delete(after, a)
				} else {
					after[a] = &types.AttributeValueMemberSS{Value: out}
				}
			default:
				return nil, false
			}
		default:
			return nil, false
		}
	}
	return after, true
}

// splitClauses splits an update expression at the commas and action
// keywords outside parentheses.
func splitClauses(expr string) []string {
	var out []string
	depth, start := 0, 0
	flush := func(end int) {
		if c := strings.TrimSpace(expr[start:end]); c != "" {
			out = append(out, c)
		}
		start = end
	}
	for i := 0; i < len(expr); i++ {
		switch expr[i] {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				flush(i)
				start = i + 1
			}
		case ' ':
			if depth == 0 {
				rest := strings.ToUpper(expr[i+1:])
				for _, kw := range []string{"SET ", "REMOVE ", "ADD ", "DELETE "} {
					if strings.HasPrefix(rest, kw) {
						flush(i + 1)
						break
					}
				}
			}
		}
	}
	flush(len(expr))
	return out
}
