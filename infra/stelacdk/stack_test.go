package stelacdk

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/jsii-runtime-go"

	"github.com/stela-dev/stela/dynamo"
	"github.com/stela-dev/stela/functions"
	"github.com/stela-dev/stela/functions/app"
	"github.com/stela-dev/stela/httpapi"
)

// The stacks are synthesized once, in TestMain, on one jsii kernel: starting
// a kernel costs seconds, and jsii.Close ends it for the whole process.
var (
	iamTemplate assertions.Template // default: IAM authorizer, CDK packaging
	iamStack    tmpl
	jwtStack    tmpl // context jwtIssuer/jwtAudience
	samStack    tmpl // context packaging=sam
	workerStack tmpl // context worker=true, alarmEmail
	opsStack    tmpl // context alarmTopicArn, alarm thresholds, tracing=xray, otelEndpoint
	samOutdir   string
	buildDir    string
)

const (
	testIssuer        = "https://issuer.example.com/"
	testAudience      = "stela-api"
	testLocalEndpoint = "http://localstack:4566"
)

func TestMain(m *testing.M) {
	code := func() int {
		defer jsii.Close()
		dir, err := os.MkdirTemp("", "stela-infra-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		// Placeholders: synth never needs the cross-compiled binaries.
		buildDir = filepath.Join(dir, "build")
		for _, spec := range append(functionSpecs, workerSpec) {
			if err := WritePlaceholder(filepath.Join(buildDir, spec.Name, "bootstrap")); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		synth := func(name string, ctx map[string]any) (assertions.Template, tmpl, string) {
			outdir := filepath.Join(dir, name+".out")
			ctx["aws:cdk:enable-asset-metadata"] = true
			ctx["aws:cdk:enable-path-metadata"] = true
			// A relative outdir, as the cdk CLI passes it (CDK_OUTDIR=cdk.out).
			wd, _ := os.Getwd()
			rel, err := filepath.Rel(wd, outdir)
			if err != nil {
				rel = outdir
			}
			app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(rel), Context: &ctx})
			s := NewStelaStack(app, StackName, &StelaStackProps{StelaProps: StelaProps{BuildDir: buildDir}})
			t := assertions.Template_FromStack(s.Stack, nil)
			return t, tmpl(*t.ToJSON()), outdir
		}
		iamTemplate, iamStack, _ = synth("iam", map[string]any{})
		_, jwtStack, _ = synth("jwt", map[string]any{CtxJWTIssuer: testIssuer, CtxJWTAudience: testAudience})
		_, samStack, samOutdir = synth("sam", map[string]any{CtxPackaging: "sam", CtxLocalEndpoint: testLocalEndpoint,
			CtxRetention: testRetention})
		_, workerStack, _ = synth("worker", map[string]any{CtxWorker: "true", CtxAlarmEmail: testAlarmEmail})
		_, opsStack, _ = synth("ops", map[string]any{CtxAlarmTopicArn: testTopicArn, CtxAlarmSweepLagSeconds: "120",
			CtxAlarmAPI5xxPercent: "2.5", CtxTracing: TracingXRay, CtxOtelEndpoint: testOtelEndpoint})
		return m.Run()
	}()
	os.Exit(code)
}

// --- template helpers -------------------------------------------------------

// tmpl is a synthesized CloudFormation template.
type tmpl map[string]any

type resource struct {
	ID    string
	Type  string
	Props map[string]any
	Raw   map[string]any
}

