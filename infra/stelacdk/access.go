package stelacdk

import (
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/jsii-runtime-go"

	"github.com/stela-dev/stela/dynamo"
)

// dataAccess is what one function may do to the table and the CAS bucket
// (docs/spec/reliability.md §4.2): explicit actions, never wildcards, never "*" resources.
type dataAccess struct {
	// TableActions are granted on the table ARN. TransactWriteItems needs no
	// action of its own: each of its Put/Update/Delete/ConditionCheck parts
	// is authorized as PutItem/UpdateItem/DeleteItem/ConditionCheckItem.
	TableActions []string
	// QueryIndexes get dynamodb:Query on <table ARN>/index/<name>.
	QueryIndexes []string
	// CasRead grants s3:GetObject (GetObject and HeadObject) on the objects
	// under CasPrefix and s3:ListBucket on the bucket; without ListBucket S3
	// answers a missing key with 403 instead of 404, which the CAS would
	// report as an error instead of core.ErrNotFound.
	CasRead bool
	// CasWrite grants s3:PutObject, only with an If-None-Match header: the
	// CAS never overwrites (put-if-absent, docs/spec/reliability.md §4.3).
	CasWrite bool
}

// DynamoDB action sets. The dynamo backend calls GetItem, BatchGetItem,
// Query, PutItem, UpdateItem, DeleteItem, BatchWriteItem and
// TransactWriteItems (dynamo/backend.go, interface api). Every function that
// writes executions may also finish a deferred child creation (dynamo's
// outbox: Get/Put/Update/DeleteItem), so all of them get the item writes.
// BatchWriteItem is used only by AppendLogs (POST /v1/worker/logs), which
// only the append function serves.
var (
	itemReads  = []string{"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query"}
	itemWrites = []string{"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:ConditionCheckItem"}
	batchWrite = []string{"dynamodb:BatchWriteItem"}
	// describeTable backs GET /readyz (the table and its indexes ACTIVE),
	// which only the api function serves.
	describeTable = []string{"dynamodb:DescribeTable"}
)

func concat(sets ...[]string) []string {
	var out []string
	for _, s := range sets {
		out = append(out, s...)
	}
	return out
}

// allIndexes are every index but the retention one, which only the timers
// function's retention passes read.
func allIndexes() []string {
	var out []string
	for _, ix := range dynamo.Schema.GlobalIndexes {
		if ix.Name != dynamo.IndexRetention {
			out = append(out, ix.Name)
		}
	}
	for _, ix := range dynamo.Schema.LocalIndexes {
		out = append(out, ix.Name)
	}
	return out
}

// functionSpec describes one Lambda function built from functions/<Name>.
type functionSpec struct {
	Name                string
	Description         string
	MemoryMB            float64
	TimeoutSeconds      float64
	ReservedConcurrency float64 // 0: unreserved
	Scheduled           bool    // invoked asynchronously by the schedule
	Access              dataAccess
}

// Package is the Go package of the function's main.
func (f functionSpec) Package() string {
	if f.Name == WorkerFunction {
		return "github.com/stela-dev/stela/examples/lambda-worker"
	}
	return "github.com/stela-dev/stela/functions/" + f.Name
}

// ID is the construct id of the function ("ApiFunction").
func (f functionSpec) ID() string { return functionID(f.Name) }

func functionID(name string) string { return strings.ToUpper(name[:1]) + name[1:] + "Function" }

