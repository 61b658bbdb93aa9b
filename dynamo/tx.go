package dynamo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
)

// tx implements store.Tx: reads are strongly consistent and cached, writes
// are buffered until plan() turns them into one commit.
type tx struct {
	b      *Backend
	ctx    context.Context
	write  bool
	rq     string
	execs  map[core.ExecutionId]*execTx
	order  []*execTx
	guards map[string]*guardTx
	gorder []*guardTx
	deps   *depTx // deployment rows (deployments.go)
}

var _ store.Tx = (*tx)(nil)

// execTx is everything one transaction read or buffered for one execution.
type execTx struct {
	id     core.ExecutionId
	loaded bool
	head   *headRec // as read; nil when absent
	// createSt / createEvents are set by CreateHead.
	createSt     *core.ExecutionState
	createEvents []core.ExecutionEvent
	// state is set by PutHead.
	state     *core.ExecutionState
	events    []newEvent
	responses []newResponse
	delays    map[string]*delayTx
	dorder    []*delayTx
	// persisted JoinNext / response counts per join set, once looked up.
	jnCount map[string]uint32
	rsCount map[string]uint32
	// ret is what this transaction buffered for retention (retention.go).
	ret execRetention
	// ib is the execution's inbox as read (inbox.go); deferred is the
	// created_at of the response this child's Finished defers (pr).
	ib          *inboxState
	deferred    string
	deferredSeq int64
	// touch rewrites the head unchanged (rv+1): a commit serialising with
	// any concurrent commit of this execution (inbox.go, claimChild).
	touch bool
}

type newEvent struct {
	ev  core.ExecutionEvent
	js  string
	ord uint32
}

type newResponse struct {
	r   core.ResponseWithCursor
	js  string
	ord uint32
}

// delayTx tracks one timer row: what it was when read and what it must be
// after the commit.
type delayTx struct {
	js           core.JoinSetId
	id           core.DelayId
	initialKnown bool
	initial      *core.DelayTimer
	known        bool
	final        *core.DelayTimer
	dirty        bool
	// mustBeNew: PutDelay was called without knowing the initial row, so
	// the commit must prove it did not exist (uniqueness).
	mustBeNew bool
}

// guardRec is a response-uniqueness guard (one per child id / delay id).
type guardRec struct {
	to      core.ExecutionId
	cursor  core.ResponseCursor
	success bool
}

type guardTx struct {
	pk       string
	loaded   bool
	existing *guardRec
	write    *guardRec
}

func (b *Backend) newTx(ctx context.Context, write bool) *tx {
	t := &tx{b: b, ctx: ctx, write: write, execs: map[core.ExecutionId]*execTx{}, guards: map[string]*guardTx{}}
	if write {
		t.rq = newRequestID()
	}
	return t
}

func (t *tx) exec(id core.ExecutionId) *execTx {
	ex, ok := t.execs[id]
	if !ok {
		ex = &execTx{id: id, delays: map[string]*delayTx{}, jnCount: map[string]uint32{}, rsCount: map[string]uint32{}}
		t.execs[id] = ex
		t.order = append(t.order, ex)
	}
	return ex
}

func (t *tx) guard(pk string) *guardTx {
	g, ok := t.guards[pk]
	if !ok {
		g = &guardTx{pk: pk}
		t.guards[pk] = g
		t.gorder = append(t.gorder, g)
	}
	return g
}

func (t *tx) mustWrite() error {
	if !t.write {
		return errors.New("dynamo: write in a read-only transaction")
	}
	return nil
}

func notFound(what string) error { return fmt.Errorf("dynamo: %s: %w", what, core.ErrNotFound) }

func conflict(format string, args ...any) error {
	return fmt.Errorf("dynamo: "+format+": %w", append(args, core.ErrConflict)...)
}

// load reads the head once per transaction (unless CreateHead made it),
// finishing a pending child fan-out first (outbox.go).
func (t *tx) load(ex *execTx) error {
	if ex.loaded || ex.createSt != nil {
		return nil
	}
	h, err := t.b.readHead(t.ctx, ex.id, true)
	if err != nil {
		return err
	}
	ex.head = h
	ex.loaded = true
	return nil
}

// exists reports whether the execution exists in this transaction's view.
func (ex *execTx) exists() bool { return ex.createSt != nil || ex.head != nil }

