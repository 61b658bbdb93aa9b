// Command upgrade walks through a safe code upgrade against `stela dev`
// (docs/worker.md "Deployments and upgrades"): v1 of an order workflow
// runs on a pinned worker; v2, which charges before reserving behind a
// patch (wf.Patched), starts beside it as a new build and deployment; new
// orders run on v2; the running v1 orders are moved to v2 only after a v2
// worker replayed their histories cleanly (the server's checked upgrade,
// as `stela execution upgrade --from <v1> --to <v2> --all`); every order
// finishes.
//
//	go run ./cmd/stela dev &         # in another terminal
//	go run ./examples/upgrade        # then look at /console/deployments
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/worker"
)

// The functions of the example.
const (
	PlaceFFQN   = "demo:upgrade/orders.place"
	ReserveFFQN = "demo:upgrade/stock.reserve"
	ChargeFFQN  = "demo:upgrade/payments.charge"
	ShipFFQN    = "demo:upgrade/shipping.ship"
)

// Options of the example's workflows.
type Options struct {
	// Wait is how long an order waits between its first step and shipping.
	Wait time.Duration
}

// registerActivities registers the activities (the same in both builds).
func registerActivities(w *worker.Worker) {
	for _, f := range []string{ReserveFFQN, ChargeFFQN, ShipFFQN} {
		worker.Activity(w, f, func(_ context.Context, order string) (string, error) { return f + "(" + order + ")", nil })
	}
}

// RegisterV1 registers build 1: reserve, wait, ship.
func RegisterV1(w *worker.Worker, o Options) {
	registerActivities(w)
	worker.Workflow(w, PlaceFFQN, func(wf *worker.Context, order string) (string, error) {
		first, err := worker.Call[string](wf, ReserveFFQN, order)
		if err != nil {
			return "", err
		}
		if err := wf.Sleep(o.Wait); err != nil {
			return "", err
		}
		shipped, err := worker.Call[string](wf, ShipFFQN, order)
		return first + " " + shipped, err
	})
}

// RegisterV2 registers build 2: new orders charge first; orders that
// reserved under v1 keep their path (the patch).
func RegisterV2(w *worker.Worker, o Options) {
	registerActivities(w)
	worker.Workflow(w, PlaceFFQN, func(wf *worker.Context, order string) (string, error) {
		step := ReserveFFQN
		if wf.Patched("charge-first") {
			step = ChargeFFQN
		}
		first, err := worker.Call[string](wf, step, order)
		if err != nil {
			return "", err
		}
		if err := wf.Sleep(o.Wait); err != nil {
			return "", err
		}
		shipped, err := worker.Call[string](wf, ShipFFQN, order)
		return first + " " + shipped, err
	})
}

// Report is what the walk-through prints.
type Report struct {
	V1Deployment core.DeploymentId    `json:"v1_deployment"`
	V2Deployment core.DeploymentId    `json:"v2_deployment"`
	V1Digest     core.ComponentDigest `json:"v1_digest"`
	V2Digest     core.ComponentDigest `json:"v2_digest"`
	Upgraded     int                  `json:"upgraded"`
	Diverged     []string             `json:"diverged"`
	Results      map[string]string    `json:"results"`
}

