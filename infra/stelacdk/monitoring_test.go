package stelacdk

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stela-dev/stela/functions/app"
	"github.com/stela-dev/stela/obs"
)

const (
	testTopicArn     = "arn:aws:sns:us-east-1:123456789012:ops-pager"
	testAlarmEmail   = "oncall@example.com"
	testOtelEndpoint = "http://localhost:4318"
	testNamespace    = "Stela/" + StackName
)

// alarm returns the alarm whose construct id is id.
func (t tmpl) alarm(tb testing.TB, id string) resource {
	tb.Helper()
	return t.byPath(tb, id+"/Resource")
}

// metricStats returns the metrics an alarm reads: its own, or those of
// its metric math (with the expression).
type alarmMetric struct {
	Namespace, Name, Stat string
	Period                float64
	Dims                  map[string]any
}

func alarmMetrics(a resource) (expr string, out []alarmMetric) {
	if n, ok := a.Props["MetricName"].(string); ok {
		m := alarmMetric{Namespace: a.Props["Namespace"].(string), Name: n, Stat: fmt.Sprint(a.Props["Statistic"]),
			Period: a.Props["Period"].(float64), Dims: map[string]any{}}
		for _, d := range asList(a.Props["Dimensions"]) {
			d := d.(map[string]any)
			m.Dims[d["Name"].(string)] = d["Value"]
		}
		return "", []alarmMetric{m}
	}
	for _, q := range asList(a.Props["Metrics"]) {
		q := q.(map[string]any)
		if e, ok := q["Expression"].(string); ok {
			expr = e
			continue
		}
		ms := q["MetricStat"].(map[string]any)
		mt := ms["Metric"].(map[string]any)
		m := alarmMetric{Namespace: mt["Namespace"].(string), Name: mt["MetricName"].(string), Stat: ms["Stat"].(string),
			Period: ms["Period"].(float64), Dims: map[string]any{}}
		for _, d := range asList(mt["Dimensions"]) {
			d := d.(map[string]any)
			m.Dims[d["Name"].(string)] = d["Value"]
		}
		out = append(out, m)
	}
	return expr, out
}

// wantAlarm is an alarm's condition.
type wantAlarm struct {
	id, anchor              string
	namespace, metric, stat string
	period                  float64
	dims                    map[string]any
	threshold, periods      float64
	comparison, missingData string
	expression              string // metric math ("" for a single metric)
	mathMetrics             []string
}

func checkAlarm(t *testing.T, stack tmpl, w wantAlarm) {
	t.Helper()
	a := stack.alarm(t, w.id)
	if got := a.Props["Threshold"]; got != w.threshold {
		t.Errorf("Threshold = %v, want %v", got, w.threshold)
	}
	if a.Props["EvaluationPeriods"] != w.periods || a.Props["DatapointsToAlarm"] != w.periods {
		t.Errorf("EvaluationPeriods %v DatapointsToAlarm %v, want %v of %v", a.Props["DatapointsToAlarm"], a.Props["EvaluationPeriods"], w.periods, w.periods)
	}
	if a.Props["ComparisonOperator"] != w.comparison || a.Props["TreatMissingData"] != w.missingData {
		t.Errorf("ComparisonOperator %v TreatMissingData %v, want %s %s", a.Props["ComparisonOperator"], a.Props["TreatMissingData"], w.comparison, w.missingData)
	}
	if d := fmt.Sprint(a.Props["AlarmDescription"]); !strings.Contains(d, RunbookURL+"#"+strings.ToLower(w.anchor)) {
		t.Errorf("AlarmDescription %q does not point at the runbook section %s", d, strings.ToLower(w.anchor))
	}
	expr, ms := alarmMetrics(a)
	if w.expression != "" {
		if expr != w.expression {
			t.Errorf("expression %q, want %q", expr, w.expression)
		}
		var names []string
		for _, m := range ms {
			names = append(names, m.Namespace+"/"+m.Name)
			if m.Period != w.period || m.Stat != w.stat || !jsonEq(m.Dims, w.dims) {
				t.Errorf("math metric %+v, want period %v stat %s dims %v", m, w.period, w.stat, w.dims)
			}
		}
		slices.Sort(names)
		if !slices.Equal(names, w.mathMetrics) {
			t.Errorf("math metrics %v, want %v", names, w.mathMetrics)
		}
		return
	}
	if len(ms) != 1 {
		t.Fatalf("%d metrics", len(ms))
	}
	m := ms[0]
	if m.Namespace != w.namespace || m.Name != w.metric || m.Stat != w.stat || m.Period != w.period || !jsonEq(m.Dims, w.dims) {
		t.Errorf("metric %+v, want %s/%s %s per %v s %v", m, w.namespace, w.metric, w.stat, w.period, w.dims)
	}
}

