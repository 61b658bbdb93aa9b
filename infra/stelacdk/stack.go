package stelacdk

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2authorizers"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdadestinations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/dynamo"
)

// Environment variables of the functions (functions/app reads them once
// per cold start): the generated resource names, the CAS key prefix and the
// long-poll bound of the HTTP functions.
const (
	EnvTable        = "STELA_TABLE"
	EnvBucket       = "STELA_BUCKET"
	EnvBucketPrefix = "STELA_BUCKET_PREFIX"
	EnvFollowWait   = "STELA_FOLLOW_WAIT"
	EnvRetention    = "STELA_RETENTION"
)

// CasPrefix is the key prefix of the CAS in the bucket; the functions' S3
// grants cover only keys under it.
const CasPrefix = "cas/"

// TTLAttribute is the table's time-to-live attribute (epoch seconds): the
// dynamo package writes it on every item of a finished execution tree
// (dynamo/doc.go, "Retention"); items without it never expire.
const TTLAttribute = dynamo.AttrTTL

// Context keys read by NewStelaStack when the matching prop is unset
// (`cdk synth -c jwtIssuer=https://issuer/ -c jwtAudience=aud1,aud2`).
const (
	CtxJWTIssuer     = "jwtIssuer"
	CtxJWTAudience   = "jwtAudience"
	CtxPackaging     = "packaging"     // "cdk" (default) or "sam"
	CtxThrottleRate  = "throttleRate"  // steady requests/s of the stage (default 100)
	CtxThrottleBurst = "throttleBurst" // burst of the stage (default 200)
	// CtxWorker ("true") adds the worker function (examples/lambda-worker), its
	// schedule and the policy that lets callers invoke it on demand.
	CtxWorker = "worker"
	// CtxRetention is how long a finished execution tree is kept
	// (STELA_RETENTION of every function): "30d" (the default), "720h",
	// "forever".
	CtxRetention = "retention"
	// CtxLocalEndpoint sets AWS_ENDPOINT_URL in every function, for
	// `sam local` against LocalStack (e.g. http://localstack:4566); never
	// for a deployment.
	CtxLocalEndpoint = "localEndpoint"
)

// Timeouts. API Gateway ends every HTTP API request after 30 s, so the
// functions behind it stop earlier (docs/spec/reliability.md §2.2.1), and their long
// polls (follow, wait_ms) end before that: FollowWait < function timeout <
// 30 s. The timers function loops until 5 s before its deadline
// (functions.DefaultSafetyMargin), so a 60 s timeout on a 1-minute schedule
// keeps a sweep running nearly all the time with little overlap.
const (
	HTTPFunctionTimeoutSeconds   = 25
	FollowWait                   = "20s"
	TimersFunctionTimeoutSeconds = 60
	TimersReservedConcurrency    = 2
	// TimersMaxEventAgeSeconds bounds how late a sweep may still run: the
	// sweep is level-triggered and the next one starts a minute later, so
	// an old event is worth nothing.
	TimersMaxEventAgeSeconds = 300
	TimersRetryAttempts      = 2
	// WorkerFunction names the optional worker function (examples/lambda-worker).
	WorkerFunction = "worker"
	// The worker runs a pass per invocation until 5 s before its deadline
	// (workerpass.DefaultMargin); its schedule runs one a minute, and
	// on-demand invocations add passes, at most WorkerReservedConcurrency at once.
	WorkerFunctionTimeoutSeconds = 60
	WorkerReservedConcurrency    = 4
)

