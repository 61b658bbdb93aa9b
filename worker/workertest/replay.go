package workertest

import (
	"context"
	"os"
	"testing"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/worker"
)

// History returns the execution's exportable history, as `stela
// execution history export` writes it.
func (e *Env) History(id core.ExecutionId) core.ExecutionHistory {
	e.t.Helper()
	h, err := core.HistoryOf(e.Log(id))
	if err != nil {
		e.t.Fatalf("history of %s: %v", id, err)
	}
	return h
}

// Replay replays h against the workflows registered on w (see
// worker.Worker.Replay) and fails the test at the first divergence,
// naming its version and the expected (stored) and actual (asked for)
// events. It returns the result for further checks.
func Replay(t testing.TB, w *worker.Worker, h core.ExecutionHistory) worker.ReplayResult {
	t.Helper()
	res, err := w.Replay(context.Background(), h)
	if err != nil {
		t.Fatalf("replay %s: %v", h.ExecutionID, err)
	}
	if res.Divergence != nil {
		t.Fatalf("replay %s (%s) diverges at version %d: %s", h.ExecutionID, h.FFQN, res.Divergence.Version, res.Divergence.Detail)
	}
	return res
}

// ReplayFile is Replay of a history file exported with `stela execution
// history export ID > file.json` (e.g. kept in testdata/ and replayed in
// CI against the code about to be deployed).
func ReplayFile(t testing.TB, w *worker.Worker, path string) worker.ReplayResult {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h, err := core.ParseHistory(b)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return Replay(t, w, h)
}