const (
	gt, ge               = "GreaterThanThreshold", "GreaterThanOrEqualToThreshold"
	breaching, notBreach = "breaching", "notBreaching"
	fiveMin, oneMin      = 300.0, 60.0
)

// wantAlarms are the alarms of a stack with d's thresholds.
func wantAlarms(t *testing.T, stack tmpl, d AlarmThresholds, functions []string) []wantAlarm {
	api := stack.one(t, "AWS::ApiGatewayV2::Api").ID
	out := []wantAlarm{
		{id: "SweepLagAlarm", anchor: "SweepLagAlarm", namespace: testNamespace, metric: "SweepLag", stat: "Maximum", period: oneMin,
			dims: map[string]any{}, threshold: d.SweepLagSeconds, periods: 3, comparison: gt, missingData: breaching},
		{id: "SweepFailedPassesAlarm", anchor: "SweepFailedPassesAlarm", namespace: testNamespace, metric: "SweepPasses", stat: "Sum", period: fiveMin,
			dims: map[string]any{"Result": "failed"}, threshold: d.SweepFailedPasses, periods: 1, comparison: ge, missingData: notBreach},
		{id: "RetentionFailedPassesAlarm", anchor: "RetentionFailedPassesAlarm", namespace: testNamespace, metric: "RetentionPasses", stat: "Sum", period: 900,
			dims: map[string]any{"Result": "failed"}, threshold: d.RetentionFailedPasses, periods: 1, comparison: ge, missingData: notBreach},
		{id: "TimersDeadLettersAlarm", anchor: "DeadLettersAlarm", namespace: "AWS/SQS", metric: "ApproximateNumberOfMessagesVisible", stat: "Maximum",
			period: fiveMin, dims: map[string]any{"QueueName": getAtt(stack.byPath(t, "TimersDeadLetters/Resource").ID, "QueueName")},
			threshold: 1, periods: 1, comparison: ge, missingData: notBreach},
		{id: "Api5xxRateAlarm", anchor: "Api5xxRateAlarm", stat: "Sum", period: fiveMin, dims: map[string]any{"ApiId": ref(api)},
			threshold: d.API5xxPercent, periods: 1, comparison: gt, missingData: notBreach,
			expression:  fmt.Sprintf("IF(requests >= %g, 100 * errors / requests, 0)", d.APIMinRequests),
			mathMetrics: []string{"AWS/ApiGateway/5xx", "AWS/ApiGateway/Count"}},
	}
	var throttled []string
	for range tableOperations {
		throttled = append(throttled, "AWS/DynamoDB/ThrottledRequests")
	}
	dyn := wantAlarm{id: "DynamoThrottlesAlarm", anchor: "DynamoThrottlesAlarm", threshold: d.DynamoThrottles, periods: 1,
		comparison: ge, missingData: notBreach, mathMetrics: throttled}
	out = append(out, dyn)
	for _, fn := range functions {
		ref := ref(stack.function(t, fn).ID)
		out = append(out,
			wantAlarm{id: functionID(fn) + "ErrorsAlarm", anchor: "FunctionErrorsAlarm", namespace: "AWS/Lambda", metric: "Errors", stat: "Sum",
				period: fiveMin, dims: map[string]any{"FunctionName": ref}, threshold: d.LambdaErrors, periods: 1, comparison: ge, missingData: notBreach},
			wantAlarm{id: functionID(fn) + "ThrottlesAlarm", anchor: "FunctionThrottlesAlarm", namespace: "AWS/Lambda", metric: "Throttles", stat: "Sum",
				period: fiveMin, dims: map[string]any{"FunctionName": ref}, threshold: d.LambdaThrottles, periods: 1, comparison: ge, missingData: notBreach})
	}
	return out
}

