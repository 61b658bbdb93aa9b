package stelacdk

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/stela-dev/stela/lambdaworker"
)

// WorkerProps configure NewWorker.
type WorkerProps struct {
	// Stela is the instance the worker runs on (required).
	Stela *Stela
	// Entry is the Go package of the worker's main (a lambdaworker.Start
	// call), e.g. "../cmd/worker", relative to the CDK app's working
	// directory: NewWorker builds it at synth time for linux/arm64 (go
	// build -tags lambda.norpc -trimpath -ldflags "-s -w") into the cloud
	// assembly. Exactly one of Entry and AssetDir.
	Entry string
	// AssetDir is a directory holding the built bootstrap instead.
	AssetDir string
	// Description of the function (default "Stela worker <id>").
	Description string
	// MemoryMB (default 512), TimeoutSeconds (default 60: a pass runs until
	// 5 s before it, lambdaworker.EnvMargin) and ReservedConcurrency
	// (default 4: at most that many passes at once; negative: unreserved).
	MemoryMB, TimeoutSeconds, ReservedConcurrency float64
	// Schedule runs a pass (default every minute).
	Schedule awsevents.Schedule
	// Environment adds variables (e.g. lambdaworker.EnvName, your own).
	Environment map[string]string
}

// Worker is a worker function on a Stela: its function and role (the
// data access of a worker and nothing else), the schedule, the dead-letter
// queue of its failed scheduled passes, the managed policy a caller
// attaches to invoke it on demand, and its alarms on the Stela's topic.
type Worker struct {
	constructs.Construct
	Function     awslambda.Function
	Role         awsiam.Role
	Schedule     awsevents.Rule
	DLQ          awssqs.Queue
	InvokePolicy awsiam.ManagedPolicy
	Alarms       map[string]awscloudwatch.Alarm
}

// WorkerAccess is the data access of a worker function, on the table and
// the CAS of its Stela (docs/deploy.md, "Data access per function"): it
// locks (the pending-ffqn index), appends (ordinals for join-set reads in
// commits), submits children, responses and cancellations (item writes)
// and keeps large payloads in the CAS (read and put-if-absent). No other
// index, no BatchWriteItem, no DescribeTable.
var WorkerAccess = workerSpec.Access

// Defaults of WorkerProps.
const (
	DefaultWorkerMemoryMB            = 512
	DefaultWorkerTimeoutSeconds      = WorkerFunctionTimeoutSeconds
	DefaultWorkerReservedConcurrency = WorkerReservedConcurrency
)

// NewWorker defines a worker function on props.Stela. Several workers
// (different functions, memory, concurrency) may run on one Stela; each
// locks only the functions its main registers.
func NewWorker(scope constructs.Construct, id string, props *WorkerProps) *Worker {
	if props == nil || props.Stela == nil {
		panic("stelacdk: NewWorker needs WorkerProps.Stela")
	}
	p := *props
	if (p.Entry == "") == (p.AssetDir == "") {
		panic(fmt.Sprintf("stelacdk: worker %s needs exactly one of Entry and AssetDir", id))
	}
	if p.MemoryMB == 0 {
		p.MemoryMB = DefaultWorkerMemoryMB
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = DefaultWorkerTimeoutSeconds
	}
	if p.ReservedConcurrency == 0 {
		p.ReservedConcurrency = DefaultWorkerReservedConcurrency
	}
	if p.TimeoutSeconds <= workerpassMarginSeconds {
		panic(fmt.Sprintf("stelacdk: worker %s: TimeoutSeconds %g leaves no pass before the %g s margin", id, p.TimeoutSeconds, workerpassMarginSeconds))
	}
	if p.Schedule == nil {
		p.Schedule = awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(1)))
	}
	if p.Description == "" {
		p.Description = "Stela worker " + id
	}
	s := p.Stela
	c := constructs.NewConstruct(scope, &id)
	w := &Worker{Construct: c, Alarms: map[string]awscloudwatch.Alarm{}}
	assetDir := p.AssetDir
	if p.Entry != "" {
		assetDir = buildEntry(c, "worker", p.Entry)
	}
	w.DLQ = newDeadLetterQueue(c, "DeadLetters")
	env := map[string]string{lambdaworker.EnvMaxBudget: fmt.Sprintf("%gs", p.TimeoutSeconds)}
	for k, v := range p.Environment {
		env[k] = v
	}
	w.Function, w.Role = s.goFunction(c, goFunction{ID: "Function", Name: "worker " + id, Description: p.Description,
		MemoryMB: p.MemoryMB, TimeoutSeconds: p.TimeoutSeconds, ReservedConcurrency: max(p.ReservedConcurrency, 0),
		AssetDir: assetDir, DLQ: w.DLQ, Access: WorkerAccess, Env: env})
	w.Schedule = schedule(c, "Schedule", "Runs a pass of worker "+id+" (pending executions of its functions)",
		w.Function, w.DLQ, p.Schedule)
	w.InvokePolicy = invokePolicy(c, "InvokePolicy", "Invoke the Stela worker "+id+" on demand (one more worker pass)", w.Function)
	workerOutputs(c, "", w.Function, w.InvokePolicy, w.DLQ)
	if m := s.Monitoring; m != nil {
		action := awscloudwatchactions.NewSnsAction(m.Topic)
		alarm := func(aid, anchor, description string, metric awscloudwatch.IMetric) {
			a := awscloudwatch.NewAlarm(c, jsii.String(aid), &awscloudwatch.AlarmProps{
				AlarmDescription:   jsii.String(description + " Runbook: " + RunbookURL + "#" + strings.ToLower(anchor) + "."),
				Metric:             metric,
				Threshold:          jsii.Number(1),
				EvaluationPeriods:  jsii.Number(1),
				DatapointsToAlarm:  jsii.Number(1),
				ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
				TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
			})
			a.AddAlarmAction(action)
			a.AddOkAction(action)
			w.Alarms[aid] = a
		}
		sum := &awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: fiveMinutes}
		alarm("ErrorsAlarm", "FunctionErrorsAlarm", "The worker "+id+" failed invocations within 5 minutes (crash, timeout, a failed pass).",
			w.Function.MetricErrors(sum))
		alarm("DeadLettersAlarm", "DeadLettersAlarm", "A scheduled pass of the worker "+id+" failed after its retries or could not be delivered: its dead-letter queue is not empty.",
			w.DLQ.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Statistic: jsii.String("Maximum"), Period: fiveMinutes}))
	}
	return w
}

// workerpassMarginSeconds is lambdaworker's default margin
// (workerpass.DefaultMargin) in seconds.
const workerpassMarginSeconds float64 = 5

// buildEntry builds the Go main entry (a package path or a directory
// relative to the working directory) for the Lambda runtime into the cloud
// assembly (<outdir>/stela-build/<scope's address>-<name>/bootstrap) and
// returns that directory.
func buildEntry(c constructs.Construct, name, entry string) string {
	outdir, err := filepath.Abs(*awscdk.Stage_Of(c).Outdir())
	if err != nil {
		panic(err)
	}
	dir := filepath.Join(outdir, "stela-build", *c.Node().Addr()+"-"+name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		panic(err)
	}
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags", "-s -w",
		"-o", filepath.Join(dir, "bootstrap"), entry)
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		panic(fmt.Sprintf("stelacdk: go build %s for the worker %s: %v\n%s", entry, *c.Node().Path(), err, out))
	}
	return dir
}
