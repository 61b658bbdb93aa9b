package dynamo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
)

type opKind uint8

const (
	opHeadCreate opKind = iota + 1
	opHeadUpdate
	opHeadCheck
	opEvent
	opResponse
	opGuard
	opGuardCheck
	opDelayPut
	opDelayDelete
	opOutbox
	opCounter
	opInbox // an Update of a parent's inbox (inbox.go)
	// deployments.go
	opDepInsert
	opDepUpdate
	opPointer
	opMetadata
	opSource
	opRef
	opRefDelete
)

func (k opKind) isCheck() bool  { return k == opHeadCheck || k == opGuardCheck }
func (k opKind) isDelete() bool { return k == opDelayDelete || k == opRefDelete }

// op is one action of a commit.
type op struct {
	kind   opKind
	exec   core.ExecutionId
	key    item   // pk, sk
	put    item   // the item written by a Put
	update string // the UpdateExpression of an Update (opInbox)
	cond   string
	names  map[string]string
	values item
	// unique: a failed condition is a uniqueness violation (core.ErrConflict),
	// otherwise it means a concurrent commit (fn runs again).
	unique bool
	what   string
	// firstNew is the first event version a head update appends (-1: none).
	firstNew int64
	size     int
}

// plan is what one fn run commits.
type plan struct {
	rq  string
	ops []op
	// deferred child creations that did not fit into the transaction; they
	// are listed in an outbox item beside the anchor head (outbox.go).
	deferred []deferredChild
	anchor   core.ExecutionId
	// ahead are puts written before the commit (deployments.go): blob
	// references of a new deployment's files, metadata beyond the
	// transaction's room (insert-if-absent).
	ahead []aheadPut
	// inboxDone are inbox keys to remove after the commit (inbox.go).
	inboxDone []inboxDone
}

// aheadPut is an item written before the commit.
type aheadPut struct {
	it       item
	ifAbsent bool // attribute_not_exists; an existing item is fine
}

func (p *plan) empty() bool {
	for _, o := range p.ops {
		if !o.kind.isCheck() {
			return false
		}
	}
	return true
}

