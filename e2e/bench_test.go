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
		{"SDKW1", false, []string{"bench", "w1", "--executions", "20", "--workers", "2", "--json"}, func(t *testing.T, out map[string]any) {
			for _, kind := range []string{"activities", "workflows"} {
				if got := out[kind].(map[string]any)["latency"].(map[string]any)["count"]; got != 20.0 {
					t.Errorf("%s measured = %v, want 20", kind, got)
				}
			}
		}},
		{"SDKW2", false, []string{"bench", "w2", "--iterations", "2", "--children", "5", "--workers", "2", "--json"}, func(t *testing.T, out map[string]any) {
			if got := out["latency"].(map[string]any)["count"]; got != 2.0 {
				t.Errorf("workflows measured = %v, want 2", got)
			}
		}},
		{"SDKW3", false, []string{"bench", "w3", "--sleepers", "5", "--sleep", "100ms", "--workers", "2", "--json"}, func(t *testing.T, out map[string]any) {
			if got := out["timer_lateness"].(map[string]any)["count"]; got != 5.0 {
				t.Errorf("sleeps measured = %v, want 5", got)
			}
		}},
		{"SDKW1StartsItsOwnServer", true, []string{"bench", "w1", "--executions", "10", "--workers", "1", "--json"}, func(t *testing.T, out map[string]any) {
			cost := out["workflows"].(map[string]any)["cost"].(map[string]any)
			if cost["server_cpu_ms_per_op"] == nil || cost["durability"] != "fsync" {
				t.Errorf("the server it started must be measured: %v", cost)
			}
		}},
		{"SDKEmbedded", true, []string{"bench", "w2", "--embedded", "--iterations", "1", "--children", "5", "--json"}, func(t *testing.T, out map[string]any) {
			if got := out["latency"].(map[string]any)["count"]; got != 1.0 {
				t.Errorf("workflows measured = %v, want 1", got)
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
