package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/e2e/internal/soak"
	sdk "github.com/stela-dev/stela/worker"
)

// The soak's sizes; the defaults are CI's (issue 20's minimums).
var (
	soakActivities = flag.Int("soak.activities", 1000, "activities the soak runs at least (top-level ones plus the workflows')")
	soakWorkflows  = flag.Int("soak.workflows", 100, "workflows, each with a sleep, a child workflow, a fan-out and a response after the await window")
	soakSigterms   = flag.Int("soak.sigterms", 10, "worker processes stopped with SIGTERM (and replaced) while work runs")
	soakKills      = flag.Int("soak.kills", 3, "worker processes killed with SIGKILL (and replaced) while work runs")
	soakWorkers    = flag.Int("soak.workers", 2, "worker processes running at once")
	// The server's restarts: the `stela dev` process stopped with SIGTERM or
	// killed with SIGKILL and started again on the same data and port.
	soakServerSigterms = flag.Int("soak.server-sigterms", 2, "times the server is stopped with SIGTERM (and started again) while work runs")
	soakServerKills    = flag.Int("soak.server-kills", 2, "times the server is killed with SIGKILL (and started again) while work runs")
	soakServerDown     = flag.Duration("soak.server-down", 0, "how long the server stays down before each restart")
	soakPeriod         = flag.Duration("soak.period", 24*time.Second, "how long work is submitted while workers are stopped and killed")
)

// The soak workers' settings.
const (
	soakLease  = 2 * time.Second        // LockExpiry
	soakWindow = 300 * time.Millisecond // AwaitWindow
	soakPoll   = time.Second            // PollWait
	soakSlow   = 600 * time.Millisecond // soak.SlowFFQN: outlives the window
	// soakSlack is the scheduling noise a loaded 2-core machine adds to
	// "one lease past its last event".
	soakSlack = time.Second
)

