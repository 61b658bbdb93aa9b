package dynamo

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stela-dev/stela/core"
)

// Deployments, component metadata and source mappings (core.DeploymentStore,
// docs/spec/semantics.md §6.5–6.7). doc.go ("Deployments") describes the items; in short:
//
//	deployment       pk "DEP", sk "<deployment id>": scalar fields, files and
//	                 components (with their files) as JSON, rv revision
//	pointer          pk "DEPPTR", sk "P": ac active id, eq enqueued id, rv
//	metadata         pk "CM#<component digest>", sk "M" (insert-if-absent)
//	source mapping   pk "SRC#<component digest>", sk "E#<key>" / "S#<key>"
//	blob reference   pk "REF#<content digest>", sk "D#<deployment>#<insert
//	                 request id>", "S#<component>#<E|S>#<key>" or "P"
//	                 (offloaded payload)

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
	aDepRev        = "rv"
	aDepReq        = "rq"
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

// Cas returns the CAS of offloaded payloads, deployment files and source
// mappings (Options.Cas).
func (b *Backend) Cas() core.Cas { return b.cas }

func validationf(format string, args ...any) error {
	return &core.ValidationError{Reason: fmt.Sprintf(format, args...)}
}

// putText stores s inline ("=" + s) or, above the inline threshold, in the
// CAS (putPayload, which also records the blob reference).
func (b *Backend) putText(ctx context.Context, s string) (string, error) {
	if len(s) < b.inline {
		return inlineText + s, nil
	}
	return b.putPayload(ctx, []byte(s), 0)
}

func (b *Backend) getText(ctx context.Context, s string) (string, error) {
	if rest, ok := strings.CutPrefix(s, inlineText); ok {
		return rest, nil
	}
	data, err := b.getPayload(ctx, s)
	return string(data), err
}

func depKey(dep core.DeploymentId) item {
	return item{AttrPK: avS(pkDeployments), AttrSK: avS(dep.String())}
}

func metadataKey(d core.ComponentDigest) item {
	return item{AttrPK: avS(prefixMetadata + d.String()), AttrSK: avS(skMetadata)}
}

func pointerKey() item { return item{AttrPK: avS(pkDepPointer), AttrSK: avS(skDepPointer)} }

// --- reading items ------------------------------------------------------------

func (b *Backend) getItem(ctx context.Context, key item, projection ...string) (item, error) {
	in := &dynamodb.GetItemInput{TableName: b.tableName(), Key: key, ConsistentRead: aws.Bool(true)}
	if len(projection) > 0 {
		names := map[string]string{}
		var ps []string
		for i, p := range projection {
			n := fmt.Sprintf("#p%d", i)
			names[n] = p
			ps = append(ps, n)
		}
		in.ProjectionExpression = aws.String(strings.Join(ps, ", "))
		in.ExpressionAttributeNames = names
	}
	out, err := b.api.GetItem(ctx, in, b.optFns...)
	if err != nil {
		return nil, err
	}
	return out.Item, nil
}

// pointer is the singleton that names the active and the enqueued deployment.
type pointer struct {
	active, enqueued string
	rev              int64
	exists           bool
}

func (b *Backend) readPointer(ctx context.Context) (pointer, error) {
	it, err := b.getItem(ctx, pointerKey())
	if err != nil {
		return pointer{}, fmt.Errorf("dynamo: read deployment pointer: %w", err)
	}
	if it == nil {
		return pointer{}, nil
	}
	p := pointer{exists: true}
	p.active, _ = getS(it, aPtrActive)
	p.enqueued, _ = getS(it, aPtrEnqueued)
	if p.rev, _, err = getN(it, aDepRev); err != nil {
		return pointer{}, fmt.Errorf("dynamo: deployment pointer: %w", err)
	}
	return p, nil
}

// pointerPut writes the pointer with the next revision, on the condition
// that it still has the revision p was read at.
func pointerPut(table string, p pointer, active, enqueued string) types.TransactWriteItem {
	it := pointerKey()
	it[aDepRev] = avN(p.rev + 1)
	if active != "" {
		it[aPtrActive] = avS(active)
	}
	if enqueued != "" {
		it[aPtrEnqueued] = avS(enqueued)
	}
	put := &types.Put{TableName: aws.String(table), Item: it}
	if p.exists {
		put.ConditionExpression = aws.String("#rv = :rv")
		put.ExpressionAttributeNames = map[string]string{"#rv": aDepRev}
		put.ExpressionAttributeValues = item{":rv": avN(p.rev)}
	} else {
		put.ConditionExpression = aws.String(condNotExists)
		put.ExpressionAttributeNames = map[string]string{"#pk": AttrPK}
	}
	return types.TransactWriteItem{Put: put}
}

// setStatus is an update of a deployment's status (and last_active_at);
// the deployment must exist.
func setStatus(table, dep string, status core.DeploymentStatus, lastActive *core.Timestamp) types.TransactWriteItem {
	expr := "SET #st = :st"
	vals := item{":st": avS(string(status))}
	names := map[string]string{"#pk": AttrPK, "#st": aDepStatus}
	if lastActive != nil {
		expr += ", #la = :la"
		names["#la"] = aDepLastActive
		vals[":la"] = avS(tsText(*lastActive))
	}
	return types.TransactWriteItem{Update: &types.Update{TableName: aws.String(table),
		Key: item{AttrPK: avS(pkDeployments), AttrSK: avS(dep)}, UpdateExpression: aws.String(expr),
		ConditionExpression: aws.String("attribute_exists(#pk)"), ExpressionAttributeNames: names,
		ExpressionAttributeValues: vals}}
}

