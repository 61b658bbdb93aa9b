package worker_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/internal/apitest"
	"github.com/stela-dev/stela/internal/backendtest"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/worker"
	"github.com/stela-dev/stela/worker/workertest"
)

// extensionWatch reports the outcome of the first write that extends a
// lease (a batch ending with Locked) over HTTP.
type extensionWatch struct {
	*client.Client
	once      sync.Once
	attempted chan struct{}
	err       error
}

func (c *extensionWatch) observe(batch []core.AppendRequest, err error) {
	if _, ok := batch[len(batch)-1].Event.(*core.Locked); ok {
		c.once.Do(func() { c.err = err; close(c.attempted) })
	}
}

func (c *extensionWatch) AppendBatch(ctx context.Context, now core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, v core.Version) (core.Version, error) {
	next, err := c.Client.AppendBatch(ctx, now, batch, id, v)
	c.observe(batch, err)
	return next, err
}

func (c *extensionWatch) AppendBatchCreateNewExecution(ctx context.Context, now core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, v core.Version, children []core.CreateRequest, bts []core.BacktraceInfo) (core.Version, error) {
	next, err := c.Client.AppendBatchCreateNewExecution(ctx, now, batch, id, v, children, bts)
	c.observe(batch, err)
	return next, err
}

// AppendBatchCreateNewExecutionLocked declines eager dispatch (no locks):
// the promoted *store.Service method would bypass the override above.
func (c *extensionWatch) AppendBatchCreateNewExecutionLocked(ctx context.Context, now core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, v core.Version, children []core.CreateRequest, bts []core.BacktraceInfo, _ []core.EagerLock) (core.Version, []core.LockedExecution, error) {
	next, err := c.AppendBatchCreateNewExecution(ctx, now, batch, id, v, children, bts)
	return next, nil, err
}

