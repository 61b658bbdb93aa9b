package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/store/mem"
	"github.com/stela-dev/stela/store/transfer"
)

// Moving data between stores (store.Exporter, store.Importer,
// store.Service.ImportTree; package transfer). Every backend must export
// what it holds verbatim and import it back verbatim: BuildDataSet's data
// set goes from the backend under test to the in-memory backend and from
// there into a fresh backend under test, through the stream format, and
// the three stores must then hold the same records (digests) and answer
// every read and every next step (locks, sweeps, a child finishing) the
// same way. Importing is idempotent and resumable, reports conflicts
// instead of overwriting, and leaves finished trees to the destination's
// retention.

// runTransfer runs the transfer scenarios.
func runTransfer(t *testing.T, newBackend NewBackend, opts RunOptions) {
	for _, tt := range []struct {
		name string
		fn   func(t *testing.T, newBackend NewBackend, opts RunOptions)
	}{
		{"X01_ReadsBackIdenticalAndBehavesTheSame", x01},
		{"X02_ImportingAgainChangesNothing", x02},
		{"X03_ConflictsAreReportedNotOverwritten", x03},
		{"X04_InterruptedImportResumes", x04},
		{"X05_RetentionRunsInTheDestination", x05},
		{"X06_LiveSourceExportsConsistentTrees", x06},
	} {
		t.Run("Transfer/"+tt.name, func(t *testing.T) { tt.fn(t, newBackend, opts) })
	}
}

// RunTransfer runs only the transfer scenarios.
func RunTransfer(t *testing.T, newBackend NewBackend, opts RunOptions) {
	runTransfer(t, newBackend, opts)
}

func newMemBackend(*testing.T, core.Clock, core.Cas) store.Backend { return mem.New() }

// transferRounds is BuildDataSet's rounds in these scenarios.
func (o RunOptions) transferRounds() int { return o.scaled(3, 1) }

// withRetention sets the service's retention.
func withRetention(r core.Retention) func(*store.Options) {
	return func(o *store.Options) { o.Retention = r }
}

// end returns h as a transfer end.
func (h *harness) end() transfer.Store { return transfer.Store{Service: h.svc, Cas: h.blobs} }

// exportTo writes h's stream into a buffer.
func (h *harness) exportTo() (*bytes.Buffer, transfer.Summary) {
	h.t.Helper()
	var buf bytes.Buffer
	sum, err := transfer.Export(h.ctx, h.end(), &buf, transfer.Options{Source: "storetest", Clock: h.clock})
	h.wantNoErr("export", err)
	return &buf, sum
}

// importFrom reads a stream into h.
func (h *harness) importFrom(stream []byte) (transfer.Summary, error) {
	return transfer.Import(h.ctx, bytes.NewReader(stream), h.end(), transfer.Options{})
}

// snapshot returns every record h holds, keyed by what it is, as digests
// or canonical encodings, and each tree's execution order.
func (h *harness) snapshot() map[string]string {
	h.t.Helper()
	out := map[string]string{}
	digests := map[core.ComponentDigest]bool{}
	err := h.svc.Export(h.ctx, func(r *store.ExportReader) error {
		roots, err := r.TreeRoots()
		if err != nil {
			return err
		}
		for _, root := range roots {
			t, err := r.Tree(root)
			if err != nil {
				return err
			}
			var order []string
			for i := range t.Executions {
				rec := &t.Executions[i]
				d, err := rec.Digest()
				if err != nil {
					return err
				}
				out["execution "+rec.Head.ExecutionID.String()] = d.String()
				order = append(order, rec.Head.ExecutionID.String())
				digests[rec.Head.ComponentDigest] = true
			}
			out["order "+root.String()] = strings.Join(order, " ")
			d, err := t.Logs.Digest()
			if err != nil {
				return err
			}
			out["logs "+root.String()] = d.String()
		}
		deps, err := r.Deployments()
		if err != nil {
			return err
		}
		for _, d := range deps {
			b, err := core.EncodeStoredDeployment(d)
			if err != nil {
				return err
			}
			out["deployment "+d.Record.DeploymentID.String()] = string(b)
			for _, c := range d.Components {
				digests[c.ComponentDigest] = true
			}
		}
		for c := range digests {
			meta, err := r.ComponentMetadata([]core.ComponentDigest{c})
			if err != nil {
				return err
			}
			if m, ok := meta[c]; ok {
				b, err := core.EncodeComponentMetadata(m)
				if err != nil {
					return err
				}
				out["metadata "+c.String()] = string(b)
			}
			ms, err := r.SourceMappingsOf(c)
			if err != nil {
				return err
			}
			for _, m := range ms {
				out[fmt.Sprintf("source %s %q %v", c, m.Key.FrameKey, m.Key.IsSuffix)] = m.Digest.String()
			}
		}
		return nil
	})
	h.wantNoErr("export snapshot", err)
	return out
}

