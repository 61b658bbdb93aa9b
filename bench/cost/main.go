// Command stela-bench-cost runs standard workloads against DynamoDB (the
// endpoint of AWS_ENDPOINT_URL_DYNAMODB, e.g. DynamoDB Local) through
// store.Service with a capacity meter, and prints, per step kind, the
// DynamoDB requests, read and write units, index entries, cancelled
// transactions and failed conditions, and the price of a million steps,
// transitions, activities and workflows at on-demand list prices — for the
// layout of the environment or for every layout (-layouts all).
//
//	eval "$(scripts/ci/start-dynamodb-local.sh)"
//	go run ./bench/cost                  # the layout of the environment (default: default)
//	go run ./bench/cost -layouts all     # default, each opt-out, lean
//	go run ./bench/cost -fanout 100 -workflows 0 -activities 0   # the fan-in contention figure
//	go run ./bench/cost -eager           # the workflows' children created locked (eager dispatch)
//	go run ./bench/cost -sleeps 100 -workflows 0 -activities 0   # a sleep fired with the next write, or in two requests
//	go run ./bench/cost -eager-start     # also activities created locked by their worker (eager start)
//	go run ./bench/cost -eager-start -start-batch 1   # … one create-locked request each (default 8)
//
// The table layout comes from the same environment variables as the Lambda
// functions, read by the same code (functions/app.LoadConfig and
// Config.DynamoOptions): STELA_SHARDS, STELA_INLINE_THRESHOLD,
// STELA_DIGEST_INDEX, STELA_DEPLOYMENT_COUNTS (-layouts all overrides the
// last two), and the retention from STELA_RETENTION (default 30 days;
// "forever" measures without it). The bench always measures on fresh tables
// of its own (STELA_TABLE is ignored) and deletes them afterwards.
//
// With a retention, the activity and workflow workloads are each followed
// by retention passes (what the timers function does every minute, here
// without the marking lag) until every finished tree is marked with its
// expiry; their units are reported per tree, apart from the steps (the
// timers function runs anyway, so its duration is not a cost per step).
//
// Write units are billed by dynamometer.CapacityMeter from the item images, as
// AWS bills them (dynamo/doc.go, "Cost"); read units as the endpoint
// reports them. Capacity units are deterministic for a layout, except the
// cancelled share of the workflows run by -parallel clients (how they
// interleave); ms/step (and so the Lambda-duration part of the price) is
// wall time on the machine running the bench and DynamoDB Local.
//
// Workloads: N activities (create → lock in batches of 10 → finish), with
// -eager-start N more as a worker submitting them runs them (create-locked
// through the worker route, -start-batch at a time → finish), M
// workflows, each submitting 10 child activities and a delay (create, lock,
// submit children, await, children lock+finish responding to the parent,
// relock, await the delay, the timer sweep fires it, relock, finish), and
// -fanouts workflows fanning out to -fanout children that all finish at the
// same moment (one goroutine each, released together). A step is one store
// API call; a request is what the front door bills (one HTTP request, or one
// scheduled invocation of the timers function for a whole sweep).
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/dynamo"
	"github.com/stela-dev/stela/dynamo/dynamoenv"
	"github.com/stela-dev/stela/dynamo/dynamometer"
	"github.com/stela-dev/stela/functions/app"
	"github.com/stela-dev/stela/store"
)

// List prices (us-east-1, on-demand).
const (
	pricePerMWRU      = 0.625        // DynamoDB on-demand write request units
	pricePerMRRU      = 0.125        // DynamoDB on-demand read request units
	pricePerMLambda   = 0.20         // Lambda requests (also a function URL's and a scheduled invocation's)
	pricePerGBs       = 0.0000133334 // Lambda duration, arm64
	pricePerMHTTPCall = 1.00         // API Gateway HTTP API, first 300 M requests a month
)

func main() {
	if _, err := run(context.Background(), os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "stela-bench-cost:", err)
		os.Exit(1)
	}
}

