package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/internal/apitest"
	"github.com/stela-dev/stela/internal/backendtest"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/worker"
)

const upFFQN = "demo:up/wf.run"

// upWorker is a pinned SDK worker of build over HTTP: the workflow calls
// an activity, then sleeps an hour.
func upWorker(t *testing.T, url, build string) *worker.Worker {
	t.Helper()
	c, err := client.New(url)
	if err != nil {
		t.Fatal(err)
	}
	w := worker.New(c, worker.Options{BuildID: build, Pinned: true, PollWait: 100 * time.Millisecond})
	t.Cleanup(w.Close)
	worker.Activity(w, "demo:up/acts.a", func(ctx context.Context, p string) (string, error) { return p, nil })
	worker.Workflow(w, upFFQN, func(wf *worker.Context, p string) (string, error) {
		if _, err := worker.Call[string](wf, "demo:up/acts.a", p); err != nil {
			return "", err
		}
		return p, wf.Sleep(time.Hour)
	})
	return w
}

// TestDeploymentsPinningHistoryAndUpgradeOverHTTP: two pinned SDK
// workers of different builds over HTTP record two deployments (listed by
// `stela deployment list`), each locks only the executions submitted
// while its deployment was current; `stela execution history export`
// writes a history the new build replays; `stela execution upgrade` has
// the running new build replay the history before it moves it (one
// execution, then --all of the old digest) and --skip-check moves without.
func TestDeploymentsPinningHistoryAndUpgradeOverHTTP(t *testing.T) {
	backendtest.Each(t, func(t *testing.T, svc *store.Service) {
		url := apitest.Server(t, svc)
		ctx := context.Background()
		submit := func() core.ExecutionId {
			t.Helper()
			code, out, errOut := run("execution", "submit", upFFQN, `["x"]`, "--url", url)
			if code != ExitOK {
				t.Fatalf("submit: exit %d, %s", code, errOut)
			}
			id, err := core.ParseExecutionId(strings.TrimSpace(strings.Split(out, "\n")[0]))
			if err != nil {
				t.Fatalf("submit printed %q: %v", out, err)
			}
			return id
		}
		state := func(id core.ExecutionId) core.ExecutionWithState {
			t.Helper()
			st, err := svc.GetPendingState(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			return st
		}
		v1 := upWorker(t, url, "v1")
		if err := v1.RunUntilIdle(ctx); err != nil { // records v1's deployment
			t.Fatal(err)
		}
		x1, x1b := submit(), submit()
		v2 := upWorker(t, url, "v2")
		if err := v2.RunUntilIdle(ctx); err != nil {
			t.Fatal(err)
		}
		d1, d2 := v1.ComponentDigests()[upFFQN], v2.ComponentDigests()[upFFQN]
		if st := state(x1); st.PendingState.Locked != nil || st.ComponentDigest != d1 || st.PendingState.Blocked != nil {
			t.Fatalf("v2 touched v1's execution: %+v", st)
		}
		x2 := submit()
		if st := state(x2); st.ComponentDigest != d2 || st.DeploymentID != v2.DeploymentID() {
			t.Fatalf("x2 created for %s in %s, want v2's %s in %s", st.ComponentDigest, st.DeploymentID, d2, v2.DeploymentID())
		}
		if err := v1.RunUntilIdle(ctx); err != nil {
			t.Fatal(err)
		}
		if st := state(x2); st.PendingState.Blocked != nil {
			t.Fatalf("v1 ran v2's execution: %+v", st)
		}
		if err := v2.RunUntilIdle(ctx); err != nil {
			t.Fatal(err)
		}
		for _, id := range []core.ExecutionId{x1, x1b, x2} {
			if st := state(id); st.PendingState.Blocked == nil {
				t.Fatalf("%s not sleeping: %+v", id, st.PendingState)
			}
		}
		code, out, errOut := run("deployment", "list", "--url", url)
		if code != ExitOK || !strings.Contains(out, v1.DeploymentID().String()) || !strings.Contains(out, v2.DeploymentID().String()) {
			t.Fatalf("deployment list: exit %d, %s %s", code, out, errOut)
		}

		path := filepath.Join(t.TempDir(), "x1.json")
		if code, _, errOut := run("execution", "history", "export", x1.String(), "--out", path, "--url", url); code != ExitOK {
			t.Fatalf("history export: exit %d, %s", code, errOut)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// The console's download (GET …/history) is the same file, byte for byte.
		resp, err := http.Get(url + "/v1/executions/" + x1.String() + "/history")
		if err != nil {
			t.Fatal(err)
		}
		served, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(served, b) ||
			resp.Header.Get("Content-Disposition") != `attachment; filename="`+x1.String()+`.json"` {
			t.Fatalf("GET …/history: %d %v %q, %d bytes, want the %d bytes of the export", resp.StatusCode, err, resp.Header.Get("Content-Disposition"), len(served), len(b))
		}
		h, err := core.ParseHistory(b)
		if err != nil {
			t.Fatal(err)
		}
		res, err := v2.Replay(ctx, h)
		if err != nil || res.Divergence != nil || res.Replayed < 4 {
			t.Fatalf("replay of the exported history: %+v, %v", res, err)
		}

		// The checked upgrade: v2 (running) replays each history first.
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- v2.Run(runCtx) }()
		defer func() { stop(); <-done }()
		if code, _, errOut := run("execution", "upgrade", x1.String(), "--to", d2.String(), "--from", d2.String(), "--url", url); code == ExitOK {
			t.Fatalf("upgrade with a wrong --from succeeded: %s", errOut)
		}
		if code, out, errOut := run("execution", "upgrade", x1.String(), "--to", d2.String(), "--url", url); code != ExitOK || !strings.HasPrefix(out, "upgraded "+x1.String()) {
			t.Fatalf("checked upgrade: exit %d, %s %s", code, out, errOut)
		}
		if st := state(x1); st.ComponentDigest != d2 {
			t.Fatalf("x1 on %s after upgrade, want %s", st.ComponentDigest, d2)
		}
		code, out, errOut = run("execution", "upgrade", "--from", d1.String(), "--to", d2.String(), "--all", "--url", url)
		if code != ExitOK || !strings.Contains(out, "upgraded "+x1b.String()) || !strings.Contains(out, "1 upgraded, 0 diverged, 0 skipped") {
			t.Fatalf("upgrade --all: exit %d, %s %s", code, out, errOut)
		}
		if st := state(x1b); st.ComponentDigest != d2 {
			t.Fatalf("x1b on %s after upgrade --all, want %s", st.ComponentDigest, d2)
		}
		if code, _, errOut := run("execution", "upgrade", x1.String(), "--to", d1.String(), "--skip-check", "--url", url); code != ExitOK {
			t.Fatalf("forced upgrade: exit %d, %s", code, errOut)
		}
		if st := state(x1); st.ComponentDigest != d1 {
			t.Fatalf("x1 on %s after the forced move back, want %s", st.ComponentDigest, d1)
		}
	})
}
