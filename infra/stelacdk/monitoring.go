package stelacdk

import (
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-cdk-go/awscdk/v2/interfaces/interfacesawscloudwatch"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/stela-dev/stela/functions/app"
	"github.com/stela-dev/stela/obs"
)

// Context keys of the monitoring (docs/operations.md): where alarms notify,
// their thresholds, and tracing.
const (
	// CtxAlarmTopicArn sends the alarms to an existing SNS topic instead of
	// the stack's own.
	CtxAlarmTopicArn = "alarmTopicArn"
	// CtxAlarmEmail subscribes an address to the stack's topic.
	CtxAlarmEmail = "alarmEmail"
	// Thresholds (defaults in DefaultAlarmThresholds).
	CtxAlarmSweepLagSeconds   = "alarmSweepLagSeconds"
	CtxAlarmSweepFailedPasses = "alarmSweepFailedPasses"
	// CtxAlarmRetentionFailedPasses is the context key of
	// AlarmThresholds.RetentionFailedPasses.
	CtxAlarmRetentionFailedPasses = "alarmRetentionFailedPasses"
	CtxAlarmAPI5xxPercent         = "alarmApi5xxPercent"
	CtxAlarmAPIMinRequests        = "alarmApiMinRequests"
	CtxAlarmDynamoThrottles       = "alarmDynamoThrottles"
	CtxAlarmLambdaErrors          = "alarmLambdaErrors"
	CtxAlarmLambdaThrottles       = "alarmLambdaThrottles"
	// CtxTracing ("xray") turns on X-Ray active tracing of every function;
	// default "off".
	CtxTracing = "tracing"
	// CtxOtelEndpoint sets OTEL_EXPORTER_OTLP_ENDPOINT in every function:
	// Stela's own spans (requests, store commits) go to that OTLP/HTTP
	// collector (e.g. the ADOT collector layer at http://localhost:4318).
	CtxOtelEndpoint = "otelEndpoint"
)

// RunbookURL is where the alarms' descriptions point: each alarm has a
// section of docs/operations.md (anchor: its lower-cased name).
const RunbookURL = "docs/operations.md"

// TracingXRay is the value of context tracing that turns X-Ray on.
const TracingXRay = "xray"

// AlarmThresholds are the alarms' thresholds; zero fields take the
// defaults of DefaultAlarmThresholds (or the context).
type AlarmThresholds struct {
	// SweepLagSeconds: the oldest due timer waits longer than this, three
	// minutes in a row (or the sweep reports nothing for three minutes).
	SweepLagSeconds float64
	// SweepFailedPasses: this many timers passes failed within 5 minutes.
	SweepFailedPasses float64
	// RetentionFailedPasses: this many retention passes (expiring finished
	// trees, one a minute) failed within 15 minutes.
	RetentionFailedPasses float64
	// API5xxPercent: the share of API Gateway answers that were 5xx within
	// 5 minutes, once at least APIMinRequests requests arrived.
	API5xxPercent  float64
	APIMinRequests float64
	// DynamoThrottles: throttled DynamoDB requests within 5 minutes.
	DynamoThrottles float64
	// LambdaErrors and LambdaThrottles: per function, within 5 minutes.
	LambdaErrors    float64
	LambdaThrottles float64
}

// DefaultAlarmThresholds are the documented defaults.
var DefaultAlarmThresholds = AlarmThresholds{
	SweepLagSeconds:       60,
	SweepFailedPasses:     5,
	RetentionFailedPasses: 5,
	API5xxPercent:         5,
	APIMinRequests:        20,
	DynamoThrottles:       10,
	LambdaErrors:          1,
	LambdaThrottles:       1,
}

// MonitoringProps configure the alarms, the dashboard and tracing.
type MonitoringProps struct {
	// AlarmTopicArn: notify this topic (context alarmTopicArn); empty: the
	// stack creates one.
	AlarmTopicArn string
	// AlarmEmail subscribes an address to the stack's topic (context
	// alarmEmail).
	AlarmEmail string
	Thresholds AlarmThresholds
	// Tracing "xray" turns on X-Ray active tracing (context tracing).
	Tracing string
	// OtelEndpoint sets OTEL_EXPORTER_OTLP_ENDPOINT (context otelEndpoint).
	OtelEndpoint string
}