func wantSameSnapshot(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	var diffs []string
	for k, w := range want {
		if g, ok := got[k]; !ok {
			diffs = append(diffs, "missing "+k)
		} else if g != w {
			diffs = append(diffs, fmt.Sprintf("%s:\n   got %s\n  want %s", k, g, w))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, "extra "+k)
		}
	}
	if len(diffs) > 0 {
		slices.Sort(diffs)
		t.Fatalf("%s: %d differences:\n%s", what, len(diffs), strings.Join(diffs[:min(len(diffs), 20)], "\n"))
	}
}

// transferPair builds the data set on a fresh backend under test (src),
// then goes through a stream into the in-memory backend (via) and from
// there into another fresh backend under test (dst), the clocks aligned.
func transferPair(t *testing.T, newBackend NewBackend, opts RunOptions, dstMod func(*store.Options)) (src, via, dst *harness, ds DataSet, stream []byte) {
	src = newHarness(t, newBackend, opts)
	ds = BuildDataSet(t, src.svc, src.blobs, src.clock, opts.transferRounds())
	buf, sum := src.exportTo()
	if sum.Executions != len(ds.IDs) || sum.Trees == 0 || sum.Deployments != len(ds.Deployments) || sum.Blobs != len(ds.Blobs) {
		t.Fatalf("export summary %+v, want %d executions, %d deployments, %d blobs", sum, len(ds.IDs), len(ds.Deployments), len(ds.Blobs))
	}
	via = newHarnessWith(t, newMemBackend, opts, dstMod)
	via.clock.Set(src.now())
	if sum, err := via.importFrom(buf.Bytes()); err != nil || sum.Written != sum.Trees {
		t.Fatalf("import into memory: %+v, %v", sum, err)
	}
	viaStream, _ := via.exportTo()
	dst = newHarnessWith(t, newBackend, opts, dstMod)
	dst.clock.Set(src.now())
	if sum, err := dst.importFrom(viaStream.Bytes()); err != nil || sum.Written != sum.Trees {
		t.Fatalf("import into the backend: %+v, %v", sum, err)
	}
	return src, via, dst, ds, buf.Bytes()
}

func x01(t *testing.T, newBackend NewBackend, opts RunOptions) {
	src, via, dst, ds, _ := transferPair(t, newBackend, opts, nil)
	want := src.snapshot()
	wantSameSnapshot(t, "memory copy", via.snapshot(), want)
	wantSameSnapshot(t, "copy of the copy", dst.snapshot(), want)
	wantSameNextSteps(t, src, dst, ds, false)
}

// wantSameNextSteps compares what src and dst answer, then makes both take
// the same next steps — a lock of everything pending, the waiting child
// finishing (its parent unblocks), a sweep once every lock and unpaused
// delay is due — and compares again. With ties set (stores of the two
// kinds of tie order, TransferEnd.ByCreation), lists ordered by timestamps
// are compared as sets: executions of equal timestamps may come in the
// other order.
func wantSameNextSteps(t *testing.T, src, dst *harness, ds DataSet, ties bool) {
	t.Helper()
	wantSameAnswers(t, src, dst, ds, ties)
	for _, h := range []*harness{src, dst} {
		h.advance(2 * time.Second)
	}
	req := src.lockReq(newExr(), newRun(), src.now().Add(time.Minute))
	req.BatchSize = 1000
	var locked [2]string
	for i, h := range []*harness{src, dst} {
		got, err := h.db.LockPendingByFFQNs(h.ctx, req, []core.FunctionFqn{ffqnF, ffqnFC, ffqnChild})
		h.wantNoErr("lock pending", err)
		locked[i] = jsonOrErr(got)
		if ties {
			locked[i] = sortedJSON(got)
		}
		if !strings.Contains(locked[i], ds.Waiting.String()) {
			t.Fatalf("the lock did not take the waiting child %s: %s", ds.Waiting, locked[i])
		}
		h.finishChild2(ds.Waiting, 2, ok0)
		h.wantStatus(ds.Blocked, core.StatePendingAt, core.LifecycleActive)
	}
	if locked[0] != locked[1] {
		t.Fatalf("locks differ:\nsource      %s\ndestination %s", locked[0], locked[1])
	}
	for _, h := range []*harness{src, dst} {
		h.advance(1001 * time.Hour)
		locks, delays := h.sweep(h.now())
		if locks == 0 || delays == 0 {
			t.Fatalf("sweep resolved %d locks and %d delays, want some of each", locks, delays)
		}
	}
	wantSameAnswers(t, src, dst, ds, ties)
}

