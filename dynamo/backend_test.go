package dynamo_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/dynamo"
	"github.com/stela-dev/stela/store"
)

func hist(h core.HistoryEvent) core.ExecutionRequest { return &core.HistoryEventRequest{Event: h} }

// lockedWorkflow creates a workflow and locks it; it returns the next version.
func lockedWorkflow(t *testing.T, svc *store.Service, id core.ExecutionId) core.Version {
	t.Helper()
	ctx := context.Background()
	must(svc.Create(ctx, createReq(id, ffqnWf, compWf, t0)))(t)
	le := must(svc.LockOne(ctx, lockReq(t0, compWf), id, 1))(t)
	return le.NextVersion
}

func TestConcurrentAppendsAtOneVersionHaveExactlyOneWinner(t *testing.T) {
	ctx := context.Background()
	svc, _ := newService(t, &fixedClock{t0}, dynamo.Options{})
	id := newID()
	v := lockedWorkflow(t, svc, id)
	const writers, rounds = 6, 8
	for r := 0; r < rounds; r++ {
		var wg sync.WaitGroup
		var mu sync.Mutex
		wins, conflicts := 0, 0
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := core.AppendRequest{CreatedAt: t0, Event: hist(&core.Persist{Value: core.Bytes{byte(w), byte(r)}, Kind: core.PersistKind{Type: "execution_id"}})}
				_, err := svc.Append(ctx, id, v, req)
				mu.Lock()
				defer mu.Unlock()
				var vc *core.VersionConflictError
				switch {
				case err == nil:
					wins++
				case errors.As(err, &vc):
					conflicts++
				default:
					t.Errorf("round %d writer %d: %v", r, w, err)
				}
			}()
		}
		wg.Wait()
		if wins != 1 || conflicts != writers-1 {
			t.Fatalf("round %d: wins=%d conflicts=%d, want 1 and %d", r, wins, conflicts, writers-1)
		}
		v++
	}
	log := must(svc.Get(ctx, id))(t)
	for i, ev := range log.Events {
		if ev.Version != core.Version(i) {
			t.Fatalf("event %d has version %d", i, ev.Version)
		}
	}
	if got, want := len(log.Events), int(v); got != want {
		t.Fatalf("events = %d, want %d", got, want)
	}
}

func TestConcurrentLockersGrantEachExecutionOnce(t *testing.T) {
	ctx := context.Background()
	svc, _ := newService(t, &fixedClock{t0}, dynamo.Options{Shards: 4})
	const n, lockers = 24, 5
	for i := 0; i < n; i++ {
		must(svc.Create(ctx, createReq(newID(), ffqnAct, compAct, t0)))(t)
	}
	var mu sync.Mutex
	granted := map[core.ExecutionId]int{}
	var wg sync.WaitGroup
	for w := 0; w < lockers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				req := lockReq(t0, compAct)
				req.BatchSize = 3
				req.RunID = mustV(core.NewRunId(uint64(w), nil))
				locked, err := svc.LockPendingByFFQNs(ctx, req, []core.FunctionFqn{ffqnAct})
				if err != nil {
					t.Errorf("locker %d: %v", w, err)
					return
				}
				mu.Lock()
				for _, le := range locked {
					granted[le.ExecutionID]++
				}
				done := len(granted) == n
				mu.Unlock()
				if done {
					return
				}
			}
		}()
	}
	wg.Wait()
	if len(granted) != n {
		t.Fatalf("locked %d executions, want %d", len(granted), n)
	}
	for id, c := range granted {
		if c != 1 {
			t.Fatalf("%s granted %d times", id, c)
		}
	}
	left := must(svc.LockPendingByFFQNs(ctx, lockReq(t0, compAct), []core.FunctionFqn{ffqnAct}))(t)
	if len(left) != 0 {
		t.Fatalf("locked %d more after all were locked", len(left))
	}
}