func (t tmpl) resources(typ string) []resource {
	var out []resource
	for id, r := range t["Resources"].(map[string]any) {
		r := r.(map[string]any)
		if r["Type"] == typ {
			props, _ := r["Properties"].(map[string]any)
			out = append(out, resource{ID: id, Type: typ, Props: props, Raw: r})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (t tmpl) one(tb testing.TB, typ string) resource {
	tb.Helper()
	rs := t.resources(typ)
	if len(rs) != 1 {
		tb.Fatalf("%d resources of type %s, want 1", len(rs), typ)
	}
	return rs[0]
}

func (t tmpl) get(id string) resource {
	r, ok := t["Resources"].(map[string]any)[id].(map[string]any)
	if !ok {
		return resource{}
	}
	props, _ := r["Properties"].(map[string]any)
	return resource{ID: id, Type: r["Type"].(string), Props: props, Raw: r}
}

// byPath finds the resource whose aws:cdk:path is StelaStack/Default/<path>
// (the Stela construct, DefaultID, in the stack).
func (t tmpl) byPath(tb testing.TB, path string) resource {
	tb.Helper()
	for id, r := range t["Resources"].(map[string]any) {
		r := r.(map[string]any)
		md, _ := r["Metadata"].(map[string]any)
		if md["aws:cdk:path"] == StackName+"/"+DefaultID+"/"+path {
			return t.get(id)
		}
	}
	tb.Fatalf("no resource at path %s", path)
	return resource{}
}

// function returns the Lambda function of functions/<name>.
func (t tmpl) function(tb testing.TB, name string) resource {
	tb.Helper()
	return t.byPath(tb, functionID(name)+"/Resource")
}

// functionName maps a function's logical id to its name ("api").
func (t tmpl) functionName(tb testing.TB, logicalID string) string {
	tb.Helper()
	for _, spec := range append(functionSpecs, workerSpec) {
		if t.function(tb, spec.Name).ID == logicalID {
			return spec.Name
		}
	}
	tb.Fatalf("logical id %s is not one of the functions", logicalID)
	return ""
}

func ref(id string) map[string]any { return map[string]any{"Ref": id} }

func getAtt(id, attr string) map[string]any {
	return map[string]any{"Fn::GetAtt": []any{id, attr}}
}

// refersTo reports whether v is {"Ref": id} or {"Fn::GetAtt": [id, …]}.
func refersTo(v any, id string) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	if m["Ref"] == id {
		return true
	}
	if ga, ok := m["Fn::GetAtt"].([]any); ok && len(ga) == 2 && ga[0] == id {
		return true
	}
	return false
}

func asList(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	if v == nil {
		return nil
	}
	return []any{v}
}

func strs(v any) []string {
	var out []string
	for _, e := range asList(v) {
		out = append(out, fmt.Sprint(e))
	}
	return out
}

func jsonEq(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// mustAssert runs a CDK assertion, which reports failure by panicking.
func mustAssert(t *testing.T, name string, f func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("%s: %v", name, r)
		}
	}()
	f()
}

// --- table -------------------------------------------------------------------

// cfnKeySchema converts dynamo's CreateTable key schema to CloudFormation's.
func cfnFromCreateTable() (keys, attrs, gsis, lsis []any) {
	in := dynamo.CreateTableInput("x")
	ks := func(in any) []any {
		var out []any
		b, _ := json.Marshal(in)
		var elems []struct{ AttributeName, KeyType string }
		_ = json.Unmarshal(b, &elems)
		for _, e := range elems {
			out = append(out, map[string]any{"AttributeName": e.AttributeName, "KeyType": e.KeyType})
		}
		return out
	}
	proj := func(p any) map[string]any {
		b, _ := json.Marshal(p)
		var pr struct {
			ProjectionType   string
			NonKeyAttributes []string
		}
		_ = json.Unmarshal(b, &pr)
		out := map[string]any{"ProjectionType": pr.ProjectionType}
		if len(pr.NonKeyAttributes) > 0 {
			var nk []any
			for _, a := range pr.NonKeyAttributes {
				nk = append(nk, a)
			}
			out["NonKeyAttributes"] = nk
		}
		return out
	}
	keys = ks(in.KeySchema)
	for _, a := range in.AttributeDefinitions {
		attrs = append(attrs, map[string]any{"AttributeName": aws.ToString(a.AttributeName), "AttributeType": string(a.AttributeType)})
	}
	for _, g := range in.GlobalSecondaryIndexes {
		gsis = append(gsis, map[string]any{"IndexName": aws.ToString(g.IndexName), "KeySchema": ks(g.KeySchema), "Projection": proj(g.Projection)})
	}
	for _, l := range in.LocalSecondaryIndexes {
		lsis = append(lsis, map[string]any{"IndexName": aws.ToString(l.IndexName), "KeySchema": ks(l.KeySchema), "Projection": proj(l.Projection)})
	}
	return keys, attrs, gsis, lsis
}

func byName(field string, l []any) map[string]any {
	out := map[string]any{}
	for _, e := range l {
		m := e.(map[string]any)
		out[fmt.Sprint(m[field])] = m
	}
	return out
}

func TestTableMatchesDynamoCreateTable(t *testing.T) {
	table := iamStack.one(t, "AWS::DynamoDB::Table")
	keys, attrs, gsis, lsis := cfnFromCreateTable()

	t.Run("KeySchemaIsDynamoSchemas", func(t *testing.T) {
		if got := table.Props["KeySchema"]; !jsonEq(got, keys) {
			t.Fatalf("KeySchema = %v, want %v", got, keys)
		}
	})
	t.Run("AttributeDefinitionsAreDynamoSchemas", func(t *testing.T) {
		got, want := byName("AttributeName", asList(table.Props["AttributeDefinitions"])), byName("AttributeName", attrs)
		if !jsonEq(got, want) {
			t.Fatalf("AttributeDefinitions = %v, want %v", got, want)
		}
	})
	t.Run("GlobalIndexesAreDynamoSchemas", func(t *testing.T) {
		got, want := byName("IndexName", asList(table.Props["GlobalSecondaryIndexes"])), byName("IndexName", gsis)
		if len(want) == 0 {
			t.Fatal("dynamo.Schema has no global indexes; the comparison would be vacuous")
		}
		if !jsonEq(got, want) {
			t.Fatalf("GlobalSecondaryIndexes =\n%v\nwant\n%v", got, want)
		}
	})
	t.Run("LocalIndexesAreDynamoSchemas", func(t *testing.T) {
		got, want := byName("IndexName", asList(table.Props["LocalSecondaryIndexes"])), byName("IndexName", lsis)
		if !jsonEq(got, want) {
			t.Fatalf("LocalSecondaryIndexes =\n%v\nwant\n%v", got, want)
		}
	})
	t.Run("IsOnDemandWithPITRAndTTL", func(t *testing.T) {
		mustAssert(t, "table properties", func() {
			iamTemplate.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{
				"BillingMode":                      "PAY_PER_REQUEST",
				"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": true},
				"TimeToLiveSpecification":          map[string]any{"AttributeName": TTLAttribute, "Enabled": true},
				"SSESpecification":                 map[string]any{"SSEEnabled": true},
			})
		})
		if _, ok := table.Props["ProvisionedThroughput"]; ok {
			t.Fatal("table has ProvisionedThroughput; want on-demand only")
		}
	})
	t.Run("IsRetainedOnStackDeletion", func(t *testing.T) {
		if got := table.Raw["DeletionPolicy"]; got != "Retain" {
			t.Fatalf("DeletionPolicy = %v, want Retain", got)
		}
	})
}

// --- bucket ------------------------------------------------------------------

