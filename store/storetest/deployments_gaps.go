package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
)

// Deployment behaviour of docs/spec/semantics.md §6.5–6.7 and §8 items 21–22 that
// Obelisk's tests leave out, plus the CAS garbage-collection and crash
// scenarios (docs/spec/reliability.md S4, T5).

func (h *harness) wantDepStatus(dep core.DeploymentId, want core.DeploymentStatus) {
	h.t.Helper()
	if got := h.getDep(dep).Status; got != want {
		h.t.Fatalf("status of %s = %s, want %s", dep, got, want)
	}
}

func (h *harness) enqueue(dep core.DeploymentId, want core.EnqueueOutcome) {
	h.t.Helper()
	got, err := h.db.EnqueueDeployment(h.ctx, dep)
	h.wantNoErr("enqueue_deployment "+dep.String(), err)
	if got != want {
		h.t.Fatalf("enqueue_deployment %s = %d, want %d", dep, got, want)
	}
}

func (h *harness) wantCurrent(want core.DeploymentId) core.DeploymentRecord {
	h.t.Helper()
	r, err := h.db.GetCurrentDeployment(h.ctx)
	h.wantNoErr("get_current_deployment", err)
	if r.DeploymentID != want {
		h.t.Fatalf("current deployment %s, want %s", r.DeploymentID, want)
	}
	return r
}

func (h *harness) wantActive(want core.DeploymentId) {
	h.t.Helper()
	r, err := h.db.GetActiveDeployment(h.ctx)
	h.wantNoErr("get_active_deployment", err)
	if r.DeploymentID != want {
		h.t.Fatalf("active deployment %s, want %s", r.DeploymentID, want)
	}
}

func dep01(h *harness) {
	_, err := h.db.GetCurrentDeployment(h.ctx)
	h.wantErr("get_current_deployment of an empty store", err, core.ErrNotFound)
	a := newDep()
	recA := h.depRecord(a, `{"a":1}`, core.DeploymentFileRecord{Path: "x.js", Digest: core.ContentDigestOf([]byte("x"))})
	h.mustInsertDep(recA, nil, nil, nil)
	b := h.newDeployment(newDep())
	_, err = h.db.GetCurrentDeployment(h.ctx)
	h.wantErr("get_current_deployment with nothing active or enqueued", err, core.ErrNotFound)

	h.wantNoErr("activate a", h.db.ActivateDeployment(h.ctx, a, t0))
	cur := h.wantCurrent(a)
	recA.Status, recA.LastActiveAt = core.DeploymentActive, &t0
	h.wantRecord("current deployment (active, with toml and files)", cur, recA)

	h.enqueue(b, core.Enqueued)
	if cur := h.wantCurrent(b); cur.Status != core.DeploymentEnqueued || cur.DeploymentToml != "{}" {
		h.t.Fatalf("current deployment status %s toml %q, want enqueued {}", cur.Status, cur.DeploymentToml)
	}
	h.wantActive(a)
}

func dep02(h *harness) {
	_, err := h.db.EnqueueDeployment(h.ctx, newDep())
	h.wantErr("enqueue_deployment of a missing deployment", err, core.ErrNotFound)
	a, b, c := h.newDeployment(newDep()), h.newDeployment(newDep()), h.newDeployment(newDep())

	h.enqueue(a, core.Enqueued)
	h.wantDepStatus(a, core.DeploymentEnqueued)
	h.wantCurrent(a)
	_, err = h.db.GetActiveDeployment(h.ctx)
	h.wantErr("get_active_deployment with only an enqueued one", err, core.ErrNotFound)

	h.enqueue(b, core.Enqueued)
	h.wantDepStatus(a, core.DeploymentInactive)
	h.wantDepStatus(b, core.DeploymentEnqueued)

	h.wantNoErr("activate c", h.db.ActivateDeployment(h.ctx, c, t0))
	h.wantDepStatus(b, core.DeploymentInactive)
	h.wantDepStatus(c, core.DeploymentActive)
	h.wantCurrent(c)

	h.enqueue(c, core.EnqueueAlreadyActive)
	h.wantDepStatus(c, core.DeploymentActive)

	h.enqueue(b, core.Enqueued)
	h.enqueue(c, core.EnqueueAlreadyActive)
	h.wantDepStatus(b, core.DeploymentInactive)
	h.wantCurrent(c)

	h.enqueue(b, core.Enqueued)
	h.enqueue(b, core.Enqueued)
	h.wantDepStatus(b, core.DeploymentEnqueued)
	h.wantCurrent(b)
	h.wantActive(c)

	at := h.advance(time.Minute)
	h.wantNoErr("activate b", h.db.ActivateDeployment(h.ctx, b, at))
	h.wantDepStatus(b, core.DeploymentActive)
	h.wantDepStatus(c, core.DeploymentInactive)
	if r := h.wantCurrent(b); r.LastActiveAt == nil || !r.LastActiveAt.Equal(at) {
		h.t.Fatalf("last_active_at of b = %v, want %s", r.LastActiveAt, at)
	}
}

