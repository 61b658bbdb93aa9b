package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/dynamo"
	"github.com/stela-dev/stela/store"
)

func TestPendingQueriesMergeShardsInScheduledOrder(t *testing.T) {
	ctx := context.Background()
	svc, b := newService(t, &fixedClock{t0}, dynamo.Options{Shards: 5})
	const n = 30
	var ids []core.ExecutionId
	for i := 0; i < n; i++ {
		id := newID()
		req := createReq(id, ffqnAct, compAct, t0)
		// Scheduled in reverse creation order, two at each time (ties keep
		// creation order).
		req.ScheduledAt = t0.Add(time.Duration((n-i)/2) * time.Second)
		req.CreatedAt = t0.Add(time.Duration(i) * time.Millisecond)
		must(svc.Create(ctx, req))(t)
		ids = append(ids, id)
	}
	want := make([]core.ExecutionId, 0, n)
	for s := 0; s <= n/2; s++ {
		for i := 0; i < n; i++ {
			if (n-i)/2 == s {
				want = append(want, ids[i])
			}
		}
	}
	got := must(b.PendingByFFQN(ctx, ffqnAct, t0.Add(time.Hour), n+5, nil))(t)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("order:\n got %v\nwant %v", got, want)
	}
	if got := must(b.PendingByFFQN(ctx, ffqnAct, t0.Add(3*time.Second), 100, nil))(t); len(got) != 7 {
		t.Fatalf("pending by %v: %d, want 7", t0.Add(3*time.Second), len(got))
	}
	if got := must(b.PendingByFFQN(ctx, ffqnAct, t0.Add(time.Hour), 7, nil))(t); fmt.Sprint(got) != fmt.Sprint(want[:7]) {
		t.Fatalf("limit 7: %v", got)
	}
	if got := must(b.PendingByDigest(ctx, compAct.ComponentDigest, t0.Add(time.Hour), 4))(t); fmt.Sprint(got) != fmt.Sprint(want[:4]) {
		t.Fatalf("by digest: %v", got)
	}
	// The auto-upgrade filter skips executions marked incompatible with a digest.
	other := mustV(core.ParseComponentDigest("sha256:1111111111111111111111111111111111111111111111111111111111111111"))
	first := want[0]
	noErr(t, b.Update(ctx, func(tx store.Tx) error {
		st, err := tx.Head(first)
		if err != nil {
			return err
		}
		st.IncompatibleDigest = &other
		return tx.PutHead(st)
	}))
	got = must(b.PendingByFFQN(ctx, ffqnAct, t0.Add(time.Hour), 3, &other))(t)
	if fmt.Sprint(got) != fmt.Sprint(want[1:4]) {
		t.Fatalf("skip incompatible: %v, want %v", got, want[1:4])
	}
	// Locking removes executions from the pending indexes.
	locked := must(svc.LockPendingByFFQNs(ctx, lockReq(t0.Add(time.Hour), compAct), []core.FunctionFqn{ffqnAct}))(t)
	if len(locked) != 10 {
		t.Fatalf("locked %d", len(locked))
	}
	if got := must(b.PendingByFFQN(ctx, ffqnAct, t0.Add(time.Hour), 100, nil))(t); len(got) != n-10 {
		t.Fatalf("pending after locking 10: %d", len(got))
	}
	exp := must(b.ExpiredLocks(ctx, t0.Add(2*time.Hour)))(t)
	if len(exp) != 10 {
		t.Fatalf("expired locks: %d, want 10", len(exp))
	}
	if exp := must(b.ExpiredLocks(ctx, t0.Add(time.Hour)))(t); len(exp) != 0 {
		t.Fatalf("expired locks before expiry: %d", len(exp))
	}
}

func TestCancellingExecutionsAreListedOldestFirst(t *testing.T) {
	ctx := context.Background()
	svc, b := newService(t, &fixedClock{t0}, dynamo.Options{Shards: 3})
	var ids []core.ExecutionId
	for i := 0; i < 7; i++ {
		id := newID()
		req := createReq(id, ffqnAct, compAct, t0.Add(time.Duration(i)*time.Second))
		must(svc.Create(ctx, req))(t)
		ids = append(ids, id)
	}
	for _, i := range []int{5, 1, 3, 6} {
		if out := must(svc.AppendActivityCancellationRequested(ctx, ids[i], t0.Add(time.Minute)))(t); out != core.CancelRequested {
			t.Fatal(out)
		}
	}
	got := must(b.Cancelling(ctx, 3))(t)
	if want := []core.ExecutionId{ids[1], ids[3], ids[5]}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("cancelling = %v, want %v", got, want)
	}
	// Finishing clears the cancelling index entry.
	must(svc.Append(ctx, ids[1], 2, core.AppendRequest{CreatedAt: t0, Event: &core.Finished{Retval: core.RetFailure(core.FailureCancelled, nil, nil)}}))(t)
	got = must(b.Cancelling(ctx, 10))(t)
	if want := []core.ExecutionId{ids[3], ids[5], ids[6]}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("cancelling = %v, want %v", got, want)
	}
}