// cur returns the current state as seen by this transaction.
func (ex *execTx) cur() *core.ExecutionState {
	switch {
	case ex.state != nil:
		return ex.state
	case ex.createSt != nil:
		return ex.createSt
	case ex.head != nil:
		return &ex.head.st
	}
	return nil
}

// persistedVersion is the version of the last committed event (-1: none).
func (ex *execTx) persistedVersion() int64 {
	if ex.head == nil {
		return -1
	}
	return int64(ex.head.st.Version)
}

// lastVersion is the version of the last event including buffered ones.
func (ex *execTx) lastVersion() int64 {
	if n := len(ex.events); n > 0 {
		return int64(ex.events[n-1].ev.Version)
	}
	if n := len(ex.createEvents); n > 0 {
		return int64(ex.createEvents[n-1].Version)
	}
	return ex.persistedVersion()
}

// --- ReadTx -----------------------------------------------------------------------

// Head returns the execution's state.
func (t *tx) Head(id core.ExecutionId) (core.ExecutionState, error) {
	ex := t.exec(id)
	if err := t.load(ex); err != nil {
		return core.ExecutionState{}, err
	}
	st := ex.cur()
	if st == nil {
		return core.ExecutionState{}, notFound("execution " + id.String())
	}
	return cloneState(*st), nil
}

func (t *tx) loadExisting(id core.ExecutionId) (*execTx, error) {
	ex := t.exec(id)
	if err := t.load(ex); err != nil {
		return nil, err
	}
	if !ex.exists() {
		return nil, notFound("execution " + id.String())
	}
	return ex, nil
}

// Event returns the event at version v.
func (t *tx) Event(id core.ExecutionId, v core.Version) (core.ExecutionEvent, error) {
	evs, err := t.Events(id, v, v+1)
	if err != nil {
		return core.ExecutionEvent{}, err
	}
	if len(evs) == 0 {
		return core.ExecutionEvent{}, notFound(fmt.Sprintf("event %s@%d", id, v))
	}
	return evs[0], nil
}

// Events returns the events with from <= version < to, ascending.
func (t *tx) Events(id core.ExecutionId, from, to core.Version) ([]core.ExecutionEvent, error) {
	ex, err := t.loadExisting(id)
	if err != nil {
		return nil, err
	}
	var out []core.ExecutionEvent
	if ex.head != nil {
		out, err = t.b.headEvents(t.ctx, ex.head, from, to)
		if err != nil {
			return nil, err
		}
	}
	for _, ev := range ex.createEvents {
		if ev.Version >= from && ev.Version < to {
			out = append(out, ev)
		}
	}
	for _, ne := range ex.events {
		if ne.ev.Version >= from && ne.ev.Version < to {
			out = append(out, ne.ev)
		}
	}
	return out, nil
}

// headEvents reads the committed events from <= v < to of the execution at
// head h: version 0 and the inline ones from the head, the rest from items.
func (b *Backend) headEvents(ctx context.Context, h *headRec, from, to core.Version) ([]core.ExecutionEvent, error) {
	if last := h.st.Version + 1; to > last {
		to = last
	}
	if from >= to {
		return nil, nil
	}
	var out []core.ExecutionEvent
	if from == 0 && h.created != "" {
		ev, err := b.decodeEvent(ctx, h.created)
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
		from = 1
	}
	if itemTo := min(to, h.ib); from < itemTo {
		evs, err := b.queryEvents(ctx, h.st.ExecutionID, from, itemTo-1)
		if err != nil {
			return nil, err
		}
		out = append(out, evs...)
	}
	for _, ie := range h.inline {
		if ie.v >= from && ie.v < to {
			ev, err := b.decodeEvent(ctx, ie.e)
			if err != nil {
				return nil, err
			}
			out = append(out, ev)
		}
	}
	return out, nil
}