func dep03(h *harness) {
	a, b := h.newDeployment(newDep()), h.newDeployment(newDep())
	h.wantNoErr("activate a", h.db.ActivateDeployment(h.ctx, a, t0))
	h.enqueue(b, core.Enqueued)
	err := h.db.ActivateDeployment(h.ctx, newDep(), t0.Add(time.Hour))
	h.wantErr("activate_deployment of a missing deployment", err, core.ErrNotFound)
	h.wantActive(a)
	h.wantDepStatus(b, core.DeploymentEnqueued)
	if r := h.getDep(a); !r.LastActiveAt.Equal(t0) {
		h.t.Fatalf("last_active_at of a changed to %v", r.LastActiveAt)
	}
}

func dep04(h *harness) {
	d := newDep()
	rec := h.depRecord(d, "{}")
	h.mustInsertDep(rec, nil, nil, nil)
	err := h.insertDep(h.depRecord(d, `{"other":true}`), nil, nil, nil)
	h.wantErr("insert of an existing deployment id", err, core.ErrConflict)
	h.wantRecord("deployment after the rejected duplicate", h.getDep(d), rec)

	active := h.depRecord(newDep(), "{}")
	active.Status = core.DeploymentActive
	h.wantErr("insert of an active deployment", h.insertDep(active, nil, nil, nil), core.ErrValidation)
	used := h.depRecord(newDep(), "{}")
	used.LastActiveAt = &t0
	h.wantErr("insert with last_active_at", h.insertDep(used, nil, nil, nil), core.ErrValidation)

	comp := mustDigest(0x31)
	meta := []core.ComponentMetadataRecord{compMeta(comp, "package a:b;", core.WitOriginWasm, nil, nil)}
	file := core.DeploymentFileRecord{Path: "a.js", Digest: core.ContentDigestOf([]byte("a"))}
	for _, c := range []struct {
		name   string
		meta   []core.ComponentMetadataRecord
		files  []core.DeploymentFileRecord
		cfiles []core.DeploymentComponentFileRecord
		want   error
	}{
		{"ComponentFileOfAnUnknownPath", meta, []core.DeploymentFileRecord{file},
			[]core.DeploymentComponentFileRecord{{ComponentName: "c", Path: "b.js", Role: core.RoleJsEntrypoint}}, core.ErrValidation},
		{"ComponentFileOfAnUnknownComponent", meta, []core.DeploymentFileRecord{file},
			[]core.DeploymentComponentFileRecord{{ComponentName: "nope", Path: "a.js", Role: core.RoleJsEntrypoint}}, core.ErrValidation},
		{"ComponentWithoutMetadata", nil, []core.DeploymentFileRecord{file}, nil, core.ErrValidation},
		{"DuplicateComponentFile", meta, []core.DeploymentFileRecord{file},
			[]core.DeploymentComponentFileRecord{{ComponentName: "c", Path: "a.js", Role: core.RoleJsEntrypoint},
				{ComponentName: "c", Path: "a.js", Role: core.RoleJsModule}}, core.ErrConflict},
		{"DuplicateFilePath", meta, []core.DeploymentFileRecord{file, {Path: "a.js", Digest: core.ContentDigestOf([]byte("b"))}}, nil, core.ErrConflict},
	} {
		h.t.Run(c.name, func(t *testing.T) {
			h := h.with(t)
			id := newDep()
			err := h.insertDep(h.depRecord(id, "{}", c.files...), c.meta,
				[]core.DeploymentComponentRecord{depComp(id, "c", comp, core.ComponentTypeActivity)}, c.cfiles)
			h.wantErr("insert", err, c.want)
			_, err = h.db.GetDeployment(h.ctx, id)
			h.wantErr("get_deployment after the failed insert", err, core.ErrNotFound)
		})
	}
	// None of the failed inserts wrote the metadata they carried.
	_, err = h.db.GetDeploymentComponentWit(h.ctx, d, comp)
	h.wantErr("wit of a component never bound", err, core.ErrNotFound)
	if ids := recordIDs(h.listDeps(depPage(core.OlderThan, 100, nil, false))); len(ids) != 1 || ids[0] != d {
		h.t.Fatalf("deployments after the failed inserts: %v, want only %s", ids, d)
	}
}