// Monitoring is what newMonitoring creates.
type Monitoring struct {
	// Namespace is the CloudWatch namespace of the functions' EMF metrics.
	Namespace string
	Topic     awssns.ITopic
	// Alarms by construct id ("SweepLagAlarm").
	Alarms    map[string]awscloudwatch.Alarm
	Dashboard awscloudwatch.Dashboard
}

// metricsNamespace is the namespace the functions write their EMF metrics
// to (STELA_METRICS_NAMESPACE): per stack, so two stacks in one account
// and region do not mix.
func metricsNamespace(scope constructs.Construct) string {
	return obs.DefaultNamespace + "/" + *awscdk.Stack_Of(scope).StackName()
}

// resolveMonitoring fills unset monitoring props from the context.
func resolveMonitoring(ctx func(string) string, p *MonitoringProps) {
	if p.AlarmTopicArn == "" {
		p.AlarmTopicArn = ctx(CtxAlarmTopicArn)
	}
	if p.AlarmEmail == "" {
		p.AlarmEmail = ctx(CtxAlarmEmail)
	}
	if p.AlarmTopicArn != "" && p.AlarmEmail != "" {
		panic("stela: context alarmEmail subscribes to the stack's own topic; with alarmTopicArn, subscribe to that topic instead")
	}
	num := func(dst *float64, key string, def float64) { positiveContext(ctx, dst, key, def) }
	d, t := DefaultAlarmThresholds, &p.Thresholds
	num(&t.SweepLagSeconds, CtxAlarmSweepLagSeconds, d.SweepLagSeconds)
	num(&t.SweepFailedPasses, CtxAlarmSweepFailedPasses, d.SweepFailedPasses)
	num(&t.RetentionFailedPasses, CtxAlarmRetentionFailedPasses, d.RetentionFailedPasses)
	num(&t.API5xxPercent, CtxAlarmAPI5xxPercent, d.API5xxPercent)
	num(&t.APIMinRequests, CtxAlarmAPIMinRequests, d.APIMinRequests)
	num(&t.DynamoThrottles, CtxAlarmDynamoThrottles, d.DynamoThrottles)
	num(&t.LambdaErrors, CtxAlarmLambdaErrors, d.LambdaErrors)
	num(&t.LambdaThrottles, CtxAlarmLambdaThrottles, d.LambdaThrottles)
	if p.Tracing == "" {
		p.Tracing = ctx(CtxTracing)
	}
	switch p.Tracing {
	case "", "off":
		p.Tracing = ""
	case TracingXRay:
	default:
		panic(fmt.Sprintf("stela: context tracing=%q, want off or xray", p.Tracing))
	}
	if p.OtelEndpoint == "" {
		p.OtelEndpoint = ctx(CtxOtelEndpoint)
	}
}

// positiveContext fills an unset (zero) *dst from the context key, else
// def; a value that is not a positive number panics (synth fails).
func positiveContext(ctx func(string) string, dst *float64, key string, def float64) {
	if *dst != 0 {
		return
	}
	*dst = def
	if s := ctx(key); s != "" {
		var f float64
		if _, err := fmt.Sscan(s, &f); err != nil || f <= 0 {
			panic(fmt.Sprintf("stela: context %s=%q is not a positive number", key, s))
		}
		*dst = f
	}
}

// instrumentFunction sets what a function needs to report: the metrics
// namespace, X-Ray active tracing and the OTLP endpoint when configured.
func instrumentFunction(scope constructs.Construct, fp *awslambda.FunctionProps, p MonitoringProps) {
	(*fp.Environment)[app.EnvMetricsNamespace] = jsii.String(metricsNamespace(scope))
	if p.Tracing == TracingXRay {
		fp.Tracing = awslambda.Tracing_ACTIVE
	}
	if p.OtelEndpoint != "" {
		(*fp.Environment)[obs.EnvOTLPEndpoint] = jsii.String(p.OtelEndpoint)
	}
}

// Periods of the alarms and the dashboard.
var (
	minute      = awscdk.Duration_Minutes(jsii.Number(1))
	fiveMinutes = awscdk.Duration_Minutes(jsii.Number(5))
)

