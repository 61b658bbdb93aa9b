package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
)

func env(m map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := m[k]; ok {
			return v
		}
		return os.Getenv(k)
	}
}

// The bench reads the layout from the same variables as the functions, and
// never the table: it measures on its own fresh one.
func TestOptionsComeFromTheFunctionsConfiguration(t *testing.T) {
	o, r, err := options(env(map[string]string{"STELA_TABLE": "production", "STELA_SHARDS": "4",
		"STELA_DIGEST_INDEX": "off", "STELA_DEPLOYMENT_COUNTS": "off", "STELA_RETENTION": "7d"}), "stela-bench-x")
	if err != nil {
		t.Fatal(err)
	}
	if o.Table != "stela-bench-x" || o.Shards != 4 || !o.DisableDigestIndex || !o.DisableDeploymentCounts {
		t.Errorf("options = %+v", o)
	}
	if r.String() != "7d" {
		t.Errorf("retention = %s, want 7d", r)
	}
	if l := layout(o); !strings.HasPrefix(l, "lean (") {
		t.Errorf("layout = %q", l)
	}
	if _, _, err := options(env(map[string]string{"STELA_DIGEST_INDEX": "no"}), "t"); err == nil {
		t.Error("STELA_DIGEST_INDEX=no accepted")
	}
}

func requireEndpoint(t *testing.T) {
	if os.Getenv("AWS_ENDPOINT_URL_DYNAMODB") == "" && os.Getenv("AWS_ENDPOINT_URL") == "" {
		const how = `no DynamoDB endpoint: run eval "$(scripts/ci/start-dynamodb-local.sh)" first`
		if os.Getenv("CI") == "true" {
			t.Fatal(how + " (CI=true: never skipped)")
		}
		t.Skip(how)
	}
}

// STELA_DIGEST_INDEX=off STELA_DEPLOYMENT_COUNTS=off reach the measurement:
// a created activity then has 3 index entries (pending-ffqn, list, list-id)
// instead of 5 (+ pending-digest, deployments), and the report names the layout.
func TestLeanLayoutIsMeasured(t *testing.T) {
	requireEndpoint(t)
	args := []string{"-activities=10", "-workflows=1", "-children=2", "-parallel=2"}
	for _, tc := range []struct {
		env     map[string]string
		layout  string
		entries int
	}{
		{map[string]string{"STELA_DIGEST_INDEX": "", "STELA_DEPLOYMENT_COUNTS": ""}, "Layout: default (", 5},
		{map[string]string{"STELA_DIGEST_INDEX": "off", "STELA_DEPLOYMENT_COUNTS": "off"}, "Layout: lean (", 3},
	} {
		var out bytes.Buffer
		res, err := run(context.Background(), args, env(tc.env), &out)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), tc.layout) {
			t.Errorf("%v: report lacks %q:\n%s", tc.env, tc.layout, out.String())
		}
		u, s := res[0].Activities.Usage["activity: create"], res[0].Activities.Steps["activity: create"]
		if s.n != 10 || u.IndexEntries != tc.entries*s.n {
			t.Errorf("%v: %d creates wrote %d index entries, want %d each", tc.env, s.n, u.IndexEntries, tc.entries)
		}
		// The default retention (30 days) marks every finished tree.
		if r := res[0].ActivityRetention; r.Trees != 10 || r.Usage.WRU() == 0 {
			t.Errorf("%v: retention marked %d activities (%+v), want 10", tc.env, r.Trees, r)
		}
		if res[0].EagerStart.Units != 0 {
			t.Errorf("%v: an eager-start workload ran without -eager-start", tc.env)
		}
		if r := res[0].WorkflowRetention; r.Trees != 1 || r.Items == 0 {
			t.Errorf("%v: retention marked %d workflow trees (%+v), want 1", tc.env, r.Trees, r)
		}
	}
}