// StelaProps configure NewStela. Zero fields take the defaults; nothing is
// read from the CDK context (FromContext does that for an app that wants
// it, as Stela's own infra/main.go does).
type StelaProps struct {
	// BuildDir holds <function>/bootstrap as built by scripts/build-lambdas.sh
	// (default "build", relative to the working directory).
	BuildDir string
	// BuildFromSource builds Stela's functions at synth time (go build
	// github.com/stela-dev/stela/functions/<name> for linux/arm64, the
	// version the CDK app's go.mod requires) into the cloud assembly,
	// instead of taking them from BuildDir: what a user's own CDK app does.
	BuildFromSource bool
	// JWTIssuer selects a JWT authorizer instead of IAM (SigV4) on every
	// route; JWTAudience is then required (context jwtIssuer / jwtAudience).
	JWTIssuer   string
	JWTAudience []string
	// SAMPackaging makes every function's Code a local path relative to the
	// synthesized template, so that `sam deploy` packages and uploads it
	// without a CDK bootstrap stack (context packaging=sam).
	SAMPackaging bool
	// Retention is how long a finished execution tree is kept (default
	// core.DefaultRetentionPeriod; "forever" keeps everything; context
	// retention).
	Retention string
	// ThrottleRate and ThrottleBurst limit the stage (default 100 and 200;
	// context throttleRate / throttleBurst).
	ThrottleRate, ThrottleBurst float64
	// LocalEndpoint, if set, becomes AWS_ENDPOINT_URL of every function
	// (context localEndpoint): `sam local` only passes environment
	// variables the template declares.
	LocalEndpoint string
	// Worker adds Stela's example worker function (examples/lambda-worker;
	// context worker=true). Your own workers are NewWorker constructs.
	Worker bool
	// Monitoring configures the alarms, their topic, the dashboard and
	// tracing (monitoring.go; context alarm*, tracing, otelEndpoint).
	Monitoring MonitoringProps
}

// StelaStackProps configure NewStelaStack: the stack's own props and the
// Stela construct's.
type StelaStackProps struct {
	awscdk.StackProps
	StelaProps
}

// Stela is the deployed system as a construct: table, bucket, the api,
// lock, append and timers functions, the HTTP API and its stage, the
// function URLs, the timers schedule and its dead-letter queue, alarms,
// dashboard and retention. Workers (NewWorker) run on it.
type Stela struct {
	constructs.Construct
	Table     awsdynamodb.Table
	Bucket    awss3.Bucket
	Functions map[string]awslambda.Function
	API       awsapigatewayv2.HttpApi
	Stage     awsapigatewayv2.HttpStage
	TimersDLQ awssqs.Queue
	// WorkerDLQ and WorkerInvoke exist with StelaProps.Worker: the example
	// worker's failed passes, and the managed policy a caller attaches to
	// invoke it.
	WorkerDLQ    awssqs.Queue
	WorkerInvoke awsiam.ManagedPolicy
	// Monitoring holds the alarms, their topic and the dashboard.
	Monitoring *Monitoring
	// WorkerURLs are the function URLs of WorkerURLFunctions (function_urls.go).
	WorkerURLs map[string]awslambda.FunctionUrl

	props StelaProps // resolved
}

// StelaStack is Stela's own app: one stack holding one Stela.
type StelaStack struct {
	awscdk.Stack
	*Stela
}

// StackName is the stack id of Stela's own app (infra/main.go) and the
// name of its template file (cdk.out/StelaStack.template.json).
const StackName = "StelaStack"

// DefaultID is the id of the Stela construct in NewStelaStack. CDK leaves
// an id "Default" out of the logical ids, so the resources keep the ids
// they had when the stack defined them itself (no replacement on update).
const DefaultID = "Default"

// NewStelaStack defines Stela's whole deployment in one stack; props left
// unset are read from the CDK context (FromContext).
func NewStelaStack(scope constructs.Construct, id string, props *StelaStackProps) *StelaStack {
	if props == nil {
		props = &StelaStackProps{}
	}
	p := *props
	sp := p.StackProps
	if sp.Description == nil {
		sp.Description = jsii.String("Stela: durable-execution storage on DynamoDB, S3, Lambda and API Gateway")
	}
	FromContext(scope.Node(), &p.StelaProps)
	if p.SAMPackaging && sp.Synthesizer == nil {
		sp.Synthesizer = SAMSynthesizer()
	}
	stack := awscdk.NewStack(scope, &id, &sp)
	return &StelaStack{Stack: stack, Stela: NewStela(stack, DefaultID, &p.StelaProps)}
}

