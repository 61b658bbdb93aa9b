package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"time"

	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/sqlite"
)

// StatsPath is where `stela dev` reports its write-path counters and CPU
// time, for the HTTP benchmarks (ServeStats). It is not part of the API.
const StatsPath = "/debug/stela/stats"

// devStats is the body of GET StatsPath.
type devStats struct {
	Backend string `json:"backend"`
	// Durability is the embedded store's mode (sqlite.Durability's name) as
	// read back from the writer connection; empty on other backends.
	Durability string `json:"durability,omitempty"`
	// CPUms is the server process's CPU time (user + system) since it started.
	CPUms float64     `json:"cpu_ms"`
	Store *storeStats `json:"store,omitempty"`
}

// storeStats are sqlite.Stats as JSON.
type storeStats struct {
	Requests     int64 `json:"requests"`
	Batches      int64 `json:"batches"`
	Commits      int64 `json:"commits"`
	Transactions int64 `json:"write_transactions"`
	Checkpoints  int64 `json:"checkpoints"`
	WALPagesMax  int64 `json:"wal_pages_max"`
	// WriterCheckpointMs is the time the writer spent finishing
	// checkpoints, WriterCheckpointMaxMs the longest once.
	WriterCheckpoints     int64   `json:"writer_checkpoints"`
	WriterCheckpointMs    float64 `json:"writer_checkpoint_ms"`
	WriterCheckpointMaxMs float64 `json:"writer_checkpoint_max_ms"`
}

func storeStatsOf(s sqlite.Stats) *storeStats {
	return &storeStats{Requests: s.Requests, Batches: s.Batches, Commits: s.Commits, Transactions: s.Transactions,
		Checkpoints: s.Checkpoints, WALPagesMax: s.WALPagesMax, WriterCheckpoints: s.WriterCheckpoints,
		WriterCheckpointMs: cpuMs(s.WriterCheckpointTime), WriterCheckpointMaxMs: cpuMs(s.WriterCheckpointMax)}
}

// sub returns the counters accumulated since o (the maxima are s's).
func (s *storeStats) sub(o *storeStats) *storeStats {
	d := *s
	d.Requests -= o.Requests
	d.Batches -= o.Batches
	d.Commits -= o.Commits
	d.Transactions -= o.Transactions
	d.Checkpoints -= o.Checkpoints
	d.WriterCheckpoints -= o.WriterCheckpoints
	d.WriterCheckpointMs -= o.WriterCheckpointMs
	return &d
}

