package store

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"

	"github.com/stela-dev/stela/core"
)

// TestSweepGroups: timers that may touch the same execution (its own
// timers, a finished child's response to its parent) stay in one group, in
// their original order; the others are in groups of their own.
func TestSweepGroups(t *testing.T) {
	newID := func(n uint64) core.ExecutionId {
		var e [10]byte
		binary.BigEndian.PutUint64(e[2:], n)
		id, err := core.NewExecutionId(1_700_000_000_000, bytes.NewReader(e[:]))
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	js, err := core.NewJoinSetId(core.JoinSetKindGenerated, "1")
	if err != nil {
		t.Fatal(err)
	}
	w, x, y := newID(1), newID(2), newID(3)
	child := w.NextLevel(js)
	delay := func(id core.ExecutionId) core.ExpiredTimer {
		return core.ExpiredTimer{Delay: &core.ExpiredDelay{ExecutionID: id, JoinSetID: js, DelayID: core.NewDelayId(id, js, 1)}}
	}
	lock := func(id core.ExecutionId) core.ExpiredTimer {
		return core.ExpiredTimer{Lock: &core.ExpiredLock{ExecutionID: id}}
	}
	timers := []core.ExpiredTimer{delay(w), delay(x), lock(child), lock(y), lock(w), delay(y)}
	got := sweepGroups(timers)
	want := [][]core.ExpiredTimer{
		{timers[0], timers[2], timers[4]}, // w, its child, w again
		{timers[1]},                       // x
		{timers[3], timers[5]},            // y
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("groups:\n got %v\nwant %v", got, want)
	}
}