func TestBucketIsPrivateEncryptedAndTLSOnly(t *testing.T) {
	b := iamStack.one(t, "AWS::S3::Bucket")
	t.Run("BlocksAllPublicAccess", func(t *testing.T) {
		want := map[string]any{"BlockPublicAcls": true, "BlockPublicPolicy": true, "IgnorePublicAcls": true, "RestrictPublicBuckets": true}
		if got := b.Props["PublicAccessBlockConfiguration"]; !jsonEq(got, want) {
			t.Fatalf("PublicAccessBlockConfiguration = %v, want %v", got, want)
		}
	})
	t.Run("DisablesACLs", func(t *testing.T) {
		want := map[string]any{"Rules": []any{map[string]any{"ObjectOwnership": "BucketOwnerEnforced"}}}
		if got := b.Props["OwnershipControls"]; !jsonEq(got, want) {
			t.Fatalf("OwnershipControls = %v, want %v", got, want)
		}
		if acl, ok := b.Props["AccessControl"]; ok {
			t.Fatalf("AccessControl = %v, want none", acl)
		}
	})
	t.Run("EncryptsWithS3ManagedKeys", func(t *testing.T) {
		want := map[string]any{"ServerSideEncryptionConfiguration": []any{
			map[string]any{"ServerSideEncryptionByDefault": map[string]any{"SSEAlgorithm": "AES256"}}}}
		if got := b.Props["BucketEncryption"]; !jsonEq(got, want) {
			t.Fatalf("BucketEncryption = %v, want %v", got, want)
		}
	})
	t.Run("AbortsIncompleteMultipartUploads", func(t *testing.T) {
		rules := asList(b.Props["LifecycleConfiguration"].(map[string]any)["Rules"])
		found := false
		for _, r := range rules {
			r := r.(map[string]any)
			if r["Status"] == "Enabled" && r["AbortIncompleteMultipartUpload"] != nil {
				found = true
			}
		}
		if !found {
			t.Fatalf("no enabled AbortIncompleteMultipartUpload rule in %v", rules)
		}
	})
	t.Run("DeniesNonTLSRequests", func(t *testing.T) {
		pol := iamStack.one(t, "AWS::S3::BucketPolicy")
		if !refersTo(pol.Props["Bucket"], b.ID) {
			t.Fatalf("bucket policy is for %v", pol.Props["Bucket"])
		}
		var insecure, oldTLS bool
		for _, st := range asList(pol.Props["PolicyDocument"].(map[string]any)["Statement"]) {
			st := st.(map[string]any)
			if st["Effect"] != "Deny" || st["Action"] != "s3:*" {
				continue
			}
			cond := fmt.Sprint(st["Condition"])
			insecure = insecure || strings.Contains(cond, "aws:SecureTransport:false")
			oldTLS = oldTLS || strings.Contains(cond, "s3:TlsVersion:1.2")
		}
		if !insecure || !oldTLS {
			t.Fatalf("deny insecure transport=%v, deny TLS<1.2=%v; want both", insecure, oldTLS)
		}
	})
	t.Run("IsRetainedOnStackDeletion", func(t *testing.T) {
		if got := b.Raw["DeletionPolicy"]; got != "Retain" {
			t.Fatalf("DeletionPolicy = %v, want Retain", got)
		}
	})
}

// --- functions ---------------------------------------------------------------

func TestFunctionsAreGoOnGraviton(t *testing.T) {
	fns := iamStack.resources("AWS::Lambda::Function")
	if got, want := len(fns), len(functionSpecs); got != want {
		t.Fatalf("%d functions, want %d", got, want)
	}
	table := iamStack.one(t, "AWS::DynamoDB::Table")
	bucket := iamStack.one(t, "AWS::S3::Bucket")
	for _, spec := range functionSpecs {
		fn := iamStack.function(t, spec.Name)
		t.Run(spec.Name+"RunsBootstrapOnProvidedAL2023Arm64", func(t *testing.T) {
			if got := fn.Props["Runtime"]; got != "provided.al2023" {
				t.Errorf("Runtime = %v", got)
			}
			if got := strs(fn.Props["Architectures"]); !slices.Equal(got, []string{"arm64"}) {
				t.Errorf("Architectures = %v", got)
			}
			if got := fn.Props["Handler"]; got != "bootstrap" {
				t.Errorf("Handler = %v", got)
			}
		})
		t.Run(spec.Name+"CodeIsItsBuildDirectory", func(t *testing.T) {
			md := fn.Raw["Metadata"].(map[string]any)
			if md["aws:asset:property"] != "Code" || !strings.HasPrefix(fmt.Sprint(md["aws:asset:path"]), "asset.") {
				t.Fatalf("asset metadata = %v", md)
			}
			code := fn.Props["Code"].(map[string]any)
			if code["S3Bucket"] == nil || code["S3Key"] == nil {
				t.Fatalf("Code = %v, want an S3 asset", code)
			}
		})
		env := fn.Props["Environment"].(map[string]any)["Variables"].(map[string]any)
		t.Run(spec.Name+"GetsGeneratedTableAndBucketNames", func(t *testing.T) {
			if !jsonEq(env[EnvTable], ref(table.ID)) || !jsonEq(env[EnvBucket], ref(bucket.ID)) {
				t.Fatalf("Environment = %v, want %s=Ref %s, %s=Ref %s", env, EnvTable, table.ID, EnvBucket, bucket.ID)
			}
			if env[EnvBucketPrefix] != CasPrefix {
				t.Fatalf("%s = %v, want %s (the S3 grants cover only that prefix)", EnvBucketPrefix, env[EnvBucketPrefix], CasPrefix)
			}
		})
		t.Run(spec.Name+"ConfigurationIsValidForFunctionsApp", func(t *testing.T) {
			cfg, err := app.LoadConfig(func(k string) string {
				if v, ok := env[k].(string); ok {
					return v
				}
				if _, ok := env[k]; ok {
					return "generated-name" // a Ref, resolved at deploy time
				}
				return ""
			})
			if err != nil {
				t.Fatalf("functions/app rejects the deployed environment: %v", err)
			}
			if !spec.Scheduled {
				// The long poll must end before the function times out.
				if limit := time.Duration(fn.Props["Timeout"].(float64)-3) * time.Second; cfg.FollowWait <= 0 || cfg.FollowWait > limit {
					t.Fatalf("FollowWait = %v, want within (0, %v]", cfg.FollowWait, limit)
				}
			}
		})
		t.Run(spec.Name+"LogsToAOneMonthLogGroup", func(t *testing.T) {
			lc, _ := fn.Props["LoggingConfig"].(map[string]any)
			lg := iamStack.byPath(t, spec.ID()+"Logs/Resource")
			if !refersTo(lc["LogGroup"], lg.ID) {
				t.Fatalf("LoggingConfig = %v, want log group %s", lc, lg.ID)
			}
			if got := lg.Props["RetentionInDays"]; got != float64(30) {
				t.Fatalf("RetentionInDays = %v, want 30", got)
			}
		})
	}
	t.Run("HTTPFunctionsStopBeforeAPIGatewayTimesOut", func(t *testing.T) {
		for _, name := range []string{"api", "lock", "append"} {
			got := iamStack.function(t, name).Props["Timeout"].(float64)
			// API Gateway's integration timeout is 30 s; the default long
			// poll (httpapi.DefaultFollowWait) must still fit.
			if got >= 30 || got <= httpapi.DefaultFollowWait.Seconds() {
				t.Errorf("%s Timeout = %v s, want within (%v, 30)", name, got, httpapi.DefaultFollowWait.Seconds())
			}
		}
	})
	t.Run("TimersHasSmallReservedConcurrency", func(t *testing.T) {
		if got := iamStack.function(t, "timers").Props["ReservedConcurrentExecutions"]; got != float64(TimersReservedConcurrency) {
			t.Fatalf("ReservedConcurrentExecutions = %v, want %d", got, TimersReservedConcurrency)
		}
		for _, name := range []string{"api", "lock", "append"} {
			if got, ok := iamStack.function(t, name).Props["ReservedConcurrentExecutions"]; ok {
				t.Errorf("%s ReservedConcurrentExecutions = %v, want unreserved", name, got)
			}
		}
	})
}