// transact runs a transaction and returns the cancellation reason codes if
// it was cancelled (err is then nil), or a failure.
func (b *Backend) transact(ctx context.Context, ops []types.TransactWriteItem) ([]string, error) {
	_, err := b.api.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: ops,
		ClientRequestToken: aws.String(newRequestID())}, b.optFns...)
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		codes := make([]string, len(ops))
		for i, r := range tce.CancellationReasons {
			if i < len(codes) {
				codes[i] = aws.ToString(r.Code)
			}
		}
		return codes, nil
	}
	var tc *types.TransactionConflictException
	if errors.As(err, &tc) {
		return []string{"TransactionConflict"}, nil
	}
	return nil, err
}

func failed(codes []string, i int) bool {
	return i < len(codes) && codes[i] == "ConditionalCheckFailed"
}

// --- deployment records --------------------------------------------------------------

// depItem is a decoded deployment item.
type depItem struct {
	rec        core.DeploymentRecord // Files without sizes
	components []depComponent
	rev        int64
}

func (b *Backend) decodeDeployment(ctx context.Context, it item, withToml bool) (depItem, error) {
	var d depItem
	sk, _ := getS(it, AttrSK)
	id, err := core.ParseDeploymentId(sk)
	if err != nil {
		return d, fmt.Errorf("dynamo: deployment key %q: %w", sk, err)
	}
	r := &d.rec
	r.DeploymentID = id
	if r.CreatedAt, err = getTS(it, aDepCreatedAt); err != nil {
		return d, err
	}
	if s, ok := getS(it, aDepLastActive); ok {
		ts, err := parseTS(s)
		if err != nil {
			return d, err
		}
		r.LastActiveAt = &ts
	}
	st, _ := getS(it, aDepStatus)
	r.Status = core.DeploymentStatus(st)
	if withToml {
		t, _ := getS(it, aDepToml)
		if r.DeploymentToml, err = b.getText(ctx, t); err != nil {
			return d, err
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
		return d, fmt.Errorf("dynamo: deployment %s digest: %w", id, err)
	}
	if fj, ok := getS(it, aDepFiles); ok {
		var files []depFile
		if err := json.Unmarshal([]byte(fj), &files); err != nil {
			return d, fmt.Errorf("dynamo: deployment %s files: %w", id, err)
		}
		r.Files = make([]core.DeploymentFileRecord, len(files))
		for i, f := range files {
			dg, err := core.ParseContentDigest(f.Digest)
			if err != nil {
				return d, fmt.Errorf("dynamo: deployment %s file %q: %w", id, f.Path, err)
			}
			r.Files[i] = core.DeploymentFileRecord{Path: f.Path, Digest: dg}
		}
	}
	if cj, ok := getS(it, aDepComponents); ok {
		if err := json.Unmarshal([]byte(cj), &d.components); err != nil {
			return d, fmt.Errorf("dynamo: deployment %s components: %w", id, err)
		}
	}
	if d.rev, _, err = getN(it, aDepRev); err != nil {
		return d, err
	}
	return d, nil
}

func (b *Backend) getDeployment(ctx context.Context, dep core.DeploymentId) (depItem, bool, error) {
	it, err := b.getItem(ctx, depKey(dep))
	if err != nil {
		return depItem{}, false, fmt.Errorf("dynamo: get deployment %s: %w", dep, err)
	}
	if it == nil {
		return depItem{}, false, nil
	}
	d, err := b.decodeDeployment(ctx, it, true)
	return d, err == nil, err
}

// --- insert -------------------------------------------------------------------------------

// existingMetadata returns the digests among ds that have a metadata item.
func (b *Backend) existingMetadata(ctx context.Context, ds []core.ComponentDigest) (map[core.ComponentDigest]bool, error) {
	seen := map[core.ComponentDigest]bool{}
	var keys []item
	for _, d := range ds {
		if !seen[d] {
			seen[d] = true
			keys = append(keys, metadataKey(d))
		}
	}
	its, err := b.batchGet(ctx, keys, true)
	if err != nil {
		return nil, fmt.Errorf("dynamo: read component metadata: %w", err)
	}
	found := map[core.ComponentDigest]bool{}
	for _, it := range its {
		pk, _ := getS(it, AttrPK)
		d, err := core.ParseComponentDigest(strings.TrimPrefix(pk, prefixMetadata))
		if err != nil {
			return nil, fmt.Errorf("dynamo: metadata key %q: %w", pk, err)
		}
		found[d] = true
	}
	return found, nil
}

func (b *Backend) metadataPut(ctx context.Context, r core.ComponentMetadataRecord) (types.TransactWriteItem, error) {
	imports, err := core.MarshalJSON(orEmpty(r.Imports))
	if err != nil {
		return types.TransactWriteItem{}, fmt.Errorf("dynamo: encode imports of %s: %w", r.ComponentDigest, err)
	}
	exports, err := core.MarshalJSON(orEmpty(r.Exports))
	if err != nil {
		return types.TransactWriteItem{}, fmt.Errorf("dynamo: encode exports of %s: %w", r.ComponentDigest, err)
	}
	wit, err := b.putText(ctx, r.Wit)
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	it := metadataKey(r.ComponentDigest)
	it[aMetaImports], it[aMetaExports], it[aMetaWit], it[aMetaOrigin] = avS(string(imports)), avS(string(exports)), avS(wit), avN(r.WitOrigin)
	return types.TransactWriteItem{Put: &types.Put{TableName: b.tableName(), Item: it,
		ConditionExpression: aws.String(condNotExists), ExpressionAttributeNames: map[string]string{"#pk": AttrPK}}}, nil
}

func orEmpty(fs []core.PersistedFunctionMetadata) []core.PersistedFunctionMetadata {
	if fs == nil {
		return []core.PersistedFunctionMetadata{}
	}
	return fs
}

// insertMetadata writes the records whose digest has no metadata yet, one
// conditional put each (first write wins).
func (b *Backend) insertMetadata(ctx context.Context, records []core.ComponentMetadataRecord) error {
	for _, r := range records {
		op, err := b.metadataPut(ctx, r)
		if err != nil {
			return err
		}
		_, err = b.api.PutItem(ctx, &dynamodb.PutItemInput{TableName: b.tableName(), Item: op.Put.Item,
			ConditionExpression: op.Put.ConditionExpression, ExpressionAttributeNames: op.Put.ExpressionAttributeNames}, b.optFns...)
		var ccf *types.ConditionalCheckFailedException
		if err != nil && !errors.As(err, &ccf) {
			return fmt.Errorf("dynamo: put component metadata %s: %w", r.ComponentDigest, err)
		}
	}
	return nil
}

// UpsertComponentMetadata implements core.DeploymentStore: insert-if-absent
// by digest (first write wins).
func (b *Backend) UpsertComponentMetadata(ctx context.Context, records []core.ComponentMetadataRecord) error {
	if err := b.checkOpen(); err != nil {
		return err
	}
	for _, r := range records {
		if err := r.Validate(); err != nil {
			return err
		}
	}
	return b.insertMetadata(ctx, records)
}

// writeRefs records that the deployment refers to each digest (blob
// reference items, written before the deployment so that gc never misses
// them), with PutItem calls, 8 at a time.
func (b *Backend) writeRefs(ctx context.Context, sk string, digests []core.ContentDigest) error {
	at := avS(tsText(b.now()))
	seen := map[core.ContentDigest]bool{}
	var todo []core.ContentDigest
	for _, d := range digests {
		if !seen[d] {
			seen[d] = true
			todo = append(todo, d)
		}
	}
	errs := make([]error, len(todo))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, d := range todo {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			_, err := b.api.PutItem(ctx, &dynamodb.PutItemInput{TableName: b.tableName(),
				Item: item{AttrPK: avS(prefixRef + d.String()), AttrSK: avS(sk), aRefAt: at}}, b.optFns...)
			if err != nil {
				errs[i] = fmt.Errorf("dynamo: write reference to %s: %w", d, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// InsertDeploymentWithComponents implements core.DeploymentStore. The
// deployment item (with its files and components) and the metadata not yet
// stored are one TransactWriteItems; the blob references of its files are
// written just before it. A duplicate deployment id is core.ErrConflict.
func (b *Backend) InsertDeploymentWithComponents(ctx context.Context, record core.DeploymentRecord, metadata []core.ComponentMetadataRecord, components []core.DeploymentComponentRecord, files []core.DeploymentComponentFileRecord) error {
	if err := b.checkOpen(); err != nil {
		return err
	}
	if record.Status != core.DeploymentInactive || record.LastActiveAt != nil {
		return validationf("a new deployment must be inactive and never active")
	}
	for _, m := range metadata {
		if err := m.Validate(); err != nil {
			return err
		}
	}
	dep := record.DeploymentID
	fs := make([]depFile, len(record.Files))
	paths := map[string]bool{}
	var digests []core.ContentDigest
	for i, f := range record.Files {
		if paths[f.Path] {
			return fmt.Errorf("dynamo: deployment %s: file %q listed twice: %w", dep, f.Path, core.ErrConflict)
		}
		paths[f.Path] = true
		fs[i] = depFile{Path: f.Path, Digest: f.Digest.String()}
		digests = append(digests, f.Digest)
	}
	slices.SortFunc(fs, func(a, b depFile) int {
		return cmp.Or(strings.Compare(a.Path, b.Path), strings.Compare(a.Digest, b.Digest))
	})
	var comps []depComponent
	byName := map[string]*depComponent{}
	for _, c := range components {
		if c.DeploymentID != dep {
			return validationf("component %q belongs to deployment %s, not %s", c.ComponentName, c.DeploymentID, dep)
		}
		if _, ok := byName[c.ComponentName]; !ok {
			comps = append(comps, depComponent{Name: c.ComponentName, Type: string(c.ComponentType), Digest: c.ComponentDigest.String()})
			byName[c.ComponentName] = &comps[len(comps)-1]
		}
	}
	for i := range comps {
		byName[comps[i].Name] = &comps[i]
	}
	for _, f := range files {
		c, ok := byName[f.ComponentName]
		if !ok {
			return validationf("component file %q: no component %q in deployment %s", f.Path, f.ComponentName, dep)
		}
		if !paths[f.Path] {
			return validationf("component file %q of %q is not a file of deployment %s", f.Path, f.ComponentName, dep)
		}
		if !f.Role.Valid() {
			return validationf("component file %q of %q: invalid role %q", f.Path, f.ComponentName, f.Role)
		}
		if c.Files == nil {
			c.Files = map[string]string{}
		}
		if _, dup := c.Files[f.Path]; dup {
			return fmt.Errorf("dynamo: deployment %s: component file %q of %q listed twice: %w", dep, f.Path, f.ComponentName, core.ErrConflict)
		}
		c.Files[f.Path] = string(f.Role)
	}
	provided := map[core.ComponentDigest]core.ComponentMetadataRecord{}
	var mdigests []core.ComponentDigest
	for _, m := range metadata {
		if _, ok := provided[m.ComponentDigest]; !ok {
			provided[m.ComponentDigest] = m
			mdigests = append(mdigests, m.ComponentDigest)
		}
	}
	for _, c := range components {
		mdigests = append(mdigests, c.ComponentDigest)
	}

	fj, err := json.Marshal(fs)
	if err != nil {
		return fmt.Errorf("dynamo: encode files of %s: %w", dep, err)
	}
	cj, err := json.Marshal(comps)
	if err != nil {
		return fmt.Errorf("dynamo: encode components of %s: %w", dep, err)
	}
	toml, err := b.putText(ctx, record.DeploymentToml)
	if err != nil {
		return err
	}
	rq := newRequestID()
	it := depKey(dep)
	it[aDepCreatedAt], it[aDepStatus], it[aDepToml] = avS(tsText(record.CreatedAt)), avS(string(core.DeploymentInactive)), avS(toml)
	it[aDepVersion], it[aDepDigest], it[aDepRev], it[aDepReq] = avS(record.ObeliskVersion), avS(record.Digest.String()), avN(0), avS(rq)
	it[aDepFiles], it[aDepComponents] = avS(string(fj)), avS(string(cj))
	if record.CreatedBy != nil {
		it[aDepCreatedBy] = avS(*record.CreatedBy)
	}
	if record.Description != nil {
		it[aDepDesc] = avS(*record.Description)
	}
	if size := itemSize(it); size > maxItemBytes {
		return validationf("deployment %s is %d bytes, more than DynamoDB's item limit of %d (too many files or components)", dep, size, maxItemBytes)
	}
	if err := b.writeRefs(ctx, "D#"+dep.String()+"#"+rq, digests); err != nil {
		return err
	}
	for attempt := 1; ; attempt++ {
		exist, err := b.existingMetadata(ctx, mdigests)
		if err != nil {
			return err
		}
		for _, c := range components {
			if _, ok := provided[c.ComponentDigest]; !ok && !exist[c.ComponentDigest] {
				return validationf("component %q: no metadata for digest %s", c.ComponentName, c.ComponentDigest)
			}
		}
		var absent []core.ComponentMetadataRecord
		for _, d := range mdigests {
			if m, ok := provided[d]; ok && !exist[d] && !slices.ContainsFunc(absent, func(a core.ComponentMetadataRecord) bool { return a.ComponentDigest == d }) {
				absent = append(absent, m)
			}
		}
		// The transaction holds the deployment and up to 99 metadata items;
		// more are written first, insert-if-absent (they are invisible
		// without a deployment binding them).
		if len(absent) > maxTxActions-1 {
			if err := b.insertMetadata(ctx, absent[maxTxActions-1:]); err != nil {
				return err
			}
			absent = absent[:maxTxActions-1]
		}
		ops := []types.TransactWriteItem{{Put: &types.Put{TableName: b.tableName(), Item: it,
			ConditionExpression: aws.String(condNotExists), ExpressionAttributeNames: map[string]string{"#pk": AttrPK},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}}}
		for _, m := range absent {
			op, err := b.metadataPut(ctx, m)
			if err != nil {
				return err
			}
			ops = append(ops, op)
		}
		codes, err := b.transact(ctx, ops)
		if err != nil {
			return fmt.Errorf("dynamo: insert deployment %s: %w", dep, err)
		}
		if codes == nil {
			return nil
		}
		if failed(codes, 0) {
			// An earlier attempt of this very insert (same request id) may have
			// committed before its answer was lost.
			if cur, err := b.getItem(ctx, depKey(dep), aDepReq); err == nil && cur != nil {
				if r, _ := getS(cur, aDepReq); r == rq {
					return nil
				}
			}
			return fmt.Errorf("dynamo: insert deployment %s: %w", dep, core.ErrConflict)
		}
		if attempt >= b.maxAttempts {
			return fmt.Errorf("dynamo: insert deployment %s gave up after %d attempts: %v", dep, attempt, codes)
		}
		if err := sleepJitter(ctx, attempt); err != nil {
			return err
		}
	}
}

// InsertDeploymentComponents implements core.DeploymentStore:
// insert-if-absent by (deployment, name), as one conditional update of the
// deployment item (guarded by its revision).
func (b *Backend) InsertDeploymentComponents(ctx context.Context, dep core.DeploymentId, records []core.DeploymentComponentRecord) error {
	if err := b.checkOpen(); err != nil {
		return err
	}
	var digests []core.ComponentDigest
	for _, r := range records {
		if r.DeploymentID != dep {
			return validationf("component %q belongs to deployment %s, not %s", r.ComponentName, r.DeploymentID, dep)
		}
		digests = append(digests, r.ComponentDigest)
	}
	for attempt := 1; ; attempt++ {
		d, ok, err := b.getDeployment(ctx, dep)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("dynamo: insert components of deployment %s: %w", dep, core.ErrNotFound)
		}
		exist, err := b.existingMetadata(ctx, digests)
		if err != nil {
			return err
		}
		comps := d.components
		for _, r := range records {
			if !exist[r.ComponentDigest] {
				return validationf("component %q: no metadata for digest %s", r.ComponentName, r.ComponentDigest)
			}
			if !slices.ContainsFunc(comps, func(c depComponent) bool { return c.Name == r.ComponentName }) {
				comps = append(comps, depComponent{Name: r.ComponentName, Type: string(r.ComponentType), Digest: r.ComponentDigest.String()})
			}
		}
		cj, err := json.Marshal(comps)
		if err != nil {
			return fmt.Errorf("dynamo: encode components of %s: %w", dep, err)
		}
		_, err = b.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: b.tableName(), Key: depKey(dep),
			UpdateExpression:          aws.String("SET #cj = :cj, #rv = :next"),
			ConditionExpression:       aws.String("#rv = :rv"),
			ExpressionAttributeNames:  map[string]string{"#cj": aDepComponents, "#rv": aDepRev},
			ExpressionAttributeValues: item{":cj": avS(string(cj)), ":rv": avN(d.rev), ":next": avN(d.rev + 1)},
		}, b.optFns...)
		var ccf *types.ConditionalCheckFailedException
		if !errors.As(err, &ccf) {
			if err != nil {
				return fmt.Errorf("dynamo: insert components of deployment %s: %w", dep, err)
			}
			return nil
		}
		if attempt >= b.maxAttempts {
			return fmt.Errorf("dynamo: insert components of deployment %s gave up after %d attempts: %w", dep, attempt, err)
		}
		if err := sleepJitter(ctx, attempt); err != nil {
			return err
		}
	}
}

// --- components ---------------------------------------------------------------------------

// metadataOf reads the metadata of digests (absent ones are omitted).
func (b *Backend) metadataOf(ctx context.Context, digests []core.ComponentDigest) (map[core.ComponentDigest]core.ComponentMetadataRecord, error) {
	var keys []item
	seen := map[core.ComponentDigest]bool{}
	for _, d := range digests {
		if !seen[d] {
			seen[d] = true
			keys = append(keys, metadataKey(d))
		}
	}
	its, err := b.batchGet(ctx, keys, true)
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
		if m.Wit, err = b.getText(ctx, wt); err != nil {
			return nil, err
		}
		origin, _, err := getN(it, aMetaOrigin)
		if err != nil {
			return nil, err
		}
		m.WitOrigin = core.WitOrigin(origin)
		out[d] = m
	}
	return out, nil
}

// ListDeploymentComponents implements core.DeploymentStore: components with
// metadata by type then name, each with its files whose blob is in the CAS.
func (b *Backend) ListDeploymentComponents(ctx context.Context, dep core.DeploymentId) ([]core.DeploymentComponentDetail, error) {
	if err := b.checkOpen(); err != nil {
		return nil, err
	}
	d, ok, err := b.getDeployment(ctx, dep)
	if err != nil || !ok {
		return []core.DeploymentComponentDetail{}, err
	}
	var digests []core.ComponentDigest
	for _, c := range d.components {
		cd, err := core.ParseComponentDigest(c.Digest)
		if err != nil {
			return nil, fmt.Errorf("dynamo: component %q of %s: %w", c.Name, dep, err)
		}
		digests = append(digests, cd)
	}
	meta, err := b.metadataOf(ctx, digests)
	if err != nil {
		return nil, err
	}
	fileDigest := map[string]core.ContentDigest{}
	for _, f := range d.rec.Files {
		fileDigest[f.Path] = f.Digest
	}
	comps := slices.Clone(d.components)
	slices.SortFunc(comps, func(a, b depComponent) int {
		return cmp.Or(strings.Compare(a.Type, b.Type), strings.Compare(a.Name, b.Name))
	})
	out := []core.DeploymentComponentDetail{}
	for _, c := range comps {
		cd, _ := core.ParseComponentDigest(c.Digest)
		m, ok := meta[cd]
		if !ok {
			continue
		}
		detail := core.DeploymentComponentDetail{
			ComponentID: core.ComponentId{ComponentType: core.ComponentType(c.Type), Name: c.Name, ComponentDigest: cd},
			Imports:     m.Imports, Exports: m.Exports, Wit: m.Wit, Files: []core.DeploymentComponentFileDetail{},
		}
		paths := make([]string, 0, len(c.Files))
		for p := range c.Files {
			paths = append(paths, p)
		}
		slices.Sort(paths)
		files := make([]core.DeploymentFileRecord, len(paths))
		for i, p := range paths {
			files[i] = core.DeploymentFileRecord{Path: p, Digest: fileDigest[p]}
		}
		present, err := b.sizes(ctx, files)
		if err != nil {
			return nil, err
		}
		for i, f := range files {
			if present[i] {
				detail.Files = append(detail.Files, core.DeploymentComponentFileDetail{File: f, Role: core.ComponentFileRole(c.Files[f.Path])})
			}
		}
		out = append(out, detail)
	}
	return out, nil
}

// GetDeploymentComponentWit implements core.DeploymentStore.
func (b *Backend) GetDeploymentComponentWit(ctx context.Context, dep core.DeploymentId, digest core.ComponentDigest) (string, error) {
	if err := b.checkOpen(); err != nil {
		return "", err
	}
	d, ok, err := b.getDeployment(ctx, dep)
	if err != nil {
		return "", err
	}
	if ok && slices.ContainsFunc(d.components, func(c depComponent) bool { return c.Digest == digest.String() }) {
		meta, err := b.metadataOf(ctx, []core.ComponentDigest{digest})
		if err != nil {
			return "", err
		}
		if m, ok := meta[digest]; ok {
			return m.Wit, nil
		}
	}
	return "", fmt.Errorf("dynamo: wit of %s in deployment %s: %w", digest, dep, core.ErrNotFound)
}

// --- files and sizes -----------------------------------------------------------------------

// sizes fills in each file's size from the CAS (0 when missing) and reports
// which blobs are present. Blobs are looked up 8 at a time.
func (b *Backend) sizes(ctx context.Context, files []core.DeploymentFileRecord) ([]bool, error) {
	present := make([]bool, len(files))
	errs := make([]error, len(files))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i := range files {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			n, ok, err := b.blobSize(ctx, files[i].Digest)
			files[i].Size, present[i], errs[i] = uint64(n), ok, err
			if err == nil && !ok {
				b.log.WarnContext(ctx, "deployment file blob is missing from the CAS", "path", files[i].Path, "digest", files[i].Digest.String())
			}
		}()
	}
	wg.Wait()
	return present, errors.Join(errs...)
}

