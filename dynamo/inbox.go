package dynamo

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
)

// Fan-in without contention on the parent (doc.go, "Fan-in"): the inbox
// item of a parent and the tx side of store.Inbox.

// Inbox item: pk "E#<parent>", sk "S".
const (
	skInbox         = "S"
	aInboxKeys      = "ks" // string set: registered child keys not known applied
	aInboxSeq       = "n"  // registrations of every join set: orders deferred responses
	aInboxWait      = "wj" // the join set the parent last blocked on
	prefixInboxRegs = "o#" // o#<js>: registrations of js
	prefixInboxElec = "c#" // c#<js>: the key that claimed js since the parent last blocked on it
)

// maxFences bounds the in-flight children one blocking commit fences; with
// more, it waits for them to finish (they are committing right now).
const maxFences = 24

var (
	_ store.Inbox        = (*tx)(nil)
	_ store.InboxBackend = (*Backend)(nil)
)

// inboxState is a parent's inbox as one transaction read it.
type inboxState struct {
	// regs are the o#<js> counters read (absent join sets are not in it).
	regs map[string]int64
	// pending are the deferred responses found, in the order to apply them.
	pending []*pendingResponse
	// inflight are registered children of each join set not finished when read.
	inflight map[string][]*headRec
	// stale are keys whose response is applied or that carry none.
	stale []string
}

type pendingResponse struct {
	key     string
	child   core.ExecutionId
	seq     int64 // the registration's sequence number (pq)
	resp    core.JoinSetResponseEventOuter
	applied bool
}

// inboxKey is a child's key in its parent's inbox: its id relative to the
// parent ("<join set>_<index>").
func inboxKey(parent, child core.ExecutionId) string {
	return strings.TrimPrefix(child.String(), parent.String()+".")
}

// isChildRequest reports whether ev is a ChildExecutionRequest history event.
func isChildRequest(ev core.ExecutionEvent) bool {
	h, ok := ev.Event.(*core.HistoryEventRequest)
	if !ok {
		return false
	}
	r, ok := h.Event.(*core.JoinSetRequestEvent)
	if !ok {
		return false
	}
	_, ok = r.Request.(*core.ChildExecutionRequest)
	return ok
}

// fanIn reports whether ex's children may defer responses: it requested a
// child before or in this transaction.
func (ex *execTx) fanIn() bool {
	if ex.head != nil && ex.head.fi {
		return true
	}
	for _, ne := range ex.events {
		if isChildRequest(ne.ev) {
			return true
		}
	}
	return false
}

// DeferResponse implements store.Inbox: the response is deferred when this
// transaction finishes the child it names (with exactly that result and
// version), the child is not fenced (el), the parent has fan-in (fi) and
// the registration in the parent's inbox does not elect it. The
// registration is a single-item UpdateItem, made now (doc.go, "Fan-in":
// repeating it is harmless).
func (t *tx) DeferResponse(id core.ExecutionId, resp core.JoinSetResponseEventOuter) (bool, error) {
	if err := t.mustWrite(); err != nil {
		return false, err
	}
	cf, ok := resp.Event.Event.(*core.ChildExecutionFinished)
	if !ok {
		return false, nil
	}
	child := cf.ChildExecutionID.ExecutionId
	parent, js, ok := child.SplitToParts()
	if !ok || parent != id || js != resp.Event.JoinSetID {
		return false, nil
	}
	if _, touched := t.execs[id]; touched {
		return false, nil
	}
	cx, ok := t.execs[child]
	if !ok || cx.head == nil || cx.head.el || len(cx.events) == 0 {
		return false, nil
	}
	last := cx.events[len(cx.events)-1].ev
	if f, ok := last.Event.(*core.Finished); !ok || last.Version != cf.FinishedVersion || !f.Retval.Equal(cf.Result) {
		return false, nil
	}
	ph, err := t.b.getHead(t.ctx, id) // unguarded: only fi, which never goes back, is used
	if err != nil || ph == nil || !ph.fi {
		return false, err
	}
	// A child has at most one response: with one stored already, apply
	// this one now, where its guard reports the conflict. A response for
	// the child written after this read rewrites the child's head
	// (claimChild), which this transaction writes too.
	if answered, err := t.b.guardExists(t.ctx, prefixGuardChild+child.String()); err != nil || answered {
		return false, err
	}
	elected, seq, err := t.b.register(t.ctx, id, js.String(), inboxKey(id, child))
	if err != nil || elected {
		return false, err
	}
	if t.b.afterRegister != nil {
		t.b.afterRegister(child)
	}
	cx.deferred, cx.deferredSeq = resp.CreatedAt.String(), seq
	return true, nil
}

