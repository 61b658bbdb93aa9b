package dynamo

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/stela-dev/stela/core"
)

// Deployment rows (store.DeploymentReadTx, store.DeploymentTx). doc.go
// ("Deployments") describes the items; in short:
//
//	deployment       pk "DEP", sk "<deployment id>": scalar fields, files and
//	                 components (with their files) as JSON, rv revision
//	pointer          pk "DEPPTR", sk "P": ac active id, eq enqueued id, rv
//	metadata         pk "CM#<component digest>", sk "M" (insert-if-absent)
//	source mapping   pk "SRC#<component digest>", sk "E#<key>" / "S#<key>"
//	blob reference   pk "REF#<content digest>", sk "D#<deployment>#<insert
//	                 request id>", "S#<component>#<E|S>#<key>" or "P"
//	                 (offloaded payload)
//
// Reads are strongly consistent and cached per transaction; the plan (see
// planDeployments) turns the buffered writes into conditional ops of the
// same commit as everything else, guarded by the revisions read.

const (
	pkDeployments  = "DEP"
	pkDepPointer   = "DEPPTR"
	skDepPointer   = "P"
	prefixMetadata = "CM#"
	skMetadata     = "M"
	prefixSource   = "SRC#"
	prefixRef      = "REF#"
	refPayload     = "P"

	aDepCreatedAt  = "ca"
	aDepLastActive = "la"
	aDepStatus     = "st"
	aDepToml       = "tm"
	aDepVersion    = "ov"
	aDepCreatedBy  = "cb"
	aDepDesc       = "de"
	aDepDigest     = "dg"
	aDepFiles      = "fj"
	aDepComponents = "cj"
	aPtrActive     = "ac"
	aPtrEnqueued   = "eq"
	aMetaImports   = "im"
	aMetaExports   = "ex"
	aMetaWit       = "wt"
	aMetaOrigin    = "wo"
	aSourceDigest  = "dg"
	aRefAt         = "at"

	// inlineText marks text stored in the item itself; a CAS reference
	// starts with blobRef instead (putPayload).
	inlineText = "="
)

// depFile is a deployment file as stored in fj.
type depFile struct {
	Path   string `json:"p"`
	Digest string `json:"d"`
}

// depComponent is a deployment component as stored in cj, with its files
// (path → role).
type depComponent struct {
	Name   string            `json:"n"`
	Type   string            `json:"t"`
	Digest string            `json:"d"`
	Files  map[string]string `json:"f,omitempty"`
}

// putText stores s inline ("=" + s) or, above the inline threshold, in the
// CAS (putPayload, which also records the blob reference).
func (t *tx) putText(s string) (string, error) {
	if len(s) < t.b.inline {
		return inlineText + s, nil
	}
	return t.b.putPayload(t.ctx, []byte(s), 0, payloadOwner{})
}

func (t *tx) getText(s string) (string, error) {
	if rest, ok := strings.CutPrefix(s, inlineText); ok {
		return rest, nil
	}
	data, err := t.b.getPayload(t.ctx, s)
	return string(data), err
}

func depKey(dep core.DeploymentId) item { return keyOf(pkDeployments, dep.String()) }

func metadataKey(d core.ComponentDigest) item { return keyOf(prefixMetadata+d.String(), skMetadata) }

func sourceKey(m core.SourceMapping) item {
	return keyOf(prefixSource+m.Component.String(), sourceSK(m.Key))
}

func sourceSK(k core.SourceKey) string {
	if k.IsSuffix {
		return "S#" + k.FrameKey
	}
	return "E#" + k.FrameKey
}

// depTx is what one transaction read or buffered of deployment rows.
type depTx struct {
	rows     map[core.DeploymentId]*depRow
	order    []core.DeploymentId
	ptr      *pointer // nil until read
	metadata []core.ComponentMetadataRecord
	sources  []sourceWrite
}