// queryEvents reads the events lo..hi (inclusive) from event pages,
// strongly consistent. A page's key is its last version, so the first page
// with key >= lo holds lo; reading stops at the first page beyond hi.
func (b *Backend) queryEvents(ctx context.Context, id core.ExecutionId, lo, hi core.Version) ([]core.ExecutionEvent, error) {
	var out []core.ExecutionEvent
	err := b.queryAll(ctx, &dynamodb.QueryInput{
		TableName:                 b.tableName(),
		ConsistentRead:            aws.Bool(true),
		KeyConditionExpression:    aws.String("#pk = :pk AND #sk BETWEEN :lo AND :hi"),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK, "#sk": AttrSK},
		ExpressionAttributeValues: item{":pk": avS(pkExec(id)), ":lo": avS(skEvent(lo)), ":hi": avS(skEvent(math.MaxUint32))},
	}, func(it item) (bool, error) {
		evs, err := decodeZ(it[aEvents])
		if err != nil {
			return false, err
		}
		for _, ie := range evs {
			if ie.v < lo || ie.v > hi {
				continue
			}
			ev, err := b.decodeEvent(ctx, ie.e)
			if err != nil {
				return false, err
			}
			out = append(out, ev)
		}
		return len(evs) == 0 || evs[len(evs)-1].v < hi, nil
	})
	if err != nil {
		return nil, fmt.Errorf("dynamo: events of %s: %w", id, err)
	}
	return out, nil
}

// pageOf returns the inline events of the page holding version v.
func (b *Backend) pageOf(ctx context.Context, id core.ExecutionId, v core.Version) ([]inlineEvent, error) {
	out, err := b.api.Query(ctx, &dynamodb.QueryInput{
		TableName:                 b.tableName(),
		ConsistentRead:            aws.Bool(true),
		Limit:                     aws.Int32(1),
		KeyConditionExpression:    aws.String("#pk = :pk AND #sk BETWEEN :lo AND :hi"),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK, "#sk": AttrSK},
		ExpressionAttributeValues: item{":pk": avS(pkExec(id)), ":lo": avS(skEvent(v)), ":hi": avS(skEvent(math.MaxUint32))},
	}, b.optFns...)
	if err != nil || len(out.Items) == 0 {
		return nil, err
	}
	return decodeZ(out.Items[0][aEvents])
}

// Responses returns the responses with from <= cursor < to, ascending.
func (t *tx) Responses(id core.ExecutionId, from, to core.ResponseCursor) ([]core.ResponseWithCursor, error) {
	ex := t.exec(id)
	if err := t.load(ex); err != nil {
		return nil, err
	}
	var out []core.ResponseWithCursor
	if ex.head != nil {
		var err error
		out, err = t.b.headResponses(t.ctx, ex.head, from, to)
		if err != nil {
			return nil, err
		}
	}
	for _, nr := range ex.responses {
		if nr.r.Cursor >= from && nr.r.Cursor < to {
			out = append(out, nr.r)
		}
	}
	return out, nil
}

// headResponses reads the committed responses from <= c < to, bounded by
// the head's MaxCursor (so a view never sees responses newer than its head).
func (b *Backend) headResponses(ctx context.Context, h *headRec, from, to core.ResponseCursor) ([]core.ResponseWithCursor, error) {
	from = max(from, 1)
	to = min(to, h.st.MaxCursor+1)
	if from >= to {
		return nil, nil
	}
	var out []core.ResponseWithCursor
	id := h.st.ExecutionID
	err := b.queryAll(ctx, &dynamodb.QueryInput{
		TableName:                 b.tableName(),
		ConsistentRead:            aws.Bool(true),
		KeyConditionExpression:    aws.String("#pk = :pk AND #sk BETWEEN :lo AND :hi"),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK, "#sk": AttrSK},
		ExpressionAttributeValues: item{":pk": avS(pkExec(id)), ":lo": avS(skResponse(from)), ":hi": avS(skResponse(to - 1))},
	}, func(it item) (bool, error) {
		r, err := b.decodeResponse(ctx, it)
		if err != nil {
			return false, err
		}
		out = append(out, r)
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("dynamo: responses of %s: %w", id, err)
	}
	return out, nil
}

func (b *Backend) decodeResponse(ctx context.Context, it item) (core.ResponseWithCursor, error) {
	sk, _ := getS(it, AttrSK)
	var c uint64
	if _, err := fmt.Sscanf(sk, prefixResponse+"%d", &c); err != nil {
		return core.ResponseWithCursor{}, fmt.Errorf("dynamo: response key %q: %w", sk, err)
	}
	s, _ := getS(it, aPayload)
	data, err := b.getPayload(ctx, s)
	if err != nil {
		return core.ResponseWithCursor{}, err
	}
	var r core.ResponseWithCursor
	if err := json.Unmarshal(data, &r.Event); err != nil {
		return core.ResponseWithCursor{}, fmt.Errorf("dynamo: decode response %s: %w", sk, err)
	}
	r.Cursor = core.ResponseCursor(c)
	return r, nil
}

