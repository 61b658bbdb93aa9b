package core

import "fmt"

// JoinSetMember is an outstanding member of a join set: a child execution or a delay.
type JoinSetMember struct {
	// ChildID is set for child executions.
	ChildID *ExecutionId
	// ChildFFQN is the child's target function.
	ChildFFQN FunctionFqn
	// DelayID is set for delays.
	DelayID *DelayId
	// Version is the version of the request that created the member (creation order).
	Version Version
}

// responseMember returns the member key a response answers.
func responseMember(r JoinSetResponse) string {
	switch r := r.(type) {
	case *ChildExecutionFinished:
		return "c:" + r.ChildExecutionID.String()
	case *DelayFinished:
		return "d:" + r.DelayID.String()
	}
	return ""
}

func (m JoinSetMember) key() string {
	if m.ChildID != nil {
		return "c:" + m.ChildID.String()
	}
	return "d:" + m.DelayID.String()
}

// OpenJoinSet is a join set with its members that were not yet consumed by a
// JoinNext; Answered marks those whose response already arrived.
type OpenJoinSet struct {
	JoinSetID JoinSetId
	Members   []JoinSetMember
	Answered  map[string]bool
}

// IsAnswered reports whether m already has a response.
func (o *OpenJoinSet) IsAnswered(m JoinSetMember) bool { return o.Answered[m.key()] }

// ReconstructOpenJoinSets replays a workflow's history against its responses
// the way the cancellation driver does (Obelisk's JoinSetOpenTracker,
// docs/spec/semantics.md §6.1): JoinSetCreate opens a set; a successful ChildExecutionRequest or a
// DelayRequest adds a member; a closing JoinNext drops the whole set; a
// non-closing JoinNext or a JoinNextTry(found) consumes the next arrived
// response of that set (FIFO, cursor order), removing its member. The result
// keeps the sets in creation order and members in creation order.
func ReconstructOpenJoinSets(history []HistoryEventWithVersion, responses []ResponseWithCursor) ([]OpenJoinSet, error) {
	type set struct {
		open     OpenJoinSet
		closed   bool
		consumed int
	}
	arrived := map[JoinSetId][]string{}
	for _, r := range responses {
		js := r.Event.Event.JoinSetID
		arrived[js] = append(arrived[js], responseMember(r.Event.Event.Event))
	}
	var order []JoinSetId
	sets := map[JoinSetId]*set{}
	consume := func(js JoinSetId) {
		s := sets[js]
		if s == nil || s.closed {
			return
		}
		if s.consumed < len(arrived[js]) {
			key := arrived[js][s.consumed]
			s.consumed++
			for i, m := range s.open.Members {
				if m.key() == key {
					s.open.Members = append(s.open.Members[:i:i], s.open.Members[i+1:]...)
					break
				}
			}
		}
	}
	for _, h := range history {
		switch e := h.Event.(type) {
		case *JoinSetCreate:
			if _, dup := sets[e.JoinSetID]; dup {
				return nil, fmt.Errorf("join set %s created twice", e.JoinSetID)
			}
			sets[e.JoinSetID] = &set{open: OpenJoinSet{JoinSetID: e.JoinSetID}}
			order = append(order, e.JoinSetID)
		case *JoinSetRequestEvent:
			s := sets[e.JoinSetID]
			if s == nil || s.closed {
				continue
			}
			switch r := e.Request.(type) {
			case *ChildExecutionRequest:
				if r.Result.IsOk() {
					id := r.ChildExecutionID.ExecutionId
					s.open.Members = append(s.open.Members, JoinSetMember{ChildID: &id, ChildFFQN: r.TargetFFQN, Version: h.Version})
				}
			case *DelayRequest:
				d := r.DelayID
				s.open.Members = append(s.open.Members, JoinSetMember{DelayID: &d, Version: h.Version})
			}
		case *JoinNext:
			if e.Closing {
				if s := sets[e.JoinSetID]; s != nil {
					s.closed = true
				}
				continue
			}
			consume(e.JoinSetID)
		case *JoinNextTry:
			if e.Outcome == JoinNextTryFound {
				consume(e.JoinSetID)
			}
		}
	}
	var out []OpenJoinSet
	for _, js := range order {
		s := sets[js]
		if s.closed || len(s.open.Members) == 0 {
			continue
		}
		s.open.Answered = map[string]bool{}
		for _, key := range arrived[js][s.consumed:] {
			s.open.Answered[key] = true
		}
		out = append(out, s.open)
	}
	return out, nil
}