func dep05(h *harness) {
	ds := h.newDeployments(5) // oldest first: ds[0] … ds[4]
	p := func(dir core.Direction, n uint16, cur *core.DeploymentId, incl bool) []core.DeploymentId {
		return recordIDs(h.listDeps(depPage(dir, n, cur, incl)))
	}
	h.wantDepIDs("OlderThan{2}", p(core.OlderThan, 2, nil, false), ds[4], ds[3])
	h.wantDepIDs("OlderThan{2, d3, excl}", p(core.OlderThan, 2, &ds[3], false), ds[2], ds[1])
	h.wantDepIDs("OlderThan{2, d3, incl}", p(core.OlderThan, 2, &ds[3], true), ds[3], ds[2])
	h.wantDepIDs("NewerThan{2}", p(core.NewerThan, 2, nil, false), ds[1], ds[0])
	h.wantDepIDs("NewerThan{2, d1, excl}", p(core.NewerThan, 2, &ds[1], false), ds[3], ds[2])
	h.wantDepIDs("NewerThan{10, d1, incl}", p(core.NewerThan, 10, &ds[1], true), ds[4], ds[3], ds[2], ds[1])
	h.wantDepIDs("OlderThan{10, d0, incl}", p(core.OlderThan, 10, &ds[0], true), ds[0])
	for _, r := range h.listDeps(depPage(core.OlderThan, 10, nil, false)) {
		h.wantRecord("listed record", r, h.depRecord(r.DeploymentID, "{}"))
	}
	states := h.depStates(t0, depPage(core.NewerThan, 2, &ds[1], false), true, core.DeploymentExecutionCounts{Skip: true})
	h.wantDepIDs("list_deployment_states NewerThan{2, d1, excl}", stateIDs(states), ds[3], ds[2])
}

