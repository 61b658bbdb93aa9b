package core

import "strconv"

// Id derivation (docs/spec/semantics.md §1.2–§1.4): the ids an Obelisk workflow worker gives
// to the join sets, child executions and delays it creates. Storage accepts
// any valid id; deriving them the way Obelisk does keeps a log written by a
// Stela worker readable by Obelisk's tools (and replayable by its worker).
//
//   - generated join set: "g:<n>", n = 1 + the generated join sets created so far;
//   - one-off join set (a direct call or a sleep): "o:<n>-<suffix>", n = 1 +
//     the one-off join sets created so far, suffix the called function's
//     name (e.g. "add") or "sleep";
//   - named join set: "n:<name>";
//   - child execution: "<owner>.<join set>_<k>", k = 1 + the child execution
//     requests already in that join set (delays are not counted);
//   - delay: "Delay_<owner ULID>.<owner infix>…<join set>_<k>", k = 1 + the
//     delay requests already in that join set (children are not counted).

// NewChildExecutionId returns the id of the idx-th (1-based) child execution
// requested by owner in js: owner.NextLevel(js) with index idx, e.g.
// (E_X, g:1, 3) gives E_X.g:1_3. It panics if idx is 0 or under the
// conditions of NextLevel.
func NewChildExecutionId(owner ExecutionId, js JoinSetId, idx uint64) ExecutionId {
	if idx == 0 {
		panic("core: NewChildExecutionId: indexes start at 1")
	}
	id := owner.NextLevel(js)
	id.idx = idx
	return id
}

// GeneratedJoinSetId returns "g:<n>", the id of the n-th (1-based)
// generated join set of an execution.
func GeneratedJoinSetId(n uint64) JoinSetId {
	return JoinSetId{Kind: JoinSetKindGenerated, Name: strconv.FormatUint(n, 10)}
}

// OneOffJoinSetId returns "o:<n>-<suffix>", the id of the n-th (1-based)
// one-off join set of an execution, created for a direct call of the
// function named suffix or for a sleep (suffix "sleep"). suffix must contain
// only ASCII letters, digits, '-' and '/' (function names do).
func OneOffJoinSetId(n uint64, suffix string) (JoinSetId, error) {
	return NewJoinSetId(JoinSetKindOneOff, strconv.FormatUint(n, 10)+"-"+suffix)
}

// NamedJoinSetId returns "n:<name>".
func NamedJoinSetId(name string) (JoinSetId, error) {
	return NewJoinSetId(JoinSetKindNamed, name)
}

// IdCounter derives the next join set, child and delay ids of one execution
// from its history, as Obelisk's workflow worker does. Feed it every history
// event in version order — replayed ones and the ones the worker appends —
// with Observe; the Next methods only compute and do not advance. The zero
// value is an execution without history.
type IdCounter struct {
	joinSets map[JoinSetKind]uint64
	children map[JoinSetId]uint64
	delays   map[JoinSetId]uint64
}

// Observe counts h: a join set creation, or a child execution or delay request.
func (c *IdCounter) Observe(h HistoryEvent) {
	switch e := h.(type) {
	case *JoinSetCreate:
		if c.joinSets == nil {
			c.joinSets = map[JoinSetKind]uint64{}
		}
		c.joinSets[e.JoinSetID.Kind]++
	case *JoinSetRequestEvent:
		switch e.Request.(type) {
		case *ChildExecutionRequest:
			if c.children == nil {
				c.children = map[JoinSetId]uint64{}
			}
			c.children[e.JoinSetID]++
		case *DelayRequest:
			if c.delays == nil {
				c.delays = map[JoinSetId]uint64{}
			}
			c.delays[e.JoinSetID]++
		}
	}
}

// NextGeneratedJoinSet returns the id of the next generated join set.
func (c *IdCounter) NextGeneratedJoinSet() JoinSetId {
	return GeneratedJoinSetId(c.joinSets[JoinSetKindGenerated] + 1)
}

// NextOneOffJoinSet returns the id of the next one-off join set for suffix
// (the called function's name, or "sleep").
func (c *IdCounter) NextOneOffJoinSet(suffix string) (JoinSetId, error) {
	return OneOffJoinSetId(c.joinSets[JoinSetKindOneOff]+1, suffix)
}

// NextChild returns the id of the next child execution owner requests in js.
func (c *IdCounter) NextChild(owner ExecutionId, js JoinSetId) ExecutionId {
	return NewChildExecutionId(owner, js, c.children[js]+1)
}

// NextDelay returns the id of the next delay owner requests in js.
func (c *IdCounter) NextDelay(owner ExecutionId, js JoinSetId) DelayId {
	return NewDelayId(owner, js, c.delays[js]+1)
}
