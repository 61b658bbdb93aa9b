package dynamo

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/stela-dev/stela/core"
)

// Head attribute names (doc.go, "Head item").
const (
	aRev        = "rv"
	aReq        = "rq"
	aCreateReq  = "cq"
	aFFQN       = "f"
	aCreatedAt  = "ca"
	aFirstSched = "fs"
	aCompType   = "ct"
	aDigest     = "cd"
	aDeployment = "dp"
	aVersion    = "v"
	aState      = "s"
	aLifecycle  = "lc"
	aAt         = "at"
	aExecutor   = "le"
	aRun        = "lr"
	aLockVer    = "lv"
	aMaxRetries = "mr"
	aBackoff    = "rb"
	aJoinSet    = "js"
	aClosing    = "jc"
	aResultKind = "rk"
	aIntermit   = "ie"
	aMaxCursor  = "mc"
	aEvents     = "z"
	aInlineBase = "ib"
	aOutbox     = "ob"
	aFanIn      = "fi" // the execution requested a child (doc.go, "Fan-in")
	aElect      = "el" // a child whose response is applied to its parent's head directly
	aDeferred   = "pr" // a finished child's deferred response: its created_at
	aDeferSeq   = "pq" // … and its registration's sequence number

	// inline event fields
	ieVersion = "v"
	iePayload = "e"
	ieJoinSet = "j"
	ieOrdinal = "o"
	ieReq     = "q"

	// generic item fields
	aPayload = "e"
	aPageLo  = "lo"
	aCount   = "n"
)

// pageMax bounds the inline payload bytes of one event page.
const pageMax = 64 << 10

// headRec is a decoded head item: the execution state plus what the backend
// keeps beside it.
type headRec struct {
	st  core.ExecutionState
	rev int64
	rq  string // request id of the last commit that wrote the head
	cq  string // request id of the commit that created the execution
	// created is the payload of event version 0 when it lives in the head;
	// "" means it is the item V#0000000000.
	created string
	// inline are the events ib..st.Version (ascending) kept in the head.
	inline []inlineEvent
	ib     core.Version
	// ob names a pending outbox item (O#<ob>) of child creations.
	ob string
	// ret is what the head carries for retention (retention.go).
	ret headRetention
	// Fan-in (inbox.go): fi, the execution has requested a child, whose
	// response may be deferred; el, this child's response is applied to its
	// parent's head directly; pr, the created_at of the deferred response
	// this finished child carries.
	fi, el bool
	pr     string
	pq     int64
	// lk names the lock lease (lease.go) whose index entry carries this
	// locked head's lock expiry; "" when the head carries its own (tp/ts).
	// Set by a lock commit under the lease, kept while the head stays
	// Locked without a new Locked event, dropped otherwise.
	lk string
}

// inlineEvent is an event stored inside the head.
type inlineEvent struct {
	v   core.Version
	e   string // payload text (JSON or CAS reference)
	js  string // join set of a JoinNext, "" otherwise
	ord uint32 // JoinNext ordinal within js
	q   string // request id of the commit that appended it
}

