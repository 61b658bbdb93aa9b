// Command stela-bench-cost runs the standard workload against DynamoDB (the
// endpoint of AWS_ENDPOINT_URL_DYNAMODB, e.g. DynamoDB Local) through
// store.Service with a capacity meter, and prints read/write request units
// per operation and per step with their price at on-demand list prices.
//
//	eval "$(scripts/ci/start-dynamodb-local.sh)"
//	go run ./cmd/stela-bench-cost                                              # default layout
//	STELA_DIGEST_INDEX=off STELA_DEPLOYMENT_COUNTS=off go run ./cmd/stela-bench-cost  # lean layout
//
// The table layout comes from the same environment variables as the Lambda
// functions, read by the same code (functions/app.LoadConfig and
// Config.DynamoOptions): STELA_SHARDS, STELA_INLINE_THRESHOLD,
// STELA_DIGEST_INDEX, STELA_DEPLOYMENT_COUNTS, and the retention from
// STELA_RETENTION (default 30 days; "forever" measures without it). The
// bench always measures on a fresh table of its own (STELA_TABLE is
// ignored) and deletes it afterwards; it prints the layout in force.
//
// With a retention, each workload is followed by retention passes (what
// the timers function does every minute, here without the marking lag)
// until every finished tree is marked with its expiry; their units are
// reported per tree, apart from the steps (the timers function runs
// anyway, so its duration is not a cost per step).
//
// Write units are billed by dynamo.CapacityMeter from the item images, as
// AWS bills them (dynamo/doc.go, "Cost"); read units as the endpoint
// reports them. Capacity units are deterministic for a layout, except the
// cancelled-transaction share, which depends on how the -parallel clients
// interleave; ms/step (and so the Lambda-duration part of the price) is
// wall time on the machine running the bench and DynamoDB Local.
//
// Workloads: N activities (create → lock in batches of 10 → finish) and M
// workflows, each submitting 10 child activities and a delay (create, lock,
// submit children, await, children lock+finish responding to the parent,
// relock, await the delay, the timer sweep fires it, relock, finish). A step
// is one store API call (one HTTP request / Lambda invocation).
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
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"golang.org/x/sync/errgroup"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/dynamo"
	"github.com/stela-dev/stela/functions/app"
	"github.com/stela-dev/stela/store"
)

// List prices (us-east-1, on-demand).
const (
	pricePerMWRU      = 0.625
	pricePerMRRU      = 0.125
	pricePerMLambda   = 0.20
	pricePerGBs       = 0.0000133334 // arm64
	lambdaGB          = 0.25         // 256 MB
	pricePerMHTTPCall = 1.00
)

func main() {
	if _, err := run(context.Background(), os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "stela-bench-cost:", err)
		os.Exit(1)
	}
}

type bench struct {
	svc       *store.Service
	b         *dynamo.Backend
	meter     *dynamo.CapacityMeter
	contended bool
	mu        sync.Mutex
	steps     map[string]*stepStat
}

type stepStat struct {
	n   int
	dur time.Duration
}

// step runs one API call under label, metering it.
func (bn *bench) step(ctx context.Context, label string, fn func(ctx context.Context) error) error {
	start := time.Now()
	err := fn(dynamo.WithMeterLabel(ctx, label))
	d := time.Since(start)
	bn.mu.Lock()
	s := bn.steps[label]
	if s == nil {
		s = &stepStat{}
		bn.steps[label] = s
	}
	s.n++
	s.dur += d
	bn.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%s: %w", label, err)
	}
	return nil
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
	case o.DisableDigestIndex || o.DisableDeploymentCounts:
		name = "custom"
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

// result is what one run measured.
type result struct {
	Layout     string
	Activities workload
	Workflows  workload
	// ActivityRetention and WorkflowRetention are the retention passes
	// after each workload.
	ActivityRetention, WorkflowRetention retentionUsage
}

// retentionUsage is what the retention passes after a workload used.
type retentionUsage struct {
	Usage dynamo.Usage
	Trees int // trees marked
	Items int // items marked
}

// workload is the usage and step statistics of one workload.
type workload struct {
	Usage map[string]dynamo.Usage
	Steps map[string]stepStat
}