// depRow is one deployment item: as read (raw, rev) and as it must be.
type depRow struct {
	raw    item // nil: absent when read, or inserted by this transaction
	rev    int64
	d      core.StoredDeployment
	insert bool
	dirty  bool
}

// pointer is the singleton that names the active and the enqueued deployment.
type pointer struct {
	active, enqueued string
	rev              int64
	exists           bool
	dirty            bool
}

type sourceWrite struct {
	m   core.SourceMapping
	old string // the digest replaced ("" if none)
	had bool   // the mapping existed when read
}

func (t *tx) dep() *depTx {
	if t.deps == nil {
		t.deps = &depTx{rows: map[core.DeploymentId]*depRow{}}
	}
	return t.deps
}

// --- reads -------------------------------------------------------------------------

func (t *tx) getItem(key item) (item, error) {
	in := &dynamodb.GetItemInput{TableName: t.b.tableName(), Key: key, ConsistentRead: aws.Bool(true)}
	out, err := t.b.api.GetItem(t.ctx, in, t.b.optFns...)
	if err != nil {
		return nil, err
	}
	return out.Item, nil
}

// row reads (once per transaction) a deployment item.
func (t *tx) row(id core.DeploymentId) (*depRow, error) {
	dt := t.dep()
	if r, ok := dt.rows[id]; ok {
		return r, nil
	}
	it, err := t.getItem(depKey(id))
	if err != nil {
		return nil, fmt.Errorf("dynamo: get deployment %s: %w", id, err)
	}
	r := &depRow{raw: it}
	if it != nil {
		if r.d, r.rev, err = t.decodeDeployment(it, true); err != nil {
			return nil, err
		}
	}
	dt.rows[id] = r
	dt.order = append(dt.order, id)
	return r, nil
}

func (t *tx) existing(id core.DeploymentId) (*depRow, error) {
	r, err := t.row(id)
	if err != nil {
		return nil, err
	}
	if r.raw == nil && !r.insert {
		return nil, notFound("deployment " + id.String())
	}
	return r, nil
}

// Deployment implements store.DeploymentReadTx.
func (t *tx) Deployment(id core.DeploymentId) (core.StoredDeployment, error) {
	r, err := t.existing(id)
	if err != nil {
		return core.StoredDeployment{}, err
	}
	return r.d, nil
}

func (t *tx) pointer() (*pointer, error) {
	dt := t.dep()
	if dt.ptr != nil {
		return dt.ptr, nil
	}
	it, err := t.getItem(keyOf(pkDepPointer, skDepPointer))
	if err != nil {
		return nil, fmt.Errorf("dynamo: read deployment pointer: %w", err)
	}
	p := &pointer{exists: it != nil}
	p.active, _ = getS(it, aPtrActive)
	p.enqueued, _ = getS(it, aPtrEnqueued)
	if p.rev, _, err = getN(it, aRev); err != nil {
		return nil, fmt.Errorf("dynamo: deployment pointer: %w", err)
	}
	dt.ptr = p
	return p, nil
}

// CurrentDeployments implements store.DeploymentReadTx from the pointer.
func (t *tx) CurrentDeployments() (active, enqueued *core.DeploymentId, err error) {
	p, err := t.pointer()
	if err != nil {
		return nil, nil, err
	}
	parse := func(s string) (*core.DeploymentId, error) {
		if s == "" {
			return nil, nil
		}
		id, err := core.ParseDeploymentId(s)
		if err != nil {
			return nil, fmt.Errorf("dynamo: deployment pointer %q: %w", s, err)
		}
		return &id, nil
	}
	if active, err = parse(p.active); err != nil {
		return nil, nil, err
	}
	enqueued, err = parse(p.enqueued)
	return active, enqueued, err
}