func TestTimersScheduleRetriesAndKeepsFailures(t *testing.T) {
	timers := iamStack.function(t, "timers")
	dlq := iamStack.one(t, "AWS::SQS::Queue")
	rule := iamStack.one(t, "AWS::Events::Rule")
	t.Run("RunsEveryMinute", func(t *testing.T) {
		if got := rule.Props["ScheduleExpression"]; got != "rate(1 minute)" {
			t.Fatalf("ScheduleExpression = %v", got)
		}
		if got := rule.Props["State"]; got != "ENABLED" {
			t.Fatalf("State = %v", got)
		}
	})
	t.Run("TargetRetriesBrieflyThenDeadLetters", func(t *testing.T) {
		targets := asList(rule.Props["Targets"])
		if len(targets) != 1 {
			t.Fatalf("%d targets, want 1", len(targets))
		}
		tg := targets[0].(map[string]any)
		if !refersTo(tg["Arn"], timers.ID) {
			t.Fatalf("target Arn = %v, want the timers function", tg["Arn"])
		}
		want := map[string]any{"MaximumEventAgeInSeconds": float64(TimersMaxEventAgeSeconds), "MaximumRetryAttempts": float64(TimersRetryAttempts)}
		if !jsonEq(tg["RetryPolicy"], want) {
			t.Fatalf("RetryPolicy = %v, want %v", tg["RetryPolicy"], want)
		}
		if !refersTo(tg["DeadLetterConfig"].(map[string]any)["Arn"], dlq.ID) {
			t.Fatalf("DeadLetterConfig = %v", tg["DeadLetterConfig"])
		}
	})
	t.Run("AsyncInvokeRetriesThenGoesToTheQueue", func(t *testing.T) {
		cfg := iamStack.one(t, "AWS::Lambda::EventInvokeConfig")
		if !refersTo(cfg.Props["FunctionName"], timers.ID) {
			t.Fatalf("EventInvokeConfig is for %v", cfg.Props["FunctionName"])
		}
		if cfg.Props["MaximumRetryAttempts"] != float64(TimersRetryAttempts) || cfg.Props["MaximumEventAgeInSeconds"] != float64(TimersMaxEventAgeSeconds) {
			t.Fatalf("EventInvokeConfig = %v", cfg.Props)
		}
		onFailure := cfg.Props["DestinationConfig"].(map[string]any)["OnFailure"].(map[string]any)
		if !refersTo(onFailure["Destination"], dlq.ID) {
			t.Fatalf("OnFailure = %v, want the dead-letter queue", onFailure)
		}
	})
	t.Run("DeadLetterQueueIsEncryptedAndTLSOnly", func(t *testing.T) {
		if dlq.Props["SqsManagedSseEnabled"] != true {
			t.Fatalf("queue = %v, want SQS-managed SSE", dlq.Props)
		}
		found := false
		for _, qp := range iamStack.resources("AWS::SQS::QueuePolicy") {
			if strings.Contains(fmt.Sprint(qp.Props["PolicyDocument"]), "aws:SecureTransport:false") {
				found = true
			}
		}
		if !found {
			t.Fatal("no queue policy denies insecure transport")
		}
	})
}

// --- API ---------------------------------------------------------------------

// apiRouteKey is one deployed route with the function behind it.
type deployedRoute struct {
	Method, Path string
	Function     string
	Resource     resource
}

func (t tmpl) routes(tb testing.TB) []deployedRoute {
	tb.Helper()
	var out []deployedRoute
	for _, r := range t.resources("AWS::ApiGatewayV2::Route") {
		method, path, ok := strings.Cut(r.Props["RouteKey"].(string), " ")
		if !ok {
			tb.Fatalf("route key %q", r.Props["RouteKey"])
		}
		// Target: "integrations/" + Ref(integration).
		target := fmt.Sprint(r.Props["Target"])
		var integ resource
		for _, in := range t.resources("AWS::ApiGatewayV2::Integration") {
			if strings.Contains(target, in.ID) {
				integ = in
			}
		}
		if integ.ID == "" {
			tb.Fatalf("route %s: no integration in target %s", r.Props["RouteKey"], target)
		}
		uri := integ.Props["IntegrationUri"].(map[string]any)["Fn::GetAtt"].([]any)
		out = append(out, deployedRoute{Method: method, Path: path, Function: t.functionName(tb, uri[0].(string)), Resource: r})
	}
	return out
}

// matches reports whether API Gateway route path rp matches the request
// path p, and how specific the match is (greedy matches rank lower, longer
// literal prefixes higher).
func matches(rp, p string) (bool, int) {
	rs, ps := strings.Split(rp, "/"), strings.Split(p, "/")
	for i, seg := range rs {
		if strings.HasSuffix(seg, "+}") {
			return len(ps) > i, i
		}
		if i >= len(ps) {
			return false, 0
		}
		if !strings.HasPrefix(seg, "{") && seg != ps[i] {
			return false, 0
		}
	}
	return len(rs) == len(ps), 1000 + len(rs)
}

// routeFor picks the route API Gateway would use for method and path.
func routeFor(routes []deployedRoute, method, path string) (deployedRoute, bool) {
	best, bestScore, found := deployedRoute{}, -1, false
	for _, r := range routes {
		if r.Method != method && r.Method != "ANY" {
			continue
		}
		if ok, score := matches(r.Path, path); ok && score > bestScore {
			best, bestScore, found = r, score, true
		}
	}
	return best, found
}

