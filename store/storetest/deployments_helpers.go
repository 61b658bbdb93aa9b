package storetest

import (
	"crypto/rand"
	"slices"
	"strings"
	"time"

	"github.com/stela-dev/stela/core"
)

// cas returns the subtest's CAS, the one the service keeps its blobs in.
func (h *harness) cas() core.Cas { return h.blobs }

// gcGrace is the grace period the store under test collects blobs with.
func (o RunOptions) gcGrace() time.Duration {
	switch {
	case o.GCGrace == 0:
		return time.Hour
	case o.GCGrace < 0:
		return 0
	}
	return o.GCGrace
}

// clockAtWall sets the SimClock to the wall clock plus offset and returns
// it. Blob modification times come from the CAS's own clock (a file
// system, an S3 service), so the garbage-collection scenarios align the
// store's clock with it instead of starting at t0.
func (h *harness) clockAtWall(offset time.Duration) core.Timestamp {
	ts := core.TS(time.Now().Add(offset))
	h.clock.Set(ts)
	return ts
}

// newDepAt returns a deployment id with ULID time ms, so that ids created
// with increasing ms sort in that order.
func newDepAt(ms uint64) core.DeploymentId {
	id, err := core.NewDeploymentId(ms, rand.Reader)
	if err != nil {
		panic(err)
	}
	return id
}

// depRecord is the record of T108: inactive, created now, digest of the TOML.
func (h *harness) depRecord(id core.DeploymentId, toml string, files ...core.DeploymentFileRecord) core.DeploymentRecord {
	return core.DeploymentRecord{
		DeploymentID: id, Description: strp("test deployment"), Digest: core.ContentDigestOf([]byte(toml)),
		CreatedAt: h.now(), Status: core.DeploymentInactive, DeploymentToml: toml,
		ObeliskVersion: "0.0.0-test", CreatedBy: strp("test"), Files: files,
	}
}

func (h *harness) insertDep(rec core.DeploymentRecord, meta []core.ComponentMetadataRecord, comps []core.DeploymentComponentRecord, files []core.DeploymentComponentFileRecord) error {
	return h.db.InsertDeploymentWithComponents(h.ctx, rec, meta, comps, files)
}

func (h *harness) mustInsertDep(rec core.DeploymentRecord, meta []core.ComponentMetadataRecord, comps []core.DeploymentComponentRecord, files []core.DeploymentComponentFileRecord) {
	h.t.Helper()
	h.wantNoErr("insert_deployment_with_components "+rec.DeploymentID.String(), h.insertDep(rec, meta, comps, files))
}

// newDeployment inserts an empty deployment (toml "{}") and returns its id.
func (h *harness) newDeployment(id core.DeploymentId, files ...core.DeploymentFileRecord) core.DeploymentId {
	h.t.Helper()
	h.mustInsertDep(h.depRecord(id, "{}", files...), nil, nil, nil)
	return id
}

// newDeployments inserts n empty deployments with increasing ids and
// returns them oldest first.
func (h *harness) newDeployments(n int) []core.DeploymentId {
	h.t.Helper()
	out := make([]core.DeploymentId, n)
	for i := range out {
		out[i] = h.newDeployment(newDepAt(uint64(i + 1)))
	}
	return out
}

func (h *harness) getDep(id core.DeploymentId) core.DeploymentRecord {
	h.t.Helper()
	r, err := h.db.GetDeployment(h.ctx, id)
	h.wantNoErr("get_deployment "+id.String(), err)
	return r
}

// normRecord makes an absent file list compare equal to an empty one.
func normRecord(r core.DeploymentRecord) core.DeploymentRecord {
	if r.Files == nil {
		r.Files = []core.DeploymentFileRecord{}
	}
	return r
}

func (h *harness) wantRecord(what string, got, want core.DeploymentRecord) {
	h.t.Helper()
	h.wantJSON(what, normRecord(got), normRecord(want))
}

// wantDepIDs compares a list of records (or states, through ids) with want, in order.
func (h *harness) wantDepIDs(what string, got []core.DeploymentId, want ...core.DeploymentId) {
	h.t.Helper()
	if !slices.Equal(got, want) {
		h.t.Fatalf("%s: got %v, want %v", what, got, want)
	}
}