// decodeDeployment decodes a deployment item (with its TOML when withToml).
func (t *tx) decodeDeployment(it item, withToml bool) (core.StoredDeployment, int64, error) {
	var d core.StoredDeployment
	sk, _ := getS(it, AttrSK)
	id, err := core.ParseDeploymentId(sk)
	if err != nil {
		return d, 0, fmt.Errorf("dynamo: deployment key %q: %w", sk, err)
	}
	fail := func(what string, err error) (core.StoredDeployment, int64, error) {
		return d, 0, fmt.Errorf("dynamo: deployment %s %s: %w", id, what, err)
	}
	r := &d.Record
	r.DeploymentID = id
	if r.CreatedAt, err = getTS(it, aDepCreatedAt); err != nil {
		return fail("created_at", err)
	}
	if s, ok := getS(it, aDepLastActive); ok {
		ts, err := parseTS(s)
		if err != nil {
			return fail("last_active_at", err)
		}
		r.LastActiveAt = &ts
	}
	st, _ := getS(it, aDepStatus)
	r.Status = core.DeploymentStatus(st)
	if withToml {
		tm, _ := getS(it, aDepToml)
		if r.DeploymentToml, err = t.getText(tm); err != nil {
			return fail("TOML", err)
		}
	}
	r.ObeliskVersion, _ = getS(it, aDepVersion)
	if s, ok := getS(it, aDepCreatedBy); ok {
		r.CreatedBy = &s
	}
	if s, ok := getS(it, aDepDesc); ok {
		r.Description = &s
	}
	dg, _ := getS(it, aDepDigest)
	if r.Digest, err = core.ParseContentDigest(dg); err != nil {
		return fail("digest", err)
	}
	if fj, ok := getS(it, aDepFiles); ok {
		var files []depFile
		if err := json.Unmarshal([]byte(fj), &files); err != nil {
			return fail("files", err)
		}
		r.Files = make([]core.DeploymentFileRecord, len(files))
		for i, f := range files {
			if r.Files[i].Digest, err = core.ParseContentDigest(f.Digest); err != nil {
				return fail("file "+f.Path, err)
			}
			r.Files[i].Path = f.Path
		}
	}
	if cj, ok := getS(it, aDepComponents); ok {
		var comps []depComponent
		if err := json.Unmarshal([]byte(cj), &comps); err != nil {
			return fail("components", err)
		}
		for _, c := range comps {
			cd, err := core.ParseComponentDigest(c.Digest)
			if err != nil {
				return fail("component "+c.Name, err)
			}
			d.Components = append(d.Components, core.DeploymentComponentRecord{DeploymentID: id, ComponentName: c.Name,
				ComponentType: core.ComponentType(c.Type), ComponentDigest: cd})
			for _, p := range slices.Sorted(maps.Keys(c.Files)) {
				d.ComponentFiles = append(d.ComponentFiles, core.DeploymentComponentFileRecord{ComponentName: c.Name,
					Path: p, Role: core.ComponentFileRole(c.Files[p])})
			}
		}
	}
	rev, _, err := getN(it, aRev)
	if err != nil {
		return fail("revision", err)
	}
	return d, rev, nil
}