func dep06(h *harness) {
	d, other := h.newDeployment(newDepAt(1)), h.newDeployment(newDepAt(2))
	lockIn := func(id core.ExecutionId) {
		h.t.Helper()
		req := h.lockReq(newExr(), newRun(), t0.Add(3*time.Hour))
		req.DeploymentID = d
		_, err := h.db.LockOne(h.ctx, req, id, 1)
		h.wantNoErr("lock_one", err)
	}
	in := withDep(d)
	lockIn(h.create(in))
	pending := h.create(in)
	h.create(in, withSched(t0.Add(time.Hour)))   // due exactly at the listing time
	h.create(in, withSched(t0.Add(2*time.Hour))) // scheduled
	blocked := h.create(in)
	lockIn(blocked)
	h.mustAppend(blocked, 2, jsc(mustJS("o:")))
	h.mustAppend(blocked, 3, jn(mustJS("o:"), t0.Add(3*time.Hour)))
	paused := h.create(in)
	h.mustAppend(paused, 1, &core.Paused{})
	cancelling := h.create(in)
	lockIn(cancelling)
	h.mustAppend(cancelling, 2, &core.CancellationRequested{})
	for _, rv := range []core.ReturnValue{ok0, core.RetErr(nil), core.RetFailure(core.FailureTimedOut, nil, nil)} {
		h.mustAppend(h.create(in), 1, finished(rv))
	}
	js := mustJS("g:1")
	child := pending.NextLevel(js)
	h.createWithID(child, in, withParent(pending, js))
	h.create(withDep(other))

	at := t0.Add(time.Hour)
	all := depPage(core.OlderThan, 20, nil, false)
	top := h.stateOf(h.depStates(at, all, false, core.DeploymentExecutionCounts{}), d)
	want := counts{Locked: 1, Pending: 2, Scheduled: 1, Blocked: 1, Paused: 1, Cancelling: 1, FinishedOk: 1, FinishedError: 1, FinishedExecutionFailure: 1}
	h.wantCounts("top-level at t0+1h", top, want)
	want.Pending++
	withDerived := h.depStates(at, all, true, core.DeploymentExecutionCounts{IncludeDerived: true})
	h.wantCounts("with derived at t0+1h", h.stateOf(withDerived, d), want)
	h.wantCounts("other deployment", h.stateOf(withDerived, other), counts{Pending: 1})
	h.wantCounts("top-level at t0", h.stateOf(h.depStates(t0, all, false, core.DeploymentExecutionCounts{}), d),
		counts{Locked: 1, Pending: 1, Scheduled: 2, Blocked: 1, Paused: 1, Cancelling: 1, FinishedOk: 1, FinishedError: 1, FinishedExecutionFailure: 1})

	s := h.stateOf(withDerived, d)
	rec := h.getDep(d)
	if s.DeploymentToml == nil || *s.DeploymentToml != "{}" || top.DeploymentToml != nil {
		h.t.Fatalf("deployment_toml %v with include_toml, %v without; want {} and none", s.DeploymentToml, top.DeploymentToml)
	}
	s.DeploymentToml = nil
	wantRow := core.DeploymentState{DeploymentID: d, Description: rec.Description, Digest: rec.Digest, CreatedAt: rec.CreatedAt,
		LastActiveAt: rec.LastActiveAt, Status: rec.Status}
	c := countsOf(s)
	wantRow.Locked, wantRow.Pending, wantRow.Scheduled, wantRow.Blocked, wantRow.Paused, wantRow.Cancelling = c.Locked, c.Pending, c.Scheduled, c.Blocked, c.Paused, c.Cancelling
	wantRow.FinishedOk, wantRow.FinishedError, wantRow.FinishedExecutionFailure = c.FinishedOk, c.FinishedError, c.FinishedExecutionFailure
	h.wantJSON("deployment fields of the state row", s, wantRow)
}

func dep07(h *harness) {
	a, b := h.newDeployment(newDepAt(1)), h.newDeployment(newDepAt(2))
	x := h.create(withDep(a))
	all := depPage(core.OlderThan, 10, nil, false)
	ss := h.depStates(t0, all, false, core.DeploymentExecutionCounts{})
	h.wantCounts("a before the lock", h.stateOf(ss, a), counts{Pending: 1})
	h.wantCounts("b before the lock", h.stateOf(ss, b), counts{})
	req := h.lockReq(newExr(), newRun(), t0.Add(time.Minute))
	req.DeploymentID = b
	_, err := h.db.LockOne(h.ctx, req, x, 1)
	h.wantNoErr("lock_one in deployment b", err)
	ss = h.depStates(t0, all, false, core.DeploymentExecutionCounts{})
	h.wantCounts("a after b locked its execution", h.stateOf(ss, a), counts{})
	h.wantCounts("b after it locked a's execution", h.stateOf(ss, b), counts{Locked: 1})
}

func dep08(h *harness) {
	dg := mustDigest(0x41)
	first := compMeta(dg, "package first:wins;", core.WitOriginWasm, nil, []core.PersistedFunctionMetadata{fnMeta("first:wins/ifc.fn", true)})
	second := compMeta(dg, "package second:loses;", core.WitOriginAuthored, nil, nil)
	h.wantNoErr("upsert first", h.db.UpsertComponentMetadata(h.ctx, []core.ComponentMetadataRecord{first}))
	h.wantNoErr("upsert second", h.db.UpsertComponentMetadata(h.ctx, []core.ComponentMetadataRecord{second}))
	d := newDep()
	third := compMeta(dg, "package third:loses;", core.WitOriginSynthesized, nil, nil)
	h.mustInsertDep(h.depRecord(d, "{}"), []core.ComponentMetadataRecord{third},
		[]core.DeploymentComponentRecord{depComp(d, "c", dg, core.ComponentTypeWorkflow)}, nil)
	cs := h.listComps(d)
	if len(cs) != 1 || cs[0].Wit != first.Wit {
		h.t.Fatalf("components %v, want one with the first WIT %q", compSummary(cs), first.Wit)
	}
	h.wantJSON("exports (first write wins)", cs[0].Exports, first.Exports)
	wit, err := h.db.GetDeploymentComponentWit(h.ctx, d, dg)
	h.wantNoErr("get_deployment_component_wit", err)
	if wit != first.Wit {
		h.t.Fatalf("wit %q, want %q", wit, first.Wit)
	}
}

