package dynamo

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
)

// Import (store.Importer): an execution is written as the commits that
// made it would have left it, in three steps so that it becomes visible
// only complete:
//
//  1. the items of its partition that no reader finds without the head —
//     event pages, JoinNext counters, responses — with unconditional
//     BatchWriteItems (an interrupted import of the same execution left
//     at most the same items);
//  2. the head, attribute_not_exists (an existing execution is
//     core.ErrConflict), in one transaction with its timer rows (a timer
//     row without its head would be found by the sweep) and the
//     uniqueness guards of its responses (G#C#<child>, G#D#<delay>),
//     each conditional on being absent or being this very response (to,
//     cursor: a resumed import) — a guard another execution holds is
//     core.ErrConflict. What does not fit the transaction's 100 actions
//     goes before it: guards in transactions of their own, timer rows
//     with the pages;
//  3. backtraces and logs are appended by the service afterwards.
//
// The executions of a tree are written importParallelism at a time, each
// once its parent is (a child never appears before its parent).
//
// The head is encoded by the same code as the commit path (revision 1, a
// fresh request id, inline events spilling to pages past HeadBudget, the
// sparse index keys of its state, rs from the recorded finish, nc = its
// ChildExecutionRequest events, the children its commits created). It has
// no fan-in flag: its children's responses are applied to its head
// directly until it requests a child in this table (doc.go, "Fan-in").
// With an expiry (a finished tree, store.Retainer marks ahead) every item
// carries the tree's time-to-live, as ExpireTree would have marked it.

var _ store.Importer = (*Backend)(nil)

