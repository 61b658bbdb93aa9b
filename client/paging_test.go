package client_test

import (
	"context"
	"crypto/rand"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/internal/apitest"
	"github.com/stela-dev/stela/internal/backendtest"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/store/mem"
)

// TestExecutionsSeesEachExecutionOnce (issue 20 item 9): 600 executions
// whose ids share one millisecond (and so sort at random) and whose
// created_at advance by a microsecond each, on every backend: Executions
// walks them over HTTP exactly once each, newest first by (created_at, id),
// whatever the page size; ListExecutions sends a CreatedBy cursor with its
// CreatedByID as the position it is.
func TestExecutionsSeesEachExecutionOnce(t *testing.T) {
	backends := append([]backendtest.Backend{{Name: "mem", Open: func(t testing.TB) *store.Service {
		svc := store.New(mem.New(), store.Options{Logger: slog.New(slog.DiscardHandler)})
		t.Cleanup(func() { _ = svc.Close() })
		return svc
	}}}, backendtest.Backends...)
	for _, b := range backends {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			svc := b.Open(t)
			t0 := core.TS(time.Now().Truncate(time.Millisecond))
			const n = 600
			var want []core.ExecutionId // ascending by (created_at, id)
			for k := range n {
				id, err := core.NewExecutionId(uint64(t0.UnixMilli()), rand.Reader)
				if err != nil {
					t.Fatal(err)
				}
				at := t0.Add(time.Duration(k) * time.Microsecond)
				if _, err := svc.Create(ctx, core.CreateRequest{CreatedAt: at, ExecutionID: id, FFQN: ffqnActivity, Params: core.Params{},
					ScheduledAt: at, ComponentID: core.ComponentId{ComponentType: core.ComponentTypeActivity}, Metadata: core.ExecutionMetadata{}}); err != nil {
					t.Fatal(err)
				}
				want = append(want, id)
			}
			slices.Reverse(want) // newest first
			if slices.IsSortedFunc(want, func(a, b core.ExecutionId) int { return strings.Compare(b.String(), a.String()) }) {
				t.Fatal("the ids sort like their creation: the test cannot tell the orders apart")
			}
			c := newClient(t, apitest.Server(t, svc))
			for _, size := range []uint16{100, 37, 500} {
				var seen []core.ExecutionId
				for e, err := range c.Executions(ctx, core.ListExecutionsFilter{}, size) {
					if err != nil {
						t.Fatal(err)
					}
					seen = append(seen, e.ExecutionID)
				}
				if !slices.Equal(seen, want) {
					distinct := len(slices.Compact(slices.SortedFunc(slices.Values(seen), core.ExecutionId.Compare)))
					t.Fatalf("page size %d: %d rows (%d distinct), want each of %d once, newest first", size, len(seen), distinct, n)
				}
			}
			// A position cursor: the page after the 300th row.
			mid := want[299]
			at := t0.Add(300 * time.Microsecond) // want[299] is the 301st oldest
			p := core.ExecutionListPagination{CreatedBy: &core.Pagination[*core.Timestamp]{Direction: core.OlderThan, Length: 10, Cursor: &at}, CreatedByID: &mid}
			got, err := c.ListExecutions(ctx, core.ListExecutionsFilter{}, p)
			if err != nil {
				t.Fatal(err)
			}
			direct, err := svc.ListExecutions(ctx, core.ListExecutionsFilter{}, p)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 10 || !slices.EqualFunc(got, direct, func(a, b core.ExecutionWithState) bool { return a.ExecutionID == b.ExecutionID }) ||
				got[0].ExecutionID != want[300] {
				t.Fatalf("ListExecutions after the position (%s, %s) starts at %v, want %s as in-process", at, mid, got[0].ExecutionID, want[300])
			}
		})
	}
}