// SAMSynthesizer is the synthesizer of a stack deployed with `sam deploy`:
// its template must not depend on the CDK bootstrap stack (its version
// parameter and rule).
func SAMSynthesizer() awscdk.IStackSynthesizer {
	return awscdk.NewDefaultStackSynthesizer(&awscdk.DefaultStackSynthesizerProps{
		GenerateBootstrapVersionRule: jsii.Bool(false),
	})
}

// NewStela defines Stela in scope (a stack of the user's CDK app).
func NewStela(scope constructs.Construct, id string, props *StelaProps) *Stela {
	p := StelaProps{}
	if props != nil {
		p = *props
	}
	resolve(func(string) string { return "" }, &p)
	c := constructs.NewConstruct(scope, &id)
	s := &Stela{Construct: c, Functions: map[string]awslambda.Function{}, props: p}
	s.Table = newTable(c)
	s.Bucket = newBucket(c)

	s.TimersDLQ = newDeadLetterQueue(c, "TimersDeadLetters")
	if p.Worker {
		s.WorkerDLQ = newDeadLetterQueue(c, "WorkerDeadLetters")
	}

	for _, spec := range specsOf(p) {
		s.Functions[spec.Name] = s.newFunction(c, spec, p)
	}

	s.newAPI(c, p)
	s.newWorkerURLs(c)

	schedule(c, "TimersSchedule", "Runs the timer sweep (expired locks and delays, cancellations) every minute",
		s.Functions["timers"], s.TimersDLQ, awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(1))))
	if p.Worker {
		s.newWorkerAccess(c)
	}
	s.Monitoring = s.newMonitoring(c, p.Monitoring)

	awscdk.NewCfnOutput(c, jsii.String("ApiUrl"), &awscdk.CfnOutputProps{
		Description: jsii.String("Base URL of the HTTP API"), Value: s.Stage.Url()})
	awscdk.NewCfnOutput(c, jsii.String("TableName"), &awscdk.CfnOutputProps{
		Description: jsii.String("DynamoDB table (" + EnvTable + ")"), Value: s.Table.TableName()})
	awscdk.NewCfnOutput(c, jsii.String("BucketName"), &awscdk.CfnOutputProps{
		Description: jsii.String("S3 bucket of the content-addressed store (" + EnvBucket + ")"), Value: s.Bucket.BucketName()})
	awscdk.NewCfnOutput(c, jsii.String("TimersDeadLetterQueueUrl"), &awscdk.CfnOutputProps{
		Description: jsii.String("Sweeps that could not be delivered or failed after retries"), Value: s.TimersDLQ.QueueUrl()})
	return s
}

// specsOf returns the functions Stela deploys.
func specsOf(p StelaProps) []functionSpec {
	specs := append([]functionSpec{}, functionSpecs...)
	if p.Worker {
		specs = append(specs, workerSpec)
	}
	return specs
}

// FunctionNames are the bootstrap directories (BuildDir/<name>) a Stela
// with props needs.
func FunctionNames(props StelaProps) []string {
	var out []string
	for _, s := range specsOf(props) {
		out = append(out, s.Name)
	}
	return out
}

func newDeadLetterQueue(scope constructs.Construct, id string) awssqs.Queue {
	return awssqs.NewQueue(scope, jsii.String(id), &awssqs.QueueProps{
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
	})
}

