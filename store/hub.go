package store

import (
	"container/heap"
	"slices"
	"sync"

	"github.com/stela-dev/stela/core"
)

// hub delivers in-process, post-commit, best-effort notifications (docs/spec/semantics.md §4.9).
// Waiters always re-read the backend after waking and also poll, so a missed
// or spurious notification only costs latency, never correctness.
type hub struct {
	mu           sync.Mutex
	waiters      map[string]map[*waiter]struct{}
	closed       bool
	timerWatches []*TimerWatch
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

// --- timer deadlines ---------------------------------------------------------------

// timerNote records, after a commit, the deadline of one timer: a delay's
// expires_at (key "d:<delay id>") or a lock's expiry (key "l:<execution id>");
// clear means the timer is gone (delay answered, execution no longer locked).
type timerNote struct {
	key   string
	at    core.Timestamp
	clear bool
}

func delayTimerKey(d core.DelayId) string     { return "d:" + d.String() }
func lockTimerKey(id core.ExecutionId) string { return "l:" + id.String() }

// lockTimerNote returns the note of a head just written: its lock expiry
// while locked (expired locks are what the sweep resolves), else clear.
func lockTimerNote(st *core.ExecutionState) timerNote {
	if st.State == core.StateLocked {
		return timerNote{key: lockTimerKey(st.ExecutionID), at: st.At}
	}
	return timerNote{key: lockTimerKey(st.ExecutionID), clear: true}
}

// watchingTimers reports whether a TimerWatch is open (notes are only worth
// computing then).
func (h *hub) watchingTimers() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.timerWatches) > 0
}

func (h *hub) emitTimers(notes []timerNote) {
	if len(notes) == 0 {
		return
	}
	h.mu.Lock()
	watches := slices.Clone(h.timerWatches)
	h.mu.Unlock()
	for _, w := range watches {
		w.record(notes)
	}
}

// TimerWatch follows the deadlines of the timers — delays' expires_at and
// locks' lock_expires_at — written through one Service since the watch was
// opened, so that an in-process sweeper can wake at the earliest one instead
// of polling. It only sees this process's writes and is best effort: timers
// that existed before, paused delays being unpaused and writes by other
// processes are left to a periodic safety sweep. Safe for concurrent use.
type TimerWatch struct {
	h         *hub
	mu        sync.Mutex
	deadlines map[string]core.Timestamp // the current deadline of each timer
	queue     deadlineHeap              // every deadline recorded, stale ones dropped lazily
	earliest  core.Timestamp            // the last answer of Next (zero: none)
	changed   chan struct{}
}

// WatchTimers opens a TimerWatch on the Service's writes; Close it when done.
func (s *Service) WatchTimers() *TimerWatch {
	w := &TimerWatch{h: s.hub, deadlines: map[string]core.Timestamp{}, changed: make(chan struct{}, 1)}
	s.hub.mu.Lock()
	s.hub.timerWatches = append(s.hub.timerWatches, w)
	s.hub.mu.Unlock()
	return w
}

// Close stops the watch.
func (w *TimerWatch) Close() {
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	w.h.timerWatches = slices.DeleteFunc(w.h.timerWatches, func(o *TimerWatch) bool { return o == w })
}

// Changed receives when a deadline earlier than the last one Next returned
// (or any, when Next found none) has been recorded.
func (w *TimerWatch) Changed() <-chan struct{} { return w.changed }

// Next returns the earliest recorded deadline strictly after `after` (the
// time a sweep has already covered); deadlines at or before it are dropped.
func (w *TimerWatch) Next(after core.Timestamp) (core.Timestamp, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.queue) > 0 {
		top := w.queue[0]
		cur, live := w.deadlines[top.key]
		switch {
		case !live || !cur.Equal(top.at):
			heap.Pop(&w.queue) // superseded or cleared
		case !top.at.After(after):
			heap.Pop(&w.queue)
			delete(w.deadlines, top.key) // covered by the sweep at `after`
		default:
			w.earliest = top.at
			return top.at, true
		}
	}
	w.earliest = core.Timestamp{}
	return core.Timestamp{}, false
}

func (w *TimerWatch) record(notes []timerNote) {
	w.mu.Lock()
	defer w.mu.Unlock()
	wake := false
	for _, n := range notes {
		if n.clear {
			delete(w.deadlines, n.key)
			continue
		}
		if cur, ok := w.deadlines[n.key]; ok && cur.Equal(n.at) {
			continue
		}
		w.deadlines[n.key] = n.at
		heap.Push(&w.queue, deadline{at: n.at, key: n.key})
		wake = wake || w.earliest.IsZero() || n.at.Before(w.earliest)
	}
	if wake {
		select {
		case w.changed <- struct{}{}:
		default:
		}
	}
}

type deadline struct {
	at  core.Timestamp
	key string
}

// deadlineHeap is a min-heap of deadlines (container/heap).
type deadlineHeap []deadline

func (q deadlineHeap) Len() int           { return len(q) }
func (q deadlineHeap) Less(i, j int) bool { return q[i].at.Before(q[j].at) }
func (q deadlineHeap) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *deadlineHeap) Push(x any)        { *q = append(*q, x.(deadline)) }
func (q *deadlineHeap) Pop() any {
	old := *q
	d := old[len(old)-1]
	*q = old[:len(old)-1]
	return d
}