// newMonitoring creates the alarms, their topic and the dashboard.
func (s *Stela) newMonitoring(scope constructs.Construct, p MonitoringProps) *Monitoring {
	m := &Monitoring{Namespace: metricsNamespace(scope), Alarms: map[string]awscloudwatch.Alarm{}}
	if p.AlarmTopicArn != "" {
		m.Topic = awssns.Topic_FromTopicArn(scope, jsii.String("AlarmTopic"), jsii.String(p.AlarmTopicArn))
	} else {
		topic := awssns.NewTopic(scope, jsii.String("AlarmTopic"), &awssns.TopicProps{
			DisplayName: jsii.String("Stela alarms"), EnforceSSL: jsii.Bool(true)})
		if p.AlarmEmail != "" {
			topic.AddSubscription(awssnssubscriptions.NewEmailSubscription(jsii.String(p.AlarmEmail), nil))
		}
		m.Topic = topic
	}
	action := awscloudwatchactions.NewSnsAction(m.Topic)
	th := p.Thresholds
	// alarm creates an alarm whose runbook is the section of
	// docs/operations.md called anchor.
	alarm := func(id, anchor, description string, metric awscloudwatch.IMetric, threshold, periods float64,
		op awscloudwatch.ComparisonOperator, missing awscloudwatch.TreatMissingData) {
		a := awscloudwatch.NewAlarm(scope, jsii.String(id), &awscloudwatch.AlarmProps{
			AlarmDescription:   jsii.String(description + " Runbook: " + RunbookURL + "#" + strings.ToLower(anchor) + "."),
			Metric:             metric,
			Threshold:          jsii.Number(threshold),
			EvaluationPeriods:  jsii.Number(periods),
			DatapointsToAlarm:  jsii.Number(periods),
			ComparisonOperator: op,
			TreatMissingData:   missing,
		})
		a.AddAlarmAction(action)
		a.AddOkAction(action)
		m.Alarms[id] = a
	}
	ge, gt := awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD, awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD
	notBreaching, breaching := awscloudwatch.TreatMissingData_NOT_BREACHING, awscloudwatch.TreatMissingData_BREACHING

	// The sweep: its lag (missing data breaches: a sweep that does not run
	// reports nothing), its failed passes, its dead letters.
	alarm("SweepLagAlarm", "SweepLagAlarm", fmt.Sprintf("Due timers (delays, expired locks) have waited more than %g s for the sweep, or the sweep reported nothing, 3 minutes in a row.", th.SweepLagSeconds),
		m.stela("SweepLag", "Maximum", minute, nil), th.SweepLagSeconds, 3, gt, breaching)
	alarm("SweepFailedPassesAlarm", "SweepFailedPassesAlarm", fmt.Sprintf("%g or more timers passes failed within 5 minutes.", th.SweepFailedPasses),
		m.stela("SweepPasses", "Sum", fiveMinutes, map[string]string{"Result": "failed"}), th.SweepFailedPasses, 1, ge, notBreaching)
	// Retention: failing passes leave finished trees in the table (storage
	// grows) but stall nothing, so the window is longer.
	alarm("RetentionFailedPassesAlarm", "RetentionFailedPassesAlarm", fmt.Sprintf("%g or more retention passes failed within 15 minutes: finished execution trees are not being expired.", th.RetentionFailedPasses),
		m.stela("RetentionPasses", "Sum", awscdk.Duration_Minutes(jsii.Number(15)), map[string]string{"Result": "failed"}), th.RetentionFailedPasses, 1, ge, notBreaching)
	for _, q := range s.deadLetterQueues() {
		alarm(q.id+"Alarm", "DeadLettersAlarm", "A scheduled invocation of the "+q.function+" function failed after its retries or could not be delivered: its dead-letter queue is not empty.",
			q.queue.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Statistic: jsii.String("Maximum"), Period: fiveMinutes}),
			1, 1, ge, notBreaching)
	}

	// The API: the share of 5xx answers, once there is traffic.
	requests := s.API.MetricCount(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: fiveMinutes})
	errors5xx := s.API.MetricServerError(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: fiveMinutes})
	alarm("Api5xxRateAlarm", "Api5xxRateAlarm", fmt.Sprintf("More than %g %% of the API's answers within 5 minutes were 5xx (at least %g requests).", th.API5xxPercent, th.APIMinRequests),
		awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Expression:   jsii.String(fmt.Sprintf("IF(requests >= %g, 100 * errors / requests, 0)", th.APIMinRequests)),
			UsingMetrics: &map[string]awscloudwatch.IMetric{"requests": requests, "errors": errors5xx},
			Label:        jsii.String("5xx %"), Period: fiveMinutes,
		}), th.API5xxPercent, 1, gt, notBreaching)

	// DynamoDB: throttled requests on the table (every operation Stela uses).
	alarm("DynamoThrottlesAlarm", "DynamoThrottlesAlarm", fmt.Sprintf("%g or more DynamoDB requests on the table were throttled within 5 minutes.", th.DynamoThrottles),
		s.dynamoThrottles(fiveMinutes), th.DynamoThrottles, 1, ge, notBreaching)

	// Every function: errors and throttles.
	for _, name := range s.functionNames() {
		fn := s.Functions[name]
		id := functionID(name)
		alarm(id+"ErrorsAlarm", "FunctionErrorsAlarm", fmt.Sprintf("The %s function failed %g or more invocations within 5 minutes (crash, timeout or, for scheduled functions, an invocation in which every pass failed).", name, th.LambdaErrors),
			fn.MetricErrors(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: fiveMinutes}), th.LambdaErrors, 1, ge, notBreaching)
		alarm(id+"ThrottlesAlarm", "FunctionThrottlesAlarm", fmt.Sprintf("Lambda throttled %g or more invocations of the %s function within 5 minutes.", th.LambdaThrottles, name),
			fn.MetricThrottles(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: fiveMinutes}), th.LambdaThrottles, 1, ge, notBreaching)
	}

	m.Dashboard = s.newDashboard(scope, m, th)
	if p.AlarmTopicArn == "" {
		awscdk.NewCfnOutput(scope, jsii.String("AlarmTopicArn"), &awscdk.CfnOutputProps{
			Description: jsii.String("SNS topic the alarms notify (subscribe to it)"), Value: m.Topic.TopicArn()})
	}
	awscdk.NewCfnOutput(scope, jsii.String("DashboardName"), &awscdk.CfnOutputProps{
		Description: jsii.String("CloudWatch dashboard of Stela (docs/operations.md)"), Value: m.Dashboard.DashboardName()})
	return m
}

