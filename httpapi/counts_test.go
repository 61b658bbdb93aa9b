package httpapi

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
)

// testStatesAndCounts checks the `state` filter of GET /v1/executions and
// GET /v1/execution-counts against one execution in every bucket.
func testStatesAndCounts(t *testing.T, e *env) {
	want := map[string][]core.ExecutionId{}
	add := func(bucket string, id core.ExecutionId) { want[bucket] = append(want[bucket], id) }

	add("pending", e.submit(ffqnActivity, core.ComponentTypeActivity, "[]"))
	e.clock.Set(t0.Add(time.Hour)) // scheduled at t0+1h, which is in the future once the clock is back
	add("scheduled", e.submit(ffqnActivity, core.ComponentTypeActivity, "[]"))
	e.clock.Set(t0)
	locked := e.submit(ffqnActivity, core.ComponentTypeActivity, "[]")
	e.lock(locked, core.ComponentTypeActivity)
	add("locked", locked)
	blocked, _ := e.workflowWithDelay()
	add("blocked", blocked)
	paused := e.submit(ffqnActivity, core.ComponentTypeActivity, "[]")
	e.do("PUT", "/v1/executions/"+paused.String()+"/pause", nil).want(http.StatusOK)
	add("paused", paused)
	cancelling := e.submit(ffqnActivity, core.ComponentTypeActivity, "[]")
	e.do("PUT", "/v1/executions/"+cancelling.String()+"/cancel", nil).want(http.StatusOK)
	add("cancelling", cancelling)
	for bucket, rv := range map[string]core.ReturnValue{
		"finished_ok":                okString("x"),
		"finished_error":             core.RetErr(&core.WastValWithType{Type: "string", Value: []byte(`"bad"`)}),
		"finished_execution_failure": core.RetFailure(core.FailureTimedOut, nil, nil),
	} {
		id := e.submit(ffqnWorkflow, core.ComponentTypeActivity, "[]")
		e.finish(id, rv)
		add(bucket, id)
	}

	ids := func(t *testing.T, query string) []string {
		t.Helper()
		var list []core.ExecutionWithState
		e.do("GET", "/v1/executions"+query, nil).want(http.StatusOK).decode(&list)
		out := []string{}
		for _, x := range list {
			out = append(out, x.ExecutionID.String())
		}
		slices.Sort(out)
		return out
	}
	strs := func(xs ...core.ExecutionId) []string {
		out := []string{}
		for _, x := range xs {
			out = append(out, x.String())
		}
		slices.Sort(out)
		return out
	}
	t.Run("StateFilterSelectsEachBucket", func(t *testing.T) {
		for bucket, xs := range want {
			if got := ids(t, "?state="+bucket); !slices.Equal(got, strs(xs...)) {
				t.Errorf("state=%s: %v, want %v", bucket, got, strs(xs...))
			}
		}
	})
	t.Run("StatesAreORedAndFinishedIsTheUnion", func(t *testing.T) {
		finished := append(append(append([]core.ExecutionId(nil), want["finished_ok"]...), want["finished_error"]...), want["finished_execution_failure"]...)
		if got := ids(t, "?state=finished"); !slices.Equal(got, strs(finished...)) {
			t.Errorf("state=finished: %v, want %v", got, strs(finished...))
		}
		if got := ids(t, "?state=paused&state=locked"); !slices.Equal(got, strs(paused, locked)) {
			t.Errorf("state=paused&state=locked: %v", got)
		}
	})
	t.Run("StateFilterCombinesWithTheOthers", func(t *testing.T) {
		if got := ids(t, "?state=finished&ffqn_prefix="+ffqnWorkflow.String()); len(got) != 3 {
			t.Errorf("finished workflows-by-name: %v, want 3", got)
		}
		if got := ids(t, "?state=pending&ffqn_prefix="+ffqnWorkflow.String()); len(got) != 0 {
			t.Errorf("pending workflows-by-name: %v, want none", got)
		}
	})

	counts := func(t *testing.T, query string) executionCounts {
		t.Helper()
		var c executionCounts
		e.do("GET", "/v1/execution-counts"+query, nil).want(http.StatusOK).decode(&c)
		return c
	}
	t.Run("CountsEveryBucket", func(t *testing.T) {
		c := counts(t, "")
		for bucket, xs := range want {
			if c.Counts[bucket] != uint32(len(xs)) {
				t.Errorf("%s: %d, want %d (%v)", bucket, c.Counts[bucket], len(xs), c.Counts)
			}
		}
		if len(c.Counts) != 9 || c.Total != 9 || !c.Complete {
			t.Errorf("counts %+v, want 9 buckets, total 9, complete", c)
		}
	})
	t.Run("CountsFollowTheFilters", func(t *testing.T) {
		c := counts(t, "?ffqn_prefix="+ffqnWorkflow.String())
		if c.Total != 4 || c.Counts["blocked"] != 1 || c.Counts["finished_ok"] != 1 || c.Counts["pending"] != 0 {
			t.Errorf("counts %+v", c)
		}
		c = counts(t, "?show_derived=true&execution_id_prefix="+blocked.String())
		if c.Total != 1 || c.Counts["blocked"] != 1 {
			t.Errorf("counts %+v", c)
		}
	})
	t.Run("LimitCountsTheNewestAndSaysSo", func(t *testing.T) {
		c := counts(t, "?limit=4")
		if c.Total != 4 || c.Complete {
			t.Errorf("counts %+v, want total 4, incomplete", c)
		}
		if c := counts(t, "?limit=100000"); c.Total != 9 || !c.Complete {
			t.Errorf("clamped limit: %+v", c)
		}
	})
	t.Run("Text", func(t *testing.T) {
		r := e.do("GET", "/v1/execution-counts", nil, "Accept", "text/plain").want(http.StatusOK)
		if !strings.HasPrefix(r.text(), "locked 1\npending 1\n") || !strings.HasSuffix(r.text(), "total 9") {
			t.Errorf("text %q", r.text())
		}
	})
	e.rejectAll(t, []badReq{
		{name: "UnknownState", method: "GET", path: "/v1/executions?state=running", status: 400, msg: "invalid query parameter `state`: expected one of locked, pending, scheduled, blocked, paused, cancelling, finished, finished_ok, finished_error, finished_execution_failure"},
		{name: "ZeroLimit", method: "GET", path: "/v1/execution-counts?limit=0", status: 400, msg: "invalid query parameter `limit`: must be non-zero"},
		{name: "BadLimit", method: "GET", path: "/v1/execution-counts?limit=x", status: 400, msg: "invalid query parameter `limit`…"},
		{name: "CountsBadFilter", method: "GET", path: "/v1/execution-counts?deployment_id=x", status: 400, msg: "invalid query parameter `deployment_id`…"},
		{name: "CountsPostIs405", method: "POST", path: "/v1/execution-counts", status: 405, msg: "method not allowed"},
	})
}
