package sqlite_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/sqlite"
	"github.com/stela-dev/stela/store"
)

var (
	t0     = core.TS(time.Date(2026, 8, 22, 10, 0, 0, 123_456_789, time.UTC))
	ffqnA  = mustFFQN("ns:pkg/ifc.a")
	ffqnB  = mustFFQN("ns:pkg/ifc.b")
	digA   = core.ComponentDigest{Digest: core.SHA256Digest([]byte("a"))}
	digB   = core.ComponentDigest{Digest: core.SHA256Digest([]byte("b"))}
	depA   = mustDep(1)
	seqCtr atomic.Uint64
)

func mustFFQN(s string) core.FunctionFqn {
	f, err := core.ParseFunctionFqn(s)
	if err != nil {
		panic(err)
	}
	return f
}

func entropy(n uint64) *bytes.Reader {
	var b [10]byte
	binary.BigEndian.PutUint64(b[2:], n)
	return bytes.NewReader(b[:])
}

func mustDep(n uint64) core.DeploymentId {
	d, err := core.NewDeploymentId(1_700_000_000_000, entropy(n))
	if err != nil {
		panic(err)
	}
	return d
}

// newID returns a fresh, unique top-level execution id.
func newID() core.ExecutionId {
	id, err := core.NewExecutionId(1_700_000_000_000, entropy(seqCtr.Add(1)))
	if err != nil {
		panic(err)
	}
	return id
}

func mustJS(s string) core.JoinSetId {
	js, err := core.ParseJoinSetId(s)
	if err != nil {
		panic(err)
	}
	return js
}

func lockedBy(n uint64) core.LockedBy {
	e, err := core.NewExecutorId(1_700_000_000_000, entropy(n))
	if err != nil {
		panic(err)
	}
	r, err := core.NewRunId(1_700_000_000_000, entropy(n+1))
	if err != nil {
		panic(err)
	}
	return core.LockedBy{ExecutorID: e, RunID: r}
}

// MustOpen opens a backend on a fresh file and closes it at cleanup.
func MustOpen(tb testing.TB) *sqlite.Backend {
	tb.Helper()
	return MustOpenAt(tb, filepath.Join(tb.TempDir(), "stela.db"))
}

// MustOpenAt opens a backend on path and closes it at cleanup.
func MustOpenAt(tb testing.TB, path string) *sqlite.Backend {
	tb.Helper()
	b, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { _ = b.Close() })
	return b
}

// pendingHead is a freshly created, active, pending execution.
func pendingHead(id core.ExecutionId, ffqn core.FunctionFqn, createdAt, scheduledAt core.Timestamp) core.ExecutionState {
	return core.ExecutionState{
		ExecutionID: id, FFQN: ffqn, CreatedAt: createdAt, FirstScheduledAt: scheduledAt,
		ComponentType: core.ComponentTypeActivity, ComponentDigest: digA, DeploymentID: depA,
		Version: 0, State: core.StatePendingAt, Lifecycle: core.LifecycleActive, At: scheduledAt,
	}
}

func createdEvent(st core.ExecutionState) core.ExecutionEvent {
	var parent *core.Parent
	if p, js, ok := st.ExecutionID.SplitToParts(); ok {
		parent = &core.Parent{ExecutionID: p, JoinSetID: js}
	}
	return core.ExecutionEvent{CreatedAt: st.CreatedAt, Version: 0, Event: &core.Created{
		FFQN: st.FFQN, Params: core.Params{[]byte(`1`), []byte(`"x"`)}, Parent: parent, ScheduledAt: st.FirstScheduledAt,
		ComponentID:  core.ComponentId{ComponentType: st.ComponentType, Name: "comp", ComponentDigest: st.ComponentDigest},
		DeploymentID: st.DeploymentID,
	}}
}

// MustCreate inserts heads (each with its Created event) in one Update.
func MustCreate(tb testing.TB, b store.Backend, heads ...core.ExecutionState) {
	tb.Helper()
	err := b.Update(context.Background(), func(tx store.Tx) error {
		for _, h := range heads {
			if err := tx.CreateHead(h, []core.ExecutionEvent{createdEvent(h)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("create: %v", err)
	}
}

// MustHead reads a head through View.
func MustHead(tb testing.TB, b store.Backend, id core.ExecutionId) core.ExecutionState {
	tb.Helper()
	var st core.ExecutionState
	err := b.View(context.Background(), func(tx store.ReadTx) error {
		var err error
		st, err = tx.Head(id)
		return err
	})
	if err != nil {
		tb.Fatalf("head %s: %v", id, err)
	}
	return st
}

func u32(v uint32) *uint32 { return &v }
func u64(v uint64) *uint64 { return &v }
func ver(v core.Version) *core.Version {
	return &v
}
