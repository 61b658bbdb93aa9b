package obs_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stela-dev/stela/obs"
)

// emfDoc is one parsed EMF line.
type emfDoc struct {
	raw     map[string]any
	metrics map[string]string // name → unit
	dims    [][]string
}

// ParseEMF checks lines against the EMF specification's structure and
// returns the documents: a root "_aws" with a millisecond Timestamp and
// CloudWatchMetrics directives (Namespace, Dimensions: arrays of at most
// 30 keys present at the root as strings, Metrics: Name and Unit, each
// present at the root as a number or an array of at most 100 numbers).
func parseEMF(t *testing.T, out []byte) []emfDoc {
	t.Helper()
	var docs []emfDoc
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var raw map[string]any
		if err := json.Unmarshal(line, &raw); err != nil {
			t.Fatalf("EMF line is not JSON: %v\n%s", err, line)
		}
		aws, ok := raw["_aws"].(map[string]any)
		if !ok {
			t.Fatalf("no _aws member: %s", line)
		}
		if ts, ok := aws["Timestamp"].(float64); !ok || ts < 1e12 {
			t.Fatalf("_aws.Timestamp %v is not epoch milliseconds", aws["Timestamp"])
		}
		cwm, ok := aws["CloudWatchMetrics"].([]any)
		if !ok || len(cwm) == 0 {
			t.Fatalf("no CloudWatchMetrics: %s", line)
		}
		d := emfDoc{raw: raw, metrics: map[string]string{}}
		for _, dir := range cwm {
			dir := dir.(map[string]any)
			if dir["Namespace"] != obs.DefaultNamespace {
				t.Fatalf("Namespace = %v", dir["Namespace"])
			}
			for _, set := range dir["Dimensions"].([]any) {
				var keys []string
				for _, k := range set.([]any) {
					k := k.(string)
					if _, ok := raw[k].(string); !ok {
						t.Fatalf("dimension %s is not a string member of the root: %s", k, line)
					}
					keys = append(keys, k)
				}
				if len(keys) > 30 {
					t.Fatalf("%d dimensions in a set", len(keys))
				}
				d.dims = append(d.dims, keys)
			}
			for _, m := range dir["Metrics"].([]any) {
				m := m.(map[string]any)
				name, unit := m["Name"].(string), m["Unit"].(string)
				switch v := raw[name].(type) {
				case float64:
				case []any:
					if len(v) == 0 || len(v) > 100 {
						t.Fatalf("metric %s has %d values", name, len(v))
					}
				default:
					t.Fatalf("metric %s has no numeric value at the root: %s", name, line)
				}
				d.metrics[name] = unit
			}
		}
		docs = append(docs, d)
	}
	return docs
}

// sum adds the values of metric name over docs whose root members match
// the pairs of where (a histogram counts its values when count is set).
func sum(docs []emfDoc, name string, count bool, where ...string) float64 {
	total := 0.0
next:
	for _, d := range docs {
		if _, ok := d.metrics[name]; !ok {
			continue
		}
		for i := 0; i+1 < len(where); i += 2 {
			if d.raw[where[i]] != where[i+1] {
				continue next
			}
		}
		switch v := d.raw[name].(type) {
		case float64:
			if count {
				total++
			} else {
				total += v
			}
		case []any:
			for _, x := range v {
				if count {
					total++
				} else {
					total += x.(float64)
				}
			}
		}
	}
	return total
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
		if d.raw["Function"] != "api" {
			t.Fatalf("property Function missing: %v", d.raw)
		}
		if d.raw["_aws"].(map[string]any)["Timestamp"] != float64(at.UnixMilli()) {
			t.Fatalf("timestamp %v", d.raw["_aws"])
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
		if got := sum(docs, c.name, c.count, c.where...); got != c.want {
			t.Errorf("%s %v = %v, want %v", c.name, c.where, got, c.want)
		}
	}
	t.Run("LatencyIsInMillisecondsAtBucketResolution", func(t *testing.T) {
		for _, d := range docs {
			if u, ok := d.metrics["StoreCommitLatency"]; ok {
				if u != "Milliseconds" {
					t.Fatalf("unit %s", u)
				}
				for _, v := range d.raw["StoreCommitLatency"].([]any) {
					if ms := v.(float64); ms < 0.5 || ms > 30000 {
						t.Fatalf("latency %v ms outside the buckets (0.5 ms .. 30 s)", ms)
					}
				}
			}
		}
	})
	t.Run("RouteIsAPropertyNotADimension", func(t *testing.T) {
		for _, d := range docs {
			for _, set := range d.dims {
				for _, k := range set {
					if k == "Route" || k == "Op" && d.metrics["StoreCommits"] != "" {
						t.Fatalf("dimension %s (a billed metric per value): %v", k, d.dims)
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
		if got := sum(docs, "ExecutionsCreated", false); got != 1 {
			t.Fatalf("ExecutionsCreated after one more submit = %v, want 1:\n%s", got, again.String())
		}
		if got := sum(docs, "HTTPLatency", true); got != 1 {
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
		if got := sum(docs, "HTTPLatency", true, "Route", "GET /v1/executions"); got != 250 {
			t.Fatalf("HTTPLatency values = %v, want 250", got)
		}
		if got := sum(docs, "HTTPRequests", false, "Route", "GET /v1/executions"); got != 250 {
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
	m := obs.NewMetrics(false)
	m.HTTPRequest("GET /v1/executions", 200, 3*time.Millisecond)
	var b bytes.Buffer
	_ = m.WriteEMF(&b, obs.EMFOptions{Timestamp: time.UnixMilli(1767225600000)})
	fmt.Print(b.String())
	// Output:
	// {"Code":"200","HTTPRequests":1,"Route":"GET /v1/executions","StatusClass":"2xx","_aws":{"CloudWatchMetrics":[{"Dimensions":[[],["StatusClass"]],"Metrics":[{"Name":"HTTPRequests","Unit":"Count"}],"Namespace":"Stela"}],"Timestamp":1767225600000}}
	// {"HTTPLatency":5,"Route":"GET /v1/executions","_aws":{"CloudWatchMetrics":[{"Dimensions":[[]],"Metrics":[{"Name":"HTTPLatency","Unit":"Milliseconds"}],"Namespace":"Stela"}],"Timestamp":1767225600000}}
}