// openAPIRoutes lists (method, path) of every httpapi route, from the
// handler's own OpenAPI document.
func openAPIRoutes(t *testing.T) [][2]string {
	t.Helper()
	h := httpapi.New(nil, nil, httpapi.Options{Authorizer: httpapi.AllowAll()})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequestWithContext(context.Background(), http.MethodGet, "/openapi.json", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /openapi.json = %d: %s", rec.Code, rec.Body)
	}
	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	var out [][2]string
	for p, ops := range doc.Paths {
		for m := range ops {
			switch m {
			case "get", "put", "post", "delete", "patch", "head":
				out = append(out, [2]string{strings.ToUpper(m), p})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][1]+out[i][0] < out[j][1]+out[j][0] })
	if len(out) < 10 {
		t.Fatalf("only %d routes in openapi.json", len(out))
	}
	return out
}

// serves reports whether the function named fn answers path (the lock and
// append mains serve only functions.LockRoutes / AppendRoutes).
func serves(fn, path string) bool {
	var prefixes []string
	switch fn {
	case "api":
		return true
	case "lock":
		prefixes = functions.LockRoutes
	case "append":
		prefixes = functions.AppendRoutes
	default:
		return false
	}
	for _, p := range prefixes {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

func concrete(path string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		if strings.HasPrefix(s, "{") {
			segs[i] = "X"
		}
	}
	return strings.Join(segs, "/")
}

func TestEveryHTTPAPIRouteIsDeployedToAFunctionServingIt(t *testing.T) {
	routes := iamStack.routes(t)
	used := map[string]bool{}
	for _, rt := range openAPIRoutes(t) {
		method, path := rt[0], rt[1]
		r, ok := routeFor(routes, method, concrete(path))
		if !ok {
			t.Errorf("%s %s: no API Gateway route", method, path)
			continue
		}
		used[r.Method+" "+r.Path] = true
		if !serves(r.Function, path) {
			t.Errorf("%s %s goes to %s (route %s %s), which does not serve it", method, path, r.Function, r.Method, r.Path)
		}
		// Worker writes must not land on the public function, and locks on
		// the lock function: that is what the split is for.
		if serves("lock", path) && r.Function != "lock" {
			t.Errorf("%s %s goes to %s, want lock", method, path, r.Function)
		}
		if serves("append", path) && r.Function != "append" {
			t.Errorf("%s %s goes to %s, want append", method, path, r.Function)
		}
	}
	for _, r := range routes {
		if !used[r.Method+" "+r.Path] && !isConsoleRoute(r) && !isHealthRoute(r) {
			t.Errorf("route %s %s serves no httpapi route", r.Method, r.Path)
		}
	}
}

// isHealthRoute reports whether r is a health probe (httpapi serves them
// outside its route table and OpenAPI document).
func isHealthRoute(r deployedRoute) bool {
	return r.Method == "GET" && (r.Path == httpapi.HealthzPath || r.Path == httpapi.ReadyzPath)
}

// isConsoleRoute reports whether r is one of consoleRoutes.
func isConsoleRoute(r deployedRoute) bool {
	for _, c := range consoleRoutes {
		if c.Path == r.Path && slices.Contains(c.Methods, r.Method) {
			return true
		}
	}
	return false
}

// The console's routes reach the api function, and the handler answers them
// with the console (a page or a redirect), never with the API.
func TestConsoleRoutesServeTheConsole(t *testing.T) {
	h := httpapi.New(nil, nil, httpapi.Options{}) // fail-closed authorizer: only the console answers
	n := 0
	for _, r := range iamStack.routes(t) {
		if !isConsoleRoute(r) {
			continue
		}
		n++
		if r.Function != "api" {
			t.Errorf("%s %s goes to %s, want api", r.Method, r.Path, r.Function)
		}
		path := strings.ReplaceAll(r.Path, "{proxy+}", "executions/E_01KJ3ZC4Q5W8X7V6T5R4Q3P2N1")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequestWithContext(context.Background(), r.Method, path, nil))
		if (rec.Code != http.StatusOK && rec.Code != http.StatusFound && rec.Code != http.StatusMovedPermanently) ||
			rec.Header().Get("Content-Security-Policy") == "" {
			t.Errorf("%s %s: %d %v, want the console", r.Method, path, rec.Code, rec.Header())
		}
	}
	if n != 3 {
		t.Errorf("%d console routes deployed, want 3", n)
	}
}

func TestEveryRouteRequiresAuthorization(t *testing.T) {
	t.Run("IAMByDefault", func(t *testing.T) {
		routes := iamStack.routes(t)
		if len(routes) != countRouteKeys() {
			t.Errorf("%d routes, want %d", len(routes), countRouteKeys())
		}
		for _, r := range routes {
			if got := r.Resource.Props["AuthorizationType"]; got != "AWS_IAM" {
				t.Errorf("%s %s AuthorizationType = %v, want AWS_IAM", r.Method, r.Path, got)
			}
		}
		if n := len(iamStack.resources("AWS::ApiGatewayV2::Authorizer")); n != 0 {
			t.Errorf("%d authorizers in IAM mode, want 0", n)
		}
	})
	t.Run("JWTThroughContext", func(t *testing.T) {
		auth := jwtStack.one(t, "AWS::ApiGatewayV2::Authorizer")
		want := map[string]any{"Audience": []any{testAudience}, "Issuer": testIssuer}
		if auth.Props["AuthorizerType"] != "JWT" || !jsonEq(auth.Props["JwtConfiguration"], want) {
			t.Fatalf("authorizer = %v", auth.Props)
		}
		routes := jwtStack.routes(t)
		if len(routes) != countRouteKeys() {
			t.Errorf("%d routes, want %d", len(routes), countRouteKeys())
		}
		for _, r := range routes {
			if isConsoleRoute(r) {
				// Static files only (TestConsoleRoutesServeTheConsole): a
				// browser must load them before it has a token.
				if got := r.Resource.Props["AuthorizationType"]; got != "NONE" || r.Resource.Props["AuthorizerId"] != nil {
					t.Errorf("console route %s %s: AuthorizationType=%v, want NONE", r.Method, r.Path, got)
				}
				continue
			}
			if r.Resource.Props["AuthorizationType"] != "JWT" || !refersTo(r.Resource.Props["AuthorizerId"], auth.ID) {
				t.Errorf("%s %s: AuthorizationType=%v AuthorizerId=%v, want JWT with %s", r.Method, r.Path,
					r.Resource.Props["AuthorizationType"], r.Resource.Props["AuthorizerId"], auth.ID)
			}
		}
	})
	t.Run("NoDefaultRouteBypassesTheTable", func(t *testing.T) {
		for _, r := range iamStack.routes(t) {
			if r.Path == "$default" || r.Method == "ANY" {
				t.Errorf("catch-all route %s %s", r.Method, r.Path)
			}
		}
	})
}