// blobSize returns the size of a blob and whether it is in the CAS.
func (b *Backend) blobSize(ctx context.Context, d core.ContentDigest) (int64, bool, error) {
	if b.cas == nil {
		return 0, false, nil
	}
	var n int64
	var err error
	if s, ok := b.cas.(interface {
		Size(context.Context, core.ContentDigest) (int64, error)
	}); ok {
		n, err = s.Size(ctx, d)
	} else {
		var data []byte
		data, err = b.cas.ReadBlob(ctx, d)
		n = int64(len(data))
	}
	if errors.Is(err, core.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("dynamo: size of %s: %w", d, err)
	}
	return n, true, nil
}

func (b *Backend) withSizes(ctx context.Context, r *core.DeploymentRecord) error {
	if r.Files == nil {
		r.Files = []core.DeploymentFileRecord{}
	}
	_, err := b.sizes(ctx, r.Files)
	return err
}

// ListDeploymentFiles implements core.DeploymentStore: by path, sizes from
// the CAS.
func (b *Backend) ListDeploymentFiles(ctx context.Context, dep core.DeploymentId) ([]core.DeploymentFileRecord, error) {
	if err := b.checkOpen(); err != nil {
		return nil, err
	}
	d, _, err := b.getDeployment(ctx, dep)
	if err != nil {
		return nil, err
	}
	if err := b.withSizes(ctx, &d.rec); err != nil {
		return nil, err
	}
	return d.rec.Files, nil
}

