package core_test

import (
	"encoding/json"
	"errors"
	"sort"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
)

func TestSortableTextRoundTripsAndSortsChronologically(t *testing.T) {
	instants := []core.Timestamp{
		core.TS(time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC)),
		core.UnixEpoch,
		core.TS(time.Date(2026, 1, 1, 0, 0, 0, 1, time.UTC)),
		core.TS(time.Date(2026, 1, 1, 0, 0, 0, 10, time.UTC)),
		core.TS(time.Date(2026, 1, 1, 0, 0, 0, 999_000_000, time.UTC)),
		core.TS(time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC)),
		core.TS(time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC)),
	}
	var texts []string
	for _, ts := range instants {
		s := ts.SortableText()
		if len(s) != len("2006-01-02T15:04:05.123456789Z") {
			t.Fatalf("SortableText(%v)=%q: not fixed width", ts.Time, s)
		}
		got, err := core.ParseSortableText(s)
		if err != nil || !got.Equal(ts.Sortable()) {
			t.Fatalf("ParseSortableText(%q)=%v, %v; want %v", s, got, err, ts.Sortable())
		}
		texts = append(texts, s)
	}
	if !sort.StringsAreSorted(texts) {
		t.Fatalf("texts of increasing instants are not sorted: %q", texts)
	}
	if got := instants[0].SortableText(); got != "0000-01-01T00:00:00.000000000Z" {
		t.Fatalf("a year before 0 is clamped to %q", got)
	}
	if _, err := core.ParseSortableText("2026-01-01T00:00:00Z"); err == nil {
		t.Fatal("ParseSortableText accepted the AutoSi form")
	}
}

// TestParseTimestampBounds: every timestamp the API reads is RFC 3339 with
// an offset of hours 0–23 and minutes 0–59, and lies in the UTC years
// 0000–9999, the range the JSON form round-trips (issue 24 item 1).
func TestParseTimestampBounds(t *testing.T) {
	for _, tc := range []struct{ in, want, reason string }{
		{"2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z", ""},
		{"2026-01-01T01:30:00.5+01:30", "2026-01-01T00:00:00.500Z", ""},
		{"9999-12-31T23:59:59.999999999Z", "9999-12-31T23:59:59.999999999Z", ""},
		{"0000-01-01T00:00:00Z", "0000-01-01T00:00:00Z", ""},
		{"0000-01-01T04:59:59-05:00", "0000-01-01T09:59:59Z", ""},
		{"9999-12-31T23:59:59-01:00", "", `invalid timestamp "9999-12-31T23:59:59-01:00": year 10000 in UTC is outside 0000–9999`},
		{"0000-01-01T00:00:00+05:00", "", `invalid timestamp "0000-01-01T00:00:00+05:00": year -1 in UTC is outside 0000–9999`},
		{"2026-01-01T00:00:00+24:00", "", `invalid timestamp "2026-01-01T00:00:00+24:00": offset hours must be 00–23`},
		{"2026-01-01T00:00:00+01:60", "", `invalid timestamp "2026-01-01T00:00:00+01:60": offset minutes must be 00–59`},
		{"2026-01-01T00:00:00,5Z", "", `invalid timestamp "2026-01-01T00:00:00,5Z": the fraction of a second must follow ` + "`.`"},
		{"2026-01-01", "", `invalid timestamp "2026-01-01": expected RFC 3339 (` + "`2026-01-01T00:00:00Z`)"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			ts, err := core.ParseTimestamp(tc.in)
			if tc.reason == "" {
				if err != nil || ts.String() != tc.want {
					t.Fatalf("ParseTimestamp = %s, %v; want %s", ts, err, tc.want)
				}
				if _, err := ts.MarshalJSON(); err != nil {
					t.Fatalf("accepted %s does not encode: %v", tc.in, err)
				}
				return
			}
			var ve *core.ValidationError
			if !errors.As(err, &ve) || ve.Reason != tc.reason || !ve.Bound {
				t.Fatalf("err = %#v, want a bound error %q", err, tc.reason)
			}
		})
	}
}

// TestDurationDecoding: serde's Duration denies unknown fields; Stela also
// bounds it to core.MaxDuration (issue 24 items 4 and 5).
func TestDurationDecoding(t *testing.T) {
	for _, tc := range []struct{ in, reason, path string }{
		{`{"secs":9223372036,"nanos":854775807}`, "", ""},
		{`{"secs":9223372036,"nanos":854775808}`, `duration of 9223372036 s is longer than the maximum, {"secs":9223372036,"nanos":854775807} (2^63-1 ns, about 292 years)`, ""},
		{`{"secs":18446744073709551615,"nanos":0}`, `duration of 18446744073709551615 s is longer than the maximum, {"secs":9223372036,"nanos":854775807} (2^63-1 ns, about 292 years)`, ""},
		{`{"secs":0,"nanos":0,"x":1}`, "unknown field `x`", ""},
		{`{"secs":0}`, "missing field `nanos`", ""},
		{`{"secs":"1","nanos":0}`, `invalid type: string "1", expected an integer from 0 to 18446744073709551615`, "secs"},
		{`{"secs":0,"nanos":1000000000}`, "duration nanos must be < 1e9", "nanos"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			var d core.Duration
			err := json.Unmarshal([]byte(tc.in), &d)
			if tc.reason == "" {
				if err != nil || d != core.MaxDuration {
					t.Fatalf("Unmarshal = %+v, %v", d, err)
				}
				return
			}
			var ve *core.ValidationError
			if !errors.As(err, &ve) || ve.Reason != tc.reason || ve.Path != tc.path {
				t.Fatalf("err = %#v, want reason %q at %q", err, tc.reason, tc.path)
			}
		})
	}
}