// config is what the flags set.
type config struct {
	activities, workflows, children int
	fanout, fanouts                 int
	sleeps                          int
	parallel                        int
	contended                       bool
	batch                           int     // executions a worker finishes per request (batch routes)
	lambdaMB                        float64 // memory of the priced functions
	workerDoor                      door    // how worker requests are priced
	// txIndexTwice prices the index writes of committed transactions
	// twice (the reports show both assumptions; this selects the one the
	// per-step tables use).
	txIndexTwice bool
	// eager creates the workflows' children locked to the worker that
	// submits them (eager dispatch, core.EagerLock): no child lock step.
	eager bool
	// eagerStart adds the eager-start activity workload: activities
	// created locked to their worker (store.Service.CreateLocked), shown
	// beside the activity workload.
	eagerStart bool
	// startBatch is the number of eager-start activities created by one
	// create-locked request (1: one each, CreateLocked).
	startBatch int
}

// door is how a step's requests reach a function, which decides their price.
type door uint8

const (
	doorAPIGateway  door = iota + 1 // HTTP API + Lambda request
	doorFunctionURL                 // Lambda request only (function URL with IAM auth)
	doorSweep                       // inside the scheduled sweep's invocation: no request of its own
)

// priced is a step's request class: public routes always go through API
// Gateway; worker routes through the configured door.
type priced uint8

const (
	public priced = iota + 1
	worker
	batchable // a worker route that finishes many executions per request with -batch
	sweeping  // the scheduled sweep: one invocation, then steps inside it
	inSweep
)

// requestPrice is the front door's price of one million requests of class
// p, and how many requests one step of it is.
func (c config) requestPrice(p priced) (perM, perStep float64) {
	workerPrice := pricePerMLambda
	if c.workerDoor == doorAPIGateway {
		workerPrice += pricePerMHTTPCall
	}
	switch p {
	case public:
		return pricePerMLambda + pricePerMHTTPCall, 1
	case worker:
		return workerPrice, 1
	case batchable:
		return workerPrice, 1 / float64(max(c.batch, 1))
	case sweeping:
		return pricePerMLambda, 1
	}
	return 0, 0
}

// durationPrice is the Lambda duration price of a million steps of ms each.
func (c config) durationPrice(ms float64) float64 {
	billed := max(ms, 1) // billed per started millisecond
	return billed / 1000 * c.lambdaMB / 1024 * pricePerGBs * 1e6
}

// layoutSpec is one index layout to measure.
type layoutSpec struct {
	name           string
	digest, counts *bool // nil: from the environment
}

func parseLayouts(s string) ([]layoutSpec, error) {
	on, off := true, false
	known := map[string]layoutSpec{
		"default":   {"default", &on, &on},
		"no-digest": {"no-digest-index", &off, &on},
		"no-counts": {"no-deployment-counts", &on, &off},
		"lean":      {"lean", &off, &off},
		"env":       {"env", nil, nil},
	}
	if s == "all" {
		s = "default,no-digest,no-counts,lean"
	}
	var out []layoutSpec
	for _, name := range strings.Split(s, ",") {
		l, ok := known[strings.TrimSpace(name)]
		if !ok {
			return nil, fmt.Errorf("unknown layout %q (want env, all or a list of default, no-digest, no-counts, lean)", name)
		}
		out = append(out, l)
	}
	return out, nil
}

type bench struct {
	cfg   config
	svc   *store.Service
	b     *dynamo.Backend
	meter *dynamometer.CapacityMeter
	mu    sync.Mutex
	steps map[string]*stepStat
	// eagerKids are the children the workflows' submits locked (-eager).
	eagerKids []core.LockedExecution
}

// stepStat is what one step kind did.
type stepStat struct {
	n           int     // store calls
	requests    float64 // front-door requests (a batch route's share)
	transitions int
	class       priced
	dur         time.Duration
}

// step runs one store call under label, metering it: class prices its
// request, transitions counts the state transitions it makes (events
// appended, executions created or locked, responses recorded).
func (bn *bench) step(ctx context.Context, label string, class priced, transitions int, fn func(ctx context.Context) error) error {
	start := time.Now()
	err := fn(dynamometer.WithMeterLabel(ctx, label))
	d := time.Since(start)
	_, perStep := bn.cfg.requestPrice(class)
	bn.mu.Lock()
	s := bn.steps[label]
	if s == nil {
		s = &stepStat{class: class}
		bn.steps[label] = s
	}
	s.n++
	s.requests += perStep
	s.transitions += transitions
	s.dur += d
	bn.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%s: %w", label, err)
	}
	return nil
}

