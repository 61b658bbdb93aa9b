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
	"github.com/stela-dev/stela/wire"
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
		// An id walk says order=execution_id on every page, the first too
		// (docs/http-api.md §3.5).
		{"ExecutionIDCursor", byID, func(dir string) string { return "&order=execution_id" },
			func(last core.ExecutionWithState) string {
				return "&order=execution_id&cursor=" + last.ExecutionID.String()
			}},
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
		e.do("GET", "/v1/executions?order=execution_id&cursor="+id+"&cursor_execution_id="+id, nil).
			wantErr(http.StatusBadRequest, "invalid query parameter `cursor_execution_id`: needs an RFC 3339 timestamp `cursor`")
		e.do("GET", "/v1/executions?cursor="+url.QueryEscape(t0.String())+"&cursor_execution_id=E_x", nil).
			wantErr(http.StatusBadRequest, "invalid query parameter `cursor_execution_id`: expected an execution id")
		e.do("GET", "/v1/executions?order=id", nil).
			wantErr(http.StatusBadRequest, "invalid query parameter `order`: expected `created_at` or `execution_id`")
		e.do("GET", "/v1/executions?order=execution_id&cursor="+url.QueryEscape(t0.String()), nil).
			wantErr(http.StatusBadRequest, "invalid query parameter `cursor`: with order=execution_id, expected an execution id")
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
		k := min(len(reqs), (wire.MaxAppendBatch-1)/2)
		nb := k
		if version == 2 {
			nb = k + 1 // with the JoinSetCreate
		}
		var out wire.NextVersionJSON
		e.do("POST", "/v1/worker/append-batch/create-children", map[string]any{
			"execution_id": parent, "version": version, "batch": batch[:nb], "children": reqs[:k]}).want(http.StatusOK).decode(&out)
		batch, reqs, version = batch[nb:], reqs[k:], out.NextVersion
	}
	return parent, children
}

// testListExecutionsLink (issue 20 item 9): 600 executions submitted within
// one millisecond — their ids share the millisecond and sort at random, their
// created_at advance by a microsecond each — walked the natural way: a first
// page without a cursor, then the Link: rel="next" of each page. Every
// execution comes back exactly once, newest first by (created_at, id), in
// both directions; the old natural walk (the first page without a cursor,
// then the id of its last row) is refused with a 400 that says what to send.
func testListExecutionsLink(t *testing.T, e *env) {
	const n = 600
	var want []core.ExecutionId // ascending by (created_at, id): submission order
	for k := range n {
		e.clock.Set(t0.Add(time.Duration(k) * time.Microsecond))
		id := e.do("POST", "/v1/executions", `{"ffqn":"`+ffqnActivity.String()+`","params":[]}`).want(http.StatusCreated).okValue()
		want = append(want, mustExecID(id))
	}
	e.clock.Set(t0.Add(time.Millisecond))
	if slices.IsSortedFunc(want, func(a, b core.ExecutionId) int { return strings.Compare(a.String(), b.String()) }) {
		t.Fatal("the ids sort like their creation: the test cannot tell the two orders apart")
	}
	for _, dir := range []string{"older", "newer"} {
		t.Run(dir, func(t *testing.T) {
			var seen []core.ExecutionId
			path := "/v1/executions?length=100&direction=" + dir
			for pages := 0; path != ""; pages++ {
				if pages > n/100+1 {
					t.Fatalf("%d pages for %d executions", pages, n)
				}
				r := e.do("GET", path, nil).want(http.StatusOK)
				var list []core.ExecutionWithState
				r.decode(&list)
				if dir == "newer" {
					slices.Reverse(list)
				}
				for _, x := range list {
					seen = append(seen, x.ExecutionID)
				}
				path = ""
				if link := r.Header().Get("Link"); link != "" {
					ref, ok := strings.CutSuffix(link, `>; rel="next"`)
					if !ok || !strings.HasPrefix(ref, "<?") {
						t.Fatalf("Link %q is not <?query>; rel=\"next\"", link)
					}
					path = "/v1/executions" + ref[1:]
				} else if len(list) == 100 {
					t.Fatalf("a full page without a Link header")
				}
			}
			if dir == "older" {
				slices.Reverse(seen)
			}
			if !slices.Equal(seen, want) {
				t.Fatalf("the walk saw %d rows (%d distinct), want each of the %d exactly once in (created_at, id) order",
					len(seen), len(slices.Compact(slices.SortedFunc(slices.Values(seen), func(a, b core.ExecutionId) int { return a.Compare(b) }))), n)
			}
		})
	}
	t.Run("AnIDCursorAfterACursorlessPageIs400", func(t *testing.T) {
		var first []core.ExecutionWithState
		e.do("GET", "/v1/executions?length=100", nil).want(http.StatusOK).decode(&first)
		e.do("GET", "/v1/executions?length=100&cursor="+first[len(first)-1].ExecutionID.String(), nil).
			wantErr(http.StatusBadRequest, "invalid query parameter `cursor`: an execution id cursor pages by execution id: send `order=execution_id` on every page of the walk, "+
				"the first too; to continue a walk by creation time send `cursor=<created_at>&cursor_execution_id=<execution_id>` of its last row, "+
				`or follow the Link: rel="next" header`)
	})
	t.Run("AShortPageHasNoLink", func(t *testing.T) {
		r := e.do("GET", "/v1/executions?length=100&cursor="+url.QueryEscape(t0.Add(50*time.Microsecond).String()), nil).want(http.StatusOK)
		if link := r.Header().Get("Link"); link != "" {
			t.Fatalf("the last page (50 rows) has Link %q", link)
		}
	})
}