func dep09(h *harness) {
	a, b := mustDigest(0x51), mustDigest(0x52)
	h.wantNoErr("upsert_component_metadata", h.db.UpsertComponentMetadata(h.ctx, []core.ComponentMetadataRecord{
		compMeta(a, "package a:a;", core.WitOriginWasm, nil, nil), compMeta(b, "package b:b;", core.WitOriginWasm, nil, nil)}))
	d := h.newDeployment(newDep())
	h.wantNoErr("insert x→a", h.db.InsertDeploymentComponents(h.ctx, d, []core.DeploymentComponentRecord{depComp(d, "x", a, core.ComponentTypeActivity)}))
	h.wantNoErr("insert x→b, y→b", h.db.InsertDeploymentComponents(h.ctx, d, []core.DeploymentComponentRecord{
		depComp(d, "x", b, core.ComponentTypeWorkflow), depComp(d, "y", b, core.ComponentTypeActivity)}))
	h.wantStrings("components (first write wins per name)", compSummary(h.listComps(d)),
		"activity/x/"+a.String(), "activity/y/"+b.String())
	missing := newDep()
	err := h.db.InsertDeploymentComponents(h.ctx, missing, []core.DeploymentComponentRecord{depComp(missing, "x", a, core.ComponentTypeActivity)})
	h.wantErr("insert_deployment_components into a missing deployment", err, core.ErrNotFound)
	err = h.db.InsertDeploymentComponents(h.ctx, d, []core.DeploymentComponentRecord{depComp(d, "z", mustDigest(0x53), core.ComponentTypeActivity)})
	h.wantErr("insert_deployment_components without metadata", err, core.ErrValidation)
	if got := h.listComps(newDep()); len(got) != 0 {
		h.t.Fatalf("components of an unknown deployment: %v", compSummary(got))
	}
}

func dep10(h *harness) {
	a, b := mustDigest(0x61), mustDigest(0x62)
	d, e := newDep(), newDep()
	h.mustInsertDep(h.depRecord(d, "{}"), []core.ComponentMetadataRecord{compMeta(a, "package d:a;", core.WitOriginWasm, nil, nil)},
		[]core.DeploymentComponentRecord{depComp(d, "ca", a, core.ComponentTypeActivity)}, nil)
	h.mustInsertDep(h.depRecord(e, "{}"), []core.ComponentMetadataRecord{compMeta(b, "package e:b;", core.WitOriginWasm, nil, nil)},
		[]core.DeploymentComponentRecord{depComp(e, "cb", b, core.ComponentTypeActivity)}, nil)
	wit, err := h.db.GetDeploymentComponentWit(h.ctx, d, a)
	h.wantNoErr("wit of a in d", err)
	if wit != "package d:a;" {
		h.t.Fatalf("wit %q", wit)
	}
	for _, c := range []struct {
		name string
		dep  core.DeploymentId
		dg   core.ComponentDigest
	}{{"DigestOfAnotherDeployment", d, b}, {"DigestBoundOnlyElsewhere", e, a}, {"UnknownDeployment", newDep(), a}, {"UnknownDigest", d, mustDigest(0x63)}} {
		_, err := h.db.GetDeploymentComponentWit(h.ctx, c.dep, c.dg)
		h.wantErr(c.name, err, core.ErrNotFound)
	}
}

func dep11(h *harness) {
	present := h.writeBlob("present")
	zz, aa := core.ContentDigestOf([]byte("zz")), core.ContentDigestOf([]byte("aa"))
	d := h.newDeployment(newDep(),
		core.DeploymentFileRecord{Path: "p/z", Digest: zz}, core.DeploymentFileRecord{Path: "p/a1", Digest: aa},
		core.DeploymentFileRecord{Path: "p/present", Digest: present}, core.DeploymentFileRecord{Path: "p/a2", Digest: aa})
	h.wantJSON("missing_digests", h.missing(d), sortDigests([]core.ContentDigest{zz, aa, aa}))
	if m := h.missing(newDep()); len(m) != 0 {
		h.t.Fatalf("missing_digests of an unknown deployment: %v", m)
	}
	h.writeBlob("aa")
	h.wantJSON("missing_digests after uploading aa", h.missing(d), []core.ContentDigest{zz})
}