// schedule invokes fn on sched; late events are dropped and failed
// deliveries kept in dlq (both functions are level-triggered: the next
// invocation does the same work).
func schedule(scope constructs.Construct, id, description string, fn awslambda.IFunction, dlq awssqs.IQueue, sched awsevents.Schedule) awsevents.Rule {
	rule := awsevents.NewRule(scope, jsii.String(id), &awsevents.RuleProps{
		Description: jsii.String(description),
		Schedule:    sched,
	})
	rule.AddTarget(awseventstargets.NewLambdaFunction(fn, &awseventstargets.LambdaFunctionProps{
		DeadLetterQueue: dlq,
		MaxEventAge:     awscdk.Duration_Seconds(jsii.Number(TimersMaxEventAgeSeconds)),
		RetryAttempts:   jsii.Number(TimersRetryAttempts),
	}))
	return rule
}

// newWorkerAccess schedules the example worker function and creates the
// managed policy that allows invoking it on demand (e.g. by the service
// that just submitted work): lambda:InvokeFunction on that one function,
// nothing else.
func (s *Stela) newWorkerAccess(scope constructs.Construct) {
	fn := s.Functions[WorkerFunction]
	schedule(scope, "WorkerSchedule", "Runs a worker pass every minute (pending executions of the worker's functions)",
		fn, s.WorkerDLQ, awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(1))))
	s.WorkerInvoke = invokePolicy(scope, "WorkerInvokePolicy", "Invoke the Stela worker function on demand (one more worker pass)", fn)
	workerOutputs(scope, "Worker", fn, s.WorkerInvoke, s.WorkerDLQ)
}

// invokePolicy is a managed policy allowing lambda:InvokeFunction on fn only.
func invokePolicy(scope constructs.Construct, id, description string, fn awslambda.IFunction) awsiam.ManagedPolicy {
	return awsiam.NewManagedPolicy(scope, jsii.String(id), &awsiam.ManagedPolicyProps{
		Description: jsii.String(description),
		Statements: &[]awsiam.PolicyStatement{awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("lambda:InvokeFunction"),
			Resources: jsii.Strings(*fn.FunctionArn()),
		})},
	})
}

// workerOutputs are a worker's outputs <prefix>FunctionName,
// <prefix>InvokePolicyArn and <prefix>DeadLetterQueueUrl.
func workerOutputs(scope constructs.Construct, prefix string, fn awslambda.IFunction, invoke awsiam.ManagedPolicy, dlq awssqs.IQueue) {
	awscdk.NewCfnOutput(scope, jsii.String(prefix+"FunctionName"), &awscdk.CfnOutputProps{
		Description: jsii.String("Worker function: `aws lambda invoke --function-name <it> --invocation-type Event` runs a pass"),
		Value:       fn.FunctionName()})
	awscdk.NewCfnOutput(scope, jsii.String(prefix+"InvokePolicyArn"), &awscdk.CfnOutputProps{
		Description: jsii.String("Managed policy allowing on-demand invocation of the worker function"),
		Value:       invoke.ManagedPolicyArn()})
	awscdk.NewCfnOutput(scope, jsii.String(prefix+"DeadLetterQueueUrl"), &awscdk.CfnOutputProps{
		Description: jsii.String("Worker passes that could not be delivered or failed after retries"), Value: dlq.QueueUrl()})
}

// FromContext fills the props left unset from the CDK context of node
// (`cdk synth -c key=value`, CDK_CONTEXT_JSON): the Ctx* keys.
func FromContext(node constructs.Node, p *StelaProps) {
	resolve(func(key string) string {
		v := node.TryGetContext(jsii.String(key))
		if v == nil {
			return ""
		}
		switch v := v.(type) {
		case string:
			return v
		case []any:
			parts := make([]string, 0, len(v))
			for _, e := range v {
				parts = append(parts, fmt.Sprint(e))
			}
			return strings.Join(parts, ",")
		default:
			return fmt.Sprint(v)
		}
	}, p)
}

