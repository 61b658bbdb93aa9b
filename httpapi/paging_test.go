package httpapi

import (
	"crypto/rand"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store/storetest"
)

// testListExecutionsPaging walks GET /v1/executions page by page over
// executions created in bursts at one instant — top-level ids from the
// server (POST) and chosen by the client (PUT, ULID times anywhere in ±1
// day), children from create-children — and checks that each cursor kind,
// in both directions, returns every execution exactly once and newest first
// in its documented order (docs/http-api.md §3.5).
func testListExecutionsPaging(t *testing.T, e *env) {
	rng := mrand.New(mrand.NewPCG(4, 4))
	type row struct {
		id core.ExecutionId
		at core.Timestamp
	}
	var all []row
	for burst := range 6 {
		at := t0.Add(time.Duration(burst/2) * time.Millisecond) // two bursts per instant
		e.clock.Set(at)
		if burst%3 == 2 {
			parent, children := e.workflowWithChildren(mustJS("g:7"), 70)
			all = append(all, row{parent, at})
			for _, c := range children {
				all = append(all, row{c, at})
			}
			continue
		}
		for k := range 45 {
			if k%2 == 0 {
				id := e.do("POST", "/v1/executions", `{"ffqn":"`+ffqnActivity.String()+`","params":[]}`).
					want(http.StatusCreated).okValue()
				all = append(all, row{mustExecID(id), at})
				continue
			}
			ms := uint64(t0.UnixMilli()) - uint64(24*time.Hour/time.Millisecond) + rng.Uint64N(uint64(48*time.Hour/time.Millisecond))
			id, err := core.NewExecutionId(ms, rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			e.do("PUT", "/v1/executions/"+id.String(), `{"ffqn":"`+ffqnActivity.String()+`","params":[]}`).want(http.StatusCreated)
			all = append(all, row{id, at})
		}
	}
	e.clock.Set(t0)
	byCreated := func(a, b row) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return strings.Compare(a.id.String(), b.id.String())
	}
	byID := func(a, b row) int { return strings.Compare(a.id.String(), b.id.String()) }
	for _, kind := range []struct {
		name   string
		order  func(a, b row) int
		first  func(dir string) string // the cursor of the first page
		cursor func(last core.ExecutionWithState) string
	}{
		{"CreatedAtCursor", byCreated, func(string) string { return "" }, func(last core.ExecutionWithState) string {
			return "&cursor=" + url.QueryEscape(last.CreatedAt.String()) + "&cursor_execution_id=" + last.ExecutionID.String()
		}},
		// Without a cursor the first page is by created_at: an id walk starts
		// from the least or greatest top-level id, included (docs/http-api.md §3.5).
		{"ExecutionIDCursor", byID, func(dir string) string {
			if dir == "older" {
				return "&including_cursor=true&cursor=E_7ZZZZZZZZZZZZZZZZZZZZZZZZZ"
			}
			return "&including_cursor=true&cursor=E_00000000000000000000000000"
		}, func(last core.ExecutionWithState) string { return "&cursor=" + last.ExecutionID.String() }},
	} {
		want := slices.SortedFunc(slices.Values(all), kind.order) // ascending
		for _, dir := range []string{"older", "newer"} {
			for _, length := range []int{37, 100} {
				t.Run(fmt.Sprintf("%s/%s/length=%d", kind.name, dir, length), func(t *testing.T) {
					var seen []core.ExecutionId
					next := kind.first(dir)
					for page := 0; ; page++ {
						if page > len(all)/length+2 {
							t.Fatalf("no empty page after %d pages", page)
						}
						var list []core.ExecutionWithState
						e.do("GET", fmt.Sprintf("/v1/executions?show_derived=true&length=%d&direction=%s%s", length, dir, next), nil).
							want(http.StatusOK).decode(&list)
						if len(list) == 0 {
							break
						}
						for i := 1; i < len(list); i++ {
							if kind.order(row{list[i-1].ExecutionID, list[i-1].CreatedAt}, row{list[i].ExecutionID, list[i].CreatedAt}) <= 0 {
								t.Fatalf("page %d is not newest first at row %d: %s then %s", page, i, list[i-1].ExecutionID, list[i].ExecutionID)
							}
						}
						last := list[len(list)-1]
						if dir == "newer" {
							slices.Reverse(list)
							last = list[len(list)-1]
						}
						for _, x := range list {
							seen = append(seen, x.ExecutionID)
						}
						next = kind.cursor(last)
					}
					if dir == "older" {
						slices.Reverse(seen)
					}
					ids := make([]core.ExecutionId, len(want))
					for i, r := range want {
						ids[i] = r.id
					}
					if err := storetest.ExactlyOnceInOrder(seen, ids); err != nil {
						t.Fatal(err)
					}
				})
			}
		}
	}
	t.Run("TieBreakNeedsATimestampCursor", func(t *testing.T) {
		id := all[0].id.String()
		e.do("GET", "/v1/executions?cursor_execution_id="+id, nil).
			wantErr(http.StatusBadRequest, "invalid query parameter `cursor_execution_id`: needs an RFC 3339 timestamp `cursor`")
		e.do("GET", "/v1/executions?cursor="+id+"&cursor_execution_id="+id, nil).
			wantErr(http.StatusBadRequest, "invalid query parameter `cursor_execution_id`: needs an RFC 3339 timestamp `cursor`")
		e.do("GET", "/v1/executions?cursor="+url.QueryEscape(t0.String())+"&cursor_execution_id=E_x", nil).
			wantErr(http.StatusBadRequest, "invalid query parameter `cursor_execution_id`: expected an execution id")
	})
}

