package storetest

import (
	"fmt"
	"time"

	"github.com/stela-dev/stela/core"
)

// deploymentTests are docs/spec/scenarios.md areas 15 and 16 (deployments, component
// metadata, CAS files) at the storage level, the behaviour of
// docs/spec/semantics.md §6.5–6.7 that Obelisk leaves untested, the source mappings, and the
// garbage-collection and crash scenarios of docs/spec/reliability.md S4/T5.
func deploymentTests() []contractTest {
	return []contractTest{
		{"T108_DeploymentInsertAndGet", t108},
		{"T109_DeploymentActivate", t109},
		{"T110_OnlyOneDeploymentIsActive", t110},
		{"T112_DeploymentList", t112},
		{"T113_DeploymentComponentsRoundtrip", t113},
		{"T114_ComponentMetadataIsSharedByDigestAcrossDeployments", t114},
		{"T116_ComponentsAreOrderedByTypeThenName", t116},
		{"T117_DeploymentStatesCountAPendingExecutionPerDeployment", t117},
		{"T118_DeploymentStatesPageOlderThan", t118},
		{"T120_DeploymentStatesCountEachExecutionState", t120},
		{"T121_DeploymentStatesIncludingCursor", t121},
		{"T122_DeploymentStatesOlderThenNewerReturnsAll", t122},
		{"T124_DeploymentStatesCursorNeedNotExist", t124},
		{"T141_DeploymentFilesRoundtripAndMissingDigests", t141},
		{"T142_DeploymentComponentFilesRoundtrip", t142},
		{"T144_GCDeletesOnlyOrphanBlobs", t144},
		{"Dep01_CurrentDeploymentIsTheEnqueuedElseTheActive", dep01},
		{"Dep02_EnqueueDeploymentOutcomes", dep02},
		{"Dep03_ActivatingAMissingDeploymentChangesNothing", dep03},
		{"Dep04_InsertIsAllOrNothingAndRejectsDuplicates", dep04},
		{"Dep05_ListDeploymentsPagesByIdNewestFirst", dep05},
		{"Dep06_DeploymentStatesCountEveryBucketAndDerivedOnRequest", dep06},
		{"Dep07_DeploymentCountsFollowTheCurrentDeployment", dep07},
		{"Dep08_ComponentMetadataIsInsertIfAbsent", dep08},
		{"Dep09_DeploymentComponentsAreInsertIfAbsent", dep09},
		{"Dep10_GetDeploymentComponentWit", dep10},
		{"Dep11_MissingDigestsAreSortedWithRepeats", dep11},
		{"Dep12_DeploymentFilesAreSortedByPathWithSizesFromTheCas", dep12},
		{"Dep13_ComponentFilesListOnlyBlobsInTheCas", dep13},
		{"Dep14_SourceMappingsResolveExactOrSuffixUnlessAmbiguous", dep14},
		{"Dep15_SourceMappingUpsertReplacesAndNeedsTheBlob", dep15},
		{"Dep16_GCNeverDeletesReferencedOrYoungBlobs", dep16},
		{"Dep17_CrashBetweenCasPutAndDatabaseWriteLeavesOnlyCollectableOrphans", dep17},
		{"Dep18_RetriedInsertAfterALostResponseIsConflictAndChangesNothing", dep18},
		{"Dep19_ConcurrentSwitchesKeepOneActiveAndAtMostOneEnqueued", dep19},
	}
}

// --- docs/spec/scenarios.md area 15 ---------------------------------------------------------

func t108(h *harness) {
	d := newDep()
	rec := h.depRecord(d, `{"activities":[]}`)
	h.mustInsertDep(rec, nil, nil, nil)
	got := h.getDep(d)
	h.wantRecord("get_deployment", got, rec)
	if got.LastActiveAt != nil || got.Status != core.DeploymentInactive {
		h.t.Fatalf("new deployment: status %s, last_active_at %v; want inactive, none", got.Status, got.LastActiveAt)
	}
}