// functionSpecs are the four functions every stack deploys
// (functions/<name>/main.go); workerSpec is the optional fifth.
//
//   - api serves the public routes plus the worker routes not split off
//     below (worker reads, expired-timers, cancelling, sweep), so it may use
//     every index; it never appends log rows (no BatchWriteItem).
//   - lock serves /v1/worker/lock/*: the pending indexes, plus ordinals
//     (join-set reads inside commits). It writes no blobs.
//   - append serves the worker writes (functions.AppendRoutes): appends,
//     children, responses, logs, backtraces; large payloads go to the CAS.
//   - timers runs the sweep, the cancellation driver and the retention
//     passes: the timers and cancelling indexes, the retention index and
//     list-id (a finished tree's derived executions). It writes no blobs.
//
// Every function records finishes for retention (an index attribute on the
// head, no extra action); the writers of logs and backtraces read a head
// after writing (GetItem) and may mark what they wrote (UpdateItem).
var functionSpecs = []functionSpec{
	{
		Name: "api", Description: "Stela HTTP API (public routes and worker reads)",
		MemoryMB: 256, TimeoutSeconds: HTTPFunctionTimeoutSeconds,
		Access: dataAccess{
			TableActions: concat(itemReads, itemWrites, describeTable),
			QueryIndexes: allIndexes(),
			CasRead:      true, CasWrite: true,
		},
	},
	{
		Name: "lock", Description: "Stela worker lock routes",
		MemoryMB: 256, TimeoutSeconds: HTTPFunctionTimeoutSeconds,
		Access: dataAccess{
			TableActions: concat(itemReads, itemWrites),
			QueryIndexes: []string{dynamo.IndexPendingFFQN, dynamo.IndexPendingDigest, dynamo.IndexOrdinals},
			CasRead:      true,
		},
	},
	{
		Name: "append", Description: "Stela worker append routes",
		MemoryMB: 256, TimeoutSeconds: HTTPFunctionTimeoutSeconds,
		Access: dataAccess{
			TableActions: concat(itemReads, itemWrites, batchWrite),
			QueryIndexes: []string{dynamo.IndexOrdinals},
			CasRead:      true, CasWrite: true,
		},
	},
	{
		Name: "timers", Description: "Stela timer sweep and cancellation driver (scheduled)",
		MemoryMB: 256, TimeoutSeconds: TimersFunctionTimeoutSeconds,
		ReservedConcurrency: TimersReservedConcurrency, Scheduled: true,
		Access: dataAccess{
			TableActions: concat(itemReads, itemWrites),
			QueryIndexes: []string{dynamo.IndexTimers, dynamo.IndexCancelling, dynamo.IndexOrdinals,
				dynamo.IndexRetention, dynamo.IndexListByID},
			CasRead: true,
		},
	},
}

// workerSpec is the optional worker function (context worker=true): it runs
// worker passes (workerpass.Pass) over the functions registered in
// examples/lambda-worker/main.go, calling the store directly, as timers does,
// rather than the HTTP API: no API Gateway hop or SigV4 signing per call,
// and the same data permissions as a worker route function — lock (the
// pending-ffqn index), append (ordinals for join-set reads in commits),
// children, responses and cancellations (item writes), large payloads in the
// CAS (read and put-if-absent). It needs no other index (no listing, no
// timers or cancelling scans, no lock by digest) and no BatchWriteItem (it
// writes no log rows).
var workerSpec = functionSpec{
	Name: WorkerFunction, Description: "Stela worker passes (scheduled and on demand)",
	MemoryMB: 512, TimeoutSeconds: WorkerFunctionTimeoutSeconds,
	ReservedConcurrency: WorkerReservedConcurrency, Scheduled: true,
	Access: dataAccess{
		TableActions: concat(itemReads, itemWrites),
		QueryIndexes: []string{dynamo.IndexPendingFFQN, dynamo.IndexOrdinals},
		CasRead:      true, CasWrite: true,
	},
}

// grantData adds a's statements to role's default policy.
func grantData(role awsiam.Role, a dataAccess, table awsdynamodb.Table, bucket awss3.Bucket) {
	if len(a.TableActions) > 0 {
		role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("TableItems"),
			Actions:   jsii.Strings(a.TableActions...),
			Resources: jsii.Strings(*table.TableArn()),
		}))
	}
	if len(a.QueryIndexes) > 0 {
		arns := make([]string, len(a.QueryIndexes))
		for i, ix := range a.QueryIndexes {
			arns[i] = *table.TableArn() + "/index/" + ix
		}
		role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("TableIndexQueries"),
			Actions:   jsii.Strings("dynamodb:Query"),
			Resources: jsii.Strings(arns...),
		}))
	}
	objects := *bucket.ArnForObjects(jsii.String(CasPrefix + "*"))
	if a.CasRead {
		role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("CasRead"),
			Actions:   jsii.Strings("s3:GetObject"),
			Resources: jsii.Strings(objects),
		}))
		role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("CasList"),
			Actions:   jsii.Strings("s3:ListBucket"),
			Resources: jsii.Strings(*bucket.BucketArn()),
		}))
	}
	if a.CasWrite {
		role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("CasPutIfAbsent"),
			Actions:   jsii.Strings("s3:PutObject"),
			Resources: jsii.Strings(objects),
			Conditions: &map[string]any{
				"Null": map[string]any{"s3:if-none-match": "false"},
			},
		}))
	}
}