// resolve fills unset props from ctx (the context, or nothing) and the
// defaults, and checks them (a bad value panics: synth fails).
func resolve(ctx func(string) string, p *StelaProps) {
	if p.JWTIssuer == "" {
		p.JWTIssuer = ctx(CtxJWTIssuer)
	}
	if len(p.JWTAudience) == 0 {
		for a := range strings.SplitSeq(ctx(CtxJWTAudience), ",") {
			if a = strings.TrimSpace(a); a != "" {
				p.JWTAudience = append(p.JWTAudience, a)
			}
		}
	}
	if p.JWTIssuer != "" && len(p.JWTAudience) == 0 {
		panic("stela: context jwtIssuer needs jwtAudience (comma-separated)")
	}
	if !p.SAMPackaging {
		switch ctx(CtxPackaging) {
		case "", "cdk":
		case "sam":
			p.SAMPackaging = true
		default:
			panic(fmt.Sprintf("stela: context packaging=%q, want cdk or sam", ctx(CtxPackaging)))
		}
	}
	positiveContext(ctx, &p.ThrottleRate, CtxThrottleRate, 100)
	positiveContext(ctx, &p.ThrottleBurst, CtxThrottleBurst, 200)
	if p.BuildDir == "" && !p.BuildFromSource {
		p.BuildDir = "build"
	}
	if p.LocalEndpoint == "" {
		p.LocalEndpoint = ctx(CtxLocalEndpoint)
	}
	if !p.Worker {
		switch ctx(CtxWorker) {
		case "", "false":
		case "true":
			p.Worker = true
		default:
			panic(fmt.Sprintf("stela: context worker=%q, want true or false", ctx(CtxWorker)))
		}
	}
	resolveMonitoring(ctx, &p.Monitoring)
	if p.Retention == "" {
		p.Retention = ctx(CtxRetention)
	}
	if p.Retention == "" {
		p.Retention = core.RetainFor(core.DefaultRetentionPeriod).String()
	}
	r, err := core.ParseRetention(p.Retention)
	if err != nil {
		panic(fmt.Sprintf("stela: context %s: %v", CtxRetention, err))
	}
	p.Retention = r.String()
}

// attrType maps the dynamo schema's attribute types to CDK's.
func attrType(name string) awsdynamodb.AttributeType {
	for _, a := range dynamo.Schema.Attributes {
		if a.Name != name {
			continue
		}
		switch a.Type {
		case "S":
			return awsdynamodb.AttributeType_STRING
		case "N":
			return awsdynamodb.AttributeType_NUMBER
		case "B":
			return awsdynamodb.AttributeType_BINARY
		}
		panic(fmt.Sprintf("stela: dynamo.Schema attribute %s has type %q", name, a.Type))
	}
	panic(fmt.Sprintf("stela: dynamo.Schema has no attribute definition for key %s", name))
}

func attr(name string) *awsdynamodb.Attribute {
	if name == "" {
		return nil
	}
	return &awsdynamodb.Attribute{Name: jsii.String(name), Type: attrType(name)}
}

func projectionType(ix dynamo.TableIndex) awsdynamodb.ProjectionType {
	switch ix.Projection {
	case dynamo.ProjectionAll:
		return awsdynamodb.ProjectionType_ALL
	case dynamo.ProjectionKeysOnly:
		return awsdynamodb.ProjectionType_KEYS_ONLY
	case dynamo.ProjectionInclude:
		return awsdynamodb.ProjectionType_INCLUDE
	}
	panic(fmt.Sprintf("stela: dynamo.Schema index %s has projection %q", ix.Name, ix.Projection))
}

func nonKey(ix dynamo.TableIndex) *[]*string {
	if len(ix.NonKeyAttributes) == 0 {
		return nil
	}
	return jsii.Strings(ix.NonKeyAttributes...)
}