func recordIDs(rs []core.DeploymentRecord) []core.DeploymentId {
	out := make([]core.DeploymentId, len(rs))
	for i, r := range rs {
		out[i] = r.DeploymentID
	}
	return out
}

func stateIDs(ss []core.DeploymentState) []core.DeploymentId {
	out := make([]core.DeploymentId, len(ss))
	for i, s := range ss {
		out[i] = s.DeploymentID
	}
	return out
}

// newestFirst returns ids sorted descending by their string form.
func newestFirst(ids []core.DeploymentId) []core.DeploymentId {
	out := slices.Clone(ids)
	slices.SortFunc(out, func(a, b core.DeploymentId) int { return strings.Compare(b.String(), a.String()) })
	return out
}

func depPage(dir core.Direction, length uint16, cursor *core.DeploymentId, incl bool) core.Pagination[*core.DeploymentId] {
	return core.Pagination[*core.DeploymentId]{Direction: dir, Length: length, Cursor: cursor, IncludingCursor: incl}
}

func (h *harness) listDeps(p core.Pagination[*core.DeploymentId]) []core.DeploymentRecord {
	h.t.Helper()
	rs, err := h.db.ListDeployments(h.ctx, p)
	h.wantNoErr("list_deployments", err)
	return rs
}

func (h *harness) depStates(at core.Timestamp, p core.Pagination[*core.DeploymentId], toml bool, counts core.DeploymentExecutionCounts) []core.DeploymentState {
	h.t.Helper()
	ss, err := h.db.ListDeploymentStates(h.ctx, at, p, toml, counts)
	h.wantNoErr("list_deployment_states", err)
	return ss
}

// stateOf returns the row of id in ss.
func (h *harness) stateOf(ss []core.DeploymentState, id core.DeploymentId) core.DeploymentState {
	h.t.Helper()
	for _, s := range ss {
		if s.DeploymentID == id {
			return s
		}
	}
	h.t.Fatalf("deployment %s not listed in %v", id, stateIDs(ss))
	return core.DeploymentState{}
}

// counts are the nine bucket counters of a DeploymentState.
type counts struct {
	Locked, Pending, Scheduled, Blocked, Paused, Cancelling, FinishedOk, FinishedError, FinishedExecutionFailure uint32
}

func countsOf(s core.DeploymentState) counts {
	return counts{s.Locked, s.Pending, s.Scheduled, s.Blocked, s.Paused, s.Cancelling, s.FinishedOk, s.FinishedError,
		s.FinishedExecutionFailure}
}

func (h *harness) wantCounts(what string, s core.DeploymentState, want counts) {
	h.t.Helper()
	if got := countsOf(s); got != want {
		h.t.Fatalf("%s: counts of %s\n got %+v\nwant %+v", what, s.DeploymentID, got, want)
	}
}

// fnMeta is function metadata with empty parameter types, a dummy return
// type and no extension (T113).
func fnMeta(ffqn string, submittable bool) core.PersistedFunctionMetadata {
	return core.PersistedFunctionMetadata{FFQN: mustFFQN(ffqn), ParameterTypes: []core.PersistedParameterType{},
		ReturnType: "dummy", Submittable: submittable}
}

func compMeta(d core.ComponentDigest, wit string, origin core.WitOrigin, imports, exports []core.PersistedFunctionMetadata) core.ComponentMetadataRecord {
	if imports == nil {
		imports = []core.PersistedFunctionMetadata{}
	}
	if exports == nil {
		exports = []core.PersistedFunctionMetadata{}
	}
	return core.ComponentMetadataRecord{ComponentDigest: d, Imports: imports, Exports: exports, Wit: wit, WitOrigin: origin}
}

func depComp(dep core.DeploymentId, name string, d core.ComponentDigest, t core.ComponentType) core.DeploymentComponentRecord {
	return core.DeploymentComponentRecord{DeploymentID: dep, ComponentName: name, ComponentDigest: d, ComponentType: t}
}

func (h *harness) listComps(dep core.DeploymentId) []core.DeploymentComponentDetail {
	h.t.Helper()
	cs, err := h.db.ListDeploymentComponents(h.ctx, dep)
	h.wantNoErr("list_deployment_components "+dep.String(), err)
	return cs
}

