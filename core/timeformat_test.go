package core

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestAppendDateTimeIsAppendFormat pins that the hand-written date and time
// of AppendText are the bytes of time.Time.AppendFormat, across the years
// it writes itself (0000–9999) and beyond them (delegated), and its
// fraction the AutoSi one (3, 6 or 9 digits, trailing zeros in groups of 3).
func TestAppendDateTimeIsAppendFormat(t *testing.T) {
	const layout = "2006-01-02T15:04:05"
	times := []time.Time{
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(-1, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2024, 2, 29, 9, 5, 7, 1, time.UTC),
		time.Date(999, 10, 9, 10, 10, 10, 0, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 1_000, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 10_000_000, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 999_000, time.UTC),
	}
	r := rand.New(rand.NewPCG(1, 2))
	lo, hi := MinTimestamp.Unix(), MaxTimestamp.Unix()
	for range 20000 {
		times = append(times, time.Unix(lo+r.Int64N(hi-lo), r.Int64N(1e9)).UTC())
	}
	for _, tm := range times {
		if got, want := string(appendDateTime(nil, tm)), tm.AppendFormat(nil, layout); got != string(want) {
			t.Fatalf("%v: %q, want %q", tm, got, want)
		}
		ts := Timestamp{tm}
		want := tm.AppendFormat(nil, layout)
		if ns := tm.Nanosecond(); ns != 0 {
			frac := strings.TrimRight(strconv.Itoa(1e9 + ns)[1:], "0")
			want = append(append(want, '.'), frac+strings.Repeat("0", (3-len(frac)%3)%3)...)
		}
		if got := ts.AppendText(nil); string(got) != string(append(want, 'Z')) {
			t.Fatalf("%v: AppendText %q, want %qZ", tm, got, want)
		}
		j, err := ts.MarshalJSON()
		txt, terr := ts.MarshalText()
		if (err == nil) != (terr == nil) || (err == nil && string(j) != `"`+string(txt)+`"`) {
			t.Fatalf("%v: MarshalJSON %q %v, MarshalText %q %v", tm, j, err, txt, terr)
		}
	}
}