// TestSoak runs issue 20's soak over HTTP against a `stela dev` process:
// at least soak.activities activities and soak.workflows workflows with
// sleeps, children and fan-outs, while the worker processes (soak.workers
// at once, built from ./soakworker) are stopped with SIGTERM and replaced
// soak.sigterms times and killed with SIGKILL soak.kills times. It checks
// that every execution finished OK; that every activity body ran at most
// once per lock it was granted (the workers log every run in a file); that
// only the killed workers' locks ever expired (a graceful shutdown runs or
// releases every lock it was granted); that no execution waited longer
// than one lease past its last event; and that the server recorded no 5xx.
// With -v it prints the counts and the continuation latency after a
// response that arrived after the await window, measured from the
// response's storage time. The server itself is stopped with SIGTERM
// soak.server-sigterms times and killed with SIGKILL soak.server-kills
// times, each time started again on the same data directory and port: the
// workers and the submitter ride over the outage (the client tries a
// refused connection again for client.RetryPolicy.Refused, and a plain
// Submit must succeed), and a lock may then expire only if it was live
// during an outage; the wait bound allows the longest outage on top.
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("soak: not in -short")
	}
	start := time.Now()
	dir := t.TempDir()
	bin := filepath.Join(dir, "soakworker")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "github.com/stela-dev/stela/e2e/soakworker")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		t.Fatalf("go build soakworker: %v", err)
	}
	srv := &soakServer{t: t, data: filepath.Join(dir, "data"), addr: freeAddr(t)}
	srv.start()
	d := srv.d
	runsFile, acksFile := filepath.Join(dir, "runs.txt"), filepath.Join(dir, "acks.txt")
	fleet := &soakFleet{t: t, bin: bin, url: d.url, runs: runsFile, acks: acksFile, killed: map[string]bool{}, all: map[string]bool{}}
	for range *soakWorkers {
		fleet.procs = append(fleet.procs, fleet.start())
	}
	t.Cleanup(fleet.killAll)

	conn, err := client.New(d.url)
	if err != nil {
		t.Fatal(err)
	}
	sub := sdk.New(conn, sdk.Options{Name: "soak-submitter"})
	sub.Declare(soak.FlowFFQN, core.ComponentTypeWorkflow)
	sub.Declare(soak.WorkFFQN, core.ComponentTypeActivity)
	topActivities := max(0, *soakActivities-soak.ActivitiesPerFlow**soakWorkflows)
	total := *soakWorkflows + topActivities
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// Submit steadily over the period while the chaos runs.
	var top []core.ExecutionId
	submitted := make(chan error, 1)
	go func() {
		every := *soakPeriod / time.Duration(max(total, 1))
		next := time.Now()
		wf := 0
		for i := range total {
			ffqn, param := soak.WorkFFQN, any(fmt.Sprintf("top/%d", i))
			if wf < *soakWorkflows && i*(*soakWorkflows) >= wf*total { // spread the workflows evenly
				ffqn, param = soak.FlowFFQN, wf
				wf++
			}
			// A plain Submit: the client rides over the server's restarts
			// (client.RetryPolicy.Refused).
			id, err := sub.Submit(ctx, ffqn, param)
			if err != nil {
				submitted <- err
				return
			}
			top = append(top, id)
			next = next.Add(every)
			time.Sleep(time.Until(next)) // pacing the load, not synchronising
		}
		submitted <- nil
	}()
	ops := *soakSigterms + *soakKills
	serverOps := *soakServerSigterms + *soakServerKills
	chaosEvery := *soakPeriod / time.Duration(ops+serverOps+1)
	for i, worker := 0, 0; i < ops+serverOps; i++ {
		time.Sleep(chaosEvery) // pacing the faults, not synchronising
		// The server's restarts spread among the workers' stops, and
		// the kills among the stops of each.
		if s := (i + 1) * serverOps / (ops + serverOps); s != i*serverOps/(ops+serverOps) {
			k := s*(*soakServerKills)/serverOps != (s-1)*(*soakServerKills)/serverOps
			srv.restart(k)
			continue
		}
		kill := (worker+1)*(*soakKills)/ops != worker*(*soakKills)/ops
		fleet.replace(worker%len(fleet.procs), kill)
		worker++
	}
	if err := <-submitted; err != nil {
		t.Fatalf("submit: %v", err)
	}
	submittedAt := time.Since(start)
	for _, id := range top {
		wctx, wcancel := context.WithTimeout(ctx, 90*time.Second)
		_, err := conn.WaitForFinishedResult(wctx, id)
		for errors.Is(err, core.ErrTimeout) && wctx.Err() == nil {
			_, err = conn.WaitForFinishedResult(wctx, id)
		}
		wcancel()
		if err != nil {
			t.Fatalf("%s did not finish: %v\n%s", id, err, fleet.stderr())
		}
	}
	doneAt := time.Since(start)
	fleet.stopAll()

	r := soakReport{runs: readLines(t, runsFile), acks: readAcks(t, acksFile), killed: fleet.killed, outages: srv.outages}
	for _, id := range top {
		r.walk(t, ctx, conn, id)
	}
	r.check(t)
	status5xx, status499 := httpStatuses(t, srv.d)
	if status5xx != "" {
		t.Errorf("the server recorded 5xx answers:\n%s", status5xx)
	}
	p := func(q float64) time.Duration { return percentile(r.continuation, q).Round(100 * time.Microsecond) }
	pa := func(q float64) time.Duration { return percentile(r.fromAck, q).Round(100 * time.Microsecond) }
	pw := func(q float64) time.Duration { return percentile(r.write, q).Round(100 * time.Microsecond) }
	t.Logf("soak: %d activities, %d workflows (%d top-level activities, %d top-level workflows); %d worker processes stopped with SIGTERM, %d killed with SIGKILL",
		r.activities, r.workflows, topActivities, *soakWorkflows, fleet.sigterms, fleet.kills)
	t.Logf("soak: the server stopped with SIGTERM %d times and killed with SIGKILL %d times, each started again; outages %s (longest %s)",
		srv.sigterms, srv.kills, srv.outageList(), srv.longest().Round(time.Millisecond))
	t.Logf("soak: activity bodies run %d times for %d locks granted to activities (max runs per lock 1: checked); %d locks expired (%d the killed workers', %d live during a server outage; none else), %d released by a stopping worker, %d given back after the await window",
		r.bodyRuns, r.activityLocks, r.expired, r.expired-r.expiredInOutage, r.expiredInOutage, r.closing, r.windowEnded)
	t.Logf("soak: no execution waited longer than one lease past its last event: the longest wait beyond that bound %s (scheduling slack allowed %s, plus the longest outage); 5xx answers 0 (since the last start); 499 (client gone) %d",
		r.maxOvershoot.Round(time.Millisecond), soakSlack, status499)
	t.Logf("soak: continuation after a response that arrived after the await window, to the workflow's next event (target p99 ≤ 50 ms after the response is stored): "+
		"from the write's acknowledgement (%d cases) p50 %s, p99 %s, max %s; from the response's created_at, stamped before its write (%d cases) p50 %s, p99 %s, max %s",
		len(r.fromAck), pa(0.5), pa(0.99), pa(1), len(r.continuation), p(0.5), p(0.99), p(1))
	t.Logf("soak: the response's write, from its created_at to its acknowledgement (it was stored in between): p50 %s, p99 %s, max %s",
		pw(0.5), pw(0.99), pw(1))
	t.Logf("soak: submitted in %s, all finished %s after the start", submittedAt.Round(time.Millisecond), doneAt.Round(time.Millisecond))
}