// stela is one of the functions' EMF metrics.
func (m *Monitoring) stela(name, statistic string, period awscdk.Duration, dims map[string]string) awscloudwatch.Metric {
	props := &awscloudwatch.MetricProps{Namespace: jsii.String(m.Namespace), MetricName: jsii.String(name),
		Statistic: jsii.String(statistic), Period: period}
	if len(dims) > 0 {
		dm := map[string]*string{}
		for k, v := range dims {
			dm[k] = jsii.String(v)
		}
		props.DimensionsMap = &dm
	}
	return awscloudwatch.NewMetric(props)
}

// labelled is stela with a legend label.
func (m *Monitoring) labelled(label, name, statistic string, period awscdk.Duration, dims map[string]string) awscloudwatch.IMetric {
	return m.stela(name, statistic, period, dims).With(&awscloudwatch.MetricOptions{Label: jsii.String(label)})
}

// tableOperations are the DynamoDB operations Stela's functions call.
var tableOperations = []awsdynamodb.Operation{
	awsdynamodb.Operation_GET_ITEM, awsdynamodb.Operation_BATCH_GET_ITEM, awsdynamodb.Operation_QUERY,
	awsdynamodb.Operation_PUT_ITEM, awsdynamodb.Operation_UPDATE_ITEM, awsdynamodb.Operation_DELETE_ITEM,
	awsdynamodb.Operation_BATCH_WRITE_ITEM, awsdynamodb.Operation_TRANSACT_WRITE_ITEMS,
}

// dynamoThrottles sums the table's ThrottledRequests over tableOperations.
func (s *Stela) dynamoThrottles(period awscdk.Duration) awscloudwatch.IMetric {
	return s.Table.MetricThrottledRequestsForOperations(&awsdynamodb.OperationsMetricOptions{
		Operations: &tableOperations, Period: period, Statistic: jsii.String("Sum"),
		Label: jsii.String("throttled requests (AWS/DynamoDB)")})
}

