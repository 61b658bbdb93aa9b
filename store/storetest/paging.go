package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
)

// Paging: list_executions walked page by page must return every execution
// exactly once and in the documented order (core/listing.go,
// docs/http-api.md "Paging executions"), for both cursor kinds, both
// directions and page sizes that do not divide the population, over
// executions created in bursts that share one created_at and whose ids do
// not sort like their creation times.

func pagingTests() []contractTest {
	return []contractTest{
		{"P01_BurstsPageExactlyOnceInOrder", pagingBursts},
		{"P02_BareCreatedAtCursorComparesCreatedAtOnly", pagingBareCursor},
		{"P03_TieBreakNeedsACreatedAtCursor", pagingTieBreakValidation},
		{"P04_SixHundredInOneMillisecond", pagingOneMillisecond},
	}
}

// pagedExec is what the test knows about a created execution.
type pagedExec struct {
	id core.ExecutionId
	at core.Timestamp
}

// byCreatedThenID and byIDOnly are the two documented orders, ascending,
// written here independently of core.
func byCreatedThenID(a, b pagedExec) int {
	if c := a.at.Compare(b.at); c != 0 {
		return c
	}
	return strings.Compare(a.id.String(), b.id.String())
}

func byIDOnly(a, b pagedExec) int { return strings.Compare(a.id.String(), b.id.String()) }

// pagingPopulation creates at least n executions in bursts and returns them.
// A burst is either up to 60 top-level executions or a parent with up to 40
// children (one AppendBatchCreateNewExecution), all with the same created_at;
// between bursts the clock stays (so bursts merge), moves 1 ms or 1 s. Top-level
// ids take their ULID time from the clock (same millisecond, random order) or
// from anywhere in ±1 day (ids chosen by a client). The seed is fixed.
func (h *harness) pagingPopulation(n int) []pagedExec {
	h.t.Helper()
	rng := rand.New(rand.NewPCG(10, 2))
	entropy := rand.NewChaCha8([32]byte{10, 2})
	h.clock.Set(t0.Add(24 * time.Hour))
	var all []pagedExec
	newTop := func() core.ExecutionId {
		ms := uint64(h.now().Time.UnixMilli())
		if rng.IntN(3) == 0 {
			ms = ms - uint64(24*time.Hour/time.Millisecond) + rng.Uint64N(uint64(48*time.Hour/time.Millisecond))
		}
		id, err := core.NewExecutionId(ms, entropy)
		h.wantNoErr("execution id", err)
		return id
	}
	for len(all) < n {
		at := h.now()
		if rng.IntN(2) == 0 {
			for range 1 + rng.IntN(60) {
				id := newTop()
				h.createWithID(id)
				all = append(all, pagedExec{id, at})
			}
		} else {
			p := newTop()
			h.createWithID(p, withComp(compWF))
			all = append(all, pagedExec{p, at})
			js := mustJS(fmt.Sprintf("g:%d", 1+rng.IntN(3)))
			batch := []core.ExecutionRequest{jsc(js)}
			var children []core.CreateRequest
			c := p.NextLevel(js)
			for range 1 + rng.IntN(40) {
				batch = append(batch, creqTo(js, c, ffqnChild))
				children = append(children, h.createReq(c, withFFQN(ffqnChild), withParent(p, js)))
				all = append(all, pagedExec{c, at})
				c = c.Incremented()
			}
			h.submit(p, 1, batch, children...)
		}
		switch rng.IntN(3) {
		case 1:
			h.advance(time.Millisecond)
		case 2:
			h.advance(time.Second)
		}
	}
	return all
}

// cursorKind builds the pagination of a walk from the row the next page
// continues after (nil for the first page).
type cursorKind struct {
	name  string
	order func(a, b pagedExec) int
	page  func(dir core.Direction, length uint16, incl bool, after *core.ExecutionWithState) core.ExecutionListPagination
}

