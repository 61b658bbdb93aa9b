package dynamo_test

import (
	"context"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/dynamo"
	"github.com/stela-dev/stela/store"
)

// hook runs a function around chosen calls, inside the SDK retry loop.
type hook struct {
	mu sync.Mutex
	// before may replace the request; after may replace the outcome. Both
	// see the operation name and the attempt number of this operation.
	before func(op string, n int, in any)
	after  func(ctx context.Context, op string, n int, err error) error
	counts map[string]int
}

func (h *hook) register(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
		return s.Deserialize.Add(middleware.DeserializeMiddlewareFunc("TestHook", h.handle), middleware.Before)
	})
	o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
		return s.Initialize.Add(middleware.InitializeMiddlewareFunc("TestHookInit",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				h.mu.Lock()
				before := h.before
				n := h.counts[middleware.GetOperationName(ctx)]
				h.mu.Unlock()
				if before != nil {
					before(middleware.GetOperationName(ctx), n, in.Parameters)
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.After)
	})
}

func (h *hook) handle(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
	op := middleware.GetOperationName(ctx)
	h.mu.Lock()
	if h.counts == nil {
		h.counts = map[string]int{}
	}
	h.counts[op]++
	n := h.counts[op]
	after := h.after
	h.mu.Unlock()
	out, md, err := next.HandleDeserialize(ctx, in)
	if after != nil {
		if e := after(ctx, op, n, err); e != nil {
			return middleware.DeserializeOutput{}, md, e
		}
	}
	return out, md, err
}

func (h *hook) set(before func(string, int, any), after func(context.Context, string, int, error) error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.before, h.after, h.counts = before, after, map[string]int{}
}

// A transaction that committed but answered with an error, re-sent after
// the idempotency token expired (simulated by stripping it), fails its
// conditions; the request id on the items shows it was ours: success.
func TestAmbiguousTransactionIsRecognisedAfterTheTokenExpired(t *testing.T) {
	ctx := context.Background()
	h := &hook{}
	b, _ := newBackend(t, dynamo.Options{}, h.register)
	svc := store.New(b, store.Options{Clock: &fixedClock{t0}})
	parent := newID()
	v := lockedWorkflow(t, svc, parent)
	js := mustV(core.ParseJoinSetId("g:1"))
	child := parent.NextLevel(js)
	creq := createReq(child, ffqnAct, compAct, t0)
	creq.Parent = &core.Parent{ExecutionID: parent, JoinSetID: js}
	batch := []core.AppendRequest{{CreatedAt: t0, Event: hist(&core.JoinSetRequestEvent{JoinSetID: js,
		Request: &core.ChildExecutionRequest{ChildExecutionID: core.ExecutionIdDerived{ExecutionId: child}, TargetFFQN: ffqnAct}})}}
	h.set(func(op string, _ int, in any) {
		if tw, ok := in.(*dynamodb.TransactWriteItemsInput); ok {
			tw.ClientRequestToken = nil
		}
	}, func(_ context.Context, op string, n int, err error) error {
		if op == "TransactWriteItems" && n == 1 && err == nil {
			return &smithy.GenericAPIError{Code: "InternalServerError", Message: "committed, but the answer was lost"}
		}
		return nil
	})
	next, err := svc.AppendBatchCreateNewExecution(ctx, t0, batch, parent, v, []core.CreateRequest{creq}, nil)
	h.set(nil, nil)
	if err != nil || next != v+1 {
		t.Fatalf("append: next=%d err=%v", next, err)
	}
	if st := b.Stats(); st.OwnCommits != 1 || st.Resends != 1 {
		t.Fatalf("stats %+v, want one resend recognised as our own commit", st)
	}
	log := must(svc.Get(ctx, parent))(t)
	if len(log.Events) != int(v)+1 {
		t.Fatalf("parent has %d events, want %d", len(log.Events), v+1)
	}
	must(svc.GetPendingState(ctx, child))(t)
}

// Even when another commit changed the head in between, the event our
// commit appended (inline, with our request id) proves it landed.
func TestAmbiguousCommitIsRecognisedAfterAConcurrentWrite(t *testing.T) {
	ctx := context.Background()
	h := &hook{}
	b, _ := newBackend(t, dynamo.Options{}, h.register)
	svc := store.New(b, store.Options{Clock: &fixedClock{t0}})
	id := newID()
	v := lockedWorkflow(t, svc, id)
	js := mustV(core.ParseJoinSetId("o:1"))
	delay := core.NewDelayId(id, js, 1)
	// The append is a single PutItem: it commits, a response lands on the
	// same head, then the answer is lost (a 5xx the SDK does not retry).
	var respErr error
	h.set(nil, func(ctx context.Context, op string, n int, err error) error {
		if op == "PutItem" && n == 1 && err == nil {
			_, respErr = svc.AppendDelayResponse(context.Background(), t0, id, js, delay, false)
			return &smithy.GenericAPIError{Code: "InternalServerError", Message: "committed, but the answer was lost"}
		}
		return nil
	})
	_, err := svc.Append(ctx, id, v, core.AppendRequest{CreatedAt: t0, Event: hist(&core.JoinSetCreate{JoinSetID: js})})
	h.set(nil, nil)
	if err != nil || respErr != nil {
		t.Fatalf("append: %v; concurrent response: %v", err, respErr)
	}
	log := must(svc.Get(ctx, id))(t)
	if len(log.Events) != int(v)+1 || len(log.Responses) != 1 {
		t.Fatalf("log: %d events (want %d), %d responses", len(log.Events), v+1, len(log.Responses))
	}
	if st := b.Stats(); st.OwnCommits != 1 {
		t.Fatalf("stats %+v, want the re-send recognised as our own commit", st)
	}
}

// An index entry that claims a locked execution is pending (an eventually
// consistent GSI lagging behind) is re-read and skipped, never granted.
func TestStaleIndexEntryIsSkippedNotGranted(t *testing.T) {
	ctx := context.Background()
	svc, b := newService(t, &fixedClock{t0}, dynamo.Options{Shards: 1})
	id := newID()
	must(svc.Create(ctx, createReq(id, ffqnAct, compAct, t0)))(t)
	first := must(svc.LockPendingByFFQNs(ctx, lockReq(t0, compAct), []core.FunctionFqn{ffqnAct}))(t)
	if len(first) != 1 {
		t.Fatalf("first lock: %d", len(first))
	}
	noErr(t, b.RawSet(ctx, "E#"+id.String(), "H", map[string]string{
		dynamo.AttrPendingFFQN: ffqnAct.String() + "#0", dynamo.AttrPendingSort: "0000"}))
	if ids := must(b.PendingByFFQN(ctx, ffqnAct, t0, 10, nil))(t); len(ids) != 1 {
		t.Fatalf("the fake stale entry is not visible: %v", ids)
	}
	req := lockReq(t0, compAct)
	req.RunID = mustV(core.NewRunId(99, nil))
	if again := must(svc.LockPendingByFFQNs(ctx, req, []core.FunctionFqn{ffqnAct}))(t); len(again) != 0 {
		t.Fatalf("stale index entry granted: %+v", again)
	}
}