// newTable creates the table exactly as dynamo.CreateTableInput describes it
// (keys, attribute types, every index), plus what only a deployment has:
// point-in-time recovery and TTL.
func newTable(scope constructs.Construct) awsdynamodb.Table {
	sch := dynamo.Schema
	t := awsdynamodb.NewTable(scope, jsii.String("Table"), &awsdynamodb.TableProps{
		PartitionKey: attr(sch.Key.PartitionKey),
		SortKey:      attr(sch.Key.SortKey),
		BillingMode:  awsdynamodb.BillingMode_PAY_PER_REQUEST,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		TimeToLiveAttribute: jsii.String(TTLAttribute),
		Encryption:          awsdynamodb.TableEncryption_AWS_MANAGED,
		RemovalPolicy:       awscdk.RemovalPolicy_RETAIN,
	})
	for _, ix := range sch.GlobalIndexes {
		t.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{
			IndexName:        jsii.String(ix.Name),
			PartitionKey:     attr(ix.Key.PartitionKey),
			SortKey:          attr(ix.Key.SortKey),
			ProjectionType:   projectionType(ix),
			NonKeyAttributes: nonKey(ix),
		})
	}
	for _, ix := range sch.LocalIndexes {
		if ix.Key.PartitionKey != sch.Key.PartitionKey {
			panic(fmt.Sprintf("stela: local index %s must share the table's partition key", ix.Name))
		}
		t.AddLocalSecondaryIndex(&awsdynamodb.LocalSecondaryIndexProps{
			IndexName:        jsii.String(ix.Name),
			SortKey:          attr(ix.Key.SortKey),
			ProjectionType:   projectionType(ix),
			NonKeyAttributes: nonKey(ix),
		})
	}
	return t
}

// newBucket creates the CAS bucket (docs/spec/reliability.md §4.3): private, no ACLs,
// SSE-S3, TLS only, incomplete multipart uploads aborted.
func newBucket(scope constructs.Construct) awss3.Bucket {
	return awss3.NewBucket(scope, jsii.String("Cas"), &awss3.BucketProps{
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		ObjectOwnership:   awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		MinimumTLSVersion: jsii.Number(1.2),
		LifecycleRules: &[]*awss3.LifecycleRule{{
			Id:                                  jsii.String("abort-incomplete-multipart-uploads"),
			Enabled:                             jsii.Bool(true),
			AbortIncompleteMultipartUploadAfter: awscdk.Duration_Days(jsii.Number(1)),
		}},
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})
}

// newFunction creates one of Stela's functions (functionSpecs, workerSpec).
func (s *Stela) newFunction(scope constructs.Construct, spec functionSpec, p StelaProps) awslambda.Function {
	var dlq awssqs.IQueue
	if spec.Scheduled {
		dlq = s.TimersDLQ
		if spec.Name == WorkerFunction {
			dlq = s.WorkerDLQ
		}
	}
	assetDir := filepath.Join(p.BuildDir, spec.Name)
	if p.BuildFromSource {
		assetDir = buildEntry(scope, spec.Name, spec.Package())
	}
	fn, _ := s.goFunction(scope, goFunction{ID: spec.ID(), Name: spec.Name, Description: spec.Description,
		MemoryMB: spec.MemoryMB, TimeoutSeconds: spec.TimeoutSeconds, ReservedConcurrency: spec.ReservedConcurrency,
		AssetDir: assetDir, DLQ: dlq, FollowWait: !spec.Scheduled, Access: spec.Access})
	return fn
}

// goFunction is what goFunction creates.
type goFunction struct {
	ID, Name, Description    string
	MemoryMB, TimeoutSeconds float64
	ReservedConcurrency      float64 // 0: unreserved
	// AssetDir holds the bootstrap.
	AssetDir string
	// DLQ, for a scheduled function, receives the asynchronous invocations
	// that failed after their retries or came too late.
	DLQ awssqs.IQueue
	// FollowWait sets the long-poll bound (the HTTP functions).
	FollowWait bool
	Access     dataAccess
	// Env adds environment variables.
	Env map[string]string
}

