package core

import (
	"bytes"
	"fmt"
	"time"
)

// Timestamp is a UTC instant with nanosecond precision whose JSON form matches
// Obelisk's (chrono's "AutoSi" RFC 3339): always UTC with a literal `Z`, and a
// fractional part of 0, 3, 6 or 9 digits (none when the nanoseconds are zero,
// 3 when they are a multiple of 1 ms, 6 when a multiple of 1 µs, else 9).
// Go's time.RFC3339Nano trims trailing zeros and is therefore not compatible.
//
// Decoding accepts any RFC 3339 offset and converts to UTC.
type Timestamp struct{ time.Time }

// TS returns t as a Timestamp, converted to UTC and stripped of its monotonic
// clock reading so that values compare equal with reflect.DeepEqual.
func TS(t time.Time) Timestamp { return Timestamp{t.UTC().Round(0)} }

// UnixEpoch is 1970-01-01T00:00:00Z.
var UnixEpoch = TS(time.Unix(0, 0))

// Add returns ts+d.
func (ts Timestamp) Add(d time.Duration) Timestamp { return TS(ts.Time.Add(d)) }

// Before reports whether ts is before o.
func (ts Timestamp) Before(o Timestamp) bool { return ts.Time.Before(o.Time) }

// After reports whether ts is after o.
func (ts Timestamp) After(o Timestamp) bool { return ts.Time.After(o.Time) }

// Equal reports whether ts and o are the same instant.
func (ts Timestamp) Equal(o Timestamp) bool { return ts.Time.Equal(o.Time) }

// Compare returns -1, 0 or +1.
func (ts Timestamp) Compare(o Timestamp) int { return ts.Time.Compare(o.Time) }

// MaxTS returns the later of a and b.
func MaxTS(a, b Timestamp) Timestamp {
	if a.Before(b) {
		return b
	}
	return a
}

// String returns the JSON text form without quotes.
func (ts Timestamp) String() string { return string(ts.AppendText(nil)) }

// AppendText appends the AutoSi RFC 3339 form of ts to b.
func (ts Timestamp) AppendText(b []byte) []byte {
	t := ts.Time.UTC()
	b = appendDateTime(b, t)
	ns := t.Nanosecond()
	switch {
	case ns == 0:
	case ns%1_000_000 == 0:
		b = appendFrac(b, ns/1_000_000, 3)
	case ns%1_000 == 0:
		b = appendFrac(b, ns/1_000, 6)
	default:
		b = appendFrac(b, ns, 9)
	}
	return append(b, 'Z')
}

// appendDateTime appends t (UTC) as "2006-01-02T15:04:05". Years outside
// 0000–9999 go through time.Time.AppendFormat; the others are written
// digit by digit, which gives the same bytes without parsing the layout
// (timestamps are in every event a worker sends).
func appendDateTime(b []byte, t time.Time) []byte {
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(b, "2006-01-02T15:04:05")
	}
	hour, minute, sec := t.Clock()
	two := func(b []byte, v int) []byte { return append(b, byte('0'+v/10), byte('0'+v%10)) }
	b = two(two(b, year/100), year%100)
	b = two(append(b, '-'), int(month))
	b = two(append(b, '-'), day)
	b = two(append(b, 'T'), hour)
	b = two(append(b, ':'), minute)
	return two(append(b, ':'), sec)
}

// appendFrac appends '.' and v zero-padded to digits digits (v < 10^digits),
// in place: strconv.Itoa allocated on every timestamp.
func appendFrac(b []byte, v, digits int) []byte {
	b = append(b, ".000000000"[:digits+1]...)
	for i := len(b) - 1; v > 0; i-- {
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return b
}

// MarshalText implements encoding.TextMarshaler.
func (ts Timestamp) MarshalText() ([]byte, error) {
	if y := ts.Time.UTC().Year(); y < 0 || y > 9999 {
		return nil, fmt.Errorf("timestamp year %d out of range", y)
	}
	return ts.AppendText(nil), nil
}

// UnmarshalText implements encoding.TextUnmarshaler; it accepts RFC 3339 with
// any offset and any number of fractional digits.
func (ts *Timestamp) UnmarshalText(b []byte) error {
	t, err := ParseTimestamp(string(b))
	if err != nil {
		return err
	}
	*ts = t
	return nil
}

// MinTimestamp and MaxTimestamp bound every timestamp Stela reads or
// stores: the UTC years 0000–9999, which RFC 3339 (four-digit years) and
// so the JSON form can carry and every backend can sort.
var (
	MinTimestamp = Timestamp{time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)}
	MaxTimestamp = Timestamp{time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC)}
)