// addTransitions counts n more transitions for label (a lock learns how many
// executions it locked after the call).
func (bn *bench) addTransitions(label string, n int) {
	bn.mu.Lock()
	defer bn.mu.Unlock()
	if s := bn.steps[label]; s != nil {
		s.transitions += n
	}
}

func (bn *bench) takeSteps() map[string]stepStat {
	bn.mu.Lock()
	defer bn.mu.Unlock()
	out := map[string]stepStat{}
	for k, v := range bn.steps {
		out[k] = *v
	}
	bn.steps = map[string]*stepStat{}
	return out
}

// options returns the backend options and the retention the functions
// would use with this environment, on table instead of STELA_TABLE.
func options(getenv func(string) string, table string) (dynamo.Options, core.Retention, error) {
	cfg, err := app.LoadConfig(func(k string) string {
		if k == app.EnvTable {
			return table
		}
		return getenv(k)
	})
	if err != nil {
		return dynamo.Options{}, core.Retention{}, err
	}
	return cfg.DynamoOptions(), cfg.Retention, nil
}

// layout describes the index layout of o for the report.
func layout(o dynamo.Options) string {
	name := "default"
	switch {
	case o.DisableDigestIndex && o.DisableDeploymentCounts:
		name = "lean"
	case o.DisableDigestIndex:
		name = "no-digest-index"
	case o.DisableDeploymentCounts:
		name = "no-deployment-counts"
	}
	onOff := func(disabled bool) string {
		if disabled {
			return "off"
		}
		return "on"
	}
	shards := o.Shards
	if shards == 0 {
		shards = dynamo.DefaultShards
	}
	return fmt.Sprintf("%s (pending-digest index %s [%s], deployment-counts index %s [%s], shards %d [%s])", name,
		onOff(o.DisableDigestIndex), app.EnvDigestIndex, onOff(o.DisableDeploymentCounts), app.EnvDeploymentCounts,
		shards, app.EnvShards)
}

// result is what one layout measured.
type result struct {
	Layout     string
	Activities workload
	// EagerStart is the eager-start activity workload (-eager-start).
	EagerStart workload
	Workflows  workload
	Fanout     workload
	// Sleeps and SleepsTwoStep are the sleep workload (-sleeps): the
	// delay fired with the next write (fire-and-continue), and fired, then
	// the write, in two requests.
	Sleeps, SleepsTwoStep workload
	// ActivityRetention and WorkflowRetention are the retention passes
	// after each workload.
	ActivityRetention, EagerStartRetention, WorkflowRetention retentionUsage
	// Retention is the retention in force.
	Retention core.Retention
}

// retentionUsage is what the retention passes after a workload used.
type retentionUsage struct {
	Usage dynamometer.Usage
	Trees int // trees marked
	Items int // items marked
}

// workload is the usage and step statistics of one workload.
type workload struct {
	Usage map[string]dynamometer.Usage
	Steps map[string]stepStat
	// Units is the number of activities or workflows it ran.
	Units int
	// Retries is the number of times the backend ran a transaction's fn
	// again after losing to a concurrent commit.
	Retries int64
}