// ServeStats answers GET StatsPath for `stela dev`: its backend (mode),
// the process's CPU time and, on the embedded store (b not nil), the
// writer's counters and its durability.
func ServeStats(w http.ResponseWriter, mode string, b *sqlite.Backend, durability string) {
	out := devStats{Backend: mode, CPUms: cpuMs(processCPU())}
	if b != nil {
		out.Durability = durability
		out.Store = storeStatsOf(b.Stats())
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

func cpuMs(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// benchCost is what a benchmark's operations cost: the store's commits and
// the write transactions (fsyncs) they shared, and CPU time per operation.
type benchCost struct {
	// Durability of the embedded store measured ("" when unknown: a server
	// that does not report it).
	Durability string `json:"durability,omitempty"`
	// Commits acknowledged with writes, and the write transactions that
	// committed them: one WAL fsync each at durability fsync.
	Commits         int64   `json:"commits"`
	Transactions    int64   `json:"write_transactions"`
	FsyncsPerCommit float64 `json:"fsyncs_per_commit"`
	// CPU time per operation: of the server process and of the benchmark's
	// own process (for `embedded`, one process runs both: ClientCPUms is 0).
	ServerCPUms float64 `json:"server_cpu_ms_per_op"`
	ClientCPUms float64 `json:"client_cpu_ms_per_op"`
	// Store is the embedded store's write path over the interval (nil when
	// the server does not report it).
	Store *storeStats `json:"store,omitempty"`
}

// costMeter measures a benchCost over an interval.
type costMeter struct {
	c          *client.Client      // nil: in-process store
	store      func() sqlite.Stats // in-process store
	durability string              // in-process store
	srv0       *devStats           // nil: the server does not report stats
	st0        sqlite.Stats
	cpu0       time.Duration
}

// startCost starts measuring against a server; one that does not serve
// StatsPath (not `stela dev`) yields only the client's CPU time.
func startCost(ctx context.Context, c *client.Client) *costMeter {
	m := &costMeter{c: c, cpu0: processCPU()}
	var s devStats
	if err := getDevStats(ctx, c, &s); err == nil {
		m.srv0 = &s
	}
	return m
}

// startLocalCost starts measuring an in-process store.
func startLocalCost(b *sqlite.Backend, durability string) *costMeter {
	return &costMeter{store: b.Stats, durability: durability, st0: b.Stats(), cpu0: processCPU()}
}

// stop ends the interval; ops is the number of operations it ran.
func (m *costMeter) stop(ctx context.Context, ops int) benchCost {
	per := func(d float64) float64 { return math.Round(d/float64(max(ops, 1))*1000) / 1000 }
	cpu := cpuMs(processCPU() - m.cpu0)
	var out benchCost
	var st *storeStats
	switch {
	case m.store != nil:
		s := m.store().Sub(m.st0)
		st = storeStatsOf(s)
		out.Durability, out.ServerCPUms = m.durability, per(cpu)
	case m.srv0 != nil:
		out.ClientCPUms = per(cpu)
		var s devStats
		if err := getDevStats(ctx, m.c, &s); err != nil {
			return out
		}
		out.Durability, out.ServerCPUms = s.Durability, per(s.CPUms-m.srv0.CPUms)
		if s.Store != nil && m.srv0.Store != nil {
			st = s.Store.sub(m.srv0.Store)
		}
	default:
		out.ClientCPUms = per(cpu)
	}
	if st != nil {
		out.Store = st
		out.Commits, out.Transactions = st.Commits, st.Transactions
		if st.Commits > 0 {
			out.FsyncsPerCommit = math.Round(float64(st.Transactions)/float64(st.Commits)*1000) / 1000
		}
	}
	return out
}

// printCost prints a benchCost line; op names the operation ("round trip").
func printCost(w io.Writer, c benchCost, op string) {
	if c.Commits > 0 {
		fmt.Fprintf(w, "  store (durability %s): %d commits in %d write transactions = %.3f fsyncs/commit\n",
			c.Durability, c.Commits, c.Transactions, c.FsyncsPerCommit)
	}
	if s := c.Store; s != nil && s.Checkpoints > 0 {
		fmt.Fprintf(w, "  checkpoints: %d in the background (largest WAL %d pages); the writer finished %d in %.1f ms (longest %.1f ms)\n",
			s.Checkpoints, s.WALPagesMax, s.WriterCheckpoints, s.WriterCheckpointMs, s.WriterCheckpointMaxMs)
	}
	switch {
	case c.ClientCPUms == 0:
		fmt.Fprintf(w, "  CPU per %s: %.3f ms (store + workers, one process)\n", op, c.ServerCPUms)
	case c.ServerCPUms == 0:
		fmt.Fprintf(w, "  CPU per %s: client %.3f ms (the server does not report its CPU time)\n", op, c.ClientCPUms)
	default:
		fmt.Fprintf(w, "  CPU per %s: server %.3f ms + client %.3f ms\n", op, c.ServerCPUms, c.ClientCPUms)
	}
}

// getDevStats reads the server's StatsPath into s.
func getDevStats(ctx context.Context, c *client.Client, s *devStats) error {
	resp, err := c.Call(ctx, http.MethodGet, StatsPath, nil, nil, client.JSON)
	if err != nil {
		return err
	}
	return json.Unmarshal(resp.Body, s)
}