// run measures the workloads with the configuration of getenv and writes the
// report to out.
func run(ctx context.Context, args []string, getenv func(string) string, out io.Writer) (*result, error) {
	fs := flag.NewFlagSet("stela-bench-cost", flag.ContinueOnError)
	activities := fs.Int("activities", 1000, "activities in the activity workload")
	workflows := fs.Int("workflows", 100, "workflows in the workflow workload")
	children := fs.Int("children", 10, "child activities per workflow")
	parallel := fs.Int("parallel", 8, "concurrent clients")
	contended := fs.Bool("contended-locks", false, "lock with -parallel concurrent lockers (they race for the same candidates) instead of one")
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintln(out, "usage: stela-bench-cost [flags]; the layout comes from STELA_SHARDS, STELA_INLINE_THRESHOLD, STELA_DIGEST_INDEX, STELA_DEPLOYMENT_COUNTS")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if getenv("AWS_ENDPOINT_URL_DYNAMODB") == "" && getenv("AWS_ENDPOINT_URL") == "" {
		return nil, fmt.Errorf(`no DynamoDB endpoint: run eval "$(scripts/ci/start-dynamodb-local.sh)" first`)
	}
	var buf [4]byte
	_, _ = rand.Read(buf[:])
	table := "stela-bench-" + hex.EncodeToString(buf[:])
	opts, retention, err := options(getenv, table)
	if err != nil {
		return nil, err
	}
	opts.RetentionLag = time.Nanosecond // mark what finished at once (the functions wait 15 minutes)
	meter := dynamo.NewCapacityMeter()
	client, err := dynamo.NewClient(ctx, meter.Register)
	if err != nil {
		return nil, err
	}
	if err := dynamo.CreateTable(ctx, client, table); err != nil {
		return nil, err
	}
	defer func() {
		_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	}()
	opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	b, err := dynamo.New(client, opts)
	if err != nil {
		return nil, err
	}
	bn := &bench{svc: store.New(b, store.Options{Logger: slog.New(slog.DiscardHandler), Retention: retention}), b: b, meter: meter,
		contended: *contended, steps: map[string]*stepStat{}}
	meter.Reset()

	res := &result{Layout: layout(opts)}
	t0 := core.TS(time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC))
	if err := bn.activities(ctx, t0, *activities, *parallel); err != nil {
		return nil, err
	}
	res.Activities = workload{meter.Snapshot(), bn.takeSteps()}
	meter.Reset()
	if res.ActivityRetention, err = bn.retain(ctx); err != nil {
		return nil, err
	}
	meter.Reset()
	if err := bn.workflows(ctx, t0, *workflows, *children, *parallel); err != nil {
		return nil, err
	}
	res.Workflows = workload{meter.Snapshot(), bn.takeSteps()}
	meter.Reset()
	if res.WorkflowRetention, err = bn.retain(ctx); err != nil {
		return nil, err
	}

	fmt.Fprintf(out, "DynamoDB capacity and cost; layout: %s; retention %s [%s]; %d parallel clients\n", res.Layout,
		retention, app.EnvRetention, *parallel)
	fmt.Fprintln(out, "Write units billed by dynamo.CapacityMeter from item images (dynamo/doc.go, \"Cost\"); reads as reported by the endpoint.")
	fmt.Fprintln(out, "ms/step and the Lambda duration price are wall time on this machine (timing-dependent); capacity units are not,")
	fmt.Fprintln(out, "except the cancelled-transaction share, which depends on how the parallel clients interleave.")
	report(out, fmt.Sprintf("Activities: %d x (create, lock in batches of 10, finish)", *activities), res.Activities, *activities, "activity")
	reportRetention(out, res.ActivityRetention, res.Activities, *activities, "activity")
	report(out, fmt.Sprintf("Workflows: %d x (%d children + 1 delay)", *workflows, *children), res.Workflows, *workflows, "workflow")
	reportRetention(out, res.WorkflowRetention, res.Workflows, *workflows, "workflow")
	st := b.Stats()
	fmt.Fprintf(out, "\nbackend: commits=%d retries=%d spills=%d deferred=%d\n", st.Commits, st.Retries, st.Spills, st.Deferred)
	return res, nil
}

