// Package clean is deterministic workflow code that imports nothing that
// breaks replay: the analyzer passes it.
package clean

import (
	"slices"
	"time"

	"github.com/stela-dev/stela/worker"
)

func Register(w *worker.Worker) {
	worker.Workflow(w, "shop:clean/workflow.remind", Remind)
}

// Remind sleeps until each reminder, in order, and calls the notifier.
func Remind(wf *worker.Context, at []time.Time) (int, error) {
	sent := 0
	for _, t := range slices.SortedFunc(slices.Values(at), time.Time.Compare) {
		if err := wf.SleepUntil(t); err != nil {
			return sent, err
		}
		if _, err := worker.Call[worker.Unit](wf, "shop:clean/notifier.notify", t); err != nil {
			return sent, err
		}
		sent++
	}
	return sent, nil
}