func t109(h *harness) {
	_, err := h.db.GetActiveDeployment(h.ctx)
	h.wantErr("get_active_deployment with none active", err, core.ErrNotFound)
	d := h.newDeployment(newDep())
	h.wantNoErr("activate_deployment", h.db.ActivateDeployment(h.ctx, d, t0))
	act, err := h.db.GetActiveDeployment(h.ctx)
	h.wantNoErr("get_active_deployment", err)
	if act.DeploymentID != d || act.Status != core.DeploymentActive || act.LastActiveAt == nil || !act.LastActiveAt.Equal(t0) {
		h.t.Fatalf("active deployment %s status %s last_active_at %v; want %s active at %s", act.DeploymentID, act.Status, act.LastActiveAt, d, t0)
	}
}

func t110(h *harness) {
	d1, d2 := h.newDeployment(newDep()), h.newDeployment(newDep())
	h.wantNoErr("activate d1", h.db.ActivateDeployment(h.ctx, d1, t0))
	at := h.advance(time.Second)
	h.wantNoErr("activate d2", h.db.ActivateDeployment(h.ctx, d2, at))
	act, err := h.db.GetActiveDeployment(h.ctx)
	h.wantNoErr("get_active_deployment", err)
	if act.DeploymentID != d2 || !act.LastActiveAt.Equal(at) {
		h.t.Fatalf("active deployment %s (last active %v), want %s at %s", act.DeploymentID, act.LastActiveAt, d2, at)
	}
	first := h.getDep(d1)
	if first.Status != core.DeploymentInactive || first.LastActiveAt == nil || !first.LastActiveAt.Equal(t0) {
		h.t.Fatalf("d1 status %s last_active_at %v; want inactive, still last active at %s", first.Status, first.LastActiveAt, t0)
	}
}

func t112(h *harness) {
	ids := []core.DeploymentId{h.newDeployment(newDep()), h.newDeployment(newDep())}
	got := h.listDeps(depPage(core.NewerThan, 10, nil, false))
	h.wantDepIDs("list_deployments", recordIDs(got), newestFirst(ids)...)
}

func t113(h *harness) {
	d := h.newDeployment(newDep())
	a, b := mustDigest(0x11), mustDigest(0x22)
	h.wantNoErr("upsert_component_metadata", h.db.UpsertComponentMetadata(h.ctx, []core.ComponentMetadataRecord{
		compMeta(a, "package testing:pkg;", core.WitOriginWasm,
			[]core.PersistedFunctionMetadata{fnMeta("testing:pkg/imported-a.fn", false)},
			[]core.PersistedFunctionMetadata{fnMeta("testing:pkg/exported-a.fn", true)}),
		compMeta(b, "package testing:pkg-b;", core.WitOriginSynthesized, nil,
			[]core.PersistedFunctionMetadata{fnMeta("testing:pkg/exported-b.fn", true)}),
	}))
	h.wantNoErr("insert_deployment_components", h.db.InsertDeploymentComponents(h.ctx, d, []core.DeploymentComponentRecord{
		depComp(d, "b_workflow", b, core.ComponentTypeWorkflow), depComp(d, "a_activity", a, core.ComponentTypeActivity),
	}))
	cs := h.listComps(d)
	h.wantStrings("components", compSummary(cs),
		"activity/a_activity/"+a.String(), "workflow/b_workflow/"+b.String())
	h.wantJSON("a_activity imports", cs[0].Imports, []core.PersistedFunctionMetadata{fnMeta("testing:pkg/imported-a.fn", false)})
	h.wantJSON("a_activity exports", cs[0].Exports, []core.PersistedFunctionMetadata{fnMeta("testing:pkg/exported-a.fn", true)})
	if cs[0].Wit != "package testing:pkg;" || len(cs[0].Files) != 0 {
		h.t.Fatalf("a_activity wit %q files %v, want %q and no files", cs[0].Wit, cs[0].Files, "package testing:pkg;")
	}
	if len(cs[1].Imports) != 0 || len(cs[1].Exports) != 1 || cs[1].Wit != "package testing:pkg-b;" {
		h.t.Fatalf("b_workflow: %d imports, %d exports, wit %q; want 0, 1, %q", len(cs[1].Imports), len(cs[1].Exports), cs[1].Wit, "package testing:pkg-b;")
	}
}

