package dynamo_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/dynamo"
	"github.com/stela-dev/stela/store"
)

var (
	flagFaultSeed = flag.Uint64("dynamo.faultseed", 20261129, "seed of the fault injection test (0 = time-based); fixed by default so CI is reproducible")
	flagFaultOps  = flag.Int("dynamo.faultops", 40, "operations per worker in the fault injection test")
)

// Fault kinds, with Temporal-style rates per DynamoDB call (docs/spec/reliability.md T3).
type faultKind int

const (
	faultNone faultKind = iota
	faultThrottle
	faultTxConflict
	faultInternalBefore
	faultInternalAfter
	faultTimeoutBefore
	faultExecuteThenTimeout
	faultInProgress
	numFaults
)

var faultNames = [...]string{"none", "throttle", "transaction_conflict", "internal_error_before", "internal_error_after_execute",
	"timeout_before_send", "execute_then_timeout", "transaction_in_progress"}

// timeoutErr is a client-side timeout: no answer from DynamoDB.
type timeoutErr struct{}

func (timeoutErr) Error() string        { return "injected: i/o timeout" }
func (timeoutErr) Timeout() bool        { return true }
func (timeoutErr) RetryableError() bool { return true }

// faultInjector is an SDK deserialize-step middleware (one call per attempt,
// inside the retry loop) that fails calls at random points.
type faultInjector struct {
	enabled atomic.Bool
	mu      sync.Mutex
	rng     *rand.Rand
	counts  map[string]int
	// model refuses what DynamoDB refuses when requests meet on an item
	// (conflict_test.go), while the injector is enabled.
	model *conflictModel
}

func (f *faultInjector) register(o *dynamodb.Options) {
	if f.model != nil {
		f.model.register(o)
	}
	o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
		return s.Deserialize.Add(middleware.DeserializeMiddlewareFunc("FaultInjector", f.handle), middleware.Before)
	})
}

func (f *faultInjector) pick(op string) faultKind {
	f.mu.Lock()
	defer f.mu.Unlock()
	write := op == "TransactWriteItems" || op == "PutItem" || op == "UpdateItem" || op == "DeleteItem"
	r := f.rng.Float64()
	var k faultKind
	switch {
	case r < 0.05:
		k = faultThrottle
	case r < 0.10:
		k = faultTxConflict
	case r < 0.12:
		k = faultInternalBefore
	case r < 0.15:
		k = faultTimeoutBefore
	case r < 0.20:
		k = faultExecuteThenTimeout
	case r < 0.21:
		k = faultInProgress
	case r < 0.23:
		k = faultInternalAfter
	}
	if !write && (k == faultTxConflict || k == faultInternalBefore || k == faultInternalAfter) {
		k = faultThrottle // reads only see transient, SDK-retried faults
	}
	if k != faultNone {
		f.counts[faultNames[k]+"/"+op]++
		f.counts[faultNames[k]]++
	}
	return k
}

func (f *faultInjector) handle(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
	if !f.enabled.Load() {
		return next.HandleDeserialize(ctx, in)
	}
	op := middleware.GetOperationName(ctx)
	switch f.pick(op) {
	case faultThrottle:
		return middleware.DeserializeOutput{}, middleware.Metadata{}, &smithy.GenericAPIError{Code: "ThrottlingException", Message: "injected"}
	case faultInProgress:
		return middleware.DeserializeOutput{}, middleware.Metadata{}, &smithy.GenericAPIError{Code: "TransactionInProgressException", Message: "injected"}
	case faultTxConflict:
		if op == "TransactWriteItems" {
			return middleware.DeserializeOutput{}, middleware.Metadata{}, &types.TransactionCanceledException{
				Message: strPtr("injected"), CancellationReasons: []types.CancellationReason{{Code: strPtr("TransactionConflict")}}}
		}
		return middleware.DeserializeOutput{}, middleware.Metadata{}, &types.TransactionConflictException{Message: strPtr("injected")}
	case faultInternalBefore:
		return middleware.DeserializeOutput{}, middleware.Metadata{}, &smithy.GenericAPIError{Code: "InternalServerError", Message: "injected"}
	case faultTimeoutBefore:
		return middleware.DeserializeOutput{}, middleware.Metadata{}, timeoutErr{}
	case faultExecuteThenTimeout:
		out, md, err := next.HandleDeserialize(ctx, in)
		if err != nil {
			return out, md, err
		}
		return middleware.DeserializeOutput{}, md, timeoutErr{}
	case faultInternalAfter:
		out, md, err := next.HandleDeserialize(ctx, in)
		if err != nil {
			return out, md, err
		}
		return middleware.DeserializeOutput{}, md, &smithy.GenericAPIError{Code: "InternalServerError", Message: "injected after execute"}
	}
	return next.HandleDeserialize(ctx, in)
}

