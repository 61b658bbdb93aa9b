package obs_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stela-dev/stela/obs"
)

// parseEMF parses out, failing the test on any line EMF would reject.
func parseEMF(t *testing.T, out []byte) []obs.EMFDocument {
	t.Helper()
	docs, err := obs.ParseEMF(bytes.NewReader(out))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return docs
}

func TestEMFLinesCarryTheWorkloadOnce(t *testing.T) {
	r := newRig(t, nil)
	w := runWorkload(t, r)
	var out bytes.Buffer
	at := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	if err := r.m.WriteEMF(&out, obs.EMFOptions{Timestamp: at, Properties: map[string]string{"Function": "api"}}); err != nil {
		t.Fatal(err)
	}
	docs := parseEMF(t, out.Bytes())
	if len(docs) == 0 {
		t.Fatal("no EMF lines")
	}
	for _, d := range docs {
		if d.Root["Function"] != "api" {
			t.Fatalf("property Function missing: %v", d.Root)
		}
		if d.Root["_aws"].(map[string]any)["Timestamp"] != float64(at.UnixMilli()) {
			t.Fatalf("timestamp %v", d.Root["_aws"])
		}
	}
	for _, c := range []struct {
		name  string
		count bool
		where []string
		want  float64
	}{
		{"ExecutionsCreated", false, nil, float64(w.submitted)},
		{"ExecutionsFinished", false, []string{"Outcome", "ok"}, float64(w.finishedOK)},
		{"ExecutionsFinished", false, []string{"Outcome", "timeout"}, float64(w.finishedTimeout + w.expiredLocks)},
		{"LockGrants", false, nil, float64(w.lockedBatch + 3)},
		{"LockBatchSize", true, nil, 4},
		{"DelaysFired", false, nil, float64(w.delays)},
		{"LocksExpired", false, nil, float64(w.expiredLocks)},
		{"SweepPasses", false, []string{"Result", "ok"}, 1},
		{"SweepLag", false, nil, 2},
		{"StoreCommits", false, []string{"Result", "already_finished", "Op", "append"}, float64(w.conflicts)},
		{"StoreCommitLatency", true, []string{"Op", "create"}, float64(w.submitted)},
		{"HTTPRequests", false, []string{"StatusClass", "2xx", "Route", "POST /v1/executions"}, 6},
		{"HTTPLatency", true, []string{"Route", "POST /v1/executions"}, 6},
	} {
		if got := obs.SumEMF(docs, c.name, c.count, c.where...); got != c.want {
			t.Errorf("%s %v = %v, want %v", c.name, c.where, got, c.want)
		}
	}
	t.Run("LatencyIsInMillisecondsAtBucketResolution", func(t *testing.T) {
		for _, d := range docs {
			if u, ok := d.Units["StoreCommitLatency"]; ok {
				if u != "Milliseconds" {
					t.Fatalf("unit %s", u)
				}
				for _, v := range d.Root["StoreCommitLatency"].([]any) {
					if ms := v.(float64); ms < 0.5 || ms > 30000 {
						t.Fatalf("latency %v ms outside the buckets (0.5 ms .. 30 s)", ms)
					}
				}
			}
		}
	})
	t.Run("RouteIsAPropertyNotADimension", func(t *testing.T) {
		for _, d := range docs {
			for _, set := range d.Dimensions {
				for _, k := range set {
					if k == "Route" || k == "Op" && d.Units["StoreCommits"] != "" {
						t.Fatalf("dimension %s (a billed metric per value): %v", k, d.Dimensions)
					}
				}
			}
		}
	})
	t.Run("ASecondFlushWritesOnlyWhatChanged", func(t *testing.T) {
		var again bytes.Buffer
		if err := r.m.WriteEMF(&again, obs.EMFOptions{}); err != nil {
			t.Fatal(err)
		}
		if again.Len() != 0 {
			t.Fatalf("flush without activity wrote:\n%s", again.String())
		}
		r.submit("test:obs/act.work")
		again.Reset()
		if err := r.m.WriteEMF(&again, obs.EMFOptions{}); err != nil {
			t.Fatal(err)
		}
		docs := parseEMF(t, again.Bytes())
		if got := obs.SumEMF(docs, "ExecutionsCreated", false); got != 1 {
			t.Fatalf("ExecutionsCreated after one more submit = %v, want 1:\n%s", got, again.String())
		}
		if got := obs.SumEMF(docs, "HTTPLatency", true); got != 1 {
			t.Fatalf("HTTPLatency values = %v, want 1", got)
		}
		if strings.Contains(again.String(), "SweepLag") {
			t.Fatalf("SweepLag written although no pass ran since the last flush:\n%s", again.String())
		}
	})
	t.Run("ManyObservationsAreSplitInto100ValueLines", func(t *testing.T) {
		for range 250 {
			r.m.HTTPRequest("GET /v1/executions", 200, time.Millisecond)
		}
		var b bytes.Buffer
		if err := r.m.WriteEMF(&b, obs.EMFOptions{}); err != nil {
			t.Fatal(err)
		}
		docs := parseEMF(t, b.Bytes())
		if got := obs.SumEMF(docs, "HTTPLatency", true, "Route", "GET /v1/executions"); got != 250 {
			t.Fatalf("HTTPLatency values = %v, want 250", got)
		}
		if got := obs.SumEMF(docs, "HTTPRequests", false, "Route", "GET /v1/executions"); got != 250 {
			t.Fatalf("HTTPRequests = %v, want 250", got)
		}
		// One line of the requests (labels route, code), three of the
		// latencies (label route): 100 + 100 + 50 values.
		if n := strings.Count(b.String(), "\n"); n != 4 {
			t.Fatalf("%d lines, want 4", n)
		}
	})
}

func ExampleMetrics_WriteEMF() {
	m := obs.NewMetrics()
	m.HTTPRequest("GET /v1/executions", 200, 3*time.Millisecond)
	var b bytes.Buffer
	_ = m.WriteEMF(&b, obs.EMFOptions{Timestamp: time.UnixMilli(1767225600000)})
	fmt.Print(b.String())
	// Output:
	// {"Code":"200","HTTPRequests":1,"Route":"GET /v1/executions","StatusClass":"2xx","_aws":{"CloudWatchMetrics":[{"Dimensions":[[],["StatusClass"]],"Metrics":[{"Name":"HTTPRequests","Unit":"Count"}],"Namespace":"Stela"}],"Timestamp":1767225600000}}
	// {"HTTPLatency":5,"Route":"GET /v1/executions","_aws":{"CloudWatchMetrics":[{"Dimensions":[[]],"Metrics":[{"Name":"HTTPLatency","Unit":"Milliseconds"}],"Namespace":"Stela"}],"Timestamp":1767225600000}}
}