func t114(h *harness) {
	a, b := h.newDeployment(newDep()), h.newDeployment(newDep())
	dg := mustDigest(0xaa)
	m := compMeta(dg, "package shared:pkg;", core.WitOriginWasm,
		[]core.PersistedFunctionMetadata{fnMeta("shared:pkg/imp.fn", false)},
		[]core.PersistedFunctionMetadata{fnMeta("shared:pkg/exp.fn", true)})
	h.wantNoErr("upsert_component_metadata", h.db.UpsertComponentMetadata(h.ctx, []core.ComponentMetadataRecord{m}))
	h.wantNoErr("insert component_a", h.db.InsertDeploymentComponents(h.ctx, a, []core.DeploymentComponentRecord{depComp(a, "component_a", dg, core.ComponentTypeActivity)}))
	h.wantNoErr("insert component_b", h.db.InsertDeploymentComponents(h.ctx, b, []core.DeploymentComponentRecord{depComp(b, "component_b", dg, core.ComponentTypeActivity)}))
	for dep, name := range map[core.DeploymentId]string{a: "component_a", b: "component_b"} {
		cs := h.listComps(dep)
		h.wantStrings("components of "+dep.String(), compSummary(cs), "activity/"+name+"/"+dg.String())
		h.wantJSON("exports of "+name, cs[0].Exports, m.Exports)
		if cs[0].Wit != m.Wit {
			h.t.Fatalf("wit of %s = %q, want %q", name, cs[0].Wit, m.Wit)
		}
	}
}

func t116(h *harness) {
	d := h.newDeployment(newDep())
	type c struct {
		digest byte
		name   string
		t      core.ComponentType
	}
	in := []c{{0xcc, "z_activity", core.ComponentTypeActivity}, {0xdd, "a_workflow", core.ComponentTypeWorkflow},
		{0xee, "a_activity_stub", core.ComponentTypeActivityStub}, {0xff, "b_activity", core.ComponentTypeActivity}}
	var meta []core.ComponentMetadataRecord
	var comps []core.DeploymentComponentRecord
	for _, x := range in {
		meta = append(meta, compMeta(mustDigest(x.digest), "package x:y;", core.WitOriginWasm, nil, nil))
		comps = append(comps, depComp(d, x.name, mustDigest(x.digest), x.t))
	}
	h.wantNoErr("upsert_component_metadata", h.db.UpsertComponentMetadata(h.ctx, meta))
	h.wantNoErr("insert_deployment_components", h.db.InsertDeploymentComponents(h.ctx, d, comps))
	h.wantStrings("order", compSummary(h.listComps(d)),
		"activity/b_activity/"+mustDigest(0xff).String(), "activity/z_activity/"+mustDigest(0xcc).String(),
		"activity_stub/a_activity_stub/"+mustDigest(0xee).String(), "workflow/a_workflow/"+mustDigest(0xdd).String())
}

// tenDeploymentsWithAPendingExecution is the fixture of T117 and T118.
func (h *harness) tenDeploymentsWithAPendingExecution() []core.DeploymentId {
	deps := make([]core.DeploymentId, 10)
	for i := range deps {
		deps[i] = h.newDeployment(newDep())
		h.create(withDep(deps[i]))
	}
	return deps
}

func t117(h *harness) {
	deps := h.tenDeploymentsWithAPendingExecution()
	ss := h.depStates(t0, depPage(core.OlderThan, 20, nil, false), false, core.DeploymentExecutionCounts{})
	h.wantDepIDs("rows", stateIDs(ss), newestFirst(deps)...)
	for _, s := range ss {
		h.wantCounts("T117", s, counts{Pending: 1})
		if s.DeploymentToml != nil {
			h.t.Fatalf("deployment_toml returned although not requested")
		}
	}
}

func t118(h *harness) {
	deps := h.tenDeploymentsWithAPendingExecution()
	var got []core.DeploymentId
	var sizes []int
	var cursor *core.DeploymentId
	for range 5 {
		page := h.depStates(t0, depPage(core.OlderThan, 3, cursor, false), false, core.DeploymentExecutionCounts{})
		if len(page) == 0 {
			break
		}
		sizes = append(sizes, len(page))
		got = append(got, stateIDs(page)...)
		last := page[len(page)-1].DeploymentID
		cursor = &last
	}
	if fmt.Sprint(sizes) != "[3 3 3 1]" {
		h.t.Fatalf("page sizes %v, want [3 3 3 1]", sizes)
	}
	h.wantDepIDs("all pages", got, newestFirst(deps)...)
}