func countRouteKeys() int {
	n := 0
	for _, r := range append(slices.Clone(apiRoutes), consoleRoutes...) {
		n += len(r.Methods)
	}
	return n
}

func TestStageIsThrottledAndLogged(t *testing.T) {
	st := iamStack.one(t, "AWS::ApiGatewayV2::Stage")
	if st.Props["StageName"] != "$default" || st.Props["AutoDeploy"] != true {
		t.Fatalf("stage = %v", st.Props)
	}
	drs := st.Props["DefaultRouteSettings"].(map[string]any)
	if drs["ThrottlingRateLimit"] != float64(100) || drs["ThrottlingBurstLimit"] != float64(200) {
		t.Fatalf("DefaultRouteSettings = %v", drs)
	}
	als := st.Props["AccessLogSettings"].(map[string]any)
	if !strings.Contains(fmt.Sprint(als["Format"]), "$context.requestId") || als["DestinationArn"] == nil {
		t.Fatalf("AccessLogSettings = %v", als)
	}
}

// --- IAM ---------------------------------------------------------------------

// statement is one IAM policy statement, normalised.
type statement struct {
	Effect    string
	Actions   []string
	Resources []any
	Condition any
}

// policiesOf returns the statements of every policy attached to role.
func (t tmpl) policiesOf(roleID string) []statement {
	var out []statement
	for _, p := range t.resources("AWS::IAM::Policy") {
		attached := false
		for _, r := range asList(p.Props["Roles"]) {
			attached = attached || refersTo(r, roleID)
		}
		if !attached {
			continue
		}
		for _, s := range asList(p.Props["PolicyDocument"].(map[string]any)["Statement"]) {
			s := s.(map[string]any)
			out = append(out, statement{Effect: fmt.Sprint(s["Effect"]), Actions: strs(s["Action"]),
				Resources: asList(s["Resource"]), Condition: s["Condition"]})
		}
	}
	return out
}

// resourceKind classifies a policy resource of this template: "table",
// "index:<name>", "bucket", "objects", "loggroup:<id>", "queue:<id>", or
// "other:<json>".
func (t tmpl) resourceKind(tb testing.TB, v any) string {
	tb.Helper()
	table := t.one(tb, "AWS::DynamoDB::Table").ID
	bucket := t.one(tb, "AWS::S3::Bucket").ID
	if refersTo(v, table) {
		return "table"
	}
	if refersTo(v, bucket) {
		return "bucket"
	}
	for _, lg := range t.resources("AWS::Logs::LogGroup") {
		if refersTo(v, lg.ID) {
			return "loggroup:" + lg.ID
		}
	}
	for _, q := range t.resources("AWS::SQS::Queue") {
		if refersTo(v, q.ID) {
			return "queue:" + q.ID
		}
	}
	if m, ok := v.(map[string]any); ok {
		if j, ok := m["Fn::Join"].([]any); ok && len(j) == 2 {
			parts := asList(j[1])
			if len(parts) == 2 {
				suffix := fmt.Sprint(parts[1])
				if refersTo(parts[0], table) && strings.HasPrefix(suffix, "/index/") {
					return "index:" + strings.TrimPrefix(suffix, "/index/")
				}
				if refersTo(parts[0], bucket) && suffix == "/"+CasPrefix+"*" {
					return "objects"
				}
			}
		}
	}
	b, _ := json.Marshal(v)
	return "other:" + string(b)
}

// wantData is the complete data access of each function, written out here
// independently of access.go: widening a grant must change this table.
var wantData = map[string]map[string][]string{
	"api": {
		"table": {"dynamodb:BatchGetItem", "dynamodb:ConditionCheckItem", "dynamodb:DeleteItem", "dynamodb:DescribeTable",
			"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"},
		"index:cancelling": {"dynamodb:Query"}, "index:list": {"dynamodb:Query"}, "index:list-id": {"dynamodb:Query"},
		"index:ordinals": {"dynamodb:Query"}, "index:pending-digest": {"dynamodb:Query"}, "index:pending-ffqn": {"dynamodb:Query"},
		"index:timers": {"dynamodb:Query"}, "index:deployments": {"dynamodb:Query"},
		"objects": {"s3:GetObject", "s3:PutObject"}, "bucket": {"s3:ListBucket"},
	},
	"lock": {
		"table": {"dynamodb:BatchGetItem", "dynamodb:ConditionCheckItem", "dynamodb:DeleteItem",
			"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"},
		"index:ordinals": {"dynamodb:Query"}, "index:pending-digest": {"dynamodb:Query"}, "index:pending-ffqn": {"dynamodb:Query"},
		"objects": {"s3:GetObject"}, "bucket": {"s3:ListBucket"},
	},
	"append": {
		"table": {"dynamodb:BatchGetItem", "dynamodb:BatchWriteItem", "dynamodb:ConditionCheckItem", "dynamodb:DeleteItem",
			"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"},
		"index:ordinals": {"dynamodb:Query"},
		"objects":        {"s3:GetObject", "s3:PutObject"}, "bucket": {"s3:ListBucket"},
	},
	"timers": {
		"table": {"dynamodb:BatchGetItem", "dynamodb:ConditionCheckItem", "dynamodb:DeleteItem",
			"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"},
		"index:cancelling": {"dynamodb:Query"}, "index:ordinals": {"dynamodb:Query"}, "index:timers": {"dynamodb:Query"},
		"index:retention": {"dynamodb:Query"}, "index:list-id": {"dynamodb:Query"},
		"objects": {"s3:GetObject"}, "bucket": {"s3:ListBucket"},
	},
	"worker": {
		"table": {"dynamodb:BatchGetItem", "dynamodb:ConditionCheckItem", "dynamodb:DeleteItem",
			"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"},
		"index:ordinals": {"dynamodb:Query"}, "index:pending-ffqn": {"dynamodb:Query"},
		"objects": {"s3:GetObject", "s3:PutObject"}, "bucket": {"s3:ListBucket"},
	},
}