func mustExecID(s string) core.ExecutionId {
	id, err := core.ParseExecutionId(s)
	if err != nil {
		panic(err)
	}
	return id
}

// workflowWithChildren submits and locks a workflow and creates n children
// in join set js through create-children (one request, with their
// JoinSetCreate and ChildExecutionRequests).
func (e *env) workflowWithChildren(js core.JoinSetId, n int) (parent core.ExecutionId, children []core.ExecutionId) {
	e.t.Helper()
	parent = e.submit(ffqnWorkflow, core.ComponentTypeWorkflow, "[]")
	at := e.clock.Now()
	lock := lockParams(core.ComponentTypeWorkflow, at.Add(time.Minute))
	lock["execution_id"], lock["version"], lock["created_at"] = parent, 1, at
	e.do("POST", "/v1/worker/lock/one", lock).want(http.StatusOK)
	batch := []core.AppendRequest{{CreatedAt: at, Event: hist(&core.JoinSetCreate{JoinSetID: js})}}
	var reqs []core.CreateRequest
	c := parent.NextLevel(js)
	for range n {
		batch = append(batch, core.AppendRequest{CreatedAt: at, Event: hist(&core.JoinSetRequestEvent{JoinSetID: js,
			Request: &core.ChildExecutionRequest{ChildExecutionID: core.ExecutionIdDerived{ExecutionId: c}, TargetFFQN: ffqnActivity, Params: core.Params{}}})})
		reqs = append(reqs, core.CreateRequest{CreatedAt: at, ExecutionID: c, FFQN: ffqnActivity, Params: core.Params{},
			Parent: &core.Parent{ExecutionID: parent, JoinSetID: js}, ScheduledAt: at,
			ComponentID: unmanagedComponent(core.ComponentTypeActivity), Metadata: core.ExecutionMetadata{}})
		children = append(children, c)
		c = c.Incremented()
	}
	// Children and events share the append limit: split across requests.
	version := core.Version(2)
	for len(reqs) > 0 {
		k := min(len(reqs), (MaxAppendBatch-1)/2)
		nb := k
		if version == 2 {
			nb = k + 1 // with the JoinSetCreate
		}
		var out NextVersionJSON
		e.do("POST", "/v1/worker/append-batch/create-children", map[string]any{
			"execution_id": parent, "version": version, "batch": batch[:nb], "children": reqs[:k]}).want(http.StatusOK).decode(&out)
		batch, reqs, version = batch[nb:], reqs[k:], out.NextVersion
	}
	return parent, children
}
