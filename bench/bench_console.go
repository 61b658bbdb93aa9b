package bench

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/httpapi"
	"github.com/stela-dev/stela/sqlite"
	"github.com/stela-dev/stela/store"
)

// targetConsolePage is the server-time target of one page of the web
// console's executions list (100 rows) on a store of 100,000 executions.
const targetConsolePage = 200 * time.Millisecond

// consoleBenchResult is what `stela bench console` reports.
type consoleBenchResult struct {
	Executions int                  `json:"executions"`
	SeedSecs   float64              `json:"seed_seconds"`
	Requests   []consoleBenchMetric `json:"requests"`
	TargetMs   float64              `json:"target_p99_ms"`
	Pass       bool                 `json:"pass"`
}

type consoleBenchMetric struct {
	Name    string    `json:"name"`
	Path    string    `json:"path"`
	Rows    int       `json:"rows"`
	Latency latencies `json:"latency"`
	Gated   bool      `json:"gated"` // held to the target
}

func benchConsole() Command {
	return Command{
		Name: "console", Summary: "server time of the web console's list requests on an embedded store of N executions",
		Doc: "Seeds a fresh SQLite store (in a temporary directory unless --data-dir is given) with --executions\n" +
			"executions in a mix of states, then serves the requests the console's executions page makes\n" +
			"(a page of 100 newest, the next page, filtered pages, the counts per state) through the\n" +
			"httpapi handler in-process, --iterations times each, and prints their server time. The pages\n" +
			"are held to a 200 ms p99 target; the counts are reported.",
		Flags: func(fs *flag.FlagSet, e *Env) func(context.Context) error {
			asJSON := fs.Bool("json", false, "print the results as JSON")
			n := fs.Int("executions", 100000, "executions in the store")
			iterations := fs.Int("iterations", 50, "requests of each kind")
			dataDir := fs.String("data-dir", "", "directory of the SQLite file (default: a temporary one, removed after)")
			return func(ctx context.Context) error {
				if *n < 200 || *iterations < 1 {
					return usagef("--executions must be at least 200 and --iterations positive")
				}
				dir, cleanup, err := benchDir(*dataDir, "stela-bench-console-")
				if err != nil {
					return err
				}
				defer cleanup()
				// A throwaway store: no fsync while seeding (reads are what is measured).
				backend, err := sqlite.Open(filepath.Join(dir, "bench.db"), sqlite.Options{Durability: sqlite.DurabilityOSCrashUnsafe})
				if err != nil {
					return err
				}
				svc := store.New(backend, store.Options{})
				defer svc.Close()
				res, err := runConsoleBench(ctx, e.Stderr, svc, *n, *iterations)
				if err != nil {
					return err
				}
				if *asJSON {
					b, _ := json.MarshalIndent(res, "", "  ")
					fmt.Fprintln(e.Stdout, string(b))
					return nil
				}
				fmt.Fprintf(e.Stdout, "console list on %d executions (embedded store, seeded in %.1f s), %d requests each:\n",
					res.Executions, res.SeedSecs, *iterations)
				for _, m := range res.Requests {
					gate := ""
					if m.Gated {
						gate = fmt.Sprintf("  [target p99 ≤ %.0f ms]", res.TargetMs)
					}
					fmt.Fprintf(e.Stdout, "  %-34s %4d rows  p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms%s\n",
						m.Name, m.Rows, m.Latency.P50ms, m.Latency.P99ms, m.Latency.Maxms, gate)
				}
				fmt.Fprintf(e.Stdout, "  %s: every list page within %.0f ms at p99\n", verdict(res.Pass), res.TargetMs)
				return nil
			}
		},
	}
}

// consoleSeedFFQNs are the functions of the seeded executions (the ffqn
// filter selects one in four).
var consoleSeedFFQNs = [4]string{"bench:console/orders.place", "bench:console/orders.ship", "bench:console/billing.charge", "bench:console/mail.send"}

