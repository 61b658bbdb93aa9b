package core

import "testing"

// TestIdCounterFollowsObeliskNumbering: join sets are numbered per kind,
// children and delays per join set and separately from each other (Obelisk's
// event_history: join_set_count, execution_count, next_delay_id).
func TestIdCounterFollowsObeliskNumbering(t *testing.T) {
	owner, err := ParseExecutionId("E_01KBNHM5FQW81KP5Y3XMNX31K4")
	if err != nil {
		t.Fatal(err)
	}
	var c IdCounter
	check := func(what, got, want string) {
		t.Helper()
		if got != want {
			t.Fatalf("%s = %s, want %s", what, got, want)
		}
	}
	g1 := c.NextGeneratedJoinSet()
	check("first generated join set", g1.String(), "g:1")
	c.Observe(&JoinSetCreate{JoinSetID: g1})
	check("second generated join set", c.NextGeneratedJoinSet().String(), "g:2")
	oneOff, err := c.NextOneOffJoinSet("add")
	if err != nil {
		t.Fatal(err)
	}
	check("first one-off join set", oneOff.String(), "o:1-add")
	c.Observe(&JoinSetCreate{JoinSetID: oneOff})
	sleep, _ := c.NextOneOffJoinSet("sleep")
	check("second one-off join set", sleep.String(), "o:2-sleep")
	check("next generated join set after a one-off", c.NextGeneratedJoinSet().String(), "g:2")

	child1 := c.NextChild(owner, g1)
	check("first child", child1.String(), "E_01KBNHM5FQW81KP5Y3XMNX31K4.g:1_1")
	c.Observe(&JoinSetRequestEvent{JoinSetID: g1, Request: &ChildExecutionRequest{ChildExecutionID: ExecutionIdDerived{child1}}})
	delay1 := c.NextDelay(owner, g1)
	check("first delay (children not counted)", delay1.String(), "Delay_01KBNHM5FQW81KP5Y3XMNX31K4.g:1_1")
	c.Observe(&JoinSetRequestEvent{JoinSetID: g1, Request: &DelayRequest{DelayID: delay1}})
	check("second child (delays not counted)", c.NextChild(owner, g1).String(), "E_01KBNHM5FQW81KP5Y3XMNX31K4.g:1_2")
	check("second delay", c.NextDelay(owner, g1).String(), "Delay_01KBNHM5FQW81KP5Y3XMNX31K4.g:1_2")
	check("first child of another join set", c.NextChild(owner, oneOff).String(), "E_01KBNHM5FQW81KP5Y3XMNX31K4.o:1-add_1")
	// Next* only compute: asking twice gives the same id.
	check("idempotent Next", c.NextChild(owner, g1).String(), "E_01KBNHM5FQW81KP5Y3XMNX31K4.g:1_2")

	// A derived owner (docs/spec/semantics.md §1.4 example).
	derived := NewChildExecutionId(owner, g1, 1)
	check("delay of a derived owner", NewDelayId(derived, sleep, 1).String(), "Delay_01KBNHM5FQW81KP5Y3XMNX31K4.g:1_1.o:2-sleep_1")
	check("grandchild", NewChildExecutionId(derived, g1, 7).String(), "E_01KBNHM5FQW81KP5Y3XMNX31K4.g:1_1.g:1_7")
	if p, js, ok := NewChildExecutionId(derived, g1, 7).SplitToParts(); !ok || p != derived || js != g1 {
		t.Fatalf("SplitToParts = %s %s %v", p, js, ok)
	}
	named, err := NamedJoinSetId("session-events")
	if err != nil || named.String() != "n:session-events" {
		t.Fatalf("named = %s, %v", named, err)
	}
	if _, err := OneOffJoinSetId(1, "bad_suffix"); err == nil {
		t.Fatal("a suffix with '_' must be rejected (it would break derived ids)")
	}
}