// retain runs retention passes until no finished tree is left unmarked
// (none with retention forever) and returns what they used.
func (bn *bench) retain(ctx context.Context) (retentionUsage, error) {
	var ru retentionUsage
	ctx = dynamo.WithMeterLabel(ctx, retentionLabel)
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

// reportRetention prints the units of marking a workload's trees, per
// tree, and the workload's DynamoDB price with them.
func reportRetention(out io.Writer, ru retentionUsage, wl workload, units int, unit string) {
	if ru.Trees == 0 {
		fmt.Fprintln(out, "retention: nothing marked (forever)")
		return
	}
	n := float64(ru.Trees)
	u := ru.Usage
	var tot dynamo.Usage
	for _, v := range wl.Usage {
		tot.Add(v)
	}
	dollars := func(rru, wru float64) float64 { return rru*pricePerMRRU + wru*pricePerMWRU }
	fmt.Fprintf(out, "retention (timers function): %d trees marked, per tree %.1f items, %.2f RRU, %.2f WRU (%.2f index) → $%.2f per million trees\n",
		ru.Trees, float64(ru.Items)/n, u.Read/n, u.WRU()/n, u.IndexWrite/n, dollars(u.Read/n, u.WRU()/n))
	fmt.Fprintf(out, "per %s with its retention: %.2f RRU, %.2f WRU → DynamoDB $%.2f per million\n", unit,
		(tot.Read+u.Read)/float64(units), (tot.WRU()+u.WRU())/float64(units), dollars((tot.Read+u.Read)/float64(units), (tot.WRU()+u.WRU())/float64(units)))
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

func report(out io.Writer, title string, wl workload, units int, unit string) {
	fmt.Fprintf(out, "\n%s\n", title)
	w := tabwriter.NewWriter(out, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "operation\tsteps\tms/step\tRRU/step\tWRU/step\t(table\ttx table\tindexes\tfailed+cancelled)\tindex entries/step\ttx cancelled/total\t$/M steps\t")
	var labels []string
	for l := range wl.Steps {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	var totSteps int
	var totDur time.Duration
	var tot dynamo.Usage
	for _, l := range labels {
		s, u := wl.Steps[l], wl.Usage[l]
		n := float64(s.n)
		ms := float64(s.dur.Microseconds()) / 1000 / n
		fmt.Fprintf(w, "%s\t%d\t%.1f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%d/%d\t%.3f\t\n", l, s.n, ms, u.Read/n, u.WRU()/n,
			u.Write/n, u.TxWrite/n, u.IndexWrite/n, (u.FailedWrite+u.CancelledWrite)/n, float64(u.IndexEntries)/n,
			u.Cancelled, u.Transactions, stepCost(u.Read/n, u.WRU()/n, ms))
		totSteps += s.n
		totDur += s.dur
		tot.Add(u)
	}
	n := float64(totSteps)
	ms := float64(totDur.Microseconds()) / 1000 / n
	fmt.Fprintf(w, "all steps\t%d\t%.1f\t%.2f\t%.2f\t\t\t\t\t%.2f\t%d/%d\t%.3f\t\n", totSteps, ms, tot.Read/n, tot.WRU()/n,
		float64(tot.IndexEntries)/n, tot.Cancelled, tot.Transactions, stepCost(tot.Read/n, tot.WRU()/n, ms))
	_ = w.Flush()
	wru, rru := tot.WRU(), tot.Read
	fmt.Fprintf(out, "per step: DynamoDB $%.3f/M + Lambda requests $%.2f/M + Lambda duration (%.1f ms, 256 MB arm64) $%.3f/M + HTTP API $%.2f/M = $%.3f per million steps\n",
		(rru*pricePerMRRU+wru*pricePerMWRU)/n, pricePerMLambda, ms, ms/1000*lambdaGB*pricePerGBs*1e6, pricePerMHTTPCall, stepCost(rru/n, wru/n, ms))
	fmt.Fprintf(out, "per %s: %.1f steps, %.2f RRU, %.2f WRU (%.1f index entries); per million: DynamoDB $%.2f, all-in $%.2f\n",
		unit, n/float64(units), rru/float64(units), wru/float64(units), float64(tot.IndexEntries)/float64(units),
		(rru*pricePerMRRU+wru*pricePerMWRU)/float64(units), stepCost(rru/n, wru/n, ms)*n/float64(units))
	fmt.Fprintf(out, "transactions: %d, of which cancelled %d (%s; %d for a TransactionConflict, %d for a failed condition), billed %.1f WRU (%s of all WRU); failed single-item conditions: %d (%.1f WRU)\n",
		tot.Transactions, tot.Cancelled, pct(tot.Cancelled, tot.Transactions), tot.CancelledConflict, tot.Cancelled-tot.CancelledConflict,
		tot.CancelledWrite, pctF(tot.CancelledWrite, wru), tot.ConditionFailed, tot.FailedWrite)
	if tot.UnknownImages > 0 {
		fmt.Fprintf(out, "WARNING: %d writes to items whose previous image the meter did not know; their index changes may be missed\n", tot.UnknownImages)
	}
}

func pct(a, b int) string { return pctF(float64(a), float64(b)) }

func pctF(a, b float64) string {
	if b == 0 {
		return "0%"
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", 100*a/b), ".0") + "%"
}

// stepCost is the all-in list price of one million steps.
func stepCost(rru, wru, ms float64) float64 {
	return rru*pricePerMRRU + wru*pricePerMWRU + pricePerMLambda + ms/1000*lambdaGB*pricePerGBs*1e6 + pricePerMHTTPCall
}

func newID(t0 core.Timestamp, i int) core.ExecutionId {
	var entropy [10]byte
	_, _ = rand.Read(entropy[:])
	id, err := core.NewExecutionId(uint64(t0.UnixMilli())+uint64(i), bytesReader(entropy[:]))
	if err != nil {
		panic(err)
	}
	return id
}

type bytesReader []byte

func (b bytesReader) Read(p []byte) (int, error) { return copy(p, b), nil }

var (
	ffqnAct = mustV(core.ParseFunctionFqn("bench:pkg/activities.work"))
	ffqnWf  = mustV(core.ParseFunctionFqn("bench:pkg/workflows.fan-out"))
	digest  = mustV(core.ParseComponentDigest("sha256:" + "ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12"))
	dep     = mustV(core.ParseDeploymentId("Dep_01KBNJ2T3D8W7H3X6Q4M9R5V1A"))
	exr     = mustV(core.ParseExecutorId("Exr_01KBNJ2T3D8W7H3X6Q4M9R5V1A"))
	compAct = core.ComponentId{ComponentType: core.ComponentTypeActivity, Name: "activities", ComponentDigest: digest}
	compWf  = core.ComponentId{ComponentType: core.ComponentTypeWorkflow, Name: "workflows", ComponentDigest: digest}
)

func mustV[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func createReq(id core.ExecutionId, ffqn core.FunctionFqn, comp core.ComponentId, at core.Timestamp) core.CreateRequest {
	return core.CreateRequest{CreatedAt: at, ExecutionID: id, FFQN: ffqn, ScheduledAt: at, ComponentID: comp,
		DeploymentID: dep, Params: core.Params{[]byte(`"https://example.com/item/42"`), []byte(`{"retries":3}`)},
		Metadata: core.ExecutionMetadata{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}
}

func lockReq(at core.Timestamp, comp core.ComponentId, run int) core.LockRequest {
	return core.LockRequest{BatchSize: 10, PendingAtOrSooner: at, CreatedAt: at, ComponentID: comp, DeploymentID: dep,
		ExecutorID: exr, RunID: mustV(core.NewRunId(uint64(run), nil)), LockExpiresAt: at.Add(time.Minute),
		RetryConfig: core.ComponentRetryConfig{MaxRetries: ptr(uint32(3)), RetryExpBackoff: core.DurationOf(time.Second)}}
}

func ptr[T any](v T) *T { return &v }

// parallelDo runs fn(i) for i in [0, n) on p goroutines; the first error
// wins and stops handing out the rest.
func parallelDo(n, p int, fn func(i int) error) error {
	g, ctx := errgroup.WithContext(context.Background())
	g.SetLimit(max(p, 1))
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error { return fn(i) })
	}
	return g.Wait()
}

// lockAll locks every pending execution of ffqn in batches of 10.
func (bn *bench) lockAll(ctx context.Context, label string, at core.Timestamp, ffqn core.FunctionFqn, comp core.ComponentId, want int, p int) ([]core.LockedExecution, error) {
	var mu sync.Mutex
	var out []core.LockedExecution
	run := 0
	for len(out) < want {
		before := len(out)
		calls := min(p, (want-len(out)+9)/10)
		if !bn.contended {
			calls = 1
		}
		err := parallelDo(calls, p, func(int) error {
			mu.Lock()
			run++
			r := run
			mu.Unlock()
			return bn.step(ctx, label, func(ctx context.Context) error {
				locked, err := bn.svc.LockPendingByFFQNs(ctx, lockReq(at, comp, r), []core.FunctionFqn{ffqn})
				mu.Lock()
				out = append(out, locked...)
				mu.Unlock()
				return err
			})
		})
		if err != nil {
			return nil, err
		}
		if len(out) == before {
			return nil, fmt.Errorf("%s: only %d of %d executions became lockable", label, len(out), want)
		}
	}
	return out, nil
}

func (bn *bench) activities(ctx context.Context, t0 core.Timestamp, n, p int) error {
	ids := make([]core.ExecutionId, n)
	for i := range ids {
		ids[i] = newID(t0, i)
	}
	if err := parallelDo(n, p, func(i int) error {
		return bn.step(ctx, "activity: create", func(ctx context.Context) error {
			_, err := bn.svc.Create(ctx, createReq(ids[i], ffqnAct, compAct, t0))
			return err
		})
	}); err != nil {
		return err
	}
	locked, err := bn.lockAll(ctx, "activity: lock (batch of 10)", t0, ffqnAct, compAct, n, p)
	if err != nil {
		return err
	}
	result := core.RetOk(&core.WastValWithType{Type: "string", Value: []byte(`"done: 200 OK"`)})
	return parallelDo(len(locked), p, func(i int) error {
		return bn.step(ctx, "activity: finish", func(ctx context.Context) error {
			_, err := bn.svc.Append(ctx, locked[i].ExecutionID, locked[i].NextVersion,
				core.AppendRequest{CreatedAt: t0.Add(time.Second), Event: &core.Finished{Retval: result}})
			return err
		})
	})
}

func hist(h core.HistoryEvent) core.ExecutionRequest { return &core.HistoryEventRequest{Event: h} }

func (bn *bench) workflows(ctx context.Context, t0 core.Timestamp, n, nChildren, p int) error {
	ids := make([]core.ExecutionId, n)
	for i := range ids {
		ids[i] = newID(t0, 100000+i)
	}
	if err := parallelDo(n, p, func(i int) error {
		return bn.step(ctx, "wf 1: create", func(ctx context.Context) error {
			_, err := bn.svc.Create(ctx, createReq(ids[i], ffqnWf, compWf, t0))
			return err
		})
	}); err != nil {
		return err
	}
	locked, err := bn.lockAll(ctx, "wf 2: lock (batch of 10)", t0, ffqnWf, compWf, n, p)
	if err != nil {
		return err
	}
	fan := mustV(core.ParseJoinSetId("g:1"))
	sleep := mustV(core.ParseJoinSetId("o:2"))
	next := map[core.ExecutionId]core.Version{}
	var mu sync.Mutex
	if err := parallelDo(len(locked), p, func(i int) error {
		le := locked[i]
		id := le.ExecutionID
		batch := []core.AppendRequest{{CreatedAt: t0, Event: hist(&core.JoinSetCreate{JoinSetID: fan})}}
		var creqs []core.CreateRequest
		child := id.NextLevel(fan)
		for range nChildren {
			batch = append(batch, core.AppendRequest{CreatedAt: t0, Event: hist(&core.JoinSetRequestEvent{JoinSetID: fan,
				Request: &core.ChildExecutionRequest{ChildExecutionID: core.ExecutionIdDerived{ExecutionId: child}, TargetFFQN: ffqnAct,
					Params: core.Params{[]byte(`"https://example.com/item/42"`)}}})})
			c := createReq(child, ffqnAct, compAct, t0)
			c.Params = core.Params{[]byte(`"https://example.com/item/42"`)}
			c.Parent = &core.Parent{ExecutionID: id, JoinSetID: fan}
			creqs = append(creqs, c)
			child = child.Incremented()
		}
		var v core.Version
		if err := bn.step(ctx, "wf 3: submit children", func(ctx context.Context) error {
			var err error
			v, err = bn.svc.AppendBatchCreateNewExecution(ctx, t0, batch, id, le.NextVersion, creqs, nil)
			return err
		}); err != nil {
			return err
		}
		delay := core.NewDelayId(id, sleep, 1)
		await := []core.AppendRequest{
			{CreatedAt: t0, Event: hist(&core.JoinSetCreate{JoinSetID: sleep})},
			{CreatedAt: t0, Event: hist(&core.JoinSetRequestEvent{JoinSetID: sleep, Request: &core.DelayRequest{DelayID: delay,
				ExpiresAt: t0.Add(time.Second), ScheduleAt: core.ScheduleAt{Kind: "in", In: core.DurationOf(time.Second)}}})},
			{CreatedAt: t0, Event: hist(&core.JoinNext{JoinSetID: fan, RunExpiresAt: t0})},
		}
		if err := bn.step(ctx, "wf 4: await first child", func(ctx context.Context) error {
			var err error
			v, err = bn.svc.AppendBatch(ctx, t0, await, id, v)
			return err
		}); err != nil {
			return err
		}
		mu.Lock()
		next[id] = v
		mu.Unlock()
		return nil
	}); err != nil {
		return err
	}
	t1 := t0.Add(500 * time.Millisecond)
	kids, err := bn.lockAll(ctx, "child 1: lock (batch of 10)", t1, ffqnAct, compAct, n*nChildren, p)
	if err != nil {
		return err
	}
	result := core.RetOk(&core.WastValWithType{Type: "u32", Value: []byte(`42`)})
	if err := parallelDo(len(kids), p, func(i int) error {
		k := kids[i]
		parent, js, _ := k.ExecutionID.SplitToParts()
		return bn.step(ctx, "child 2: finish + respond", func(ctx context.Context) error {
			_, err := bn.svc.AppendBatchRespondToParent(ctx,
				core.AppendEventsToExecution{ExecutionID: k.ExecutionID, Version: k.NextVersion, Batch: []core.AppendRequest{{CreatedAt: t1, Event: &core.Finished{Retval: result}}}},
				core.AppendResponseToExecution{ParentExecutionID: parent, CreatedAt: t1, JoinSetID: js,
					ChildExecutionID: core.ExecutionIdDerived{ExecutionId: k.ExecutionID}, FinishedVersion: k.NextVersion, Result: result}, t1)
			return err
		})
	}); err != nil {
		return err
	}
	relocked, err := bn.lockAll(ctx, "wf 5: relock (batch of 10)", t1, ffqnWf, compWf, n, p)
	if err != nil {
		return err
	}
	if err := parallelDo(len(relocked), p, func(i int) error {
		le := relocked[i]
		var rest []core.AppendRequest
		for range nChildren - 1 {
			rest = append(rest, core.AppendRequest{CreatedAt: t1, Event: hist(&core.JoinNext{JoinSetID: fan, RunExpiresAt: t1})})
		}
		rest = append(rest, core.AppendRequest{CreatedAt: t1, Event: hist(&core.JoinNext{JoinSetID: sleep, RunExpiresAt: t1})})
		return bn.step(ctx, "wf 6: await children, then the delay", func(ctx context.Context) error {
			_, err := bn.svc.AppendBatch(ctx, t1, rest, le.ExecutionID, le.NextVersion)
			return err
		})
	}); err != nil {
		return err
	}
	t2 := t0.Add(2 * time.Second)
	var due []core.ExpiredTimer
	if err := bn.step(ctx, "sweep 1: expired timers", func(ctx context.Context) error {
		var err error
		due, err = bn.svc.GetExpiredTimers(ctx, t2)
		return err
	}); err != nil {
		return err
	}
	if len(due) != n {
		return fmt.Errorf("sweep found %d timers, want %d", len(due), n)
	}
	if err := parallelDo(len(due), p, func(i int) error {
		d := due[i].Delay
		return bn.step(ctx, "sweep 2: fire delay", func(ctx context.Context) error {
			_, err := bn.svc.AppendDelayResponse(ctx, t2, d.ExecutionID, d.JoinSetID, d.DelayID, true)
			return err
		})
	}); err != nil {
		return err
	}
	final, err := bn.lockAll(ctx, "wf 7: relock (batch of 10)", t2, ffqnWf, compWf, n, p)
	if err != nil {
		return err
	}
	return parallelDo(len(final), p, func(i int) error {
		le := final[i]
		return bn.step(ctx, "wf 8: finish", func(ctx context.Context) error {
			_, err := bn.svc.Append(ctx, le.ExecutionID, le.NextVersion, core.AppendRequest{CreatedAt: t2, Event: &core.Finished{Retval: result}})
			return err
		})
	})
}
