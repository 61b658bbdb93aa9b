package obs

import (
	"encoding/binary"
	"math"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// The OTLP trace messages in the protobuf wire format, written by hand
// (https://protobuf.dev/programming-guides/encoding/) after
// opentelemetry-proto's collector/trace/v1/trace_service.proto,
// trace/v1/trace.proto, common/v1/common.proto and resource/v1/resource.proto
// — the field numbers below are theirs. TestOTLPExportDecodesWithTheOfficialSchema
// decodes the output with the generated Go types of those files.

// Protobuf wire types.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

// Field numbers.
const (
	// ExportTraceServiceRequest / TracesData
	fReqResourceSpans = 1
	// ResourceSpans
	fRSResource   = 1
	fRSScopeSpans = 2
	fRSSchemaURL  = 3
	// Resource
	fResAttributes = 1
	// ScopeSpans
	fSSScope     = 1
	fSSSpans     = 2
	fSSSchemaURL = 3
	// InstrumentationScope
	fScopeName       = 1
	fScopeVersion    = 2
	fScopeAttributes = 3
	// Span
	fSpanTraceID           = 1
	fSpanSpanID            = 2
	fSpanTraceState        = 3
	fSpanParentSpanID      = 4
	fSpanName              = 5
	fSpanKind              = 6
	fSpanStart             = 7
	fSpanEnd               = 8
	fSpanAttributes        = 9
	fSpanDroppedAttributes = 10
	fSpanEvents            = 11
	fSpanDroppedEvents     = 12
	fSpanLinks             = 13
	fSpanDroppedLinks      = 14
	fSpanStatus            = 15
	fSpanFlags             = 16
	// Span.Event
	fEventTime              = 1
	fEventName              = 2
	fEventAttributes        = 3
	fEventDroppedAttributes = 4
	// Span.Link
	fLinkTraceID           = 1
	fLinkSpanID            = 2
	fLinkTraceState        = 3
	fLinkAttributes        = 4
	fLinkDroppedAttributes = 5
	fLinkFlags             = 6
	// Status
	fStatusMessage = 2
	fStatusCode    = 3
	// KeyValue
	fKVKey   = 1
	fKVValue = 2
	// AnyValue
	fAnyString = 1
	fAnyBool   = 2
	fAnyInt    = 3
	fAnyDouble = 4
	fAnyArray  = 5
	fAnyKVList = 6
	fAnyBytes  = 7
	// ArrayValue, KeyValueList
	fListValues = 1
	// ExportTraceServiceResponse.partial_success / ExportTracePartialSuccess
	fRespPartialSuccess = 1
	fPartialRejected    = 1
	fPartialMessage     = 2
)

// Span flags (trace.proto SpanFlags): the W3C trace flags in the low
// byte, and whether the parent (of a span) or the linked span (of a link)
// is remote.
const (
	spanFlagsHasIsRemote = 0x100
	spanFlagsIsRemote    = 0x200
)

// OTLP status codes (trace.proto Status.StatusCode): not the numbering of
// go.opentelemetry.io/otel/codes.
const (
	otlpStatusUnset = 0
	otlpStatusOK    = 1
	otlpStatusError = 2
)

func appendTag(b []byte, field, wire int) []byte {
	return binary.AppendUvarint(b, uint64(field)<<3|uint64(wire))
}

func appendVarintField(b []byte, field int, v uint64) []byte {
	if v == 0 {
		return b
	}
	return binary.AppendUvarint(appendTag(b, field, wireVarint), v)
}

func appendFixed64Field(b []byte, field int, v uint64) []byte {
	if v == 0 {
		return b
	}
	return binary.LittleEndian.AppendUint64(appendTag(b, field, wireFixed64), v)
}

func appendFixed32Field(b []byte, field int, v uint32) []byte {
	if v == 0 {
		return b
	}
	return binary.LittleEndian.AppendUint32(appendTag(b, field, wireFixed32), v)
}

func appendStringField(b []byte, field int, s string) []byte {
	if s == "" {
		return b
	}
	b = binary.AppendUvarint(appendTag(b, field, wireBytes), uint64(len(s)))
	return append(b, s...)
}

func appendBytesField(b []byte, field int, p []byte) []byte {
	if len(p) == 0 {
		return b
	}
	b = binary.AppendUvarint(appendTag(b, field, wireBytes), uint64(len(p)))
	return append(b, p...)
}

// appendMessage appends field as an embedded message written by body:
// the body is written in place, then moved right by its length prefix.
func appendMessage(b []byte, field int, body func([]byte) []byte) []byte {
	b = appendTag(b, field, wireBytes)
	at := len(b)
	b = body(b)
	n := len(b) - at
	var pfx [binary.MaxVarintLen64]byte
	k := binary.PutUvarint(pfx[:], uint64(n))
	b = append(b, pfx[:k]...)
	copy(b[at+k:], b[at:at+n])
	copy(b[at:], pfx[:k])
	return b
}

func unixNano(t time.Time) uint64 {
	if n := t.UnixNano(); n > 0 {
		return uint64(n)
	}
	return 0
}

// encodeTraces encodes spans as an ExportTraceServiceRequest: one
// ResourceSpans per resource, one ScopeSpans per instrumentation scope in
// it, in the order the spans came.
func encodeTraces(spans []*spanRecord) []byte {
	type group struct {
		res    *resourceInfo
		scopes []scope
		spans  map[scope][]*spanRecord
	}
	var groups []*group
	byResource := map[*resourceInfo]*group{}
	for _, s := range spans {
		g := byResource[s.res]
		if g == nil {
			g = &group{res: s.res, spans: map[scope][]*spanRecord{}}
			byResource[s.res] = g
			groups = append(groups, g)
		}
		if _, ok := g.spans[s.scope]; !ok {
			g.scopes = append(g.scopes, s.scope)
		}
		g.spans[s.scope] = append(g.spans[s.scope], s)
	}
	b := make([]byte, 0, 256*len(spans))
	for _, g := range groups {
		b = appendMessage(b, fReqResourceSpans, func(b []byte) []byte {
			var schemaURL string
			b = appendMessage(b, fRSResource, func(b []byte) []byte {
				if g.res == nil {
					return b
				}
				schemaURL = g.res.schemaURL
				return appendAttributes(b, fResAttributes, g.res.attrs)
			})
			for _, sc := range g.scopes {
				b = appendMessage(b, fRSScopeSpans, func(b []byte) []byte {
					b = appendMessage(b, fSSScope, func(b []byte) []byte {
						b = appendStringField(b, fScopeName, sc.name)
						b = appendStringField(b, fScopeVersion, sc.version)
						return appendAttributes(b, fScopeAttributes, sc.attrs.ToSlice())
					})
					for _, s := range g.spans[sc] {
						b = appendMessage(b, fSSSpans, func(b []byte) []byte { return appendSpan(b, s) })
					}
					return appendStringField(b, fSSSchemaURL, sc.schemaURL)
				})
			}
			return appendStringField(b, fRSSchemaURL, schemaURL)
		})
	}
	return b
}

func appendSpan(b []byte, s *spanRecord) []byte {
	tid, sid := s.sc.TraceID(), s.sc.SpanID()
	b = appendBytesField(b, fSpanTraceID, tid[:])
	b = appendBytesField(b, fSpanSpanID, sid[:])
	b = appendStringField(b, fSpanTraceState, s.sc.TraceState().String())
	if s.parent.SpanID().IsValid() {
		pid := s.parent.SpanID()
		b = appendBytesField(b, fSpanParentSpanID, pid[:])
	}
	b = appendStringField(b, fSpanName, s.name)
	b = appendVarintField(b, fSpanKind, uint64(otlpSpanKind(s.kind)))
	b = appendFixed64Field(b, fSpanStart, unixNano(s.start))
	b = appendFixed64Field(b, fSpanEnd, unixNano(s.end))
	b = appendAttributes(b, fSpanAttributes, s.attrs)
	b = appendVarintField(b, fSpanDroppedAttributes, uint64(s.droppedAttrs))
	for _, ev := range s.events {
		b = appendMessage(b, fSpanEvents, func(b []byte) []byte {
			b = appendFixed64Field(b, fEventTime, unixNano(ev.time))
			b = appendStringField(b, fEventName, ev.name)
			b = appendAttributes(b, fEventAttributes, ev.attrs)
			return appendVarintField(b, fEventDroppedAttributes, uint64(ev.dropped))
		})
	}
	b = appendVarintField(b, fSpanDroppedEvents, uint64(s.droppedEvents))
	for _, l := range s.links {
		b = appendMessage(b, fSpanLinks, func(b []byte) []byte {
			ltid, lsid := l.sc.TraceID(), l.sc.SpanID()
			b = appendBytesField(b, fLinkTraceID, ltid[:])
			b = appendBytesField(b, fLinkSpanID, lsid[:])
			b = appendStringField(b, fLinkTraceState, l.sc.TraceState().String())
			b = appendAttributes(b, fLinkAttributes, l.attrs)
			b = appendVarintField(b, fLinkDroppedAttributes, uint64(l.dropped))
			return appendFixed32Field(b, fLinkFlags, spanFlags(l.sc)|uint32(l.sc.TraceFlags()))
		})
	}
	b = appendVarintField(b, fSpanDroppedLinks, uint64(s.droppedLinks))
	// The status is always present, as the official exporter sends it.
	b = appendMessage(b, fSpanStatus, func(b []byte) []byte {
		b = appendStringField(b, fStatusMessage, s.statusDesc)
		return appendVarintField(b, fStatusCode, otlpStatus(s.status))
	})
	return appendFixed32Field(b, fSpanFlags, spanFlags(s.parent)|uint32(s.sc.TraceFlags()))
}

// spanFlags is the remote bits of sc, the parent of a span or the span a
// link points to (the low byte, the trace flags, is the caller's).
func spanFlags(sc trace.SpanContext) uint32 {
	f := uint32(spanFlagsHasIsRemote)
	if sc.IsRemote() {
		f |= spanFlagsIsRemote
	}
	return f
}

// otlpSpanKind: the API numbers the kinds as OTLP does (0 unspecified, 1
// internal, 2 server, 3 client, 4 producer, 5 consumer).
func otlpSpanKind(k trace.SpanKind) trace.SpanKind {
	if k > trace.SpanKindConsumer {
		return trace.SpanKindUnspecified
	}
	return k
}

func otlpStatus(c codes.Code) uint64 {
	switch c {
	case codes.Ok:
		return otlpStatusOK
	case codes.Error:
		return otlpStatusError
	}
	return otlpStatusUnset
}

func appendAttributes(b []byte, field int, kvs []attribute.KeyValue) []byte {
	for _, kv := range kvs {
		b = appendMessage(b, field, func(b []byte) []byte { return appendKeyValue(b, kv) })
	}
	return b
}

func appendKeyValue(b []byte, kv attribute.KeyValue) []byte {
	b = appendStringField(b, fKVKey, string(kv.Key))
	return appendMessage(b, fKVValue, func(b []byte) []byte { return appendAnyValue(b, kv.Value) })
}

// appendAnyValue writes the body of an AnyValue: exactly one member of its
// oneof, even when that member is the zero value (false, 0, "").
func appendAnyValue(b []byte, v attribute.Value) []byte {
	list := func(b []byte, n int, item func(b []byte, i int) []byte) []byte {
		return appendMessage(b, fAnyArray, func(b []byte) []byte {
			for i := range n {
				b = appendMessage(b, fListValues, func(b []byte) []byte { return item(b, i) })
			}
			return b
		})
	}
	switch v.Type() {
	case attribute.BOOL:
		return appendOneofBool(b, v.AsBool())
	case attribute.INT64:
		return appendOneofInt(b, v.AsInt64())
	case attribute.FLOAT64:
		return appendOneofDouble(b, v.AsFloat64())
	case attribute.STRING:
		return appendOneofString(b, v.AsString())
	case attribute.BYTESLICE:
		p := v.AsByteSlice()
		b = binary.AppendUvarint(appendTag(b, fAnyBytes, wireBytes), uint64(len(p)))
		return append(b, p...)
	case attribute.BOOLSLICE:
		s := v.AsBoolSlice()
		return list(b, len(s), func(b []byte, i int) []byte { return appendOneofBool(b, s[i]) })
	case attribute.INT64SLICE:
		s := v.AsInt64Slice()
		return list(b, len(s), func(b []byte, i int) []byte { return appendOneofInt(b, s[i]) })
	case attribute.FLOAT64SLICE:
		s := v.AsFloat64Slice()
		return list(b, len(s), func(b []byte, i int) []byte { return appendOneofDouble(b, s[i]) })
	case attribute.STRINGSLICE:
		s := v.AsStringSlice()
		return list(b, len(s), func(b []byte, i int) []byte { return appendOneofString(b, s[i]) })
	case attribute.SLICE:
		s := v.AsSlice()
		return list(b, len(s), func(b []byte, i int) []byte { return appendAnyValue(b, s[i]) })
	case attribute.MAP:
		return appendMessage(b, fAnyKVList, func(b []byte) []byte {
			for _, kv := range v.AsMap() {
				b = appendMessage(b, fListValues, func(b []byte) []byte { return appendKeyValue(b, kv) })
			}
			return b
		})
	}
	return b // EMPTY: an AnyValue with no member
}

func appendOneofBool(b []byte, v bool) []byte {
	var n uint64
	if v {
		n = 1
	}
	return binary.AppendUvarint(appendTag(b, fAnyBool, wireVarint), n)
}

func appendOneofInt(b []byte, v int64) []byte {
	return binary.AppendUvarint(appendTag(b, fAnyInt, wireVarint), uint64(v))
}

func appendOneofDouble(b []byte, v float64) []byte {
	return binary.LittleEndian.AppendUint64(appendTag(b, fAnyDouble, wireFixed64), math.Float64bits(v))
}

func appendOneofString(b []byte, v string) []byte {
	b = binary.AppendUvarint(appendTag(b, fAnyString, wireBytes), uint64(len(v)))
	return append(b, v...)
}

// decodePartialSuccess reads an ExportTraceServiceResponse: the spans it
// says were rejected and why (zero and "" for a full success or a body
// that is not such a message).
func decodePartialSuccess(body []byte) (rejected int64, message string) {
	ps, ok := pbField(body, fRespPartialSuccess, wireBytes)
	if !ok {
		return 0, ""
	}
	if v, ok := pbField(ps, fPartialRejected, wireVarint); ok {
		n, _ := binary.Uvarint(v)
		rejected = int64(n)
	}
	if v, ok := pbField(ps, fPartialMessage, wireBytes); ok {
		message = string(v)
	}
	return rejected, message
}

// pbField returns the last occurrence of field (with wire type wire) in the
// message msg: a varint's bytes, or a length-delimited field's contents.
// It stops at anything malformed.
func pbField(msg []byte, field, wire int) (out []byte, found bool) {
	for len(msg) > 0 {
		tag, n := binary.Uvarint(msg)
		if n <= 0 {
			return out, found
		}
		msg = msg[n:]
		f, w := int(tag>>3), int(tag&7)
		var val []byte
		switch w {
		case wireVarint:
			_, k := binary.Uvarint(msg)
			if k <= 0 {
				return out, found
			}
			val, msg = msg[:k], msg[k:]
		case wireFixed64, wireFixed32:
			k := 8
			if w == wireFixed32 {
				k = 4
			}
			if len(msg) < k {
				return out, found
			}
			val, msg = msg[:k], msg[k:]
		case wireBytes:
			l, k := binary.Uvarint(msg)
			if k <= 0 || uint64(len(msg)-k) < l {
				return out, found
			}
			val, msg = msg[k:k+int(l)], msg[k+int(l):]
		default:
			return out, found
		}
		if f == field && w == wire {
			out, found = val, true
		}
	}
	return out, found
}
