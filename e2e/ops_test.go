package e2e_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// raw sends body (JSON, may be empty) with header pairs and returns the
// status and body.
func (d *devServer) raw(t *testing.T, method, path, body string, hdr ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, d.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// metricLine reports whether the Prometheus text has the sample line.
func hasSample(text, sample string) bool {
	for _, l := range strings.Split(text, "\n") {
		if l == sample {
			return true
		}
	}
	return false
}

// TestQuickStartMovesTheMetrics plays the README's quick start (submit,
// lock, append at version 2, stamped now: the server refuses event times
// far from its clock) against `stela dev` and reads /metrics and `stela
// status` afterwards.
func TestQuickStartMovesTheMetrics(t *testing.T) {
	d := startDev(t, t.TempDir())
	defer d.stop(t)

	status, id := d.raw(t, "POST", "/v1/executions", `{"ffqn":"demo:hello/greeter.greet","params":["World"]}`, "Accept", "text/plain")
	if status != http.StatusCreated {
		t.Fatalf("submit: %d %s", status, id)
	}
	status, body := d.raw(t, "POST", "/v1/worker/lock/pending-by-ffqns", `{
  "ffqns": ["demo:hello/greeter.greet"], "batch_size": 8,
  "component_id": {"component_type": "activity", "name": "greeter",
                   "component_digest": "sha256:0000000000000000000000000000000000000000000000000000000000000000"},
  "deployment_id": "Dep_00000000000000000000000000",
  "executor_id": "Exr_01KBNJ2T3D8W7H3X6Q4M9R5V1A", "run_id": "Run_01KBNJ2V0P6C4Y8N2B7K3T5W9E",
  "lock_expires_at": "2099-01-01T00:00:00Z",
  "retry_config": {"max_retries": 3, "retry_exp_backoff": {"secs": 1, "nanos": 0}}}`)
	if status != http.StatusOK || !strings.Contains(body, id) {
		t.Fatalf("lock: %d %s", status, body)
	}
	status, body = d.raw(t, "POST", "/v1/worker/append", `{
  "execution_id": "`+id+`", "version": 2,
  "req": {"created_at": "`+now().String()+`",
          "event": {"finished": {"retval": {"ok": {"type": "string", "value": "Hello, World!"}}, "http_client_traces": null}}}}`)
	if status != http.StatusOK {
		t.Fatalf("append: %d %s", status, body)
	}

	status, metrics := d.raw(t, "GET", "/metrics", "")
	if status != http.StatusOK {
		t.Fatalf("/metrics: %d %s", status, metrics)
	}
	for _, want := range []string{
		`stela_executions_created_total 1`,
		`stela_executions_finished_total{outcome="ok"} 1`,
		`stela_lock_grants_total 1`,
		`stela_store_commits_total{op="append",result="ok"} 1`,
		`stela_http_requests_total{code="201",route="POST /v1/executions"} 1`,
		`stela_http_requests_total{code="200",route="POST /v1/worker/lock/pending-by-ffqns"} 1`,
		`stela_http_requests_total{code="200",route="POST /v1/worker/append"} 1`,
		`stela_timers_sweep_lag_seconds 0`,
	} {
		if !hasSample(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if !strings.Contains(metrics, "stela_timers_passes_total{result=\"ok\"}") || !strings.Contains(metrics, "go_goroutines") {
		t.Errorf("/metrics lacks the timer passes or the Go runtime metrics")
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", metrics)
	}

	for path, want := range map[string]string{"/healthz": `"status": "ok"`, "/readyz": `"status": "ready"`} {
		if status, body := d.raw(t, "GET", path, ""); status != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("%s: %d %s", path, status, body)
		}
	}
	out := d.mustCLI(t, "status")
	for _, want := range []string{"health:      ok", "ready:       yes", "executions:  1 (all)", "finished ok 1", "timers:      sweep lag 0.0s",
		"1 executions created, 1 finished"} {
		if !strings.Contains(out, want) {
			t.Errorf("stela status lacks %q:\n%s", want, out)
		}
	}
}

func TestMetricsAreBehindTheTokenAndProbesAreNot(t *testing.T) {
	d := startDev(t, t.TempDir(), "--token", "s3cret")
	defer d.stop(t)
	if status, _ := d.raw(t, "GET", "/metrics", ""); status != http.StatusUnauthorized {
		t.Errorf("/metrics without the token: %d, want 401", status)
	}
	if status, body := d.raw(t, "GET", "/metrics", "", "Authorization", "Bearer s3cret"); status != http.StatusOK ||
		!strings.Contains(body, "stela_executions_created_total") {
		t.Errorf("/metrics with the token: %d", status)
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if status, _ := d.raw(t, "GET", p, ""); status != http.StatusOK {
			t.Errorf("%s without the token: %d, want 200 (probes carry no token)", p, status)
		}
	}
	if r := d.cli(t, "status"); r.code != 0 || !strings.Contains(r.stdout, "executions:  unavailable") {
		t.Errorf("status without the token: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if out := d.mustCLI(t, "status", "--token", "s3cret", "--json"); !strings.Contains(out, `"ready": true`) ||
		!strings.Contains(out, `"sweep_lag_seconds": 0`) {
		t.Errorf("status --json with the token:\n%s", out)
	}
}

func TestStatusOfAnUnreachableServerFails(t *testing.T) {
	var d *devServer
	r := d.cli(t, "status", "--url", "http://127.0.0.1:1")
	if r.code != 1 || !strings.Contains(r.stderr, "stela dev") {
		t.Errorf("exit %d, stderr %q; want 1 with a hint", r.code, r.stderr)
	}
}