// documentedDefaults are the defaults docs/operations.md states, written
// out here: changing a default must change this line and the document.
var documentedDefaults = AlarmThresholds{SweepLagSeconds: 60, SweepFailedPasses: 5, RetentionFailedPasses: 5, API5xxPercent: 5, APIMinRequests: 20,
	DynamoThrottles: 10, LambdaErrors: 1, LambdaThrottles: 1}

func TestAlarms(t *testing.T) {
	if DefaultAlarmThresholds != documentedDefaults {
		t.Fatalf("DefaultAlarmThresholds = %+v, docs/operations.md says %+v", DefaultAlarmThresholds, documentedDefaults)
	}
	t.Run("Default", func(t *testing.T) {
		wants := wantAlarms(t, iamStack, documentedDefaults, []string{"api", "lock", "append", "timers"})
		if n := len(iamStack.resources("AWS::CloudWatch::Alarm")); n != len(wants) {
			t.Errorf("%d alarms, want %d", n, len(wants))
		}
		for _, w := range wants {
			t.Run(w.id, func(t *testing.T) {
				if w.id == "DynamoThrottlesAlarm" {
					checkDynamoAlarm(t, iamStack, w)
					return
				}
				checkAlarm(t, iamStack, w)
			})
		}
	})
	t.Run("WithTheWorkerFunction", func(t *testing.T) {
		wants := wantAlarms(t, workerStack, documentedDefaults, []string{"api", "lock", "append", "timers", WorkerFunction})
		wants = append(wants, wantAlarm{id: "WorkerDeadLettersAlarm", anchor: "DeadLettersAlarm", namespace: "AWS/SQS",
			metric: "ApproximateNumberOfMessagesVisible", stat: "Maximum", period: fiveMin,
			dims:      map[string]any{"QueueName": getAtt(workerStack.byPath(t, "WorkerDeadLetters/Resource").ID, "QueueName")},
			threshold: 1, periods: 1, comparison: ge, missingData: notBreach})
		if n := len(workerStack.resources("AWS::CloudWatch::Alarm")); n != len(wants) {
			t.Errorf("%d alarms, want %d", n, len(wants))
		}
		for _, w := range wants {
			if strings.HasPrefix(w.id, "Worker") {
				t.Run(w.id, func(t *testing.T) { checkAlarm(t, workerStack, w) })
			}
		}
	})
	t.Run("ThresholdsComeFromTheContext", func(t *testing.T) {
		d := documentedDefaults
		d.SweepLagSeconds, d.API5xxPercent = 120, 2.5
		for _, w := range wantAlarms(t, opsStack, d, []string{"api", "lock", "append", "timers"}) {
			if w.id == "SweepLagAlarm" || w.id == "Api5xxRateAlarm" {
				t.Run(w.id, func(t *testing.T) { checkAlarm(t, opsStack, w) })
			}
		}
	})
}

func checkDynamoAlarm(t *testing.T, stack tmpl, w wantAlarm) {
	a := stack.alarm(t, w.id)
	if a.Props["Threshold"] != w.threshold || a.Props["ComparisonOperator"] != w.comparison || a.Props["TreatMissingData"] != w.missingData {
		t.Errorf("alarm %v", a.Props)
	}
	expr, ms := alarmMetrics(a)
	table := stack.one(t, "AWS::DynamoDB::Table").ID
	var ops []string
	for _, m := range ms {
		if m.Name != "ThrottledRequests" || m.Namespace != "AWS/DynamoDB" || m.Period != fiveMin || m.Stat != "Sum" || !jsonEq(m.Dims["TableName"], ref(table)) {
			t.Errorf("metric %+v", m)
		}
		ops = append(ops, fmt.Sprint(m.Dims["Operation"]))
	}
	slices.Sort(ops)
	want := []string{"BatchGetItem", "BatchWriteItem", "DeleteItem", "GetItem", "PutItem", "Query", "TransactWriteItems", "UpdateItem"}
	if !slices.Equal(ops, want) {
		t.Errorf("operations %v, want %v", ops, want)
	}
	if strings.Count(expr, "+") != len(want)-1 {
		t.Errorf("expression %q does not sum the operations", expr)
	}
}