// JoinNextCount counts the JoinNext events of js, buffered ones included.
func (t *tx) JoinNextCount(id core.ExecutionId, js core.JoinSetId) (uint32, error) {
	ex, err := t.loadExisting(id)
	if err != nil {
		return 0, err
	}
	return t.joinNextCount(ex, js.String())
}

func (t *tx) joinNextCount(ex *execTx, js string) (uint32, error) {
	for i := len(ex.events) - 1; i >= 0; i-- {
		if ex.events[i].js == js {
			return ex.events[i].ord, nil
		}
	}
	if ex.head == nil {
		return 0, nil
	}
	if n, ok := ex.jnCount[js]; ok {
		return n, nil
	}
	n, err := t.b.persistedJoinNexts(t.ctx, ex.head, js)
	if err != nil {
		return 0, err
	}
	ex.jnCount[js] = n
	return n, nil
}

// persistedJoinNexts returns the ordinal of the last committed JoinNext of js:
// the newest inline one, else the counter item J#<js> written when JoinNexts
// of js moved to event pages.
func (b *Backend) persistedJoinNexts(ctx context.Context, h *headRec, js string) (uint32, error) {
	for i := len(h.inline) - 1; i >= 0; i-- {
		if h.inline[i].js == js {
			return h.inline[i].ord, nil
		}
	}
	if h.ib <= 1 {
		return 0, nil // nothing was ever moved out of the head
	}
	id := h.st.ExecutionID
	out, err := b.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: b.tableName(), ConsistentRead: aws.Bool(true),
		Key: keyOf(pkExec(id), prefixJoinNext+js)}, b.optFns...)
	if err != nil {
		return 0, fmt.Errorf("dynamo: JoinNext counter %s of %s: %w", js, id, err)
	}
	n, _, err := getN(out.Item, aCount)
	return uint32(n), err
}

// lastOrdinal queries IndexOrdinals for the highest ordinal of kind/js
// (responses: "R#<js>#<ordinal>").
func (b *Backend) lastOrdinal(ctx context.Context, id core.ExecutionId, kind, js string) (uint32, error) {
	out, err := b.api.Query(ctx, &dynamodb.QueryInput{
		TableName:                 b.tableName(),
		IndexName:                 aws.String(IndexOrdinals),
		ConsistentRead:            aws.Bool(true),
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(1),
		KeyConditionExpression:    aws.String("#pk = :pk AND begins_with(#o, :pre)"),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK, "#o": AttrOrdinal},
		ExpressionAttributeValues: item{":pk": avS(pkExec(id)), ":pre": avS(kind + js + "#")},
	}, b.optFns...)
	if err != nil {
		return 0, fmt.Errorf("dynamo: ordinals %s%s of %s: %w", kind, js, id, err)
	}
	if len(out.Items) == 0 {
		return 0, nil
	}
	o, _ := getS(out.Items[0], AttrOrdinal)
	return parseOrdinal(o)
}

// responseCount is the number of responses of js, buffered ones included.
func (t *tx) responseCount(ex *execTx, js string) (uint32, error) {
	for i := len(ex.responses) - 1; i >= 0; i-- {
		if ex.responses[i].js == js {
			return ex.responses[i].ord, nil
		}
	}
	if ex.head == nil {
		return 0, nil
	}
	if n, ok := ex.rsCount[js]; ok {
		return n, nil
	}
	n, err := t.b.lastOrdinal(t.ctx, ex.id, ordinalResponse, js)
	if err != nil {
		return 0, err
	}
	ex.rsCount[js] = n
	return n, nil
}

// NthResponse returns the n-th (1-based) response of js in cursor order.
func (t *tx) NthResponse(id core.ExecutionId, js core.JoinSetId, n uint32) (core.ResponseWithCursor, bool, error) {
	ex, err := t.loadExisting(id)
	if err != nil {
		return core.ResponseWithCursor{}, false, err
	}
	// The inbox is read before the responses: a commit that blocks on js
	// is conditional on its registrations as read here (inbox.go).
	if t.write {
		if _, err := t.inbox(ex); err != nil {
			return core.ResponseWithCursor{}, false, err
		}
	}
	jss := js.String()
	if ex.head != nil {
		r, ok, err := t.b.nthResponse(t.ctx, ex.head, jss, n)
		if err != nil || ok {
			return r, ok, err
		}
	}
	for _, nr := range ex.responses {
		if nr.js == jss && nr.ord == n {
			return nr.r, true, nil
		}
	}
	return core.ResponseWithCursor{}, false, nil
}

