package core

import (
	"fmt"
	"strings"
)

// String renders the state as Obelisk's status text: "Locked", "Pending at <t>",
// "Blocked by <join set>[ (closing)]", "Paused", "Cancelling", "Finished: OK",
// "Finished: Error" or "Finished: Execution failure (<Kind>)".
func (p PendingState) String() string {
	switch {
	case p.State == StateFinished && p.Finished != nil:
		rk := p.Finished.ResultKind
		switch {
		case !rk.IsErr:
			return "Finished: OK"
		case rk.Failure == "":
			return "Finished: Error"
		default:
			return fmt.Sprintf("Finished: Execution failure (%s)", pascal(string(rk.Failure)))
		}
	case p.Lifecycle == LifecyclePaused:
		return "Paused"
	case p.Lifecycle == LifecycleCancelling:
		return "Cancelling"
	case p.State == StateLocked:
		return "Locked"
	case p.State == StatePendingAt && p.PendingAt != nil:
		return "Pending at " + p.PendingAt.ScheduledAt.String()
	case p.State == StateBlockedByJoinSet && p.Blocked != nil:
		s := "Blocked by " + p.Blocked.JoinSetID.String()
		if p.Blocked.Closing {
			s += " (closing)"
		}
		return s
	}
	return p.Status()
}

// pascal turns snake_case into PascalCase (Rust's Debug of a unit variant).
func pascal(s string) string {
	var b strings.Builder
	for part := range strings.SplitSeq(s, "_") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}
