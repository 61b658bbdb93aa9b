// Command bench-stelasdk is Stela's engine for the peer benchmark harness
// (../shared/bench-peers in the Stela workspace, see bench/peers/README.md): the
// same W1/W2/W3 workloads as DBOS, River and go-workflows, written with the
// public Go SDK only — client.New over HTTP to a `stela dev` server the harness
// starts, and one worker.New with Options.Concurrency = -concurrency, every
// other option at its default. Completion times are the server's: each
// execution's finished_at as the list route reports it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/worker"

	"peers/common"
)

var (
	url       = flag.String("url", "http://127.0.0.1:8080", "Stela server URL (the harness passes its own stela dev)")
	token     = flag.String("token", "", "bearer token of the server, if any")
	serverVer = flag.String("server-version", "", "Stela server commit (reported only)")
	cpuProf   = flag.String("cpuprofile", "", "write the bench process's CPU profile (pprof) to this file")
	w1Mode    = flag.String("w1-mode", "activity", "W1 executions: activity (a job, as the queues) | workflow (a workflow calling one activity, as the workflow engines)")
)

const (
	noopFFQN = "bench:peers/noop.noop"
	w1FFQN   = "bench:peers/w1.run"
	w2FFQN   = "bench:peers/w2.fan-out"
	w3FFQN   = "bench:peers/w3.sleep"
)

func register(w *worker.Worker) {
	worker.Activity(w, noopFFQN, func(_ context.Context, in string) (string, error) { return in, nil })
	worker.Workflow(w, w1FFQN, func(wf *worker.Context, in string) (string, error) {
		return worker.Call[string](wf, noopFFQN, in)
	})
	worker.Workflow(w, w2FFQN, func(wf *worker.Context, fanOut int) (int, error) {
		js := wf.NewJoinSet()
		for range fanOut {
			if _, err := js.Submit(noopFFQN, common.Payload); err != nil {
				return 0, err
			}
		}
		for range fanOut {
			r, err := js.Next()
			if err != nil {
				return 0, err
			}
			if err := r.Err(); err != nil {
				return 0, err
			}
		}
		return fanOut, nil
	})
	worker.Workflow(w, w3FFQN, func(wf *worker.Context, d time.Duration) (int, error) {
		if err := wf.Sleep(d); err != nil {
			return 0, err
		}
		return 1, nil
	})
}

// finishes tells when the executions the bench submitted have finished, from
// the worker's OnFinished (called once a Finished event is stored).
type finishes struct {
	mu     sync.Mutex
	want   map[core.ExecutionId]bool // submitted, not yet seen finished
	early  map[core.ExecutionId]bool // finished before Submit returned its id
	notify chan struct{}
}

func newFinishes() *finishes {
	return &finishes{want: map[core.ExecutionId]bool{}, early: map[core.ExecutionId]bool{}, notify: make(chan struct{}, 1)}
}

func (f *finishes) submitted(id core.ExecutionId) {
	f.mu.Lock()
	if f.early[id] {
		delete(f.early, id)
	} else {
		f.want[id] = true
	}
	f.mu.Unlock()
}

func (f *finishes) onFinished(id core.ExecutionId, _ core.ReturnValue) {
	if !id.IsTopLevel() {
		return
	}
	f.mu.Lock()
	if f.want[id] {
		delete(f.want, id)
	} else {
		f.early[id] = true
	}
	f.mu.Unlock()
	select {
	case f.notify <- struct{}{}:
	default:
	}
}

// wait returns when every submitted execution finished.
func (f *finishes) wait(ctx context.Context) (time.Time, error) {
	for {
		f.mu.Lock()
		n := len(f.want)
		f.mu.Unlock()
		if n == 0 {
			return time.Now(), nil
		}
		select {
		case <-ctx.Done():
			return time.Now(), fmt.Errorf("%d executions not finished: %w", n, ctx.Err())
		case <-f.notify:
		}
	}
}

