package transfer

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
)

// The stream format (doc.go, "Stream format"): JSON lines, one record per
// line, each line an object with exactly one record key (plus "digest" on
// executions and logs).

// Format and Version name the stream format in its header.
const (
	Format  = "stela-export"
	Version = 1
)

// blobChunk is the most raw bytes of a blob one line carries.
const blobChunk = 1 << 20

type headerJSON struct {
	Format    string         `json:"format"`
	Version   int            `json:"version"`
	CreatedAt core.Timestamp `json:"created_at"`
	Source    string         `json:"source"`
}

type treeJSON struct {
	Root       core.ExecutionId `json:"root"`
	Executions int              `json:"executions"`
}

type blobJSON struct {
	Digest core.ContentDigest `json:"digest"`
	Size   int64              `json:"size"`
	Offset int64              `json:"offset"`
	Data   []byte             `json:"data"`
}

// endJSON is the trailer: the counts of every kind of record and the
// digest of the stream (SHA-256 over the digests of its executions and
// logs, in order).
type endJSON struct {
	Trees             int    `json:"trees"`
	Executions        int    `json:"executions"`
	LogRows           int    `json:"log_rows"`
	Blobs             int    `json:"blobs"`
	Deployments       int    `json:"deployments"`
	ComponentMetadata int    `json:"component_metadata"`
	SourceMappings    int    `json:"source_mappings"`
	Digest            string `json:"digest"`
}

// lineJSON is one line; exactly one record key is set.
type lineJSON struct {
	Header            *headerJSON         `json:"header,omitempty"`
	Tree              *treeJSON           `json:"tree,omitempty"`
	Execution         json.RawMessage     `json:"execution,omitempty"`
	Logs              json.RawMessage     `json:"logs,omitempty"`
	Digest            *core.ContentDigest `json:"digest,omitempty"`
	Blob              *blobJSON           `json:"blob,omitempty"`
	Deployment        json.RawMessage     `json:"deployment,omitempty"`
	ComponentMetadata json.RawMessage     `json:"component_metadata,omitempty"`
	SourceMapping     json.RawMessage     `json:"source_mapping,omitempty"`
	End               *endJSON            `json:"end,omitempty"`
}

// streamDigest accumulates the trailer's digest.
type streamDigest struct{ h hash.Hash }

func newStreamDigest() *streamDigest { return &streamDigest{h: sha256.New()} }

func (s *streamDigest) add(d core.ContentDigest) { s.h.Write(d.Digest[:]) }

func (s *streamDigest) String() string { return "sha256:" + hex.EncodeToString(s.h.Sum(nil)) }

// counts are the trailer's counts.
type counts struct {
	trees, executions, logRows, blobs, deployments, metadata, sourceMappings int
}

func (c counts) end(digest string) *endJSON {
	return &endJSON{Trees: c.trees, Executions: c.executions, LogRows: c.logRows, Blobs: c.blobs,
		Deployments: c.deployments, ComponentMetadata: c.metadata, SourceMappings: c.sourceMappings, Digest: digest}
}

// writer is the sink that encodes the stream.
type writer struct {
	w      *bufio.Writer
	digest *streamDigest
	n      counts
	bytes  int64
}

func newWriter(w io.Writer, source string, now core.Timestamp) (*writer, error) {
	wr := &writer{w: bufio.NewWriterSize(w, 1<<20), digest: newStreamDigest()}
	return wr, wr.line(lineJSON{Header: &headerJSON{Format: Format, Version: Version, CreatedAt: now, Source: source}})
}

func (w *writer) line(l lineJSON) error {
	b, err := core.MarshalJSON(l)
	if err != nil {
		return err
	}
	n, err := w.w.Write(append(b, '\n'))
	w.bytes += int64(n)
	return err
}

func (w *writer) tree(t store.TreeRecord) error {
	if err := w.line(lineJSON{Tree: &treeJSON{Root: t.Root, Executions: len(t.Executions)}}); err != nil {
		return err
	}
	for i := range t.Executions {
		rec := &t.Executions[i]
		b, err := rec.MarshalJSON()
		if err != nil {
			return fmt.Errorf("encode execution %s: %w", rec.Head.ExecutionID, err)
		}
		d := core.ContentDigestOf(b)
		w.digest.add(d)
		if err := w.line(lineJSON{Execution: b, Digest: &d}); err != nil {
			return err
		}
	}
	b, err := t.Logs.MarshalJSON()
	if err != nil {
		return fmt.Errorf("encode the logs of %s: %w", t.Root, err)
	}
	d := core.ContentDigestOf(b)
	w.digest.add(d)
	w.n.trees++
	w.n.executions += len(t.Executions)
	w.n.logRows += len(t.Logs.Rows)
	return w.line(lineJSON{Logs: b, Digest: &d})
}

