package httpapi

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/stela-dev/stela/core"
)

// Bounds of GET /v1/execution-counts.
const (
	// DefaultCountLimit is the number of newest executions counted when
	// `limit` is absent.
	DefaultCountLimit = 1000
	// MaxCountLimit caps `limit` (larger values are clamped).
	MaxCountLimit = 10000
)

// stateBucket names one state filter of docs/spec/semantics.md §4.8.1 on the wire (the
// `state` parameter of GET /v1/executions and the keys of the counts).
type stateBucket struct {
	name   string
	filter core.StateFilter
	count  bool // a bucket of the counts; "finished" is their union
}

// stateBuckets lists the accepted `state` values; the counted ones partition
// every execution.
var stateBuckets = []stateBucket{
	{"locked", core.FilterLocked, true},
	{"pending", core.FilterPending, true},
	{"scheduled", core.FilterScheduled, true},
	{"blocked", core.FilterBlocked, true},
	{"paused", core.FilterPaused, true},
	{"cancelling", core.FilterCancelling, true},
	{"finished", core.FilterFinished, false},
	{"finished_ok", core.FilterFinishedOk, true},
	{"finished_error", core.FilterFinishedError, true},
	{"finished_execution_failure", core.FilterFinishedExecutionFailure, true},
}

// stateNames returns the accepted `state` values, in order.
func stateNames() []string {
	out := make([]string, len(stateBuckets))
	for i, b := range stateBuckets {
		out[i] = b.name
	}
	return out
}

// stateFilters parses the repeated `state` parameter (OR-ed).
func stateFilters(q query) ([]core.StateFilter, error) {
	var out []core.StateFilter
	for _, raw := range q.all("state") {
		found := false
		for _, b := range stateBuckets {
			if b.name == raw {
				out, found = append(out, b.filter), true
				break
			}
		}
		if !found {
			return nil, queryErr("state", "expected one of "+strings.Join(stateNames(), ", "))
		}
	}
	return out, nil
}

// listFilter parses the query and the filters shared by GET /v1/executions
// and GET /v1/execution-counts (everything but paging and `state`).
func (s *server) listFilter(c *call) (query, core.ListExecutionsFilter, error) {
	var filter core.ListExecutionsFilter
	q, err := c.query()
	if err != nil {
		return q, filter, err
	}
	if q.has("ffqn_prefix") {
		filter.FunctionName = &core.FunctionNameFilter{Kind: "function", Value: q.str("ffqn_prefix")}
	}
	if filter.ShowDerived, err = q.boolean("show_derived", false); err != nil {
		return q, filter, err
	}
	if filter.HideFinished, err = q.boolean("hide_finished", false); err != nil {
		return q, filter, err
	}
	filter.ExecutionIDPrefix = q.str("execution_id_prefix")
	if q.has("component_digest") {
		d, err := core.ParseComponentDigest(q.str("component_digest"))
		if err != nil {
			return q, filter, queryErr("component_digest", "expected sha256:<64 hex digits>")
		}
		filter.ComponentDigest = &d
	}
	if q.has("deployment_id") {
		d, err := core.ParseDeploymentId(q.str("deployment_id"))
		if err != nil {
			return q, filter, queryErr("deployment_id", "expected Dep_<ULID>")
		}
		filter.DeploymentID = &d
	}
	filter.StateFiltersNow = s.now()
	return q, filter, nil
}

// executionCounts is the body of GET /v1/execution-counts.
type executionCounts struct {
	Counts map[string]uint32 `json:"counts"`
	// Total is the number of executions counted (at most the limit).
	Total uint32 `json:"total"`
	// Complete is false when more executions match than were counted: the
	// counts then cover the newest Total of them.
	Complete bool `json:"complete"`
}

// GET /v1/execution-counts
//
// One bounded read: the newest `limit` executions matching the filters, each
// put in the bucket whose core.StateFilter matches it. No per-row queries.
func (s *server) countExecutions(c *call) error {
	q, filter, err := s.listFilter(c)
	if err != nil {
		return err
	}
	limit := uint64(DefaultCountLimit)
	if n, err := q.optUint("limit", 32); err != nil {
		return err
	} else if n != nil {
		if *n == 0 {
			return queryErr("limit", "must be non-zero")
		}
		limit = min(*n, MaxCountLimit)
	}
	list, err := s.db.ListExecutions(c.ctx(), filter, core.ExecutionListPagination{
		CreatedBy: &core.Pagination[*core.Timestamp]{Direction: core.OlderThan, Length: uint16(limit + 1)}})
	if err != nil {
		return err
	}
	out := executionCounts{Counts: map[string]uint32{}, Complete: uint64(len(list)) <= limit}
	for _, b := range stateBuckets {
		if b.count {
			out.Counts[b.name] = 0
		}
	}
	for i := range list {
		if uint64(i) == limit {
			break
		}
		st := bucketState(list[i].PendingState)
		for _, b := range stateBuckets {
			if b.count && b.filter.Matches(&st, filter.StateFiltersNow) {
				out.Counts[b.name]++
				break
			}
		}
		out.Total++
	}
	return c.reply(http.StatusOK, out, func() string { return countsText(out) })
}

// bucketState rebuilds the fields of core.ExecutionState that
// core.StateFilter reads from the public view of the state, so the bucket
// is decided by core alone.
func bucketState(p core.PendingState) core.ExecutionState {
	st := core.ExecutionState{State: p.State, Lifecycle: p.Lifecycle}
	switch {
	case p.PendingAt != nil:
		st.At = p.PendingAt.ScheduledAt
	case p.Locked != nil:
		st.At = p.Locked.LockExpiresAt
	case p.Blocked != nil:
		st.At = p.Blocked.LockExpiresAt
	case p.Finished != nil:
		st.At = p.Finished.FinishedAt
		rk := p.Finished.ResultKind
		st.ResultKind = &rk
	}
	return st
}

func countsText(c executionCounts) string {
	var b strings.Builder
	for _, bk := range stateBuckets {
		if bk.count {
			fmt.Fprintf(&b, "%s %d\n", bk.name, c.Counts[bk.name])
		}
	}
	fmt.Fprintf(&b, "total %d", c.Total)
	if !c.Complete {
		b.WriteString(" (newest only; more match)")
	}
	return b.String()
}
