package worker_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"regexp"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/internal/backendtest"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/worker"
	"github.com/stela-dev/stela/worker/workertest"
)

// unstableIDs are the ids of a history that a same clock and entropy do
// not make equal: each lock's run id, whose random part is drawn from
// Options.Entropy by every lock request, found work or not, so it depends
// on how many requests the worker's passes made, which depends on timing.
// (The executor id and the run ids' time parts come from Options.Clock.)
var unstableIDs = regexp.MustCompile(`\bRun_[0-9A-HJKMNP-TV-Z]{26}`)

// TestExportedHistoriesAreTheSameOnSQLiteAndDynamoDB: one scenario (a
// workflow calls an activity, sleeps a minute on the store's timers, calls
// another) driven on the embedded store and on DynamoDB Local by a worker
// with the same simulated clock, entropy and deployment. The exported
// histories (the file of `stela execution history export` and of the
// console's download) are byte-identical once the unstable ids are
// blanked (the run ids, see unstableIDs);
// nothing else differs.
func TestExportedHistoriesAreTheSameOnSQLiteAndDynamoDB(t *testing.T) {
	backendtest.SkipWithoutDynamoDB(t)
	dep, err := core.ParseDeploymentId("Dep_01KJ3ZC4Q5W8X7V6T5R4Q3P2N1")
	if err != nil {
		t.Fatal(err)
	}
	export := func(t *testing.T, open func(testing.TB, store.Options) *store.Service) []byte {
		clock := store.NewSimClock(workertest.Start)
		opts := backendtest.Options()
		opts.Clock = clock
		svc := open(t, opts)
		w := worker.New(svc, worker.Options{BuildID: "same", Clock: clock, DeploymentID: dep,
			Entropy: rand.NewChaCha8([32]byte{22})})
		t.Cleanup(w.Close)
		orderCode(w, &calls{}, v1) // a, sleep a minute, b
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		id, err := w.Submit(ctx, upgradeFFQN, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.RunUntilIdle(ctx); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Minute)
		if _, err := store.Sweep(ctx, svc, clock.Now()); err != nil {
			t.Fatal(err)
		}
		if err := w.RunUntilIdle(ctx); err != nil {
			t.Fatal(err)
		}
		log, err := svc.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if log.PendingState.Finished == nil || log.PendingState.Finished.ResultKind.IsErr {
			t.Fatalf("the scenario did not finish OK: %s", log.PendingState)
		}
		h, err := core.HistoryOf(log)
		if err != nil {
			t.Fatal(err)
		}
		b, err := h.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var sq, dy []byte
	t.Run("sqlite", func(t *testing.T) { sq = export(t, backendtest.SQLiteWith) })
	t.Run("dynamodb", func(t *testing.T) { dy = export(t, backendtest.DynamoDBWith) })
	if sq == nil || dy == nil {
		t.Fatal("a backend did not export")
	}
	blank := func(b []byte) []byte { return unstableIDs.ReplaceAll(b, []byte("<unstable id>")) }
	if n := len(unstableIDs.FindAll(sq, -1)); n < 4 {
		t.Fatalf("%d executor/run ids in the history, want the locks' (at least 4)", n)
	}
	if !bytes.Equal(blank(sq), blank(dy)) {
		t.Fatalf("histories differ beyond the run ids:\nsqlite:\n%s\ndynamodb:\n%s", sq, dy)
	}
}