// register records key as a response of js in parent's inbox and reports
// whether it is elected (the parent last blocked on js and key is the first
// registration of js since) and its sequence number among the parent's
// registrations, which orders deferred responses.
func (b *Backend) register(ctx context.Context, parent core.ExecutionId, js, key string) (bool, int64, error) {
	out, err := b.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        b.tableName(),
		Key:              keyOf(pkExec(parent), skInbox),
		UpdateExpression: aws.String("ADD #o :one, #n :one, #ks :k SET #c = if_not_exists(#c, :key)"),
		ExpressionAttributeNames: map[string]string{"#o": prefixInboxRegs + js, "#n": aInboxSeq, "#ks": aInboxKeys,
			"#c": prefixInboxElec + js},
		ExpressionAttributeValues: item{":one": avN(1), ":k": &types.AttributeValueMemberSS{Value: []string{key}},
			":key": avS(key)},
		ReturnValues: types.ReturnValueAllNew,
	}, b.optFns...)
	if err != nil {
		var ae smithy.APIError
		if isAmbiguous(err) || (errors.As(err, &ae) && ae.ErrorCode() == codeTransactionConflict) {
			// A blocking commit on the inbox in flight, or an outcome the SDK
			// gave up on: registering again is harmless, so run fn again.
			return false, 0, store.Again(fmt.Errorf("%w: register a response to %s: %w", errContention, parent, err))
		}
		return false, 0, fmt.Errorf("dynamo: register a response to %s: %w", parent, err)
	}
	b.stats.registered.Add(1)
	wait, _ := getS(out.Attributes, aInboxWait)
	claim, _ := getS(out.Attributes, prefixInboxElec+js)
	seq, _, err := getN(out.Attributes, aInboxSeq)
	return wait == js && claim == key, seq, err
}

// DeferredResponses implements store.Inbox.
func (t *tx) DeferredResponses(id core.ExecutionId) ([]core.JoinSetResponseEventOuter, error) {
	ex := t.exec(id)
	if err := t.load(ex); err != nil {
		return nil, err
	}
	ib, err := t.inbox(ex)
	if err != nil || ib == nil {
		return nil, err
	}
	var out []core.JoinSetResponseEventOuter
	for _, p := range ib.pending {
		if !p.applied {
			out = append(out, p.resp)
		}
	}
	return out, nil
}

// inbox reads ex's inbox once per transaction (nil when ex has no fan-in):
// the item, then the heads of its registered children and their guards,
// all strongly consistent.
func (t *tx) inbox(ex *execTx) (*inboxState, error) {
	if ex.ib != nil || ex.head == nil || !ex.head.fi {
		return ex.ib, nil
	}
	b := t.b
	out, err := b.api.GetItem(t.ctx, &dynamodb.GetItemInput{TableName: b.tableName(), ConsistentRead: aws.Bool(true),
		Key: keyOf(pkExec(ex.id), skInbox)}, b.optFns...)
	if err != nil {
		return nil, fmt.Errorf("dynamo: read the inbox of %s: %w", ex.id, err)
	}
	ib := &inboxState{regs: map[string]int64{}, inflight: map[string][]*headRec{}}
	var keys []string
	for name, v := range out.Item {
		switch {
		case strings.HasPrefix(name, prefixInboxRegs):
			n, _, err := getN(out.Item, name)
			if err != nil {
				return nil, err
			}
			ib.regs[name[len(prefixInboxRegs):]] = n
		case name == aInboxKeys:
			if ss, ok := v.(*types.AttributeValueMemberSS); ok {
				keys = ss.Value
			}
		}
	}
	if len(keys) > 0 {
		if err := t.classify(ex, ib, keys); err != nil {
			return nil, err
		}
	}
	ex.ib = ib
	return ib, nil
}

