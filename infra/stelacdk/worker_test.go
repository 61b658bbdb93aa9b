package stelacdk

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/jsii-runtime-go"
)

// userStack is a user's CDK app: a stack of its own holding a Stela and
// two workers with different sizes and schedules.
func userStack(t *testing.T) (tmpl, *Stela, *Worker, *Worker) {
	t.Helper()
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir()),
		Context: &map[string]any{"aws:cdk:enable-path-metadata": true}})
	stack := awscdk.NewStack(app, jsii.String("Shop"), nil)
	stela := NewStela(stack, "Stela", &StelaProps{BuildDir: buildDir})
	assets := filepath.Join(t.TempDir(), "orders")
	if err := WritePlaceholder(filepath.Join(assets, "bootstrap")); err != nil {
		t.Fatal(err)
	}
	orders := NewWorker(stack, "Orders", &WorkerProps{Stela: stela, AssetDir: assets, MemoryMB: 256})
	reports := NewWorker(stack, "Reports", &WorkerProps{Stela: stela, AssetDir: assets, MemoryMB: 1024,
		TimeoutSeconds: 300, ReservedConcurrency: -1, Schedule: awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(5))),
		Environment: map[string]string{"STELA_WORKER_NAME": "reports"}})
	return tmpl(*assertions.Template_FromStack(stack, nil).ToJSON()), stela, orders, reports
}

// at finds the resource whose aws:cdk:path is Shop/<path>.
func (t tmpl) at(tb testing.TB, path string) resource {
	tb.Helper()
	for id, r := range t["Resources"].(map[string]any) {
		md, _ := r.(map[string]any)["Metadata"].(map[string]any)
		if md["aws:cdk:path"] == "Shop/"+path {
			return t.get(id)
		}
	}
	tb.Fatalf("no resource at Shop/%s", path)
	return resource{}
}

func TestWorkersOnAStelaOfTheUsersStack(t *testing.T) {
	stack, _, _, _ := userStack(t)
	if n := len(stack.resources("AWS::DynamoDB::Table")); n != 1 {
		t.Fatalf("%d tables, want the Stela's one", n)
	}
	// Stela's four functions and the two workers.
	if n := len(stack.resources("AWS::Lambda::Function")); n != 6 {
		t.Errorf("%d functions, want 6", n)
	}
	for _, w := range []struct {
		name                      string
		memory, timeout, reserved any
		schedule                  string
	}{
		{"Orders", float64(256), float64(DefaultWorkerTimeoutSeconds), float64(DefaultWorkerReservedConcurrency), "rate(1 minute)"},
		{"Reports", float64(1024), float64(300), nil, "rate(5 minutes)"},
	} {
		t.Run(w.name, func(t *testing.T) {
			fn := stack.at(t, w.name+"/Function/Resource")
			for k, v := range map[string]any{"MemorySize": w.memory, "Timeout": w.timeout, "ReservedConcurrentExecutions": w.reserved,
				"Runtime": "provided.al2023", "Handler": "bootstrap"} {
				if !jsonEq(fn.Props[k], v) {
					t.Errorf("%s = %v, want %v", k, fn.Props[k], v)
				}
			}
			if !jsonEq(fn.Props["Architectures"], []any{"arm64"}) {
				t.Errorf("Architectures = %v", fn.Props["Architectures"])
			}
			env := fn.Props["Environment"].(map[string]any)["Variables"].(map[string]any)
			table := stack.one(t, "AWS::DynamoDB::Table").ID
			bucket := stack.one(t, "AWS::S3::Bucket").ID
			if !refersTo(env[EnvTable], table) || !refersTo(env[EnvBucket], bucket) || env[EnvBucketPrefix] != CasPrefix ||
				env[EnvRetention] != "30d" || env["STELA_WORKER_MAX_BUDGET"] != fmt.Sprint(w.timeout)+"s" {
				t.Errorf("environment %v", env)
			}
			if _, ok := env[EnvFollowWait]; ok {
				t.Errorf("a worker serves no long polls: %v", env)
			}

			t.Run("LeastPrivilege", func(t *testing.T) {
				checkLeastPrivilegeOf(t, stack, fn, stack.at(t, w.name+"/FunctionLogs/Resource").ID, wantData[WorkerFunction], true)
			})

			dlq := stack.at(t, w.name+"/DeadLetters/Resource")
			rule := stack.at(t, w.name+"/Schedule/Resource")
			if rule.Props["ScheduleExpression"] != w.schedule {
				t.Errorf("ScheduleExpression = %v", rule.Props["ScheduleExpression"])
			}
			tg := asList(rule.Props["Targets"])
			if len(tg) != 1 || !refersTo(tg[0].(map[string]any)["Arn"], fn.ID) ||
				!refersTo(tg[0].(map[string]any)["DeadLetterConfig"].(map[string]any)["Arn"], dlq.ID) {
				t.Errorf("schedule targets %v, want the worker with its queue", tg)
			}
			found := false
			for _, cfg := range stack.resources("AWS::Lambda::EventInvokeConfig") {
				if refersTo(cfg.Props["FunctionName"], fn.ID) {
					found = true
					if on := cfg.Props["DestinationConfig"].(map[string]any)["OnFailure"].(map[string]any); !refersTo(on["Destination"], dlq.ID) {
						t.Errorf("OnFailure = %v", on)
					}
				}
			}
			if !found {
				t.Error("no EventInvokeConfig")
			}
			policy := stack.at(t, w.name+"/InvokePolicy/Resource")
			stmts := asList(policy.Props["PolicyDocument"].(map[string]any)["Statement"])
			if len(stmts) != 1 || !jsonEq(stmts[0].(map[string]any)["Action"], "lambda:InvokeFunction") ||
				!refersTo(stmts[0].(map[string]any)["Resource"], fn.ID) {
				t.Errorf("invoke policy %v, want lambda:InvokeFunction on this worker only", stmts)
			}
			for _, a := range []string{"ErrorsAlarm", "DeadLettersAlarm"} {
				alarm := stack.at(t, w.name+"/"+a+"/Resource")
				if acts := asList(alarm.Props["AlarmActions"]); len(acts) != 1 || !refersTo(acts[0], stack.at(t, "Stela/AlarmTopic/Resource").ID) {
					t.Errorf("%s notifies %v, want the Stela's topic", a, alarm.Props["AlarmActions"])
				}
			}
		})
	}
	outs := stack["Outputs"].(map[string]any)
	n := 0
	for name := range outs {
		if strings.Contains(name, "InvokePolicyArn") && (strings.HasPrefix(name, "Orders") || strings.HasPrefix(name, "Reports")) {
			n++
		}
	}
	if n != 2 {
		t.Errorf("outputs %v, want each worker's", outs)
	}
}

func TestWorkerPropsAreChecked(t *testing.T) {
	for name, props := range map[string]*WorkerProps{
		"NoStela":         {AssetDir: "x"},
		"NoCode":          {},
		"EntryAndAsset":   {Entry: "./cmd/worker", AssetDir: "x"},
		"TimeoutTooShort": {AssetDir: "x", TimeoutSeconds: 5},
	} {
		t.Run(name, func(t *testing.T) {
			app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
			stack := awscdk.NewStack(app, jsii.String("Shop"), nil)
			if name != "NoStela" {
				props.Stela = NewStela(stack, "Stela", &StelaProps{BuildDir: buildDir})
			}
			defer func() {
				if recover() == nil {
					t.Error("NewWorker accepted the props")
				}
			}()
			NewWorker(stack, "W", props)
		})
	}
}