// functionNames lists the deployed functions in a stable order.
func (s *Stela) functionNames() []string {
	var names []string
	for n := range s.Functions {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

type deadLetters struct {
	id, function string
	queue        awssqs.Queue
}

// deadLetterQueues are the queues of the scheduled functions (the worker's
// exists with context worker=true).
func (s *Stela) deadLetterQueues() []deadLetters {
	out := []deadLetters{{"TimersDeadLetters", "timers", s.TimersDLQ}}
	if s.WorkerDLQ != nil {
		out = append(out, deadLetters{"WorkerDeadLetters", WorkerFunction, s.WorkerDLQ})
	}
	return out
}

// newDashboard lays out the dashboard: alarms; the sweep; executions and
// the store; DynamoDB; the API; the functions.
func (s *Stela) newDashboard(scope constructs.Construct, m *Monitoring, th AlarmThresholds) awscloudwatch.Dashboard {
	graph := func(title string, width float64, left []awscloudwatch.IMetric, right []awscloudwatch.IMetric, annotations ...*awscloudwatch.HorizontalAnnotation) awscloudwatch.IWidget {
		props := &awscloudwatch.GraphWidgetProps{Title: jsii.String(title), Width: jsii.Number(width), Height: jsii.Number(6),
			Left: &left}
		if len(right) > 0 {
			props.Right = &right
		}
		if len(annotations) > 0 {
			props.LeftAnnotations = &annotations
		}
		return awscloudwatch.NewGraphWidget(props)
	}
	fnMetrics := func(f func(fn awslambda.Function, name string) awscloudwatch.IMetric) []awscloudwatch.IMetric {
		var out []awscloudwatch.IMetric
		for _, name := range s.functionNames() {
			out = append(out, f(s.Functions[name], name))
		}
		return out
	}
	var alarms []interfacesawscloudwatch.IAlarmRef
	ids := make([]string, 0, len(m.Alarms))
	for id := range m.Alarms {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		alarms = append(alarms, m.Alarms[id])
	}
	ns := m.Namespace
	var dlq []awscloudwatch.IMetric
	for _, q := range s.deadLetterQueues() {
		dlq = append(dlq, q.queue.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
			Statistic: jsii.String("Maximum"), Period: minute, Label: jsii.String(q.function + " dead letters")}))
	}
	rows := [][]awscloudwatch.IWidget{
		{
			awscloudwatch.NewTextWidget(&awscloudwatch.TextWidgetProps{Width: jsii.Number(8), Height: jsii.Number(6), Markdown: jsii.String(
				"# Stela\nMetrics of namespace `" + ns + "` (written by the functions as EMF) beside AWS/Lambda, " +
					"AWS/ApiGateway, AWS/DynamoDB and AWS/SQS.\n\nWhat each graph and alarm means and what to do: " +
					"`docs/operations.md` in the repository.")}),
			awscloudwatch.NewAlarmStatusWidget(&awscloudwatch.AlarmStatusWidgetProps{Title: jsii.String("Alarms"),
				Width: jsii.Number(16), Height: jsii.Number(6), Alarms: &alarms}),
		},
		{
			graph("Sweep lag (s): oldest due timer not yet handled", 8,
				[]awscloudwatch.IMetric{m.labelled("sweep lag (max)", "SweepLag", "Maximum", minute, nil)}, nil,
				&awscloudwatch.HorizontalAnnotation{Value: jsii.Number(th.SweepLagSeconds), Label: jsii.String("alarm")}),
			graph("Timer sweep passes", 8, []awscloudwatch.IMetric{
				m.labelled("ok", "SweepPasses", "Sum", minute, map[string]string{"Result": "ok"}),
				m.labelled("failed", "SweepPasses", "Sum", minute, map[string]string{"Result": "failed"}),
			}, []awscloudwatch.IMetric{m.labelled("pass p99 (ms)", "SweepPassLatency", "p99", minute, nil)}),
			graph("Delays fired, expired locks resolved, dead letters", 8, []awscloudwatch.IMetric{
				m.labelled("delays fired", "DelaysFired", "Sum", minute, nil),
				m.labelled("locks expired", "LocksExpired", "Sum", minute, nil),
				m.labelled("cancellations finished", "CancellationsFinished", "Sum", minute, nil),
			}, dlq),
		},
		{
			graph("Executions created and finished by outcome", 8, append([]awscloudwatch.IMetric{
				m.labelled("created", "ExecutionsCreated", "Sum", minute, nil)},
				outcomes(m)...), nil),
			graph("Locks granted and batch size", 8,
				[]awscloudwatch.IMetric{m.labelled("locks granted", "LockGrants", "Sum", minute, nil)},
				[]awscloudwatch.IMetric{m.labelled("batch size (avg)", "LockBatchSize", "Average", minute, nil)}),
			graph("Store commit latency (ms)", 8, []awscloudwatch.IMetric{
				m.labelled("append p50", "StoreCommitLatency", "p50", minute, map[string]string{"Op": "append"}),
				m.labelled("append p99", "StoreCommitLatency", "p99", minute, map[string]string{"Op": "append"}),
				m.labelled("lock p99", "StoreCommitLatency", "p99", minute, map[string]string{"Op": "lock"}),
				m.labelled("create p99", "StoreCommitLatency", "p99", minute, map[string]string{"Op": "create"}),
			}, nil),
		},
		{
			graph("Conflicts (store results)", 8, []awscloudwatch.IMetric{
				m.labelled("version conflicts", "StoreCommits", "Sum", minute, map[string]string{"Result": "version_conflict"}),
				m.labelled("already finished", "StoreCommits", "Sum", minute, map[string]string{"Result": "already_finished"}),
				m.labelled("conflicts", "StoreCommits", "Sum", minute, map[string]string{"Result": "conflict"}),
				m.labelled("unavailable", "StoreCommits", "Sum", minute, map[string]string{"Result": "unavailable"}),
			}, nil),
			graph("DynamoDB retries and throttles", 8, []awscloudwatch.IMetric{
				m.labelled("transaction re-runs", "StoreRetries", "Sum", minute, nil),
				m.labelled("ambiguous re-sends", "StoreResends", "Sum", minute, nil),
				m.labelled("throttled attempts (SDK)", "DynamoDBThrottles", "Sum", minute, nil),
				s.dynamoThrottles(minute),
			}, nil, &awscloudwatch.HorizontalAnnotation{Value: jsii.Number(th.DynamoThrottles), Label: jsii.String("alarm (per 5 min)")}),
			graph("DynamoDB consumed capacity", 8, []awscloudwatch.IMetric{
				s.Table.MetricConsumedWriteCapacityUnits(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: minute, Label: jsii.String("write units")}),
				s.Table.MetricConsumedReadCapacityUnits(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: minute, Label: jsii.String("read units")}),
			}, nil),
		},
		{
			graph("API requests and errors (API Gateway)", 8, []awscloudwatch.IMetric{
				s.API.MetricCount(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: minute, Label: jsii.String("requests")}),
				s.API.MetricClientError(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: minute, Label: jsii.String("4xx")}),
				s.API.MetricServerError(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: minute, Label: jsii.String("5xx")}),
			}, nil),
			graph("Request latency (ms)", 8, []awscloudwatch.IMetric{
				m.labelled("handler p50", "HTTPLatency", "p50", minute, nil),
				m.labelled("handler p99", "HTTPLatency", "p99", minute, nil),
				s.API.MetricLatency(&awscloudwatch.MetricOptions{Statistic: jsii.String("p99"), Period: minute, Label: jsii.String("API Gateway p99")}),
			}, nil),
			graph("Handler answers by status class", 8, []awscloudwatch.IMetric{
				m.labelled("2xx", "HTTPRequests", "Sum", minute, map[string]string{"StatusClass": "2xx"}),
				m.labelled("4xx", "HTTPRequests", "Sum", minute, map[string]string{"StatusClass": "4xx"}),
				m.labelled("5xx", "HTTPRequests", "Sum", minute, map[string]string{"StatusClass": "5xx"}),
			}, nil),
		},
		{
			graph("Function errors", 8, fnMetrics(func(fn awslambda.Function, name string) awscloudwatch.IMetric {
				return fn.MetricErrors(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: minute, Label: jsii.String(name)})
			}), nil),
			graph("Function throttles", 8, fnMetrics(func(fn awslambda.Function, name string) awscloudwatch.IMetric {
				return fn.MetricThrottles(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: minute, Label: jsii.String(name)})
			}), nil),
			graph("Function duration p99 (ms)", 8, fnMetrics(func(fn awslambda.Function, name string) awscloudwatch.IMetric {
				return fn.MetricDuration(&awscloudwatch.MetricOptions{Statistic: jsii.String("p99"), Period: minute, Label: jsii.String(name)})
			}), nil),
		},
	}
	widgets := make([]*[]awscloudwatch.IWidget, len(rows))
	for i := range rows {
		widgets[i] = &rows[i]
	}
	return awscloudwatch.NewDashboard(scope, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{
		DefaultInterval: awscdk.Duration_Hours(jsii.Number(3)),
		Widgets:         &widgets,
	})
}

// outcomes are ExecutionsFinished by outcome.
func outcomes(m *Monitoring) []awscloudwatch.IMetric {
	var out []awscloudwatch.IMetric
	for _, o := range []string{"ok", "error", "timeout", "cancelled", "failure"} {
		out = append(out, m.labelled("finished "+o, "ExecutionsFinished", "Sum", minute, map[string]string{"Outcome": o}))
	}
	return out
}