// The JoinNext <-> response race (docs/spec/semantics.md §8.3): whatever order the two commits
// land in, the parent never stays blocked with its response present.
func TestJoinNextRacingAResponseNeverStrandsTheParent(t *testing.T) {
	ctx := context.Background()
	svc, _ := newService(t, &fixedClock{t0}, dynamo.Options{})
	for round := 0; round < 12; round++ {
		parent := newID()
		v := lockedWorkflow(t, svc, parent)
		js := mustV(core.NewJoinSetId(core.JoinSetKindGenerated, fmt.Sprint(round)))
		child := parent.NextLevel(js)
		creq := createReq(child, ffqnAct, compAct, t0)
		creq.Parent = &core.Parent{ExecutionID: parent, JoinSetID: js}
		batch := []core.AppendRequest{
			{CreatedAt: t0, Event: hist(&core.JoinSetCreate{JoinSetID: js})},
			{CreatedAt: t0, Event: hist(&core.JoinSetRequestEvent{JoinSetID: js, Request: &core.ChildExecutionRequest{ChildExecutionID: core.ExecutionIdDerived{ExecutionId: child}, TargetFFQN: ffqnAct}})},
		}
		v = must(svc.AppendBatchCreateNewExecution(ctx, t0, batch, parent, v, []core.CreateRequest{creq}, nil))(t)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			if _, err := svc.Append(ctx, parent, v, core.AppendRequest{CreatedAt: t0, Event: hist(&core.JoinNext{JoinSetID: js, RunExpiresAt: t0})}); err != nil {
				t.Errorf("join next: %v", err)
			}
		}()
		go func() {
			defer wg.Done()
			t1 := t0.Add(time.Millisecond)
			_, err := svc.AppendBatchRespondToParent(ctx,
				core.AppendEventsToExecution{ExecutionID: child, Version: 1, Batch: []core.AppendRequest{{CreatedAt: t1, Event: &core.Finished{Retval: core.RetOk(nil)}}}},
				core.AppendResponseToExecution{ParentExecutionID: parent, CreatedAt: t1, JoinSetID: js, ChildExecutionID: core.ExecutionIdDerived{ExecutionId: child}, FinishedVersion: 1, Result: core.RetOk(nil)}, t1)
			if err != nil {
				t.Errorf("respond: %v", err)
			}
		}()
		wg.Wait()
		ps := must(svc.GetPendingState(ctx, parent))(t)
		if ps.PendingState.State != core.StatePendingAt {
			t.Fatalf("round %d: parent is %s with its response present", round, ps.PendingState.Status())
		}
	}
}