func TestListExecutionsPagesNewestFirstAcrossShards(t *testing.T) {
	ctx := context.Background()
	svc, _ := newService(t, &fixedClock{t0}, dynamo.Options{Shards: 4})
	var ids []core.ExecutionId
	for i := 0; i < 23; i++ {
		id := newID()
		ffqn := ffqnAct
		if i%3 == 0 {
			ffqn = ffqnWf
		}
		must(svc.Create(ctx, createReq(id, ffqn, compAct, t0.Add(time.Duration(i)*time.Second))))(t)
		ids = append(ids, id)
		if i%4 == 0 {
			child := createReq(id.NextLevel(mustV(core.ParseJoinSetId("g:1"))), ffqnAct, compAct, t0.Add(time.Duration(i)*time.Second+time.Millisecond))
			must(svc.Create(ctx, child))(t)
		}
	}
	var seen []core.ExecutionId
	var cursor *core.Timestamp
	for page := 0; page < 10; page++ {
		res := must(svc.ListExecutions(ctx, core.ListExecutionsFilter{}, core.ExecutionListPagination{
			CreatedBy: &core.Pagination[*core.Timestamp]{Direction: core.OlderThan, Length: 5, Cursor: cursor}}))(t)
		for _, e := range res {
			seen = append(seen, e.ExecutionID)
		}
		if len(res) < 5 {
			break
		}
		c := res[len(res)-1].CreatedAt
		cursor = &c
	}
	if len(seen) != len(ids) {
		t.Fatalf("listed %d, want %d", len(seen), len(ids))
	}
	for i, id := range seen {
		if want := ids[len(ids)-1-i]; id != want {
			t.Fatalf("position %d: %s, want %s", i, id, want)
		}
	}
	// NewerThan pages are returned newest first too.
	c := ids[10]
	res := must(svc.ListExecutions(ctx, core.ListExecutionsFilter{}, core.ExecutionListPagination{
		CreatedBy: &core.Pagination[*core.Timestamp]{Direction: core.NewerThan, Length: 3, Cursor: ptr(t0.Add(10 * time.Second))}}))(t)
	if len(res) != 3 || res[0].ExecutionID != ids[13] || res[2].ExecutionID != ids[11] {
		t.Fatalf("newer than %s: %v", c, res)
	}
	// Filters are applied after the index query; pages still fill up.
	res = must(svc.ListExecutions(ctx, core.ListExecutionsFilter{FunctionName: &core.FunctionNameFilter{Kind: "function", Value: ffqnWf.String()}},
		core.ExecutionListPagination{CreatedBy: &core.Pagination[*core.Timestamp]{Direction: core.OlderThan, Length: 5}}))(t)
	if len(res) != 5 || res[0].ExecutionID != ids[21] || res[4].ExecutionID != ids[9] {
		t.Fatalf("workflows: %v", res)
	}
	all := must(svc.ListExecutions(ctx, core.ListExecutionsFilter{ShowDerived: true},
		core.ExecutionListPagination{CreatedBy: &core.Pagination[*core.Timestamp]{Direction: core.OlderThan, Length: 100}}))(t)
	if len(all) != 23+6 {
		t.Fatalf("with derived: %d, want 29", len(all))
	}
	// Execution-id cursor: sorted and bounded by id (these ids increase with created_at).
	byID := must(svc.ListExecutions(ctx, core.ListExecutionsFilter{},
		core.ExecutionListPagination{ExecutionID: &core.Pagination[*core.ExecutionId]{Direction: core.OlderThan, Length: 4, Cursor: &ids[5]}}))(t)
	if len(byID) != 4 || byID[0].ExecutionID != ids[4] || byID[3].ExecutionID != ids[1] {
		t.Fatalf("by id: %v", byID)
	}
}

func ptr[T any](v T) *T { return &v }

