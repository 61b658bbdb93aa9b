package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/sqlite"
	"github.com/stela-dev/stela/store"
)

// benchFloor measures what one step of the SDK costs at least on this
// machine, part by part: a bare HTTP round trip on loopback (net/http, no
// Stela code) and an activity's writes on the embedded store in-process
// (store.Service on SQLite: created locked in one commit, finished in
// another — the rows Obelisk's model keeps — with group commit and the
// durability asked). A step of the SDK over HTTP costs at least its
// requests times the first plus the second; the difference to what a
// workload measures is JSON, the worker and the routes' own work.
func benchFloor() Command {
	return Command{
		Name:    "floor",
		Summary: "the CPU floor of a step on this machine: a bare HTTP round trip, and an activity's writes in-process",
		Doc: "Runs, in this process, --n bare HTTP POST round trips on loopback (net/http, --concurrency\n" +
			"clients, a --body-byte JSON body and a small answer, no Stela code), then --n activities on a\n" +
			"fresh embedded store in-process (store.Service + SQLite: create locked, append finished; group\n" +
			"commit, --durability) from --concurrency goroutines, then --n/2 workflows calling one activity\n" +
			"the same way (the workflow created locked; its events with the child created locked; the child's\n" +
			"finish with its response; the workflow's finish), and prints the CPU (user + system) of each per\n" +
			"operation. The run repeats --rounds times and prints the median.",
		Flags: func(fs *flag.FlagSet, e *Env) func(context.Context) error {
			n := fs.Int("n", 20000, "operations per measurement")
			conc := fs.Int("concurrency", 8, "concurrent clients / goroutines")
			body := fs.Int("body-bytes", 600, "size of the HTTP request body")
			rounds := fs.Int("rounds", 3, "rounds (the median is printed)")
			durability := fs.String("durability", sqlite.DurabilityFsyncName, sqlite.DurabilityUsage)
			return func(ctx context.Context) error {
				d, err := sqlite.ParseDurability(*durability)
				if err != nil {
					return usagef("--durability: %v", err)
				}
				if *n <= 0 || *conc <= 0 || *rounds <= 0 || *body < 2 {
					return usagef("--n, --concurrency and --rounds must be positive, --body-bytes at least 2")
				}
				var httpCPU, actCPU, wfCPU []time.Duration
				for r := 0; r < *rounds; r++ {
					h, err := floorHTTP(ctx, *n, *conc, *body)
					if err != nil {
						return err
					}
					a, err := floorStore(ctx, *n, *conc, d, floorActivity)
					if err != nil {
						return err
					}
					w, err := floorStore(ctx, *n/2, *conc, d, floorWorkflow)
					if err != nil {
						return err
					}
					httpCPU, actCPU, wfCPU = append(httpCPU, h), append(actCPU, a), append(wfCPU, w)
					fmt.Fprintf(e.Stdout, "round %d: HTTP round trip %.1f µs, activity on the store %.1f µs, workflow of one activity on the store %.1f µs (CPU)\n",
						r+1, micros(h), micros(a), micros(w))
				}
				h, a, w := medianDuration(httpCPU), medianDuration(actCPU), medianDuration(wfCPU)
				fmt.Fprintf(e.Stdout, "median of %d rounds, %d operations each (workflows %d), concurrency %d, durability %s, load %s:\n",
					*rounds, *n, *n/2, *conc, d, loadAverage())
				fmt.Fprintf(e.Stdout, "  bare HTTP POST round trip (client + server, %d-byte body): %.1f µs CPU\n", *body, micros(h))
				fmt.Fprintf(e.Stdout, "  activity created locked + finished on the store in-process: %.1f µs CPU\n", micros(a))
				fmt.Fprintf(e.Stdout, "  workflow of one activity on the store in-process (4 commits): %.1f µs CPU\n", micros(w))
				fmt.Fprintf(e.Stdout, "  floor of an activity step over HTTP (2 requests + the store): %.1f µs CPU\n", micros(2*h+a))
				fmt.Fprintf(e.Stdout, "  floor of a workflow of one activity over HTTP (4 requests + the store): %.1f µs CPU\n", micros(4*h+w))
				return nil
			}
		},
	}
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func medianDuration(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s[len(s)/2]
}

// floorHTTP runs n POST round trips of a body-byte JSON body from conc
// keep-alive clients against a loopback net/http server that reads the
// body and answers a small JSON object, and returns the process CPU per
// round trip.
func floorHTTP(ctx context.Context, n, conc, body int) (time.Duration, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	answer := []byte(`{"next_version":3,"locked":[]}`)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	payload := floorBody(body)
	tr := &http.Transport{MaxIdleConnsPerHost: conc}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	url := "http://" + ln.Addr().String() + "/v1/worker/append-batch"
	do := func() error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		if cerr := resp.Body.Close(); err == nil {
			err = cerr
		}
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("floor: HTTP %d", resp.StatusCode)
		}
		return err
	}
	for i := 0; i < conc; i++ { // open the connections before measuring
		if err := do(); err != nil {
			return 0, err
		}
	}
	return floorRun(n, conc, func(int) error { return do() })
}