// Deployments implements store.DeploymentReadTx: one strongly consistent
// Query of the deployments partition, the cursor in the key condition.
func (t *tx) Deployments(p core.Pagination[*core.DeploymentId], withToml, withFiles bool) ([]core.StoredDeployment, error) {
	in := &dynamodb.QueryInput{TableName: t.b.tableName(), ConsistentRead: aws.Bool(true),
		ScanIndexForward: aws.Bool(!p.IsDesc()), Limit: aws.Int32(int32(p.Length)),
		ExpressionAttributeNames: map[string]string{"#pk": AttrPK}}
	vals := item{":pk": avS(pkDeployments)}
	cond := "#pk = :pk"
	if p.Cursor != nil {
		cond += " AND #sk " + p.Rel() + " :c"
		in.ExpressionAttributeNames["#sk"] = AttrSK
		vals[":c"] = avS(p.Cursor.String())
	}
	in.KeyConditionExpression, in.ExpressionAttributeValues = aws.String(cond), vals
	if !withToml || !withFiles {
		attrs := []string{AttrPK, AttrSK, aDepCreatedAt, aDepLastActive, aDepStatus, aDepVersion, aDepCreatedBy, aDepDesc, aDepDigest, aRev}
		if withToml {
			attrs = append(attrs, aDepToml)
		}
		if withFiles {
			attrs = append(attrs, aDepFiles, aDepComponents)
		}
		in.ProjectionExpression = aws.String(projectionExpr(in.ExpressionAttributeNames, attrs))
	}
	var out []core.StoredDeployment
	for {
		res, err := t.b.api.Query(t.ctx, in, t.b.optFns...)
		if err != nil {
			return nil, fmt.Errorf("dynamo: list deployments: %w", err)
		}
		for _, it := range res.Items {
			d, _, err := t.decodeDeployment(it, withToml)
			if err != nil {
				return nil, err
			}
			out = append(out, d)
		}
		if len(out) >= int(p.Length) || res.LastEvaluatedKey == nil {
			return out, nil
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
		in.Limit = aws.Int32(int32(int(p.Length) - len(out)))
	}
}

// ComponentMetadata implements store.DeploymentReadTx with a strongly
// consistent BatchGetItem.
func (t *tx) ComponentMetadata(digests []core.ComponentDigest) (map[core.ComponentDigest]core.ComponentMetadataRecord, error) {
	var keys []item
	for _, d := range digests {
		keys = append(keys, metadataKey(d))
	}
	its, err := t.b.batchGet(t.ctx, keys, true)
	if err != nil {
		return nil, fmt.Errorf("dynamo: read component metadata: %w", err)
	}
	out := map[core.ComponentDigest]core.ComponentMetadataRecord{}
	for _, it := range its {
		pk, _ := getS(it, AttrPK)
		d, err := core.ParseComponentDigest(strings.TrimPrefix(pk, prefixMetadata))
		if err != nil {
			return nil, fmt.Errorf("dynamo: metadata key %q: %w", pk, err)
		}
		m := core.ComponentMetadataRecord{ComponentDigest: d}
		im, _ := getS(it, aMetaImports)
		ex, _ := getS(it, aMetaExports)
		if err := json.Unmarshal([]byte(im), &m.Imports); err != nil {
			return nil, fmt.Errorf("dynamo: imports of %s: %w", d, err)
		}
		if err := json.Unmarshal([]byte(ex), &m.Exports); err != nil {
			return nil, fmt.Errorf("dynamo: exports of %s: %w", d, err)
		}
		wt, _ := getS(it, aMetaWit)
		if m.Wit, err = t.getText(wt); err != nil {
			return nil, err
		}
		origin, _, err := getN(it, aMetaOrigin)
		if err != nil {
			return nil, fmt.Errorf("dynamo: wit origin of %s: %w", d, err)
		}
		m.WitOrigin = core.WitOrigin(origin)
		out[d] = m
	}
	return out, nil
}

// SourceMappings implements store.DeploymentReadTx: one strongly consistent
// BatchGetItem of the keys.
func (t *tx) SourceMappings(component core.ComponentDigest, keys []core.SourceKey) ([]core.SourceMapping, error) {
	byKey := map[string]core.SourceKey{}
	var gets []item
	for _, k := range keys {
		m := core.SourceMapping{Component: component, Key: k}
		byKey[sourceSK(k)] = k
		gets = append(gets, sourceKey(m))
	}
	its, err := t.b.batchGet(t.ctx, gets, true)
	if err != nil {
		return nil, fmt.Errorf("dynamo: source mappings of %s: %w", component, err)
	}
	var out []core.SourceMapping
	for _, it := range its {
		sk, _ := getS(it, AttrSK)
		s, _ := getS(it, aSourceDigest)
		d, err := core.ParseContentDigest(s)
		if err != nil {
			return nil, fmt.Errorf("dynamo: source mapping digest %q: %w", s, err)
		}
		out = append(out, core.SourceMapping{Component: component, Key: byKey[sk], Digest: d})
	}
	return out, nil
}

// --- writes ------------------------------------------------------------------------

// InsertDeployment implements store.DeploymentTx (a put with
// attribute_not_exists: a duplicate id is core.ErrConflict at commit).
func (t *tx) InsertDeployment(d core.StoredDeployment) error {
	if err := t.mustWrite(); err != nil {
		return err
	}
	dt, id := t.dep(), d.Record.DeploymentID
	if r, ok := dt.rows[id]; ok && (r.raw != nil || r.insert) {
		return conflict("deployment %s already exists", id)
	}
	if _, ok := dt.rows[id]; !ok {
		dt.order = append(dt.order, id)
	}
	dt.rows[id] = &depRow{d: d, insert: true, dirty: true}
	return nil
}

// AddDeploymentComponents implements store.DeploymentTx.
func (t *tx) AddDeploymentComponents(id core.DeploymentId, records []core.DeploymentComponentRecord) error {
	if err := t.mustWrite(); err != nil {
		return err
	}
	r, err := t.existing(id)
	if err != nil {
		return err
	}
	r.d.Components = append(slices.Clone(r.d.Components), records...)
	r.dirty = true
	return nil
}

// SetDeploymentStatus implements store.DeploymentTx; the pointer follows
// the statuses in the same commit.
func (t *tx) SetDeploymentStatus(id core.DeploymentId, status core.DeploymentStatus, lastActiveAt *core.Timestamp) error {
	if err := t.mustWrite(); err != nil {
		return err
	}
	r, err := t.existing(id)
	if err != nil {
		return err
	}
	p, err := t.pointer()
	if err != nil {
		return err
	}
	r.d.Record.Status = status
	if lastActiveAt != nil {
		r.d.Record.LastActiveAt = lastActiveAt
	}
	r.dirty = true
	s := id.String()
	if p.active == s {
		p.active = ""
	}
	if p.enqueued == s {
		p.enqueued = ""
	}
	switch status {
	case core.DeploymentActive:
		p.active = s
	case core.DeploymentEnqueued:
		p.enqueued = s
	}
	p.dirty = true
	return nil
}

// InsertComponentMetadata implements store.DeploymentTx.
func (t *tx) InsertComponentMetadata(records []core.ComponentMetadataRecord) error {
	if err := t.mustWrite(); err != nil {
		return err
	}
	t.dep().metadata = append(t.dep().metadata, records...)
	return nil
}

// PutSourceMapping implements store.DeploymentTx: the mapping is read now;
// the commit replaces it on the condition that it still holds what was read.
func (t *tx) PutSourceMapping(m core.SourceMapping) error {
	if err := t.mustWrite(); err != nil {
		return err
	}
	cur, err := t.getItem(sourceKey(m))
	if err != nil {
		return fmt.Errorf("dynamo: source mapping %q: %w", m.Key.FrameKey, err)
	}
	old, _ := getS(cur, aSourceDigest)
	if old != m.Digest.String() {
		t.dep().sources = append(t.dep().sources, sourceWrite{m: m, old: old, had: cur != nil})
	}
	return nil
}

// --- the plan ----------------------------------------------------------------------

// planDeployments appends the ops of the buffered deployment writes to p:
// deployment items (new: attribute_not_exists, a uniqueness violation;
// changed: rv = :read), the pointer (rv = :read or absent), metadata
// (attribute_not_exists: a concurrent insert makes fn run again), source
// mappings (the digest read) with their blob references. The references of
// a new deployment's files are written before the commit (p.ahead), so gc
// never sees a committed file without its reference.
func (t *tx) planDeployments(p *plan) error {
	dt := t.deps
	if dt == nil {
		return nil
	}
	now := avS(t.b.now().String())
	for _, id := range dt.order {
		r := dt.rows[id]
		if !r.dirty {
			continue
		}
		it, err := t.encodeDeployment(r)
		if err != nil {
			return err
		}
		if size := ItemSize(it); size > maxItemBytes {
			return &core.ValidationError{Reason: fmt.Sprintf(
				"deployment %s is %d bytes, more than DynamoDB's item limit of %d (too many files or components)", id, size, maxItemBytes)}
		}
		if r.insert {
			p.ops = append(p.ops, newPut(opDepInsert, core.ExecutionId{}, it, true, "deployment "+id.String()+" already exists"))
			seen := map[core.ContentDigest]bool{}
			for _, f := range r.d.Record.Files {
				if !seen[f.Digest] {
					seen[f.Digest] = true
					p.ahead = append(p.ahead, aheadPut{it: item{AttrPK: avS(prefixRef + f.Digest.String()),
						AttrSK: avS("D#" + id.String() + "#" + t.rq), aRefAt: now}})
				}
			}
			continue
		}
		p.ops = append(p.ops, t.guardedPut(opDepUpdate, it, r.rev, "deployment "+id.String()))
	}
	if ptr := dt.ptr; ptr != nil && ptr.dirty {
		it := keyOf(pkDepPointer, skDepPointer)
		it[aRev], it[aReq] = avN(ptr.rev+1), avS(t.rq)
		if ptr.active != "" {
			it[aPtrActive] = avS(ptr.active)
		}
		if ptr.enqueued != "" {
			it[aPtrEnqueued] = avS(ptr.enqueued)
		}
		if ptr.exists {
			p.ops = append(p.ops, t.guardedPut(opPointer, it, ptr.rev, "deployment pointer"))
		} else {
			p.ops = append(p.ops, newPut(opPointer, core.ExecutionId{}, it, false, "deployment pointer"))
		}
	}
	var meta []op
	for _, m := range dt.metadata {
		it, err := t.encodeMetadata(m)
		if err != nil {
			return err
		}
		meta = append(meta, newPut(opMetadata, core.ExecutionId{}, it, false, "metadata "+m.ComponentDigest.String()))
	}
	for _, s := range dt.sources {
		key := sourceKey(s.m)
		it := item{AttrPK: key[AttrPK], AttrSK: key[AttrSK], aSourceDigest: avS(s.m.Digest.String()), aReq: avS(t.rq)}
		o := newPut(opSource, core.ExecutionId{}, it, false, "source mapping "+s.m.Key.FrameKey)
		if s.had {
			o.cond, o.names, o.values = "#dg = :old", map[string]string{"#dg": aSourceDigest}, item{":old": avS(s.old)}
		}
		refSK := avS("S#" + s.m.Component.String() + "#" + sourceSK(s.m.Key))
		ref := newPut(opRef, core.ExecutionId{}, item{AttrPK: avS(prefixRef + s.m.Digest.String()), AttrSK: refSK, aRefAt: now}, false, "blob reference")
		ref.cond, ref.names = "", nil
		p.ops = append(p.ops, o, ref)
		if s.old != "" {
			p.ops = append(p.ops, op{kind: opRefDelete, key: item{AttrPK: avS(prefixRef + s.old), AttrSK: refSK}, firstNew: -1, what: "blob reference"})
		}
	}
	// Metadata beyond the transaction's room is written ahead,
	// insert-if-absent: it is immutable and invisible until a deployment
	// binds it.
	if room := maxTxActions - len(p.ops); len(meta) > room {
		for _, o := range meta[max(room, 0):] {
			p.ahead = append(p.ahead, aheadPut{it: o.put, ifAbsent: true})
		}
		meta = meta[:max(room, 0)]
	}
	p.ops = append(p.ops, meta...)
	return nil
}

// guardedPut is a put of an item read at revision rev.
func (t *tx) guardedPut(kind opKind, it item, rev int64, what string) op {
	return op{kind: kind, key: item{AttrPK: it[AttrPK], AttrSK: it[AttrSK]}, put: it, cond: "#rv = :rv",
		names: map[string]string{"#rv": aRev}, values: item{":rv": avN(rev)}, what: what, firstNew: -1, size: ItemSize(it)}
}

// encodeDeployment is the item of a row: the item as read with the changed
// attributes replaced (an offloaded TOML is kept as is), or a new one.
func (t *tx) encodeDeployment(r *depRow) (item, error) {
	d, id := r.d, r.d.Record.DeploymentID
	it := depKey(id)
	if r.raw != nil {
		it = maps.Clone(r.raw)
		it[aRev] = avN(r.rev + 1)
	} else {
		toml, err := t.putText(d.Record.DeploymentToml)
		if err != nil {
			return nil, err
		}
		it[aDepCreatedAt], it[aDepToml], it[aDepVersion] = avS(d.Record.CreatedAt.String()), avS(toml), avS(d.Record.ObeliskVersion)
		it[aDepDigest], it[aRev], it[aCreateReq] = avS(d.Record.Digest.String()), avN(0), avS(t.rq)
		if d.Record.CreatedBy != nil {
			it[aDepCreatedBy] = avS(*d.Record.CreatedBy)
		}
		if d.Record.Description != nil {
			it[aDepDesc] = avS(*d.Record.Description)
		}
		fs := make([]depFile, len(d.Record.Files))
		for i, f := range d.Record.Files {
			fs[i] = depFile{Path: f.Path, Digest: f.Digest.String()}
		}
		fj, err := json.Marshal(fs)
		if err != nil {
			return nil, fmt.Errorf("dynamo: encode files of %s: %w", id, err)
		}
		it[aDepFiles] = avS(string(fj))
	}
	it[aReq], it[aDepStatus] = avS(t.rq), avS(string(d.Record.Status))
	if d.Record.LastActiveAt != nil {
		it[aDepLastActive] = avS((*d.Record.LastActiveAt).String())
	}
	comps := make([]depComponent, len(d.Components))
	for i, c := range d.Components {
		comps[i] = depComponent{Name: c.ComponentName, Type: string(c.ComponentType), Digest: c.ComponentDigest.String()}
		for _, f := range d.ComponentFiles {
			if f.ComponentName == c.ComponentName {
				if comps[i].Files == nil {
					comps[i].Files = map[string]string{}
				}
				comps[i].Files[f.Path] = string(f.Role)
			}
		}
	}
	cj, err := json.Marshal(comps)
	if err != nil {
		return nil, fmt.Errorf("dynamo: encode components of %s: %w", id, err)
	}
	it[aDepComponents] = avS(string(cj))
	return it, nil
}

func (t *tx) encodeMetadata(r core.ComponentMetadataRecord) (item, error) {
	imports, err := core.MarshalJSON(orEmpty(r.Imports))
	if err != nil {
		return nil, fmt.Errorf("dynamo: encode imports of %s: %w", r.ComponentDigest, err)
	}
	exports, err := core.MarshalJSON(orEmpty(r.Exports))
	if err != nil {
		return nil, fmt.Errorf("dynamo: encode exports of %s: %w", r.ComponentDigest, err)
	}
	wit, err := t.putText(r.Wit)
	if err != nil {
		return nil, err
	}
	it := metadataKey(r.ComponentDigest)
	it[aMetaImports], it[aMetaExports], it[aMetaWit], it[aMetaOrigin] = avS(string(imports)), avS(string(exports)), avS(wit), avN(r.WitOrigin)
	it[aReq] = avS(t.rq)
	return it, nil
}

func orEmpty(fs []core.PersistedFunctionMetadata) []core.PersistedFunctionMetadata {
	if fs == nil {
		return []core.PersistedFunctionMetadata{}
	}
	return fs
}