// compSummary is "<type>/<name>/<digest>" for order and identity checks.
func compSummary(cs []core.DeploymentComponentDetail) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = string(c.ComponentID.ComponentType) + "/" + c.ComponentID.Name + "/" + c.ComponentID.ComponentDigest.String()
	}
	return out
}

func (h *harness) wantStrings(what string, got []string, want ...string) {
	h.t.Helper()
	if !slices.Equal(got, want) {
		h.t.Fatalf("%s:\n got %q\nwant %q", what, got, want)
	}
}

// writeBlob stores data in the store's CAS and returns its digest.
func (h *harness) writeBlob(data string) core.ContentDigest {
	h.t.Helper()
	d, err := h.cas().WriteBlob(h.ctx, []byte(data))
	h.wantNoErr("cas write_blob", err)
	if want := core.ContentDigestOf([]byte(data)); d != want {
		h.t.Fatalf("write_blob returned %s, want sha256 of the bytes %s", d, want)
	}
	return d
}

func (h *harness) hasBlob(d core.ContentDigest) bool {
	h.t.Helper()
	ok, err := h.cas().ContainsBlob(h.ctx, d)
	h.wantNoErr("cas contains_blob", err)
	return ok
}

func (h *harness) wantBlob(d core.ContentDigest, want bool) {
	h.t.Helper()
	if got := h.hasBlob(d); got != want {
		h.t.Fatalf("contains_blob(%s) = %v, want %v", d, got, want)
	}
}

func (h *harness) missing(dep core.DeploymentId) []core.ContentDigest {
	h.t.Helper()
	m, err := h.db.MissingDigests(h.ctx, dep)
	h.wantNoErr("missing_digests "+dep.String(), err)
	return m
}

func (h *harness) files(dep core.DeploymentId) []core.DeploymentFileRecord {
	h.t.Helper()
	fs, err := h.db.ListDeploymentFiles(h.ctx, dep)
	h.wantNoErr("list_deployment_files "+dep.String(), err)
	return fs
}

func (h *harness) gc() uint64 {
	h.t.Helper()
	n, err := h.db.GCOrphanFiles(h.ctx)
	h.wantNoErr("gc_orphan_files", err)
	return n
}

func (h *harness) wantGC(what string, want uint64) {
	h.t.Helper()
	if got := h.gc(); got != want {
		h.t.Fatalf("%s: gc_orphan_files deleted %d blobs, want %d", what, got, want)
	}
}

func (h *harness) resolve(comp core.ComponentDigest, file string) (core.ContentDigest, error) {
	return h.db.ResolveSourceDigest(h.ctx, comp, file)
}

func (h *harness) wantResolves(comp core.ComponentDigest, file string, want core.ContentDigest) {
	h.t.Helper()
	got, err := h.resolve(comp, file)
	h.wantNoErr("resolve_source_digest "+file, err)
	if got != want {
		h.t.Fatalf("resolve_source_digest(%q) = %s, want %s", file, got, want)
	}
}

func (h *harness) wantUnresolved(comp core.ComponentDigest, file string) {
	h.t.Helper()
	got, err := h.resolve(comp, file)
	h.wantErr("resolve_source_digest "+file+" (got "+got.String()+")", err, core.ErrNotFound)
}

func (h *harness) upsertSource(comp core.ComponentDigest, key string, suffix bool, d core.ContentDigest) {
	h.t.Helper()
	h.wantNoErr("upsert_source_mapping "+key, h.db.UpsertSourceMapping(h.ctx, comp, key, suffix, d))
}

// sortDigests sorts digests by their string form (stable, repeats kept).
func sortDigests(ds []core.ContentDigest) []core.ContentDigest {
	out := slices.Clone(ds)
	slices.SortStableFunc(out, func(a, b core.ContentDigest) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// wantNoDanglingReference checks reliability invariant S4 for deployments:
// every digest a stored deployment refers to is in the CAS.
func (h *harness) wantNoDanglingReference(deps ...core.DeploymentId) {
	h.t.Helper()
	for _, dep := range deps {
		if m := h.missing(dep); len(m) != 0 {
			h.t.Fatalf("deployment %s refers to blobs missing from the CAS: %v", dep, m)
		}
	}
}