// --- the server -------------------------------------------------------------------------

// outage is one stop of the server: from its signal to its answering again.
type outage struct{ down, up time.Time }

// soakServer is the `stela dev` process of the soak, restarted on the same
// data directory and address.
type soakServer struct {
	t               *testing.T
	data, addr      string
	d               *devServer
	outages         []outage
	sigterms, kills int
}

func (s *soakServer) start() {
	s.t.Helper()
	s.d = startDev(s.t, s.data, "--addr", s.addr, "--timers-interval", "200ms", "--log-level", "warn")
}

// restart stops the server (SIGKILL when kill, else SIGTERM, after which it
// must exit cleanly) and starts it again.
func (s *soakServer) restart(kill bool) {
	s.t.Helper()
	down := time.Now()
	if kill {
		_ = s.d.cmd.Process.Kill()
		<-s.d.done
		s.kills++
	} else {
		if err := s.d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			s.t.Fatal(err)
		}
		select {
		case err := <-s.d.done:
			if err != nil {
				s.t.Fatalf("stela dev stopped with SIGTERM exited with %v\nstderr:\n%s", err, s.d.stderr)
			}
		case <-time.After(deadline):
			s.t.Fatalf("stela dev did not stop on SIGTERM\nstderr:\n%s", s.d.stderr)
		}
		s.sigterms++
	}
	time.Sleep(*soakServerDown) // an outage's length, not synchronising
	s.start()
	s.outages = append(s.outages, outage{down: down, up: time.Now()})
}

func (s *soakServer) longest() time.Duration {
	return (&soakReport{outages: s.outages}).slack() - soakSlack
}

