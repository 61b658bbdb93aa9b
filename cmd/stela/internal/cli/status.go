package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/httpapi"
	"github.com/stela-dev/stela/obs"
)

// serverStatus is what `stela status` reports (its --json output).
type serverStatus struct {
	URL     string `json:"url"`
	Healthy bool   `json:"healthy"`
	Ready   bool   `json:"ready"`
	// NotReady is /readyz's reason when not ready.
	NotReady string `json:"not_ready,omitempty"`
	// Counts are GET /v1/execution-counts (nil when it failed).
	Counts *executionCounts `json:"executions,omitempty"`
	// Metrics are read from /metrics (nil when the server does not serve
	// it, e.g. API Gateway).
	Metrics *statusMetrics `json:"metrics,omitempty"`
}

type executionCounts struct {
	Counts   map[string]int `json:"counts"`
	Total    int            `json:"total"`
	Complete bool           `json:"complete"`
}

// statusMetrics are the counters `stela status` shows, since the server
// started.
type statusMetrics struct {
	SweepLagSeconds  *float64 `json:"sweep_lag_seconds,omitempty"`
	SweepPasses      float64  `json:"sweep_passes"`
	SweepFailed      float64  `json:"sweep_passes_failed"`
	DelaysFired      float64  `json:"delays_fired"`
	LocksExpired     float64  `json:"locks_expired"`
	Created          float64  `json:"executions_created"`
	Finished         float64  `json:"executions_finished"`
	Requests         float64  `json:"http_requests"`
	ServerErrors     float64  `json:"http_5xx"`
	VersionConflicts float64  `json:"version_conflicts"`
}

// countOrder is the order the states are printed in.
var countOrder = []string{"pending", "scheduled", "locked", "blocked", "paused", "cancelling",
	"finished_ok", "finished_error", "finished_execution_failure"}

func serverStatusCommand() *command {
	return &command{
		name: "status", summary: "summarise a server's health, executions and timers", maxArgs: 0,
		doc: "Reads GET /healthz and /readyz (the process is up; the store is reachable and its schema\n" +
			"current), GET /v1/execution-counts (executions per state, newest 1000) and, where the server\n" +
			"serves it (`stela dev`), /metrics (sweep lag, timer passes, requests). Exits 1 when the\n" +
			"server is unreachable, unhealthy or not ready. For one execution's status use\n" +
			"`stela execution status <id>`.",
		flags: func(fs *flag.FlagSet, e *Env) func(context.Context, []string) error {
			cf := addClientFlags(fs, e)
			asJSON := fs.Bool("json", false, "print the status as JSON")
			return func(ctx context.Context, _ []string) error {
				c, err := cf.client(client.WithRetry(client.RetryPolicy{MaxAttempts: 1})) // a probe reports, it does not insist
				if err != nil {
					return err
				}
				st, err := readStatus(ctx, c, cf.url)
				if err != nil {
					return err
				}
				if *asJSON {
					b, _ := json.MarshalIndent(st, "", "  ")
					fmt.Fprintln(e.Stdout, string(b))
				} else {
					printStatus(e.Stdout, st)
				}
				switch {
				case !st.Healthy:
					return errors.New("server unhealthy")
				case !st.Ready:
					return fmt.Errorf("server not ready: %s", st.NotReady)
				}
				return nil
			}
		},
	}
}

// readStatus queries the server; only an unreachable server is an error.
func readStatus(ctx context.Context, c *client.Client, url string) (*serverStatus, error) {
	st := &serverStatus{URL: url}
	resp, err := c.Do(ctx, http.MethodGet, httpapi.HealthzPath, nil, nil, client.JSON)
	if err != nil {
		return nil, err
	}
	st.Healthy = resp.Status == http.StatusOK
	if resp, err = c.Do(ctx, http.MethodGet, httpapi.ReadyzPath, nil, nil, client.JSON); err != nil {
		return nil, err
	}
	st.Ready = resp.Status == http.StatusOK
	if !st.Ready {
		var body struct {
			Err string `json:"err"`
		}
		if json.Unmarshal(resp.Body, &body) == nil && body.Err != "" {
			st.NotReady = body.Err
		} else {
			st.NotReady = fmt.Sprintf("HTTP %d", resp.Status)
		}
	}
	if resp, err := c.Call(ctx, http.MethodGet, "/v1/execution-counts", nil, nil, client.JSON); err == nil {
		var ec executionCounts
		if json.Unmarshal(resp.Body, &ec) == nil {
			st.Counts = &ec
		}
	}
	if resp, err := c.Do(ctx, http.MethodGet, metricsPath, nil, nil, "text/plain"); err == nil && resp.Status == http.StatusOK {
		st.Metrics = parseStatusMetrics(resp.Body)
	}
	return st, nil
}