var cursorKinds = []cursorKind{
	{"CreatedAtAndID", byCreatedThenID, func(dir core.Direction, length uint16, incl bool, after *core.ExecutionWithState) core.ExecutionListPagination {
		p := byCreated(dir, length, nil, incl)
		if after != nil {
			at, id := after.CreatedAt, after.ExecutionID
			p.CreatedBy.Cursor, p.CreatedByID = &at, &id
		}
		return p
	}},
	{"ExecutionID", byIDOnly, func(dir core.Direction, length uint16, incl bool, after *core.ExecutionWithState) core.ExecutionListPagination {
		var cur *core.ExecutionId
		if after != nil {
			id := after.ExecutionID
			cur = &id
		}
		return byID(dir, length, cur, incl)
	}},
}

// walk pages through list_executions with filter and returns the rows in
// scan order (descending for OlderThan, ascending for NewerThan). Every page
// must be newest first in k's order and at most length long; with incl every
// page after the first must start at the cursor row, which is dropped.
func (h *harness) walk(filter core.ListExecutionsFilter, k cursorKind, known map[core.ExecutionId]pagedExec, dir core.Direction, length uint16, incl bool, limit int) []core.ExecutionId {
	h.t.Helper()
	var seen []core.ExecutionId
	var after *core.ExecutionWithState
	for pages := 0; ; pages++ {
		if pages > limit {
			h.t.Fatalf("%s %s length %d: no empty page after %d pages (%d rows seen)", k.name, dirName(dir), length, pages, len(seen))
		}
		page := h.listExecutions(filter, k.page(dir, length, incl, after))
		if len(page) > int(length) {
			h.t.Fatalf("%s: page of %d rows, length %d", k.name, len(page), length)
		}
		for i := 1; i < len(page); i++ {
			a, b := known[page[i-1].ExecutionID], known[page[i].ExecutionID]
			if k.order(a, b) <= 0 {
				h.t.Fatalf("%s %s length %d page %d: not newest first: %s (%s) before %s (%s)", k.name, dirName(dir), length, pages,
					a.id, a.at, b.id, b.at)
			}
		}
		if incl && after != nil {
			// The cursor row is the newest row of an OlderThan page, the oldest of a NewerThan page.
			at := 0
			if dir == core.NewerThan {
				at = len(page) - 1
			}
			if len(page) == 0 || page[at].ExecutionID != after.ExecutionID {
				h.t.Fatalf("%s %s including_cursor page %d does not start at the cursor row %s", k.name, dirName(dir), pages, after.ExecutionID)
			}
			page = slices.Delete(page, at, at+1)
		}
		if len(page) == 0 {
			return seen
		}
		if dir == core.OlderThan {
			for i := range page {
				seen = append(seen, page[i].ExecutionID)
			}
			after = &page[len(page)-1]
		} else {
			for i := len(page) - 1; i >= 0; i-- {
				seen = append(seen, page[i].ExecutionID)
			}
			after = &page[0]
		}
	}
}

// wantExactlyOnce compares a walk with the expected scan order.
func (h *harness) wantExactlyOnce(what string, got []core.ExecutionId, want []pagedExec) {
	h.t.Helper()
	ids := make([]core.ExecutionId, len(want))
	for i, e := range want {
		ids[i] = e.id
	}
	if err := ExactlyOnceInOrder(got, ids); err != nil {
		h.t.Fatalf("%s: %v", what, err)
	}
}

// ExactlyOnceInOrder reports how the rows of a paged walk (got) differ from
// the expected rows (want): how many are repeated and missing, else the
// first row out of order. Route tests of the listing use it too.
func ExactlyOnceInOrder(got, want []core.ExecutionId) error {
	count := map[core.ExecutionId]int{}
	for _, id := range got {
		count[id]++
	}
	dups, missing := 0, 0
	for _, id := range got {
		if count[id] > 1 {
			dups++
		}
	}
	for _, id := range want {
		if count[id] == 0 {
			missing++
		}
	}
	if dups > 0 || missing > 0 || len(got) != len(want) {
		return fmt.Errorf("%d rows for %d executions: %d repeated, %d missing", len(got), len(want), dups, missing)
	}
	for i := range want {
		if got[i] != want[i] {
			return fmt.Errorf("row %d is %s, want %s (every row once, but out of order)", i, got[i], want[i])
		}
	}
	return nil
}