// -layouts all measures each layout on its own table and compares them;
// the fan-out workload reports its contention per child finish, and its
// children finish without a cancelled transaction or a failed condition
// (dynamo/doc.go, "Fan-in").
func TestEveryLayoutAndTheFanInFigureAreReported(t *testing.T) {
	requireEndpoint(t)
	var out bytes.Buffer
	res, err := run(context.Background(), []string{"-activities=4", "-workflows=0", "-fanout=12", "-fanouts=1",
		"-parallel=2", "-layouts=all"}, env(nil), &out)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 4 {
		t.Fatalf("%d layouts measured, want 4", len(res))
	}
	for i, want := range []string{"default (", "no-digest-index (", "no-deployment-counts (", "lean ("} {
		if !strings.HasPrefix(res[i].Layout, want) {
			t.Errorf("layout %d is %q, want %s…", i, res[i].Layout, want)
		}
	}
	for _, want := range []string{"Layout: default (", "Layout: no-digest-index (", "Layout: no-deployment-counts (",
		"Layout: lean (", "=== Summary", "fan-in: 12 child finishes at once", "Assumptions", "128 MB arm64"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, r := range res {
		if conflicts, finishes := fanInConflicts(r.Fanout); finishes != 12 || conflicts != 0 {
			t.Errorf("%s: %d conflicts in %d child finishes, want 0 in 12", r.Layout, conflicts, finishes)
		}
	}
	if t.Failed() {
		t.Log(out.String())
	}
}

// -eager-start runs the activities again as a worker submitting them does:
// created locked through create-locked (a worker route, priced at the
// worker door), they never enter the pending indexes — a create-locked
// writes the lock-expiry entry instead of the pending ones — and take no
// lock step; each finish then removes that entry. Both are shown beside the
// activity workload and in the summary.
func TestEagerStartActivitiesAreMeasuredBesideTheActivities(t *testing.T) {
	requireEndpoint(t)
	var out bytes.Buffer
	res, err := run(context.Background(), []string{"-activities=10", "-workflows=0", "-parallel=2", "-layouts=default,lean",
		"-eager-start", "-start-batch=1"}, env(nil), &out)
	if err != nil {
		t.Fatal(err)
	}
	for i, pending := range []int{2, 1} { // default: pending-ffqn and pending-digest; lean: pending-ffqn
		r := res[i]
		wl := r.EagerStart
		if wl.Units != 10 {
			t.Fatalf("%s: %d eager-start activities, want 10", r.Layout, wl.Units)
		}
		for l := range wl.Steps {
			if strings.Contains(l, "lock (") {
				t.Errorf("%s: eager-start workload has a lock step %q", r.Layout, l)
			}
		}
		cl, s := wl.Usage["eager activity: create-locked"], wl.Steps["eager activity: create-locked"]
		if s.n != 10 || s.class != worker || s.transitions != 20 {
			t.Errorf("%s: create-locked steps %+v, want 10 worker requests of 2 transitions each", r.Layout, s)
		}
		created := r.Activities.Usage["activity: create"]
		if want := created.IndexEntries/10 - pending + 1; cl.IndexEntries != want*10 {
			t.Errorf("%s: a create-locked wrote %d index entries, want %d (a create's %d less %d pending, plus lock expiry)",
				r.Layout, cl.IndexEntries/10, want, created.IndexEntries/10, pending)
		}
		fin, plain := wl.Usage["eager activity: finish"], r.Activities.Usage["activity: finish"]
		if fin.IndexEntries != plain.IndexEntries+10 {
			t.Errorf("%s: eager finishes wrote %d index entries, want the leased finishes' %d + 10 (lock expiry out)",
				r.Layout, fin.IndexEntries, plain.IndexEntries)
		}
		eager, plainWl := wl, r.Activities
		if e, a := sumWRU(eager), sumWRU(plainWl); e >= a {
			t.Errorf("%s: eager start %.1f WRU, not below the create-then-lock %.1f", r.Layout, e, a)
		}
		if c := (config{workerDoor: doorFunctionURL, batch: 1}).costOf(eager); c.transitions != 30 {
			t.Errorf("%s: %d transitions, want 30", r.Layout, c.transitions)
		}
		if r.EagerStartRetention.Trees != 10 {
			t.Errorf("%s: retention marked %d eager-start activities, want 10", r.Layout, r.EagerStartRetention.Trees)
		}
	}
	for _, want := range []string{"Activities, eager start: 10 x (create-locked through the worker route, 1 per request", "eager-start WRU"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(out.String())
	}
}

func sumWRU(wl workload) float64 {
	var tot float64
	for _, u := range wl.Usage {
		tot += u.WRU()
	}
	return tot
}

// -start-batch 8 creates the eager-start activities 8 per create-locked
// request (a worker's concurrent submissions): 10 activities are one
// request of 8, whose executions share a lock lease (its one entry instead
// of 8 of their own, none to take out at their finish), and one of 2,
// which index their own lock expiry.
func TestEagerStartBatchesShareALease(t *testing.T) {
	requireEndpoint(t)
	var out bytes.Buffer
	res, err := run(context.Background(), []string{"-activities=10", "-workflows=0", "-parallel=2", "-layouts=default,lean",
		"-eager-start", "-start-batch=8"}, env(nil), &out)
	if err != nil {
		t.Fatal(err)
	}
	for i, pending := range []int{2, 1} {
		r := res[i]
		wl := r.EagerStart
		cl, s := wl.Usage["eager activity: create-locked"], wl.Steps["eager activity: create-locked"]
		if s.n != 2 || s.class != worker || s.transitions != 20 {
			t.Errorf("%s: create-locked steps %+v, want 2 worker requests of 20 transitions in all", r.Layout, s)
		}
		per := r.Activities.Usage["activity: create"].IndexEntries/10 - pending // a create's entries less the pending ones
		if want := 10*per + 2 + 1; cl.IndexEntries != want {
			t.Errorf("%s: the create-locked requests wrote %d index entries, want %d (10 x %d, 2 lock-expiry entries of their own, 1 lease)",
				r.Layout, cl.IndexEntries, want, per)
		}
		fin, plain := wl.Usage["eager activity: finish"], r.Activities.Usage["activity: finish"]
		if fin.IndexEntries != plain.IndexEntries+2 {
			t.Errorf("%s: eager finishes wrote %d index entries, want the leased finishes' %d + 2", r.Layout, fin.IndexEntries, plain.IndexEntries)
		}
		if r.EagerStartRetention.Trees != 10 {
			t.Errorf("%s: retention marked %d eager-start activities, want 10", r.Layout, r.EagerStartRetention.Trees)
		}
	}
	if want := "Activities, eager start: 10 x (create-locked through the worker route, 8 per request"; !strings.Contains(out.String(), want) {
		t.Errorf("report lacks %q", want)
	}
	if t.Failed() {
		t.Log(out.String())
	}
}

// TestSleepsAreMeasuredBothWays: the sleep workload runs once with the
// delay fired by the Finished write (one request, one transaction) and
// once fired, then written (two requests); the first costs fewer requests
// and fewer write units per sleep, and both are reported.
func TestSleepsAreMeasuredBothWays(t *testing.T) {
	requireEndpoint(t)
	var out bytes.Buffer
	res, err := run(context.Background(), []string{"-activities=0", "-workflows=0", "-sleeps=4", "-parallel=2", "-layouts=default"}, env(nil), &out)
	if err != nil {
		t.Fatal(err)
	}
	r := res[0]
	one, two := r.Sleeps, r.SleepsTwoStep
	if one.Units != 4 || two.Units != 4 {
		t.Fatalf("%d and %d sleeps, want 4 and 4", one.Units, two.Units)
	}
	if s := one.Steps["sleep, fire-and-continue 4: fire + finish (one commit)"]; s.n != 4 {
		t.Errorf("fire + finish steps %+v, want 4", s)
	}
	if s := two.Steps["sleep, two requests 4: fire"]; s.n != 4 {
		t.Errorf("fire steps %+v, want 4", s)
	}
	if a, b := sumWRU(one), sumWRU(two); a >= b {
		t.Errorf("fire-and-continue %.1f WRU, not below the two requests' %.1f", a, b)
	}
	c := config{workerDoor: doorFunctionURL, batch: 1}
	if a, b := c.costOf(one), c.costOf(two); a.requestCount >= b.requestCount {
		t.Errorf("fire-and-continue %+v, two requests %+v: want fewer requests", a, b)
	}
	for _, want := range []string{"Sleeps, fire-and-continue: 4 x", "Sleeps, fired then written: 4 x"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(out.String())
	}
}