func (b *Backend) nthResponse(ctx context.Context, h *headRec, js string, n uint32) (core.ResponseWithCursor, bool, error) {
	if h.st.MaxCursor == 0 {
		return core.ResponseWithCursor{}, false, nil
	}
	id := h.st.ExecutionID
	out, err := b.api.Query(ctx, &dynamodb.QueryInput{
		TableName:                 b.tableName(),
		IndexName:                 aws.String(IndexOrdinals),
		ConsistentRead:            aws.Bool(true),
		KeyConditionExpression:    aws.String("#pk = :pk AND #o = :o"),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK, "#o": AttrOrdinal},
		ExpressionAttributeValues: item{":pk": avS(pkExec(id)), ":o": avS(ordinalKey(ordinalResponse, js, n))},
	}, b.optFns...)
	if err != nil {
		return core.ResponseWithCursor{}, false, fmt.Errorf("dynamo: response %d of %s in %s: %w", n, js, id, err)
	}
	if len(out.Items) == 0 {
		return core.ResponseWithCursor{}, false, nil
	}
	r, err := b.decodeResponse(ctx, out.Items[0])
	if err != nil {
		return core.ResponseWithCursor{}, false, err
	}
	if r.Cursor > h.st.MaxCursor {
		return core.ResponseWithCursor{}, false, nil
	}
	return r, true, nil
}

// DelayOutcome returns the recorded result of a delay's response.
func (t *tx) DelayOutcome(delay core.DelayId) (bool, bool, error) {
	g, err := t.loadGuard(prefixGuardDelay + delay.String())
	if err != nil {
		return false, false, err
	}
	switch {
	case g.write != nil:
		return g.write.success, true, nil
	case g.existing != nil:
		return g.existing.success, true, nil
	}
	return false, false, nil
}

func (t *tx) loadGuard(pk string) (*guardTx, error) {
	g := t.guard(pk)
	if g.loaded || g.write != nil {
		return g, nil
	}
	out, err := t.b.api.GetItem(t.ctx, &dynamodb.GetItemInput{
		TableName: t.b.tableName(), ConsistentRead: aws.Bool(true),
		Key: item{AttrPK: avS(pk), AttrSK: avS(skGuard)},
	}, t.b.optFns...)
	if err != nil {
		return nil, fmt.Errorf("dynamo: read guard %s: %w", pk, err)
	}
	g.loaded = true
	if out.Item != nil {
		gr := &guardRec{success: getBool(out.Item, "ok")}
		g.existing = gr
	}
	return g, nil
}

// Delay returns the timer row, if it still exists.
func (t *tx) Delay(id core.ExecutionId, js core.JoinSetId, delay core.DelayId) (core.DelayTimer, bool, error) {
	d, err := t.loadDelay(id, js, delay)
	if err != nil {
		return core.DelayTimer{}, false, err
	}
	if d.final == nil {
		return core.DelayTimer{}, false, nil
	}
	return *d.final, true, nil
}

func (t *tx) delay(ex *execTx, js core.JoinSetId, delay core.DelayId) *delayTx {
	sk := skDelay(js, delay)
	d, ok := ex.delays[sk]
	if !ok {
		d = &delayTx{js: js, id: delay}
		ex.delays[sk] = d
		ex.dorder = append(ex.dorder, d)
	}
	return d
}

