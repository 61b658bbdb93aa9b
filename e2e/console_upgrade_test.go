package e2e_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/httpapi"
	"github.com/stela-dev/stela/sqlite"
	"github.com/stela-dev/stela/store"
	sdk "github.com/stela-dev/stela/worker"
)

// The console's execution page (issue 22): "Download history" saves the
// file `stela execution history export` writes, and "Upgrade…" offers the
// digests of the deployments' components exporting the function and shows
// the outcome of the replay-checked upgrade: upgraded (a pinned v2 worker
// replays the v1 history cleanly), replay failed with the divergence (the
// other v1 execution), and no worker of the chosen build (v3 recorded its
// deployment but is not running).
func TestConsoleUpgradesAnExecutionAfterAReplayCheck(t *testing.T) {
	chromiumPath(t)
	ctx := context.Background()
	backend, err := sqlite.Open(filepath.Join(t.TempDir(), "stela.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	svc := store.New(backend, store.Options{PollInterval: 20 * time.Millisecond})
	t.Cleanup(func() { _ = svc.Close() })
	srv := httptest.NewServer(httpapi.New(svc, nil, httpapi.Options{Authorizer: httpapi.AllowAll(), UpgradeCheckWait: 2 * time.Second}))
	t.Cleanup(srv.Close)

	const (
		ffqn = "shop:orders/workflow.route"
		actA = "shop:orders/acts.a"
		actB = "shop:orders/acts.b"
	)
	build := func(id string, body func(wf *sdk.Context, p string) (string, error)) *sdk.Worker {
		c, err := client.New(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		w := sdk.New(c, sdk.Options{Name: "orders", BuildID: id, Pinned: true, PollWait: 100 * time.Millisecond})
		t.Cleanup(w.Close)
		for _, a := range []string{actA, actB} {
			sdk.Activity(w, a, func(context.Context, sdk.Unit) (string, error) { return a, nil })
		}
		sdk.Workflow(w, ffqn, body)
		return w
	}
	call := func(wf *sdk.Context, f string) {
		if _, err := sdk.Call[string](wf, f, nil); err != nil {
			panic(err)
		}
	}
	v1 := build("v1", func(wf *sdk.Context, p string) (string, error) {
		if p == "x" {
			call(wf, actA)
		} else {
			call(wf, actB)
		}
		return p, wf.Sleep(time.Hour)
	})
	x, err := v1.Submit(ctx, ffqn, "x")
	if err != nil {
		t.Fatal(err)
	}
	y, err := v1.Submit(ctx, ffqn, "y")
	if err != nil {
		t.Fatal(err)
	}
	stopV1 := runWorker(ctx, t, v1)
	asleep := func(id core.ExecutionId) bool {
		st, err := svc.GetPendingState(ctx, id)
		return err == nil && st.PendingState.Blocked != nil && strings.HasSuffix(st.PendingState.Blocked.JoinSetID.String(), "sleep")
	}
	deadline := time.Now().Add(30 * time.Second)
	for !asleep(x) || !asleep(y) {
		if time.Now().After(deadline) {
			t.Fatal("the v1 executions did not reach their sleep")
		}
		time.Sleep(10 * time.Millisecond) // polling the store, not a synchronisation delay
	}
	stopV1()
	v2 := build("v2", func(wf *sdk.Context, p string) (string, error) {
		call(wf, actA)
		return p + "2", wf.Sleep(time.Hour)
	})
	v3 := build("v3", func(wf *sdk.Context, p string) (string, error) { return p, nil })
	if err := v3.RunUntilIdle(ctx); err != nil { // records v3's deployment, then stops
		t.Fatal(err)
	}
	defer runWorker(ctx, t, v2)()
	d1, d2, d3 := v1.ComponentDigests()[ffqn], v2.ComponentDigests()[ffqn], v3.ComponentDigests()[ffqn]
	digest := func(id core.ExecutionId) core.ComponentDigest {
		st, err := svc.GetPendingState(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return st.ComponentDigest
	}

	b := newTab(t, srv.URL)
	b.open("/console/deployments")
	b.waitFor("the three builds' deployments", `document.querySelectorAll('#deployments tbody tr').length === 3`)

	// Download history: the bytes of GET …/history, which the CLI test
	// checks against `stela execution history export`.
	b.open("/console/executions/" + x.String())
	b.eval(`(() => { const orig = URL.createObjectURL; URL.createObjectURL = (blob) => { blob.text().then((s) => { window.__history = s; }); return orig(blob); }; })()`, nil)
	b.click("#act-history")
	b.waitFor("the downloaded history", `window.__history`)
	resp, err := http.Get(srv.URL + "/v1/executions/" + x.String() + "/history")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if got := b.str(`window.__history`); got != string(want) || !strings.Contains(got, `"format": "stela-history/1"`) {
		t.Fatalf("downloaded history:\n%s\nwant:\n%s", got, want)
	}

	upgradeTo := func(target core.ComponentDigest, outcome string) string {
		t.Helper()
		b.click("#act-upgrade")
		b.waitFor("the target choice", `document.querySelector('dialog[open] #upgrade-target')`)
		opts := b.str(`[...document.querySelectorAll('#upgrade-target option')].map((o) => o.value).join(' ')`)
		if !strings.Contains(opts, d2.String()) || !strings.Contains(opts, d3.String()) || strings.Contains(opts, d1.String()) {
			t.Fatalf("targets %q: want v2's and v3's digests, not v1's own", opts)
		}
		b.setValue("#upgrade-target", target.String())
		b.confirmDialog()
		b.waitFor("the outcome "+outcome, `document.querySelector('#upgrade-outcome[data-outcome]')`)
		if got := b.str(`document.querySelector('#upgrade-outcome').dataset.outcome`); got != outcome {
			t.Fatalf("outcome %q, want %q: %s", got, outcome, b.str(`document.querySelector('#upgrade-outcome').textContent`))
		}
		return b.str(`document.querySelector('#upgrade-outcome').textContent`)
	}
	if text := upgradeTo(d2, "upgraded"); !strings.Contains(text, "replayed cleanly") {
		t.Errorf("upgraded outcome %q", text)
	}
	if got := digest(x); got != d2 {
		t.Fatalf("x on %s after the console's upgrade, want %s", got, d2)
	}

	b.open("/console/executions/" + y.String())
	if text := upgradeTo(d2, "diverged"); !strings.Contains(text, "Replay failed: version 2: the workflow asked for") {
		t.Errorf("diverged outcome %q", text)
	}
	if text := upgradeTo(d3, "no-worker"); !strings.Contains(text, "new component not found") {
		t.Errorf("no-worker outcome %q", text)
	}
	if got := digest(y); got != d1 {
		t.Fatalf("y on %s after two refused upgrades, want %s", got, d1)
	}
	b.screenshot(screenshotDir(t), "upgrade.png")
	b.noErrors()
}