func TestLogsHaveGlobalIncreasingCursors(t *testing.T) {
	ctx := context.Background()
	svc, _ := newService(t, &fixedClock{t0}, dynamo.Options{})
	a, b := newID(), newID()
	child := a.NextLevel(mustV(core.ParseJoinSetId("g:1")))
	var rows []core.LogInfoAppendRow
	for i := 0; i < 40; i++ {
		id := []core.ExecutionId{a, b, child}[i%3]
		e := core.LogEntry{CreatedAt: t0.Add(time.Duration(i) * time.Millisecond), Level: core.LogLevel(1 + i%5), Message: fmt.Sprint("m", i)}
		if i%7 == 0 {
			e = core.LogEntry{CreatedAt: e.CreatedAt, StreamType: core.StreamStderr, Payload: []byte{byte(i)}}
		}
		rows = append(rows, core.LogInfoAppendRow{ExecutionID: id, RunID: run, Entry: e})
	}
	noErr(t, svc.AppendLogBatch(ctx, rows[:25]))
	for _, r := range rows[25:] {
		noErr(t, svc.AppendLog(ctx, r))
	}
	all := core.LogFilter{ShowLogs: true, ShowStreams: true}
	page := must(svc.ListLogs(ctx, a, true, all, core.Pagination[core.LogCursor]{Direction: core.NewerThan, Length: 100, Cursor: core.LogCursorMin}))(t)
	var want []core.LogInfoAppendRow
	for _, r := range rows {
		if r.ExecutionID != b {
			want = append(want, r)
		}
	}
	if len(page.Items) != len(want) {
		t.Fatalf("logs of %s and children: %d, want %d", a, len(page.Items), len(want))
	}
	for i, it := range page.Items {
		if i > 0 && it.Cursor <= page.Items[i-1].Cursor {
			t.Fatalf("cursors not increasing at %d", i)
		}
		if it.ExecutionID != want[i].ExecutionID || !it.Entry.CreatedAt.Equal(want[i].Entry.CreatedAt) || it.Entry.Message != want[i].Entry.Message {
			t.Fatalf("item %d = %+v, want %+v", i, it, want[i])
		}
	}
	only := must(svc.ListLogs(ctx, a, false, core.LogFilter{ShowLogs: true, Levels: []core.LogLevel{core.LogError}},
		core.Pagination[core.LogCursor]{Direction: core.OlderThan, Length: 2, Cursor: core.LogCursorMax}))(t)
	if len(only.Items) != 2 || only.Items[0].Cursor < only.Items[1].Cursor {
		t.Fatalf("older-than page: %+v", only.Items)
	}
	for _, it := range only.Items {
		if it.ExecutionID != a || it.Entry.Level != core.LogError {
			t.Fatalf("filter leak: %+v", it)
		}
	}
}

func TestBacktracesAreInsertedOnceAndFoundByVersion(t *testing.T) {
	ctx := context.Background()
	_, b := newService(t, &fixedClock{t0}, dynamo.Options{})
	id := newID()
	bt := func(lo, hi core.Version) core.BacktraceInfo {
		return core.BacktraceInfo{ExecutionID: id, ComponentID: compWf, VersionMinIncluding: lo, VersionMaxExcluding: hi,
			WasmBacktrace: core.WasmBacktrace{Frames: []core.FrameInfo{{Module: "m", FuncName: fmt.Sprint("f", lo)}}}}
	}
	if n := must(b.AppendBacktraces(ctx, []core.BacktraceInfo{bt(2, 5), bt(5, 9), bt(12, 13)}))(t); n != 3 {
		t.Fatalf("inserted %d", n)
	}
	if n := must(b.AppendBacktraces(ctx, []core.BacktraceInfo{bt(2, 5), bt(9, 12)}))(t); n != 1 {
		t.Fatalf("inserted %d, want 1", n)
	}
	cases := []struct {
		f      core.BacktraceFilter
		lo, hi core.Version
		found  bool
	}{
		{core.BacktraceFilter{Kind: "first"}, 2, 5, true},
		{core.BacktraceFilter{Kind: "last"}, 12, 13, true},
		{core.BacktraceFilter{Kind: "specific", Specific: 7}, 5, 9, true},
		{core.BacktraceFilter{Kind: "specific", Specific: 9}, 9, 12, true},
		{core.BacktraceFilter{Kind: "specific", Specific: 1}, 0, 0, false},
		{core.BacktraceFilter{Kind: "specific", Specific: 13}, 0, 0, false},
	}
	for _, c := range cases {
		got, err := b.GetBacktrace(ctx, id, c.f)
		if !c.found {
			if err == nil {
				t.Fatalf("%+v: found %d..%d", c.f, got.VersionMinIncluding, got.VersionMaxExcluding)
			}
			continue
		}
		if err != nil || got.VersionMinIncluding != c.lo || got.VersionMaxExcluding != c.hi || got.WasmBacktrace.Frames[0].FuncName != fmt.Sprint("f", c.lo) {
			t.Fatalf("%+v: %+v %v", c.f, got, err)
		}
	}
	if r := must(b.BacktraceRanges(ctx, id))(t); len(r) != 4 || r[3] != [2]core.Version{12, 13} {
		t.Fatalf("ranges %v", r)
	}
}

func TestWithoutTheDigestIndexPendingByDigestIsNotImplemented(t *testing.T) {
	ctx := context.Background()
	svc, b := newService(t, &fixedClock{t0}, dynamo.Options{DisableDigestIndex: true})
	must(svc.Create(ctx, createReq(newID(), ffqnAct, compAct, t0)))(t)
	if _, err := b.PendingByDigest(ctx, compAct.ComponentDigest, t0, 10); !errors.Is(err, core.ErrNotImplemented) {
		t.Fatalf("PendingByDigest: %v", err)
	}
	if ids := must(b.PendingByFFQN(ctx, ffqnAct, t0, 10, nil))(t); len(ids) != 1 {
		t.Fatalf("PendingByFFQN: %v", ids)
	}
}
