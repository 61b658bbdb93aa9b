// Command ratio reads the JSON lines of one peer-harness run (bench/peers/run.sh)
// and prints Stela's figures beside its peers' as ratios: medians over the
// rounds, each round's value, and the load average seen before each process.
// Only figures from one run on one machine are compared.
//
//	go run . RESULTS.jsonl
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
)

type result struct {
	Workload string         `json:"workload"`
	OK       bool           `json:"ok"`
	Count    int            `json:"count"`
	Thru     float64        `json:"throughput_per_s"`
	P50      float64        `json:"p50_ms"`
	P99      float64        `json:"p99_ms"`
	CPUS     float64        `json:"cpu_s"`
	Config   map[string]any `json:"config"`
	Notes    string         `json:"notes"`
}

type line struct {
	Round  int      `json:"round"`
	Key    string   `json:"key"`
	Load   float64  `json:"load1"`
	SrvCPU *float64 `json:"server_cpu_s"`
	Res    *result  `json:"res"`
}

// sample is one process's figures.
type sample struct {
	round          int
	load           float64
	thru, p50, p99 float64
	cpuMsPerStep   float64 // (client + server CPU) per step, ms
}

func main() {
	fanout := flag.Int("fanout", 100, "W2 activities per workflow (the harness's -fanout)")
	sleepMs := flag.Float64("sleep-ms", 1000, "W3 sleep in ms (the harness's -sleep)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: ratio [-fanout N] [-sleep-ms MS] RESULTS.jsonl")
		os.Exit(2)
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	samples := map[string][]sample{} // "key/workload"
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l line
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Res == nil || !l.Res.OK || l.Res.Count == 0 {
			continue
		}
		steps := float64(l.Res.Count)
		if l.Res.Workload == "w2" {
			steps *= float64(*fanout)
		}
		srv := 0.0
		if l.SrvCPU != nil {
			srv = *l.SrvCPU
		}
		samples[l.Key+"/"+l.Res.Workload] = append(samples[l.Key+"/"+l.Res.Workload], sample{
			round: l.Round, load: l.Load, thru: l.Res.Thru, p50: l.Res.P50, p99: l.Res.P99,
			cpuMsPerStep: (l.Res.CPUS + srv) * 1000 / steps})
	}
	rows := []struct {
		name, stela, peer, peerName string
		metric                      string // thru | p50 | overhead
		target                      string
	}{
		{"W1 activities (job queue)", "stelasdk/w1", "river/w1", "River", "thru", "≥ 3× River, CPU ≤ River's"},
		{"W1 workflows, one activity each", "stelasdk:w1workflow/w1", "dbos/w1", "DBOS", "thru", "≥ 2× DBOS, CPU ≤ DBOS's"},
		{"W2 100-child fan-out, p50 per workflow", "stelasdk/w2", "dbos/w2", "DBOS", "p50", "≤ 0.5× DBOS, CPU ≤ DBOS's"},
		{"W3 1 s sleep, p50 submit→done", "stelasdk/w3", "dbos/w3", "DBOS", "overhead", "overhead p50 ≤ 10 ms, p99 ≤ 25 ms"},
	}
	fmt.Println("| workload | Stela SDK | peer | ratio | CPU ms/step Stela vs peer | target | rounds (Stela; peer) |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, r := range rows {
		s, p := samples[r.stela], samples[r.peer]
		if len(s) == 0 || len(p) == 0 {
			fmt.Printf("| %s | %s | %s | – | – | %s | missing samples |\n", r.name, count(s), count(p), r.target)
			continue
		}
		sCPU, pCPU := med(s, func(x sample) float64 { return x.cpuMsPerStep }), med(p, func(x sample) float64 { return x.cpuMsPerStep })
		var sv, pv, ratio string
		var rounds []string
		switch r.metric {
		case "thru":
			a, b := med(s, thru), med(p, thru)
			sv, pv, ratio = fmt.Sprintf("%.0f/s", a), fmt.Sprintf("%s %.0f/s", r.peerName, b), fmt.Sprintf("%.2f×", a/b)
			rounds = perRound(s, p, thru, "%.0f")
		case "p50":
			a, b := med(s, p50), med(p, p50)
			sv, pv, ratio = fmt.Sprintf("%.1f ms", a), fmt.Sprintf("%s %.1f ms", r.peerName, b), fmt.Sprintf("%.2f×", a/b)
			rounds = perRound(s, p, p50, "%.1f")
		case "overhead":
			a, b := med(s, p50)-*sleepMs, med(p, p50)-*sleepMs
			a99 := med(s, p99) - *sleepMs
			sv = fmt.Sprintf("%.1f ms over (p99 %.1f)", a, a99)
			pv = fmt.Sprintf("%s %.1f ms over", r.peerName, b)
			ratio = fmt.Sprintf("%.2f× the overhead", a/b)
			rounds = perRound(s, p, p50, "%.1f")
		}
		fmt.Printf("| %s | %s | %s | %s | %.3f vs %.3f (%.2f×) | %s | %s |\n", r.name, sv, pv, ratio, sCPU, pCPU, sCPU/pCPU, r.target, strings.Join(rounds, "; "))
	}
	var loads []float64
	for _, ss := range samples {
		for _, x := range ss {
			loads = append(loads, x.load)
		}
	}
	sort.Float64s(loads)
	if len(loads) > 0 {
		fmt.Printf("\nLoad average (1 min) before each process: %.2f–%.2f, median %.2f. Medians over rounds; CPU = bench process + its server.\n",
			loads[0], loads[len(loads)-1], loads[len(loads)/2])
	}
}

func thru(x sample) float64 { return x.thru }
func p50(x sample) float64  { return x.p50 }
func p99(x sample) float64  { return x.p99 }

func count(s []sample) string { return fmt.Sprintf("%d samples", len(s)) }

func med(s []sample, f func(sample) float64) float64 {
	xs := make([]float64, len(s))
	for i, x := range s {
		xs[i] = f(x)
	}
	sort.Float64s(xs)
	n := len(xs)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

func perRound(s, p []sample, f func(sample) float64, format string) []string {
	vals := func(ss []sample) string {
		sort.Slice(ss, func(i, j int) bool { return ss[i].round < ss[j].round })
		var out []string
		for _, x := range ss {
			out = append(out, fmt.Sprintf(format, f(x)))
		}
		return strings.Join(out, "/")
	}
	return []string{vals(s), vals(p)}
}