func TestAlarmsNotify(t *testing.T) {
	t.Run("TheStacksOwnTopic", func(t *testing.T) {
		topic := iamStack.one(t, "AWS::SNS::Topic")
		for _, a := range iamStack.resources("AWS::CloudWatch::Alarm") {
			if !jsonEq(a.Props["AlarmActions"], []any{ref(topic.ID)}) || !jsonEq(a.Props["OKActions"], []any{ref(topic.ID)}) {
				t.Errorf("%s: actions %v / %v, want the topic", a.ID, a.Props["AlarmActions"], a.Props["OKActions"])
			}
		}
		if len(iamStack.resources("AWS::SNS::Subscription")) != 0 {
			t.Error("a subscription without context alarmEmail")
		}
		out := iamStack["Outputs"].(map[string]any)
		if _, ok := out["AlarmTopicArn"]; !ok {
			t.Error("no AlarmTopicArn output")
		}
	})
	t.Run("AnEmailSubscription", func(t *testing.T) {
		sub := workerStack.one(t, "AWS::SNS::Subscription")
		if sub.Props["Protocol"] != "email" || sub.Props["Endpoint"] != testAlarmEmail {
			t.Errorf("subscription %v", sub.Props)
		}
	})
	t.Run("AGivenTopic", func(t *testing.T) {
		if n := len(opsStack.resources("AWS::SNS::Topic")); n != 0 {
			t.Errorf("%d topics created with alarmTopicArn", n)
		}
		for _, a := range opsStack.resources("AWS::CloudWatch::Alarm") {
			if !jsonEq(a.Props["AlarmActions"], []any{testTopicArn}) {
				t.Errorf("%s: actions %v, want %s", a.ID, a.Props["AlarmActions"], testTopicArn)
			}
		}
	})
}

func TestFunctionsReportToTheStacksNamespace(t *testing.T) {
	for _, spec := range functionSpecs {
		env := iamStack.function(t, spec.Name).Props["Environment"].(map[string]any)["Variables"].(map[string]any)
		if env[app.EnvMetricsNamespace] != testNamespace {
			t.Errorf("%s: %s = %v, want %s", spec.Name, app.EnvMetricsNamespace, env[app.EnvMetricsNamespace], testNamespace)
		}
		if _, ok := env[obs.EnvOTLPEndpoint]; ok {
			t.Errorf("%s: %s set without context otelEndpoint", spec.Name, obs.EnvOTLPEndpoint)
		}
		if _, ok := iamStack.function(t, spec.Name).Props["TracingConfig"]; ok {
			t.Errorf("%s: tracing on by default", spec.Name)
		}
	}
}

func TestTracingContext(t *testing.T) {
	for _, spec := range functionSpecs {
		fn := opsStack.function(t, spec.Name)
		if !jsonEq(fn.Props["TracingConfig"], map[string]any{"Mode": "Active"}) {
			t.Errorf("%s: TracingConfig %v, want Active", spec.Name, fn.Props["TracingConfig"])
		}
		env := fn.Props["Environment"].(map[string]any)["Variables"].(map[string]any)
		if env[obs.EnvOTLPEndpoint] != testOtelEndpoint {
			t.Errorf("%s: %s = %v", spec.Name, obs.EnvOTLPEndpoint, env[obs.EnvOTLPEndpoint])
		}
		roleID := fn.Props["Role"].(map[string]any)["Fn::GetAtt"].([]any)[0].(string)
		var actions []string
		for _, st := range opsStack.policiesOf(roleID) {
			actions = append(actions, st.Actions...)
		}
		if !slices.Contains(actions, "xray:PutTraceSegments") {
			t.Errorf("%s: role lacks xray:PutTraceSegments: %v", spec.Name, actions)
		}
	}
}