func (s *soakServer) outageList() string {
	parts := make([]string, len(s.outages))
	for i, o := range s.outages {
		parts[i] = o.up.Sub(o.down).Round(time.Millisecond).String()
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// freeAddr returns a loopback address with a port free now, for a server
// that is restarted on the same address.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// --- worker processes -------------------------------------------------------------------

type soakProc struct {
	cmd      *exec.Cmd
	executor string
	done     chan error
	stderr   *syncBuffer
}

type soakFleet struct {
	t              *testing.T
	bin, url, runs string
	acks           string
	mu             sync.Mutex
	procs          []*soakProc
	old            []*soakProc
	killed, all    map[string]bool // executor ids
	sigterms       int
	kills          int
}

// start starts a worker process and returns once it runs.
func (f *soakFleet) start() *soakProc {
	f.t.Helper()
	cmd := exec.Command(f.bin, "-url", f.url, "-runs", f.runs, "-acks", f.acks, "-lease", soakLease.String(),
		"-await-window", soakWindow.String(), "-poll", soakPoll.String(), "-slow", soakSlow.String())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		f.t.Fatal(err)
	}
	p := &soakProc{cmd: cmd, done: make(chan error, 1), stderr: &syncBuffer{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	go func() { p.done <- cmd.Wait() }()
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if exr, ok := strings.CutPrefix(sc.Text(), "executor "); ok {
				line <- exr
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case p.executor = <-line:
	case err := <-p.done:
		f.t.Fatalf("soakworker exited at start: %v\n%s", err, p.stderr)
	case <-time.After(deadline):
		f.t.Fatal("soakworker printed no executor id")
	}
	f.mu.Lock()
	f.all[p.executor] = true
	f.mu.Unlock()
	return p
}

// replace stops worker slot (SIGKILL when kill, else SIGTERM) and starts
// another in its place; a SIGTERMed worker must exit cleanly.
func (f *soakFleet) replace(slot int, kill bool) {
	f.t.Helper()
	old := f.procs[slot]
	if kill {
		f.mu.Lock()
		f.killed[old.executor] = true
		f.mu.Unlock()
		_ = old.cmd.Process.Kill()
		<-old.done
		f.kills++
		f.procs[slot] = f.start()
		return
	}
	if err := old.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		f.t.Fatal(err)
	}
	f.procs[slot] = f.start() // the replacement starts while the old one shuts down
	select {
	case err := <-old.done:
		if err != nil {
			f.t.Fatalf("a worker stopped with SIGTERM exited with %v\n%s", err, old.stderr)
		}
	case <-time.After(deadline):
		f.t.Fatalf("a worker did not stop on SIGTERM\n%s", old.stderr)
	}
	f.sigterms++
	f.old = append(f.old, old)
}

// stopAll stops the running workers with SIGTERM.
func (f *soakFleet) stopAll() {
	f.t.Helper()
	for _, p := range f.procs {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range f.procs {
		select {
		case err := <-p.done:
			if err != nil {
				f.t.Errorf("a worker exited with %v\n%s", err, p.stderr)
			}
		case <-time.After(deadline):
			f.t.Errorf("a worker did not stop on SIGTERM\n%s", p.stderr)
		}
		f.old = append(f.old, p)
	}
	f.procs = nil
}

func (f *soakFleet) killAll() {
	for _, p := range f.procs {
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// stderr returns what the workers logged (warnings and errors).
func (f *soakFleet) stderr() string {
	var b strings.Builder
	for _, p := range append(slices.Clone(f.old), f.procs...) {
		if s := p.stderr.String(); s != "" {
			fmt.Fprintf(&b, "--- worker %s\n%s", p.executor, s)
		}
	}
	return b.String()
}

// readLines counts the lines of a file (the runs of each activity body, by
// token).
func readLines(t *testing.T, path string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line != "" {
			runs[line]++
		}
	}
	return runs
}

// readAcks returns when each execution's Finished was acknowledged stored.
func readAcks(t *testing.T, path string) map[string]time.Time {
	t.Helper()
	acks := map[string]time.Time{}
	for line := range readLines(t, path) {
		id, ns, ok := strings.Cut(line, " ")
		n, err := strconv.ParseInt(ns, 10, 64)
		if !ok || err != nil {
			t.Fatalf("acks: %q", line)
		}
		acks[id] = time.Unix(0, n)
	}
	return acks
}

// httpStatuses returns the server's stela_http_requests_total lines with a
// 5xx code, and the count of 499 answers.
func httpStatuses(t *testing.T, d *devServer) (string, int) {
	t.Helper()
	resp, err := http.Get(d.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	n499 := 0
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "stela_http_requests_total{") {
			continue
		}
		switch {
		case strings.Contains(line, `code="5`):
			bad = append(bad, line)
		case strings.Contains(line, `code="499"`):
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			n499 += int(v)
		}
	}
	return strings.Join(bad, "\n"), n499
}

// --- checking the logs ------------------------------------------------------------------

type soakReport struct {
	runs   map[string]int       // activity token → body runs
	acks   map[string]time.Time // execution id → its Finished acknowledged
	killed map[string]bool      // executor ids of the killed workers
	// outages are the server's, from its stop to its answering again.
	outages []outage

	activities, workflows, bodyRuns, activityLocks int
	expired, expiredInOutage, closing, windowEnded int
	maxOvershoot                                   time.Duration
	// continuation and fromAck are the times from a late response's
	// created_at (stamped by its writer before the write) and from its
	// write's acknowledgement to the workflow's next event.
	continuation, fromAck []time.Duration
	// write is, for the same responses, from created_at to the write's
	// acknowledgement: the response was stored in between.
	write      []time.Duration
	violations []string
}

func (r *soakReport) fail(format string, args ...any) {
	if len(r.violations) < 20 {
		r.violations = append(r.violations, fmt.Sprintf(format, args...))
	}
}

func (r *soakReport) check(t *testing.T) {
	t.Helper()
	if r.activities < *soakActivities || r.workflows < *soakWorkflows {
		t.Errorf("%d activities and %d workflows ran, want at least %d and %d", r.activities, r.workflows, *soakActivities, *soakWorkflows)
	}
	if len(r.violations) > 0 {
		t.Errorf("%d violations:\n%s", len(r.violations), strings.Join(r.violations, "\n"))
	}
}

// walk checks execution id and every execution it created.
func (r *soakReport) walk(t *testing.T, ctx context.Context, conn *client.Client, id core.ExecutionId) {
	t.Helper()
	log, err := conn.Get(ctx, id)
	if err != nil {
		t.Fatalf("log of %s: %v", id, err)
	}
	rv, ok := log.FinishedResult()
	if !ok || rv.Kind != core.ReturnOk {
		r.fail("%s did not finish OK: %s %+v", id, log.PendingState, rv)
	}
	created := log.Events[0].Event.(*core.Created)
	if log.ComponentType.IsActivity() {
		r.activities++
		r.checkActivity(id, created, log)
	} else {
		r.workflows++
	}
	r.checkLocks(id, log)
	r.checkWaits(id, log)
	if created.FFQN.String() == soak.FlowFFQN {
		r.measureContinuation(log)
	}
	for _, h := range log.EventHistory() {
		if req, ok := h.Event.(*core.JoinSetRequestEvent); ok {
			if c, ok := req.Request.(*core.ChildExecutionRequest); ok {
				r.walk(t, ctx, conn, c.ChildExecutionID.ExecutionId)
			}
		}
	}
}

// checkActivity: the body ran at least once (it finished OK) and at most
// once per lock granted (distinct runs among the Locked events).
func (r *soakReport) checkActivity(id core.ExecutionId, created *core.Created, log *core.ExecutionLog) {
	var token string
	if len(created.Params) != 1 || json.Unmarshal(created.Params[0], &token) != nil {
		r.fail("%s: params %s", id, created.Params)
		return
	}
	locks := map[core.RunId]bool{}
	for _, e := range log.Events {
		if l, ok := e.Event.(*core.Locked); ok {
			locks[l.RunID] = true
		}
	}
	runs := r.runs[token]
	r.bodyRuns += runs
	r.activityLocks += len(locks)
	if runs < 1 || runs > len(locks) {
		r.fail("%s (%s): body run %d times for %d locks granted", id, token, runs, len(locks))
	}
}

// checkLocks: only the killed workers' locks expired; counts releases.
func (r *soakReport) checkLocks(id core.ExecutionId, log *core.ExecutionLog) {
	var holder *core.Locked
	var lockedAt time.Time
	for _, e := range log.Events {
		switch ev := e.Event.(type) {
		case *core.Locked:
			holder, lockedAt = ev, e.CreatedAt.Time
		case *core.TemporarilyTimedOut:
			r.expired++
			if holder != nil && !r.killed[holder.ExecutorID.String()] && r.duringOutage(lockedAt, holder.LockExpiresAt.Time) {
				r.expiredInOutage++
				continue
			}
			if holder == nil || !r.killed[holder.ExecutorID.String()] {
				r.fail("%s: the lock of %v expired at v%d, but that worker was not killed (a lock it was granted was neither run nor released)",
					id, holderOf(holder), e.Version)
			}
		case *core.Unlocked:
			switch ev.Reason {
			case "executor closing":
				r.closing++
			case "await window ended":
				r.windowEnded++
			}
		}
	}
}

// duringOutage reports whether a lock live from `from` to `until` was
// live during one of the server's outages: its holder's writes (a result,
// a lease extension) may then have failed after the client's retries, and
// the lock expired although its worker did not die.
func (r *soakReport) duringOutage(from, until time.Time) bool {
	for _, o := range r.outages {
		if from.Before(o.up) && until.After(o.down) {
			return true
		}
	}
	return false
}

// slack is the wait beyond the lease rule that checkWaits allows: the
// scheduling noise, plus the longest server outage (a timer or a poll due
// during one runs once the server is back).
func (r *soakReport) slack() time.Duration {
	longest := time.Duration(0)
	for _, o := range r.outages {
		longest = max(longest, o.up.Sub(o.down))
	}
	return soakSlack + longest
}

func holderOf(l *core.Locked) any {
	if l == nil {
		return "nobody"
	}
	return l.ExecutorID
}

// timelineItem is an event or a response of one execution.
type timelineItem struct {
	at   time.Time
	ev   core.ExecutionRequest
	resp *core.JoinSetResponseEvent
}

func timeline(log *core.ExecutionLog) []timelineItem {
	var items []timelineItem
	for _, e := range log.Events {
		items = append(items, timelineItem{at: e.CreatedAt.Time, ev: e.Event})
	}
	for _, r := range log.Responses {
		resp := r.Event.Event
		items = append(items, timelineItem{at: r.Event.CreatedAt.Time, resp: &resp})
	}
	slices.SortStableFunc(items, func(a, b timelineItem) int { return a.at.Compare(b.at) })
	return items
}

// checkWaits: no execution waited longer than one lease past its last
// event. Walking its events and responses in time order with the store's
// rules, each item leaves the execution held (until its lock's expiry),
// pending (from a time on: its schedule, a backoff, an Unlocked, a
// response), blocked until a delay's expiry, or blocked until a child
// answers (then only the child is checked). The next item must come by the
// lock's expiry, by the pending time plus one lease, or by the delay's
// expiry plus one lease — give or take soakSlack of scheduling noise.
func (r *soakReport) checkWaits(id core.ExecutionId, log *core.ExecutionLog) {
	items := timeline(log)
	var lockExp, pendingAt, blockDeadline time.Time
	blockedOn := ""
	joinNexts, arrived := map[string]int{}, map[string]int{}
	delays := map[string]time.Time{} // join set → the expiry of its delay
	for i, it := range items {
		switch ev := it.ev.(type) {
		case *core.Created:
			pendingAt = ev.ScheduledAt.Time
		case *core.Locked:
			lockExp, pendingAt, blockedOn = ev.LockExpiresAt.Time, time.Time{}, ""
		case *core.Unlocked:
			lockExp = time.Time{}
			if blockedOn != "" {
				blockDeadline = ev.UnlockedAt.Time
			} else {
				pendingAt = ev.UnlockedAt.Time
			}
		case *core.TemporarilyTimedOut:
			lockExp, pendingAt, blockedOn = time.Time{}, ev.BackoffExpiresAt.Time, ""
		case *core.TemporarilyFailed:
			lockExp, pendingAt, blockedOn = time.Time{}, ev.BackoffExpiresAt.Time, ""
		case *core.Finished:
			return
		case *core.HistoryEventRequest:
			switch h := ev.Event.(type) {
			case *core.JoinSetRequestEvent:
				if d, ok := h.Request.(*core.DelayRequest); ok {
					delays[h.JoinSetID.String()] = d.ExpiresAt.Time
				}
			case *core.JoinNext:
				js := h.JoinSetID.String()
				joinNexts[js]++
				if arrived[js] < joinNexts[js] {
					blockedOn, blockDeadline = js, h.RunExpiresAt.Time
				} else if h.RunExpiresAt.Time.After(lockExp) {
					lockExp = h.RunExpiresAt.Time
				}
			}
		}
		if it.resp != nil {
			js := it.resp.JoinSetID.String()
			arrived[js]++
			if blockedOn == js && arrived[js] >= joinNexts[js] {
				blockedOn = ""
				pendingAt = maxTime(blockDeadline, it.at)
				if !lockExp.IsZero() && lockExp.After(pendingAt) {
					pendingAt = it.at // the holder may continue in memory at once
				}
			}
		}
		if i+1 == len(items) {
			r.fail("%s: the log ends without Finished", id)
			return
		}
		var due time.Time
		switch {
		case blockedOn != "":
			exp, ok := delays[blockedOn]
			if !ok {
				continue // waits for a child: the child is checked
			}
			due = exp.Add(soakLease)
		case !pendingAt.IsZero() && (lockExp.IsZero() || !pendingAt.Before(lockExp)):
			due = pendingAt.Add(soakLease)
		case !lockExp.IsZero():
			due = lockExp
		default:
			continue
		}
		next := items[i+1].at
		if over := next.Sub(due); over > r.maxOvershoot {
			r.maxOvershoot = over
		}
		if next.Sub(due) > r.slack() {
			r.fail("%s: waited %s past its lease rule after %s at %s (next at %s)", id, next.Sub(due).Round(time.Millisecond),
				describeItem(it), it.at.Format("15:04:05.000"), next.Format("15:04:05.000"))
		}
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func describeItem(it timelineItem) string {
	if it.resp != nil {
		return fmt.Sprintf("a response for %s", it.resp.JoinSetID)
	}
	if h, ok := it.ev.(*core.HistoryEventRequest); ok {
		return fmt.Sprintf("%T", h.Event)
	}
	return fmt.Sprintf("%T", it.ev)
}

// measureContinuation records, for a workflow whose slow child answered
// after the workflow gave its execution back (the await window ended),
// the time from the response's storage to the workflow's next event.
func (r *soakReport) measureContinuation(log *core.ExecutionLog) {
	var slowJS, slowChild string
	for _, h := range log.EventHistory() {
		if req, ok := h.Event.(*core.JoinSetRequestEvent); ok {
			if c, ok := req.Request.(*core.ChildExecutionRequest); ok && c.TargetFFQN.String() == soak.SlowFFQN {
				slowJS, slowChild = req.JoinSetID.String(), c.ChildExecutionID.String()
			}
		}
	}
	items := timeline(log)
	for i, it := range items {
		if it.resp == nil || it.resp.JoinSetID.String() != slowJS || i == 0 || i+1 == len(items) {
			continue
		}
		if u, ok := items[i-1].ev.(*core.Unlocked); ok && u.Reason == "await window ended" {
			next := items[i+1].at
			r.continuation = append(r.continuation, next.Sub(it.at))
			if ack, ok := r.acks[slowChild]; ok {
				r.fromAck = append(r.fromAck, next.Sub(ack))
				r.write = append(r.write, ack.Sub(it.at))
			}
		}
	}
}

// percentile returns the nearest-rank q-quantile of ds (q = 1: the max).
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[max(0, int(math.Ceil(q*float64(len(s))))-1)]
}