func main() { os.Exit(run(os.Args, os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("upgrade", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", "http://127.0.0.1:8080", "Stela server `URL`")
	n := fs.Int("orders", 3, "orders per build")
	wait := fs.Duration("wait", 2*time.Second, "how long each order waits before shipping")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := walk(ctx, *url, *n, Options{Wait: *wait}, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	out, _ := json.MarshalIndent(rep, "", "  ")
	fmt.Fprintln(stdout, string(out))
	return 0
}

// start runs w in the background; the returned function stops it (once).
func start(ctx context.Context, w *worker.Worker) func() {
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	var once sync.Once
	return func() { once.Do(func() { stop(); <-done }) }
}

func walk(ctx context.Context, url string, n int, o Options, log io.Writer) (Report, error) {
	conn, err := client.New(url)
	if err != nil {
		return Report{}, err
	}
	var rep Report
	v1 := worker.New(conn, worker.Options{Name: "orders", BuildID: "orders-v1", Pinned: true, PollWait: time.Second})
	RegisterV1(v1, o)
	stopV1 := start(ctx, v1)
	defer stopV1()
	var orders []core.ExecutionId
	for i := range n {
		id, err := v1.Submit(ctx, PlaceFFQN, fmt.Sprintf("v1-order-%d", i))
		if err != nil {
			return rep, err
		}
		orders = append(orders, id)
	}
	// 1. the v1 orders reserve and wait
	for _, id := range orders {
		if err := waitBlocked(ctx, conn, id); err != nil {
			return rep, err
		}
	}
	fmt.Fprintf(log, "1. %d v1 orders reserved and wait\n", n)

	// 2. v2 starts beside v1: a new build, a new deployment, current.
	v2 := worker.New(conn, worker.Options{Name: "orders", BuildID: "orders-v2", Pinned: true, PollWait: time.Second})
	RegisterV2(v2, o)
	stopV2 := start(ctx, v2)
	defer stopV2()
	for v2.DeploymentID().IsZero() {
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return rep, err
		}
	}
	rep.V1Deployment, rep.V2Deployment = v1.DeploymentID(), v2.DeploymentID()
	rep.V1Digest, rep.V2Digest = v1.ComponentDigests()[PlaceFFQN], v2.ComponentDigests()[PlaceFFQN]
	fmt.Fprintf(log, "2. v2 is deployment %s (digest %s); v1 stays %s (digest %s)\n", rep.V2Deployment, rep.V2Digest, rep.V1Deployment, rep.V1Digest)
	for i := range n {
		id, err := v2.Submit(ctx, PlaceFFQN, fmt.Sprintf("v2-order-%d", i))
		if err != nil {
			return rep, err
		}
		orders = append(orders, id)
	}
	fmt.Fprintf(log, "3. %d new orders run on v2\n", n)

	// 4. move the running v1 orders to v2 after a replay check by v2's
	// worker (PUT …/upgrade without skip_determinism_check): what `stela
	// execution upgrade --from <v1> --to <v2> --all` and the console's
	// Upgrade do. (v2.Upgrade(ctx, conn, &rep.V1Digest) is the same check
	// run in this program.)
	var running []core.ExecutionId
	for st, err := range conn.Executions(ctx, core.ListExecutionsFilter{ComponentDigest: &rep.V1Digest, HideFinished: true, ShowDerived: true}, 100) {
		if err != nil {
			return rep, err
		}
		running = append(running, st.ExecutionID)
	}
	rep.Diverged = []string{}
	for _, id := range running {
		err := conn.UpgradeChecked(ctx, id, rep.V1Digest, rep.V2Digest)
		var refused *client.Error
		switch {
		case err == nil:
			rep.Upgraded++
		case errors.As(err, &refused) && refused.Status == http.StatusUnprocessableEntity:
			rep.Diverged = append(rep.Diverged, id.String()+": "+refused.Message) // "Replay failed: version N: …"
		default:
			return rep, fmt.Errorf("upgrade %s: %w", id, err)
		}
	}
	fmt.Fprintf(log, "4. upgraded %d v1 orders to v2 after replaying them; %d diverged\n", rep.Upgraded, len(rep.Diverged))
	if len(rep.Diverged) == 0 {
		stopV1() // nothing left for v1
	}

	rep.Results = map[string]string{}
	for _, id := range orders {
		r, err := worker.Await[string](ctx, v2, id)
		if err != nil {
			return rep, fmt.Errorf("%s: %w", id, err)
		}
		rep.Results[id.String()] = r
	}
	fmt.Fprintf(log, "5. all %d orders finished\n", len(orders))
	return rep, nil
}

// waitBlocked waits until id waits for a response (its sleep).
func waitBlocked(ctx context.Context, conn *client.Client, id core.ExecutionId) error {
	for {
		st, err := conn.GetPendingState(ctx, id)
		if err != nil {
			return err
		}
		if st.PendingState.Blocked != nil || st.PendingState.Finished != nil {
			return nil
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