func strPtr(s string) *string { return &s }

// newFaultFixture returns the seed (-dynamo.faultseed, logged), a disabled
// fault injector drawing from stream, and a service over a backend whose
// client goes through it.
func newFaultFixture(t *testing.T, stream uint64) (uint64, *faultInjector, *dynamo.Backend, *store.Service) {
	t.Helper()
	seed := *flagFaultSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -dynamo.faultseed=%d)", seed, seed)
	f := &faultInjector{rng: rand.New(rand.NewPCG(seed, stream)), counts: map[string]int{}, model: newConflictModel(20 * time.Millisecond)}
	f.model.follow = &f.enabled
	b, _ := newBackend(t, dynamo.Options{}, f.register)
	return seed, f, b, store.New(b, store.Options{Clock: &fixedClock{t0}})
}

// log reports the faults injected and the backend's counters.
func (f *faultInjector) log(t *testing.T, b *dynamo.Backend) {
	t.Helper()
	var kinds []string
	for k, n := range f.counts {
		if !strings.Contains(k, "/") {
			kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
		}
	}
	sort.Strings(kinds)
	st := b.Stats()
	t.Logf("faults: %s", strings.Join(kinds, " "))
	if f.model != nil {
		f.model.log(t)
	}
	t.Logf("backend: commits=%d retries=%d resends=%d own-commits-recognised=%d registered=%d",
		st.Commits, st.Retries, st.Resends, st.OwnCommits, st.Registered)
}

type ack struct {
	id      core.ExecutionId
	version core.Version
	value   string
}

