package e2e_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/httpapi"
	"github.com/stela-dev/stela/sqlite"
	"github.com/stela-dev/stela/store"
	sdk "github.com/stela-dev/stela/worker"
)

// Two builds of an SDK worker, started over HTTP against an embedded
// store, record two deployments (issue 22): the console's Deployments
// page lists both, the newer one active, and its detail shows the
// component, its exports and the WIT generated from the Go types.
func TestConsoleShowsSDKWorkerDeployments(t *testing.T) {
	chromiumPath(t)
	ctx := context.Background()
	backend, err := sqlite.Open(filepath.Join(t.TempDir(), "stela.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	svc := store.New(backend, store.Options{})
	t.Cleanup(func() { _ = svc.Close() })
	srv := httptest.NewServer(httpapi.New(svc, nil, httpapi.Options{Authorizer: httpapi.AllowAll()}))
	t.Cleanup(srv.Close)

	const ffqn = "shop:orders/workflow.place"
	type order struct {
		Item   string `json:"item"`
		Amount int64  `json:"amount"`
	}
	start := func(build string) *sdk.Worker {
		c, err := client.New(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		w := sdk.New(c, sdk.Options{Name: "orders", BuildID: build, Pinned: true, PollWait: 100 * time.Millisecond})
		t.Cleanup(w.Close)
		sdk.Workflow(w, ffqn, func(wf *sdk.Context, o order) (string, error) { return o.Item, nil })
		if err := w.RunUntilIdle(ctx); err != nil {
			t.Fatal(err)
		}
		return w
	}
	v1, v2 := start("v1"), start("v2")
	d1, d2 := v1.DeploymentID().String(), v2.DeploymentID().String()
	if d1 == d2 || v1.DeploymentID().IsZero() {
		t.Fatalf("deployments %s and %s", d1, d2)
	}

	b := newTab(t, srv.URL)
	b.open("/console/deployments")
	for _, d := range []string{d1, d2} {
		b.waitFor("the deployment row of "+d, `document.querySelector('#deployments a[href="/console/deployments/`+d+`"]')`)
	}
	rows := b.str(`[...document.querySelectorAll('#deployments tbody tr')].map((r) => r.textContent).join('\n')`)
	for _, want := range []string{"active", "inactive", "1 workflow", `SDK worker "orders", build v2`, `SDK worker "orders", build v1`} {
		if !strings.Contains(rows, want) {
			t.Errorf("deployment rows lack %q:\n%s", want, rows)
		}
	}
	b.click(`#deployments a[href="/console/deployments/` + d2 + `"]`)
	b.waitFor("the component", `document.querySelector('.component table.functions')`)
	if got := b.str(`document.querySelector('.component table.functions').textContent`); !strings.Contains(got, ffqn) ||
		!strings.Contains(got, "record { item: string, amount: s64 }") {
		t.Errorf("exports = %q", got)
	}
	b.click(`.component details.wit summary`)
	b.waitFor("the WIT", `document.querySelector('.component details.wit pre') && document.querySelector('.component details.wit pre').textContent.includes('package shop:orders;')`)
	if got := b.str(`document.querySelector('.component details.wit pre').textContent`); !strings.Contains(got, "place: func(params: record { item: string, amount: s64 }) -> string;") {
		t.Errorf("WIT = %q", got)
	}
	b.screenshot(screenshotDir(t), "sdk-deployment.png")
	b.noErrors()
}
