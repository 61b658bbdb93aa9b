package core_test

import (
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
)

func TestParseRetention(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration // 0: forever
		str  string
	}{
		{"forever", 0, "forever"},
		{"30d", 30 * 24 * time.Hour, "30d"},
		{" 1d ", 24 * time.Hour, "1d"},
		{"720h", 720 * time.Hour, "30d"},
		{"90m", 90 * time.Minute, "1h30m0s"},
		{"1s", time.Second, "1s"},
	} {
		r, err := core.ParseRetention(tc.in)
		if err != nil {
			t.Fatalf("ParseRetention(%q): %v", tc.in, err)
		}
		if r.Period() != tc.want || r.Forever() != (tc.want == 0) || r.String() != tc.str {
			t.Errorf("ParseRetention(%q) = period %s forever %v %q, want %s %q", tc.in, r.Period(), r.Forever(), r.String(), tc.want, tc.str)
		}
		back, err := core.ParseRetention(r.String())
		if err != nil || back != r {
			t.Errorf("ParseRetention(%q.String()) = %v, %v", tc.in, back, err)
		}
	}
	for _, bad := range []string{"", "0", "0s", "-1h", "500ms", "d", "-3d", "1.5d", "never", "99999999d"} {
		if r, err := core.ParseRetention(bad); err == nil {
			t.Errorf("ParseRetention(%q) = %v, want an error", bad, r)
		}
	}
	var zero core.Retention
	if !zero.Forever() || zero != core.RetainForever || !core.RetainFor(0).Forever() || !core.RetainFor(-time.Hour).Forever() {
		t.Error("the zero Retention and RetainFor(<=0) must keep forever")
	}
}

func TestDecideRetention(t *testing.T) {
	root := mustExec("E_01KBNJ2T3D8W7H3X6Q4M9R5V1A")
	child := root.NextLevel(jsJ)
	grandchild := child.NextLevel(jsK)
	other := mustExec("E_01KBNJ2T3D8W7H3X6Q4M9R5V1B")
	day := 24 * time.Hour
	r := core.RetainFor(day)
	at := func(h int) core.Timestamp { return t0.Add(time.Duration(h) * time.Hour) }
	finished := func(id core.ExecutionId, recorded core.Timestamp) core.RetentionMember {
		st := core.ExecutionState{ExecutionID: id, State: core.StateFinished, At: at(-100)}
		return core.RetentionMember{State: st, FinishedAt: recorded}
	}
	running := func(id core.ExecutionId) core.RetentionMember {
		return core.RetentionMember{State: core.ExecutionState{ExecutionID: id, State: core.StatePendingAt, At: at(0)}}
	}
	tree := []core.RetentionMember{finished(root, at(1)), finished(child, at(5)), finished(grandchild, at(3))}

	for _, tc := range []struct {
		name     string
		root     core.ExecutionId
		members  []core.RetentionMember
		complete bool
		r        core.Retention
		now      core.Timestamp
		ahead    bool
		want     core.RetentionAction
	}{
		{"due: the period passed since the last finish", root, tree, true, r, at(5 + 24), false, core.RetentionExpire},
		{"not due: the last finish is too recent", root, tree, true, r, at(5 + 23), false, core.RetentionKeep},
		{"ahead: marked as soon as finished", root, tree, true, r, at(6), true, core.RetentionExpire},
		{"forever", root, tree, true, core.RetainForever, at(1000), false, core.RetentionKeep},
		{"a running child keeps the tree", root, []core.RetentionMember{finished(root, at(1)), running(child)}, true, r, at(1000), true, core.RetentionKeep},
		{"a running root keeps its finished children", root, []core.RetentionMember{running(root), finished(child, at(1))}, true, r, at(1000), true, core.RetentionKeep},
		{"unfinished beats incomplete", root, []core.RetentionMember{finished(root, at(1)), running(child)}, false, r, at(1000), true, core.RetentionKeep},
		{"incomplete read", root, tree, false, r, at(1000), true, core.RetentionRetry},
		{"root not read", root, tree[1:], true, r, at(1000), true, core.RetentionKeep},
		{"root not top-level", child, tree[1:], true, r, at(1000), true, core.RetentionKeep},
		{"a stranger in the tree", root, append(tree[:1:1], finished(other, at(1))), true, r, at(1000), true, core.RetentionKeep},
	} {
		d := core.DecideRetention(tc.root, tc.members, tc.complete, tc.r, tc.now, tc.ahead)
		if d.Action != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, d.Action, tc.want)
		}
		if d.Action == core.RetentionExpire && (!d.FinishedAt.Equal(at(5)) || !d.ExpiresAt.Equal(at(5+24))) {
			t.Errorf("%s: finished %s expires %s, want %s and %s", tc.name, d.FinishedAt, d.ExpiresAt, at(5), at(5+24))
		}
	}

	// Without a recorded finish time the Finished event's time stands in.
	old := core.RetentionMember{State: core.ExecutionState{ExecutionID: root, State: core.StateFinished, At: at(2)}}
	if d := core.DecideRetention(root, []core.RetentionMember{old}, true, r, at(26), false); d.Action != core.RetentionExpire || !d.FinishedAt.Equal(at(2)) {
		t.Errorf("unrecorded finish: %+v", d)
	}
}

func TestFinishExpiry(t *testing.T) {
	root := mustExec("E_01KBNJ2T3D8W7H3X6Q4M9R5V1A")
	st := core.ExecutionState{ExecutionID: root, State: core.StateFinished}
	if e, ok := core.FinishExpiry(&st, t0, core.RetainFor(time.Hour)); !ok || !e.Equal(t0.Add(time.Hour)) {
		t.Errorf("top-level finished: %s %v", e, ok)
	}
	if _, ok := core.FinishExpiry(&st, t0, core.RetainForever); ok {
		t.Error("forever has no expiry")
	}
	child := core.ExecutionState{ExecutionID: root.NextLevel(jsJ), State: core.StateFinished}
	if _, ok := core.FinishExpiry(&child, t0, core.RetainFor(time.Hour)); ok {
		t.Error("a derived execution is never a whole tree")
	}
	running := core.ExecutionState{ExecutionID: root, State: core.StateLocked}
	if _, ok := core.FinishExpiry(&running, t0, core.RetainFor(time.Hour)); ok {
		t.Error("an unfinished execution has no expiry")
	}
	if !core.RetentionExpired(t0, t0) || core.RetentionExpired(t0.Add(time.Nanosecond), t0) {
		t.Error("an expiry is reached at its instant, not before")
	}
}
