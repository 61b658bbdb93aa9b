package sqlite_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
)

func idStrings(ids []core.ExecutionId) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id.String()
	}
	return out
}

func headIDs(hs []core.ExecutionState) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.ExecutionID.String()
	}
	return out
}

func TestPendingQueries(t *testing.T) {
	ctx := context.Background()
	b := MustOpen(t)
	at := func(s int) core.Timestamp { return t0.Add(time.Duration(s) * time.Second) }
	p1 := pendingHead(newID(), ffqnA, t0, at(5))
	p2 := pendingHead(newID(), ffqnA, t0, at(1))
	p3 := pendingHead(newID(), ffqnA, t0, at(5)) // ties with p1, created later
	p4 := pendingHead(newID(), ffqnA, t0, at(3))
	p4.IncompatibleDigest = &digB
	future := pendingHead(newID(), ffqnA, t0, at(60))
	paused := pendingHead(newID(), ffqnA, t0, at(0))
	paused.Lifecycle = core.LifecyclePaused
	cancelling := pendingHead(newID(), ffqnA, t0, at(0))
	cancelling.Lifecycle = core.LifecycleCancelling
	other := pendingHead(newID(), ffqnB, t0, at(0))
	other.ComponentDigest = digB
	lb := lockedBy(1)
	locked := pendingHead(newID(), ffqnA, t0, at(0))
	locked.State, locked.LastLock, locked.LastLockVersion = core.StateLocked, &lb, ver(1)
	MustCreate(t, b, p1, p2, p3, p4, future, paused, cancelling, other, locked)
	now := at(10)

	t.Run("PendingByFFQNOrdersByScheduledAtThenCreation", func(t *testing.T) {
		got, err := b.PendingByFFQN(ctx, ffqnA, now, 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := idStrings([]core.ExecutionId{p2.ExecutionID, p4.ExecutionID, p1.ExecutionID, p3.ExecutionID})
		if !slices.Equal(idStrings(got), want) {
			t.Errorf("got %v, want %v", idStrings(got), want)
		}
	})
	t.Run("PendingByFFQNHonoursLimitAndBound", func(t *testing.T) {
		got, _ := b.PendingByFFQN(ctx, ffqnA, at(3), 10, nil)
		if want := idStrings([]core.ExecutionId{p2.ExecutionID, p4.ExecutionID}); !slices.Equal(idStrings(got), want) {
			t.Errorf("at <= 3s: got %v, want %v", idStrings(got), want)
		}
		got, _ = b.PendingByFFQN(ctx, ffqnA, now, 1, nil)
		if len(got) != 1 || got[0] != p2.ExecutionID {
			t.Errorf("limit 1: got %v", idStrings(got))
		}
	})
	t.Run("PendingByFFQNSkipsIncompatibleDigest", func(t *testing.T) {
		got, _ := b.PendingByFFQN(ctx, ffqnA, now, 10, &digB)
		want := idStrings([]core.ExecutionId{p2.ExecutionID, p1.ExecutionID, p3.ExecutionID})
		if !slices.Equal(idStrings(got), want) {
			t.Errorf("got %v, want %v", idStrings(got), want)
		}
		got, _ = b.PendingByFFQN(ctx, ffqnA, now, 10, &digA)
		if len(got) != 4 {
			t.Errorf("skipping another digest dropped executions: %v", idStrings(got))
		}
	})
	t.Run("PendingByDigest", func(t *testing.T) {
		got, _ := b.PendingByDigest(ctx, digB, now, 10)
		if want := []string{other.ExecutionID.String()}; !slices.Equal(idStrings(got), want) {
			t.Errorf("got %v, want %v", idStrings(got), want)
		}
		got, _ = b.PendingByDigest(ctx, digA, now, 2)
		if want := idStrings([]core.ExecutionId{p2.ExecutionID, p4.ExecutionID}); !slices.Equal(idStrings(got), want) {
			t.Errorf("got %v, want %v", idStrings(got), want)
		}
	})
	t.Run("ExpiredLocksAnyLifecycle", func(t *testing.T) {
		cl := pendingHead(newID(), ffqnA, t0, at(2))
		cl.State, cl.Lifecycle, cl.LastLock, cl.LastLockVersion = core.StateLocked, core.LifecycleCancelling, &lb, ver(1)
		late := pendingHead(newID(), ffqnA, t0, at(20))
		late.State, late.LastLock, late.LastLockVersion = core.StateLocked, &lb, ver(1)
		MustCreate(t, b, cl, late)
		got, err := b.ExpiredLocks(ctx, at(2))
		if err != nil {
			t.Fatal(err)
		}
		if want := idStrings([]core.ExecutionId{locked.ExecutionID, cl.ExecutionID}); !slices.Equal(headIDs(got), want) {
			t.Errorf("got %v, want %v", headIDs(got), want)
		}
		if len(got) > 0 && !reflect.DeepEqual(got[0], locked) {
			t.Errorf("expired lock head = %+v, want %+v", got[0], locked)
		}
	})
	t.Run("CancellingByCreatedAt", func(t *testing.T) {
		b := MustOpen(t)
		var hs []core.ExecutionState
		for _, s := range []int{3, 1, 3, 2} {
			h := pendingHead(newID(), ffqnA, at(s), at(s))
			h.Lifecycle = core.LifecycleCancelling
			hs = append(hs, h)
		}
		MustCreate(t, b, append(hs, pendingHead(newID(), ffqnA, at(0), at(0)))...)
		got, _ := b.Cancelling(ctx, 3)
		want := idStrings([]core.ExecutionId{hs[1].ExecutionID, hs[3].ExecutionID, hs[0].ExecutionID})
		if !slices.Equal(idStrings(got), want) {
			t.Errorf("got %v, want %v", idStrings(got), want)
		}
	})
}

func TestExpiredDelays(t *testing.T) {
	ctx := context.Background()
	b := MustOpen(t)
	h := pendingHead(newID(), ffqnA, t0, t0)
	MustCreate(t, b, h)
	js := mustJS("o:sleep")
	mk := func(i uint64, s int, paused bool) core.DelayTimer {
		return core.DelayTimer{ExecutionID: h.ExecutionID, JoinSetID: js, DelayID: core.NewDelayId(h.ExecutionID, js, i),
			ExpiresAt: t0.Add(time.Duration(s) * time.Second), Paused: paused}
	}
	due2, due1, pausedDue, later, toPause := mk(1, 2, false), mk(2, 1, false), mk(3, 0, true), mk(4, 10, false), mk(5, 0, false)
	if err := b.Update(ctx, func(tx store.Tx) error {
		for _, d := range []core.DelayTimer{due2, due1, pausedDue, later, toPause} {
			if err := tx.PutDelay(d); err != nil {
				return err
			}
		}
		return tx.SetDelayPaused(h.ExecutionID, js, toPause.DelayID, true)
	}); err != nil {
		t.Fatal(err)
	}
	got, err := b.ExpiredDelays(ctx, t0.Add(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	want := []core.ExpiredDelay{
		{ExecutionID: h.ExecutionID, JoinSetID: js, DelayID: due1.DelayID, ExpiresAt: due1.ExpiresAt},
		{ExecutionID: h.ExecutionID, JoinSetID: js, DelayID: due2.DelayID, ExpiresAt: due2.ExpiresAt},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if err := b.Update(ctx, func(tx store.Tx) error {
		return tx.SetDelayPaused(h.ExecutionID, js, toPause.DelayID, false)
	}); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.ExpiredDelays(ctx, t0); len(got) != 1 || got[0].DelayID != toPause.DelayID {
		t.Errorf("after unpausing: %+v", got)
	}
}

// TestListExecutions compares ListExecutions with a reference built from
// core.ListExecutionsFilter.Matches over a varied population, for many
// filters and pages.
func TestListExecutions(t *testing.T) {
	ctx := context.Background()
	b := MustOpen(t)
	rng := rand.New(rand.NewPCG(1, 2))
	ffqns := []core.FunctionFqn{ffqnA, ffqnB, mustFFQN("ns:pkg/ifc.ab"), mustFFQN("ns:pkg/ifc.a_%"),
		mustFFQN("obelisk-client:api-http/executions@1.0.0-beta.generate"),
		mustFFQN("obelisk-client:api-http/executions@2.0.0-beta.generate"),
		mustFFQN("obelisk-client:api-http-x/executions@1.0.0-beta.generate")}
	deps := []core.DeploymentId{depA, mustDep(2)}
	kinds := []core.ResultKind{core.ResultKindOk(), core.ResultKindError(), core.ResultKindFailure(core.FailureTimedOut)}
	lb := lockedBy(5)
	var heads []core.ExecutionState
	var parents []core.ExecutionId
	for i := range 80 {
		var id core.ExecutionId
		if len(parents) > 0 && rng.IntN(3) == 0 {
			parent := parents[rng.IntN(len(parents))]
			id = parent.NextLevel(mustJS("n:j"))
			for range rng.IntN(11) {
				id = id.Incremented()
			}
			if slices.ContainsFunc(heads, func(h core.ExecutionState) bool { return h.ExecutionID == id }) {
				continue
			}
		} else {
			id = newID()
			parents = append(parents, id)
		}
		created := t0.Add(time.Duration(rng.IntN(20)) * time.Second) // many ties
		h := pendingHead(id, ffqns[rng.IntN(len(ffqns))], created, created.Add(time.Duration(rng.IntN(20)-10)*time.Second))
		h.DeploymentID = deps[rng.IntN(2)]
		if rng.IntN(2) == 0 {
			h.ComponentDigest = digB
		}
		switch rng.IntN(6) {
		case 1:
			h.State, h.LastLock, h.LastLockVersion = core.StateLocked, &lb, ver(1)
		case 2:
			js := mustJS("n:j")
			h.State, h.JoinSetID = core.StateBlockedByJoinSet, &js
		case 3, 4:
			rk := kinds[rng.IntN(len(kinds))]
			h.State, h.ResultKind = core.StateFinished, &rk
		}
		if h.State != core.StateFinished {
			switch rng.IntN(4) {
			case 1:
				if h.State != core.StateLocked {
					h.Lifecycle = core.LifecyclePaused
				}
			case 2:
				h.Lifecycle = core.LifecycleCancelling
			}
		}
		_ = i
		heads = append(heads, h)
		MustCreate(t, b, h)
	}
	now := t0.Add(10 * time.Second)

	reference := func(f core.ListExecutionsFilter, p core.ExecutionListPagination) []string {
		return headIDs(core.SelectExecutions(heads, f, p))
	}

	fnFilter := func(kind, v string) *core.FunctionNameFilter { return &core.FunctionNameFilter{Kind: kind, Value: v} }
	someID := heads[len(heads)/2].ExecutionID
	filters := map[string]core.ListExecutionsFilter{
		"Default":                {},
		"ShowDerived":            {ShowDerived: true},
		"HideFinished":           {ShowDerived: true, HideFinished: true},
		"FunctionPrefix":         {ShowDerived: true, FunctionName: fnFilter("function", "ns:pkg/ifc.a")},
		"FunctionPrefixLiteral_": {ShowDerived: true, FunctionName: fnFilter("function", "ns:pkg/ifc.a_")},
		"InterfaceCaseSensitive": {ShowDerived: true, FunctionName: fnFilter("interface", "NS:pkg")},
		"VersionedPackage":       {ShowDerived: true, FunctionName: fnFilter("package", "obelisk-client:api-http@1.0.0-beta")},
		"PlainPackage":           {ShowDerived: true, FunctionName: fnFilter("package", "obelisk-client:api-http")},
		"IDPrefixWithUnderscore": {ShowDerived: true, ExecutionIDPrefix: someID.String()[:4]},
		"IDPrefixOfParent":       {ShowDerived: true, ExecutionIDPrefix: parents[0].String() + "."},
		"IDPrefixWildcards":      {ShowDerived: true, ExecutionIDPrefix: "E_%"},
		"Digest":                 {ShowDerived: true, ComponentDigest: &digB},
		"Deployment":             {DeploymentID: &deps[1]},
		"StateLockedPending":     {ShowDerived: true, StateFilters: []core.StateFilter{core.FilterLocked, core.FilterPending}, StateFiltersNow: now},
		"StateScheduledBlocked":  {ShowDerived: true, StateFilters: []core.StateFilter{core.FilterScheduled, core.FilterBlocked}, StateFiltersNow: now},
		"StatePausedCancelling":  {ShowDerived: true, StateFilters: []core.StateFilter{core.FilterPaused, core.FilterCancelling}},
		"StateFinished":          {ShowDerived: true, StateFilters: []core.StateFilter{core.FilterFinished}},
		"StateFinishedOk":        {ShowDerived: true, StateFilters: []core.StateFilter{core.FilterFinishedOk}},
		"StateFinishedError":     {ShowDerived: true, StateFilters: []core.StateFilter{core.FilterFinishedError}},
		"StateFinishedFailure":   {ShowDerived: true, StateFilters: []core.StateFilter{core.FilterFinishedExecutionFailure}},
		"Combined":               {HideFinished: true, ComponentDigest: &digA, StateFilters: []core.StateFilter{core.FilterPending, core.FilterPaused}, StateFiltersNow: now},
	}
	cursorTS := t0.Add(7 * time.Second)
	tieTS, tieID := heads[len(heads)/3].CreatedAt, heads[len(heads)/3].ExecutionID
	pages := map[string]core.ExecutionListPagination{
		"DefaultPage": core.DefaultExecutionListPagination(),
		"OlderThanTS": {CreatedBy: &core.Pagination[*core.Timestamp]{Direction: core.OlderThan, Length: 7, Cursor: &cursorTS}},
		"OlderThanTSIncl": {CreatedBy: &core.Pagination[*core.Timestamp]{Direction: core.OlderThan, Length: 7, Cursor: &cursorTS,
			IncludingCursor: true}},
		"NewerThanTS":      {CreatedBy: &core.Pagination[*core.Timestamp]{Direction: core.NewerThan, Length: 5, Cursor: &cursorTS}},
		"NewerThanNoCur":   {CreatedBy: &core.Pagination[*core.Timestamp]{Direction: core.NewerThan, Length: 9}},
		"OlderThanID":      {ExecutionID: &core.Pagination[*core.ExecutionId]{Direction: core.OlderThan, Length: 6, Cursor: &someID}},
		"NewerThanIDIncl":  {ExecutionID: &core.Pagination[*core.ExecutionId]{Direction: core.NewerThan, Length: 6, Cursor: &someID, IncludingCursor: true}},
		"AllByID":          {ExecutionID: &core.Pagination[*core.ExecutionId]{Direction: core.OlderThan, Length: 1000}},
		"OlderThanTSAndID": {CreatedBy: &core.Pagination[*core.Timestamp]{Direction: core.OlderThan, Length: 7, Cursor: &tieTS}, CreatedByID: &tieID},
		"NewerThanTSAndIDIncl": {CreatedBy: &core.Pagination[*core.Timestamp]{Direction: core.NewerThan, Length: 5, Cursor: &tieTS,
			IncludingCursor: true}, CreatedByID: &tieID},
	}
	nonEmpty := 0
	for fname, f := range filters {
		for pname, p := range pages {
			t.Run(fname+"/"+pname, func(t *testing.T) {
				got, err := b.ListExecutions(ctx, f, p)
				if err != nil {
					t.Fatal(err)
				}
				want := reference(f, p)
				if len(want) > 0 {
					nonEmpty++
				}
				if !slices.Equal(headIDs(got), want) {
					t.Errorf("got  %v\nwant %v", headIDs(got), want)
				}
			})
		}
	}
	if nonEmpty < len(filters)*len(pages)/2 {
		t.Errorf("only %d of %d cases had results: the population does not exercise the filters", nonEmpty, len(filters)*len(pages))
	}
}

func TestLogs(t *testing.T) {
	ctx := context.Background()
	b := MustOpen(t)
	x := newID()
	c1 := x.NextLevel(mustJS("o:a")) // X.o:a_1
	c10 := c1
	for range 9 {
		c10 = c10.Incremented() // X.o:a_10
	}
	g := c1.NextLevel(mustJS("o:b")) // X.o:a_1.o:b_1
	other := newID()
	run := lockedBy(9).RunID
	var rows []core.LogInfoAppendRow
	ids := []core.ExecutionId{x, c1, c10, g, other}
	for i := range 30 {
		e := core.LogEntry{CreatedAt: t0.Add(time.Duration(i/3) * time.Second)}
		switch i % 3 {
		case 0:
			e.Level, e.Message = core.LogLevel(1+i%5), fmt.Sprintf("line %d", i)
		case 1:
			e.StreamType, e.Payload = core.StreamStdout, []byte(fmt.Sprintf("out %d", i))
		default:
			e.StreamType, e.Payload = core.StreamStderr, []byte(fmt.Sprintf("err %d", i))
		}
		rows = append(rows, core.LogInfoAppendRow{ExecutionID: ids[i%len(ids)], RunID: run, Entry: e})
	}
	if err := b.AppendLogs(ctx, rows[:10]); err != nil {
		t.Fatal(err)
	}
	if err := b.AppendLogs(ctx, rows[10:]); err != nil {
		t.Fatal(err)
	}
	stored := make([]core.LogEntryRow, len(rows))
	for i, r := range rows {
		stored[i] = core.LogEntryRow{Cursor: core.LogCursor(i + 1), RunID: r.RunID, Entry: r.Entry, ExecutionID: r.ExecutionID}
	}
	reference := func(id core.ExecutionId, derived bool, f core.LogFilter, p core.Pagination[core.LogCursor]) []core.LogEntryRow {
		var out []core.LogEntryRow
		for k := range stored {
			i := k
			if p.IsDesc() {
				i = len(stored) - 1 - k
			}
			r := stored[i]
			inScope := r.ExecutionID == id || (derived && strings.HasPrefix(r.ExecutionID.String(), id.String()+"."))
			if inScope && f.Matches(&r.Entry) && p.Accepts(cmp.Compare(r.Cursor, p.Cursor)) && len(out) < int(p.Length) {
				out = append(out, r)
			}
		}
		return out
	}
	after, before := t0.Add(2*time.Second), t0.Add(8*time.Second)
	filters := map[string]core.LogFilter{
		"All":          {ShowLogs: true, ShowStreams: true},
		"LogsOnly":     {ShowLogs: true},
		"Levels":       {ShowLogs: true, Levels: []core.LogLevel{core.LogInfo, core.LogError}},
		"Stderr":       {ShowStreams: true, StreamTypes: []core.LogStreamType{core.StreamStderr}},
		"Combined":     {ShowLogs: true, ShowStreams: true, Levels: []core.LogLevel{core.LogTrace}, StreamTypes: []core.LogStreamType{core.StreamStdout}},
		"TimeBounds":   {ShowLogs: true, ShowStreams: true, CreatedAfter: &after, CreatedBefore: &before},
		"ShowsNothing": {},
	}
	pages := map[string]core.Pagination[core.LogCursor]{
		"FromStart":   {Direction: core.NewerThan, Length: 4, Cursor: core.LogCursorMin},
		"NewerThan7":  {Direction: core.NewerThan, Length: 100, Cursor: 7, IncludingCursor: true},
		"FromEnd":     {Direction: core.OlderThan, Length: 3, Cursor: core.LogCursorMax},
		"OlderThan20": {Direction: core.OlderThan, Length: 100, Cursor: 20},
	}
	scopes := map[string]struct {
		id      core.ExecutionId
		derived bool
	}{
		"Top":            {x, false},
		"TopDerived":     {x, true},
		"Child1Derived":  {c1, true}, // must not match …_10
		"Child10Derived": {c10, true},
	}
	for sname, sc := range scopes {
		for fname, f := range filters {
			for pname, p := range pages {
				t.Run(sname+"/"+fname+"/"+pname, func(t *testing.T) {
					got, err := b.ListLogs(ctx, sc.id, sc.derived, f, p)
					if err != nil {
						t.Fatal(err)
					}
					want := reference(sc.id, sc.derived, f, p)
					if len(got) != len(want) || (len(want) > 0 && !reflect.DeepEqual(got, want)) {
						t.Errorf("got %d rows %+v\nwant %d rows %+v", len(got), got, len(want), want)
					}
				})
			}
		}
	}
	t.Run("DerivedScopeExcludesSiblingWithLongerIndex", func(t *testing.T) {
		got, _ := b.ListLogs(ctx, c1, true, core.LogFilter{ShowLogs: true, ShowStreams: true},
			core.Pagination[core.LogCursor]{Direction: core.NewerThan, Length: 100, Cursor: core.LogCursorMin})
		for _, r := range got {
			if r.ExecutionID == c10 {
				t.Fatalf("%s matched the scope of %s", c10, c1)
			}
		}
		if len(got) == 0 {
			t.Fatal("no rows")
		}
	})
}

func TestBacktraces(t *testing.T) {
	ctx := context.Background()
	b := MustOpen(t)
	x, y := newID(), newID()
	file, line := "/src/lib.rs", uint32(42)
	bt := func(name string) core.WasmBacktrace {
		return core.WasmBacktrace{Frames: []core.FrameInfo{{Module: "m", FuncName: name,
			Symbols: []core.FrameSymbol{{FuncName: &name, File: &file, Line: &line}}}}}
	}
	comp := core.ComponentId{ComponentType: core.ComponentTypeWorkflow, Name: "wf", ComponentDigest: digA}
	infos := []core.BacktraceInfo{
		{ExecutionID: x, ComponentID: comp, VersionMinIncluding: 1, VersionMaxExcluding: 3, WasmBacktrace: bt("f")},
		{ExecutionID: x, ComponentID: comp, VersionMinIncluding: 3, VersionMaxExcluding: 4, WasmBacktrace: bt("g")},
		{ExecutionID: x, ComponentID: comp, VersionMinIncluding: 6, VersionMaxExcluding: 8, WasmBacktrace: bt("f")},
		{ExecutionID: y, ComponentID: comp, VersionMinIncluding: 1, VersionMaxExcluding: 2, WasmBacktrace: bt("f")},
	}
	n, err := b.AppendBacktraces(ctx, infos)
	if err != nil || n != 4 {
		t.Fatalf("AppendBacktraces = %d, %v; want 4", n, err)
	}
	again := infos[1]
	again.WasmBacktrace = bt("changed")
	if n, err := b.AppendBacktraces(ctx, []core.BacktraceInfo{again, infos[0]}); err != nil || n != 0 {
		t.Errorf("re-append = %d, %v; want 0 newly inserted", n, err)
	}
	for _, tc := range []struct {
		f    core.BacktraceFilter
		want core.BacktraceInfo
	}{
		{core.BacktraceFilter{Kind: "first"}, infos[0]},
		{core.BacktraceFilter{Kind: "last"}, infos[2]},
		{core.BacktraceFilter{Kind: "specific", Specific: 2}, infos[0]},
		{core.BacktraceFilter{Kind: "specific", Specific: 3}, infos[1]},
		{core.BacktraceFilter{Kind: "specific", Specific: 7}, infos[2]},
	} {
		got, err := b.GetBacktrace(ctx, x, tc.f)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%+v: got %+v, %v; want %+v", tc.f, got, err, tc.want)
		}
	}
	for _, f := range []core.BacktraceFilter{{Kind: "specific", Specific: 5}, {Kind: "specific", Specific: 8}} {
		if _, err := b.GetBacktrace(ctx, x, f); !errors.Is(err, core.ErrNotFound) {
			t.Errorf("%+v: %v, want ErrNotFound", f, err)
		}
	}
	if _, err := b.GetBacktrace(ctx, newID(), core.BacktraceFilter{Kind: "last"}); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("unknown execution: %v", err)
	}
	ranges, err := b.BacktraceRanges(ctx, x)
	if want := [][2]core.Version{{1, 3}, {3, 4}, {6, 8}}; err != nil || !reflect.DeepEqual(ranges, want) {
		t.Errorf("ranges = %v, %v; want %v", ranges, err, want)
	}
}
