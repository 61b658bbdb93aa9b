package sqlite

// LockBatchInOneUpdate implements store.BatchLocker: the single writer makes
// one Update per lock call cheaper than one per candidate, and it never
// aborts on contention.
func (b *Backend) LockBatchInOneUpdate() bool { return true }