func TestFunctionsHaveLeastPrivilege(t *testing.T) {
	for _, spec := range functionSpecs {
		t.Run(spec.Name, func(t *testing.T) { checkLeastPrivilege(t, iamStack, spec) })
	}
	t.Run(WorkerFunction, func(t *testing.T) { checkLeastPrivilege(t, workerStack, workerSpec) })
	t.Run("NoRoleAnywhereHasManagedFullAccess", func(t *testing.T) {
		for _, r := range append(iamStack.resources("AWS::IAM::Role"), workerStack.resources("AWS::IAM::Role")...) {
			if strings.Contains(fmt.Sprint(r.Props["ManagedPolicyArns"]), "FullAccess") {
				t.Errorf("role %s has %v", r.ID, r.Props["ManagedPolicyArns"])
			}
		}
	})
}

// checkLeastPrivilege checks that the role of spec's function in stack
// grants exactly wantData, its logs and (scheduled functions) its queue.
func checkLeastPrivilege(t *testing.T, stack tmpl, spec functionSpec) {
	checkLeastPrivilegeOf(t, stack, stack.function(t, spec.Name), stack.byPath(t, spec.ID()+"Logs/Resource").ID,
		wantData[spec.Name], spec.Scheduled)
}

// checkLeastPrivilegeOf checks that the role of fn in stack grants exactly
// want, its log group logs and (scheduled functions) its queue.
func checkLeastPrivilegeOf(t *testing.T, stack tmpl, fn resource, logs string, want map[string][]string, scheduled bool) {
	roleID := fn.Props["Role"].(map[string]any)["Fn::GetAtt"].([]any)[0].(string)
	role := stack.get(roleID)
	t.Run("RoleHasNoManagedPolicies", func(t *testing.T) {
		if mp, ok := role.Props["ManagedPolicyArns"]; ok {
			t.Fatalf("ManagedPolicyArns = %v", mp)
		}
		if p, ok := role.Props["Policies"]; ok {
			t.Fatalf("inline Policies = %v", p)
		}
	})
	got := map[string][]string{}
	other := map[string][]string{}
	for _, st := range stack.policiesOf(roleID) {
		if st.Effect != "Allow" {
			continue
		}
		for _, a := range st.Actions {
			if strings.Contains(a, "*") {
				t.Errorf("wildcard action %q", a)
			}
		}
		for _, r := range st.Resources {
			if r == "*" {
				t.Errorf("statement %v has Resource *", st.Actions)
				continue
			}
			kind := stack.resourceKind(t, r)
			for _, a := range st.Actions {
				switch {
				case strings.HasPrefix(a, "dynamodb:"), strings.HasPrefix(a, "s3:"):
					got[kind] = append(got[kind], a)
					if a == "s3:PutObject" && !strings.Contains(fmt.Sprint(st.Condition), "s3:if-none-match:false") {
						t.Errorf("s3:PutObject without the If-None-Match condition: %v", st.Condition)
					}
				default:
					other[kind] = append(other[kind], a)
				}
			}
		}
	}
	for k := range got {
		slices.Sort(got[k])
		got[k] = slices.Compact(got[k])
	}
	t.Run("DataAccessIsExactlyWhatItNeeds", func(t *testing.T) {
		for kind := range mergeKeys(got, want) {
			if extra := without(got[kind], want[kind]); len(extra) > 0 {
				t.Errorf("%s: broader than needed: %v", kind, extra)
			}
			if missing := without(want[kind], got[kind]); len(missing) > 0 {
				t.Errorf("%s: missing: %v", kind, missing)
			}
		}
	})
	t.Run("OtherGrantsAreItsLogsAndDeadLetters", func(t *testing.T) {
		for kind, actions := range other {
			switch {
			case kind == "loggroup:"+logs:
				slices.Sort(actions)
				if !slices.Equal(actions, []string{"logs:CreateLogStream", "logs:PutLogEvents"}) {
					t.Errorf("log group actions %v", actions)
				}
			case strings.HasPrefix(kind, "queue:") && scheduled:
				for _, a := range actions {
					if !strings.HasPrefix(a, "sqs:") || a == "sqs:ReceiveMessage" || a == "sqs:DeleteMessage" || a == "sqs:PurgeQueue" {
						t.Errorf("queue action %s", a)
					}
				}
			default:
				t.Errorf("unexpected grant %v on %s", actions, kind)
			}
		}
	})
}

func mergeKeys(a, b map[string][]string) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// without returns the elements of a that are not in b.
func without(a, b []string) []string {
	var out []string
	for _, e := range a {
		if !slices.Contains(b, e) {
			out = append(out, e)
		}
	}
	return out
}

// --- outputs and packaging ---------------------------------------------------

func TestOutputsNameTheAPIAndTheData(t *testing.T) {
	outs := iamStack["Outputs"].(map[string]any)
	for _, name := range []string{"ApiUrl", "TableName", "BucketName", "TimersDeadLetterQueueUrl"} {
		if _, ok := outs[name]; !ok {
			t.Errorf("no output %s (have %v)", name, outs)
		}
	}
	table := iamStack.one(t, "AWS::DynamoDB::Table")
	if v := outs["TableName"].(map[string]any)["Value"]; !jsonEq(v, ref(table.ID)) {
		t.Errorf("TableName = %v", v)
	}
}

func TestSAMPackagingPointsCodeAtTheBuildDirectory(t *testing.T) {
	for _, spec := range functionSpecs {
		fn := samStack.function(t, spec.Name)
		code, ok := fn.Props["Code"].(string)
		if !ok {
			t.Fatalf("%s Code = %v, want a local path", spec.Name, fn.Props["Code"])
		}
		if got, want := filepath.Clean(filepath.Join(samOutdir, code)), filepath.Join(buildDir, spec.Name); got != want {
			t.Errorf("%s Code resolves to %s, want %s", spec.Name, got, want)
		}
	}
	if rules, _ := samStack["Rules"].(map[string]any); rules["CheckBootstrapVersion"] != nil {
		t.Error("SAM template still checks the CDK bootstrap version")
	}
	if params, _ := iamStack["Parameters"].(map[string]any); params["BootstrapVersion"] == nil {
		t.Error("CDK template lost its BootstrapVersion parameter (expected with the default synthesizer)")
	}
}