// encode returns the head item with its index attributes.
func (h *headRec) encode(shards int, digestIndex bool) item {
	s := &h.st
	id := s.ExecutionID.String()
	shard := strconv.Itoa(shardOf(id, shards))
	it := item{
		AttrPK: avS(prefixExec + id), AttrSK: avS(skHead),
		aRev: avN(h.rev), aReq: avS(h.rq), aCreateReq: avS(h.cq),
		aFFQN: avS(s.FFQN.String()), aCreatedAt: avS(s.CreatedAt.String()),
		aFirstSched: avS(s.FirstScheduledAt.String()), aCompType: avS(string(s.ComponentType)),
		aDigest: avS(s.ComponentDigest.String()), aDeployment: avS(s.DeploymentID.String()),
		aVersion: avN(s.Version), aState: avN(s.State), aLifecycle: avN(s.Lifecycle),
		aAt: avS(s.At.String()), aIntermit: avN(s.IntermittentEventCount), aMaxCursor: avN(s.MaxCursor),
		aInlineBase: avN(h.ib),
	}
	if s.IncompatibleDigest != nil {
		it[AttrIncompatible] = avS(s.IncompatibleDigest.String())
	}
	if s.LastLock != nil {
		it[aExecutor] = avS(s.LastLock.ExecutorID.String())
		it[aRun] = avS(s.LastLock.RunID.String())
	}
	if s.LastLockVersion != nil {
		it[aLockVer] = avN(*s.LastLockVersion)
	}
	if s.MaxRetries != nil {
		it[aMaxRetries] = avN(*s.MaxRetries)
	}
	if s.RetryExpBackoffMillis != nil {
		it[aBackoff] = avU64(*s.RetryExpBackoffMillis)
	}
	if s.JoinSetID != nil {
		it[aJoinSet] = avS(s.JoinSetID.String())
		it[aClosing] = avBool(s.JoinSetClosing)
	}
	if s.ResultKind != nil {
		rk, _ := json.Marshal(*s.ResultKind)
		it[aResultKind] = avS(string(rk))
	}
	if evs := h.events(); len(evs) > 0 {
		it[aEvents] = encodeZ(evs)
	}
	if h.ob != "" {
		it[aOutbox] = avS(h.ob)
	}
	if h.fi {
		it[aFanIn] = avBool(true)
	}
	if h.el {
		it[aElect] = avBool(true)
	}
	if h.pr != "" {
		it[aDeferred] = avS(h.pr)
		it[aDeferSeq] = avN(h.pq)
	}
	// Sparse index attributes.
	if s.State == core.StatePendingAt && s.Lifecycle == core.LifecycleActive {
		it[AttrPendingFFQN] = avS(s.FFQN.String() + "#" + shard)
		if digestIndex {
			it[AttrPendingDigest] = avS(s.ComponentDigest.String() + "#" + shard)
		}
		it[AttrPendingSort] = avS(s.At.SortableText() + "#" + s.CreatedAt.SortableText() + "#" + id)
	}
	lockExpiryAttrs(it, h, shard)
	if s.Lifecycle == core.LifecycleCancelling {
		it[AttrCancelPK] = avS(cancelPK + shard)
		it[AttrCancelSK] = avS(s.CreatedAt.SortableText() + "#" + id)
	}
	lp := listTop
	if !s.ExecutionID.IsTopLevel() {
		lp = listDeriv
	}
	it[AttrListPK] = avS(lp + shard)
	it[AttrListSK] = avS(s.CreatedAt.SortableText() + "#" + id)
	h.ret.encode(it, shard, s.ExecutionID.IsTopLevel())
	return it
}

// lockExpiryAttrs sets how a head's lock expiry is found by the sweep
// (ExpiredLocks): a Locked head covered by a lease names it (lk) and has no
// timers-index entry of its own; any other Locked head has its own entry
// tp = "L#<shard>", ts = its lock expiry. Every path that writes a Locked
// head, a lock, an extension or a child created already Locked, goes
// through encode and so through here: a head written Locked without a
// lease (h.lk == "") always registers its own expiry.
func lockExpiryAttrs(it item, h *headRec, shard string) {
	if h.st.State != core.StateLocked {
		return
	}
	if h.lk != "" {
		it[aLease] = avS(h.lk)
		return
	}
	it[AttrTimerPK] = avS(timerLock + shard)
	it[AttrTimerSK] = avS(h.st.At.SortableText())
}

// decodeHead parses a head item.
func decodeHead(it item) (*headRec, error) {
	pk, _ := getS(it, AttrPK)
	id, err := parseExecPK(pk)
	if err != nil {
		return nil, err
	}
	h := &headRec{}
	if err := h.decode(id, it); err != nil {
		return nil, fmt.Errorf("dynamo: decode head %s: %w", id, err)
	}
	return h, nil
}

