package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/stela-dev/stela/dynamo/dynamometer"
	"github.com/stela-dev/stela/functions/app"
)

// costs is the price of a workload split by what is billed, in dollars for
// the whole run.
type costs struct {
	dynamo, requests, duration float64
	transitions                int
	requestCount               float64
}

func (c costs) total() float64 { return c.dynamo + c.requests + c.duration }

// wru is u's write units under cfg's transaction-index assumption.
func (cfg config) wru(u dynamometer.Usage) float64 {
	if cfg.txIndexTwice {
		return u.WRUTxIndexTwice()
	}
	return u.WRU()
}

// assumption names cfg's transaction-index assumption.
func (cfg config) assumption() string {
	if cfg.txIndexTwice {
		return "index writes inside transactions billed twice"
	}
	return "index writes inside transactions billed once"
}

// costOf prices wl with the door and the transaction-index assumption of cfg.
func (cfg config) costOf(wl workload) costs {
	var c costs
	for label, s := range wl.Steps {
		u := wl.Usage[label]
		perM, _ := cfg.requestPrice(s.class)
		ms := msPerStep(s)
		c.dynamo += (u.Read*pricePerMRRU + cfg.wru(u)*pricePerMWRU) / 1e6
		c.requests += s.requests * perM / 1e6
		c.duration += float64(s.n) * cfg.durationPrice(ms) / 1e6
		c.transitions += s.transitions
		c.requestCount += s.requests
	}
	return c
}

func msPerStep(s stepStat) float64 {
	if s.n == 0 {
		return 0
	}
	return float64(s.dur.Microseconds()) / 1000 / float64(s.n)
}

// perM is dollars per million of n things.
func perM(dollars float64, n int) float64 {
	if n == 0 {
		return 0
	}
	return dollars / float64(n) * 1e6
}

func (cfg config) report(out io.Writer, res *result) {
	fmt.Fprintf(out, "\n=== Layout: %s; retention %s [%s]; %d parallel clients ===\n", res.Layout, res.Retention,
		app.EnvRetention, cfg.parallel)
	if res.Activities.Units > 0 {
		cfg.reportWorkload(out, fmt.Sprintf("Activities: %d x (create, lock in batches of 10, finish)", res.Activities.Units), res.Activities, "activity", "activities")
		reportRetention(out, res.ActivityRetention, res.Activities, res.Activities.Units, "activity")
	}
	if res.EagerStart.Units > 0 {
		cfg.reportWorkload(out, fmt.Sprintf("Activities, eager start: %d x (create-locked through the worker route, %d per request, finish)", res.EagerStart.Units, max(cfg.startBatch, 1)), res.EagerStart, "activity", "activities")
		reportRetention(out, res.EagerStartRetention, res.EagerStart, res.EagerStart.Units, "activity")
	}
	if res.Workflows.Units > 0 {
		cfg.reportWorkload(out, fmt.Sprintf("Workflows: %d x (%d children + 1 delay)", res.Workflows.Units, cfg.children), res.Workflows, "workflow", "workflows")
		reportRetention(out, res.WorkflowRetention, res.Workflows, res.Workflows.Units, "workflow")
	}
	if res.Sleeps.Units > 0 {
		cfg.reportWorkload(out, fmt.Sprintf("Sleeps, fire-and-continue: %d x (create, lock, sleep awaited in memory, the delay fired with the Finished write in one commit)", res.Sleeps.Units), res.Sleeps, "sleep", "sleeps")
		cfg.reportWorkload(out, fmt.Sprintf("Sleeps, fired then written: %d x (create, lock, sleep awaited in memory, fire, then Finished: two requests)", res.SleepsTwoStep.Units), res.SleepsTwoStep, "sleep", "sleeps")
	}
	if res.Fanout.Units > 0 {
		cfg.reportWorkload(out, fmt.Sprintf("Fan-out: %d x (a workflow with %d children, all finishing at once)", res.Fanout.Units, cfg.fanout), res.Fanout, "fan-out", "fan-outs")
		conflicts, finishes := fanInConflicts(res.Fanout)
		fmt.Fprintf(out, "fan-in: %d child finishes at once: %d cancelled transactions + failed conditions = %.3f per child finish; %d transaction re-runs in the workload\n",
			finishes, conflicts, float64(conflicts)/float64(max(finishes, 1)), res.Fanout.Retries)
	}
}

// fanInConflicts returns the cancelled transactions plus failed conditions
// of the children finishing at once, and how many finished.
func fanInConflicts(wl workload) (int, int) {
	const label = "fan 5: children finish at once"
	u := wl.Usage[label]
	return u.Cancelled + u.ConditionFailed, wl.Steps[label].n
}