// goFunction creates one Go function on arm64 with its own role, log group
// and the data permissions of its access profile (access.go) on s.
func (s *Stela) goFunction(scope constructs.Construct, spec goFunction) (awslambda.Function, awsiam.Role) {
	p := s.props
	id := spec.ID
	logs := awslogs.NewLogGroup(scope, jsii.String(id+"Logs"), &awslogs.LogGroupProps{
		Retention:     awslogs.RetentionDays_ONE_MONTH,
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	role := awsiam.NewRole(scope, jsii.String(id+"Role"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("Stela " + spec.Name + " function"),
	})
	logs.GrantWrite(role)

	assetDir := spec.AssetDir
	fp := &awslambda.FunctionProps{
		Description:  jsii.String(spec.Description),
		Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
		Architecture: awslambda.Architecture_ARM_64(),
		Handler:      jsii.String("bootstrap"),
		Code:         awslambda.Code_FromAsset(jsii.String(assetDir), nil),
		MemorySize:   jsii.Number(spec.MemoryMB),
		Timeout:      awscdk.Duration_Seconds(jsii.Number(spec.TimeoutSeconds)),
		Role:         role,
		LogGroup:     logs,
		Environment: &map[string]*string{
			EnvTable:        s.Table.TableName(),
			EnvBucket:       s.Bucket.BucketName(),
			EnvBucketPrefix: jsii.String(CasPrefix),
			EnvRetention:    jsii.String(p.Retention),
		},
	}
	for k, v := range spec.Env {
		(*fp.Environment)[k] = jsii.String(v)
	}
	if spec.FollowWait {
		(*fp.Environment)[EnvFollowWait] = jsii.String(FollowWait)
	}
	if p.LocalEndpoint != "" {
		(*fp.Environment)["AWS_ENDPOINT_URL"] = jsii.String(p.LocalEndpoint)
	}
	if spec.ReservedConcurrency > 0 {
		fp.ReservedConcurrentExecutions = jsii.Number(spec.ReservedConcurrency)
	}
	if spec.DLQ != nil {
		fp.RetryAttempts = jsii.Number(TimersRetryAttempts)
		fp.MaxEventAge = awscdk.Duration_Seconds(jsii.Number(TimersMaxEventAgeSeconds))
		fp.OnFailure = awslambdadestinations.NewSqsDestination(spec.DLQ)
	}
	instrumentFunction(scope, fp, p.Monitoring)
	fn := awslambda.NewFunction(scope, jsii.String(id), fp)
	if p.SAMPackaging {
		// `sam deploy` zips and uploads a local-path Code (relative to the
		// template in the cloud assembly directory).
		outdir, err := filepath.Abs(*awscdk.Stage_Of(scope).Outdir()) // relative when set by the cdk CLI
		if err != nil {
			panic(err)
		}
		abs, err := filepath.Abs(assetDir)
		if err != nil {
			panic(err)
		}
		rel, err := filepath.Rel(outdir, abs)
		if err != nil {
			panic(err)
		}
		cfn := fn.Node().DefaultChild().(awslambda.CfnFunction)
		cfn.AddPropertyOverride(jsii.String("Code"), filepath.ToSlash(rel))
		awscdk.Validations_Of(cfn).Acknowledge(&awscdk.Acknowledgment{
			Id:     jsii.String("CloudFormation-Validate::W3002"),
			Reason: jsii.String("a local Code path is intended: sam deploy packages it"),
		})
	}
	grantData(role, spec.Access, s.Table, s.Bucket)
	return fn, role
}

// newAPI creates the HTTP API, its $default stage and the routes of routes.go,
// each with the IAM or JWT authorizer (the console's static routes are public
// with JWT, see consoleRoutes).
func (s *Stela) newAPI(scope constructs.Construct, p StelaProps) {
	var auth awsapigatewayv2.IHttpRouteAuthorizer
	if p.JWTIssuer != "" {
		auth = awsapigatewayv2authorizers.NewHttpJwtAuthorizer(jsii.String("JwtAuthorizer"), jsii.String(p.JWTIssuer),
			&awsapigatewayv2authorizers.HttpJwtAuthorizerProps{JwtAudience: jsii.Strings(p.JWTAudience...)})
	} else {
		auth = awsapigatewayv2authorizers.NewHttpIamAuthorizer()
	}
	s.API = awsapigatewayv2.NewHttpApi(scope, jsii.String("Api"), &awsapigatewayv2.HttpApiProps{
		Description:        jsii.String("Stela HTTP API v1"),
		CreateDefaultStage: jsii.Bool(false),
		DefaultAuthorizer:  auth,
	})
	accessLogs := awslogs.NewLogGroup(scope, jsii.String("ApiAccessLogs"), &awslogs.LogGroupProps{
		Retention:     awslogs.RetentionDays_ONE_MONTH,
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	s.Stage = s.API.AddStage(jsii.String("DefaultStage"), &awsapigatewayv2.HttpStageOptions{
		StageName:  jsii.String("$default"),
		AutoDeploy: jsii.Bool(true),
		Throttle: &awsapigatewayv2.ThrottleSettings{
			RateLimit: jsii.Number(p.ThrottleRate), BurstLimit: jsii.Number(p.ThrottleBurst)},
	})
	s.Stage.Node().DefaultChild().(awsapigatewayv2.CfnStage).SetAccessLogSettings(&awsapigatewayv2.CfnStage_AccessLogSettingsProperty{
		DestinationArn: accessLogs.LogGroupArn(),
		Format:         jsii.String(accessLogFormat),
	})

	integrations := map[string]awsapigatewayv2integrations.HttpLambdaIntegration{}
	// The console's static routes: with a JWT authorizer a browser must load
	// them without a token (routes.go explains); with IAM they keep it.
	var consoleAuth awsapigatewayv2.IHttpRouteAuthorizer
	if p.JWTIssuer != "" {
		consoleAuth = awsapigatewayv2.NewHttpNoneAuthorizer()
	}
	for i, r := range append(slices.Clone(apiRoutes), consoleRoutes...) {
		in, ok := integrations[r.Function]
		if !ok {
			fn := s.Functions[r.Function]
			if fn == nil {
				panic("stela: route " + r.Path + " targets unknown function " + r.Function)
			}
			in = awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String(functionID(r.Function)+"Integration"), fn,
				&awsapigatewayv2integrations.HttpLambdaIntegrationProps{
					PayloadFormatVersion: awsapigatewayv2.PayloadFormatVersion_VERSION_2_0(),
				})
			integrations[r.Function] = in
		}
		methods := make([]awsapigatewayv2.HttpMethod, len(r.Methods))
		for i, m := range r.Methods {
			methods[i] = awsapigatewayv2.HttpMethod(m)
		}
		opts := &awsapigatewayv2.AddRoutesOptions{Path: jsii.String(r.Path), Methods: &methods, Integration: in}
		if i >= len(apiRoutes) && consoleAuth != nil {
			opts.Authorizer = consoleAuth
		}
		s.API.AddRoutes(opts)
	}
}

// accessLogFormat is one JSON line per request ($context variables of HTTP APIs).
const accessLogFormat = `{"requestId":"$context.requestId","ip":"$context.identity.sourceIp",` +
	`"caller":"$context.identity.caller","user":"$context.identity.user","userArn":"$context.identity.userArn",` +
	`"requestTime":"$context.requestTime","routeKey":"$context.routeKey","status":"$context.status",` +
	`"protocol":"$context.protocol","responseLength":"$context.responseLength",` +
	`"integrationLatency":"$context.integrationLatency","integrationError":"$context.integrationErrorMessage",` +
	`"authorizerError":"$context.authorizer.error"}`