func dep12(h *harness) {
	zzz := h.writeBlob("zzz")
	hello := h.writeBlob("hello")
	absent := core.ContentDigestOf([]byte("never uploaded"))
	rec := h.depRecord(newDep(), "{}",
		core.DeploymentFileRecord{Path: "z.txt", Digest: zzz, Size: 99}, core.DeploymentFileRecord{Path: "a.txt", Digest: absent, Size: 7},
		core.DeploymentFileRecord{Path: "m/n.txt", Digest: hello})
	h.mustInsertDep(rec, nil, nil, nil)
	want := []core.DeploymentFileRecord{{Path: "a.txt", Digest: absent, Size: 0}, {Path: "m/n.txt", Digest: hello, Size: 5},
		{Path: "z.txt", Digest: zzz, Size: 3}}
	h.wantJSON("list_deployment_files", h.files(rec.DeploymentID), want)
	h.wantJSON("get_deployment files", h.getDep(rec.DeploymentID).Files, want)
	h.wantJSON("list_deployments files", h.listDeps(depPage(core.OlderThan, 1, nil, false))[0].Files, want)
	h.wantNoErr("activate", h.db.ActivateDeployment(h.ctx, rec.DeploymentID, t0))
	h.wantJSON("get_current_deployment files", h.wantCurrent(rec.DeploymentID).Files, want)
	if fs := h.files(newDep()); len(fs) != 0 {
		h.t.Fatalf("files of an unknown deployment: %v", fs)
	}
}

func dep13(h *harness) {
	up := h.writeBlob("uploaded")
	later := core.ContentDigestOf([]byte("uploaded later"))
	d, comp := newDep(), mustDigest(0x71)
	h.mustInsertDep(h.depRecord(d, "{}", core.DeploymentFileRecord{Path: "c/b.js", Digest: later}, core.DeploymentFileRecord{Path: "c/a.js", Digest: up}),
		[]core.ComponentMetadataRecord{compMeta(comp, "package c:c;", core.WitOriginWasm, nil, nil)},
		[]core.DeploymentComponentRecord{depComp(d, "c", comp, core.ComponentTypeActivity)},
		[]core.DeploymentComponentFileRecord{{ComponentName: "c", Path: "c/b.js", Role: core.RoleJsModule},
			{ComponentName: "c", Path: "c/a.js", Role: core.RoleJsEntrypoint}})
	fa := core.DeploymentComponentFileDetail{File: core.DeploymentFileRecord{Path: "c/a.js", Digest: up, Size: 8}, Role: core.RoleJsEntrypoint}
	h.wantJSON("component files before the upload", h.listComps(d)[0].Files, []core.DeploymentComponentFileDetail{fa})
	h.writeBlob("uploaded later")
	h.wantJSON("component files after the upload", h.listComps(d)[0].Files, []core.DeploymentComponentFileDetail{fa,
		{File: core.DeploymentFileRecord{Path: "c/b.js", Digest: later, Size: 14}, Role: core.RoleJsModule}})
}

func dep14(h *harness) {
	comp, other := mustDigest(0x81), mustDigest(0x82)
	lib, main, suffixLib, slashA, slashASuffix := h.writeBlob("lib.rs"), h.writeBlob("main.rs"), h.writeBlob("any lib.rs"),
		h.writeBlob("/a.rs exact"), h.writeBlob("/a.rs suffix")
	h.wantUnresolved(comp, "src/lib.rs")
	h.upsertSource(comp, "src/lib.rs", false, lib)
	h.wantResolves(comp, "src/lib.rs", lib)
	h.wantUnresolved(comp, "other/src/lib.rs") // exact keys match only exactly
	h.upsertSource(comp, "/main.rs", true, main)
	h.wantResolves(comp, "x/y/main.rs", main)
	h.wantResolves(comp, "/main.rs", main)
	h.wantUnresolved(comp, "main.rs")     // does not end with "/main.rs"
	h.wantUnresolved(comp, "x/mymain.rs") // nor does this
	h.wantUnresolved(other, "x/y/main.rs")
	h.wantUnresolved(other, "src/lib.rs")
	// An exact match and a suffix match together are ambiguous.
	h.upsertSource(comp, "/lib.rs", true, suffixLib)
	h.wantUnresolved(comp, "src/lib.rs")
	h.wantResolves(comp, "other/lib.rs", suffixLib)
	// The same key as exact and as suffix are two mappings.
	h.upsertSource(comp, "/a.rs", false, slashA)
	h.wantResolves(comp, "/a.rs", slashA)
	h.upsertSource(comp, "/a.rs", true, slashASuffix)
	h.wantUnresolved(comp, "/a.rs")
	h.wantResolves(comp, "b/a.rs", slashASuffix)
	// Two suffixes that both match are ambiguous even with the same blob.
	h.upsertSource(other, "/x.rs", true, lib)
	h.upsertSource(other, "/d/x.rs", true, lib)
	h.wantUnresolved(other, "c/d/x.rs")
	h.wantResolves(other, "c/e/x.rs", lib)
}