func t120(h *harness) {
	deps := map[string]core.DeploymentId{}
	for _, n := range []string{"pending", "cancelling", "locked", "finished", "mixed"} {
		deps[n] = h.newDeployment(newDep())
	}
	lockIn := func(dep core.DeploymentId, id core.ExecutionId) {
		h.t.Helper()
		req := h.lockReq(newExr(), newRun(), t0.Add(time.Minute))
		req.DeploymentID = dep
		_, err := h.db.LockOne(h.ctx, req, id, 1)
		h.wantNoErr("lock_one", err)
	}
	h.create(withDep(deps["pending"]))
	c := h.create(withDep(deps["cancelling"]))
	h.mustAppend(c, 1, &core.CancellationRequested{})
	lockIn(deps["locked"], h.create(withDep(deps["locked"])))
	f := h.create(withDep(deps["finished"]))
	lockIn(deps["finished"], f)
	h.mustAppend(f, 2, finished(ok0))
	h.create(withDep(deps["mixed"]))
	lockIn(deps["mixed"], h.create(withDep(deps["mixed"])))
	mf := h.create(withDep(deps["mixed"]))
	lockIn(deps["mixed"], mf)
	h.mustAppend(mf, 2, finished(ok0))

	ss := h.depStates(t0, depPage(core.OlderThan, 20, nil, false), false, core.DeploymentExecutionCounts{})
	if len(ss) != 5 {
		h.t.Fatalf("%d rows, want 5", len(ss))
	}
	for name, want := range map[string]counts{
		"pending": {Pending: 1}, "cancelling": {Cancelling: 1}, "locked": {Locked: 1},
		"finished": {FinishedOk: 1}, "mixed": {Pending: 1, Locked: 1, FinishedOk: 1},
	} {
		h.wantCounts(name, h.stateOf(ss, deps[name]), want)
	}
	ss = h.depStates(t0, depPage(core.OlderThan, 20, nil, false), false, core.DeploymentExecutionCounts{Skip: true})
	if len(ss) != 5 {
		h.t.Fatalf("Skip: %d rows, want 5", len(ss))
	}
	for _, s := range ss {
		h.wantCounts("Skip", s, counts{})
	}
}

func t121(h *harness) {
	h.newDeployments(5)
	all := h.depStates(t0, depPage(core.OlderThan, 10, nil, false), false, core.DeploymentExecutionCounts{Skip: true})
	middle := all[2].DeploymentID
	has := func(ss []core.DeploymentState) bool {
		for _, s := range ss {
			if s.DeploymentID == middle {
				return true
			}
		}
		return false
	}
	for _, c := range []struct {
		dir  core.Direction
		incl bool
	}{{core.OlderThan, true}, {core.OlderThan, false}, {core.NewerThan, true}, {core.NewerThan, false}} {
		ss := h.depStates(t0, depPage(c.dir, 10, &middle, c.incl), false, core.DeploymentExecutionCounts{Skip: true})
		if has(ss) != c.incl {
			h.t.Fatalf("direction %d including %v: middle listed = %v", c.dir, c.incl, has(ss))
		}
	}
}

func t122(h *harness) {
	deps := h.newDeployments(5)
	skip := core.DeploymentExecutionCounts{Skip: true}
	all := h.depStates(t0, depPage(core.OlderThan, 20, nil, false), false, skip)
	h.wantDepIDs("OlderThan without cursor", stateIDs(all), newestFirst(deps)...)
	oldest := deps[0]
	h.wantDepIDs("OlderThan oldest, excluding", stateIDs(h.depStates(t0, depPage(core.OlderThan, 20, &oldest, false), false, skip)))
	h.wantDepIDs("NewerThan oldest, including", stateIDs(h.depStates(t0, depPage(core.NewerThan, 20, &oldest, true), false, skip)),
		newestFirst(deps)...)
}

func t124(h *harness) {
	h.newDeployments(3)
	fake := newDep()
	_, err := h.db.ListDeploymentStates(h.ctx, t0, depPage(core.OlderThan, 10, &fake, false), false, core.DeploymentExecutionCounts{})
	h.wantNoErr("list_deployment_states with a cursor that was never inserted", err)
	if _, err := h.db.ListDeployments(h.ctx, depPage(core.NewerThan, 10, &fake, true)); err != nil {
		h.t.Fatalf("list_deployments with a cursor that was never inserted: %v", err)
	}
}

