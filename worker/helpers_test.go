package worker_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/worker"
)

// seededEntropy is a deterministic id source: two environments given the
// same seed create the same execution ids.
type seededEntropy struct{ r *rand.ChaCha8 }

func newEntropy(seed byte) *seededEntropy {
	var s [32]byte
	s[0] = seed
	return &seededEntropy{r: rand.NewChaCha8(s)}
}

func (e *seededEntropy) Read(p []byte) (int, error) { return e.r.Read(p) }

// errCut is what a cut connection answers: a worker whose process died
// never reaches the store again.
var errCut = errors.New("connection cut")

// cutConn is a store whose connection a test can cut (a killed worker) and
// which reports every write to an observer.
type cutConn struct {
	*store.Service
	cut     atomic.Bool
	mu      sync.Mutex
	onWrite func(id core.ExecutionId, batch []core.AppendRequest, children int)
}

func (c *cutConn) guard() error {
	if c.cut.Load() {
		return errCut
	}
	return nil
}

func (c *cutConn) observe(id core.ExecutionId, batch []core.AppendRequest, children int) {
	c.mu.Lock()
	f := c.onWrite
	c.mu.Unlock()
	if f != nil {
		f(id, batch, children)
	}
}

func (c *cutConn) setObserver(f func(id core.ExecutionId, batch []core.AppendRequest, children int)) {
	c.mu.Lock()
	c.onWrite = f
	c.mu.Unlock()
}

func (c *cutConn) LockPending(ctx context.Context, req core.LockRequest, ffqns []core.FunctionFqn, wait time.Duration) ([]core.LockedExecution, error) {
	if err := c.guard(); err != nil {
		return nil, err
	}
	return c.Service.LockPending(ctx, req, ffqns, wait)
}

func (c *cutConn) Append(ctx context.Context, id core.ExecutionId, v core.Version, req core.AppendRequest) (core.Version, error) {
	if err := c.guard(); err != nil {
		return 0, err
	}
	c.observe(id, []core.AppendRequest{req}, 0)
	return c.Service.Append(ctx, id, v, req)
}

func (c *cutConn) AppendBatch(ctx context.Context, now core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, v core.Version) (core.Version, error) {
	if err := c.guard(); err != nil {
		return 0, err
	}
	c.observe(id, batch, 0)
	return c.Service.AppendBatch(ctx, now, batch, id, v)
}

func (c *cutConn) AppendBatchCreateNewExecution(ctx context.Context, now core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, v core.Version, children []core.CreateRequest, bts []core.BacktraceInfo) (core.Version, error) {
	if err := c.guard(); err != nil {
		return 0, err
	}
	c.observe(id, batch, len(children))
	return c.Service.AppendBatchCreateNewExecution(ctx, now, batch, id, v, children, bts)
}

// AppendBatchCreateNewExecutionLocked declines eager dispatch (no locks):
// the promoted *store.Service method would bypass the override above.
func (c *cutConn) AppendBatchCreateNewExecutionLocked(ctx context.Context, now core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, v core.Version, children []core.CreateRequest, bts []core.BacktraceInfo, _ []core.EagerLock) (core.Version, []core.LockedExecution, error) {
	next, err := c.AppendBatchCreateNewExecution(ctx, now, batch, id, v, children, bts)
	return next, nil, err
}

func (c *cutConn) AppendBatchRespondToParent(ctx context.Context, ev core.AppendEventsToExecution, resp core.AppendResponseToExecution, now core.Timestamp) (core.Version, error) {
	if err := c.guard(); err != nil {
		return 0, err
	}
	c.observe(ev.ExecutionID, ev.Batch, 0)
	return c.Service.AppendBatchRespondToParent(ctx, ev, resp, now)
}

func (c *cutConn) AppendBatchWithDelayResponse(ctx context.Context, now core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, v core.Version, js core.JoinSetId, d core.DelayId) (core.Version, error) {
	if err := c.guard(); err != nil {
		return 0, err
	}
	c.observe(id, batch, 0)
	return c.Service.AppendBatchWithDelayResponse(ctx, now, batch, id, v, js, d)
}

func (c *cutConn) Get(ctx context.Context, id core.ExecutionId) (*core.ExecutionLog, error) {
	if err := c.guard(); err != nil {
		return nil, err
	}
	return c.Service.Get(ctx, id)
}

func (c *cutConn) GetPendingState(ctx context.Context, id core.ExecutionId) (core.ExecutionWithState, error) {
	if err := c.guard(); err != nil {
		return core.ExecutionWithState{}, err
	}
	return c.Service.GetPendingState(ctx, id)
}

// historyOf returns the execution's history events and its final event,
// encoded, for comparisons across runs. A JoinNext's run_expires_at is a
// scheduling hint (whether the response was already there when the
// workflow asked) that determinism checks ignore, as Obelisk's do.
func historyOf(t *testing.T, log *core.ExecutionLog) []string {
	t.Helper()
	var out []string
	for _, e := range log.Events {
		if h, ok := e.Event.(*core.HistoryEventRequest); ok {
			if j, ok := h.Event.(*core.JoinNext); ok {
				c := *j
				c.RunExpiresAt = core.Timestamp{}
				e.Event = &core.HistoryEventRequest{Event: &c}
			}
		}
		switch e.Event.(type) {
		case *core.HistoryEventRequest, *core.Finished, *core.Created:
			b, err := core.EncodeExecutionRequest(e.Event)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(b))
		}
	}
	return out
}

// countFinished counts the Finished events of a log.
func countFinished(log *core.ExecutionLog) int {
	n := 0
	for _, e := range log.Events {
		if _, ok := e.Event.(*core.Finished); ok {
			n++
		}
	}
	return n
}

// greetAll fans out n greet children into one join set and joins them in
// arrival order, returning the total length of the greetings.
func greetAll(wf *worker.Context, n int) (int, error) {
	js := wf.NewJoinSet()
	for i := range n {
		if _, err := js.Submit(greetFFQN, fmt.Sprint(i)); err != nil {
			return 0, err
		}
	}
	total := 0
	for range n {
		r, err := js.Next()
		if err != nil {
			return 0, err
		}
		s, err := worker.Result[string](r)
		if err != nil {
			return 0, err
		}
		total += len(s)
	}
	return total, nil
}