// TestLeaseExtensionFlushesAFullBuffer: a workflow whose buffer is full
// (a join set, 44 children and a Random: 90 items, the HTTP append limit)
// computes past half its lease. The extension must write the buffer first
// and then its Locked event; sending both (91 items) is refused with 400,
// which used to repeat at every tick until the workflow lost its lease
// (and again after every replay: it never finished).
func TestLeaseExtensionFlushesAFullBuffer(t *testing.T) {
	svc := backendtest.SQLite(t)
	c, err := client.New(apitest.Server(t, svc))
	if err != nil {
		t.Fatal(err)
	}
	conn := &extensionWatch{Client: c, attempted: make(chan struct{})}
	w := worker.New(conn, worker.Options{LockExpiry: 400 * time.Millisecond, PollWait: 200 * time.Millisecond})
	const children = 44
	worker.Activity(w, greetFFQN, greet)
	worker.Workflow(w, "demo:test/workflow.busy", func(wf *worker.Context, _ worker.Unit) (int, error) {
		js := wf.NewJoinSet()
		for i := range children {
			if _, err := js.Submit(greetFFQN, i); err != nil {
				return 0, err
			}
		}
		wf.Random(0, 10)
		select { // computing, without calling wf, past half the lease
		case <-conn.attempted:
		case <-time.After(30 * time.Second):
			return 0, errors.New("no lease extension")
		}
		for range children {
			if _, err := js.Next(); err != nil {
				return 0, err
			}
		}
		return children, nil
	})
	runFor(t, w)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id, err := w.Submit(ctx, "demo:test/workflow.busy", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := worker.Await[int](ctx, w, id); err != nil || got != children {
		t.Fatalf("got %d, %v", got, err)
	}
	if conn.err != nil {
		t.Fatalf("the lease extension with a full buffer was refused: %v", conn.err)
	}
}

// refusingConn refuses (once) the first write for which refuse is true,
// as the server answers a 4xx, and counts the writes it refused or would
// have refused again.
type refusingConn struct {
	*store.Service
	refuse  func(batch []core.AppendRequest, children int) bool
	refused atomic.Int32
}

var errTestRefusal = &core.ValidationError{Reason: "test refusal: must have between 1 and 90 entries"}

func (c *refusingConn) check(batch []core.AppendRequest, children int) error {
	if c.refuse(batch, children) {
		c.refused.Add(1)
		return errTestRefusal
	}
	return nil
}

func (c *refusingConn) Append(ctx context.Context, id core.ExecutionId, v core.Version, req core.AppendRequest) (core.Version, error) {
	if err := c.check([]core.AppendRequest{req}, 0); err != nil {
		return 0, err
	}
	return c.Service.Append(ctx, id, v, req)
}

func (c *refusingConn) AppendBatchCreateNewExecution(ctx context.Context, now core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, v core.Version, children []core.CreateRequest, bts []core.BacktraceInfo) (core.Version, error) {
	if err := c.check(batch, len(children)); err != nil {
		return 0, err
	}
	return c.Service.AppendBatchCreateNewExecution(ctx, now, batch, id, v, children, bts)
}

// AppendBatchCreateNewExecutionLocked declines eager dispatch (no locks):
// the promoted *store.Service method would bypass the override above.
func (c *refusingConn) AppendBatchCreateNewExecutionLocked(ctx context.Context, now core.Timestamp, batch []core.AppendRequest, id core.ExecutionId, v core.Version, children []core.CreateRequest, bts []core.BacktraceInfo, _ []core.EagerLock) (core.Version, []core.LockedExecution, error) {
	next, err := c.AppendBatchCreateNewExecution(ctx, now, batch, id, v, children, bts)
	return next, nil, err
}

// errorLogs returns a logger and the messages it logged at ERROR.
func errorLogs() (*slog.Logger, func() string) {
	var mu sync.Mutex
	buf := &bytes.Buffer{}
	h := slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	}), &slog.HandlerOptions{Level: slog.LevelError})
	return slog.New(h), func() string {
		mu.Lock()
		defer mu.Unlock()
		return buf.String()
	}
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// wantRefusalRecorded fails unless the execution finished with an
// uncategorized execution failure naming the refusal, the refused write
// was tried once, and the refusal was logged at ERROR.
func wantRefusalRecorded(t *testing.T, env *workertest.Env, id core.ExecutionId, conn *refusingConn, logs func() string) {
	t.Helper()
	if st := env.Status(id); st.State != core.StateFinished {
		t.Fatalf("the refused write left the execution %s", st)
	}
	rv := env.ReturnValue(id)
	if rv.Kind != core.ReturnExecutionFailure || rv.Failure.Kind != core.FailureUncategorized ||
		rv.Failure.Reason == nil || !strings.Contains(*rv.Failure.Reason, errTestRefusal.Reason) {
		t.Fatalf("want an execution failure naming the refusal, got %+v", rv)
	}
	if n := conn.refused.Load(); n != 1 {
		t.Fatalf("the refused write was sent %d times, want once", n)
	}
	if l := logs(); !strings.Contains(l, errTestRefusal.Reason) {
		t.Fatalf("the refusal was not logged at ERROR; ERROR logs:\n%s", l)
	}
}

// TestRefusedWorkflowWriteFinishesTheExecution: a workflow write the store
// refuses (a 4xx) is logged at ERROR and recorded on the execution, which
// finishes with an execution failure naming it — not given up silently to
// be retried after every lease, forever (workflows are retried forever).
func TestRefusedWorkflowWriteFinishesTheExecution(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	conn := &refusingConn{Service: env.Store, refuse: func(_ []core.AppendRequest, children int) bool { return children > 0 }}
	logger, logs := errorLogs()
	w := env.NewWorker(conn, worker.Options{Logger: logger})
	worker.Activity(w, greetFFQN, greet)
	worker.Workflow(w, twiceFFQN, twice)
	id, err := w.Submit(context.Background(), twiceFFQN, "World")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.RunUntilIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantRefusalRecorded(t, env, id, conn, logs)
}

// TestRefusedActivityOutcomeFinishesTheExecution: an activity's outcome the
// store refuses (e.g. 413, a result too large) finishes the execution with
// an execution failure naming the refusal, logged at ERROR.
func TestRefusedActivityOutcomeFinishesTheExecution(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	conn := &refusingConn{Service: env.Store, refuse: func(batch []core.AppendRequest, _ int) bool {
		f, ok := batch[len(batch)-1].Event.(*core.Finished)
		return ok && f.Retval.Kind == core.ReturnOk
	}}
	logger, logs := errorLogs()
	w := env.NewWorker(conn, worker.Options{Logger: logger})
	worker.Activity(w, greetFFQN, greet)
	id, err := w.Submit(context.Background(), greetFFQN, "World")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.RunUntilIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantRefusalRecorded(t, env, id, conn, logs)
}