// ParseTimestamp parses an RFC 3339 timestamp: `YYYY-MM-DDTHH:MM:SS`, an
// optional fraction of any number of digits after a `.` (beyond nine
// digits truncated), then `Z` or an offset `±HH:MM` with hours 0–23 and
// minutes 0–59. The instant, converted to UTC, must lie in the years
// 0000–9999 (MinTimestamp…MaxTimestamp): the range the JSON form
// round-trips. The error is a *ValidationError `invalid timestamp "…": …`.
func ParseTimestamp(s string) (Timestamp, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return Timestamp{}, badTimestamp(s, "expected RFC 3339 (`2026-01-01T00:00:00Z`)")
	}
	if len(s) > 19 && s[19] == ',' {
		return Timestamp{}, badTimestamp(s, "the fraction of a second must follow `.`")
	}
	if n := len(s); s[n-1] != 'Z' {
		// time.Parse checked the form ±HH:MM, not the ranges.
		if n < 6 || (s[n-6] != '+' && s[n-6] != '-') {
			return Timestamp{}, badTimestamp(s, "expected `Z` or an offset ±HH:MM")
		}
		if h := (s[n-5]-'0')*10 + s[n-4] - '0'; h > 23 {
			return Timestamp{}, badTimestamp(s, "offset hours must be 00–23")
		}
		if m := (s[n-2]-'0')*10 + s[n-1] - '0'; m > 59 {
			return Timestamp{}, badTimestamp(s, "offset minutes must be 00–59")
		}
	}
	ts := TS(t)
	if ts.Before(MinTimestamp) || ts.After(MaxTimestamp) {
		return Timestamp{}, badTimestamp(s, fmt.Sprintf("year %d in UTC is outside 0000–9999", ts.Year()))
	}
	return ts, nil
}

func badTimestamp(s, reason string) error {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return &ValidationError{Reason: fmt.Sprintf("invalid timestamp %q: %s", s, reason), Bound: true}
}

// Timestamps have two text forms, each written by one function:
//
//   - the AutoSi form (String, AppendText; parsed by ParseTimestamp): JSON,
//     and stored values that are never compared as text (DynamoDB
//     attributes outside index keys);
//   - the sortable form (SortableText; parsed by ParseSortableText): fixed
//     width, so byte order is chronological — SQLite columns, DynamoDB index
//     keys, the logs' text output.

// sortableLen is the length of SortableText's form.
const sortableLen = len("2006-01-02T15:04:05.123456789Z")

var (
	sortableMin = MinTimestamp.Time
	sortableMax = MaxTimestamp.Time
)

// SortableText returns the fixed-width UTC text "2006-01-02T15:04:05.123456789Z"
// (always nine fractional digits, years 0000–9999), whose byte order is
// chronological and which keeps nanoseconds. Instants outside that range
// (which JSON cannot carry either) are clamped to it.
func (ts Timestamp) SortableText() string {
	t := ts.Sortable().Time
	var b [sortableLen]byte
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	put := func(at, n, width int) {
		for i := at + width - 1; i >= at; i-- {
			b[i] = byte('0' + n%10)
			n /= 10
		}
	}
	put(0, y, 4)
	b[4] = '-'
	put(5, int(mo), 2)
	b[7] = '-'
	put(8, d, 2)
	b[10] = 'T'
	put(11, h, 2)
	b[13] = ':'
	put(14, mi, 2)
	b[16] = ':'
	put(17, s, 2)
	b[19] = '.'
	put(20, t.Nanosecond(), 9)
	b[29] = 'Z'
	return string(b[:])
}

// Sortable returns ts clamped to the years 0000–9999: the instant that
// SortableText encodes, and ParseSortableText returns.
func (ts Timestamp) Sortable() Timestamp {
	t := ts.Time.UTC()
	if t.Before(sortableMin) {
		t = sortableMin
	} else if t.After(sortableMax) {
		t = sortableMax
	}
	return Timestamp{t}
}

