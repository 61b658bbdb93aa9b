package store

import (
	"sync"

	"github.com/stela-dev/stela/core"
)

// hub delivers in-process, post-commit, best-effort notifications (docs/spec/semantics.md §4.9).
// Waiters always re-read the backend after waking and also poll, so a missed
// or spurious notification only costs latency, never correctness.
type hub struct {
	mu      sync.Mutex
	waiters map[string]map[*waiter]struct{}
	closed  bool
}

type waiter struct {
	keys []string
	ch   chan struct{}
}

type noteKind uint8

const (
	notePending noteKind = iota + 1
	noteFinished
	noteResponse
)

type note struct {
	kind noteKind
	key  string
}

func newHub() *hub { return &hub{waiters: map[string]map[*waiter]struct{}{}} }

func pendingFFQNKey(f core.FunctionFqn) string       { return "p:" + f.String() }
func pendingDigestKey(d core.ComponentDigest) string { return "d:" + d.String() }
func finishedKey(id core.ExecutionId) string         { return "f:" + id.String() }
func responseKey(id core.ExecutionId) string         { return "r:" + id.String() }

// stateNotes returns the notifications a write that produced st emits: pending
// (if runnable at currentTime) or finished.
func stateNotes(st *core.ExecutionState, currentTime core.Timestamp) []note {
	switch {
	case st.IsFinished():
		return []note{{kind: noteFinished, key: finishedKey(st.ExecutionID)}}
	case st.IsPendingActive(currentTime):
		return []note{
			{kind: notePending, key: pendingFFQNKey(st.FFQN)},
			{kind: notePending, key: pendingDigestKey(st.ComponentDigest)},
		}
	}
	return nil
}

func (h *hub) register(keys []string) *waiter {
	w := &waiter{keys: keys, ch: make(chan struct{}, 1)}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		close(w.ch)
		return w
	}
	for _, k := range keys {
		m := h.waiters[k]
		if m == nil {
			m = map[*waiter]struct{}{}
			h.waiters[k] = m
		}
		m[w] = struct{}{}
	}
	return w
}

func (h *hub) unregister(w *waiter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, k := range w.keys {
		if m := h.waiters[k]; m != nil {
			delete(m, w)
			if len(m) == 0 {
				delete(h.waiters, k)
			}
		}
	}
}

func (h *hub) emit(notes []note) {
	if len(notes) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, n := range notes {
		for w := range h.waiters[n.key] {
			select {
			case w.ch <- struct{}{}:
			default:
			}
		}
	}
}

func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.closed = true
	for _, m := range h.waiters {
		for w := range m {
			select {
			case w.ch <- struct{}{}:
			default:
			}
		}
	}
}