// loadDelay makes the final state of the timer row known (reading it once);
// the owner's head is read too, so the row is guarded by its revision.
func (t *tx) loadDelay(id core.ExecutionId, js core.JoinSetId, delay core.DelayId) (*delayTx, error) {
	ex := t.exec(id)
	if err := t.load(ex); err != nil {
		return nil, err
	}
	d := t.delay(ex, js, delay)
	if d.known {
		return d, nil
	}
	if ex.head == nil {
		d.known, d.initialKnown = true, true
		return d, nil
	}
	out, err := t.b.api.GetItem(t.ctx, &dynamodb.GetItemInput{
		TableName: t.b.tableName(), ConsistentRead: aws.Bool(true),
		Key: item{AttrPK: avS(pkExec(id)), AttrSK: avS(skDelay(js, delay))},
	}, t.b.optFns...)
	if err != nil {
		return nil, fmt.Errorf("dynamo: read delay %s: %w", delay, err)
	}
	d.known, d.initialKnown = true, true
	if out.Item != nil {
		dt, err := decodeDelay(out.Item)
		if err != nil {
			return nil, err
		}
		d.initial = &dt
		c := dt
		d.final = &c
	}
	return d, nil
}

// --- Tx -----------------------------------------------------------------------------

// CreateHead inserts a new execution with its first events.
func (t *tx) CreateHead(st core.ExecutionState, events []core.ExecutionEvent) error {
	if err := t.mustWrite(); err != nil {
		return err
	}
	ex := t.exec(st.ExecutionID)
	if ex.createSt != nil || ex.head != nil {
		return conflict("execution %s already exists", st.ExecutionID)
	}
	if len(events) == 0 || events[0].Version != 0 {
		return fmt.Errorf("dynamo: create %s: the first event must be version 0", st.ExecutionID)
	}
	c := cloneState(st)
	ex.createSt = &c
	ex.createEvents = slices.Clone(events)
	t.countChild(st.ExecutionID)
	return nil
}

// PutHead replaces the state of an execution read in this transaction.
func (t *tx) PutHead(st core.ExecutionState) error {
	if err := t.mustWrite(); err != nil {
		return err
	}
	ex := t.exec(st.ExecutionID)
	c := cloneState(st)
	if ex.createSt != nil {
		ex.createSt = &c
		return nil
	}
	if err := t.load(ex); err != nil {
		return err
	}
	if ex.head == nil {
		return notFound("execution " + st.ExecutionID.String())
	}
	ex.state = &c
	return nil
}

// AppendEvents buffers new events; each version must be new.
func (t *tx) AppendEvents(id core.ExecutionId, events []core.ExecutionEvent) error {
	if err := t.mustWrite(); err != nil {
		return err
	}
	ex, err := t.loadExisting(id)
	if err != nil {
		return err
	}
	for _, ev := range events {
		if int64(ev.Version) <= ex.lastVersion() {
			return conflict("event %s@%d already exists", id, ev.Version)
		}
		ne := newEvent{ev: ev}
		if h, ok := ev.Event.(*core.HistoryEventRequest); ok {
			if jn, ok := h.Event.(*core.JoinNext); ok {
				ne.js = jn.JoinSetID.String()
				n, err := t.joinNextCount(ex, ne.js)
				if err != nil {
					return err
				}
				ne.ord = n + 1
			}
		}
		if ex.createSt != nil {
			ex.createEvents = append(ex.createEvents, ev)
			continue
		}
		ex.events = append(ex.events, ne)
	}
	return nil
}

// AddResponse buffers a response and its uniqueness guard.
func (t *tx) AddResponse(id core.ExecutionId, resp core.ResponseWithCursor) error {
	if err := t.mustWrite(); err != nil {
		return err
	}
	ex, err := t.loadExisting(id)
	if err != nil {
		return err
	}
	if ex.head == nil {
		return fmt.Errorf("dynamo: response to %s in the transaction that creates it is not supported", id)
	}
	if resp.Cursor <= ex.head.st.MaxCursor {
		return conflict("response %s#%d already exists", id, resp.Cursor)
	}
	for _, nr := range ex.responses {
		if nr.r.Cursor == resp.Cursor {
			return conflict("response %s#%d already exists", id, resp.Cursor)
		}
	}
	var gpk string
	gr := &guardRec{to: id, cursor: resp.Cursor}
	switch ev := resp.Event.Event.Event.(type) {
	case *core.ChildExecutionFinished:
		gpk = prefixGuardChild + ev.ChildExecutionID.String()
		if err := t.claimChild(ex, ev.ChildExecutionID.ExecutionId); err != nil {
			return err
		}
	case *core.DelayFinished:
		gpk = prefixGuardDelay + ev.DelayID.String()
		gr.success = bool(ev.Result)
	default:
		return fmt.Errorf("dynamo: unsupported response %T", ev)
	}
	g := t.guard(gpk)
	if g.write != nil || g.existing != nil {
		return conflict("a response for %s already exists", gpk[len("G#X#"):])
	}
	js := resp.Event.Event.JoinSetID.String()
	n, err := t.responseCount(ex, js)
	if err != nil {
		return err
	}
	g.write = gr
	ex.responses = append(ex.responses, newResponse{r: resp, js: js, ord: n + 1})
	if cf, ok := resp.Event.Event.Event.(*core.ChildExecutionFinished); ok {
		ex.markApplied(cf.ChildExecutionID.ExecutionId)
	}
	return nil
}