// run measures the workloads for each layout of -layouts and writes the
// report to out; it returns the results, one per layout.
func run(ctx context.Context, args []string, getenv func(string) string, out io.Writer) ([]*result, error) {
	fs := flag.NewFlagSet("stela-bench-cost", flag.ContinueOnError)
	var c config
	fs.IntVar(&c.activities, "activities", 1000, "activities in the activity workload")
	fs.IntVar(&c.workflows, "workflows", 100, "workflows in the workflow workload")
	fs.IntVar(&c.children, "children", 10, "child activities per workflow")
	fs.IntVar(&c.fanout, "fanout", 0, "children per workflow of the fan-out workload, all finishing at once (0: no fan-out workload)")
	fs.IntVar(&c.fanouts, "fanouts", 3, "workflows of the fan-out workload (one after the other)")
	fs.IntVar(&c.sleeps, "sleeps", 0, "workflows of the sleep workload, run twice: each sleeps once (awaited in memory) and finishes at the expiry, its worker firing the delay with the Finished write in one commit (fire-and-continue), then firing it and writing Finished in two requests (0: no sleep workload)")
	fs.IntVar(&c.parallel, "parallel", 8, "concurrent clients")
	fs.BoolVar(&c.eager, "eager", false, "the workflows' children are created locked to their worker (eager dispatch): no child lock step")
	fs.BoolVar(&c.eagerStart, "eager-start", false, "also run -activities activities created locked to their worker through the worker's create-locked route (eager start): no pending entries, no lock step")
	fs.IntVar(&c.startBatch, "start-batch", 8, "eager-start activities created by one create-locked request, each in its own commit under one lock (a worker's concurrent submissions; 1: one request each)")
	fs.BoolVar(&c.contended, "contended-locks", false, "lock with -parallel concurrent lockers (they race for the same candidates) instead of one")
	fs.IntVar(&c.batch, "batch", 1, "executions a worker finishes per request (the batch worker routes); prices requests only")
	fs.Float64Var(&c.lambdaMB, "lambda-mb", 128, "memory of the priced functions (MB, arm64)")
	front := fs.String("worker-door", "url", "how worker requests are priced: url (Lambda function URL, IAM auth) or apigw (API Gateway HTTP API)")
	layouts := fs.String("layouts", "env", "layouts to measure: env (the environment's), all, or a list of default, no-digest, no-counts, lean")
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintln(out, "usage: stela-bench-cost [flags]; the layout comes from STELA_SHARDS, STELA_INLINE_THRESHOLD, STELA_DIGEST_INDEX, STELA_DEPLOYMENT_COUNTS unless -layouts names them")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch *front {
	case "url":
		c.workerDoor = doorFunctionURL
	case "apigw":
		c.workerDoor = doorAPIGateway
	default:
		return nil, fmt.Errorf("-worker-door %q: want url or apigw", *front)
	}
	specs, err := parseLayouts(*layouts)
	if err != nil {
		return nil, err
	}
	if getenv("AWS_ENDPOINT_URL_DYNAMODB") == "" && getenv("AWS_ENDPOINT_URL") == "" {
		return nil, fmt.Errorf(`no DynamoDB endpoint: run eval "$(scripts/ci/start-dynamodb-local.sh)" first`)
	}
	printAssumptions(out, c)
	var results []*result
	for _, spec := range specs {
		res, err := c.measure(ctx, spec, getenv)
		if err != nil {
			return results, err
		}
		results = append(results, res)
		c.report(out, res)
	}
	if len(results) > 1 {
		c.summary(out, results)
	}
	return results, nil
}