// testRetention is the context retention of the SAM template.
const testRetention = "7d"

// Every function gets the retention: 30 days by default, the context's
// value when given (they all record finishes; the timers function expires).
func TestRetentionReachesEveryFunction(t *testing.T) {
	for _, spec := range functionSpecs {
		env := func(tp tmpl) map[string]any {
			return tp.function(t, spec.Name).Props["Environment"].(map[string]any)["Variables"].(map[string]any)
		}
		if v := env(iamStack)[EnvRetention]; v != "30d" {
			t.Errorf("%s: %s=%v, want the default 30d", spec.Name, EnvRetention, v)
		}
		if v := env(samStack)[EnvRetention]; v != testRetention {
			t.Errorf("%s: with context %s, %s=%v, want %s", spec.Name, CtxRetention, EnvRetention, v, testRetention)
		}
	}
	env := workerStack.function(t, WorkerFunction).Props["Environment"].(map[string]any)["Variables"].(map[string]any)
	if v := env[EnvRetention]; v != "30d" {
		t.Errorf("%s: %s=%v, want the default 30d", WorkerFunction, EnvRetention, v)
	}
}

func TestLocalEndpointIsOnlyInLocalTemplates(t *testing.T) {
	for _, spec := range functionSpecs {
		env := func(tp tmpl) map[string]any {
			return tp.function(t, spec.Name).Props["Environment"].(map[string]any)["Variables"].(map[string]any)
		}
		if v, ok := env(iamStack)["AWS_ENDPOINT_URL"]; ok {
			t.Errorf("%s: deployable template sets AWS_ENDPOINT_URL=%v", spec.Name, v)
		}
		if v := env(samStack)["AWS_ENDPOINT_URL"]; v != testLocalEndpoint {
			t.Errorf("%s: with context %s, AWS_ENDPOINT_URL=%v, want %s", spec.Name, CtxLocalEndpoint, v, testLocalEndpoint)
		}
	}
}

// --- worker (optional) -------------------------------------------------------

func TestWorkerFunctionIsOptional(t *testing.T) {
	if _, ok := iamStack["Resources"].(map[string]any)[functionID(WorkerFunction)]; ok || len(iamStack.resources("AWS::Events::Rule")) != 1 {
		t.Fatal("the default stack must not deploy the worker")
	}
	fn := workerStack.function(t, WorkerFunction)
	want := map[string]any{"Runtime": "provided.al2023", "Handler": "bootstrap", "Timeout": float64(WorkerFunctionTimeoutSeconds),
		"ReservedConcurrentExecutions": float64(WorkerReservedConcurrency)}
	for k, v := range want {
		if !jsonEq(fn.Props[k], v) {
			t.Errorf("%s = %v, want %v", k, fn.Props[k], v)
		}
	}
	if !jsonEq(fn.Props["Architectures"], []any{"arm64"}) {
		t.Errorf("Architectures = %v", fn.Props["Architectures"])
	}
	env := fn.Props["Environment"].(map[string]any)["Variables"].(map[string]any)
	if _, ok := env[EnvTable]; !ok {
		t.Errorf("no %s in %v", EnvTable, env)
	}
	if _, ok := env[EnvFollowWait]; ok {
		t.Errorf("the worker serves no long polls: %v", env)
	}
}

func TestWorkerRunsEveryMinuteAndOnDemand(t *testing.T) {
	fn := workerStack.function(t, WorkerFunction)
	dlq := workerStack.byPath(t, "WorkerDeadLetters/Resource")
	var rule resource
	for _, r := range workerStack.resources("AWS::Events::Rule") {
		if tg := asList(r.Props["Targets"]); len(tg) == 1 && refersTo(tg[0].(map[string]any)["Arn"], fn.ID) {
			rule = r
		}
	}
	if rule.ID == "" {
		t.Fatal("no schedule targets the worker")
	}
	if rule.Props["ScheduleExpression"] != "rate(1 minute)" {
		t.Errorf("ScheduleExpression = %v", rule.Props["ScheduleExpression"])
	}
	tg := asList(rule.Props["Targets"])[0].(map[string]any)
	if !refersTo(tg["DeadLetterConfig"].(map[string]any)["Arn"], dlq.ID) {
		t.Errorf("DeadLetterConfig = %v, want the worker's queue", tg["DeadLetterConfig"])
	}
	found := false
	for _, cfg := range workerStack.resources("AWS::Lambda::EventInvokeConfig") {
		if refersTo(cfg.Props["FunctionName"], fn.ID) {
			found = true
			onFailure := cfg.Props["DestinationConfig"].(map[string]any)["OnFailure"].(map[string]any)
			if !refersTo(onFailure["Destination"], dlq.ID) {
				t.Errorf("OnFailure = %v, want the worker's queue", onFailure)
			}
		}
	}
	if !found {
		t.Error("no EventInvokeConfig for the worker")
	}
	policy := workerStack.byPath(t, "WorkerInvokePolicy/Resource")
	doc := policy.Props["PolicyDocument"].(map[string]any)
	stmts := asList(doc["Statement"])
	if len(stmts) != 1 {
		t.Fatalf("invoke policy statements %v", stmts)
	}
	st := stmts[0].(map[string]any)
	if !jsonEq(st["Action"], "lambda:InvokeFunction") || !refersTo(st["Resource"], fn.ID) {
		t.Errorf("invoke policy = %v, want lambda:InvokeFunction on the worker only", st)
	}
	outs := workerStack["Outputs"].(map[string]any)
	for _, name := range []string{"WorkerFunctionName", "WorkerInvokePolicyArn", "WorkerDeadLetterQueueUrl"} {
		if _, ok := outs[name]; !ok {
			t.Errorf("no output %s", name)
		}
	}
}