// With a tiny head budget the inline events move to items again and again;
// reads, JoinNext ordinals and response ordinals must not notice.
func TestEventsSpilledFromTheHeadReadBackInOrder(t *testing.T) {
	ctx := context.Background()
	svc, b := newService(t, &fixedClock{t0}, dynamo.Options{HeadBudget: 900})
	parent := newID()
	v := lockedWorkflow(t, svc, parent)
	js := mustV(core.ParseJoinSetId("n:fan"))
	v = must(svc.Append(ctx, parent, v, core.AppendRequest{CreatedAt: t0, Event: hist(&core.JoinSetCreate{JoinSetID: js})}))(t)
	const n = 9
	var children []core.ExecutionId
	child := parent.NextLevel(js)
	for i := 0; i < n; i++ {
		children = append(children, child)
		creq := createReq(child, ffqnAct, compAct, t0)
		creq.Parent = &core.Parent{ExecutionID: parent, JoinSetID: js}
		req := core.AppendRequest{CreatedAt: t0, Event: hist(&core.JoinSetRequestEvent{JoinSetID: js, Request: &core.ChildExecutionRequest{ChildExecutionID: core.ExecutionIdDerived{ExecutionId: child}, TargetFFQN: ffqnAct}})}
		v = must(svc.AppendBatchCreateNewExecution(ctx, t0, []core.AppendRequest{req}, parent, v, []core.CreateRequest{creq}, nil))(t)
		child = child.Incremented()
	}
	// Children answer in reverse order; each JoinNext gets the next one.
	for i := n - 1; i >= 0; i-- {
		t1 := t0.Add(time.Duration(n-i) * time.Second)
		_, err := svc.AppendBatchRespondToParent(ctx,
			core.AppendEventsToExecution{ExecutionID: children[i], Version: 1, Batch: []core.AppendRequest{{CreatedAt: t1, Event: &core.Finished{Retval: core.RetOk(nil)}}}},
			core.AppendResponseToExecution{ParentExecutionID: parent, CreatedAt: t1, JoinSetID: js, ChildExecutionID: core.ExecutionIdDerived{ExecutionId: children[i]}, FinishedVersion: 1, Result: core.RetOk(nil)}, t1)
		if err != nil {
			t.Fatal(err)
		}
	}
	for k := 0; k < n; k++ {
		v = must(svc.Append(ctx, parent, v, core.AppendRequest{CreatedAt: t0, Event: hist(&core.JoinNext{JoinSetID: js, RunExpiresAt: t0})}))(t)
		ps := must(svc.GetPendingState(ctx, parent))(t)
		want := t0.Add(time.Duration(k+1) * time.Second)
		if ps.PendingState.State != core.StatePendingAt || !ps.PendingState.PendingAt.ScheduledAt.Equal(want) {
			t.Fatalf("JoinNext #%d: state %s %+v, want pending at %v", k+1, ps.PendingState.Status(), ps.PendingState.PendingAt, want)
		}
	}
	// One more JoinNext than responses blocks.
	v = must(svc.Append(ctx, parent, v, core.AppendRequest{CreatedAt: t0, Event: hist(&core.JoinNext{JoinSetID: js, RunExpiresAt: t0})}))(t)
	if ps := must(svc.GetPendingState(ctx, parent))(t); ps.PendingState.State != core.StateBlockedByJoinSet {
		t.Fatalf("extra JoinNext: state %s, want blocked", ps.PendingState.Status())
	}
	log := must(svc.Get(ctx, parent))(t)
	if len(log.Events) != int(v) || len(log.Responses) != n {
		t.Fatalf("log has %d events (want %d) and %d responses (want %d)", len(log.Events), v, len(log.Responses), n)
	}
	for i, ev := range log.Events {
		if ev.Version != core.Version(i) {
			t.Fatalf("event %d has version %d", i, ev.Version)
		}
	}
	page := must(svc.ListExecutionEvents(ctx, parent, core.Pagination[core.Version]{Direction: core.OlderThan, Length: 5, Cursor: 8, IncludingCursor: true}, false))(t)
	if len(page.Events) != 5 || page.Events[0].Version != 4 || page.Events[4].Version != 8 {
		t.Fatalf("events page: %d events from %d", len(page.Events), page.Events[0].Version)
	}
	if b.Stats().Spills == 0 {
		t.Fatal("the head never spilled")
	}
	items := must(b.RawPartition(ctx, "E#"+parent.String()))(t)
	var events, responses int
	for _, it := range items {
		sk := it[dynamo.AttrSK].(*types.AttributeValueMemberS).Value
		switch {
		case strings.HasPrefix(sk, "V#"):
			events++
		case strings.HasPrefix(sk, "R#"):
			responses++
		}
	}
	if events == 0 || events >= int(v) || responses != n {
		t.Fatalf("partition has %d event items (of %d events) and %d responses", events, v, responses)
	}
}

func TestTwoMegabyteResultIsOffloadedToTheCas(t *testing.T) {
	ctx := context.Background()
	b, cas := newBackend(t, dynamo.Options{})
	svc := store.New(b, store.Options{Clock: &fixedClock{t0}})
	id := newID()
	must(svc.Create(ctx, createReq(id, ffqnAct, compAct, t0)))(t)
	must(svc.LockOne(ctx, lockReq(t0, compAct), id, 1))(t)
	big := `"` + strings.Repeat("x", 2<<20) + `"`
	rv := core.RetOk(&core.WastValWithType{Type: "string", Value: json.RawMessage(big)})
	if _, err := svc.Append(ctx, id, 2, core.AppendRequest{CreatedAt: t0, Event: &core.Finished{Retval: rv}}); err != nil {
		t.Fatal(err)
	}
	if cas.count() == 0 {
		t.Fatal("nothing was written to the CAS")
	}
	got := must(svc.WaitForFinishedResult(ctx, id))(t)
	if !got.Equal(rv) {
		t.Fatalf("result differs: %d bytes", len(got.Value.Value))
	}
	log := must(svc.Get(ctx, id))(t)
	if len(log.Events) != 3 {
		t.Fatalf("events = %d", len(log.Events))
	}
	// Large params are offloaded too.
	id2 := newID()
	req := createReq(id2, ffqnAct, compAct, t0)
	req.Params = core.Params{json.RawMessage(big)}
	must(svc.Create(ctx, req))(t)
	cr := must(svc.GetCreateRequest(ctx, id2))(t)
	if len(cr.Params) != 1 || len(cr.Params[0]) != len(big) {
		t.Fatal("params did not round-trip")
	}
}