func TestHealthRoutesGoToTheAPIFunction(t *testing.T) {
	routes := iamStack.routes(t)
	for _, path := range []string{"/healthz", "/readyz"} {
		r, ok := routeFor(routes, "GET", path)
		if !ok || r.Function != "api" {
			t.Errorf("GET %s routed to %+v, want the api function", path, r)
		}
	}
}

// dashboardJSON is the dashboard body with references as placeholders.
func dashboardJSON(t *testing.T, stack tmpl) map[string]any {
	t.Helper()
	raw, err := dashboardBody(stack.one(t, "AWS::CloudWatch::Dashboard").Props["DashboardBody"])
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("dashboard body: %v\n%s", err, raw)
	}
	return body
}

func TestDashboard(t *testing.T) {
	body := dashboardJSON(t, iamStack)
	widgets := body["widgets"].([]any)
	var stelaMetrics, awsNamespaces, alarms []string
	for _, w := range widgets {
		w := w.(map[string]any)
		props := w["properties"].(map[string]any)
		if w["type"] == "alarm" {
			for _, a := range props["alarms"].([]any) {
				alarms = append(alarms, a.(string))
			}
		}
		for _, m := range asList(props["metrics"]) {
			m := m.([]any)
			ns, ok := m[0].(string)
			if !ok {
				continue // a math expression
			}
			if ns == testNamespace {
				stelaMetrics = append(stelaMetrics, m[1].(string))
			} else {
				awsNamespaces = append(awsNamespaces, ns)
			}
		}
		if x, w := w["x"].(float64), w["width"].(float64); x+w > 24 {
			t.Errorf("widget %v overflows the 24-column grid", props["title"])
		}
	}
	t.Run("ShowsTheVocabulary", func(t *testing.T) {
		for _, name := range []string{"SweepLag", "SweepPasses", "DelaysFired", "LocksExpired", "ExecutionsCreated",
			"ExecutionsFinished", "LockGrants", "LockBatchSize", "StoreCommitLatency", "StoreCommits", "StoreRetries",
			"DynamoDBThrottles", "HTTPRequests", "HTTPLatency"} {
			if !slices.Contains(stelaMetrics, name) {
				t.Errorf("no graph of %s", name)
			}
		}
		valid := obs.EMFNames()
		for _, name := range stelaMetrics {
			if !slices.Contains(valid, name) {
				t.Errorf("graph of %s, which the functions never write", name)
			}
		}
	})
	t.Run("ShowsTheAWSSide", func(t *testing.T) {
		for _, ns := range []string{"AWS/Lambda", "AWS/ApiGateway", "AWS/DynamoDB", "AWS/SQS"} {
			if !slices.Contains(awsNamespaces, ns) {
				t.Errorf("no graph of %s", ns)
			}
		}
	})
	t.Run("ShowsEveryAlarm", func(t *testing.T) {
		if len(alarms) != len(iamStack.resources("AWS::CloudWatch::Alarm")) {
			t.Errorf("alarm widget shows %d alarms, the stack has %d", len(alarms), len(iamStack.resources("AWS::CloudWatch::Alarm")))
		}
	})
	t.Run("AlarmsAreInTheRunbook", func(t *testing.T) {
		doc, err := os.ReadFile("../../docs/operations.md")
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range iamStack.resources("AWS::CloudWatch::Alarm") {
			d := fmt.Sprint(a.Props["AlarmDescription"])
			anchor := d[strings.Index(d, "#")+1 : len(d)-1]
			if !strings.Contains(string(doc), `<a id="`+anchor+`"></a>`) {
				t.Errorf("docs/operations.md has no section %q (alarm %s)", anchor, a.ID)
			}
		}
	})
}
