package core_test

import (
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