// --- docs/spec/scenarios.md area 16 ---------------------------------------------------------

func t141(h *harness) {
	c := h.cas()
	content := []byte("hello deployment file")
	d := core.ContentDigestOf(content)
	file := core.DeploymentFileRecord{Path: "scripts/a.js", Digest: d}
	dep := h.newDeployment(newDep(), file)
	h.wantJSON("list_deployment_files before upload", h.files(dep), []core.DeploymentFileRecord{file})
	h.wantJSON("missing_digests before upload", h.missing(dep), []core.ContentDigest{d})
	h.wantBlob(d, false)
	if _, err := c.ReadBlob(h.ctx, d); err == nil {
		h.t.Fatal("read_blob of an absent blob succeeded")
	}
	for i := range 2 {
		got, err := c.WriteBlob(h.ctx, content)
		h.wantNoErr(fmt.Sprintf("write_blob #%d", i+1), err)
		if got != d {
			h.t.Fatalf("write_blob #%d = %s, want %s", i+1, got, d)
		}
	}
	h.wantBlob(d, true)
	b, err := c.ReadBlob(h.ctx, d)
	h.wantNoErr("read_blob", err)
	if string(b) != string(content) {
		h.t.Fatalf("read_blob = %q, want %q", b, content)
	}
	h.wantJSON("missing_digests after upload", h.missing(dep), []core.ContentDigest{})
	sized := []core.DeploymentFileRecord{{Path: "scripts/a.js", Digest: d, Size: 21}}
	h.wantJSON("get_deployment files", h.getDep(dep).Files, sized)
	h.wantJSON("list_deployment_files", h.files(dep), sized)
}

func t142(h *harness) {
	fd := h.writeBlob("same bytes")
	dep := newDep()
	files := []core.DeploymentFileRecord{{Path: "a/lib.js", Digest: fd}, {Path: "a/wit/pkg.wit", Digest: fd}, {Path: "b/lib.js", Digest: fd}}
	comp := mustDigest(0x11)
	h.mustInsertDep(h.depRecord(dep, "{}", files...),
		[]core.ComponentMetadataRecord{compMeta(comp, "package testing:pkg;", core.WitOriginAuthored, nil, nil)},
		[]core.DeploymentComponentRecord{depComp(dep, "a", comp, core.ComponentTypeActivity)},
		[]core.DeploymentComponentFileRecord{{ComponentName: "a", Path: "a/lib.js", Role: core.RoleJsEntrypoint},
			{ComponentName: "a", Path: "a/wit/pkg.wit", Role: core.RoleWitSource}})
	if got := h.files(dep); len(got) != 3 {
		h.t.Fatalf("list_deployment_files: %d entries, want 3", len(got))
	}
	cs := h.listComps(dep)
	if len(cs) != 1 {
		h.t.Fatalf("%d components, want 1", len(cs))
	}
	h.wantJSON("component files", cs[0].Files, []core.DeploymentComponentFileDetail{
		{File: core.DeploymentFileRecord{Path: "a/lib.js", Digest: fd, Size: 10}, Role: core.RoleJsEntrypoint},
		{File: core.DeploymentFileRecord{Path: "a/wit/pkg.wit", Digest: fd, Size: 10}, Role: core.RoleWitSource},
	})
	if cs[0].Wit != "package testing:pkg;" {
		h.t.Fatalf("wit %q", cs[0].Wit)
	}
}

func t144(h *harness) {
	h.cas()
	h.clockAtWall(0)
	js := h.writeBlob("export default () => 42;")
	orphan := h.writeBlob("written directly to the CAS")
	dep := h.newDeployment(newDep(), core.DeploymentFileRecord{Path: "a.js", Digest: js})
	h.clockAtWall(h.opts.gcGrace() + time.Minute)
	h.wantGC("first gc", 1)
	h.wantBlob(js, true)
	h.wantBlob(orphan, false)
	h.wantGC("second gc", 0)
	h.wantNoDanglingReference(dep)
}
