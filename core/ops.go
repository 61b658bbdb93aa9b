package core

// CancelOutcome is the result of a cancellation request.
type CancelOutcome uint8

// Cancellation outcomes.
const (
	CancelRequested CancelOutcome = iota + 1
	CancelAlreadyFinished
	CancelAlreadyCancelling
)

func (o CancelOutcome) String() string {
	switch o {
	case CancelRequested:
		return "cancellation requested"
	case CancelAlreadyFinished:
		return "already finished"
	case CancelAlreadyCancelling:
		return "already cancelling"
	}
	return "unknown"
}

// DelayCancelOutcome is the result of cancel_delay.
type DelayCancelOutcome uint8

// Delay cancellation outcomes.
const (
	DelayCancelled DelayCancelOutcome = iota + 1
	DelayAlreadyFinished
)

// AppendDelayResponseOutcome is the result of append_delay_response.
type AppendDelayResponseOutcome uint8

// Delay response outcomes.
const (
	DelayResponseSuccess AppendDelayResponseOutcome = iota + 1
	// DelayResponseAlreadyFinished: the delay had already fired.
	DelayResponseAlreadyFinished
	// DelayResponseAlreadyCancelled: the delay had already been cancelled.
	DelayResponseAlreadyCancelled
)

// PlanPauseExecution returns the events pause_execution appends at
// s.NextVersion() (docs/spec/semantics.md §6.1): a locked workflow gets Unlocked("paused") then
// Paused; a locked activity is rejected; anything else gets Paused (whose own
// rules reject paused and cancelling executions).
func PlanPauseExecution(s *ExecutionState, pausedAt Timestamp) ([]AppendRequest, error) {
	if s.IsFinished() {
		return nil, ErrAlreadyFinished
	}
	if s.State == StateLocked && s.Lifecycle == LifecycleActive {
		if s.ComponentType.IsActivity() {
			return nil, illegal("cannot pause a running activity; cancel it instead")
		}
		return []AppendRequest{
			{CreatedAt: pausedAt, Event: &Unlocked{UnlockedAt: pausedAt, Reason: "paused"}},
			{CreatedAt: pausedAt, Event: &Paused{}},
		}, nil
	}
	return []AppendRequest{{CreatedAt: pausedAt, Event: &Paused{}}}, nil
}

// PlanUnpauseExecution returns the events unpause_execution appends.
func PlanUnpauseExecution(s *ExecutionState, unpausedAt Timestamp) ([]AppendRequest, error) {
	if s.IsFinished() {
		return nil, ErrAlreadyFinished
	}
	return []AppendRequest{{CreatedAt: unpausedAt, Event: &Unpaused{}}}, nil
}

// PlanCancelWorkflow decides cancel_workflow (docs/spec/semantics.md §4.2.8): finished and
// cancelling executions append nothing; only `-cancellable` functions can be
// cancelled. A nil request means nothing is appended.
func PlanCancelWorkflow(s *ExecutionState, cancelledAt Timestamp) (CancelOutcome, *AppendRequest, error) {
	switch {
	case s.IsFinished():
		return CancelAlreadyFinished, nil, nil
	case s.Lifecycle == LifecycleCancelling:
		return CancelAlreadyCancelling, nil, nil
	case !s.FFQN.IsCancellable():
		return 0, nil, illegal("cannot cancel, execution is not a cancellable workflow")
	}
	return CancelRequested, &AppendRequest{CreatedAt: cancelledAt, Event: &CancellationRequested{}}, nil
}

// PlanCancelActivity decides append_activity_cancellation_requested: an
// activity already finished as cancelled, or already cancelling, reports
// CancelRequested (idempotent); other finished ones AlreadyFinished.
func PlanCancelActivity(s *ExecutionState, cancelledAt Timestamp) (CancelOutcome, *AppendRequest) {
	switch {
	case s.IsFinished():
		if s.ResultKind != nil && s.ResultKind.Failure == FailureCancelled {
			return CancelRequested, nil
		}
		return CancelAlreadyFinished, nil
	case s.Lifecycle == LifecycleCancelling:
		return CancelRequested, nil
	}
	return CancelRequested, &AppendRequest{CreatedAt: cancelledAt, Event: &CancellationRequested{}}
}

// PlanUpgrade decides upgrade_execution_component (docs/spec/semantics.md §6.4): the current
// digest must equal old (else ErrNotFound, checked before finished), the
// execution must not be finished; the event keeps the current deployment.
func PlanUpgrade(s *ExecutionState, old, new ComponentDigest, reason ComponentUpgradeReason, now Timestamp) (AppendRequest, error) {
	if s.ComponentDigest != old {
		return AppendRequest{}, ErrNotFound
	}
	if s.IsFinished() {
		return AppendRequest{}, ErrAlreadyFinished
	}
	return AppendRequest{CreatedAt: now, Event: &ComponentUpgradeFinished{
		ComponentDigest: new, DeploymentID: s.DeploymentID,
		Outcome: ComponentUpgradeOutcome{Success: true, Reason: reason},
	}}, nil
}

// ValidateRespondToParent checks append_batch_respond_to_parent's arguments
// before storage is touched.
func ValidateRespondToParent(events AppendEventsToExecution, resp AppendResponseToExecution) error {
	if events.ExecutionID == resp.ParentExecutionID {
		return invalid("Parameters `execution_id` and `parent_execution_id` cannot be the same")
	}
	if len(events.Batch) == 0 {
		return invalid("batch cannot be empty")
	}
	return nil
}