// floorBody is a JSON object of about size bytes.
func floorBody(size int) []byte {
	pad := max(size-len(`{"pad":""}`), 0)
	b, _ := json.Marshal(map[string]string{"pad": string(bytes.Repeat([]byte("x"), pad))})
	return b
}

// floorStore runs n operations op on a fresh embedded store in-process from
// conc goroutines and returns the process CPU per operation.
func floorStore(ctx context.Context, n, conc int, d sqlite.Durability, op func(ctx context.Context, f *floorFixture) error) (time.Duration, error) {
	dir, cleanup, err := benchDir("", "stela-floor-")
	if err != nil {
		return 0, err
	}
	defer cleanup()
	backend, err := openBenchStore(ctx, dir, d)
	if err != nil {
		return 0, err
	}
	svc := store.New(backend, store.Options{Retention: core.RetainFor(core.DefaultRetentionPeriod)})
	defer svc.Close()
	run, err := newBenchRun()
	if err != nil {
		return 0, err
	}
	f := &floorFixture{svc: svc, run: run, activity: run.ffqn("floor"), workflow: run.ffqn("floorwf")}
	return floorRun(n, conc, func(int) error { return op(ctx, f) })
}

// floorFixture is what the store's floor operations share.
type floorFixture struct {
	svc                *store.Service
	run                *benchRun
	activity, workflow core.FunctionFqn
}

// lock is an eager lock of one execution of ffqn (a component of type ct)
// stamped t.
func (f *floorFixture) lock(ct core.ComponentType, ffqn core.FunctionFqn, t core.Timestamp) core.EagerLock {
	l := core.EagerLock{Request: f.run.lockRequest(ct, 1), FFQNs: []core.FunctionFqn{ffqn}}
	l.Request.CreatedAt, l.Request.PendingAtOrSooner, l.Request.LockExpiresAt = t, t, t.Add(time.Minute)
	return l
}

func (f *floorFixture) create(id core.ExecutionId, ffqn core.FunctionFqn, l core.EagerLock, t core.Timestamp, parent *core.Parent) core.CreateRequest {
	return core.CreateRequest{CreatedAt: t, ExecutionID: id, FFQN: ffqn, Params: core.Params{}, Parent: parent,
		ScheduledAt: t, ComponentID: l.Request.ComponentID, DeploymentID: l.Request.DeploymentID, Metadata: core.ExecutionMetadata{}}
}

// floorActivity is an activity created locked, then finished: W1's
// activity step.
func floorActivity(ctx context.Context, f *floorFixture) error {
	id, le, _, err := f.createLocked(ctx, core.ComponentTypeActivity, f.activity)
	if err != nil {
		return err
	}
	_, err = f.svc.Append(ctx, id, le.NextVersion, finishedOK(now()))
	return err
}

