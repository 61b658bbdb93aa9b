package functions_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/functions"
	"github.com/stela-dev/stela/functions/lambdatest"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/timers"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// blockedOnDelay creates a workflow blocked on a delay due at t0+1s.
func blockedOnDelay(tb testing.TB, svc *store.Service) core.ExecutionId {
	tb.Helper()
	ctx := context.Background()
	id, err := core.NewExecutionId(uint64(t0.UnixMilli()), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	ffqn, _ := core.ParseFunctionFqn("test:fn/wf.sleep")
	wf := core.ComponentId{ComponentType: core.ComponentTypeWorkflow}
	if _, err := svc.Create(ctx, core.CreateRequest{CreatedAt: t0, ExecutionID: id, FFQN: ffqn, Params: core.Params{},
		ScheduledAt: t0, ComponentID: wf}); err != nil {
		tb.Fatal(err)
	}
	exr, _ := core.ParseExecutorId("Exr_01KBNJ2T3D8W7H3X6Q4M9R5V1A")
	run, _ := core.ParseRunId("Run_01KBNJ2V0P6C4Y8N2B7K3T5W9E")
	le, err := svc.LockOne(ctx, core.LockRequest{CreatedAt: t0, PendingAtOrSooner: t0, ComponentID: wf, ExecutorID: exr,
		RunID: run, LockExpiresAt: t0.Add(time.Hour), RetryConfig: core.ComponentRetryConfig{}}, id, 1)
	if err != nil {
		tb.Fatal(err)
	}
	js, _ := core.ParseJoinSetId("o:sleep")
	batch := []core.AppendRequest{
		{CreatedAt: t0, Event: &core.HistoryEventRequest{Event: &core.JoinSetCreate{JoinSetID: js}}},
		{CreatedAt: t0, Event: &core.HistoryEventRequest{Event: &core.JoinSetRequestEvent{JoinSetID: js,
			Request: &core.DelayRequest{DelayID: core.NewDelayId(id, js, 1), ExpiresAt: t0.Add(time.Second),
				ScheduleAt: core.ScheduleAt{Kind: "in", In: core.DurationOf(time.Second)}}}}},
		{CreatedAt: t0, Event: &core.HistoryEventRequest{Event: &core.JoinNext{JoinSetID: js, RunExpiresAt: t0.Add(time.Hour)}}},
	}
	if _, err := svc.AppendBatch(ctx, t0, batch, id, le.NextVersion); err != nil {
		tb.Fatal(err)
	}
	return id
}

type failingDB struct{ core.DbConnection }

func (failingDB) GetExpiredTimers(context.Context, core.Timestamp) ([]core.ExpiredTimer, error) {
	return nil, errors.New("injected failure")
}

func TestTimersFunction(t *testing.T) {
	event := lambdatest.MustReadEvent(t, "timers/testdata/scheduled-event.json")
	due := fixedClock{t0.Add(2 * time.Second)}

	t.Run("ScheduledEventFiresTheDueDelay", func(t *testing.T) {
		svc := newStore()
		id := blockedOnDelay(t, svc)
		var logs syncBuffer
		log := slog.New(functions.WithRequestID(slog.NewJSONHandler(&logs, nil)))
		// A 1 ns budget: exactly one pass, so the test does not depend on timing.
		h := functions.NewTimers(svc, due, functions.TimersOptions{MaxBudget: time.Nanosecond, Logger: log})
		out := lambdatest.MustInvoke(t, lambdatest.Context(t, "lambda-timers", time.Minute), h.Handle, event)
		var st timers.Stats
		if err := json.Unmarshal(out, &st); err != nil {
			t.Fatalf("decode result: %v\n%s", err, out)
		}
		if st.Passes != 1 || st.ExpiredDelays != 1 {
			t.Errorf("stats = %+v, want one pass firing one delay", st)
		}
		ps, err := svc.GetPendingState(context.Background(), id)
		if err != nil || ps.PendingState.Status() != "pending_at" {
			t.Errorf("workflow state = %s, %v; want pending_at", ps.PendingState.Status(), err)
		}
		for _, want := range []string{`"msg":"timers invocation"`, `"aws_request_id":"lambda-timers"`, `"event_id":"53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa"`} {
			if !strings.Contains(logs.String(), want) {
				t.Errorf("logs lack %s:\n%s", want, logs.String())
			}
		}
	})

	t.Run("InvocationFailsWhenEveryPassFailed", func(t *testing.T) {
		h := functions.NewTimers(failingDB{newStore()}, due, functions.TimersOptions{MaxBudget: time.Nanosecond,
			Logger: slog.New(slog.DiscardHandler)})
		_, err := lambda.NewHandler(h.Handle).Invoke(lambdatest.Context(t, "lambda-fail", time.Minute), event)
		if err == nil || !strings.Contains(err.Error(), "every timers pass failed") {
			t.Errorf("invoke error = %v, want every timers pass failed", err)
		}
	})

	t.Run("BudgetIsTimeLeftMinusTheMarginCappedAtMaxBudget", func(t *testing.T) {
		h := functions.NewTimers(newStore(), due, functions.TimersOptions{SafetyMargin: 2 * time.Second, MaxBudget: time.Minute})
		if got := h.Budget(lambdatest.Context(t, "a", 10*time.Second)); got <= 7*time.Second || got > 8*time.Second {
			t.Errorf("budget with 10 s left = %v, want in (7s, 8s]", got)
		}
		if got := h.Budget(lambdatest.Context(t, "b", 5*time.Minute)); got != time.Minute {
			t.Errorf("budget with 5 min left = %v, want the 1m cap", got)
		}
		if got := h.Budget(lambdatest.Context(t, "c", time.Second)); got != time.Nanosecond {
			t.Errorf("budget inside the margin = %v, want 1ns (one pass)", got)
		}
		if got := h.Budget(context.Background()); got != time.Minute {
			t.Errorf("budget without deadline = %v, want the 1m cap", got)
		}
	})
}