func (w *writer) blob(d core.ContentDigest, data []byte) error {
	for off := 0; off == 0 || off < len(data); off += blobChunk {
		chunk := data[off:min(off+blobChunk, len(data))]
		if err := w.line(lineJSON{Blob: &blobJSON{Digest: d, Size: int64(len(data)), Offset: int64(off), Data: chunk}}); err != nil {
			return err
		}
	}
	w.n.blobs++
	return nil
}

func (w *writer) deployment(d core.StoredDeployment) error {
	b, err := core.EncodeStoredDeployment(d)
	if err != nil {
		return err
	}
	w.n.deployments++
	return w.line(lineJSON{Deployment: b})
}

func (w *writer) metadata(m core.ComponentMetadataRecord) error {
	b, err := core.EncodeComponentMetadata(m)
	if err != nil {
		return err
	}
	w.n.metadata++
	return w.line(lineJSON{ComponentMetadata: b})
}

func (w *writer) sourceMapping(m core.SourceMapping) error {
	b, err := core.EncodeSourceMapping(m)
	if err != nil {
		return err
	}
	w.n.sourceMappings++
	return w.line(lineJSON{SourceMapping: b})
}

func (w *writer) end() error {
	if err := w.line(lineJSON{End: w.n.end(w.digest.String())}); err != nil {
		return err
	}
	return w.w.Flush()
}

// ErrTruncated means the stream ended before its trailer: the export did
// not finish (the records before were imported).
var ErrTruncated = errors.New("transfer: the stream ends before its end record (the export did not finish)")

// reader decodes a stream, checking every record as it goes: the header,
// each execution's and each tree's logs' digest and validity, the tree
// framing, the blobs' digests, and the trailer's counts and digest.
type reader struct {
	r      *bufio.Reader
	lineNo int
	digest *streamDigest
	n      counts
	header headerJSON
	// next is a line read ahead.
	next *lineJSON
}

// item is one record of the stream (exactly one field set).
type item struct {
	tree              *store.TreeRecord
	blob              *blobItem
	deployment        *core.StoredDeployment
	componentMetadata *core.ComponentMetadataRecord
	sourceMapping     *core.SourceMapping
	end               bool
}

type blobItem struct {
	digest core.ContentDigest
	data   []byte
}

func newReader(r io.Reader) (*reader, error) {
	rd := &reader{r: bufio.NewReaderSize(r, 1<<20), digest: newStreamDigest()}
	l, err := rd.line()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("transfer: empty stream: %w", ErrTruncated)
		}
		return nil, err
	}
	if l.Header == nil {
		return nil, rd.errorf("the first line is not a header (not a %s stream)", Format)
	}
	if l.Header.Format != Format || l.Header.Version != Version {
		return nil, rd.errorf("format %q version %d: this build reads %q version %d", l.Header.Format, l.Header.Version, Format, Version)
	}
	rd.header = *l.Header
	return rd, nil
}

func (r *reader) errorf(format string, args ...any) error {
	return fmt.Errorf("transfer: line %d: %s", r.lineNo, fmt.Sprintf(format, args...))
}

// line reads and decodes the next line; io.EOF at the end of the stream.
func (r *reader) line() (*lineJSON, error) {
	if l := r.next; l != nil {
		r.next = nil
		return l, nil
	}
	b, err := r.r.ReadBytes('\n')
	if len(b) == 0 && errors.Is(err, io.EOF) {
		return nil, io.EOF
	}
	r.lineNo++
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("transfer: read line %d: %w", r.lineNo, err)
	}
	if !bytes.HasSuffix(b, []byte("\n")) {
		return nil, fmt.Errorf("transfer: line %d is cut short: %w", r.lineNo, ErrTruncated)
	}
	var l lineJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return nil, r.errorf("%v", err)
	}
	if n := l.keys(); n != 1 {
		return nil, r.errorf("%d record keys, want exactly one", n)
	}
	if (l.Digest != nil) != (l.Execution != nil || l.Logs != nil) {
		return nil, r.errorf("a digest belongs to an execution or logs record, and those need one")
	}
	return &l, nil
}

// more reads the next line of a record that must go on: the end of the
// stream is ErrTruncated.
func (r *reader) more() (*lineJSON, error) {
	l, err := r.line()
	if errors.Is(err, io.EOF) {
		return nil, ErrTruncated
	}
	return l, err
}

func (l *lineJSON) keys() int {
	n := 0
	for _, set := range []bool{l.Header != nil, l.Tree != nil, l.Execution != nil, l.Logs != nil, l.Blob != nil,
		l.Deployment != nil, l.ComponentMetadata != nil, l.SourceMapping != nil, l.End != nil} {
		if set {
			n++
		}
	}
	return n
}

