package dynamo_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/dynamo"
	"github.com/stela-dev/stela/dynamo/dynamometer"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/store/storetest"
)

// conflictModel makes DynamoDB Local refuse what DynamoDB refuses when
// requests meet on an item (DynamoDB Local serialises everything and never
// raises TransactionConflict). From "Transaction conflict handling" of the
// DynamoDB Developer Guide (transaction-apis.html):
//
//   - a TransactWriteItems that includes an item another request (a
//     single-item write or another transaction) is writing is cancelled,
//     reason TransactionConflict at that action, and changes nothing;
//   - a PutItem, UpdateItem or DeleteItem of an item an ongoing
//     TransactWriteItems includes is refused with
//     TransactionConflictException and changes nothing.
//
// A transaction holds its items while the emulator executes it and for
// linger after it answered: DynamoDB's two phases (prepare, commit) take
// longer than the emulator's one, and the window is what makes meetings as
// frequent as they are on AWS. Single-item writes hold their item while in
// flight. Reads never conflict (they are not transactional reads).
type conflictModel struct {
	enabled atomic.Bool
	follow  *atomic.Bool // also on while this is (the fault injector's switch)
	linger  time.Duration

	mu     sync.Mutex
	inTx   map[string]int       // item → transactions in flight that include it
	txTill map[string]time.Time // item → end of the linger of the last transaction on it
	single map[string]int       // item → single-item writes in flight
	// what the model refused: transactions cancelled, single writes
	// refused, per operation and per item kind (the sort key's prefix)
	refused map[string]int
	txSeen  int
	wrSeen  int
	// refuseNext["<operation> <item kind>"] = n refuses the next n
	// single-item writes of that operation to an item of that kind, as if
	// each met a transaction (a deterministic meeting).
	refuseNext map[string]int
}

func newConflictModel(linger time.Duration) *conflictModel {
	return &conflictModel{linger: linger, inTx: map[string]int{}, txTill: map[string]time.Time{},
		single: map[string]int{}, refused: map[string]int{}, refuseNext: map[string]int{}}
}

type conflictKeysKey struct{}

// register installs the model on a client: an initialize-step middleware
// records the items of each write, a deserialize-step one (once per
// attempt, inside the SDK's retry loop) applies the rules.
func (m *conflictModel) register(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
		if err := s.Initialize.Add(middleware.InitializeMiddlewareFunc("ConflictKeys",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				if keys := writeKeys(in.Parameters); keys != nil {
					ctx = context.WithValue(ctx, conflictKeysKey{}, keys)
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.After); err != nil {
			return err
		}
		return s.Deserialize.Add(middleware.DeserializeMiddlewareFunc("ConflictModel", m.handle), middleware.After)
	})
}

// writeKeys returns the items a write request writes or checks, in action
// order ("pk\x00sk"); nil for a read.
func writeKeys(params any) []string {
	key := func(it map[string]types.AttributeValue) string {
		pk, _ := it[dynamo.AttrPK].(*types.AttributeValueMemberS)
		sk, _ := it[dynamo.AttrSK].(*types.AttributeValueMemberS)
		if pk == nil || sk == nil {
			return ""
		}
		return pk.Value + "\x00" + sk.Value
	}
	switch p := params.(type) {
	case *dynamodb.PutItemInput:
		return []string{key(p.Item)}
	case *dynamodb.UpdateItemInput:
		return []string{key(p.Key)}
	case *dynamodb.DeleteItemInput:
		return []string{key(p.Key)}
	case *dynamodb.TransactWriteItemsInput:
		keys := make([]string, 0, len(p.TransactItems))
		for _, ti := range p.TransactItems {
			switch {
			case ti.Put != nil:
				keys = append(keys, key(ti.Put.Item))
			case ti.Update != nil:
				keys = append(keys, key(ti.Update.Key))
			case ti.Delete != nil:
				keys = append(keys, key(ti.Delete.Key))
			case ti.ConditionCheck != nil:
				keys = append(keys, key(ti.ConditionCheck.Key))
			}
		}
		return keys
	}
	return nil
}

// itemKind names an item by its key's shape: "head", "inbox", "response", …
func itemKind(k string) string {
	pk, sk, _ := strings.Cut(k, "\x00")
	switch {
	case strings.HasPrefix(pk, "G#"):
		return "guard"
	case strings.HasPrefix(pk, "K#"):
		return "lease"
	case sk == "H":
		return "head"
	case sk == "S":
		return "inbox"
	case strings.HasPrefix(sk, "R#"):
		return "response"
	case strings.HasPrefix(sk, "O#"):
		return "outbox"
	case strings.HasPrefix(sk, "D#"):
		return "timer"
	}
	return "other"
}

