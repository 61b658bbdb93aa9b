package e2e_test

import (
	"crypto/rand"
	"net/http"
	"testing"

	"github.com/stela-dev/stela/core"
)

// TestConsolePagesThroughExecutionsCreatedAtOneInstant walks the list's
// "Older →" pages over 120 executions created at the same instant (more than
// two pages of 50): each must be shown exactly once. With a cursor of
// created_at alone, the second page compared created_at only and skipped the
// rest of the group.
func TestConsolePagesThroughExecutionsCreatedAtOneInstant(t *testing.T) {
	chromiumPath(t)
	d := startDev(t, t.TempDir())
	defer d.stop(t)
	ffqn := mustFFQN(t, "e2e:paging/activity.same-instant")
	at := now()
	want := map[string]bool{}
	for range 120 {
		id, err := core.NewExecutionId(uint64(at.UnixMilli()), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.call(t, http.MethodPost, "/v1/worker/create", core.CreateRequest{CreatedAt: at, ExecutionID: id, FFQN: ffqn,
			Params: core.Params{}, ScheduledAt: at, ComponentID: core.ComponentId{ComponentType: core.ComponentTypeActivity},
			Metadata: core.ExecutionMetadata{}}, nil); got != http.StatusOK && got != http.StatusCreated {
			t.Fatalf("POST /v1/worker/create = %d", got)
		}
		want[id.String()] = true
	}
	b := newTab(t, d.url)
	b.open("/console/?ffqn=" + ffqn.String())
	seen := map[string]int{}
	for page := 1; ; page++ {
		if page > 5 {
			t.Fatalf("still paging after %d pages", page)
		}
		b.waitFor("a page of rows", `document.querySelectorAll('#executions tbody tr').length > 0 || !!document.querySelector('p.empty')`)
		for _, id := range b.rowsOf() {
			seen[id]++
		}
		if !b.bool(`!!document.querySelector('.pager a.button:last-child:not(.disabled)')`) {
			break
		}
		first := b.str(`document.querySelector('#executions tbody tr').dataset.id`)
		b.click(".pager a.button:last-child")
		b.waitFor("the next page", `(() => { const r = document.querySelector('#executions tbody tr');
			return !!r && r.dataset.id !== `+jsString(first)+` || !!document.querySelector('p.empty'); })()`)
	}
	for id := range want {
		if seen[id] != 1 {
			t.Errorf("%s shown %d times, want once", id, seen[id])
		}
	}
	if len(seen) != len(want) {
		t.Errorf("pages showed %d distinct executions, want %d", len(seen), len(want))
	}
	b.noErrors()
}