func main() {
	p := common.ParseFlags()
	if *cpuProf != "" {
		f, err := os.Create(*cpuProf)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer pprof.StopCPUProfile()
		}
	}
	res := &common.Result{Engine: "stela/sdk", Workload: p.Workload, OK: true,
		Versions: common.ModVersions("github.com/stela-dev/stela"),
		Config: map[string]any{"concurrency": p.Concurrency, "workers": 1, "transport": "HTTP (client.New)",
			"server": "stela dev (embedded SQLite, fsync per commit)"}}
	if *serverVer != "" {
		res.Versions["stela-server"] = *serverVer
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.Timeout)
	defer cancel()

	var opts []client.Option
	if *token != "" {
		opts = append(opts, client.WithToken(*token))
	}
	c, err := client.New(*url, opts...)
	if err != nil {
		common.Fail(res, err)
	}
	fin := newFinishes()
	w := worker.New(c, worker.Options{Concurrency: p.Concurrency, OnFinished: fin.onFinished})
	register(w)
	runCtx, stop := context.WithCancel(ctx)
	runDone := make(chan error, 1)
	go func() { runDone <- w.Run(runCtx) }()
	defer func() { stop(); <-runDone }()

	rec := common.NewRecorder()
	ids := map[string]core.ExecutionId{}
	var idsMu sync.Mutex
	submit := func(key, ffqn string, params any) error {
		t := time.Now()
		id, err := w.Submit(ctx, ffqn, params)
		if err != nil {
			return err
		}
		fin.submitted(id)
		rec.Submitted(id.String(), t)
		idsMu.Lock()
		ids[key] = id
		idsMu.Unlock()
		return nil
	}

	var submitEnd, observedEnd time.Time
	var ffqn string
	switch p.Workload {
	case "w1", "w3":
		n, params := p.N, any(common.Payload)
		ffqn = noopFFQN
		if p.Workload == "w1" && *w1Mode == "workflow" {
			ffqn = w1FFQN
		} else if p.Workload == "w1" && *w1Mode != "activity" {
			common.Fail(res, fmt.Errorf("unknown -w1-mode %q", *w1Mode))
		}
		if p.Workload == "w3" {
			n, params, ffqn = p.SleepN, p.Sleep, w3FFQN
		}
		res.Config["w1_mode"] = *w1Mode
		err = common.RunSubmitters(n, p.Submitters, func(i int) error {
			return submit(fmt.Sprint(i), ffqn, params)
		})
		submitEnd = time.Now()
		if err != nil {
			common.Fail(res, err)
		}
		if observedEnd, err = fin.wait(ctx); err != nil {
			common.Fail(res, err)
		}
	case "w2":
		ffqn = w2FFQN
		for i := range p.Repeats {
			if err := submit(fmt.Sprint(i), ffqn, p.FanOut); err != nil {
				common.Fail(res, err)
			}
			if observedEnd, err = fin.wait(ctx); err != nil {
				common.Fail(res, err)
			}
		}
		submitEnd = observedEnd
		res.Notes = fmt.Sprintf("%d child activities per workflow (one join set)", p.FanOut)
	default:
		common.Fail(res, fmt.Errorf("unknown workload %q", p.Workload))
	}

	// The server's completion times: finished_at of each execution.
	seen := 0
	completed := map[core.ExecutionId]bool{}
	for e, err := range c.Executions(ctx, core.ListExecutionsFilter{FunctionName: &core.FunctionNameFilter{Kind: "function", Value: ffqn}}, 100) {
		if err != nil {
			common.Fail(res, fmt.Errorf("list executions: %w", err))
		}
		if f := e.PendingState.Finished; f != nil && e.ExecutionID.IsTopLevel() {
			rec.Completed(e.ExecutionID.String(), f.FinishedAt.Time)
			completed[e.ExecutionID] = true
			seen++
		}
	}
	res.Config["listed_finished"] = seen
	// Any execution the listing did not show (it must not happen; a paging
	// defect would show here) is read by id.
	missing := 0
	for _, id := range ids {
		if completed[id] {
			continue
		}
		missing++
		st, err := c.GetPendingState(ctx, id)
		if err != nil {
			common.Fail(res, fmt.Errorf("status of %s: %w", id, err))
		}
		if f := st.PendingState.Finished; f != nil {
			rec.Completed(id.String(), f.FinishedAt.Time)
		}
	}
	if missing > 0 {
		res.Notes = strings.TrimSpace(res.Notes + fmt.Sprintf(" %d finished executions missing from the list route, read by id", missing))
	}
	rec.Finish(res, observedEnd, submitEnd)
	common.Emit(res)
}