func dep15(h *harness) {
	comp := mustDigest(0x91)
	v1, v2 := h.writeBlob("fn v1() {}"), h.writeBlob("fn v2() {}")
	h.upsertSource(comp, "src/v.rs", false, v1)
	h.upsertSource(comp, "src/v.rs", false, v2)
	h.wantResolves(comp, "src/v.rs", v2)
	h.upsertSource(comp, "src/v.rs", false, v1)
	h.wantResolves(comp, "src/v.rs", v1)
	absent := core.ContentDigestOf([]byte("never uploaded"))
	err := h.db.UpsertSourceMapping(h.ctx, comp, "src/v.rs", false, absent)
	h.wantErr("upsert_source_mapping of a blob that is not in the CAS", err, core.ErrValidation)
	h.wantResolves(comp, "src/v.rs", v1)
	err = h.db.UpsertSourceMapping(h.ctx, comp, "src/new.rs", false, absent)
	h.wantErr("upsert_source_mapping of a new key to a missing blob", err, core.ErrValidation)
	h.wantUnresolved(comp, "src/new.rs")
}

func dep16(h *harness) {
	h.cas()
	grace := h.opts.gcGrace()
	comp := mustDigest(0xa1)
	h.clockAtWall(0)
	file, src, replaced, orphan := h.writeBlob("deployment file"), h.writeBlob("source file"), h.writeBlob("replaced source"),
		h.writeBlob("orphan")
	neverUploaded := core.ContentDigestOf([]byte("never uploaded"))
	inactive := h.newDeployment(newDep(), core.DeploymentFileRecord{Path: "f.js", Digest: file},
		core.DeploymentFileRecord{Path: "g.js", Digest: neverUploaded})
	h.upsertSource(comp, "src/a.rs", false, replaced)
	h.upsertSource(comp, "src/a.rs", false, src)
	if grace > 0 {
		h.clockAtWall(grace - time.Minute)
		h.wantGC("every blob is younger than the grace period", 0)
		for _, d := range []core.ContentDigest{file, src, replaced, orphan} {
			h.wantBlob(d, true)
		}
	}
	h.clockAtWall(grace + time.Minute)
	h.wantGC("after the grace period", 2)
	h.wantBlob(orphan, false)
	h.wantBlob(replaced, false)
	h.wantBlob(file, true)
	h.wantBlob(src, true)
	h.wantResolves(comp, "src/a.rs", src)
	h.wantJSON("missing_digests of the inactive deployment", h.missing(inactive), []core.ContentDigest{neverUploaded})
	if grace > 0 {
		h.clockAtWall(0)
		young := h.writeBlob("uploaded just now")
		h.wantGC("a blob uploaded just now", 0)
		h.wantBlob(young, true)
	}
	h.wantGC("nothing left to collect", 0)
}

