package dynamo_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stela-dev/stela/cas"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/dynamo"
	"github.com/stela-dev/stela/dynamo/dynamometer"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/store/storetest"
)

// offloadFixture is a service whose payloads above 1 KiB go to a directory
// CAS, with a SimClock at the wall clock (blob times come from the file
// system).
func offloadFixture(t *testing.T) (*store.Service, *dynamo.Backend, *cas.Dir, *storetest.SimClock) {
	t.Helper()
	blobs, err := cas.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	clock := storetest.NewSimClock(core.TS(time.Now()))
	b, _ := newBackend(t, dynamo.Options{Clock: clock, Cas: blobs, InlineThreshold: 1024})
	return store.New(b, store.Options{Clock: clock, PollInterval: 20 * time.Millisecond, Cas: blobs}), b, blobs, clock
}

func bigParams(fill string) core.Params {
	return core.Params{json.RawMessage(`"` + strings.Repeat(fill, 4096) + `"`)}
}

// listBlobs returns every blob in the CAS.
func listBlobs(t *testing.T, c *cas.Dir) []core.ContentDigest {
	t.Helper()
	var out []core.ContentDigest
	if err := c.List(context.Background(), func(d core.ContentDigest, _ int64) error { out = append(out, d); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestGCNeverDeletesAnOffloadedPayload(t *testing.T) {
	ctx := context.Background()
	svc, _, blobs, clock := offloadFixture(t)
	id := newID()
	req := createReq(id, ffqnAct, compAct, t0)
	req.Params = bigParams("p")
	must(svc.Create(ctx, req))(t)
	payloads := listBlobs(t, blobs)
	if len(payloads) != 1 {
		t.Fatalf("%d blobs after creating with large params, want 1 offloaded payload", len(payloads))
	}
	orphan := must(blobs.WriteBlob(ctx, []byte("orphan")))(t)

	clock.Set(core.TS(time.Now().Add(store.DefaultGCGrace + time.Minute)))
	if n := must(svc.GCOrphanFiles(ctx))(t); n != 1 {
		t.Fatalf("gc deleted %d blobs, want 1 (the orphan)", n)
	}
	if ok := must(blobs.ContainsBlob(ctx, orphan))(t); ok {
		t.Fatal("the orphan survived gc")
	}
	if ok := must(blobs.ContainsBlob(ctx, payloads[0]))(t); !ok {
		t.Fatal("gc deleted the offloaded payload")
	}
	cr := must(svc.GetCreateRequest(ctx, id))(t)
	if len(cr.Params) != 1 || string(cr.Params[0]) != string(req.Params[0]) {
		t.Fatal("params do not round-trip after gc")
	}
}

// A writer whose commit fails after it offloaded a payload leaves the blob
// and its reference item: nothing refers to a missing blob (S4), and gc
// keeps the blob (the reference is written before the commit and never
// removed; see recordPayloadRef).
func TestPayloadOfAFailedCommitIsKeptNotDangling(t *testing.T) {
	ctx := context.Background()
	svc, _, blobs, clock := offloadFixture(t)
	id := newID()
	must(svc.Create(ctx, createReq(id, ffqnAct, compAct, t0)))(t)
	dup := createReq(id, ffqnAct, compAct, t0)
	dup.Params = bigParams("d")
	if _, err := svc.Create(ctx, dup); !errors.Is(err, core.ErrConflict) {
		t.Fatalf("duplicate create err=%v, want ErrConflict", err)
	}
	left := listBlobs(t, blobs)
	if len(left) != 1 {
		t.Fatalf("%d blobs, want the failed commit's payload", len(left))
	}
	clock.Set(core.TS(time.Now().Add(store.DefaultGCGrace + time.Minute)))
	if n := must(svc.GCOrphanFiles(ctx))(t); n != 0 {
		t.Fatalf("gc deleted %d blobs, want 0", n)
	}
	if log := must(svc.Get(ctx, id))(t); len(log.Events) != 1 {
		t.Fatalf("the existing execution has %d events", len(log.Events))
	}
}

// A deployment insert whose transaction fails after its blob references
// were written leaves stale references; gc ignores and removes them once
// they are older than the grace period.
func TestStaleDeploymentReferencesDoNotKeepBlobs(t *testing.T) {
	ctx := context.Background()
	svc, _, blobs, clock := offloadFixture(t)
	d := must(blobs.WriteBlob(ctx, []byte("file of a failed insert")))(t)
	dep := core.DeploymentId{}
	rec := core.DeploymentRecord{DeploymentID: dep, Digest: core.ContentDigestOf([]byte("{}")), CreatedAt: t0,
		Status: core.DeploymentInactive, DeploymentToml: "{}", ObeliskVersion: "1"}
	if err := svc.InsertDeploymentWithComponents(ctx, rec, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	// The same id again, now with a file: the references are written, then
	// the transaction fails on the existing deployment.
	rec.Files = []core.DeploymentFileRecord{{Path: "x.js", Digest: d}}
	if err := svc.InsertDeploymentWithComponents(ctx, rec, nil, nil, nil); !errors.Is(err, core.ErrConflict) {
		t.Fatalf("duplicate insert err=%v, want ErrConflict", err)
	}
	if n := must(svc.GCOrphanFiles(ctx))(t); n != 0 {
		t.Fatalf("gc within the grace period deleted %d blobs", n)
	}
	clock.Set(core.TS(time.Now().Add(store.DefaultGCGrace + time.Minute)))
	if n := must(svc.GCOrphanFiles(ctx))(t); n != 1 {
		t.Fatalf("gc deleted %d blobs, want the failed insert's file", n)
	}
	if n := must(svc.GCOrphanFiles(ctx))(t); n != 0 {
		t.Fatalf("second gc deleted %d blobs", n)
	}
}

func TestDisabledDeploymentCountsFailInsteadOfReportingZero(t *testing.T) {
	ctx := context.Background()
	b, _ := newBackend(t, dynamo.Options{DisableDeploymentCounts: true})
	svc := store.New(b, store.Options{})
	dep := core.DeploymentId{}
	rec := core.DeploymentRecord{DeploymentID: dep, Digest: core.ContentDigestOf([]byte("{}")), CreatedAt: t0,
		Status: core.DeploymentInactive, DeploymentToml: "{}", ObeliskVersion: "1"}
	if err := svc.InsertDeploymentWithComponents(ctx, rec, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	p := core.Pagination[*core.DeploymentId]{Direction: core.OlderThan, Length: 10}
	if _, err := svc.ListDeploymentStates(ctx, t0, p, false, core.DeploymentExecutionCounts{}); !errors.Is(err, core.ErrNotImplemented) {
		t.Fatalf("counts with the index disabled: err=%v, want ErrNotImplemented", err)
	}
	ss, err := svc.ListDeploymentStates(ctx, t0, p, false, core.DeploymentExecutionCounts{Skip: true})
	if err != nil || len(ss) != 1 {
		t.Fatalf("states without counts: %v, %v", ss, err)
	}
}

// The deployments index moves an execution's entry only when it finishes
// (live bucket A → O/E/X), so a lock writes no deployments entry; live
// executions are counted in their bucket at now from their heads, and an
// entry written with a live bucket letter before the A bucket existed is
// still counted.
func TestDeploymentCountsMoveOnlyWhenFinishing(t *testing.T) {
	ctx := context.Background()
	meter := dynamometer.NewCapacityMeter()
	b, _ := newBackend(t, dynamo.Options{}, meter.Register)
	svc := store.New(b, store.Options{Clock: &fixedClock{t0}})
	dep := mustV(core.ParseDeploymentId("Dep_01KBNJ2T3D8W7H3X6Q4M9R5V1A"))
	create := func(at core.Timestamp) core.ExecutionId {
		id := newID()
		req := createReq(id, ffqnAct, compAct, t0)
		req.ScheduledAt, req.DeploymentID = at, dep
		must(svc.Create(dynamometer.WithMeterLabel(ctx, "create"), req))(t)
		return id
	}
	pending, scheduled, locked, done, legacy := create(t0), create(t0.Add(time.Hour)), create(t0), create(t0), create(t0)
	for _, id := range []core.ExecutionId{locked, done} {
		req := lockReq(t0, compAct)
		req.DeploymentID = dep
		le := must(svc.LockOne(dynamometer.WithMeterLabel(ctx, "lock"), req, id, 1))(t)
		if id == done {
			must(svc.Append(dynamometer.WithMeterLabel(ctx, "finish"), id, le.NextVersion,
				core.AppendRequest{CreatedAt: t0, Event: &core.Finished{Retval: core.RetOk(nil)}}))(t)
		}
	}
	use := meter.Snapshot()
	// create: pending-ffqn, pending-digest, list, list-id, deployments;
	// lock: pending-ffqn and pending-digest out, timers in;
	// finish: timers out, deployments A → O (a delete and a put).
	for label, want := range map[string]int{"create": 5 * 5, "lock": 3 * 2, "finish": 3} {
		if got := use[label].IndexEntries; got != want {
			t.Errorf("%s: %d index entries, want %d", label, got, want)
		}
	}
	// A head written before the A bucket: pending, entry in bucket P.
	var dk string
	for _, it := range must(b.RawPartition(ctx, "E#"+legacy.String()))(t) {
		if v, ok := it["dk"].(*types.AttributeValueMemberS); ok {
			dk = v.Value
		}
	}
	if !strings.Contains(dk, "#T#A#") {
		t.Fatalf("a pending head's deployments key is %q, want the live bucket A", dk)
	}
	noErr(t, b.RawSet(ctx, "E#"+legacy.String(), "H", map[string]string{
		"dk": strings.Replace(dk, "#T#A#", "#T#P#", 1), "ds": t0.SortableText() + "#" + legacy.String()}))

	states := []core.DeploymentState{{DeploymentID: dep}}
	noErr(t, b.CountDeploymentExecutions(ctx, states, t0, false))
	got := states[0]
	if got.Pending != 2 || got.Scheduled != 1 || got.Locked != 1 || got.FinishedOk != 1 ||
		got.Blocked+got.Paused+got.Cancelling+got.FinishedError+got.FinishedExecutionFailure != 0 {
		t.Fatalf("counts %+v: want 2 pending (one with a legacy entry), 1 scheduled, 1 locked, 1 finished ok", got)
	}
	_, _ = pending, scheduled
}