func (cfg config) reportWorkload(out io.Writer, title string, wl workload, unit, units string) {
	fmt.Fprintf(out, "\n%s\n", title)
	w := tabwriter.NewWriter(out, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "step\tsteps\treq/step\ttrans/step\tms/step\tDDB calls/step\tRRU/step\tWRU/step\tWRU/step tx-index twice\t(table\ttx\tindexes\tfailed+cancelled)\tindex entries/step\ttx cancelled/total\tconds failed\t$/M steps\t")
	labels := make([]string, 0, len(wl.Steps))
	for l := range wl.Steps {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	var tot dynamometer.Usage
	steps := 0
	for _, l := range labels {
		s, u := wl.Steps[l], wl.Usage[l]
		n := float64(s.n)
		one := cfg.costOf(workload{Usage: map[string]dynamometer.Usage{l: u}, Steps: map[string]stepStat{l: s}})
		fmt.Fprintf(w, "%s\t%d\t%.2f\t%.1f\t%.1f\t%.1f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%d/%d\t%d\t%.3f\t\n",
			l, s.n, s.requests/n, float64(s.transitions)/n, msPerStep(s), float64(u.Calls)/n, u.Read/n, u.WRU()/n, u.WRUTxIndexTwice()/n,
			u.Write/n, u.TxWrite/n, u.IndexWrite/n, (u.FailedWrite+u.CancelledWrite)/n, float64(u.IndexEntries)/n,
			u.Cancelled, u.Transactions, u.ConditionFailed, perM(one.total(), s.n))
		tot.Add(u)
		steps += s.n
	}
	_ = w.Flush()
	c := cfg.costOf(wl)
	n := wl.Units
	fmt.Fprintf(out, "per %s: %.1f steps, %.2f requests, %.1f transitions, %.1f DynamoDB calls, %.2f RRU, %.2f WRU (%.1f index entries)\n",
		unit, float64(steps)/float64(n), c.requestCount/float64(n), float64(c.transitions)/float64(n),
		float64(tot.Calls)/float64(n), tot.Read/float64(n), tot.WRU()/float64(n), float64(tot.IndexEntries)/float64(n))
	fmt.Fprintf(out, "per million %s: DynamoDB $%.2f + requests $%.2f + Lambda duration $%.2f = all-in $%.2f; per million transitions $%.3f\n",
		units, perM(c.dynamo, n), perM(c.requests, n), perM(c.duration, n), perM(c.total(), n), perM(c.total(), c.transitions))
	twice := cfg
	twice.txIndexTwice = true
	t2 := twice.costOf(wl)
	fmt.Fprintf(out, "  with index writes inside transactions billed twice: %.2f WRU per %s (+%.2f), all-in $%.2f per million %s\n",
		tot.WRUTxIndexTwice()/float64(n), unit, tot.TxIndexWrite/float64(n), perM(t2.total(), n), units)
	fmt.Fprintf(out, "  item writes over 1 KB: %d of %d (%s), %.2f WRU per %s of their table writes (%s of the table WRU)\n",
		tot.LargeWrites, tot.ItemWrites, pct(tot.LargeWrites, tot.ItemWrites), tot.LargeWriteWRU/float64(n), unit,
		pctF(tot.LargeWriteWRU, tot.Write+tot.TxWrite))
	if cfg.workerDoor != doorAPIGateway {
		gw := cfg
		gw.workerDoor = doorAPIGateway
		g := gw.costOf(wl)
		fmt.Fprintf(out, "  with every worker request through API Gateway instead: all-in $%.2f per million %s, $%.3f per million transitions\n",
			perM(g.total(), n), units, perM(g.total(), g.transitions))
	}
	fmt.Fprintf(out, "transactions: %d, cancelled %d (%s; %d for a TransactionConflict, %d for a failed condition), billed %.1f WRU (%s of all WRU); failed single-item conditions: %d (%.1f WRU); transaction re-runs: %d\n",
		tot.Transactions, tot.Cancelled, pct(tot.Cancelled, tot.Transactions), tot.CancelledConflict, tot.Cancelled-tot.CancelledConflict,
		tot.CancelledWrite, pctF(tot.CancelledWrite, tot.WRU()), tot.ConditionFailed, tot.FailedWrite, wl.Retries)
	if tot.UnknownImages > 0 {
		fmt.Fprintf(out, "WARNING: %d writes to items whose previous image the meter did not know; their index changes may be missed\n", tot.UnknownImages)
	}
}

// summary compares the layouts, under both transaction-index assumptions.
func (cfg config) summary(out io.Writer, results []*result) {
	fmt.Fprintln(out, "\n=== Summary (all-in, worker routes as configured; $ per million; \"+ret.\" adds the retention marking of the timers function, per tree) ===")
	w := tabwriter.NewWriter(out, 2, 4, 2, ' ', tabwriter.AlignRight)
	eagerStart := false
	for _, r := range results {
		eagerStart = eagerStart || r.EagerStart.Units > 0
	}
	head := "layout\ttx index\tactivity WRU\tRRU\t$/M activities\t+ret.\t$/M transitions\t"
	if eagerStart {
		head += "eager-start WRU\tRRU\t$/M activities\t+ret.\t$/M transitions\t"
	}
	fmt.Fprintln(w, head+"workflow WRU\tRRU\t$/M workflows\t+ret.\t$/M transitions\tretention WRU/workflow\tfan-in conflicts/child finish\t")
	for _, r := range results {
		name, _, _ := strings.Cut(r.Layout, " (")
		for _, twice := range []bool{false, true} {
			c := cfg
			c.txIndexTwice = twice
			row := []string{name, map[bool]string{false: "once", true: "twice"}[twice]}
			wls := []workload{r.Activities, r.Workflows}
			rets := []retentionUsage{r.ActivityRetention, r.WorkflowRetention}
			if eagerStart {
				wls = []workload{r.Activities, r.EagerStart, r.Workflows}
				rets = []retentionUsage{r.ActivityRetention, r.EagerStartRetention, r.WorkflowRetention}
			}
			for i, wl := range wls {
				if wl.Units == 0 {
					row = append(row, "-", "-", "-", "-", "-")
					continue
				}
				ret := rets[i].Usage
				cost := c.costOf(wl)
				var wru, rru float64
				for _, u := range wl.Usage {
					wru, rru = wru+c.wru(u), rru+u.Read
				}
				n := float64(wl.Units)
				withRet := cost.total() + (ret.Read*pricePerMRRU+c.wru(ret)*pricePerMWRU)/1e6
				row = append(row, fmt.Sprintf("%.1f", wru/n), fmt.Sprintf("%.1f", rru/n), fmt.Sprintf("%.2f", perM(cost.total(), wl.Units)),
					fmt.Sprintf("%.2f", perM(withRet, wl.Units)), fmt.Sprintf("%.3f", perM(cost.total(), cost.transitions)))
			}
			if r.Workflows.Units > 0 {
				row = append(row, fmt.Sprintf("%.1f", c.wru(r.WorkflowRetention.Usage)/float64(r.Workflows.Units)))
			} else {
				row = append(row, "-")
			}
			if r.Fanout.Units > 0 {
				conflicts, finishes := fanInConflicts(r.Fanout)
				row = append(row, fmt.Sprintf("%.3f", float64(conflicts)/float64(max(finishes, 1))))
			} else {
				row = append(row, "-")
			}
			fmt.Fprintln(w, strings.Join(row, "\t")+"\t")
		}
	}
	_ = w.Flush()
	fmt.Fprintln(out, "for comparison: AWS Lambda durable functions $8.00 per million durable operations; Step Functions Standard $25.00 per million state transitions")
}

func pct(a, b int) string { return pctF(float64(a), float64(b)) }

func pctF(a, b float64) string {
	if b == 0 {
		return "0%"
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", 100*a/b), ".0") + "%"
}

// reportRetention prints the units of marking a workload's trees, per
// tree (each activity or workflow is one tree; the passes may decide a
// tree more than once when its members' finishes fall in different
// passes), and the workload's DynamoDB price with them.
func reportRetention(out io.Writer, ru retentionUsage, wl workload, units int, unit string) {
	if ru.Trees == 0 {
		fmt.Fprintln(out, "retention: nothing marked (forever)")
		return
	}
	n := float64(units)
	u := ru.Usage
	var tot dynamometer.Usage
	for _, v := range wl.Usage {
		tot.Add(v)
	}
	dollars := func(rru, wru float64) float64 { return rru*pricePerMRRU + wru*pricePerMWRU }
	fmt.Fprintf(out, "retention (timers function): %d trees marked (%d decisions), per tree %.1f items, %.2f RRU, %.2f WRU (%.2f index) → $%.2f per million trees\n",
		units, ru.Trees, float64(ru.Items)/n, u.Read/n, u.WRU()/n, u.IndexWrite/n, dollars(u.Read/n, u.WRU()/n))
	fmt.Fprintf(out, "per %s with its retention: %.2f RRU, %.2f WRU → DynamoDB $%.2f per million\n", unit,
		(tot.Read+u.Read)/float64(units), (tot.WRU()+u.WRU())/float64(units), dollars((tot.Read+u.Read)/float64(units), (tot.WRU()+u.WRU())/float64(units)))
}