// createLocked creates a new top-level execution of ffqn (a component of
// type ct) locked, as a Submit on an idle worker does, and returns its id,
// its lock and the lock's expiry.
func (f *floorFixture) createLocked(ctx context.Context, ct core.ComponentType, ffqn core.FunctionFqn) (core.ExecutionId, core.LockedExecution, core.Timestamp, error) {
	id, err := newID()
	if err != nil {
		return id, core.LockedExecution{}, core.Timestamp{}, err
	}
	t := now()
	l := f.lock(ct, ffqn, t)
	_, locked, err := f.svc.CreateLocked(ctx, f.create(id, ffqn, l, t, nil), l)
	if err == nil && len(locked) != 1 {
		err = fmt.Errorf("floor: created %s unlocked", id)
	}
	if err != nil {
		return id, core.LockedExecution{}, core.Timestamp{}, err
	}
	return id, locked[0], l.Request.LockExpiresAt, nil
}

// floorWorkflow is a workflow calling one activity as the SDK writes it on
// one worker (W1's workflow step): the workflow created locked; its join
// set, child request and JoinNext with the child created locked in one
// commit; the child's finish with its response to the parent; the
// workflow's finish.
func floorWorkflow(ctx context.Context, f *floorFixture) error {
	parent, locked, expires, err := f.createLocked(ctx, core.ComponentTypeWorkflow, f.workflow)
	if err != nil {
		return err
	}
	js, err := core.NewJoinSetId(core.JoinSetKindOneOff, "1")
	if err != nil {
		return err
	}
	child := parent.NextLevel(js)
	t := now()
	al := f.lock(core.ComponentTypeActivity, f.activity, t)
	batch := []core.AppendRequest{
		historyEvent(t, &core.JoinSetCreate{JoinSetID: js}),
		historyEvent(t, &core.JoinSetRequestEvent{JoinSetID: js, Request: &core.ChildExecutionRequest{
			ChildExecutionID: core.ExecutionIdDerived{ExecutionId: child}, TargetFFQN: f.activity, Params: core.Params{}}}),
		historyEvent(t, &core.JoinNext{JoinSetID: js, RunExpiresAt: expires}),
	}
	next, kids, err := f.svc.AppendBatchCreateNewExecutionLocked(ctx, t, batch, parent, locked.NextVersion,
		[]core.CreateRequest{f.create(child, f.activity, al, t, &core.Parent{ExecutionID: parent, JoinSetID: js})}, nil, []core.EagerLock{al})
	if err != nil {
		return err
	}
	if len(kids) != 1 {
		return fmt.Errorf("floor: child %s created unlocked", child)
	}
	t = now()
	if _, err := f.svc.AppendBatchRespondToParent(ctx,
		core.AppendEventsToExecution{ExecutionID: child, Version: kids[0].NextVersion, Batch: []core.AppendRequest{finishedOK(t)}},
		core.AppendResponseToExecution{ParentExecutionID: parent, CreatedAt: t, JoinSetID: js,
			ChildExecutionID: core.ExecutionIdDerived{ExecutionId: child}, FinishedVersion: kids[0].NextVersion, Result: core.RetOk(nil)},
		t); err != nil {
		return err
	}
	_, err = f.svc.Append(ctx, parent, next, finishedOK(now()))
	return err
}

// loadAverage is the 1-minute load average ("n/a" where /proc has none).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "n/a"
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return "n/a"
}

// floorRun calls op n times from conc goroutines and returns the process
// CPU per call.
func floorRun(n, conc int, op func(i int) error) (time.Duration, error) {
	var next atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	cpu0 := processCPU()
	for g := 0; g < conc; g++ {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := op(i); err != nil {
					once.Do(func() { first = err })
					next.Store(int64(n))
					return
				}
			}
		})
	}
	wg.Wait()
	if first != nil {
		return 0, first
	}
	return (processCPU() - cpu0) / time.Duration(n), nil
}