// measure runs every workload on a fresh table with spec's layout.
func (c config) measure(ctx context.Context, spec layoutSpec, getenv func(string) string) (*result, error) {
	var buf [4]byte
	_, _ = rand.Read(buf[:])
	table := "stela-bench-" + hex.EncodeToString(buf[:])
	env := func(k string) string {
		switch {
		case k == app.EnvDigestIndex && spec.digest != nil:
			return map[bool]string{true: "on", false: "off"}[*spec.digest]
		case k == app.EnvDeploymentCounts && spec.counts != nil:
			return map[bool]string{true: "on", false: "off"}[*spec.counts]
		}
		return getenv(k)
	}
	opts, retention, err := options(env, table)
	if err != nil {
		return nil, err
	}
	opts.RetentionLag = time.Nanosecond // mark what finished at once (the functions wait 15 minutes)
	meter := dynamometer.NewCapacityMeter()
	client, err := dynamoenv.NewClient(ctx, meter.Register)
	if err != nil {
		return nil, err
	}
	if err := dynamo.CreateTable(ctx, client, table); err != nil {
		return nil, err
	}
	defer func() {
		_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	}()
	opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	b, err := dynamo.New(client, opts)
	if err != nil {
		return nil, err
	}
	bn := &bench{cfg: c, svc: store.New(b, store.Options{Logger: slog.New(slog.DiscardHandler), Retention: retention}), b: b, meter: meter,
		steps: map[string]*stepStat{}}
	res := &result{Layout: layout(opts), Retention: retention}
	t0 := core.TS(time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC))
	collect := func(units int, fn func() error) (workload, error) {
		meter.Reset()
		before := b.Stats().Retries
		if err := fn(); err != nil {
			return workload{}, err
		}
		return workload{Usage: meter.Snapshot(), Steps: bn.takeSteps(), Units: units, Retries: b.Stats().Retries - before}, nil
	}
	if c.activities > 0 {
		if res.Activities, err = collect(c.activities, func() error { return bn.activities(ctx, t0, c.activities) }); err != nil {
			return nil, err
		}
		meter.Reset()
		if res.ActivityRetention, err = bn.retain(ctx); err != nil {
			return nil, err
		}
	}
	if c.activities > 0 && c.eagerStart {
		if res.EagerStart, err = collect(c.activities, func() error { return bn.eagerStartActivities(ctx, t0, c.activities) }); err != nil {
			return nil, err
		}
		meter.Reset()
		if res.EagerStartRetention, err = bn.retain(ctx); err != nil {
			return nil, err
		}
	}
	if c.workflows > 0 {
		if res.Workflows, err = collect(c.workflows, func() error { return bn.workflows(ctx, t0, c.workflows, c.children) }); err != nil {
			return nil, err
		}
		meter.Reset()
		if res.WorkflowRetention, err = bn.retain(ctx); err != nil {
			return nil, err
		}
	}
	if c.sleeps > 0 {
		if res.Sleeps, err = collect(c.sleeps, func() error { return bn.sleeps(ctx, t0, 200000, c.sleeps, true) }); err != nil {
			return nil, err
		}
		if res.SleepsTwoStep, err = collect(c.sleeps, func() error { return bn.sleeps(ctx, t0, 300000, c.sleeps, false) }); err != nil {
			return nil, err
		}
	}
	if c.fanout > 0 {
		if res.Fanout, err = collect(c.fanouts, func() error { return bn.fanouts(ctx, t0, c.fanouts, c.fanout) }); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func printAssumptions(out io.Writer, c config) {
	door := "Lambda function URLs with IAM auth (no per-request API Gateway charge)"
	if c.workerDoor == doorAPIGateway {
		door = "API Gateway HTTP API, like the public routes"
	}
	fmt.Fprintf(out, `Assumptions (list prices, us-east-1, on-demand):
  DynamoDB: $%.3f per million WRU, $%.3f per million RRU. Write units billed by dynamometer.CapacityMeter from item
    images by AWS's rules (dynamo/doc.go, "Cost"): 1 WRU/KB single-item, 2 WRU/KB per transactional action
    (ConditionCheck included), every secondary-index entry that appears, goes or moves billed, cancelled
    transactions billed as if committed (an upper bound) and failed single-item conditions 1 WRU/KB; reads as
    DynamoDB Local reports them.
  Front door: public routes (submitting a top-level execution) through API Gateway HTTP API ($%.2f per million)
    + Lambda ($%.2f per million requests); worker routes through %s;
    the timer sweep is one scheduled invocation ($%.2f per million) for all the timers it fires.
  Lambda duration: %.0f MB arm64 at $%.10f per GB-s, billed per started ms of the step's wall time here
    (in-process store call on this machine against DynamoDB Local: timing-dependent, unlike capacity units).
  Worker batch routes: %d execution(s) finished per request (-batch; the DynamoDB work is the same).
  A transition is a state change the log records: an execution created or locked, an event appended, a
  response recorded (an activity is 3: create, lock, finish; created locked, its create-locked is 2).
`, pricePerMWRU, pricePerMRRU, pricePerMHTTPCall, pricePerMLambda, door, pricePerMLambda, c.lambdaMB, pricePerGBs, c.batch)
}

// retain runs retention passes until no finished tree is left unmarked
// (none with retention forever) and returns what they used.
func (bn *bench) retain(ctx context.Context) (retentionUsage, error) {
	var ru retentionUsage
	ctx = dynamometer.WithMeterLabel(ctx, retentionLabel)
	for {
		res, err := bn.svc.ApplyRetention(ctx, core.TS(time.Now()))
		if err != nil {
			return ru, err
		}
		ru.Trees += res.Expired
		ru.Items += res.Items
		if res.Trees == 0 {
			break
		}
	}
	ru.Usage = bn.meter.Snapshot()[retentionLabel]
	return ru, nil
}

const retentionLabel = "retention: mark"