// MissingDigests implements core.DeploymentStore: the deployment's file
// digests not in the CAS, by digest, with repeats.
func (b *Backend) MissingDigests(ctx context.Context, dep core.DeploymentId) ([]core.ContentDigest, error) {
	if err := b.checkOpen(); err != nil {
		return nil, err
	}
	d, _, err := b.getDeployment(ctx, dep)
	if err != nil {
		return nil, err
	}
	present, err := b.sizes(ctx, d.rec.Files)
	if err != nil {
		return nil, err
	}
	missing := []core.ContentDigest{}
	for i, f := range d.rec.Files {
		if !present[i] {
			missing = append(missing, f.Digest)
		}
	}
	slices.SortStableFunc(missing, func(a, b core.ContentDigest) int { return strings.Compare(a.String(), b.String()) })
	return missing, nil
}

// --- get, list, activate, enqueue ----------------------------------------------------------

// GetDeployment implements core.DeploymentStore.
func (b *Backend) GetDeployment(ctx context.Context, dep core.DeploymentId) (core.DeploymentRecord, error) {
	if err := b.checkOpen(); err != nil {
		return core.DeploymentRecord{}, err
	}
	d, ok, err := b.getDeployment(ctx, dep)
	if err != nil {
		return core.DeploymentRecord{}, err
	}
	if !ok {
		return core.DeploymentRecord{}, fmt.Errorf("dynamo: deployment %s: %w", dep, core.ErrNotFound)
	}
	if err := b.withSizes(ctx, &d.rec); err != nil {
		return core.DeploymentRecord{}, err
	}
	return d.rec, nil
}