func TestDelayRowsAndResponsesAreUnique(t *testing.T) {
	ctx := context.Background()
	svc, b := newService(t, &fixedClock{t0}, dynamo.Options{})
	id := newID()
	v := lockedWorkflow(t, svc, id)
	js := mustV(core.ParseJoinSetId("o:sleep"))
	d1 := core.NewDelayId(id, js, 1)
	d2 := core.NewDelayId(id, js, 2)
	delayReq := func(d core.DelayId, paused bool) core.AppendRequest {
		return core.AppendRequest{CreatedAt: t0, Event: hist(&core.JoinSetRequestEvent{JoinSetID: js,
			Request: &core.DelayRequest{DelayID: d, ExpiresAt: t0.Add(time.Second), ScheduleAt: core.ScheduleAt{Kind: "in", In: core.DurationOf(time.Second)}, Paused: paused}})}
	}
	v = must(svc.AppendBatch(ctx, t0, []core.AppendRequest{{CreatedAt: t0, Event: hist(&core.JoinSetCreate{JoinSetID: js})}, delayReq(d1, false)}, id, v))(t)
	if _, err := svc.Append(ctx, id, v, delayReq(d1, false)); !errors.Is(err, core.ErrConflict) {
		t.Fatalf("second DelayRequest for %s: %v, want conflict", d1, err)
	}
	// sleep(0): the timer row is created and removed in one commit.
	v = must(svc.AppendBatchWithDelayResponse(ctx, t0, []core.AppendRequest{delayReq(d2, false),
		{CreatedAt: t0, Event: hist(&core.JoinNext{JoinSetID: js, RunExpiresAt: t0})}}, id, v, js, d2))(t)
	due := must(b.ExpiredDelays(ctx, t0.Add(time.Hour)))(t)
	if len(due) != 1 || due[0].DelayID != d1 {
		t.Fatalf("due delays = %+v, want only %s", due, d1)
	}
	noErr(t, svc.PauseDelay(ctx, d1))
	if due := must(b.ExpiredDelays(ctx, t0.Add(time.Hour)))(t); len(due) != 0 {
		t.Fatalf("paused delay is due: %+v", due)
	}
	noErr(t, svc.UnpauseDelay(ctx, d1))
	out := must(svc.AppendDelayResponse(ctx, t0, id, js, d1, true))(t)
	if out != core.DelayResponseSuccess {
		t.Fatalf("fire: %v", out)
	}
	if out := must(core.CancelDelay(ctx, svc, d1, t0))(t); out != core.DelayAlreadyFinished {
		t.Fatalf("cancel after fire: %v", out)
	}
	if err := svc.PauseDelay(ctx, d1); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("pause a fired delay: %v", err)
	}
	if due := must(b.ExpiredDelays(ctx, t0.Add(time.Hour)))(t); len(due) != 0 {
		t.Fatalf("fired delay still due: %+v", due)
	}
	log := must(svc.Get(ctx, id))(t)
	if len(log.Responses) != 2 {
		t.Fatalf("responses = %d, want 2", len(log.Responses))
	}
}

func TestCreateOfAnExistingIDConflicts(t *testing.T) {
	ctx := context.Background()
	svc, _ := newService(t, &fixedClock{t0}, dynamo.Options{})
	id := newID()
	must(svc.Create(ctx, createReq(id, ffqnAct, compAct, t0)))(t)
	if _, err := svc.Create(ctx, createReq(id, ffqnAct, compAct, t0)); !errors.Is(err, core.ErrConflict) {
		t.Fatalf("second create: %v", err)
	}
	paused := createReq(newID(), ffqnAct, compAct, t0)
	paused.Paused = true
	if v := must(svc.Create(ctx, paused))(t); v != 2 {
		t.Fatalf("paused create returned %d", v)
	}
	log := must(svc.Get(ctx, paused.ExecutionID))(t)
	if len(log.Events) != 2 || log.PendingState.Status() != "paused" {
		t.Fatalf("paused log: %d events, %s", len(log.Events), log.PendingState.Status())
	}
}

func TestClosedBackendFails(t *testing.T) {
	b, _ := newBackend(t, dynamo.Options{})
	_ = b.Close()
	err := b.Update(context.Background(), func(store.Tx) error { return nil })
	if !errors.Is(err, core.ErrClosed) {
		t.Fatalf("update after close: %v", err)
	}
	if _, err := b.Cancelling(context.Background(), 1); !errors.Is(err, core.ErrClosed) {
		t.Fatalf("query after close: %v", err)
	}
}