func (m *conflictModel) handle(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
	keys, _ := ctx.Value(conflictKeysKey{}).([]string)
	if keys == nil || !(m.enabled.Load() || m.follow != nil && m.follow.Load()) {
		return next.HandleDeserialize(ctx, in)
	}
	op := middleware.GetOperationName(ctx)
	tx := op == "TransactWriteItems"
	now := time.Now()
	m.mu.Lock()
	if tx {
		m.txSeen++
		var reasons []types.CancellationReason
		conflict := false
		for _, k := range keys {
			code := "None"
			if m.single[k] > 0 || m.inTx[k] > 0 || now.Before(m.txTill[k]) {
				code, conflict = "TransactionConflict", true
				m.refused["TransactWriteItems cancelled, at a "+itemKind(k)]++
			}
			reasons = append(reasons, types.CancellationReason{Code: aws.String(code)})
		}
		if conflict {
			m.refused["TransactWriteItems cancelled"]++
			m.mu.Unlock()
			return middleware.DeserializeOutput{}, middleware.Metadata{}, &types.TransactionCanceledException{
				Message: aws.String("Transaction cancelled (conflict model)"), CancellationReasons: reasons}
		}
		for _, k := range keys {
			m.inTx[k]++
		}
	} else {
		m.wrSeen++
		k := keys[0]
		forced := m.refuseNext[op+" "+itemKind(k)] > 0
		if forced {
			m.refuseNext[op+" "+itemKind(k)]--
		}
		if forced || m.inTx[k] > 0 || now.Before(m.txTill[k]) {
			m.refused[op+" refused"]++
			m.refused[op+" refused, at a "+itemKind(k)]++
			m.mu.Unlock()
			return middleware.DeserializeOutput{}, middleware.Metadata{}, &types.TransactionConflictException{
				Message: aws.String("Transaction is ongoing for the item (conflict model)")}
		}
		m.single[k]++
	}
	m.mu.Unlock()
	out, md, err := next.HandleDeserialize(ctx, in)
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range keys {
		if tx {
			m.inTx[k]--
			m.txTill[k] = time.Now().Add(m.linger)
		} else {
			m.single[k]--
		}
	}
	return out, md, err
}

// log reports what the model refused.
func (m *conflictModel) log(t *testing.T) (txCancelled, singleRefused int) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	var lines []string
	for k, n := range m.refused {
		lines = append(lines, fmt.Sprintf("%s=%d", k, n))
		switch {
		case k == "TransactWriteItems cancelled":
			txCancelled += n
		case strings.HasSuffix(k, " refused"):
			singleRefused += n
		}
	}
	sort.Strings(lines)
	t.Logf("conflict model (linger %v): %d transactions, %d single-item writes sent; refused: %s", m.linger, m.txSeen, m.wrSeen, strings.Join(lines, " "))
	return txCancelled, singleRefused
}