// token is the ClientRequestToken: a digest of the write set, so that a
// re-sent request carries the same token and DynamoDB recognises it.
func (p *plan) token() string {
	h := sha256.New()
	h.Write([]byte(p.rq))
	for _, o := range p.ops {
		pk, _ := getS(o.key, AttrPK)
		sk, _ := getS(o.key, AttrSK)
		fmt.Fprintf(h, "|%d|%s|%s", o.kind, pk, sk)
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

var condNotExists = "attribute_not_exists(#pk)"

func keyOf(pk, sk string) item { return item{AttrPK: avS(pk), AttrSK: avS(sk)} }

func newPut(kind opKind, exec core.ExecutionId, it item, unique bool, what string) op {
	return op{kind: kind, exec: exec, key: item{AttrPK: it[AttrPK], AttrSK: it[AttrSK]}, put: it,
		cond: condNotExists, names: map[string]string{"#pk": AttrPK}, unique: unique, what: what,
		firstNew: -1, size: ItemSize(it)}
}

// plan turns the buffered writes into a commit.
func (t *tx) plan() (*plan, error) {
	p := &plan{rq: t.rq}
	if !t.write {
		return p, nil
	}
	var heads, others []op
	for _, ex := range t.order {
		switch {
		case ex.createSt != nil:
			ops, err := t.planCreate(ex)
			if err != nil {
				return nil, err
			}
			heads = append(heads, ops[0])
			others = append(others, ops[1:]...)
		case ex.dirty():
			ops, err := t.planUpdate(ex)
			if err != nil {
				return nil, err
			}
			heads = append(heads, ops[0])
			others = append(others, ops[1:]...)
			if ex.head.fi && ex.ib == nil && ex.state != nil && ex.state.State == core.StateBlockedByJoinSet {
				if _, err := t.inbox(ex); err != nil {
					return nil, err
				}
			}
			iops, err := t.planInbox(ex)
			if err != nil {
				return nil, err
			}
			others = append(others, iops...)
		case ex.loaded:
			o := op{kind: opHeadCheck, exec: ex.id, key: keyOf(pkExec(ex.id), skHead), firstNew: -1,
				what: "head " + ex.id.String()}
			if ex.head == nil {
				o.cond, o.names = condNotExists, map[string]string{"#pk": AttrPK}
			} else {
				o.cond, o.names, o.values = "#rv = :rv", map[string]string{"#rv": aRev}, item{":rv": avN(ex.head.rev)}
			}
			heads = append(heads, o)
		}
	}
	for _, g := range t.gorder {
		switch {
		case g.write != nil:
			it := item{AttrPK: avS(g.pk), AttrSK: avS(skGuard), "to": avS(g.write.to.String()),
				"c": avN(g.write.cursor), aReq: avS(t.rq)}
			if len(g.pk) > len(prefixGuardDelay) && g.pk[:len(prefixGuardDelay)] == prefixGuardDelay {
				it["ok"] = avBool(g.write.success)
			}
			others = append(others, newPut(opGuard, g.write.to, it, true, "a response for "+g.pk[len(prefixGuardDelay):]+" already exists"))
		case g.loaded && g.existing == nil:
			others = append(others, op{kind: opGuardCheck, key: keyOf(g.pk, skGuard), cond: condNotExists,
				names: map[string]string{"#pk": AttrPK}, firstNew: -1, what: "guard " + g.pk})
		}
	}
	p.ops = append(heads, others...)
	stampRetention(p) // retention.go
	p.inboxDone = t.doneKeys()
	if err := t.planDeployments(p); err != nil {
		return nil, err
	}
	if p.empty() {
		return p, nil
	}
	if err := t.fit(p); err != nil {
		return nil, err
	}
	return p, nil
}

func (ex *execTx) dirty() bool {
	if ex.state != nil || len(ex.events) > 0 || len(ex.responses) > 0 || ex.ret.children > 0 || ex.touch {
		return true
	}
	for _, d := range ex.dorder {
		if d.dirty {
			return true
		}
	}
	return false
}

// planCreate returns the head put (first) and a version-0 event item when
// the Created event is too large for the head.
func (t *tx) planCreate(ex *execTx) ([]op, error) {
	b := t.b
	h := &headRec{st: cloneState(*ex.createSt), rev: 1, rq: t.rq, cq: t.rq, ib: 1}
	if h.st.State == core.StateLocked { // created locked (eager dispatch)
		h.lk = t.leaseFor(ex.id, h.st.At) // lease.go
	}
	ex.planRetention(h, true) // retention.go
	var ops []op
	for _, ev := range ex.createEvents {
		payload, err := b.encodeEvent(t.ctx, ev, ownerOf(ex.id, h))
		if err != nil {
			return nil, err
		}
		if ev.Version == 0 {
			if len(payload) <= b.createdMax {
				h.created = payload
				continue
			}
			o := newPut(opEvent, ex.id, pageItem(ex.id, []inlineEvent{{v: 0, e: payload, q: t.rq}}, t.rq), true,
				"execution "+ex.id.String()+" already exists")
			ops = append(ops, o)
			continue
		}
		h.inline = append(h.inline, inlineEvent{v: ev.Version, e: payload, q: t.rq})
	}
	it, spilled := b.spill(h, ex.id, t.rq)
	head := newPut(opHeadCreate, ex.id, it, true, "execution "+ex.id.String()+" already exists")
	if head.size > maxItemBytes {
		return nil, fmt.Errorf("dynamo: head of %s is %d bytes, over the item limit", ex.id, head.size)
	}
	return append(append([]op{head}, ops...), spilled...), nil
}

// planUpdate returns the head put (first), spilled events, responses and
// timer rows of an execution this transaction changed.
func (t *tx) planUpdate(ex *execTx) ([]op, error) {
	b := t.b
	h := ex.head.clone()
	h.rev++
	h.rq = t.rq
	if ex.state != nil {
		h.st = cloneState(*ex.state)
	}
	switch {
	case h.st.State != core.StateLocked:
		h.lk = ""
	case ex.appendsLocked():
		h.lk = t.leaseFor(ex.id, h.st.At) // lease.go
	}
	ex.planRetention(h, false) // retention.go
	if ex.deferred != "" {
		h.pr, h.pq = ex.deferred, ex.deferredSeq
	}
	firstNew := int64(-1)
	for _, ne := range ex.events {
		if isChildRequest(ne.ev) {
			h.fi = true
		}
		payload, err := b.encodeEvent(t.ctx, ne.ev, ownerOf(ex.id, h))
		if err != nil {
			return nil, err
		}
		if firstNew < 0 {
			firstNew = int64(ne.ev.Version)
		}
		h.inline = append(h.inline, inlineEvent{v: ne.ev.Version, e: payload, js: ne.js, ord: ne.ord, q: t.rq})
	}
	it, spilled := b.spill(h, ex.id, t.rq)
	head := op{kind: opHeadUpdate, exec: ex.id, key: keyOf(pkExec(ex.id), skHead), put: it,
		cond: "#rv = :rv", names: map[string]string{"#rv": aRev}, values: item{":rv": avN(ex.head.rev)},
		what: "head " + ex.id.String(), firstNew: firstNew, size: ItemSize(it)}
	if head.size > maxItemBytes {
		return nil, fmt.Errorf("dynamo: head of %s is %d bytes, over the item limit", ex.id, head.size)
	}
	ops := append([]op{head}, spilled...)
	for _, nr := range ex.responses {
		data, err := json.Marshal(nr.r.Event)
		if err != nil {
			return nil, fmt.Errorf("dynamo: encode response %s#%d: %w", ex.id, nr.r.Cursor, err)
		}
		payload, err := b.putPayload(t.ctx, data, b.inline, ownerOf(ex.id, h))
		if err != nil {
			return nil, err
		}
		it := item{AttrPK: avS(pkExec(ex.id)), AttrSK: avS(skResponse(nr.r.Cursor)), aPayload: avS(payload),
			AttrOrdinal: avS(ordinalKey(ordinalResponse, nr.js, nr.ord)), aReq: avS(t.rq)}
		ops = append(ops, newPut(opResponse, ex.id, it, false, fmt.Sprintf("response %s#%d", ex.id, nr.r.Cursor)))
	}
	for _, d := range ex.dorder {
		if !d.dirty {
			continue
		}
		key := keyOf(pkExec(ex.id), skDelay(d.js, d.id))
		what := "delay " + d.id.String() + " already exists"
		switch {
		case d.final != nil:
			o := newPut(opDelayPut, ex.id, b.encodeDelay(*d.final, t.rq), true, what)
			if !d.mustBeNew && !(d.initialKnown && d.initial == nil) {
				o.cond, o.names = "", nil
			}
			ops = append(ops, o)
		case d.mustBeNew:
			// Created and removed in this transaction: only its absence
			// before needs proving; the head's revision guards the read.
			out, err := b.api.GetItem(t.ctx, &dynamodb.GetItemInput{TableName: b.tableName(),
				ConsistentRead: aws.Bool(true), Key: key, ProjectionExpression: aws.String("#pk"),
				ExpressionAttributeNames: map[string]string{"#pk": AttrPK}}, b.optFns...)
			if err != nil {
				return nil, fmt.Errorf("dynamo: read delay %s: %w", d.id, err)
			}
			if out.Item != nil {
				return nil, conflict("delay %s already exists", d.id)
			}
		case d.initialKnown && d.initial == nil:
		default:
			ops = append(ops, op{kind: opDelayDelete, exec: ex.id, key: key, firstNew: -1, what: "delay " + d.id.String()})
		}
	}
	return ops, nil
}

// spill encodes the head; when it exceeds the head budget, its inline
// events move to event pages (one item per run of events up to pageMax
// bytes) and the head is re-encoded. The JoinNext counter item of every join
// set among the moved JoinNexts is set to the highest moved ordinal.
func (b *Backend) spill(h *headRec, id core.ExecutionId, rq string) (item, []op) {
	it := b.encodeHead(h) /* deployments_index.go */
	limit := b.headBudget
	if h.st.State == core.StateFinished {
		limit *= 16
	}
	if ItemSize(it) <= limit || len(h.inline) == 0 {
		return it, nil
	}
	var ops []op
	var page []inlineEvent
	size := 0
	flush := func() {
		ops = append(ops, newPut(opEvent, id, pageItem(id, page, rq), false,
			fmt.Sprintf("event page %s@%d", id, page[len(page)-1].v)))
		page, size = nil, 0
	}
	counters := map[string]uint32{}
	var jss []string
	for _, ie := range h.inline {
		es := len(ie.e) + len(ie.q) + len(ie.js) + 24
		if len(page) > 0 && size+es > pageMax {
			flush()
		}
		page = append(page, ie)
		size += es
		if ie.js != "" {
			if _, ok := counters[ie.js]; !ok {
				jss = append(jss, ie.js)
			}
			counters[ie.js] = max(counters[ie.js], ie.ord)
		}
	}
	flush()
	for _, js := range jss {
		it := item{AttrPK: avS(pkExec(id)), AttrSK: avS(prefixJoinNext + js), aCount: avN(counters[js]), aReq: avS(rq)}
		o := newPut(opCounter, id, it, false, "JoinNext counter "+js)
		o.cond, o.names = "", nil
		ops = append(ops, o)
	}
	h.ib = h.inline[len(h.inline)-1].v + 1
	h.inline = nil
	b.stats.spills.Add(1)
	return b.encodeHead(h) /* deployments_index.go */, ops
}

// pageItem is an event page: consecutive events outside the head, keyed by
// the last version, with "lo" the first.
func pageItem(id core.ExecutionId, evs []inlineEvent, rq string) item {
	return item{AttrPK: avS(pkExec(id)), AttrSK: avS(skEvent(evs[len(evs)-1].v)), aPageLo: avN(evs[0].v),
		aEvents: encodeZ(evs), aReq: avS(rq)}
}

// --- sending --------------------------------------------------------------------------

type resultKind uint8

const (
	resOther     resultKind = iota + 1
	resOwn                  // our own earlier attempt had committed
	resCondition            // a condition failed: contention or uniqueness (err says which)
	resRetry                // definitely not committed, worth re-running (conflict, throttling)
	resAmbiguous            // outcome unknown
)

// execute commits p. Ambiguous outcomes are resolved by re-sending the
// identical request (same ClientRequestToken); once any attempt — ours or
// one the SDK retried internally — may have executed, a later failure is
// checked against the request id written on our items before fn may re-run.
func (b *Backend) execute(ctx context.Context, p *plan) error {
	if err := b.writeAhead(ctx, p.ahead); err != nil {
		return err
	}
	if len(p.deferred) > 0 {
		if err := b.precheckDeferred(ctx, p); err != nil {
			return err
		}
	}
	ambiguous := false
	for try := 1; ; try++ {
		sctx, tr := withAttempts(ctx)
		err := b.send(sctx, p)
		if err == nil {
			return nil
		}
		ambiguous = ambiguous || tr.ambiguous
		kind, cerr := b.classify(err, p)
		if kind == resOwn {
			b.stats.ownCommits.Add(1)
			return nil
		}
		if ambiguous && kind != resAmbiguous {
			ok, lerr := b.landed(context.WithoutCancel(ctx), p)
			if lerr != nil {
				return fmt.Errorf("dynamo: commit outcome unknown (%w); checking it failed: %w", err, lerr)
			}
			if ok {
				b.stats.ownCommits.Add(1)
				return nil
			}
		}
		switch kind {
		case resCondition:
			return cerr
		case resRetry:
			return fmt.Errorf("%w: %w", errContention, err)
		case resAmbiguous:
			ambiguous = true
			if ctx.Err() != nil || try >= maxResends {
				if ok, lerr := b.landed(context.WithoutCancel(ctx), p); lerr == nil && ok {
					b.stats.ownCommits.Add(1)
					return nil
				}
				return fmt.Errorf("dynamo: commit outcome unknown after %d attempts: %w", try, err)
			}
			b.stats.resends.Add(1)
			b.log.DebugContext(ctx, "ambiguous commit, re-sending", core.LogKeyAttempt, try, core.LogKeyErr, err)
			if err := store.Backoff(ctx, try); err != nil {
				return fmt.Errorf("dynamo: commit outcome unknown: %w", err)
			}
		default:
			return fmt.Errorf("dynamo: commit: %w", err)
		}
	}
}

// attempts records what the SDK's retry loop saw for one call.
type attempts struct {
	n         int
	ambiguous bool // some attempt may have executed without us seeing the answer
}

type attemptsKey struct{}

func withAttempts(ctx context.Context) (context.Context, *attempts) {
	a := &attempts{}
	return context.WithValue(ctx, attemptsKey{}, a), a
}

// trackAttempts is a finalize-step middleware placed inside the SDK retry
// loop: it sees every attempt's outcome.
func trackAttempts(stack *middleware.Stack) error {
	return stack.Finalize.Insert(middleware.FinalizeMiddlewareFunc("StelaAttempts",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleFinalize(ctx, in)
			if a, ok := ctx.Value(attemptsKey{}).(*attempts); ok {
				a.n++
				if err != nil && isAmbiguous(err) {
					a.ambiguous = true
				}
			}
			return out, md, err
		}), "Retry", middleware.After)
}

// isAmbiguous reports whether err leaves open whether the request executed:
// no answer from DynamoDB, a 5xx, or another request with the same token
// still in progress.
func isAmbiguous(err error) bool {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return true
	}
	switch ae.ErrorCode() {
	case "InternalServerError", "InternalFailure", "ServiceUnavailable", "TransactionInProgressException":
		return true
	}
	return false
}