func pagingBursts(h *harness) {
	all := h.pagingPopulation(h.opts.scaled(1500, 1000))
	known := map[core.ExecutionId]pagedExec{}
	var top []pagedExec
	for _, e := range all {
		known[e.id] = e
		if e.id.IsTopLevel() {
			top = append(top, e)
		}
	}
	derived := core.ListExecutionsFilter{ShowDerived: true}
	for _, k := range cursorKinds {
		asc := slices.SortedFunc(slices.Values(all), k.order)
		desc := slices.Clone(asc)
		slices.Reverse(desc)
		topAsc := slices.SortedFunc(slices.Values(top), k.order)
		for _, w := range []struct {
			filter core.ListExecutionsFilter
			dir    core.Direction
			length uint16
			incl   bool
			want   []pagedExec
		}{
			{derived, core.OlderThan, 37, false, desc},
			{derived, core.NewerThan, 37, false, asc},
			{derived, core.OlderThan, 100, false, desc},
			{derived, core.NewerThan, 100, false, asc},
			{derived, core.OlderThan, 37, true, desc},
			{derived, core.NewerThan, 37, true, asc},
			{core.ListExecutionsFilter{}, core.NewerThan, 37, false, topAsc},
		} {
			name := fmt.Sprintf("%s/%s/length=%d", k.name, dirName(w.dir), w.length)
			if w.incl {
				name += "/including_cursor"
			}
			if !w.filter.ShowDerived {
				name += "/top-level"
			}
			h.t.Run(name, func(t *testing.T) {
				h := h.with(t)
				limit := len(w.want)/(int(w.length)-1) + 3
				h.wantExactlyOnce(name, h.walk(w.filter, k, known, w.dir, w.length, w.incl, limit), w.want)
			})
		}
	}
}

func dirName(d core.Direction) string {
	if d == core.OlderThan {
		return "older"
	}
	return "newer"
}

// pagingBareCursor: a created_at cursor without the tie-break compares
// created_at alone (Obelisk's meaning), so it takes or skips a whole group of
// executions created at the same instant; the tie-break splits the group.
func pagingBareCursor(h *harness) {
	group := func(n int) []core.ExecutionId {
		ids := make([]core.ExecutionId, n)
		for i := range ids {
			ids[i] = h.create()
		}
		slices.SortFunc(ids, core.ExecutionId.Compare)
		h.advance(time.Millisecond)
		return ids
	}
	t1 := h.now()
	g1 := group(3)
	t2 := h.now()
	g2 := group(5)
	g3 := group(3)
	all := core.ListExecutionsFilter{}
	desc := func(ids ...core.ExecutionId) []core.ExecutionId {
		out := slices.Clone(ids)
		slices.Reverse(out)
		return out
	}
	h.wantIDs("OlderThan{t2, excl}", idsOf(h.listExecutions(all, byCreated(core.OlderThan, 100, &t2, false))), desc(g1...)...)
	h.wantIDs("OlderThan{t2, incl, 2}", idsOf(h.listExecutions(all, byCreated(core.OlderThan, 2, &t2, true))), g2[4], g2[3])
	h.wantIDs("NewerThan{t2, excl}", idsOf(h.listExecutions(all, byCreated(core.NewerThan, 100, &t2, false))), desc(g3...)...)
	h.wantIDs("NewerThan{t2, incl, 2}", idsOf(h.listExecutions(all, byCreated(core.NewerThan, 2, &t2, true))), g2[1], g2[0])
	h.wantIDs("NewerThan{t1, excl, 2}", idsOf(h.listExecutions(all, byCreated(core.NewerThan, 2, &t1, false))), g2[1], g2[0])

	tie := func(dir core.Direction, length uint16, incl bool, id core.ExecutionId) core.ExecutionListPagination {
		p := byCreated(dir, length, &t2, incl)
		p.CreatedByID = &id
		return p
	}
	h.wantIDs("OlderThan{(t2, g2[2]), excl, 4}", idsOf(h.listExecutions(all, tie(core.OlderThan, 4, false, g2[2]))), g2[1], g2[0], g1[2], g1[1])
	h.wantIDs("OlderThan{(t2, g2[2]), incl, 2}", idsOf(h.listExecutions(all, tie(core.OlderThan, 2, true, g2[2]))), g2[2], g2[1])
	h.wantIDs("NewerThan{(t2, g2[2]), excl, 3}", idsOf(h.listExecutions(all, tie(core.NewerThan, 3, false, g2[2]))), g3[0], g2[4], g2[3])
	h.wantIDs("NewerThan{(t2, g2[2]), incl, 1}", idsOf(h.listExecutions(all, tie(core.NewerThan, 1, true, g2[2]))), g2[2])
}