// Siblings finish while their parent blocks on them, with the conflict
// model on: a registration (UpdateItem of the inbox) meeting the blocking
// JoinNext's transaction (which updates the inbox) is refused, an elected
// response's transaction meeting a registration or another transaction on
// the parent is cancelled — as on AWS. Every refusal is re-run and the
// fan-in invariants hold: a child is finished exactly when its parent
// holds its response, once; cursors are gapless; no parent stays blocked
// with a response (after the sweep resolved the locks of finishes that
// gave up). The cancelled work is reported (and billed by the meter).
func TestConflictModelFanInKeepsTheInvariants(t *testing.T) {
	ctx := context.Background()
	model := newConflictModel(20 * time.Millisecond)
	meter := dynamometer.NewCapacityMeter()
	b, _ := newBackend(t, dynamo.Options{}, meter.Register, model.register)
	svc := store.New(b, store.Options{Clock: &fixedClock{t0}})

	const parents, children = 4, 10
	type parentRun struct {
		id   core.ExecutionId
		kids []core.LockedExecution
		v    core.Version
	}
	var runs []parentRun
	for range parents {
		p, kids, v := fanInParent(t, svc, children, false)
		runs = append(runs, parentRun{p, kids, v})
	}
	meter.Reset()
	model.enabled.Store(true)
	var mu sync.Mutex
	finishedOK := map[core.ExecutionId]bool{}
	failures := map[string]int{}
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Go(func() {
			// The parent blocks on the join set while its children finish.
			_, err := svc.Append(dynamometer.WithMeterLabel(ctx, "block"), r.id, r.v,
				core.AppendRequest{CreatedAt: t0, Event: hist(&core.JoinNext{JoinSetID: fanJS, RunExpiresAt: t0})})
			if err != nil {
				mu.Lock()
				failures["block: "+err.Error()]++
				mu.Unlock()
			}
		})
		for i, k := range r.kids {
			wg.Go(func() {
				err := finish(dynamometer.WithMeterLabel(ctx, "finish"), svc, k, fmt.Sprint(i))
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					finishedOK[k.ExecutionID] = true
				} else {
					failures["finish: "+err.Error()]++
				}
			})
		}
	}
	wg.Wait()
	model.enabled.Store(false)

	must(store.Sweep(ctx, svc, t0.Add(2*time.Minute)))(t)
	for _, r := range runs {
		checkFanIn(ctx, t, svc, r.id, r.kids, finishedOK)
	}
	txc, refused := model.log(t)
	var u dynamometer.Usage
	for _, v := range meter.Snapshot() {
		u.Add(v)
	}
	st := b.Stats()
	t.Logf("%d of %d child finishes acknowledged; %d transactions (%d cancelled for a conflict, billed %.0f WRU of %.0f), %d re-runs",
		len(finishedOK), parents*children, u.Transactions, u.CancelledConflict, u.CancelledWrite, u.WRU(), st.Retries)
	for msg, n := range failures {
		t.Logf("failed x%d: %s", n, msg)
	}
	if txc+refused == 0 {
		t.Fatal("the conflict model refused nothing: the test exercised no meeting")
	}
	if len(failures) > 0 {
		t.Fatalf("%d operations failed under conflicts alone (each refusal is retriable)", len(failures))
	}
}