// Faults at random points of every DynamoDB call — including "execute, then
// return a timeout", and the conflicts DynamoDB raises when a single-item
// write meets a transaction on the same item (conflictModel) — must never
// lose an acknowledged write, duplicate a version or grant a lock twice
// (docs/spec/reliability.md S1–S3, T3).
func TestFaultInjectionKeepsTheInvariants(t *testing.T) {
	seed, f, b, svc := newFaultFixture(t, 0x5eed)
	ctx := context.Background()

	const workflows, appenders, activities, lockers = 4, 6, 30, 3
	ops := *flagFaultOps
	var wfs []core.ExecutionId
	for range workflows {
		id := newID()
		lockedWorkflow(t, svc, id)
		wfs = append(wfs, id)
	}
	var acts []core.ExecutionId
	for range activities {
		id := newID()
		must(svc.Create(ctx, createReq(id, ffqnAct, compAct, t0)))(t)
		acts = append(acts, id)
	}

	f.enabled.Store(true)
	var (
		mu               sync.Mutex
		acks             []ack
		okOps, failOps   int
		grants           = map[core.ExecutionId][]core.RunId{}
		finished         = map[core.ExecutionId]bool{}
		failures         = map[string]int{}
		wg               sync.WaitGroup
		versionConflicts atomic.Int64
	)
	record := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if err == nil {
			okOps++
			return
		}
		failOps++
		failures[err.Error()]++
	}
	for w := range appenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for i := range ops {
				id := wfs[rng.IntN(len(wfs))]
				var next core.Version
				err := b.View(ctx, func(tx store.ReadTx) error {
					st, err := tx.Head(id)
					next = st.NextVersion()
					return err
				})
				if err != nil {
					record(err)
					continue
				}
				value := fmt.Sprintf("w%d-%d", w, i)
				_, err = svc.Append(ctx, id, next, core.AppendRequest{CreatedAt: t0, Event: hist(&core.Persist{Value: core.Bytes(value), Kind: core.PersistKind{Type: "execution_id"}})})
				var vc *core.VersionConflictError
				if errors.As(err, &vc) {
					versionConflicts.Add(1)
					record(nil)
					continue
				}
				record(err)
				if err == nil {
					mu.Lock()
					acks = append(acks, ack{id, next, value})
					mu.Unlock()
				}
			}
		}()
	}
	for l := range lockers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < ops; i++ {
				req := lockReq(t0, compAct)
				req.BatchSize = 2
				req.RunID = mustV(core.NewRunId(uint64(l*1000+i), nil))
				locked, err := svc.LockPendingByFFQNs(ctx, req, []core.FunctionFqn{ffqnAct})
				record(err)
				for _, le := range locked {
					mu.Lock()
					grants[le.ExecutionID] = append(grants[le.ExecutionID], req.RunID)
					mu.Unlock()
					_, err := svc.Append(ctx, le.ExecutionID, le.NextVersion, core.AppendRequest{CreatedAt: t0, Event: &core.Finished{Retval: core.RetOk(nil)}})
					record(err)
					if err == nil {
						mu.Lock()
						finished[le.ExecutionID] = true
						acks = append(acks, ack{le.ExecutionID, le.NextVersion, "finished"})
						mu.Unlock()
					}
				}
			}
		}()
	}
	wg.Wait()
	f.enabled.Store(false)

	// S1: every acknowledged write is there. S2: versions 0..n without gaps
	// or repeats, each value at most once.
	logs := map[core.ExecutionId]*core.ExecutionLog{}
	for _, id := range append(append([]core.ExecutionId{}, wfs...), acts...) {
		log := must(svc.Get(ctx, id))(t)
		logs[id] = log
		seen := map[string]bool{}
		for i, ev := range log.Events {
			if ev.Version != core.Version(i) {
				t.Fatalf("S2: %s event %d has version %d", id, i, ev.Version)
			}
			if h, ok := ev.Event.(*core.HistoryEventRequest); ok {
				if p, ok := h.Event.(*core.Persist); ok {
					if seen[string(p.Value)] {
						t.Fatalf("S2: %s value %s appended twice", id, p.Value)
					}
					seen[string(p.Value)] = true
				}
			}
		}
	}
	for _, a := range acks {
		log := logs[a.id]
		if int(a.version) >= len(log.Events) {
			t.Fatalf("S1: acknowledged %s@%d (%s) is missing", a.id, a.version, a.value)
		}
		ev := log.Events[a.version].Event
		switch e := ev.(type) {
		case *core.Finished:
			if a.value != "finished" {
				t.Fatalf("S1: %s@%d is Finished, acknowledged %s", a.id, a.version, a.value)
			}
		case *core.HistoryEventRequest:
			if p, ok := e.Event.(*core.Persist); !ok || string(p.Value) != a.value {
				t.Fatalf("S1: %s@%d differs from the acknowledged %s", a.id, a.version, a.value)
			}
		default:
			t.Fatalf("S1: %s@%d is %T, acknowledged %s", a.id, a.version, ev, a.value)
		}
	}
	// S3: one lock holder per execution (each activity is locked once: a
	// second grant would need an unlock, which nobody appends).
	for id, runs := range grants {
		if len(runs) != 1 {
			t.Fatalf("S3: %s granted to %d runs", id, len(runs))
		}
		locks := 0
		for _, ev := range logs[id].Events {
			if _, ok := ev.Event.(*core.Locked); ok {
				locks++
			}
		}
		if locks != 1 {
			t.Fatalf("S3: %s has %d Locked events", id, locks)
		}
	}

	t.Logf("ops ok=%d fail=%d (version conflicts among ok: %d); acknowledged writes %d; locked %d, finished %d",
		okOps, failOps, versionConflicts.Load(), len(acks), len(grants), len(finished))
	f.log(t, b)
	for msg, n := range failures {
		t.Logf("failed op x%d: %s", n, msg)
	}
	// Safety (S1–S3) is asserted strictly above. Liveness (docs/spec/reliability.md L1:
	// ≥ 99 % complete within the retry budget) is a measured figure: on a loaded
	// 2-core machine the emulator's latency adds real timeouts to the injected
	// ones, so only a gross regression (> 5 %) fails the test.
	total := okOps + failOps
	t.Logf("L1: %d of %d operations failed (%.2f%%; target ≤ 1%%)", failOps, total, 100*float64(failOps)/float64(max(total, 1)))
	if failOps*20 > total {
		t.Fatalf("L1: %d of %d operations failed (> 5%%)", failOps, total)
	}
}