func pagingTieBreakValidation(h *harness) {
	id := h.create()
	now := h.now()
	for _, p := range []core.ExecutionListPagination{
		{CreatedBy: &core.Pagination[*core.Timestamp]{Direction: core.OlderThan, Length: 10}, CreatedByID: &id},
		{ExecutionID: &core.Pagination[*core.ExecutionId]{Direction: core.OlderThan, Length: 10, Cursor: &id}, CreatedByID: &id},
	} {
		_, err := h.db.ListExecutions(h.ctx, core.ListExecutionsFilter{}, p)
		var verr *core.ValidationError
		if !errors.As(err, &verr) {
			h.t.Fatalf("list_executions with a tie-break and no created_at cursor: %v, want a validation error", err)
		}
	}
	h.wantIDs("tie-break with a created_at cursor", idsOf(h.listExecutions(core.ListExecutionsFilter{},
		core.ExecutionListPagination{CreatedBy: &core.Pagination[*core.Timestamp]{Direction: core.OlderThan, Length: 10, Cursor: &now, IncludingCursor: true}, CreatedByID: &id})), id)
}

// pagingOneMillisecond (issue 20 item 9): 600 top-level executions whose ids
// share one millisecond (so they sort at random) and whose created_at
// advance by a microsecond each: every walk — each cursor kind, both
// directions — sees each exactly once in its own order. These are the rows a
// client walking by created_at then by id used to lose and repeat.
func pagingOneMillisecond(h *harness) {
	entropy := rand.NewChaCha8([32]byte{20, 9})
	h.clock.Set(t0.Add(48 * time.Hour))
	ms := uint64(h.now().Time.UnixMilli())
	var all []pagedExec
	known := map[core.ExecutionId]pagedExec{}
	for range 600 {
		id, err := core.NewExecutionId(ms, entropy)
		h.wantNoErr("execution id", err)
		h.createWithID(id)
		e := pagedExec{id, h.now()}
		all, known[id] = append(all, e), e
		h.advance(time.Microsecond)
	}
	for _, k := range cursorKinds {
		asc := slices.SortedFunc(slices.Values(all), k.order)
		desc := slices.Clone(asc)
		slices.Reverse(desc)
		for _, w := range []struct {
			dir  core.Direction
			want []pagedExec
		}{{core.OlderThan, desc}, {core.NewerThan, asc}} {
			h.t.Run(k.name+"/"+dirName(w.dir), func(t *testing.T) {
				h := h.with(t)
				h.wantExactlyOnce(k.name, h.walk(core.ListExecutionsFilter{}, k, known, w.dir, 100, false, 10), w.want)
			})
		}
	}
}