// PutDelay buffers a new timer row.
func (t *tx) PutDelay(d core.DelayTimer) error {
	if err := t.mustWrite(); err != nil {
		return err
	}
	ex, err := t.loadExisting(d.ExecutionID)
	if err != nil {
		return err
	}
	dt := t.delay(ex, d.JoinSetID, d.DelayID)
	if dt.known && dt.final != nil {
		return conflict("delay %s already exists", d.DelayID)
	}
	if !dt.initialKnown {
		dt.mustBeNew = true
	}
	c := d
	dt.final, dt.known, dt.dirty = &c, true, true
	return nil
}

// DeleteDelay buffers the removal of a timer row.
func (t *tx) DeleteDelay(id core.ExecutionId, js core.JoinSetId, delay core.DelayId) error {
	if err := t.mustWrite(); err != nil {
		return err
	}
	ex := t.exec(id)
	if err := t.load(ex); err != nil {
		return err
	}
	dt := t.delay(ex, js, delay)
	dt.final, dt.known, dt.dirty = nil, true, true
	return nil
}

// SetDelayPaused flips a timer's paused flag.
func (t *tx) SetDelayPaused(id core.ExecutionId, js core.JoinSetId, delay core.DelayId, paused bool) error {
	if err := t.mustWrite(); err != nil {
		return err
	}
	dt, err := t.loadDelay(id, js, delay)
	if err != nil {
		return err
	}
	if dt.final == nil {
		return notFound("delay " + delay.String())
	}
	c := *dt.final
	c.Paused = paused
	dt.final, dt.dirty = &c, true
	return nil
}

// --- reading heads ------------------------------------------------------------------

// readHead reads a head strongly consistently; nil when absent. With
// finish set, a pending child fan-out of this execution (or, for a missing
// derived execution, of its parent) is materialised first.
func (b *Backend) readHead(ctx context.Context, id core.ExecutionId, finish bool) (*headRec, error) {
	for range 3 {
		h, err := b.getHead(ctx, id)
		if err != nil || !finish {
			return h, err
		}
		switch {
		case h != nil && h.ob != "":
			if err := b.finishOutbox(ctx, id, h.ob); err != nil {
				return nil, err
			}
			continue
		case h == nil:
			parent, _, ok := id.SplitToParts()
			if !ok {
				return nil, nil
			}
			ph, err := b.getHead(ctx, parent)
			if err != nil {
				return nil, err
			}
			if ph == nil || ph.ob == "" {
				return nil, nil
			}
			if err := b.finishOutbox(ctx, parent, ph.ob); err != nil {
				return nil, err
			}
			finish = false
			continue
		}
		return h, nil
	}
	return nil, fmt.Errorf("dynamo: head %s keeps changing while finishing its fan-out", id)
}

func (b *Backend) getHead(ctx context.Context, id core.ExecutionId) (*headRec, error) {
	out, err := b.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: b.tableName(), ConsistentRead: aws.Bool(true),
		Key: item{AttrPK: avS(pkExec(id)), AttrSK: avS(skHead)},
	}, b.optFns...)
	if err != nil {
		return nil, fmt.Errorf("dynamo: read head %s: %w", id, err)
	}
	if out.Item == nil || b.expiredItem(out.Item) {
		return nil, nil // an expired head is gone for readers (retention.go)
	}
	return decodeHead(out.Item)
}

// queryAll pages through a query, calling fn per item until it returns false.
func (b *Backend) queryAll(ctx context.Context, in *dynamodb.QueryInput, fn func(item) (bool, error)) error {
	for {
		out, err := b.api.Query(ctx, in, b.optFns...)
		if err != nil {
			return err
		}
		for _, it := range out.Items {
			more, err := fn(it)
			if err != nil || !more {
				return err
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}