func (b *Backend) send(ctx context.Context, p *plan) error {
	var writes []op
	for _, o := range p.ops {
		if !o.kind.isCheck() {
			writes = append(writes, o)
		}
	}
	if len(writes) == 1 && len(p.ops) == 1 && writes[0].put != nil {
		o := writes[0]
		in := &dynamodb.PutItemInput{TableName: b.tableName(), Item: o.put,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}
		if o.cond != "" {
			in.ConditionExpression, in.ExpressionAttributeNames = aws.String(o.cond), o.names
			if len(o.values) > 0 {
				in.ExpressionAttributeValues = o.values
			}
		}
		_, err := b.api.PutItem(ctx, in, b.optFns...)
		return err
	}
	items := make([]types.TransactWriteItem, len(p.ops))
	for i, o := range p.ops {
		var cond *string
		if o.cond != "" {
			cond = aws.String(o.cond)
		}
		var values item
		if len(o.values) > 0 {
			values = o.values
		}
		switch {
		case o.kind.isCheck():
			items[i].ConditionCheck = &types.ConditionCheck{TableName: b.tableName(), Key: o.key,
				ConditionExpression: cond, ExpressionAttributeNames: o.names, ExpressionAttributeValues: values,
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}
		case o.kind.isDelete():
			items[i].Delete = &types.Delete{TableName: b.tableName(), Key: o.key}
		case o.update != "":
			items[i].Update = &types.Update{TableName: b.tableName(), Key: o.key, UpdateExpression: aws.String(o.update),
				ConditionExpression: cond, ExpressionAttributeNames: o.names, ExpressionAttributeValues: values,
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}
		default:
			items[i].Put = &types.Put{TableName: b.tableName(), Item: o.put, ConditionExpression: cond,
				ExpressionAttributeNames: o.names, ExpressionAttributeValues: values,
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}
		}
	}
	_, err := b.api.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: items, ClientRequestToken: aws.String(p.token()),
	}, b.optFns...)
	return err
}