// runConsoleBench seeds n executions and measures the console's requests.
func runConsoleBench(ctx context.Context, progress io.Writer, svc *store.Service, n, iterations int) (consoleBenchResult, error) {
	run, err := newBenchRun()
	if err != nil {
		return consoleBenchResult{}, err
	}
	var ffqns [4]core.FunctionFqn
	for i, s := range consoleSeedFFQNs {
		if ffqns[i], err = core.ParseFunctionFqn(s); err != nil {
			return consoleBenchResult{}, err
		}
	}
	fmt.Fprintf(progress, "seeding %d executions…\n", n)
	start := time.Now()
	// States: 1 in 10 paused, 1 in 20 scheduled in an hour, 1 in 5 finished ok,
	// 1 in 50 finished with an error, the rest pending.
	err = forEach(ctx, n, 32, func(ctx context.Context, i int) error {
		id, err := newID()
		if err != nil {
			return err
		}
		t := now()
		req := core.CreateRequest{CreatedAt: t, ExecutionID: id, FFQN: ffqns[i%4], Params: core.Params{json.RawMessage(fmt.Sprint(i))},
			ScheduledAt: t, ComponentID: core.ComponentId{ComponentType: core.ComponentTypeActivity}, Metadata: core.ExecutionMetadata{}}
		switch {
		case i%10 == 3:
			req.Paused = true
		case i%20 == 7:
			req.ScheduledAt = t.Add(time.Hour)
		}
		if _, err := svc.Create(ctx, req); err != nil {
			return err
		}
		var rv *core.ReturnValue
		switch {
		case i%5 == 1:
			ok := core.RetOk(nil)
			rv = &ok
		case i%50 == 9:
			bad := core.RetErr(nil)
			rv = &bad
		}
		if rv == nil {
			return nil
		}
		l, err := svc.LockOne(ctx, run.lockRequest(core.ComponentTypeActivity, 1), id, 1)
		if err != nil {
			return err
		}
		_, err = svc.Append(ctx, id, l.NextVersion, core.AppendRequest{CreatedAt: now(), Event: &core.Finished{Retval: *rv}})
		return err
	})
	if err != nil {
		return consoleBenchResult{}, fmt.Errorf("seed: %w", err)
	}
	res := consoleBenchResult{Executions: n, SeedSecs: time.Since(start).Seconds(), TargetMs: ms(targetConsolePage), Pass: true}

	h := httpapi.New(svc, nil, httpapi.Options{Authorizer: httpapi.AllowAll()})
	serve := func(path string) (time.Duration, []byte, error) {
		req := httptest.NewRequestWithContext(ctx, http.MethodGet, path, nil)
		rec := httptest.NewRecorder()
		t0 := time.Now()
		h.ServeHTTP(rec, req)
		d := time.Since(t0)
		if rec.Code != http.StatusOK {
			return d, nil, fmt.Errorf("GET %s: %d %s", path, rec.Code, rec.Body)
		}
		return d, rec.Body.Bytes(), nil
	}
	_, first, err := serve("/v1/executions?length=100")
	if err != nil {
		return res, err
	}
	var page []core.ExecutionWithState
	if err := json.Unmarshal(first, &page); err != nil || len(page) == 0 {
		return res, fmt.Errorf("first page: %d rows, %v", len(page), err)
	}
	cursor := page[len(page)-1].CreatedAt.String()
	for _, rq := range []struct {
		name, path string
		gated      bool
	}{
		{"newest page (100)", "/v1/executions?length=100", true},
		{"next page (timestamp cursor)", "/v1/executions?length=100&cursor=" + cursor, true},
		{"ffqn prefix filter", "/v1/executions?length=100&ffqn_prefix=" + consoleSeedFFQNs[2], true},
		{"state filter (finished_error, 2%)", "/v1/executions?length=100&state=finished_error", true},
		{"with child executions", "/v1/executions?length=100&show_derived=true", true},
		{"counts per state (newest 1000)", "/v1/execution-counts", false},
		{"counts per state (newest 10000)", "/v1/execution-counts?limit=10000", false},
	} {
		ds := make([]time.Duration, 0, iterations)
		rows := 0
		for range iterations {
			d, body, err := serve(rq.path)
			if err != nil {
				return res, err
			}
			ds = append(ds, d)
			var list []json.RawMessage
			var counts struct {
				Total int `json:"total"`
			}
			if json.Unmarshal(body, &list) == nil {
				rows = len(list)
			} else if json.Unmarshal(body, &counts) == nil {
				rows = counts.Total // executions counted
			}
		}
		m := consoleBenchMetric{Name: rq.name, Path: rq.path, Rows: rows, Latency: summarize(ds), Gated: rq.gated}
		if rq.gated && m.Latency.P99ms > res.TargetMs {
			res.Pass = false
		}
		res.Requests = append(res.Requests, m)
	}
	return res, nil
}
