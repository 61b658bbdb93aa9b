package dynamo

import (
	"context"
	"sort"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
)

// CapacityMeter sums the capacity DynamoDB reports per label (set with
// WithMeterLabel on the context of the calls) and per DynamoDB operation.
// Register it on a client with dynamodb.NewFromConfig(cfg, meter.Register)
// (or as an option of NewClient): it sets ReturnConsumedCapacity=INDEXES on
// every request that supports it.
type CapacityMeter struct {
	mu     sync.Mutex
	labels map[string]*Usage
}

// Usage is the capacity consumed under one label, as reported.
type Usage struct {
	// Calls counts DynamoDB requests.
	Calls int
	// ByOperation counts requests per DynamoDB operation.
	ByOperation map[string]int
	// Read is the read capacity (table, LSI and GSI reads).
	Read float64
	// Write is the table write capacity of non-transactional writes.
	Write float64
	// TxWrite is the table write capacity of TransactWriteItems, computed
	// from the request as AWS bills it: 2 WCU per started KB of each item
	// (deletes and condition checks counted as 1 KB items). DynamoDB Local
	// 3.3.1 does not report this reliably.
	TxWrite float64
	// IndexWrite is the write capacity of secondary index updates.
	IndexWrite float64
}

type meterLabelKey struct{}

// WithMeterLabel attributes the DynamoDB calls made with ctx to label.
func WithMeterLabel(ctx context.Context, label string) context.Context {
	return context.WithValue(ctx, meterLabelKey{}, label)
}

// NewCapacityMeter returns an empty meter.
func NewCapacityMeter() *CapacityMeter { return &CapacityMeter{labels: map[string]*Usage{}} }

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
		c := *u
		c.ByOperation = make(map[string]int, len(u.ByOperation))
		for op, n := range u.ByOperation {
			c.ByOperation[op] = n
		}
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

// Reset forgets everything measured so far.
func (m *CapacityMeter) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.labels = map[string]*Usage{}
}

func (m *CapacityMeter) handle(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	const rc = types.ReturnConsumedCapacityIndexes
	switch p := in.Parameters.(type) {
	case *dynamodb.GetItemInput:
		p.ReturnConsumedCapacity = rc
	case *dynamodb.PutItemInput:
		p.ReturnConsumedCapacity = rc
	case *dynamodb.UpdateItemInput:
		p.ReturnConsumedCapacity = rc
	case *dynamodb.DeleteItemInput:
		p.ReturnConsumedCapacity = rc
	case *dynamodb.QueryInput:
		p.ReturnConsumedCapacity = rc
	case *dynamodb.BatchGetItemInput:
		p.ReturnConsumedCapacity = rc
	case *dynamodb.BatchWriteItemInput:
		p.ReturnConsumedCapacity = rc
	case *dynamodb.TransactWriteItemsInput:
		p.ReturnConsumedCapacity = rc
	}
	var txEstimate float64
	if p, ok := in.Parameters.(*dynamodb.TransactWriteItemsInput); ok {
		for _, ti := range p.TransactItems {
			kb := 1
			if ti.Put != nil {
				kb = (itemSize(ti.Put.Item) + 1023) / 1024
			}
			txEstimate += 2 * float64(max(kb, 1))
		}
	}
	out, md, err := next.HandleInitialize(ctx, in)
	label, _ := ctx.Value(meterLabelKey{}).(string)
	if label == "" {
		label = "(unlabelled)"
	}
	op := middleware.GetOperationName(ctx)
	var ccs []types.ConsumedCapacity
	tx := false
	switch r := out.Result.(type) {
	case *dynamodb.GetItemOutput:
		ccs = one(r.ConsumedCapacity)
	case *dynamodb.PutItemOutput:
		ccs = one(r.ConsumedCapacity)
	case *dynamodb.UpdateItemOutput:
		ccs = one(r.ConsumedCapacity)
	case *dynamodb.DeleteItemOutput:
		ccs = one(r.ConsumedCapacity)
	case *dynamodb.QueryOutput:
		ccs = one(r.ConsumedCapacity)
	case *dynamodb.BatchGetItemOutput:
		ccs = r.ConsumedCapacity
	case *dynamodb.BatchWriteItemOutput:
		ccs = r.ConsumedCapacity
	case *dynamodb.TransactWriteItemsOutput:
		ccs, tx = r.ConsumedCapacity, true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.labels[label]
	if u == nil {
		u = &Usage{ByOperation: map[string]int{}}
		m.labels[label] = u
	}
	u.Calls++
	u.ByOperation[op]++
	if tx && err == nil {
		u.TxWrite += txEstimate
	}
	for _, cc := range ccs {
		read := op == "GetItem" || op == "Query" || op == "BatchGetItem"
		table := aws.ToFloat64(cc.CapacityUnits)
		var idx float64
		for _, c := range cc.GlobalSecondaryIndexes {
			idx += aws.ToFloat64(c.CapacityUnits)
		}
		for _, c := range cc.LocalSecondaryIndexes {
			idx += aws.ToFloat64(c.CapacityUnits)
		}
		if cc.Table != nil {
			table = aws.ToFloat64(cc.Table.CapacityUnits)
		} else {
			table -= idx
		}
		switch {
		case read:
			u.Read += table + idx
		case tx:
			u.IndexWrite += idx
		default:
			u.Write += table
			u.IndexWrite += idx
		}
	}
	return out, md, err
}

func one(cc *types.ConsumedCapacity) []types.ConsumedCapacity {
	if cc == nil {
		return nil
	}
	return []types.ConsumedCapacity{*cc}
}