// ImportExecutions implements store.Importer.
func (b *Backend) ImportExecutions(ctx context.Context, recs []core.ExecutionRecord, expiresAt *core.Timestamp) error {
	if err := b.checkOpen(); err != nil {
		return err
	}
	var ttl int64
	if expiresAt != nil {
		ttl = ttlOf(*expiresAt)
	}
	// importParallelism executions at once, each after its parent (recs
	// lists parents first, so a parent always got its turn before its
	// children wait for it).
	written := make(map[core.ExecutionId]chan struct{}, len(recs))
	for i := range recs {
		written[recs[i].Head.ExecutionID] = make(chan struct{})
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(importParallelism)
	for i := range recs {
		r := &recs[i]
		id := r.Head.ExecutionID
		parent, _, _ := id.SplitToParts()
		g.Go(func() error {
			if wait := written[parent]; wait != nil {
				select {
				case <-wait:
				case <-gctx.Done():
					return gctx.Err()
				}
			}
			if err := b.importExecution(gctx, r, ttl); err != nil {
				return err
			}
			close(written[id])
			return nil
		})
	}
	return g.Wait()
}

// importParallelism bounds the executions of one tree imported at once.
const importParallelism = 8

// guardPut is a response guard to write with (or before) the head.
type guardPut struct {
	it     item
	cursor core.ResponseCursor
	what   string
}

// op is the guard's action: a Put that fails (core.ErrConflict) when
// another response holds it.
func (g guardPut) op(id core.ExecutionId) op {
	o := newPut(opGuard, id, g.it, true, "a response for "+g.what+" is stored already")
	o.cond = "attribute_not_exists(#pk) OR (#to = :to AND #c = :c)"
	o.names = map[string]string{"#pk": AttrPK, "#to": "to", "#c": "c"}
	o.values = item{":to": avS(id.String()), ":c": avN(g.cursor)}
	return o
}

func (b *Backend) importExecution(ctx context.Context, r *core.ExecutionRecord, ttl int64) error {
	id := r.Head.ExecutionID
	rq := newRequestID()
	h := &headRec{st: cloneState(r.Head), rev: 1, rq: rq, cq: rq, ib: 1,
		ret: headRetention{ttl: ttl, ncKnown: true}}
	if r.FinishRecordedAt != nil {
		h.ret.rs = r.FinishRecordedAt.SortableText() + "#" + id.String()
	}
	owner := ownerOf(id, h)
	var before []item
	joinNexts := map[string]uint32{}
	for _, ev := range r.Events {
		if isChildRequest(ev) {
			h.ret.nc++
		}
		payload, err := b.encodeEvent(ctx, ev, owner)
		if err != nil {
			return err
		}
		ie := inlineEvent{v: ev.Version, e: payload, q: rq}
		switch {
		case ev.Version == 0 && len(payload) <= b.createdMax:
			h.created = payload
			continue
		case ev.Version == 0:
			before = append(before, pageItem(id, []inlineEvent{ie}, rq))
			continue
		}
		if he, ok := ev.Event.(*core.HistoryEventRequest); ok {
			if jn, ok := he.Event.(*core.JoinNext); ok {
				ie.js = jn.JoinSetID.String()
				joinNexts[ie.js]++
				ie.ord = joinNexts[ie.js]
			}
		}
		h.inline = append(h.inline, ie)
	}
	headItem, spilled := b.spill(h, id, rq)
	if n := ItemSize(headItem); n > maxItemBytes {
		return fmt.Errorf("dynamo: import %s: head of %d bytes, over the item limit", id, n)
	}
	for _, o := range spilled {
		before = append(before, o.put)
	}
	var guards []guardPut
	responses := map[string]uint32{}
	for _, resp := range r.Responses {
		data, err := json.Marshal(resp.Event)
		if err != nil {
			return fmt.Errorf("dynamo: import %s: encode response %d: %w", id, resp.Cursor, err)
		}
		payload, err := b.putPayload(ctx, data, b.inline, owner)
		if err != nil {
			return err
		}
		js := resp.Event.Event.JoinSetID.String()
		responses[js]++
		before = append(before, item{AttrPK: avS(pkExec(id)), AttrSK: avS(skResponse(resp.Cursor)), aPayload: avS(payload),
			AttrOrdinal: avS(ordinalKey(ordinalResponse, js, responses[js])), aReq: avS(rq)})
		g := guardPut{cursor: resp.Cursor}
		switch ev := resp.Event.Event.Event.(type) {
		case *core.ChildExecutionFinished:
			g.it = item{AttrPK: avS(prefixGuardChild + ev.ChildExecutionID.String())}
			g.what = "child " + ev.ChildExecutionID.String()
		case *core.DelayFinished:
			g.it = item{AttrPK: avS(prefixGuardDelay + ev.DelayID.String()), "ok": avBool(bool(ev.Result))}
			g.what = "delay " + ev.DelayID.String()
		default:
			return fmt.Errorf("dynamo: import %s: unsupported response %T", id, ev)
		}
		g.it[AttrSK], g.it["to"], g.it["c"], g.it[aReq] = avS(skGuard), avS(id.String()), avN(resp.Cursor), avS(rq)
		guards = append(guards, g)
	}
	timers := make([]item, len(r.Delays))
	for i, d := range r.Delays {
		timers[i] = b.encodeDelay(d, rq)
	}
	if len(timers) >= maxTxActions {
		// More than one transaction holds: the rest goes before the head.
		before, timers = append(before, timers[maxTxActions-1:]...), timers[:maxTxActions-1]
	}
	room := maxTxActions - 1 - len(timers) // beside the head and its timer rows
	early := guards[:max(len(guards)-room, 0)]
	guards = guards[len(early):]
	if ttl > 0 {
		for _, it := range before {
			it[AttrTTL] = avN(ttl)
		}
		for _, g := range append(early, guards...) {
			g.it[AttrTTL] = avN(ttl)
		}
		for _, it := range timers {
			it[AttrTTL] = avN(ttl)
		}
	}
	reqs := make([]types.WriteRequest, len(before))
	for i, it := range before {
		reqs[i] = types.WriteRequest{PutRequest: &types.PutRequest{Item: it}}
	}
	if err := b.batchWrite(ctx, reqs); err != nil {
		return fmt.Errorf("dynamo: import %s: %w", id, err)
	}
	for start := 0; start < len(early); start += maxTxActions {
		p := &plan{rq: rq}
		for _, g := range early[start:min(start+maxTxActions, len(early))] {
			p.ops = append(p.ops, g.op(id))
		}
		if err := b.execute(ctx, p); err != nil {
			return fmt.Errorf("dynamo: import %s: %w", id, err)
		}
	}
	if b.beforeImportHead != nil {
		if err := b.beforeImportHead(id); err != nil {
			return err
		}
	}
	p := &plan{rq: rq, ops: []op{newPut(opHeadCreate, id, headItem, true, "execution "+id.String()+" already exists")}}
	for _, it := range timers {
		o := newPut(opDelayPut, id, it, false, "timer row of "+id.String())
		o.cond, o.names = "", nil
		p.ops = append(p.ops, o)
	}
	for _, g := range guards {
		p.ops = append(p.ops, g.op(id))
	}
	if err := b.execute(ctx, p); err != nil {
		return fmt.Errorf("dynamo: import %s: %w", id, err)
	}
	b.stats.commits.Add(1)
	return nil
}
