package lambdaworker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stela-dev/stela/dynamo"
	"github.com/stela-dev/stela/dynamo/dynamoenv"
	"github.com/stela-dev/stela/functions/lambdatest"
	"github.com/stela-dev/stela/functions/workerpass"
	"github.com/stela-dev/stela/lambdaworker"
	"github.com/stela-dev/stela/worker"
)

// needDynamo skips without DynamoDB Local (never in CI).
func needDynamo(t *testing.T) {
	t.Helper()
	if os.Getenv("AWS_ENDPOINT_URL_DYNAMODB") != "" {
		return
	}
	const how = "set AWS_ENDPOINT_URL_DYNAMODB to a DynamoDB Local"
	if os.Getenv("CI") == "true" {
		t.Fatal(how + " (CI=true: never skipped)")
	}
	t.Skip(how)
}

// lambdaEnv sets the environment the construct (infra/stelacdk.NewWorker)
// gives a worker function, on a fresh table.
func lambdaEnv(t *testing.T) {
	t.Helper()
	needDynamo(t)
	for k, v := range map[string]string{"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"} {
		if os.Getenv(k) == "" {
			t.Setenv(k, v)
		}
	}
	table := fmt.Sprintf("lambdaworker-%d", time.Now().UnixNano())
	c, err := dynamoenv.NewClient(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := dynamo.CreateTable(context.Background(), c, table); err != nil {
		t.Fatal(err)
	}
	t.Setenv("STELA_TABLE", table)
	t.Setenv("STELA_BUCKET_PREFIX", "cas/")
	t.Setenv("STELA_RETENTION", "30d")
	t.Setenv("AWS_LAMBDA_FUNCTION_NAME", "orders-worker")
}

const greetFFQN = "test:lambdaworker/greet.greet"

func register(w *worker.Worker) {
	worker.Activity(w, greetFFQN, func(_ context.Context, name string) (string, error) { return "Hello, " + name + "!", nil })
}

func TestHandlerRunsAPassPerInvocationOnTheEnvironmentsStore(t *testing.T) {
	lambdaEnv(t)
	h, err := lambdaworker.New(context.Background(), register)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Worker.Close)
	if got := h.App.Config.Table; got != os.Getenv("STELA_TABLE") {
		t.Errorf("table %q", got)
	}
	ctx := context.Background()
	id, err := h.Worker.Submit(ctx, greetFFQN, "Lambda")
	if err != nil {
		t.Fatal(err)
	}
	event := lambdatest.MustReadEvent(t, "../functions/workerpass/testdata/scheduled-event.json")
	out := lambdatest.MustInvoke(t, lambdatest.Context(t, "req-1", 30*time.Second), h.Handle, event)
	var res workerpass.Result
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("decode %s: %v", out, err)
	}
	if !res.Idle || res.Activities != 1 {
		t.Errorf("result %+v, want one activity and idle", res)
	}
	// The budget is capped by the default max budget (a minute), not the 30 s deadline minus 5 s.
	if res.BudgetMs > 25_000 || res.BudgetMs < 20_000 {
		t.Errorf("budget %d ms, want the deadline minus the 5 s margin", res.BudgetMs)
	}
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if got, err := worker.Await[string](actx, h.Worker, id); err != nil || got != "Hello, Lambda!" {
		t.Errorf("result %q, %v", got, err)
	}
}

func TestBudgetAndMarginComeFromTheEnvironment(t *testing.T) {
	lambdaEnv(t)
	t.Setenv(lambdaworker.EnvMaxBudget, "3s")
	h, err := lambdaworker.New(context.Background(), register)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Worker.Close)
	out := lambdatest.MustInvoke(t, lambdatest.Context(t, "req-2", time.Minute), h.Handle, []byte(`{}`))
	var res workerpass.Result
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	if res.BudgetMs != 3000 || !res.Idle {
		t.Errorf("result %+v, want a 3 s budget, idle", res)
	}
}

func TestBadConfigurationFailsTheInit(t *testing.T) {
	for name, env := range map[string]map[string]string{
		"MarginNotADuration":       {lambdaworker.EnvMargin: "soon"},
		"BudgetNotPositive":        {lambdaworker.EnvMaxBudget: "0s"},
		"MarginBelowShutdownGrace": {lambdaworker.EnvMargin: "1s"},
		"NoTable":                  {"STELA_TABLE": ""},
	} {
		t.Run(name, func(t *testing.T) {
			lambdaEnv(t)
			for k, v := range env {
				t.Setenv(k, v)
			}
			_, err := lambdaworker.New(context.Background(), register)
			if err == nil {
				t.Fatal("New accepted the configuration")
			}
			for k := range env {
				if !strings.Contains(err.Error(), k) && !strings.Contains(err.Error(), "margin") {
					t.Errorf("error %q does not name %s", err, k)
				}
			}
		})
	}
	if _, err := lambdaworker.New(context.Background(), nil); err == nil {
		t.Error("New accepted a nil register")
	}
}

func TestWithOptionsAdjustsTheWorker(t *testing.T) {
	lambdaEnv(t)
	t.Setenv(lambdaworker.EnvName, "orders")
	var seen worker.Options
	h, err := lambdaworker.New(context.Background(), register, lambdaworker.WithOptions(func(o *worker.Options) {
		o.Concurrency = 3
		seen = *o
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Worker.Close)
	if seen.Name != "orders" || seen.ShutdownGrace != lambdaworker.DefaultShutdownGrace || seen.Logger == nil || seen.Clock == nil {
		t.Errorf("options before adjustment %+v", seen)
	}
}