func (h *headRec) decode(id core.ExecutionId, it item) error {
	s := &h.st
	s.ExecutionID = id
	var err error
	num := func(name string) int64 {
		n, _, e := getN(it, name)
		if e != nil && err == nil {
			err = e
		}
		return n
	}
	str := func(name string) string {
		v, ok := getS(it, name)
		if !ok && err == nil {
			err = fmt.Errorf("missing attribute %s", name)
		}
		return v
	}
	check := func(e error) {
		if e != nil && err == nil {
			err = e
		}
	}
	h.rev = num(aRev)
	h.rq, _ = getS(it, aReq)
	h.cq, _ = getS(it, aCreateReq)
	h.ob, _ = getS(it, aOutbox)
	h.fi, h.el = getBool(it, aFanIn), getBool(it, aElect)
	h.pr, _ = getS(it, aDeferred)
	h.lk, _ = getS(it, aLease)
	if n, _, e := getN(it, aDeferSeq); e == nil {
		h.pq = n
	}
	h.ib = core.Version(num(aInlineBase))
	check(h.ret.decode(it))
	var e error
	s.FFQN, e = core.ParseFunctionFqn(str(aFFQN))
	check(e)
	s.CreatedAt, e = parseTS(str(aCreatedAt))
	check(e)
	s.FirstScheduledAt, e = parseTS(str(aFirstSched))
	check(e)
	s.ComponentType = core.ComponentType(str(aCompType))
	s.ComponentDigest, e = core.ParseComponentDigest(str(aDigest))
	check(e)
	s.DeploymentID, e = core.ParseDeploymentId(str(aDeployment))
	check(e)
	if v, ok := getS(it, AttrIncompatible); ok {
		d, e := core.ParseComponentDigest(v)
		check(e)
		s.IncompatibleDigest = &d
	}
	s.Version = core.Version(num(aVersion))
	s.State = core.StateKind(num(aState))
	s.Lifecycle = core.Lifecycle(num(aLifecycle))
	s.At, e = parseTS(str(aAt))
	check(e)
	if ex, ok := getS(it, aExecutor); ok {
		var lb core.LockedBy
		lb.ExecutorID, e = core.ParseExecutorId(ex)
		check(e)
		lb.RunID, e = core.ParseRunId(str(aRun))
		check(e)
		s.LastLock = &lb
	}
	if n, ok, e := getN(it, aLockVer); ok {
		check(e)
		v := core.Version(n)
		s.LastLockVersion = &v
	}
	if n, ok, e := getN(it, aMaxRetries); ok {
		check(e)
		v := uint32(n)
		s.MaxRetries = &v
	}
	if n, ok, e := getU64(it, aBackoff); ok {
		check(e)
		s.RetryExpBackoffMillis = &n
	}
	if v, ok := getS(it, aJoinSet); ok {
		js, e := core.ParseJoinSetId(v)
		check(e)
		s.JoinSetID = &js
		s.JoinSetClosing = getBool(it, aClosing)
	}
	if v, ok := getS(it, aResultKind); ok {
		var rk core.ResultKind
		check(json.Unmarshal([]byte(v), &rk))
		s.ResultKind = &rk
	}
	s.IntermittentEventCount = uint32(num(aIntermit))
	s.MaxCursor = core.ResponseCursor(num(aMaxCursor))
	evs, e := decodeZ(it[aEvents])
	check(e)
	for _, ev := range evs {
		if ev.v == 0 {
			h.created = ev.e
			continue
		}
		h.inline = append(h.inline, ev)
	}
	return err
}

// events are the events stored in the head: version 0 (if inline) and the
// inline ones.
func (h *headRec) events() []inlineEvent {
	evs := make([]inlineEvent, 0, len(h.inline)+1)
	if h.created != "" {
		evs = append(evs, inlineEvent{v: 0, e: h.created, q: h.cq})
	}
	return append(evs, h.inline...)
}

// clone returns a copy sharing nothing mutable with h.
func (h *headRec) clone() *headRec {
	c := *h
	c.st = cloneState(h.st)
	c.inline = append([]inlineEvent(nil), h.inline...)
	return &c
}

// cloneState copies s and the values its pointers refer to.
func cloneState(s core.ExecutionState) core.ExecutionState {
	c := s
	c.IncompatibleDigest = clonePtr(s.IncompatibleDigest)
	c.LastLock = clonePtr(s.LastLock)
	c.LastLockVersion = clonePtr(s.LastLockVersion)
	c.MaxRetries = clonePtr(s.MaxRetries)
	c.RetryExpBackoffMillis = clonePtr(s.RetryExpBackoffMillis)
	c.JoinSetID = clonePtr(s.JoinSetID)
	c.ResultKind = clonePtr(s.ResultKind)
	return c
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
