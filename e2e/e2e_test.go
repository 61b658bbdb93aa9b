// Package e2e_test runs the `stela` binary end to end: it builds it, starts
// `stela dev` on a temporary data directory and a free port, drives it with
// the CLI and with plain HTTP (including a small worker loop over the
// /v1/worker routes), stops it with SIGINT and restarts it on the same data.
package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/wire"
)

// deadline bounds every wait of these tests; it is a failure limit, never a
// synchronisation delay.
const deadline = 60 * time.Second

// stelaBin is the binary built by TestMain.
var stelaBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "stela-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	stelaBin = filepath.Join(dir, "stela")
	args := []string{"build", "-o", stelaBin}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "github.com/stela-dev/stela/cmd/stela")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "go build stela:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// --- the dev server process ------------------------------------------------------------

type devServer struct {
	cmd    *exec.Cmd
	url    string
	stderr *syncBuffer
	done   chan error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startDev starts `stela dev` on dataDir and a free port and returns once it
// printed its URL and answers requests.
func startDev(t *testing.T, dataDir string, extra ...string) *devServer {
	t.Helper()
	cmd := exec.Command(stelaBin, append([]string{"dev", "--data-dir", dataDir, "--addr", "127.0.0.1:0", "--timers-interval", "1s"}, extra...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	d := &devServer{cmd: cmd, stderr: &syncBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = d.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-d.done
		}
	})
	urls := make(chan string, 1)
	var banner syncBuffer
	go func() {
		sc := bufio.NewScanner(stdout)
		url := ""
		for sc.Scan() {
			line := sc.Text()
			banner.Write([]byte(line + "\n"))
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "API:"); ok {
				url = strings.Fields(rest)[0]
			}
			if strings.HasPrefix(line, "Press Ctrl-C") { // the banner's last line
				urls <- url
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() { d.done <- cmd.Wait() }()
	select {
	case d.url = <-urls:
	case err := <-d.done:
		t.Fatalf("stela dev exited before serving: %v\nstderr:\n%s", err, d.stderr)
	case <-time.After(deadline):
		t.Fatalf("stela dev printed no URL\nstdout:\n%s\nstderr:\n%s", banner.String(), d.stderr)
	}
	for _, want := range []string{"stela dev (embedded backend)", "stela.db", "blobs", "curl -s -X POST " + d.url + "/v1/executions",
		"console: " + d.url + "/console/"} {
		if !strings.Contains(banner.String(), want) {
			t.Errorf("banner lacks %q:\n%s", want, banner.String())
		}
	}
	// The listener is open before the banner is printed; check it answers.
	resp, err := http.Get(d.url + "/v1/executions")
	if err != nil {
		t.Fatalf("dev server not answering: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET /v1/executions = %d", resp.StatusCode)
	}
	return d
}

// stop sends SIGINT and waits for a clean exit.
func (d *devServer) stop(t *testing.T) {
	t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-d.done:
		if err != nil {
			t.Fatalf("stela dev exited with %v\nstderr:\n%s", err, d.stderr)
		}
	case <-time.After(deadline):
		t.Fatalf("stela dev did not stop on SIGINT\nstderr:\n%s", d.stderr)
	}
	if !strings.Contains(d.stderr.String(), "stela dev: stopped") {
		t.Errorf("no shutdown message:\n%s", d.stderr)
	}
}

// --- the CLI ---------------------------------------------------------------------------

type result struct {
	stdout, stderr string
	code           int
}

// cli runs `stela <args> --url <server>` (without --url when d is nil).
func (d *devServer) cli(t *testing.T, args ...string) result {
	t.Helper()
	return d.cliEnv(t, nil, args...)
}

// cliEnv is cli with extra environment variables.
func (d *devServer) cliEnv(t *testing.T, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if d != nil {
		args = append(args, "--url", d.url)
	}
	cmd := exec.CommandContext(ctx, stelaBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errOut.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("stela %v: %v", args, err)
	}
	return r
}

// mustCLI runs the CLI and fails unless it exits 0.
func (d *devServer) mustCLI(t *testing.T, args ...string) string {
	t.Helper()
	r := d.cli(t, args...)
	if r.code != 0 {
		t.Fatalf("stela %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// --- plain HTTP ------------------------------------------------------------------------

// call sends a JSON request and decodes a JSON answer into out; it returns the status.
func (d *devServer) call(t *testing.T, method, path string, body, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, d.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: decode %s: %v", method, path, raw, err)
		}
	}
	if resp.StatusCode >= 300 && out != nil {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	return resp.StatusCode
}

// --- a tiny worker over the /v1/worker routes ------------------------------------------

type worker struct {
	d   *devServer
	exr core.ExecutorId
	run core.RunId
}

func newWorker(t *testing.T, d *devServer) *worker {
	t.Helper()
	exr, err := core.ParseExecutorId("Exr_01KBNJ2T3D8W7H3X6Q4M9R5V1A")
	if err != nil {
		t.Fatal(err)
	}
	run, err := core.ParseRunId("Run_01KBNJ2V0P6C4Y8N2B7K3T5W9E")
	if err != nil {
		t.Fatal(err)
	}
	return &worker{d: d, exr: exr, run: run}
}

func now() core.Timestamp { return core.TS(time.Now()) }

func mustFFQN(t *testing.T, s string) core.FunctionFqn {
	t.Helper()
	f, err := core.ParseFunctionFqn(s)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// lock locks up to batch pending executions of ffqn, long-polling until at
// least one is locked or the deadline passes.
func (w *worker) lock(t *testing.T, ffqn core.FunctionFqn, ct core.ComponentType, batch uint32) []wire.LockedExecutionJSON {
	t.Helper()
	retry := core.RetryConfigZero()
	if ct == core.ComponentTypeWorkflow {
		retry = core.ComponentRetryConfig{}
	}
	end := time.Now().Add(deadline)
	for time.Now().Before(end) {
		wait := 2 * time.Second
		until := now().Add(wait) // wake up for anything due before the wait ends
		var locked []wire.LockedExecutionJSON
		w.d.call(t, http.MethodPost, "/v1/worker/lock/pending-by-ffqns", wire.LockPendingBody{
			LockParams: wire.LockParams{ComponentID: core.ComponentId{ComponentType: ct, Name: "e2e"},
				ExecutorID: w.exr, RunID: w.run, LockExpiresAt: now().Add(time.Minute), RetryConfig: retry},
			BatchSize: batch, FFQNs: []core.FunctionFqn{ffqn}, WaitMs: uint64(wait.Milliseconds()), PendingAtOrSooner: &until,
		}, &locked)
		if len(locked) > 0 {
			return locked
		}
	}
	t.Fatalf("nothing of %s became pending", ffqn)
	return nil
}

func history(h core.HistoryEvent) core.AppendRequest {
	return core.AppendRequest{CreatedAt: now(), Event: &core.HistoryEventRequest{Event: h}}
}

// finished is a Finished event with an ok value of WIT type typ.
func finished(typ, value string) core.AppendRequest {
	return core.AppendRequest{CreatedAt: now(), Event: &core.Finished{
		Retval: core.RetOk(&core.WastValWithType{Type: typ, Value: json.RawMessage(value)})}}
}
