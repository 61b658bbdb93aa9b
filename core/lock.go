package core

// ComponentRetryConfig says how often and how fast failed runs are retried.
// MaxRetries nil means retry forever (workflows, crons).
type ComponentRetryConfig struct {
	MaxRetries      *uint32  `json:"max_retries"`
	RetryExpBackoff Duration `json:"retry_exp_backoff"`
}

// RetryConfigZero is max_retries 0, backoff 0.
func RetryConfigZero() ComponentRetryConfig {
	zero := uint32(0)
	return ComponentRetryConfig{MaxRetries: &zero}
}

// LockedBy identifies a lock holder.
type LockedBy struct {
	ExecutorID ExecutorId `json:"executor_id"`
	RunID      RunId      `json:"run_id"`
}