func dep17(h *harness) {
	h.cas()
	grace := h.opts.gcGrace()
	comp := mustDigest(0xb1)
	h.clockAtWall(0)
	// A deployment submit killed after uploading two of its three blobs,
	// before insert_deployment_with_components.
	b1, b2 := h.writeBlob("submit file 1"), h.writeBlob("submit file 2")
	b3 := core.ContentDigestOf([]byte("submit file 3"))
	// A source upload killed before upsert_source_mapping.
	s1 := h.writeBlob("killed source")
	// A writer that completed.
	kept := h.writeBlob("survivor")
	survivor := h.newDeployment(newDep(), core.DeploymentFileRecord{Path: "s.js", Digest: kept})

	// S4: nothing stored refers to a missing blob or to the dead writers' blobs.
	h.wantNoDanglingReference(survivor)
	h.wantDepIDs("stored deployments", recordIDs(h.listDeps(depPage(core.OlderThan, 100, nil, false))), survivor)
	h.wantUnresolved(comp, "killed.rs")
	if grace > 0 {
		h.clockAtWall(grace - time.Minute)
		h.wantGC("within the grace period the dead writers' blobs could still be committed", 0)
		for _, d := range []core.ContentDigest{b1, b2, s1} {
			h.wantBlob(d, true)
		}
	}
	h.clockAtWall(grace + time.Minute)
	h.wantGC("after the grace period the orphans are collected", 3)
	for _, d := range []core.ContentDigest{b1, b2, s1} {
		h.wantBlob(d, false)
	}
	h.wantBlob(kept, true)
	h.wantNoDanglingReference(survivor)

	// The submitter retries: it inserts first, uploads what is missing, and
	// the deployment is complete.
	h.clockAtWall(0)
	retry := h.newDeployment(newDep(), core.DeploymentFileRecord{Path: "1", Digest: b1},
		core.DeploymentFileRecord{Path: "2", Digest: b2}, core.DeploymentFileRecord{Path: "3", Digest: b3})
	h.wantJSON("missing before the re-upload", h.missing(retry), sortDigests([]core.ContentDigest{b1, b2, b3}))
	h.writeBlob("submit file 1")
	h.writeBlob("submit file 2")
	h.writeBlob("submit file 3")
	h.wantNoDanglingReference(retry, survivor)
	h.clockAtWall(grace + time.Minute)
	h.wantGC("referenced blobs are never collected", 0)
	h.wantNoDanglingReference(retry, survivor)
}

func dep18(h *harness) {
	blob := h.writeBlob("committed")
	rec := h.depRecord(newDep(), `{"v":1}`, core.DeploymentFileRecord{Path: "c.js", Digest: blob})
	h.mustInsertDep(rec, nil, nil, nil)
	// The response was lost; the client sends the same insert again.
	h.wantErr("retried insert", h.insertDep(rec, nil, nil, nil), core.ErrConflict)
	want := rec
	want.Files = []core.DeploymentFileRecord{{Path: "c.js", Digest: blob, Size: 9}}
	h.wantRecord("the stored deployment", h.getDep(rec.DeploymentID), want)
	h.wantDepIDs("deployments", recordIDs(h.listDeps(depPage(core.OlderThan, 10, nil, false))), rec.DeploymentID)
	h.wantNoDanglingReference(rec.DeploymentID)
}

func dep19(h *harness) {
	deps := make([]core.DeploymentId, 6)
	for i := range deps {
		deps[i] = h.newDeployment(newDepAt(uint64(i + 1)))
	}
	h.wantNoErr("activate the first", h.db.ActivateDeployment(h.ctx, deps[0], t0))
	var wg sync.WaitGroup
	errs := make(chan error, 4*len(deps))
	for round := range 4 {
		for i, d := range deps {
			wg.Go(func() {
				var err error
				if (i+round)%2 == 0 {
					err = h.db.ActivateDeployment(h.ctx, d, t0.Add(time.Duration(round)*time.Second))
				} else {
					_, err = h.db.EnqueueDeployment(h.ctx, d)
				}
				if err != nil {
					errs <- err
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		h.t.Fatalf("concurrent switch: %v", err)
	}
	var active, enqueued []core.DeploymentId
	for _, r := range h.listDeps(depPage(core.OlderThan, 10, nil, false)) {
		switch r.Status {
		case core.DeploymentActive:
			active = append(active, r.DeploymentID)
		case core.DeploymentEnqueued:
			enqueued = append(enqueued, r.DeploymentID)
		}
	}
	if len(active) != 1 || len(enqueued) > 1 {
		h.t.Fatalf("after concurrent switches: active %v, enqueued %v; want exactly one active and at most one enqueued", active, enqueued)
	}
	h.wantActive(active[0])
	if len(enqueued) == 1 {
		h.wantCurrent(enqueued[0])
	} else {
		h.wantCurrent(active[0])
	}
}
