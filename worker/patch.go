package worker

import (
	"bytes"
	"strings"

	"github.com/stela-dev/stela/core"
)

// patchPrefix starts the value of a patch marker: a Persist event of kind
// random_string whose value is "stela-patch:<id>" (an existing Obelisk
// event kind; a real RandomString value is alphanumeric, so it never
// starts with the prefix).
const patchPrefix = "stela-patch:"

func patchMarker(id string) *core.Persist {
	v := []byte(patchPrefix + id)
	return &core.Persist{Value: core.Bytes(v), Kind: core.PersistKind{Type: "random_string",
		MinLength: uint64(len(v)), MaxLengthExclusive: uint64(len(v) + 1)}}
}

// patchID returns the patch id of a patch marker.
func patchID(h core.HistoryEvent) (string, bool) {
	p, ok := h.(*core.Persist)
	if !ok || p.Kind.Type != "random_string" || !bytes.HasPrefix(p.Value, []byte(patchPrefix)) {
		return "", false
	}
	return strings.TrimPrefix(string(p.Value), patchPrefix), true
}

// skipPatchMarkers steps over the patch markers the program did not ask
// for (a Patched call since removed, or of another id). mu is held.
func (wf *Context) skipPatchMarkers() {
	for wf.replaying() {
		if _, ok := patchID(wf.hist[wf.cur].Event); !ok {
			return
		}
		wf.cur++
	}
}

// Patched reports whether the execution takes the new path of the code
// change id: true for an execution that reaches this point for the first
// time (a new execution, or an old one whose history ends before it),
// recorded as a patch marker (a Persist event, see docs/worker.md
// "Patching"); on a replay, true when the history has that marker here
// and false when it has something else (the execution ran this point
// with the code from before the change: it keeps the old path).
//
//	if wf.Patched("charge-before-ship") {
//		// new code
//	} else {
//		// old code, for the executions that started before the change
//	}
//
// Removing a patch takes two deploys: first the code with the Patched
// branch; then, once no execution that ran the old path is still running
// (stela execution list), the code without the old branch and without the
// Patched call (markers left in histories are skipped on replay).
func (wf *Context) Patched(id string) bool {
	wf.enter()
	defer wf.leave()
	defer wf.guard("Patched", nil)
	if wf.replaying() {
		if got, ok := patchID(wf.hist[wf.cur].Event); ok && got == id {
			wf.cur++
			return true
		}
		// Another marker here (of a removed patch) is stepped over.
		for i := wf.cur; i < len(wf.hist); i++ {
			got, ok := patchID(wf.hist[i].Event)
			if !ok {
				break
			}
			if got == id {
				wf.cur = i + 1
				return true
			}
		}
		return false
	}
	if wf.cancelled {
		return true
	}
	wf.record(patchMarker(id), nil)
	return true
}