// sortedJSON is the JSON of each element of a list, sorted.
func sortedJSON[T any](list []T) string {
	out := make([]string, len(list))
	for i, e := range list {
		out[i] = jsonOrErr(e)
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}

// wantSameAnswers compares what src and dst answer to every read (with
// ties, see wantSameNextSteps).
func wantSameAnswers(t *testing.T, src, dst *harness, ds DataSet, ties bool) {
	t.Helper()
	ask := func(what string, q func(h *harness) (any, error)) {
		t.Helper()
		a, errA := q(src)
		b, errB := q(dst)
		if errKind(errA) != errKind(errB) || (errA == nil && jsonOrErr(a) != jsonOrErr(b)) {
			t.Fatalf("%s differs:\nsource      %s (%v)\ndestination %s (%v)", what, jsonOrErr(a), errA, jsonOrErr(b), errB)
		}
	}
	for _, id := range ds.IDs {
		ask("get "+id.String(), func(h *harness) (any, error) { return h.db.Get(h.ctx, id) })
		ask("pending state "+id.String(), func(h *harness) (any, error) { return h.db.GetPendingState(h.ctx, id) })
		ask("first backtrace of "+id.String(), func(h *harness) (any, error) {
			return h.db.GetBacktrace(h.ctx, id, core.BacktraceFilter{Kind: "first"})
		})
	}
	for _, root := range ds.Trees {
		ask("logs of "+root.String(), func(h *harness) (any, error) {
			l, err := h.db.ListLogs(h.ctx, root, true, core.LogFilter{ShowLogs: true, ShowStreams: true},
				core.Pagination[core.LogCursor]{Direction: core.NewerThan, Length: 1000, Cursor: core.LogCursorMin})
			rows := make([]string, len(l.Items))
			for i, r := range l.Items {
				rows[i] = fmt.Sprintf("%s %s %s %d %q %d %q", r.ExecutionID, r.RunID, r.Entry.CreatedAt, r.Entry.Level,
					r.Entry.Message, r.Entry.StreamType, r.Entry.Payload)
			}
			return rows, err
		})
	}
	ask("list executions", func(h *harness) (any, error) {
		var ids []string
		p := core.ExecutionListPagination{CreatedBy: &core.Pagination[*core.Timestamp]{Direction: core.OlderThan, Length: 17}}
		for {
			page, err := h.db.ListExecutions(h.ctx, core.ListExecutionsFilter{ShowDerived: true}, p)
			if err != nil || len(page) == 0 {
				return ids, err
			}
			for _, e := range page {
				ids = append(ids, e.ExecutionID.String()+" "+jsonOrErr(e.PendingState))
			}
			last := page[len(page)-1]
			at, id := last.CreatedAt, last.ExecutionID
			p.CreatedBy.Cursor, p.CreatedByID = &at, &id
		}
	})
	ask("expired timers in a week", func(h *harness) (any, error) {
		got, err := h.db.GetExpiredTimers(h.ctx, h.now().Add(7*24*time.Hour))
		if ties {
			return sortedJSON(got), err
		}
		return got, err
	})
	ask("cancelling", func(h *harness) (any, error) {
		got, err := h.db.GetCancelling(h.ctx, 100)
		if ties {
			return sortedJSON(got), err
		}
		return got, err
	})
	ask("deployment states", func(h *harness) (any, error) {
		return h.db.ListDeploymentStates(h.ctx, h.now(), core.Pagination[*core.DeploymentId]{Direction: core.NewerThan, Length: 100},
			true, core.DeploymentExecutionCounts{IncludeDerived: true})
	})
	ask("current deployment", func(h *harness) (any, error) { return h.db.GetCurrentDeployment(h.ctx) })
	ask("active deployment", func(h *harness) (any, error) { return h.db.GetActiveDeployment(h.ctx) })
	for _, dep := range ds.Deployments {
		ask("components of "+dep.String(), func(h *harness) (any, error) { return h.db.ListDeploymentComponents(h.ctx, dep) })
		ask("files of "+dep.String(), func(h *harness) (any, error) { return h.db.ListDeploymentFiles(h.ctx, dep) })
	}
	ask("source mapping", func(h *harness) (any, error) {
		return h.db.ResolveSourceDigest(h.ctx, mustDigest(0xc1), "/build/src/main.rs")
	})
}

func x02(t *testing.T, newBackend NewBackend, opts RunOptions) {
	src, _, dst, _, stream := transferPair(t, newBackend, opts, nil)
	before := dst.snapshot()
	sum, err := dst.importFrom(stream)
	if err != nil {
		t.Fatalf("import again: %v", err)
	}
	if sum.Unchanged != sum.Trees || sum.Written+sum.Resumed != 0 || sum.RecordsWritten != 0 ||
		sum.RecordsUnchanged != sum.Deployments+sum.ComponentMetadata+sum.SourceMappings {
		t.Fatalf("import again: %+v, want everything unchanged", sum)
	}
	wantSameSnapshot(t, "after importing again", dst.snapshot(), before)
	// A direct copy of the source is a no-op too.
	sum, err = transfer.Copy(src.ctx, src.end(), dst.end(), transfer.Options{})
	if err != nil || sum.Unchanged != sum.Trees {
		t.Fatalf("copy again: %+v, %v", sum, err)
	}
	wantSameSnapshot(t, "after copying again", dst.snapshot(), before)
}

func x03(t *testing.T, newBackend NewBackend, opts RunOptions) {
	src, _, dst, ds, stream := transferPair(t, newBackend, opts, nil)
	// The destination moves on: an execution is paused there, a
	// deployment activated.
	var victim core.ExecutionId
	for _, id := range ds.IDs {
		if p := dst.pendingState(id); p.State == core.StatePendingAt && p.Lifecycle == core.LifecycleActive && id.IsTopLevel() {
			victim = id
			break
		}
	}
	_, err := dst.db.PauseExecution(dst.ctx, victim, dst.now())
	dst.wantNoErr("pause in the destination", err)
	dst.wantNoErr("activate in the destination", dst.db.ActivateDeployment(dst.ctx, ds.Deployments[2], dst.now()))
	before := dst.snapshot()
	sum, err := dst.importFrom(stream)
	if !errors.Is(err, transfer.ErrConflicts) {
		t.Fatalf("import over a changed destination: %v (%+v), want %v", err, sum, transfer.ErrConflicts)
	}
	joined := strings.Join(sum.Conflicts, "\n")
	for _, want := range []string{"execution " + victim.String(), "deployment " + ds.Deployments[0].String(), "deployment " + ds.Deployments[2].String()} {
		if !strings.Contains(joined, want) {
			t.Fatalf("conflicts do not name %s:\n%s", want, joined)
		}
	}
	if sum.Unchanged != sum.Trees-1 {
		t.Fatalf("import over a changed destination: %+v, want every other tree unchanged", sum)
	}
	wantSameSnapshot(t, "after the refused import", dst.snapshot(), before)
	dst.wantStatus(victim, core.StatePendingAt, core.LifecyclePaused)
	_ = src
}

func x04(t *testing.T, newBackend NewBackend, opts RunOptions) {
	src := newHarness(t, newBackend, opts)
	ds := BuildDataSet(t, src.svc, src.blobs, src.clock, opts.transferRounds())
	buf, _ := src.exportTo()
	stream := buf.Bytes()
	want := src.snapshot()
	dst := newHarness(t, newBackend, opts)
	dst.clock.Set(src.now())

	// An import killed inside a tree: its first executions and half of
	// its logs are there.
	var part store.TreeRecord
	err := src.svc.Export(src.ctx, func(r *store.ExportReader) (err error) {
		part, err = r.Tree(ds.Trees[0])
		return err
	})
	src.wantNoErr("read a tree", err)
	part.Executions = part.Executions[:len(part.Executions)/2]
	part.Logs.Rows = part.Logs.Rows[:len(part.Logs.Rows)/2]
	if res, err := dst.svc.ImportTree(dst.ctx, part); err != nil || res.Outcome != store.ImportWritten {
		t.Fatalf("import half a tree: %+v, %v", res, err)
	}
	// An import killed in the middle of the stream: what it holds is
	// imported, the rest is not.
	lines := bytes.SplitAfter(stream, []byte("\n"))
	cut := bytes.Join(lines[:len(lines)/2], nil)
	cut = append(cut, lines[len(lines)/2][:len(lines[len(lines)/2])/2]...)
	first, err := dst.importFrom(cut)
	if !errors.Is(err, transfer.ErrTruncated) || first.Written == 0 {
		t.Fatalf("import of half a stream: %+v, %v, want some trees and %v", first, err, transfer.ErrTruncated)
	}
	second, err := dst.importFrom(stream)
	if err != nil {
		t.Fatalf("resumed import: %v", err)
	}
	if first.Resumed+second.Resumed != 1 || second.Written == 0 || second.Unchanged == 0 ||
		second.Written+second.Resumed+second.Unchanged != second.Trees {
		t.Fatalf("resumed import: first %+v, then %+v, want the half tree resumed once, trees written and unchanged", first, second)
	}
	wantSameSnapshot(t, "after the resumed import", dst.snapshot(), want)
	wantSameAnswers(t, src, dst, ds, false)
}

func x05(t *testing.T, newBackend NewBackend, opts RunOptions) {
	period := core.RetainFor(retentionPeriod)
	src := newHarness(t, newBackend, opts)
	ds := BuildDataSet(t, src.svc, src.blobs, src.clock, 1)
	buf, _ := src.exportTo()
	finishedRoot := ds.Trees[0] // BuildTree(finish=true)
	unfinished := ds.Trees[1]

	// Imported while its period runs, a finished tree expires on time in
	// the destination.
	dst := newHarnessWith(t, newBackend, opts, withRetention(period))
	dst.clock.Set(src.now())
	if _, err := dst.importFrom(buf.Bytes()); err != nil {
		t.Fatalf("import: %v", err)
	}
	dst.wantPresent(finishedRoot, unfinished)
	dst.advance(retentionPeriod / 2)
	dst.retain()
	dst.wantPresent(finishedRoot, unfinished)
	dst.advance(retentionPeriod)
	dst.retain()
	dst.wantGone(finishedRoot)
	dst.wantPresent(unfinished)

	// Imported after its period, it is not written at all.
	late := newHarnessWith(t, newBackend, opts, withRetention(period))
	late.clock.Set(src.now().Add(2 * retentionPeriod))
	sum, err := late.importFrom(buf.Bytes())
	if err != nil || sum.Expired == 0 || sum.Written == 0 {
		t.Fatalf("late import: %+v, %v, want expired and written trees", sum, err)
	}
	late.wantGone(finishedRoot)
	late.wantPresent(unfinished)
}

func x06(t *testing.T, newBackend NewBackend, opts RunOptions) {
	src := newHarness(t, newBackend, opts)
	n := opts.scaled(30, 8)
	p, children, _, _ := src.parentWithChildren(mustJS("g:1"), n, true)
	var wg sync.WaitGroup
	done := make(chan struct{})
	var finishErr error
	wg.Go(func() {
		defer close(done)
		for _, c := range children {
			if err := src.finishLockedChild(c, ok0); err != nil {
				finishErr = err
				return
			}
		}
	})
	exports := 0
	for {
		dst := newHarness(t, newMemBackend, opts)
		if _, err := transfer.Copy(src.ctx, src.end(), dst.end(), transfer.Options{}); err != nil {
			t.Fatalf("copy while children finish: %v", err)
		}
		exports++
		wantConsistentTree(t, dst, p)
		select {
		case <-done:
		default:
			continue
		}
		break
	}
	wg.Wait()
	if finishErr != nil {
		t.Fatalf("finish children: %v", finishErr)
	}
	t.Logf("%d copies while %d children finished", exports, n)
}

// wantConsistentTree checks that every finished child of root's tree has
// its response in its parent and every response names a finished child.
func wantConsistentTree(t *testing.T, h *harness, root core.ExecutionId) {
	t.Helper()
	var tree store.TreeRecord
	err := h.svc.Export(h.ctx, func(r *store.ExportReader) (err error) {
		tree, err = r.Tree(root)
		return err
	})
	h.wantNoErr("read the tree", err)
	recs := map[core.ExecutionId]*core.ExecutionRecord{}
	for i := range tree.Executions {
		recs[tree.Executions[i].Head.ExecutionID] = &tree.Executions[i]
	}
	answered := map[core.ExecutionId]int{}
	for _, r := range recs {
		for _, resp := range r.Responses {
			if cf, ok := resp.Event.Event.Event.(*core.ChildExecutionFinished); ok {
				c := cf.ChildExecutionID.ExecutionId
				answered[c]++
				if cr, ok := recs[c]; !ok || !cr.Head.IsFinished() {
					t.Fatalf("%s has the response of %s, which is not finished in the copy", r.Head.ExecutionID, c)
				}
			}
		}
	}
	for id, r := range recs {
		if parent, _, ok := id.SplitToParts(); ok && recs[parent] != nil && r.Head.IsFinished() && answered[id] != 1 {
			t.Fatalf("%s is finished but its parent has %d responses from it", id, answered[id])
		}
	}
}

// TransferEnd is one store of a transfer chain.
type TransferEnd struct {
	Name    string
	Service *store.Service
	Cas     core.Cas
	// Clock drives the service (its store.Options.Clock).
	Clock *SimClock
	// ByCreation tells a backend that breaks ties between executions of
	// equal timestamps by (created_at, id), as DynamoDB does, from one
	// that breaks them by insertion (SQLite, in memory): from the one
	// kind to the other, executions created at the same instant come in
	// the other order (so the chain compares their order only between
	// ends of one kind).
	ByCreation bool
}

// withoutOrder returns a snapshot without the trees' execution orders.
func withoutOrder(s map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range s {
		if !strings.HasPrefix(k, "order ") {
			out[k] = v
		}
	}
	return out
}

// RunTransferChain writes BuildDataSet's data set (rounds rounds) into the
// first end and copies it along the chain — through a stream between the
// first two ends, directly (transfer.Copy) between the next two, and so
// on alternately — checking at every end that it holds the first end's
// records exactly, and at the last that it answers every read and takes
// the next steps (locks, a child finishing, a sweep) as the first does.
// It returns the data set.
func RunTransferChain(t *testing.T, rounds int, ends ...TransferEnd) DataSet {
	t.Helper()
	if len(ends) < 2 {
		t.Fatal("a transfer chain needs two ends at least")
	}
	hs := make([]*harness, len(ends))
	for i, e := range ends {
		ctx, cancel := contextWithTimeout(context.Background(), 10*time.Minute)
		t.Cleanup(cancel)
		hs[i] = &harness{t: t, ctx: ctx, db: e.Service, svc: e.Service, blobs: e.Cas, clock: e.Clock}
	}
	ds := BuildDataSet(t, ends[0].Service, ends[0].Cas, ends[0].Clock, rounds)
	want := hs[0].snapshot()
	mixed := false // an end of the other kind of order (ByCreation) was passed
	for i := 1; i < len(hs); i++ {
		from, to := hs[i-1], hs[i]
		to.clock.Set(hs[0].now())
		var (
			sum transfer.Summary
			err error
		)
		if i%2 == 1 {
			buf, _ := from.exportTo()
			sum, err = to.importFrom(buf.Bytes())
		} else {
			sum, err = transfer.Copy(from.ctx, from.end(), to.end(), transfer.Options{})
		}
		if err != nil || sum.Written != sum.Trees || sum.Executions != len(ds.IDs) {
			t.Fatalf("%s → %s: %+v, %v; want %d executions written", ends[i-1].Name, ends[i].Name, sum, err, len(ds.IDs))
		}
		got, w := to.snapshot(), want
		if mixed = mixed || ends[i].ByCreation != ends[0].ByCreation; mixed {
			got, w = withoutOrder(got), withoutOrder(want)
		}
		wantSameSnapshot(t, ends[0].Name+" → … → "+ends[i].Name, got, w)
		ties := ends[i].ByCreation != ends[i-1].ByCreation
		if i < len(hs)-1 {
			wantSameAnswers(t, from, to, ds, ties)
		} else {
			wantSameNextSteps(t, from, to, ds, ties)
		}
	}
	return ds
}
