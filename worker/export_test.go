package worker

// WaitRuns waits until every run this worker started has ended (its
// concurrency slot and in-flight count given back), for tests that
// interleave a run's end with RunUntilIdle's rounds.
func (w *Worker) WaitRuns() { w.waitAll() }