// read returns the next record; a stream without its trailer ends in
// ErrTruncated, anything after the trailer is an error.
func (r *reader) read() (item, error) {
	l, err := r.line()
	if errors.Is(err, io.EOF) {
		return item{}, ErrTruncated
	}
	if err != nil {
		return item{}, err
	}
	switch {
	case l.Tree != nil:
		t, err := r.treeRecord(l.Tree)
		return item{tree: t}, err
	case l.Blob != nil:
		b, err := r.blobRecord(l.Blob)
		return item{blob: b}, err
	case l.Deployment != nil:
		d, err := core.DecodeStoredDeployment(l.Deployment)
		if err != nil {
			return item{}, r.errorf("%v", err)
		}
		r.n.deployments++
		return item{deployment: &d}, nil
	case l.ComponentMetadata != nil:
		m, err := core.DecodeComponentMetadata(l.ComponentMetadata)
		if err != nil {
			return item{}, r.errorf("%v", err)
		}
		r.n.metadata++
		return item{componentMetadata: &m}, nil
	case l.SourceMapping != nil:
		m, err := core.DecodeSourceMapping(l.SourceMapping)
		if err != nil {
			return item{}, r.errorf("%v", err)
		}
		r.n.sourceMappings++
		return item{sourceMapping: &m}, nil
	case l.End != nil:
		return item{end: true}, r.endRecord(l.End)
	}
	return item{}, r.errorf("unexpected record here")
}

// treeRecord reads the executions and logs of the tree l announces.
func (r *reader) treeRecord(l *treeJSON) (*store.TreeRecord, error) {
	if l.Executions < 1 {
		return nil, r.errorf("tree %s with %d executions", l.Root, l.Executions)
	}
	t := &store.TreeRecord{Root: l.Root, Executions: make([]core.ExecutionRecord, 0, l.Executions)}
	for range l.Executions {
		x, err := r.more()
		if err != nil {
			return nil, err
		}
		if x.Execution == nil {
			return nil, r.errorf("tree %s: %d executions announced, %d found", l.Root, l.Executions, len(t.Executions))
		}
		var rec core.ExecutionRecord
		if err := json.Unmarshal(x.Execution, &rec); err != nil {
			return nil, r.errorf("%v", err)
		}
		if err := r.check(x, &rec, "execution "+rec.Head.ExecutionID.String()); err != nil {
			return nil, err
		}
		t.Executions = append(t.Executions, rec)
	}
	x, err := r.more()
	if err != nil {
		return nil, err
	}
	if x.Logs == nil {
		return nil, r.errorf("tree %s: more executions than the %d announced, or its logs record is missing", l.Root, l.Executions)
	}
	if err := json.Unmarshal(x.Logs, &t.Logs); err != nil {
		return nil, r.errorf("%v", err)
	}
	if err := r.check(x, &t.Logs, "logs of "+l.Root.String()); err != nil {
		return nil, err
	}
	if err := t.Validate(); err != nil {
		return nil, r.errorf("%v", err)
	}
	r.n.trees++
	r.n.executions += len(t.Executions)
	r.n.logRows += len(t.Logs.Rows)
	return t, nil
}

// check verifies a record's digest (over its canonical encoding, which the
// decoded record reproduces) and adds it to the stream's.
func (r *reader) check(l *lineJSON, rec interface {
	Digest() (core.ContentDigest, error)
}, what string) error {
	d, err := rec.Digest()
	if err != nil {
		return r.errorf("%s: %v", what, err)
	}
	if d != *l.Digest {
		return r.errorf("%s: digest %s, the record says %s (the stream was altered or corrupted)", what, d, *l.Digest)
	}
	r.digest.add(d)
	return nil
}

// blobRecord reads the chunks of one blob and checks its digest.
func (r *reader) blobRecord(first *blobJSON) (*blobItem, error) {
	if first.Offset != 0 || first.Size < 0 || int64(len(first.Data)) > first.Size {
		return nil, r.errorf("blob %s: chunk at %d of %d bytes does not start it", first.Digest, first.Offset, first.Size)
	}
	data := make([]byte, 0, first.Size)
	data = append(data, first.Data...)
	for int64(len(data)) < first.Size {
		l, err := r.more()
		if err != nil {
			return nil, err
		}
		b := l.Blob
		if b == nil || b.Digest != first.Digest || b.Size != first.Size || b.Offset != int64(len(data)) ||
			len(b.Data) == 0 || int64(len(data)+len(b.Data)) > first.Size {
			return nil, r.errorf("blob %s: chunk missing or out of place at offset %d", first.Digest, len(data))
		}
		data = append(data, b.Data...)
	}
	if core.ContentDigestOf(data) != first.Digest {
		return nil, r.errorf("blob %s: its bytes hash to %s", first.Digest, core.ContentDigestOf(data))
	}
	r.n.blobs++
	return &blobItem{digest: first.Digest, data: data}, nil
}

// endRecord checks the trailer against what was read.
func (r *reader) endRecord(e *endJSON) error {
	if *e != *r.n.end(r.digest.String()) {
		return r.errorf("the end record says %+v, the stream holds %+v", *e, *r.n.end(r.digest.String()))
	}
	if _, err := r.line(); !errors.Is(err, io.EOF) {
		if err != nil {
			return err
		}
		return r.errorf("records after the end record")
	}
	return nil
}