// classify maps a commit error to what Update does next.
func (b *Backend) classify(err error, p *plan) (resultKind, error) {
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		var contention, retry bool
		var unique error
		for i, r := range tce.CancellationReasons {
			switch aws.ToString(r.Code) {
			case "", "None":
			case "ConditionalCheckFailed":
				if i >= len(p.ops) {
					return resOther, err
				}
				if p.ownItem(i, r.Item) {
					return resOwn, nil
				}
				if p.ops[i].unique {
					unique = conflict("%s", p.ops[i].what)
				} else {
					contention = true
				}
			case "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded":
				retry = true
			default:
				return resOther, err
			}
		}
		switch {
		case contention:
			return resCondition, fmt.Errorf("%w: %w", errContention, err)
		case unique != nil:
			return resCondition, unique
		case retry:
			return resRetry, err
		}
		return resOther, err
	}
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		if p.ownItem(0, ccf.Item) {
			return resOwn, nil
		}
		if p.ops[0].unique {
			return resCondition, conflict("%s", p.ops[0].what)
		}
		return resCondition, fmt.Errorf("%w: %w", errContention, err)
	}
	if isAmbiguous(err) {
		return resAmbiguous, err
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case codeTransactionConflict, "ProvisionedThroughputExceededException", "RequestLimitExceeded",
			"ThrottlingException", "Throttling":
			return resRetry, err
		}
	}
	return resOther, err
}