// parseStatusMetrics picks the counters of `stela status` from Prometheus
// text (nil when it does not parse as such).
func parseStatusMetrics(body []byte) *statusMetrics {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil
	}
	sum := func(name string, keep func(labels map[string]string) bool) float64 {
		total := 0.0
		for _, m := range fams[name].GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if keep != nil && !keep(labels) {
				continue
			}
			switch {
			case m.Counter != nil:
				total += m.GetCounter().GetValue()
			case m.Gauge != nil:
				total += m.GetGauge().GetValue()
			}
		}
		return total
	}
	label := func(k, v string) func(map[string]string) bool {
		return func(l map[string]string) bool { return l[k] == v }
	}
	sm := &statusMetrics{
		SweepPasses:      sum(obs.MetricSweepPasses, nil),
		SweepFailed:      sum(obs.MetricSweepPasses, label("result", "failed")),
		DelaysFired:      sum(obs.MetricDelaysFired, nil),
		LocksExpired:     sum(obs.MetricLocksExpired, nil),
		Created:          sum(obs.MetricExecutionsCreated, nil),
		Finished:         sum(obs.MetricExecutionsFinished, nil),
		Requests:         sum(obs.MetricHTTPRequests, nil),
		ServerErrors:     sum(obs.MetricHTTPRequests, func(l map[string]string) bool { return strings.HasPrefix(l["code"], "5") }),
		VersionConflicts: sum(obs.MetricCommits, label("result", "version_conflict")),
	}
	if f := fams[obs.MetricSweepLag]; f != nil && len(f.GetMetric()) > 0 {
		v := gaugeValue(f.GetMetric()[0])
		sm.SweepLagSeconds = &v
	}
	return sm
}

func gaugeValue(m *dto.Metric) float64 {
	if m.Gauge != nil {
		return m.GetGauge().GetValue()
	}
	return m.GetUntyped().GetValue()
}

func printStatus(w io.Writer, st *serverStatus) {
	yes := func(ok bool, good, bad string) string {
		if ok {
			return good
		}
		return bad
	}
	fmt.Fprintf(w, "server:      %s\n", st.URL)
	fmt.Fprintf(w, "health:      %s\n", yes(st.Healthy, "ok", "UNHEALTHY"))
	if st.Ready {
		fmt.Fprintf(w, "ready:       yes (store reachable, schema current)\n")
	} else {
		fmt.Fprintf(w, "ready:       NO: %s\n", st.NotReady)
	}
	if c := st.Counts; c != nil {
		var parts []string
		for _, k := range countOrder {
			parts = append(parts, fmt.Sprintf("%s %d", strings.ReplaceAll(k, "_", " "), c.Counts[k]))
		}
		scope := "all"
		if !c.Complete {
			scope = "newest"
		}
		fmt.Fprintf(w, "executions:  %d (%s): %s\n", c.Total, scope, strings.Join(parts, ", "))
	} else {
		fmt.Fprintf(w, "executions:  unavailable (GET /v1/execution-counts failed)\n")
	}
	m := st.Metrics
	if m == nil {
		fmt.Fprintf(w, "timers:      not reported here (no %s: on AWS see the CloudWatch dashboard, docs/operations.md)\n", metricsPath)
		return
	}
	lag := "unknown"
	if m.SweepLagSeconds != nil {
		lag = fmt.Sprintf("%.1fs", *m.SweepLagSeconds)
	}
	fmt.Fprintf(w, "timers:      sweep lag %s; %.0f passes (%.0f failed); %.0f delays fired, %.0f expired locks resolved\n",
		lag, m.SweepPasses, m.SweepFailed, m.DelaysFired, m.LocksExpired)
	fmt.Fprintf(w, "since start: %.0f executions created, %.0f finished; %.0f requests (%.0f 5xx); %.0f version conflicts\n",
		m.Created, m.Finished, m.Requests, m.ServerErrors, m.VersionConflicts)
}