// classify sorts the registered keys of ex's inbox into deferred responses
// (child finished with pr, no guard yet), in-flight children (not finished)
// and stale keys (anything else).
func (t *tx) classify(ex *execTx, ib *inboxState, keys []string) error {
	b := t.b
	children := make([]core.ExecutionId, 0, len(keys))
	var heads, guards []item
	for _, k := range keys {
		c, err := core.ParseExecutionId(ex.id.String() + "." + k)
		if err != nil {
			ib.stale = append(ib.stale, k)
			continue
		}
		children = append(children, c)
		heads = append(heads, keyOf(pkExec(c), skHead))
		guards = append(guards, keyOf(prefixGuardChild+c.String(), skGuard))
	}
	hs, err := b.batchGet(t.ctx, heads, true)
	if err != nil {
		return fmt.Errorf("dynamo: inbox of %s: %w", ex.id, err)
	}
	gs, err := b.batchGet(t.ctx, guards, true, AttrPK)
	if err != nil {
		return fmt.Errorf("dynamo: inbox of %s: %w", ex.id, err)
	}
	byID := map[core.ExecutionId]*headRec{}
	for _, it := range hs {
		h, err := decodeHead(it)
		if err != nil {
			return err
		}
		byID[h.st.ExecutionID] = h
	}
	answered := map[string]bool{}
	for _, it := range gs {
		pk, _ := getS(it, AttrPK)
		answered[strings.TrimPrefix(pk, prefixGuardChild)] = true
	}
	for _, c := range children {
		key := inboxKey(ex.id, c)
		h := byID[c]
		switch {
		case h == nil || answered[c.String()]:
			ib.stale = append(ib.stale, key)
		case h.st.State != core.StateFinished:
			_, js, _ := c.SplitToParts()
			ib.inflight[js.String()] = append(ib.inflight[js.String()], h)
		case h.pr == "":
			ib.stale = append(ib.stale, key)
		default:
			r, err := b.deferredOf(t.ctx, h)
			if err != nil {
				return err
			}
			ib.pending = append(ib.pending, &pendingResponse{key: key, child: c, seq: h.pq, resp: r})
		}
	}
	// In registration order: a response that registered before another
	// started registering is numbered first.
	sort.Slice(ib.pending, func(i, j int) bool {
		a, c := ib.pending[i], ib.pending[j]
		if a.seq != c.seq {
			return a.seq < c.seq
		}
		return a.child.String() < c.child.String()
	})
	return nil
}

// deferredOf rebuilds the response a finished child deferred: its Finished
// event (result, version) and pr (created_at).
func (b *Backend) deferredOf(ctx context.Context, h *headRec) (core.JoinSetResponseEventOuter, error) {
	id := h.st.ExecutionID
	at, err := parseTS(h.pr)
	if err != nil {
		return core.JoinSetResponseEventOuter{}, fmt.Errorf("dynamo: deferred response of %s: %w", id, err)
	}
	evs, err := b.headEvents(ctx, h, h.st.Version, h.st.Version+1)
	if err != nil {
		return core.JoinSetResponseEventOuter{}, err
	}
	if len(evs) != 1 {
		return core.JoinSetResponseEventOuter{}, fmt.Errorf("dynamo: finished event of %s@%d missing", id, h.st.Version)
	}
	f, ok := evs[0].Event.(*core.Finished)
	if !ok {
		return core.JoinSetResponseEventOuter{}, fmt.Errorf("dynamo: event %s@%d is %T, not Finished", id, h.st.Version, evs[0].Event)
	}
	_, js, _ := id.SplitToParts()
	return core.JoinSetResponseEventOuter{CreatedAt: at, Event: core.JoinSetResponseEvent{JoinSetID: js,
		Event: &core.ChildExecutionFinished{ChildExecutionID: core.ExecutionIdDerived{ExecutionId: id},
			FinishedVersion: h.st.Version, Result: f.Retval}}}, nil
}

// guardExists reads a response guard, strongly consistent, without
// guarding the read.
func (b *Backend) guardExists(ctx context.Context, pk string) (bool, error) {
	out, err := b.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: b.tableName(), ConsistentRead: aws.Bool(true),
		Key: keyOf(pk, skGuard), ProjectionExpression: aws.String("#pk"),
		ExpressionAttributeNames: map[string]string{"#pk": AttrPK}}, b.optFns...)
	if err != nil {
		return false, fmt.Errorf("dynamo: read guard %s: %w", pk, err)
	}
	return out.Item != nil, nil
}

// claimChild is called when a response of child is applied to recipient's
// head. A deferred response of child lives in the child's head (pr) until
// applied, without a guard: unless this is the drain applying it, or the
// child is finishing in this very transaction (whose head it writes), the
// child must carry none (else the response exists: core.ErrConflict), and
// its head is rewritten so that a concurrent deferral — which writes the
// child's head — cannot commit too.
func (t *tx) claimChild(recipient *execTx, child core.ExecutionId) error {
	if recipient.ib != nil {
		for _, p := range recipient.ib.pending {
			if p.child == child && !p.applied {
				return nil
			}
		}
	}
	cx := t.exec(child)
	if err := t.load(cx); err != nil {
		return err
	}
	if cx.head == nil || len(cx.events) > 0 || cx.createSt != nil {
		return nil
	}
	if cx.head.pr != "" {
		return conflict("a response for %s already exists", child)
	}
	cx.touch = true
	return nil
}

// markApplied records that AddResponse applied the deferred response of
// child (its key leaves the inbox after the commit).
func (ex *execTx) markApplied(child core.ExecutionId) {
	if ex.ib == nil {
		return
	}
	for _, p := range ex.ib.pending {
		if p.child == child {
			p.applied = true
		}
	}
}

