package core

import "sort"

// Paging list_executions (docs/spec/semantics.md §4.4.4, deliberately changed; docs/http-api.md
// "Paging executions").
//
// A page is cut from one total order, and the cursor condition compares the
// same key that the order sorts by, so consecutive pages neither lose nor
// repeat rows:
//
//   - an ExecutionID pagination orders by execution_id (byte-wise string
//     comparison) and its cursor compares execution_id;
//   - a CreatedBy pagination orders by (created_at, execution_id). A bare
//     created_at cursor compares created_at alone (Obelisk's meaning:
//     created_at < cursor, <=, >, >=), which cannot split a group of
//     executions created at the same instant across pages; with CreatedByID
//     the cursor is the position (created_at, execution_id) and compares the
//     whole key, which can.
//
// Obelisk orders every kind by created_at with no tie-breaker; paging by an
// execution-id cursor then loses and repeats rows whenever ids do not sort
// like their creation times (derived ids, ids chosen by the client, ids
// generated in the same millisecond).
//
// The scan runs in the direction of the pagination (OlderThan descending,
// NewerThan ascending) and takes Length rows; the page is returned newest
// first, that is descending in the order above.

// ExecutionListPagination pages list_executions by created_at or by execution id.
// Exactly one of CreatedBy and ExecutionID is set. listing.go defines the
// order and the cursor condition of each kind (Compare, Accepts).
type ExecutionListPagination struct {
	CreatedBy *Pagination[*Timestamp]
	// CreatedByID (Stela extension) makes a CreatedBy cursor tie-safe: the
	// cursor becomes the position (*CreatedBy.Cursor, *CreatedByID) in the
	// (created_at, execution_id) order instead of a bare instant. It requires
	// a CreatedBy cursor.
	CreatedByID *ExecutionId
	ExecutionID *Pagination[*ExecutionId]
}

// DefaultExecutionListPagination is OlderThan{20, no cursor} by created_at.
func DefaultExecutionListPagination() ExecutionListPagination {
	return ExecutionListPagination{CreatedBy: &Pagination[*Timestamp]{Direction: OlderThan, Length: 20}}
}

// Validate checks that exactly one kind is set, its length and direction, and
// that CreatedByID comes with a created_at cursor.
func (p ExecutionListPagination) Validate() error {
	switch {
	case p.CreatedBy != nil && p.ExecutionID == nil:
		if p.CreatedByID != nil && p.CreatedBy.Cursor == nil {
			return invalid("a created_at cursor tie-break (execution id) needs a created_at cursor")
		}
		return p.CreatedBy.Validate()
	case p.ExecutionID != nil && p.CreatedBy == nil:
		if p.CreatedByID != nil {
			return invalid("a created_at cursor tie-break cannot be used with an execution id cursor")
		}
		return p.ExecutionID.Validate()
	}
	return invalid("exactly one pagination kind must be set")
}

// Window returns the scan direction (true = descending, OlderThan) and the
// page length. With no kind set it is the default pagination's.
func (p ExecutionListPagination) Window() (desc bool, length int) {
	switch {
	case p.ExecutionID != nil:
		return p.ExecutionID.IsDesc(), int(p.ExecutionID.Length)
	case p.CreatedBy != nil:
		return p.CreatedBy.IsDesc(), int(p.CreatedBy.Length)
	}
	return DefaultExecutionListPagination().Window()
}

// Compare orders two executions ascending by the pagination's key:
// execution_id for an ExecutionID pagination, else (created_at,
// execution_id). Pages are returned descending in this order.
func (p ExecutionListPagination) Compare(a, b *ExecutionState) int {
	if p.ExecutionID == nil {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
	}
	return a.ExecutionID.Compare(b.ExecutionID)
}

// Accepts reports whether s satisfies the cursor condition (no cursor accepts
// everything).
func (p ExecutionListPagination) Accepts(s *ExecutionState) bool {
	switch {
	case p.ExecutionID != nil:
		if p.ExecutionID.Cursor == nil {
			return true
		}
		return p.ExecutionID.Accepts(s.ExecutionID.Compare(*p.ExecutionID.Cursor))
	case p.CreatedBy != nil:
		if p.CreatedBy.Cursor == nil {
			return true
		}
		c := s.CreatedAt.Compare(*p.CreatedBy.Cursor)
		if c == 0 && p.CreatedByID != nil {
			c = s.ExecutionID.Compare(*p.CreatedByID)
		}
		return p.CreatedBy.Accepts(c)
	}
	return true
}

// SortNewestFirst sorts states descending in the pagination's order.
func (p ExecutionListPagination) SortNewestFirst(states []ExecutionState) {
	sort.Slice(states, func(i, j int) bool { return p.Compare(&states[j], &states[i]) < 0 })
}

// SelectExecutions is list_executions over the full set of heads in memory:
// the ones matching filter and the cursor, the first Length of them in scan
// order, newest first. It is the reference the contract suite holds every
// backend to (store/mem uses it directly).
func SelectExecutions(heads []ExecutionState, filter ListExecutionsFilter, p ExecutionListPagination) []ExecutionState {
	desc, length := p.Window()
	var out []ExecutionState
	for i := range heads {
		if filter.Matches(&heads[i]) && p.Accepts(&heads[i]) {
			out = append(out, heads[i])
		}
	}
	p.SortNewestFirst(out)
	if len(out) > length {
		if desc {
			out = out[:length]
		} else {
			out = out[len(out)-length:]
		}
	}
	return out
}