// pointed returns the deployment the pointer names as active (or enqueued,
// then active), re-reading when a concurrent switch changed it in between.
func (b *Backend) pointed(ctx context.Context, preferEnqueued bool, what string) (core.DeploymentRecord, error) {
	if err := b.checkOpen(); err != nil {
		return core.DeploymentRecord{}, err
	}
	for attempt := 1; ; attempt++ {
		p, err := b.readPointer(ctx)
		if err != nil {
			return core.DeploymentRecord{}, err
		}
		id, want := p.active, core.DeploymentActive
		if preferEnqueued && p.enqueued != "" {
			id, want = p.enqueued, core.DeploymentEnqueued
		}
		if id == "" {
			return core.DeploymentRecord{}, fmt.Errorf("dynamo: %s: %w", what, core.ErrNotFound)
		}
		dep, err := core.ParseDeploymentId(id)
		if err != nil {
			return core.DeploymentRecord{}, fmt.Errorf("dynamo: deployment pointer %q: %w", id, err)
		}
		d, ok, err := b.getDeployment(ctx, dep)
		if err != nil {
			return core.DeploymentRecord{}, err
		}
		if ok && d.rec.Status == want {
			if err := b.withSizes(ctx, &d.rec); err != nil {
				return core.DeploymentRecord{}, err
			}
			return d.rec, nil
		}
		if attempt >= b.maxAttempts {
			return core.DeploymentRecord{}, fmt.Errorf("dynamo: %s: pointer and deployment %s disagree", what, id)
		}
		if err := sleepJitter(ctx, attempt); err != nil {
			return core.DeploymentRecord{}, err
		}
	}
}