// Children locked by lock calls under leases (dynamo/doc.go, "Lock
// leases") while their parents block on them and they finish, with the
// conflict model on: the leases' items are written only by single-item
// writes of their own lock call and of the sweep, which no transaction
// includes, so the model refuses nothing at a lease; the fan-in
// invariants hold, and the sweep past the expiry removes every lease.
func TestConflictModelLeasesAddNoCancelledWork(t *testing.T) {
	ctx := context.Background()
	model := newConflictModel(20 * time.Millisecond)
	b, _ := newBackend(t, dynamo.Options{}, model.register)
	svc := store.New(b, store.Options{Clock: &fixedClock{t0}})

	const parents, children, lockers = 4, 10, 4
	type parentRun struct {
		id core.ExecutionId
		v  core.Version
	}
	var runs []parentRun
	for range parents {
		p := newID()
		v := lockedWorkflow(t, svc, p)
		batch, kids := fanOut(p, children)
		v = must(svc.AppendBatchCreateNewExecution(ctx, t0, batch, p, v, kids, nil))(t)
		runs = append(runs, parentRun{p, v})
	}
	model.enabled.Store(true)
	var mu sync.Mutex
	finishedOK := map[core.ExecutionId]bool{}
	kidsOf := map[core.ExecutionId][]core.LockedExecution{}
	failures := map[string]int{}
	fail := func(what string, err error) {
		mu.Lock()
		defer mu.Unlock()
		failures[what+": "+err.Error()]++
	}
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Go(func() {
			if _, err := svc.Append(ctx, r.id, r.v,
				core.AppendRequest{CreatedAt: t0, Event: hist(&core.JoinNext{JoinSetID: fanJS, RunExpiresAt: t0})}); err != nil {
				fail("block", err)
			}
		})
	}
	var taken atomic.Int64
	for range lockers {
		wg.Go(func() {
			for taken.Load() < parents*children {
				locked, err := svc.LockPendingByFFQNs(ctx, lockReq(t0, compAct), []core.FunctionFqn{ffqnAct})
				if err != nil {
					fail("lock", err)
					return
				}
				taken.Add(int64(len(locked)))
				for i, k := range locked {
					p, _, _ := k.ExecutionID.SplitToParts()
					mu.Lock()
					kidsOf[p] = append(kidsOf[p], k)
					mu.Unlock()
					if err := finish(ctx, svc, k, fmt.Sprint(i)); err != nil {
						fail("finish", err)
						continue
					}
					mu.Lock()
					finishedOK[k.ExecutionID] = true
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	model.enabled.Store(false)

	must(store.Sweep(ctx, svc, t0.Add(2*time.Minute)))(t)
	for _, r := range runs {
		checkFanIn(ctx, t, svc, r.id, kidsOf[r.id], finishedOK)
	}
	model.log(t)
	model.mu.Lock()
	for k, n := range model.refused {
		if strings.HasSuffix(k, "at a lease") {
			t.Errorf("the model refused %d writes %q", n, k)
		}
	}
	model.mu.Unlock()
	if len(failures) > 0 {
		t.Fatalf("operations failed under conflicts alone: %v", failures)
	}
	if n := len(must(b.RawLeases(ctx))(t)); n != 0 {
		t.Fatalf("%d leases left after the sweep past their expiry", n)
	}
}

// refusals is how many writes the model refused, all kinds.
func (m *conflictModel) refusals() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for k, v := range m.refused {
		if k == "TransactWriteItems cancelled" || strings.HasSuffix(k, " refused") {
			n += v
		}
	}
	return n
}

// The single-item writes outside a commit that share an item with
// transactions — the drain's clean-up of the inbox, the outbox's
// completion (children's PutItems, the parent's ob cleared) and retention
// marking — are refused with TransactionConflictException when they meet
// one; the SDK's retryer re-sends them (a refusal changed nothing and each
// is idempotent), so a meeting costs a re-send, not the write: refused
// twice each, every one still lands.
func TestConflictModelSingleWritesOutsideCommitsAreRetried(t *testing.T) {
	ctx := context.Background()
	t.Run("drain clean-up", func(t *testing.T) {
		model := newConflictModel(0)
		b, _ := newBackend(t, dynamo.Options{}, model.register)
		svc := store.New(b, store.Options{Clock: &fixedClock{t0}})
		p, kids, _ := fanInParent(t, svc, 3, false)
		for i, k := range kids {
			if err := finish(ctx, svc, k, fmt.Sprint(i)); err != nil {
				t.Fatal(err)
			}
		}
		model.enabled.Store(true)
		model.refuseNext["UpdateItem inbox"] = 2
		wantResponses(t, svc, p, childIDs(kids)...) // the read drains, then cleans the inbox
		model.enabled.Store(false)
		if n := model.refusals(); n != 2 {
			t.Fatalf("%d refusals, want 2", n)
		}
		for _, it := range must(b.RawPartition(ctx, "E#"+p.String()))(t) {
			if skOf(it) == "S" && it["ks"] != nil {
				t.Fatalf("the inbox still holds keys %v after the drain", it["ks"])
			}
		}
	})
	t.Run("outbox completion", func(t *testing.T) {
		model := newConflictModel(0)
		b, _ := newBackend(t, dynamo.Options{}, model.register)
		svc := store.New(b, store.Options{Clock: &fixedClock{t0}})
		parent := newID()
		v := lockedWorkflow(t, svc, parent)
		batch, children := fanOut(parent, 150)
		model.enabled.Store(true)
		model.refuseNext["PutItem head"] = 2
		model.refuseNext["UpdateItem head"] = 2
		model.refuseNext["DeleteItem outbox"] = 2
		must(svc.AppendBatchCreateNewExecution(ctx, t0, batch, parent, v, children, nil))(t)
		model.enabled.Store(false)
		if n := model.refusals(); n != 6 {
			t.Fatalf("%d refusals, want 6", n)
		}
		for _, it := range must(b.RawPartition(ctx, "E#"+parent.String()))(t) {
			if skOf(it) == "H" && it["ob"] != nil || strings.HasPrefix(skOf(it), "O#") {
				t.Fatalf("the fan-out is incomplete when Update returned: %s carries %v", skOf(it), it["ob"])
			}
		}
		for _, c := range children {
			if h := must(b.RawHead(ctx, c.ExecutionID))(t); h == nil {
				t.Fatalf("child %s missing when Update returned", c.ExecutionID)
			}
		}
	})
	t.Run("retention marking", func(t *testing.T) {
		model := newConflictModel(0)
		e := newRetentionEnv(t, model.register)
		done := storetest.BuildTree(t, e.svc, e.clock, true, false)
		e.clock.Advance(30 * time.Minute)
		model.enabled.Store(true)
		model.refuseNext["UpdateItem head"] = 2
		model.refuseNext["UpdateItem response"] = 2
		model.refuseNext["UpdateItem guard"] = 2
		res := e.retain(t)
		model.enabled.Store(false)
		if res.Expired != 1 {
			t.Fatalf("pass: %+v, want the tree marked", res)
		}
		if n := model.refusals(); n != 6 {
			t.Fatalf("%d refusals, want 6", n)
		}
		for _, it := range e.owned(t, done.Root) {
			if ttlOfItem(t, it) == 0 {
				t.Errorf("item %s/%s unmarked", keyString(it, dynamo.AttrPK), keyString(it, dynamo.AttrSK))
			}
		}
	})
}
