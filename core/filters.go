package core

import "strings"

// StateFilter is a list_executions state bucket (docs/spec/semantics.md §4.8.1).
type StateFilter uint8

// State filter buckets.
const (
	FilterLocked StateFilter = iota + 1
	FilterPending
	FilterScheduled
	FilterBlocked
	FilterPaused
	FilterCancelling
	FilterFinished
	FilterFinishedOk
	FilterFinishedError
	FilterFinishedExecutionFailure
)

// Matches reports whether s is in bucket f, with `now` for Pending/Scheduled.
func (f StateFilter) Matches(s *ExecutionState, now Timestamp) bool {
	active := s.Lifecycle == LifecycleActive
	switch f {
	case FilterLocked:
		return s.State == StateLocked && active
	case FilterPending:
		return s.State == StatePendingAt && active && !s.At.After(now)
	case FilterScheduled:
		return s.State == StatePendingAt && active && s.At.After(now)
	case FilterBlocked:
		return s.State == StateBlockedByJoinSet && active
	case FilterPaused:
		return s.Lifecycle == LifecyclePaused
	case FilterCancelling:
		return s.Lifecycle == LifecycleCancelling
	case FilterFinished:
		return s.State == StateFinished
	case FilterFinishedOk:
		return s.State == StateFinished && s.ResultKind != nil && !s.ResultKind.IsErr
	case FilterFinishedError:
		return s.State == StateFinished && s.ResultKind != nil && s.ResultKind.IsErr && s.ResultKind.Failure == ""
	case FilterFinishedExecutionFailure:
		return s.State == StateFinished && s.ResultKind != nil && s.ResultKind.Failure != ""
	}
	return false
}

// FunctionNameFilter filters by function name: a package, interface or function prefix.
type FunctionNameFilter struct {
	// Kind is "package", "interface" or "function".
	Kind  string
	Value string
}

// Matches applies the seed's like_pattern: interface/function → prefix match;
// a versioned package `ns:pkg@ver` matches `ns:pkg/<any>@ver.<any>`; other
// packages → prefix match. Matching is case-sensitive (Postgres semantics).
func (f FunctionNameFilter) Matches(ffqn string) bool {
	if f.Kind == "package" {
		if i := strings.LastIndexByte(f.Value, '@'); i >= 0 && i < len(f.Value)-1 && strings.Contains(f.Value[:i], ":") {
			pkg, ver := f.Value[:i], f.Value[i+1:]
			if !strings.HasPrefix(ffqn, pkg+"/") {
				return false
			}
			return strings.Contains(ffqn[len(pkg)+1:], "@"+ver+".")
		}
	}
	return strings.HasPrefix(ffqn, f.Value)
}

// ListExecutionsFilter filters list_executions; zero value = top-level executions, any state.
type ListExecutionsFilter struct {
	FunctionName      *FunctionNameFilter
	ShowDerived       bool
	HideFinished      bool
	ExecutionIDPrefix string
	ComponentDigest   *ComponentDigest
	DeploymentID      *DeploymentId
	StateFilters      []StateFilter
	StateFiltersNow   Timestamp
}

// Matches applies every filter to s (AND), state filters OR-ed.
func (f *ListExecutionsFilter) Matches(s *ExecutionState) bool {
	if !f.ShowDerived && !s.IsTopLevel() {
		return false
	}
	if f.FunctionName != nil && !f.FunctionName.Matches(s.FFQN.String()) {
		return false
	}
	if f.HideFinished && s.IsFinished() {
		return false
	}
	if f.ExecutionIDPrefix != "" && !strings.HasPrefix(s.ExecutionID.String(), f.ExecutionIDPrefix) {
		return false
	}
	if f.ComponentDigest != nil && s.ComponentDigest != *f.ComponentDigest {
		return false
	}
	if f.DeploymentID != nil && s.DeploymentID != *f.DeploymentID {
		return false
	}
	if len(f.StateFilters) > 0 {
		for _, sf := range f.StateFilters {
			if sf.Matches(s, f.StateFiltersNow) {
				return true
			}
		}
		return false
	}
	return true
}
