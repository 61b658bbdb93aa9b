package e2e_test

import (
	"encoding/json"
	"testing"
)

// The benchmarks are measured by hand (docs/cli.md); this only keeps the
// `stela bench` commands working, on tiny sizes, with no timing assertion.
func TestBenchCommandsRunToCompletion(t *testing.T) {
	d := startDev(t, t.TempDir(), "--log-level", "warn")
	defer d.stop(t)
	for _, tc := range []struct {
		name  string
		local bool // runs in-process: no --url
		args  []string
		check func(t *testing.T, out map[string]any)
	}{
		{"Roundtrip", false, []string{"bench", "roundtrip", "--executions", "40", "--json"}, func(t *testing.T, out map[string]any) {
			if got := out["latency"].(map[string]any)["count"]; got != 40.0 {
				t.Errorf("round trips measured = %v, want 40", got)
			}
		}},
		{"Fanout", false, []string{"bench", "fanout", "--children", "10", "--iterations", "2", "--json"}, func(t *testing.T, out map[string]any) {
			if got := out["latency"].(map[string]any)["count"]; got != 2.0 {
				t.Errorf("iterations measured = %v, want 2", got)
			}
		}},
		{"Delays", false, []string{"bench", "delays", "--delays", "10", "--delay", "100ms", "--json"}, func(t *testing.T, out map[string]any) {
			if got := out["delays"]; got != 10.0 {
				t.Errorf("delays answered = %v, want 10", got)
			}
		}},
		{"Console", true, []string{"bench", "console", "--executions", "200", "--iterations", "2", "--json"}, func(t *testing.T, out map[string]any) {
			if reqs, _ := out["requests"].([]any); len(reqs) != 7 || out["executions"] != 200.0 {
				t.Errorf("console bench = %v", out)
			}
		}},
		{"Embedded", true, []string{"bench", "embedded", "--executions", "100", "--json"}, func(t *testing.T, out map[string]any) {
			if got := out["latency"].(map[string]any)["count"]; got != 100.0 {
				t.Errorf("round trips measured = %v, want 100", got)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := d
			if tc.local {
				srv = nil
			}
			raw := srv.mustCLI(t, tc.args...)
			var out map[string]any
			if err := json.Unmarshal([]byte(raw), &out); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, raw)
			}
			tc.check(t, out)
		})
	}
}