// GetActiveDeployment implements core.DeploymentStore.
func (b *Backend) GetActiveDeployment(ctx context.Context) (core.DeploymentRecord, error) {
	return b.pointed(ctx, false, "active deployment")
}

// GetCurrentDeployment implements core.DeploymentStore: the enqueued
// deployment, else the active one.
func (b *Backend) GetCurrentDeployment(ctx context.Context) (core.DeploymentRecord, error) {
	return b.pointed(ctx, true, "current deployment")
}

// queryDeployments reads a page of deployment items (strongly consistent),
// newest first; projection limits the attributes read (nil = all).
func (b *Backend) queryDeployments(ctx context.Context, p core.Pagination[*core.DeploymentId], withToml, withFiles bool) ([]depItem, error) {
	in := &dynamodb.QueryInput{TableName: b.tableName(), ConsistentRead: aws.Bool(true),
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
		attrs := []string{AttrPK, AttrSK, aDepCreatedAt, aDepLastActive, aDepStatus, aDepVersion, aDepCreatedBy, aDepDesc, aDepDigest, aDepRev}
		if withToml {
			attrs = append(attrs, aDepToml)
		}
		if withFiles {
			attrs = append(attrs, aDepFiles, aDepComponents)
		}
		var ps []string
		for i, a := range attrs {
			n := fmt.Sprintf("#a%d", i)
			in.ExpressionAttributeNames[n] = a
			ps = append(ps, n)
		}
		in.ProjectionExpression = aws.String(strings.Join(ps, ", "))
	}
	var out []depItem
	for {
		res, err := b.api.Query(ctx, in, b.optFns...)
		if err != nil {
			return nil, fmt.Errorf("dynamo: list deployments: %w", err)
		}
		for _, it := range res.Items {
			d, err := b.decodeDeployment(ctx, it, withToml)
			if err != nil {
				return nil, err
			}
			out = append(out, d)
		}
		if len(out) >= int(p.Length) || res.LastEvaluatedKey == nil {
			break
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
		in.Limit = aws.Int32(int32(int(p.Length) - len(out)))
	}
	if !p.IsDesc() {
		slices.Reverse(out)
	}
	return out, nil
}

// ListDeployments implements core.DeploymentStore: newest first, with TOML
// and files.
func (b *Backend) ListDeployments(ctx context.Context, p core.Pagination[*core.DeploymentId]) ([]core.DeploymentRecord, error) {
	if err := b.checkOpen(); err != nil {
		return nil, err
	}
	ds, err := b.queryDeployments(ctx, p, true, true)
	if err != nil {
		return nil, err
	}
	out := make([]core.DeploymentRecord, len(ds))
	for i := range ds {
		if err := b.withSizes(ctx, &ds[i].rec); err != nil {
			return nil, err
		}
		out[i] = ds[i].rec
	}
	return out, nil
}

// ActivateDeployment implements core.DeploymentStore: one transaction
// demotes the active and the enqueued deployment, promotes the target and
// moves the pointer (guarded by its revision).
func (b *Backend) ActivateDeployment(ctx context.Context, dep core.DeploymentId, now core.Timestamp) error {
	if err := b.checkOpen(); err != nil {
		return err
	}
	id := dep.String()
	for attempt := 1; ; attempt++ {
		p, err := b.readPointer(ctx)
		if err != nil {
			return err
		}
		ops := []types.TransactWriteItem{setStatus(b.table, id, core.DeploymentActive, &now), pointerPut(b.table, p, id, "")}
		for _, other := range []string{p.active, p.enqueued} {
			if other != "" && other != id {
				ops = append(ops, setStatus(b.table, other, core.DeploymentInactive, nil))
			}
		}
		codes, err := b.transact(ctx, ops)
		if err != nil {
			return fmt.Errorf("dynamo: activate deployment %s: %w", dep, err)
		}
		if codes == nil {
			return nil
		}
		if failed(codes, 0) {
			return fmt.Errorf("dynamo: activate deployment %s: %w", dep, core.ErrNotFound)
		}
		if attempt >= b.maxAttempts {
			return fmt.Errorf("dynamo: activate deployment %s gave up after %d attempts: %v", dep, attempt, codes)
		}
		if err := sleepJitter(ctx, attempt); err != nil {
			return err
		}
	}
}

// EnqueueDeployment implements core.DeploymentStore (one transaction, as
// ActivateDeployment).
func (b *Backend) EnqueueDeployment(ctx context.Context, dep core.DeploymentId) (core.EnqueueOutcome, error) {
	if err := b.checkOpen(); err != nil {
		return 0, err
	}
	id := dep.String()
	for attempt := 1; ; attempt++ {
		p, err := b.readPointer(ctx)
		if err != nil {
			return 0, err
		}
		var ops []types.TransactWriteItem
		out := core.Enqueued
		if p.active == id {
			out = core.EnqueueAlreadyActive
			if p.enqueued == "" {
				return out, nil
			}
			ops = append(ops, pointerPut(b.table, p, p.active, ""))
		} else {
			ops = append(ops, setStatus(b.table, id, core.DeploymentEnqueued, nil), pointerPut(b.table, p, p.active, id))
		}
		if p.enqueued != "" && p.enqueued != id {
			ops = append(ops, setStatus(b.table, p.enqueued, core.DeploymentInactive, nil))
		}
		codes, err := b.transact(ctx, ops)
		if err != nil {
			return 0, fmt.Errorf("dynamo: enqueue deployment %s: %w", dep, err)
		}
		if codes == nil {
			return out, nil
		}
		if out == core.Enqueued && failed(codes, 0) {
			return 0, fmt.Errorf("dynamo: enqueue deployment %s: %w", dep, core.ErrNotFound)
		}
		if attempt >= b.maxAttempts {
			return 0, fmt.Errorf("dynamo: enqueue deployment %s gave up after %d attempts: %v", dep, attempt, codes)
		}
		if err := sleepJitter(ctx, attempt); err != nil {
			return 0, err
		}
	}
}

// --- source mappings ----------------------------------------------------------------------

func sourceSK(key string, isSuffix bool) string {
	if isSuffix {
		return "S#" + key
	}
	return "E#" + key
}

// UpsertSourceMapping implements core.DeploymentStore (replace semantics):
// one transaction writes the mapping, the reference to the new blob and
// removes the reference to the replaced one, conditional on the mapping
// still referring to what was read. The blob must be in the CAS.
func (b *Backend) UpsertSourceMapping(ctx context.Context, component core.ComponentDigest, frameKey string, isSuffix bool, digest core.ContentDigest) error {
	if err := b.checkOpen(); err != nil {
		return err
	}
	present := false
	if b.cas != nil {
		var err error
		if present, err = b.cas.ContainsBlob(ctx, digest); err != nil {
			return fmt.Errorf("dynamo: source mapping %q: %w", frameKey, err)
		}
	}
	if !present {
		return validationf("source mapping %q: blob %s is not in the CAS", frameKey, digest)
	}
	key := item{AttrPK: avS(prefixSource + component.String()), AttrSK: avS(sourceSK(frameKey, isSuffix))}
	refSK := "S#" + component.String() + "#" + sourceSK(frameKey, isSuffix)
	for attempt := 1; ; attempt++ {
		cur, err := b.getItem(ctx, key)
		if err != nil {
			return fmt.Errorf("dynamo: source mapping %q: %w", frameKey, err)
		}
		old, _ := getS(cur, aSourceDigest)
		if old == digest.String() {
			return nil
		}
		mapping := item{AttrPK: key[AttrPK], AttrSK: key[AttrSK], aSourceDigest: avS(digest.String())}
		put := &types.Put{TableName: b.tableName(), Item: mapping, ExpressionAttributeNames: map[string]string{"#pk": AttrPK}}
		if cur == nil {
			put.ConditionExpression = aws.String(condNotExists)
		} else {
			put.ConditionExpression = aws.String("#dg = :old")
			put.ExpressionAttributeNames = map[string]string{"#dg": aSourceDigest}
			put.ExpressionAttributeValues = item{":old": avS(old)}
		}
		ops := []types.TransactWriteItem{{Put: put}, {Put: &types.Put{TableName: b.tableName(), Item: item{
			AttrPK: avS(prefixRef + digest.String()), AttrSK: avS(refSK), aRefAt: avS(tsText(b.now()))}}}}
		if old != "" {
			ops = append(ops, types.TransactWriteItem{Delete: &types.Delete{TableName: b.tableName(),
				Key: item{AttrPK: avS(prefixRef + old), AttrSK: avS(refSK)}}})
		}
		codes, err := b.transact(ctx, ops)
		if err != nil {
			return fmt.Errorf("dynamo: upsert source mapping %q of %s: %w", frameKey, component, err)
		}
		if codes == nil {
			return nil
		}
		if attempt >= b.maxAttempts {
			return fmt.Errorf("dynamo: upsert source mapping %q gave up after %d attempts: %v", frameKey, attempt, codes)
		}
		if err := sleepJitter(ctx, attempt); err != nil {
			return err
		}
	}
}

// ResolveSourceDigest implements core.DeploymentStore: the exact key equal
// to file and every suffix key file ends with are read in one batch of
// strongly consistent gets (one key per suffix of file); exactly one must
// exist.
func (b *Backend) ResolveSourceDigest(ctx context.Context, component core.ComponentDigest, file string) (core.ContentDigest, error) {
	if err := b.checkOpen(); err != nil {
		return core.ContentDigest{}, err
	}
	pk := avS(prefixSource + component.String())
	keys := []item{{AttrPK: pk, AttrSK: avS(sourceSK(file, false))}}
	for i := 0; i <= len(file); i++ {
		if i == len(file) || utf8.RuneStart(file[i]) {
			keys = append(keys, item{AttrPK: pk, AttrSK: avS(sourceSK(file[i:], true))})
		}
	}
	its, err := b.batchGet(ctx, keys, true)
	if err != nil {
		return core.ContentDigest{}, fmt.Errorf("dynamo: resolve source %q: %w", file, err)
	}
	if len(its) != 1 {
		return core.ContentDigest{}, fmt.Errorf("dynamo: source %q of %s (%d mappings match): %w", file, component, len(its), core.ErrNotFound)
	}
	s, _ := getS(its[0], aSourceDigest)
	d, err := core.ParseContentDigest(s)
	if err != nil {
		return core.ContentDigest{}, fmt.Errorf("dynamo: source mapping digest %q: %w", s, err)
	}
	return d, nil
}