// ParseSortableText parses exactly the form SortableText writes.
func ParseSortableText(s string) (Timestamp, error) {
	if len(s) != sortableLen || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[19] != '.' || s[29] != 'Z' {
		return Timestamp{}, fmt.Errorf("invalid sortable timestamp %q", s)
	}
	num := func(at, width int) (int, bool) {
		n := 0
		for i := at; i < at+width; i++ {
			c := s[i]
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	y, ok1 := num(0, 4)
	mo, ok2 := num(5, 2)
	d, ok3 := num(8, 2)
	h, ok4 := num(11, 2)
	mi, ok5 := num(14, 2)
	sec, ok6 := num(17, 2)
	ns, ok7 := num(20, 9)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7) {
		return Timestamp{}, fmt.Errorf("invalid sortable timestamp %q", s)
	}
	return Timestamp{Time: time.Date(y, time.Month(mo), d, h, mi, sec, ns, time.UTC)}, nil
}

// Duration is Rust's std::time::Duration: JSON `{"secs":u64,"nanos":u32}`.
// It can represent spans longer than time.Duration; use Std to convert.
type Duration struct {
	Secs  uint64 `json:"secs"`
	Nanos uint32 `json:"nanos"`
}

// DurationOf converts a non-negative time.Duration.
func DurationOf(d time.Duration) Duration {
	if d < 0 {
		d = 0
	}
	return Duration{Secs: uint64(d / time.Second), Nanos: uint32(d % time.Second)}
}

// DurationFromMillis returns a Duration of ms milliseconds.
func DurationFromMillis(ms uint64) Duration {
	return Duration{Secs: ms / 1000, Nanos: uint32(ms%1000) * 1_000_000}
}

// Std converts to time.Duration; ok is false if it does not fit.
func (d Duration) Std() (time.Duration, bool) {
	const maxSecs = uint64(1<<63-1) / uint64(time.Second)
	const maxNanos = uint32(uint64(1<<63-1) % uint64(time.Second))
	if d.Secs > maxSecs || (d.Secs == maxSecs && d.Nanos > maxNanos) {
		return 0, false
	}
	return time.Duration(d.Secs)*time.Second + time.Duration(d.Nanos), true
}

// Millis returns the whole milliseconds, saturating at MaxUint64.
func (d Duration) Millis() uint64 {
	const max = ^uint64(0)
	if d.Secs > max/1000 {
		return max
	}
	return d.Secs*1000 + uint64(d.Nanos/1_000_000)
}

// MaxDuration is the longest Duration Stela reads: 2^63−1 nanoseconds
// (about 292 years), the longest span time.Duration holds, so that every
// duration converts (Std) and its milliseconds fit a signed 64-bit integer
// on every backend.
var MaxDuration = Duration{Secs: 9_223_372_036, Nanos: 854_775_807}

// UnmarshalJSON decodes {"secs":…,"nanos":…} as serde does — both fields
// required, no other field (serde's Duration denies unknown fields) — and
// rejects nanos ≥ 10^9 (serde carries them into secs; Stela is stricter)
// and durations longer than MaxDuration (400, docs/http-api.md "Limits").
func (d *Duration) UnmarshalJSON(b []byte) error {
	type plain Duration
	var p plain
	if err := decodeStrict(b, &p); err != nil {
		return err
	}
	if p.Nanos >= 1_000_000_000 {
		return &ValidationError{Reason: "duration nanos must be < 1e9", Path: "nanos", Bound: true}
	}
	if _, ok := Duration(p).Std(); !ok {
		return &ValidationError{Reason: fmt.Sprintf("duration of %d s is longer than the maximum, {\"secs\":%d,\"nanos\":%d} (2^63-1 ns, about 292 years)",
			p.Secs, MaxDuration.Secs, MaxDuration.Nanos), Bound: true}
	}
	*d = Duration(p)
	return nil
}

// isJSONNull reports whether b is the JSON literal null.
func isJSONNull(b []byte) bool { return bytes.Equal(bytes.TrimSpace(b), []byte("null")) }

// MarshalJSON shadows time.Time's RFC3339Nano encoding with the AutoSi form.
func (ts Timestamp) MarshalJSON() ([]byte, error) {
	if y := ts.Time.UTC().Year(); y < 0 || y > 9999 {
		return nil, fmt.Errorf("timestamp year %d out of range", y)
	}
	// MarshalText's checks and bytes, quoted, in one allocation.
	b := ts.AppendText(append(make([]byte, 0, 40), '"'))
	return append(b, '"'), nil
}

// UnmarshalJSON decodes a JSON string in RFC 3339 form.
func (ts *Timestamp) UnmarshalJSON(b []byte) error {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return &ValidationError{Reason: "timestamp must be a JSON string"}
	}
	return ts.UnmarshalText(b[1 : len(b)-1])
}

// Clock tells the time. Stores and sweeps take it by injection so tests can
// use a simulated clock; core itself never reads the wall clock.
type Clock interface {
	Now() Timestamp
}