// ownItem reports whether the item returned by a failed condition (ALL_OLD)
// was written by this very commit in an earlier, ambiguous attempt.
func (p *plan) ownItem(i int, old item) bool {
	if old == nil || i >= len(p.ops) {
		return false
	}
	o := p.ops[i]
	if o.kind.isCheck() {
		return false
	}
	if rq, _ := getS(old, aReq); rq == p.rq {
		return true
	}
	if cq, _ := getS(old, aCreateReq); o.kind == opHeadCreate && cq == p.rq {
		return true
	}
	if o.kind == opHeadUpdate && o.firstNew >= 0 {
		h := &headRec{}
		if h.decode(o.exec, old) == nil {
			for _, ie := range h.inline {
				if int64(ie.v) == o.firstNew {
					return ie.q == p.rq
				}
			}
		}
	}
	return false
}

// landed reads back a witness of p to tell whether an ambiguous attempt
// committed: an immutable item it created (event, response, guard, outbox),
// else the first event it appended to a head, else a head's request id.
func (b *Backend) landed(ctx context.Context, p *plan) (bool, error) {
	get := func(key item) (item, error) {
		out, err := b.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: b.tableName(), Key: key,
			ConsistentRead: aws.Bool(true)}, b.optFns...)
		if err != nil {
			return nil, err
		}
		return out.Item, nil
	}
	for _, o := range p.ops {
		switch o.kind {
		case opEvent, opResponse, opGuard, opOutbox, opDepInsert, opMetadata:
			it, err := get(o.key)
			if err != nil {
				return false, err
			}
			rq, _ := getS(it, aReq)
			return it != nil && rq == p.rq, nil
		}
	}
	for _, o := range p.ops {
		switch o.kind {
		case opDepUpdate, opPointer, opSource:
			it, err := get(o.key)
			if err != nil {
				return false, err
			}
			rq, _ := getS(it, aReq)
			return rq == p.rq, nil
		case opHeadCreate:
			it, err := get(o.key)
			if err != nil {
				return false, err
			}
			cq, _ := getS(it, aCreateReq)
			return it != nil && cq == p.rq, nil
		case opHeadUpdate:
			it, err := get(o.key)
			if err != nil || it == nil {
				return false, err
			}
			if rq, _ := getS(it, aReq); rq == p.rq {
				return true, nil
			}
			if o.firstNew < 0 {
				return false, nil
			}
			h := &headRec{}
			if err := h.decode(o.exec, it); err != nil {
				return false, err
			}
			for _, ie := range h.inline {
				if int64(ie.v) == o.firstNew {
					return ie.q == p.rq, nil
				}
			}
			if o.firstNew < int64(h.ib) {
				pg, err := b.pageOf(ctx, o.exec, core.Version(o.firstNew))
				if err != nil || pg == nil {
					return false, err
				}
				for _, ie := range pg {
					if int64(ie.v) == o.firstNew {
						return ie.q == p.rq, nil
					}
				}
			}
			return false, nil
		}
	}
	return false, nil
}

// afterCommit removes the inbox keys the commit applied (inbox.go) and
// materialises deferred child creations (outbox.go).
func (b *Backend) afterCommit(ctx context.Context, p *plan) {
	if b.skipAfterCommit {
		return
	}
	ctx = context.WithoutCancel(ctx)
	b.cleanInbox(ctx, p)
	if len(p.deferred) == 0 {
		return
	}
	if err := b.materialise(ctx, p.deferred, p.rq); err != nil {
		b.log.ErrorContext(ctx, "fan-out materialisation incomplete; the next reader finishes it",
			core.LogKeyExecutionID, p.anchor.String(), core.LogKeyRequestID, p.rq, core.LogKeyErr, err)
		return
	}
	if err := b.clearOutbox(ctx, p.anchor, p.rq); err != nil {
		b.log.ErrorContext(ctx, "clearing the outbox failed; the next reader finishes it",
			core.LogKeyExecutionID, p.anchor.String(), core.LogKeyRequestID, p.rq, core.LogKeyErr, err)
	}
}
