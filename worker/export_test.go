package worker

import "github.com/stela-dev/stela/core"

// WaitRuns waits until every run this worker started has ended (its
// concurrency slot and in-flight count given back), for tests that
// interleave a run's end with RunUntilIdle's rounds.
func (w *Worker) WaitRuns() { w.waitAll() }

// OnLockWaitsForPause sets a hook called when a lock of an execution waits
// for this worker's run of it to finish pausing (set before running).
func (w *Worker) OnLockWaitsForPause(f func(id core.ExecutionId)) { w.cache.onWait = f }

// Pausing returns the number of runs marked pausing.
func (w *Worker) Pausing() int {
	w.cache.mu.Lock()
	defer w.cache.mu.Unlock()
	return len(w.cache.pausing)
}

// OnParked sets a hook called once a workflow run was parked in this
// worker's cache (set before running).
func (w *Worker) OnParked(f func(id core.ExecutionId)) { w.cache.onPut = f }

// OnAwaiting sets a hook called when a workflow run starts waiting for a
// response in memory (set before running).
func (w *Worker) OnAwaiting(f func(id core.ExecutionId)) { w.onAwait = f }

// Stopping is closed once the worker began stopping (Run's context done).
func (w *Worker) Stopping() <-chan struct{} { return w.stopping.Done() }

// EagerReady reports whether the worker runs with eager dispatch set up
// (Run or RunUntilIdle began), so that a Submit may start eagerly.
func (w *Worker) EagerReady() bool { return w.eager.Load() != nil }

// SetStartsInFlight sets the create-locked requests of a lock group in
// flight at once (set before running; default maxStartsInFlight).
func (w *Worker) SetStartsInFlight(n int) { w.starts.limit = n }

// QueuedStarts returns the number of submissions waiting for a
// create-locked request of their lock group (startbatch.go).
func (w *Worker) QueuedStarts() int {
	w.starts.mu.Lock()
	defer w.starts.mu.Unlock()
	n := 0
	for _, q := range w.starts.m {
		q.mu.Lock()
		n += len(q.waiting)
		q.mu.Unlock()
	}
	return n
}