// Fan-in under faults (doc.go, "Fan-in"): children of blocked parents
// finish concurrently while every DynamoDB call may fail at a random point
// (the registration's UpdateItem included, e.g. executed then timed out).
// Afterwards, with faults off: a child is finished exactly when its parent
// holds its response, once (S2, §8.15); cursors are gapless; and once the
// sweep has resolved the expired locks of children whose finish failed
// (settling their parents), no parent with a response stays blocked (§8.3).
func TestFaultInjectionFanInKeepsTheInvariants(t *testing.T) {
	_, f, b, svc := newFaultFixture(t, 0xfa41)
	ctx := context.Background()

	const parents, children = 3, 12
	var kids []core.LockedExecution
	var ps []core.ExecutionId
	for range parents {
		p, locked, _ := fanInParent(t, svc, children, true)
		ps = append(ps, p)
		kids = append(kids, locked...)
	}
	f.enabled.Store(true)
	var mu sync.Mutex
	finishedOK := map[core.ExecutionId]bool{}
	failures := map[string]int{}
	var wg sync.WaitGroup
	for i, k := range kids {
		wg.Go(func() {
			err := finish(ctx, svc, k, fmt.Sprint(i))
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				finishedOK[k.ExecutionID] = true
			} else {
				failures[err.Error()]++
			}
		})
	}
	wg.Wait()
	f.enabled.Store(false)

	// Children whose finish failed still hold their lock (one minute): the
	// sweep resolves those locks and settles their parents.
	must(store.Sweep(ctx, svc, t0.Add(2*time.Minute)))(t)
	for _, p := range ps {
		var mine []core.LockedExecution
		for _, k := range kids {
			if parent, _, _ := k.ExecutionID.SplitToParts(); parent == p {
				mine = append(mine, k)
			}
		}
		checkFanIn(ctx, t, svc, p, mine, finishedOK)
	}
	t.Logf("%d of %d child finishes acknowledged", len(finishedOK), len(kids))
	f.log(t, b)
	for msg, n := range failures {
		t.Logf("failed finish x%d: %s", n, msg)
	}
}

// checkFanIn asserts the fan-in invariants of parent p once its children
// kids have settled: the parent's response cursors are gapless (§8.15),
// every child answered at most once (S2) and exactly when it finished, no
// acknowledged finish is missing (S1), and a parent holding responses is
// not blocked on its join set (§8.3).
func checkFanIn(ctx context.Context, t *testing.T, svc *store.Service, p core.ExecutionId, kids []core.LockedExecution, finishedOK map[core.ExecutionId]bool) {
	t.Helper()
	l := must(svc.Get(ctx, p))(t)
	got := map[core.ExecutionId]int{}
	for i, r := range l.Responses {
		if r.Cursor != core.ResponseCursor(i+1) {
			t.Fatalf("%s: cursors %v not gapless", p, l.Responses)
		}
		got[r.Event.Event.Event.(*core.ChildExecutionFinished).ChildExecutionID.ExecutionId]++
	}
	for _, k := range kids {
		cl := must(svc.Get(ctx, k.ExecutionID))(t)
		finished := cl.PendingState.State == core.StateFinished
		switch {
		case got[k.ExecutionID] > 1:
			t.Fatalf("S2: %s answered %d times", k.ExecutionID, got[k.ExecutionID])
		case finished != (got[k.ExecutionID] == 1):
			t.Fatalf("§8.15: %s finished=%v but %d responses in its parent", k.ExecutionID, finished, got[k.ExecutionID])
		case finishedOK[k.ExecutionID] && !finished:
			t.Fatalf("S1: the acknowledged finish of %s is missing", k.ExecutionID)
		}
	}
	if len(l.Responses) > 0 && l.PendingState.State == core.StateBlockedByJoinSet {
		t.Fatalf("§8.3: %s is blocked with %d responses", p, len(l.Responses))
	}
}