// planInbox adds to a commit that blocks ex on a join set js (its head goes
// to BlockedByJoinSet js from any other state) the inbox update SET wj = js
// REMOVE c#js, conditional on o#js as this transaction read it, and a fence
// (el) on every child of js registered but not finished when read.
func (t *tx) planInbox(ex *execTx) ([]op, error) {
	if ex.head == nil || ex.state == nil || !ex.fanIn() {
		return nil, nil
	}
	st, old := ex.state, &ex.head.st
	if st.State != core.StateBlockedByJoinSet || st.JoinSetID == nil {
		return nil, nil
	}
	js := st.JoinSetID.String()
	if old.State == core.StateBlockedByJoinSet && old.JoinSetID != nil && old.JoinSetID.String() == js {
		return nil, nil
	}
	names := map[string]string{"#w": aInboxWait, "#c": prefixInboxElec + js, "#o": prefixInboxRegs + js}
	o := op{kind: opInbox, exec: ex.id, key: keyOf(pkExec(ex.id), skInbox), update: "SET #w = :js REMOVE #c",
		names: names, values: item{":js": avS(js)}, firstNew: -1, what: "inbox " + ex.id.String()}
	var ops []op
	if ib := ex.ib; ib != nil {
		if n, ok := ib.regs[js]; ok {
			o.cond, o.values[":o"] = "#o = :o", avN(n)
		} else {
			o.cond = "attribute_not_exists(#o)"
		}
		fences := ib.inflight[js]
		if len(fences) > maxFences {
			return nil, store.Again(fmt.Errorf("%w: %d children of %s in %s are finishing", errContention, len(fences), ex.id, js))
		}
		for _, h := range fences {
			if h.el {
				continue
			}
			f := h.clone()
			f.el = true
			f.rev++
			f.rq = t.rq
			it := t.b.encodeHead(f)
			ops = append(ops, op{kind: opHeadUpdate, exec: f.st.ExecutionID, key: keyOf(pkExec(f.st.ExecutionID), skHead),
				put: it, cond: "#rv = :rv", names: map[string]string{"#rv": aRev}, values: item{":rv": avN(h.rev)},
				what: "head " + f.st.ExecutionID.String(), firstNew: -1, size: ItemSize(it)})
		}
	} else {
		// fi was unset when the head was read: no child could register
		// since without moving the head's revision.
		delete(names, "#o")
	}
	return append([]op{o}, ops...), nil
}

// cleanInbox removes, after a commit (or an empty plan), the keys of every
// inbox this transaction read that are applied or stale. Idempotent; a
// failure only leaves keys the next reader classifies again.
func (b *Backend) cleanInbox(ctx context.Context, p *plan) {
	for _, c := range p.inboxDone {
		_, err := b.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: b.tableName(), Key: keyOf(pkExec(c.id), skInbox),
			UpdateExpression:          aws.String("DELETE #ks :k"),
			ExpressionAttributeNames:  map[string]string{"#ks": aInboxKeys},
			ExpressionAttributeValues: item{":k": &types.AttributeValueMemberSS{Value: c.keys}},
		}, b.optFns...)
		if err != nil {
			b.log.WarnContext(ctx, "cleaning the inbox failed; the next reader retries",
				core.LogKeyExecutionID, c.id.String(), core.LogKeyErr, err)
		}
	}
}

// inboxDone is the keys of one inbox to remove after the commit.
type inboxDone struct {
	id   core.ExecutionId
	keys []string
}

// doneKeys lists, per inbox read by t, the applied and stale keys.
func (t *tx) doneKeys() []inboxDone {
	var out []inboxDone
	for _, ex := range t.order {
		if ex.ib == nil {
			continue
		}
		keys := append([]string(nil), ex.ib.stale...)
		for _, p := range ex.ib.pending {
			if p.applied {
				keys = append(keys, p.key)
			}
		}
		if len(keys) > 0 {
			out = append(out, inboxDone{ex.id, keys})
		}
	}
	return out
}

// HasDeferredResponses implements store.InboxBackend: whether id has fan-in
// and keys in its inbox (strongly consistent reads of the head and the inbox).
func (b *Backend) HasDeferredResponses(ctx context.Context, id core.ExecutionId) (bool, error) {
	if err := b.checkOpen(); err != nil {
		return false, err
	}
	h, err := b.getHead(ctx, id)
	if err != nil || h == nil || !h.fi {
		return false, err
	}
	out, err := b.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: b.tableName(), ConsistentRead: aws.Bool(true),
		Key: keyOf(pkExec(id), skInbox), ProjectionExpression: aws.String("#ks"),
		ExpressionAttributeNames: map[string]string{"#ks": aInboxKeys}}, b.optFns...)
	if err != nil {
		return false, fmt.Errorf("dynamo: read the inbox of %s: %w", id, err)
	}
	ss, ok := out.Item[aInboxKeys].(*types.AttributeValueMemberSS)
	return ok && len(ss.Value) > 0, nil
}
