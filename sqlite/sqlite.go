package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
)

var _ store.Backend = (*Backend)(nil)

// Durability says which crashes an acknowledged commit survives.
type Durability int

const (
	// DurabilityFsync, the default, fsyncs the write-ahead log before a
	// commit is acknowledged (PRAGMA synchronous=FULL): an acknowledged
	// commit survives a crash of the process, of the operating system and a
	// power loss. Every Update of a group-commit batch shares its fsync.
	DurabilityFsync Durability = iota
	// DurabilityOSCrashUnsafe acknowledges a commit once it is in the
	// write-ahead log, before it reaches the disk (PRAGMA
	// synchronous=NORMAL): it survives a crash of the process, but an
	// operating-system crash or a power loss may lose the most recently
	// acknowledged commits (the database itself stays consistent).
	DurabilityOSCrashUnsafe
)

// Names of the durability modes, as flags spell them.
const (
	DurabilityFsyncName         = "fsync"
	DurabilityOSCrashUnsafeName = "os-crash-unsafe"
)

// DurabilityUsage describes the modes for the usage of a flag that names
// one (`stela dev --durability`, `stela bench embedded --durability`).
const DurabilityUsage = "embedded store: " + DurabilityFsyncName + " (every acknowledged write is fsynced first and survives\n" +
	"an OS crash or power loss) or " + DurabilityOSCrashUnsafeName + " (faster: a crash of the process loses\n" +
	"nothing, but an OS crash or power loss may lose the last acknowledged writes)"

// String returns the mode's name (DurabilityFsyncName or
// DurabilityOSCrashUnsafeName).
func (d Durability) String() string {
	switch d {
	case DurabilityFsync:
		return DurabilityFsyncName
	case DurabilityOSCrashUnsafe:
		return DurabilityOSCrashUnsafeName
	}
	return fmt.Sprintf("Durability(%d)", int(d))
}

// synchronous is the PRAGMA synchronous value the mode runs the writer at.
func (d Durability) synchronous() (string, error) {
	switch d {
	case DurabilityFsync:
		return "FULL", nil
	case DurabilityOSCrashUnsafe:
		return "NORMAL", nil
	}
	return "", fmt.Errorf("sqlite: invalid Options.Durability %d", int(d))
}

// ParseDurability parses a mode's name: "fsync" or "os-crash-unsafe".
func ParseDurability(s string) (Durability, error) {
	switch s {
	case DurabilityFsyncName:
		return DurabilityFsync, nil
	case DurabilityOSCrashUnsafeName:
		return DurabilityOSCrashUnsafe, nil
	}
	return 0, fmt.Errorf("invalid durability %q: want %s (default) or %s", s, DurabilityFsyncName, DurabilityOSCrashUnsafeName)
}

// Options tunes a Backend. The zero value is the recommended configuration.
type Options struct {
	// Durability is what an acknowledged commit survives: DurabilityFsync
	// (the zero value: process crash, OS crash and power loss) or, faster,
	// DurabilityOSCrashUnsafe (process crash only).
	Durability Durability
	// BusyTimeout is how long a connection waits for a lock held by another
	// process before failing with SQLITE_BUSY; default 5s.
	BusyTimeout time.Duration
	// ReadConns is the number of read connections serving View and Queries;
	// default 4.
	ReadConns int
	// MaxBatch bounds the number of Update calls committed in one SQLite
	// transaction; default 256.
	MaxBatch int
	// Logger receives diagnostics (corrupt rows left out of query results,
	// at ERROR); default slog.Default().
	Logger *slog.Logger
}

// Backend is a store.Backend on one SQLite file. It is safe for concurrent
// use. See the package documentation for the schema and the write path.
type Backend struct {
	path string
	opts Options
	sync string // PRAGMA synchronous of every connection (Options.Durability)
	log  *slog.Logger

	wdb, rdb, cdb *sql.DB
	writer        *conn
	readers       chan *conn

	// The checkpointer copies the WAL back into the database file on its own
	// connection, so the writer does not wait for the bulk of a checkpoint;
	// once it has caught up, the writer copies the few frames committed
	// meanwhile itself (ckptFinish), which lets SQLite restart the WAL.
	ckpt        *conn
	ckptSignal  chan struct{}
	ckptStopped chan struct{}
	ckptFinish  atomic.Bool
	sinceCkpt   int // transactions committed since the last signal (writer only)
	// After the writer finished a checkpoint, restart tells whether its next
	// transaction restarted the WAL (writer only).
	restart restartCheck

	queue chan *request

	closeMu  sync.RWMutex // guards closed against concurrent enqueues
	closed   bool
	stop     chan struct{} // closed by Close: the writer drains and exits
	stopped  chan struct{} // closed by the writer when it has exited
	shutdown chan struct{} // closed by Close: blocked reader acquisitions give up

	closeOnce sync.Once
	closeErr  error

	heads    *headCache // writer only
	createds *createdCache

	stats struct {
		requests, batches, commits, transactions atomic.Int64
		checkpoints, walPagesMax                 atomic.Int64
		finishes, finishNanos, finishMaxNanos    atomic.Int64
	}

	undecodable store.Undecodable
	// purgeFault, when set (tests), runs between a purge's first
	// transaction and the rest; an error stops the purge there, as a crash
	// would (retention.go).
	purgeFault func(root core.ExecutionId) error
}

// Stats are counters of the write path since Open.
type Stats struct {
	// Requests is the number of writes queued: Update calls, log and
	// backtrace appends, deployment writes.
	Requests int64
	// Batches is the number of group-commit batches the writer ran (one
	// BEGIN IMMEDIATE each); Requests/Batches is the mean batch size.
	Batches int64
	// Commits is the number of requests acknowledged with writes: their fn
	// succeeded, wrote something and its transaction committed. Updates that
	// wrote nothing are not counted.
	Commits int64
	// Transactions is the number of write transactions committed: the
	// batches that wrote something. At DurabilityFsync each one costs one
	// fsync of the write-ahead log, shared by its Commits.
	Transactions int64
	// Checkpoints is the number of background checkpoints run; WALPagesMax
	// is the largest write-ahead log (in pages) one of them found.
	Checkpoints, WALPagesMax int64
	// WriterCheckpoints is the number of times the writer finished a
	// checkpoint itself (copying the frames committed while the background
	// one ran, so that the WAL restarts from its beginning);
	// WriterCheckpointTime and WriterCheckpointMax are the time it spent
	// doing so in total and at most once: how long checkpoints held up
	// writes.
	WriterCheckpoints                         int64
	WriterCheckpointTime, WriterCheckpointMax time.Duration
	// Undecodable counts corrupt rows left out of query results (each
	// logged at ERROR; see store.Undecodable).
	Undecodable int64
}

// FsyncsPerCommit is Transactions/Commits (0 before the first commit): at
// DurabilityFsync, the write-ahead log fsyncs per acknowledged commit.
func (s Stats) FsyncsPerCommit() float64 {
	if s.Commits == 0 {
		return 0
	}
	return float64(s.Transactions) / float64(s.Commits)
}

// Sub returns the counters accumulated since o was taken (WALPagesMax is
// s's).
func (s Stats) Sub(o Stats) Stats {
	return Stats{Requests: s.Requests - o.Requests, Batches: s.Batches - o.Batches, Commits: s.Commits - o.Commits,
		Transactions: s.Transactions - o.Transactions, Checkpoints: s.Checkpoints - o.Checkpoints, WALPagesMax: s.WALPagesMax,
		WriterCheckpoints: s.WriterCheckpoints - o.WriterCheckpoints, WriterCheckpointTime: s.WriterCheckpointTime - o.WriterCheckpointTime,
		WriterCheckpointMax: s.WriterCheckpointMax, Undecodable: s.Undecodable - o.Undecodable}
}

// Stats returns the write-path counters since Open.
func (b *Backend) Stats() Stats {
	return Stats{Requests: b.stats.requests.Load(), Batches: b.stats.batches.Load(), Commits: b.stats.commits.Load(),
		Transactions: b.stats.transactions.Load(), Checkpoints: b.stats.checkpoints.Load(), WALPagesMax: b.stats.walPagesMax.Load(),
		WriterCheckpoints: b.stats.finishes.Load(), WriterCheckpointTime: time.Duration(b.stats.finishNanos.Load()),
		WriterCheckpointMax: time.Duration(b.stats.finishMaxNanos.Load()), Undecodable: b.undecodable.Count()}
}

// request is one queued write: an Update's fn or an internal write.
type request struct {
	ctx context.Context
	fn  func(*writeTx) error
	// update marks an fn that writes only through writeTx's store.Tx
	// methods, so that the writer knows whether it wrote anything. Internal
	// writes (logs, backtraces, deployments) use the connection directly and
	// always count as writes.
	update bool
	err    error
	panic  any
	done   chan struct{}
	// created are the Created events the fn wrote (see createdCache).
	created []*createdEntry
}

// Open opens (creating if absent) the database at path, creates or migrates
// the schema, and starts the writer. Opening an existing file is idempotent;
// several Backends (or processes) may open the same file, their writes are
// serialised by SQLite's write lock.
func Open(path string, opts Options) (*Backend, error) {
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") || strings.ContainsRune(path, '?') {
		return nil, fmt.Errorf("sqlite: open %q: path must be a plain file path", path)
	}
	syncMode, err := opts.Durability.synchronous()
	if err != nil {
		return nil, err
	}
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = 5 * time.Second
	}
	if opts.ReadConns <= 0 {
		opts.ReadConns = 4
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 256
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
		}
	}
	b := &Backend{
		path:     path,
		opts:     opts,
		sync:     syncMode,
		log:      logger.WithGroup("sqlite"),
		readers:  make(chan *conn, opts.ReadConns),
		queue:    make(chan *request, 4*opts.MaxBatch),
		stop:     make(chan struct{}),
		stopped:  make(chan struct{}),
		shutdown: make(chan struct{}),

		ckptSignal:  make(chan struct{}, 1),
		ckptStopped: make(chan struct{}),
		heads:       newHeadCache(),
		createds:    newCreatedCache(),
	}
	if err := b.open(); err != nil {
		b.closeConns()
		return nil, err
	}
	go b.writeLoop()
	go b.checkpointLoop()
	return b, nil
}

type role int

const (
	roleWriter role = iota
	roleReader
	roleCheckpointer
)

func (b *Backend) dsn(r role) string {
	ms := b.opts.BusyTimeout.Milliseconds()
	q := fmt.Sprintf("?_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=synchronous(%s)"+
		"&_pragma=foreign_keys(0)&_pragma=temp_store(MEMORY)",
		ms, b.sync)
	switch r {
	case roleWriter:
		// Checkpoints run on the checkpointer's connection instead.
		q += "&_pragma=cache_size(-16000)&_pragma=wal_autocheckpoint(0)&_pragma=journal_size_limit(67108864)"
	case roleReader:
		q += "&_pragma=cache_size(-8000)&_pragma=query_only(1)"
	}
	return b.path + q
}

func openDB(dsn string, conns int) (*sql.DB, error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	return db, nil
}

func (b *Backend) open() error {
	ctx := context.Background()
	var err error
	if b.wdb, err = openDB(b.dsn(roleWriter), 1); err != nil {
		return fmt.Errorf("sqlite: open %s: %w", b.path, err)
	}
	wc, err := b.wdb.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: open %s: %w", b.path, err)
	}
	b.writer = newConn(wc)
	if err := migrate(ctx, b.writer); err != nil {
		return fmt.Errorf("sqlite: open %s: %w", b.path, err)
	}
	if b.cdb, err = openDB(b.dsn(roleCheckpointer), 1); err != nil {
		return fmt.Errorf("sqlite: open %s: %w", b.path, err)
	}
	cc, err := b.cdb.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: open %s: checkpointer: %w", b.path, err)
	}
	b.ckpt = newConn(cc)
	if b.rdb, err = openDB(b.dsn(roleReader), b.opts.ReadConns); err != nil {
		return fmt.Errorf("sqlite: open %s: %w", b.path, err)
	}
	for range b.opts.ReadConns {
		rc, err := b.rdb.Conn(ctx)
		if err != nil {
			return fmt.Errorf("sqlite: open %s: reader: %w", b.path, err)
		}
		b.readers <- newConn(rc)
	}
	return nil
}

// Close stops the writer after committing the requests already queued, then
// closes every connection. Later calls fail with core.ErrClosed.
func (b *Backend) Close() error {
	b.closeOnce.Do(func() {
		b.closeMu.Lock()
		b.closed = true
		b.closeMu.Unlock()
		close(b.stop)
		close(b.shutdown)
		<-b.stopped
		<-b.ckptStopped
		// Wait for in-flight readers to return their connections.
		for range b.opts.ReadConns {
			c := <-b.readers
			b.closeErr = errors.Join(b.closeErr, c.close())
		}
		b.closeErr = errors.Join(b.closeErr, b.writer.close())
		b.writer = nil
		b.closeErr = errors.Join(b.closeErr, b.closeConns())
	})
	return b.closeErr
}

func (b *Backend) closeConns() error {
	var err error
	if b.writer != nil {
		err = errors.Join(err, b.writer.close())
		b.writer = nil
	}
	if b.ckpt != nil {
		err = errors.Join(err, b.ckpt.close())
		b.ckpt = nil
	}
	if b.readers != nil {
		for {
			select {
			case c := <-b.readers:
				err = errors.Join(err, c.close())
				continue
			default:
			}
			break
		}
	}
	if b.wdb != nil {
		err = errors.Join(err, b.wdb.Close())
	}
	if b.rdb != nil {
		err = errors.Join(err, b.rdb.Close())
	}
	if b.cdb != nil {
		err = errors.Join(err, b.cdb.Close())
	}
	if err != nil {
		return fmt.Errorf("sqlite: close %s: %w", b.path, err)
	}
	return nil
}

var errClosed = fmt.Errorf("sqlite: %w", core.ErrClosed)

// --- write path ---------------------------------------------------------------

// Update runs fn on the writer goroutine inside a savepoint of the current
// group-commit transaction and returns once that transaction is durable (per
// Options.Durability). fn runs exactly once and sees the writes of the fns
// committed before it. ctx is checked before fn runs (a done ctx skips it);
// once fn has run, Update waits for the outcome of the commit. fn must not
// call Update, AppendLogs or AppendBacktraces (they would wait for the writer
// that is running fn: deadlock) nor expect View to see its writes. A batch in
// which no fn wrote anything ends without a commit (no write-ahead log write,
// no fsync).
func (b *Backend) Update(ctx context.Context, fn func(tx store.Tx) error) error {
	return b.enqueue(ctx, &request{update: true, fn: func(tx *writeTx) error { return fn(tx) }})
}

// write queues an internal write (one that uses the connection directly).
func (b *Backend) write(ctx context.Context, fn func(*writeTx) error) error {
	return b.enqueue(ctx, &request{fn: fn})
}

// Synchronous reads PRAGMA synchronous on the writer connection: 2 (FULL)
// at DurabilityFsync, 1 (NORMAL) at DurabilityOSCrashUnsafe. It reports the
// mode actually in force; the read commits nothing.
func (b *Backend) Synchronous(ctx context.Context) (int, error) {
	var v int
	err := b.enqueue(ctx, &request{update: true, fn: func(tx *writeTx) error {
		var err error
		v, err = tx.c.queryInt(tx.ctx, "PRAGMA synchronous")
		return err
	}})
	if err != nil {
		return 0, fmt.Errorf("sqlite: read PRAGMA synchronous: %w", err)
	}
	return v, nil
}

// DurabilityInForce reads the durability mode back from the writer
// connection (Synchronous): the mode in force, whatever was asked for.
func (b *Backend) DurabilityInForce(ctx context.Context) (Durability, error) {
	v, err := b.Synchronous(ctx)
	if err != nil {
		return 0, err
	}
	switch v {
	case 2, 3: // FULL, EXTRA
		return DurabilityFsync, nil
	case 1: // NORMAL
		return DurabilityOSCrashUnsafe, nil
	}
	return 0, fmt.Errorf("sqlite store runs at PRAGMA synchronous=%d, which no durability mode uses", v)
}

// enqueue queues r for the writer and waits for its outcome. A panic in fn
// is re-raised in the caller's goroutine.
func (b *Backend) enqueue(ctx context.Context, r *request) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.ctx, r.done = ctx, make(chan struct{})
	b.closeMu.RLock()
	if b.closed {
		b.closeMu.RUnlock()
		return errClosed
	}
	b.queue <- r
	b.closeMu.RUnlock()
	<-r.done
	if r.panic != nil {
		panic(r.panic)
	}
	return r.err
}

// writeLoop is the writer goroutine. Each batch takes every request queued
// at that moment: while a batch runs — at DurabilityFsync mostly while its
// COMMIT waits for the fsync — the requests arriving meanwhile queue up and
// form the next batch, so under load one fsync is shared by every request
// that was ready for it.
func (b *Backend) writeLoop() {
	defer close(b.stopped)
	defer b.restart.close()
	batch := make([]*request, 0, b.opts.MaxBatch)
	for {
		var first *request
		select {
		case first = <-b.queue:
		case <-b.stop:
			// No enqueue can start after stop; commit what is queued and exit.
			for {
				batch = batch[:0]
				for len(batch) < b.opts.MaxBatch {
					select {
					case r := <-b.queue:
						batch = append(batch, r)
						continue
					default:
					}
					break
				}
				if len(batch) == 0 {
					return
				}
				b.runBatch(batch)
			}
		}
		batch = append(batch[:0], first)
		// Let callers released by the previous commit enqueue their next
		// request, so that batches (and the commit cost) are shared.
		runtime.Gosched()
	fill:
		for len(batch) < b.opts.MaxBatch {
			select {
			case r := <-b.queue:
				batch = append(batch, r)
			default:
				break fill
			}
		}
		committed := b.runBatch(batch)
		if b.ckptFinish.Load() || (committed && b.restart.failed(b.path)) {
			b.finishCheckpoint()
		}
	}
}

// runBatch runs batch in one SQLite transaction, each request in its own
// savepoint, commits it if any request wrote something, and replies to every
// request. It reports whether it committed.
func (b *Backend) runBatch(batch []*request) bool {
	b.stats.batches.Add(1)
	b.stats.requests.Add(int64(len(batch)))
	w := b.writer
	bg := context.Background()
	defer func() {
		for _, r := range batch {
			close(r.done)
		}
	}()
	if err := w.exec(bg, "BEGIN IMMEDIATE"); err != nil {
		// e.g. SQLITE_BUSY: another process held the write lock for longer
		// than Options.BusyTimeout.
		b.abortBatch(batch, fmt.Errorf("sqlite: begin: %w", err))
		return false
	}
	if err := b.heads.begin(bg, w); err != nil {
		b.abortBatch(batch, fmt.Errorf("sqlite: %w", err))
		return false
	}
	writers := 0 // requests that succeeded and wrote something
	seq := &seqAlloc{}
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.err = err
			continue
		}
		if err := w.exec(bg, "SAVEPOINT u"); err != nil {
			b.abortBatch(batch, fmt.Errorf("sqlite: savepoint: %w", err))
			return false
		}
		tx := &writeTx{readTx: readTx{c: w, ctx: bg}, seq: seq, cache: b.heads, createds: b.createds}
		err, pv := runFn(r.fn, tx)
		if err == nil && pv == nil && tx.writeErr == nil {
			err = tx.end()
		}
		tx.done = true
		if err == nil && pv == nil && tx.writeErr != nil {
			err = tx.writeErr
		}
		if err != nil || pv != nil {
			r.err, r.panic = err, pv
			if e := w.exec(bg, "ROLLBACK TO u"); e != nil {
				b.abortBatch(batch, fmt.Errorf("sqlite: rollback to savepoint: %w", e))
				return false
			}
		} else if tx.wrote || !r.update {
			writers++
			b.heads.stage(tx.staged)
			r.created = tx.created
		}
		if e := w.exec(bg, "RELEASE u"); e != nil {
			b.abortBatch(batch, fmt.Errorf("sqlite: release savepoint: %w", e))
			return false
		}
	}
	if writers == 0 {
		// Nothing to commit: only reads (or failures) in this batch.
		b.heads.abort()
		if err := w.exec(bg, "ROLLBACK"); err != nil {
			b.log.Error("rollback failed", core.LogKeyErr, err)
		}
		return false
	}
	if err := seq.flush(bg, w); err != nil {
		b.abortBatch(batch, fmt.Errorf("sqlite: %w", err))
		return false
	}
	if err := w.exec(bg, "COMMIT"); err != nil {
		b.abortBatch(batch, fmt.Errorf("sqlite: commit: %w", err))
		return false
	}
	b.stats.transactions.Add(1)
	b.stats.commits.Add(int64(writers))
	b.heads.commit()
	for _, r := range batch {
		if len(r.created) > 0 {
			b.createds.add(r.created)
		}
	}
	if b.sinceCkpt++; b.sinceCkpt >= checkpointEvery {
		b.sinceCkpt = 0
		select {
		case b.ckptSignal <- struct{}{}:
		default: // a checkpoint is pending already
		}
	}
	return true
}

// checkpointEvery is the number of committed transactions between two
// checkpoint requests (a transaction appends a few to a few dozen pages to
// the WAL).
const checkpointEvery = 200

// checkpointLoop runs passive checkpoints when the writer asks for them.
// PASSIVE never blocks the writer or readers; frames it cannot copy yet (past
// the snapshot of a reader) are copied by a later run.
//
// SQLite restarts the WAL from its beginning (bounding its size) only when a
// write transaction begins after a checkpoint has copied every frame. Under
// a steady stream of commits the background checkpoint never catches up with
// the writer by itself, so it runs passes until one copies little (or the WAL
// exceeds walLargePages), and then the writer finishes the job between two
// batches: it copies the frames committed meanwhile (a short checkpoint,
// counted in Stats.WriterCheckpointTime) and its next transaction restarts
// the WAL — unless a reader still used the old frames, in which case the
// writer tries again after the next batches (restartCheck).
func (b *Backend) checkpointLoop() {
	defer close(b.ckptStopped)
	for {
		select {
		case <-b.ckptSignal:
			// Each pass copies what was committed during the previous one;
			// once that is little, the writer copies the rest. If the
			// passes do not converge (commits outpace the checkpointer),
			// the writer does so only once the WAL is large.
			prev := int64(-1)
			for range checkpointPasses {
				log, err := b.checkpoint()
				if err != nil {
					b.log.Warn("checkpoint failed", core.LogKeyErr, err)
					break
				}
				if (prev >= 0 && log-prev <= checkpointFinishFrames) || log >= walLargePages {
					b.ckptFinish.Store(true)
					break
				}
				prev = log
			}
		case <-b.stop:
			return
		}
	}
}

// Background checkpoint passes per request, and the number of frames
// committed during the last pass below which the writer finishes the job.
const (
	checkpointPasses       = 8
	checkpointFinishFrames = 256
	// walLargePages is the WAL size (16,384 pages: 64 MiB at 4 KiB, the
	// journal_size_limit) beyond which the writer finishes a checkpoint even
	// if it has many frames to copy.
	walLargePages = 16384
)

// checkpoint runs one passive checkpoint on the checkpointer's connection and
// returns the size of the WAL (in frames) it saw.
func (b *Backend) checkpoint() (int64, error) {
	rows, err := b.ckpt.query(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)")
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var busy, log, copied int64
	if rows.Next() {
		if err := rows.Scan(&busy, &log, &copied); err != nil {
			return 0, err
		}
	}
	b.stats.checkpoints.Add(1)
	if log > b.stats.walPagesMax.Load() {
		b.stats.walPagesMax.Store(log) // only this goroutine stores
	}
	return log, rows.Close()
}

// restartCheck verifies that the WAL restarted after the writer finished a
// checkpoint. The restart fails when a reader still uses frames of the old
// WAL (it began before the checkpoint caught up); readers are short, so the
// writer finishes again after the next batch, a few times at most, and
// otherwise waits for the next background checkpoint.
type restartCheck struct {
	armed bool
	tries int
	seq   uint32 // the WAL header's checkpoint sequence number when armed
	wal   *os.File
}

// restartTries bounds the consecutive batches after which the writer
// finishes a checkpoint again because the WAL did not restart.
const restartTries = 8

// arm records the WAL's checkpoint sequence number before a finishing
// checkpoint.
func (r *restartCheck) arm(dbPath string) {
	seq, ok := r.walSeq(dbPath)
	if !ok {
		r.armed = false
		return
	}
	if !r.armed {
		r.tries = 0
	}
	r.armed, r.seq = true, seq
	r.tries++
}

// failed reports, after a batch, whether the finishing checkpoint before it
// should be repeated: the WAL has not restarted and tries remain.
func (r *restartCheck) failed(dbPath string) bool {
	if !r.armed {
		return false
	}
	seq, ok := r.walSeq(dbPath)
	if !ok || seq != r.seq || r.tries >= restartTries {
		r.armed = false
		return false
	}
	return true
}

// walSeq reads the checkpoint sequence number in the WAL header, which
// SQLite increments on every restart.
func (r *restartCheck) walSeq(dbPath string) (uint32, bool) {
	if r.wal == nil {
		f, err := os.Open(dbPath + "-wal")
		if err != nil {
			return 0, false
		}
		r.wal = f
	}
	var hdr [16]byte
	if _, err := r.wal.ReadAt(hdr[:], 0); err != nil {
		return 0, false
	}
	return binary.BigEndian.Uint32(hdr[12:]), true
}

func (r *restartCheck) close() {
	if r.wal != nil {
		_ = r.wal.Close()
		r.wal = nil
	}
}

// finishCheckpoint runs on the writer, outside any transaction: a passive
// checkpoint of the frames the background one could not see.
func (b *Backend) finishCheckpoint() {
	b.ckptFinish.Store(false)
	b.restart.arm(b.path)
	start := time.Now()
	if err := b.writer.exec(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)"); err != nil {
		b.log.Warn("checkpoint failed", core.LogKeyErr, err)
	}
	d := int64(time.Since(start))
	b.stats.finishes.Add(1)
	b.stats.finishNanos.Add(d)
	if d > b.stats.finishMaxNanos.Load() {
		b.stats.finishMaxNanos.Store(d) // only the writer stores
	}
}

// abortBatch rolls the transaction back and fails every request of batch
// that had not failed by itself.
func (b *Backend) abortBatch(batch []*request, err error) {
	b.heads.abort()
	for _, r := range batch {
		r.created = nil
	}
	if e := b.writer.exec(context.Background(), "ROLLBACK"); e != nil && !isNoTx(e) {
		b.log.Error("rollback failed", core.LogKeyErr, e)
	}
	for _, r := range batch {
		if r.err == nil && r.panic == nil {
			r.err = err
		}
	}
}

func isNoTx(err error) bool {
	return err != nil && strings.Contains(err.Error(), "no transaction is active")
}

func runFn(fn func(*writeTx) error, tx *writeTx) (err error, pv any) {
	defer func() {
		if p := recover(); p != nil {
			pv = p
		}
	}()
	return fn(tx), nil
}

// --- read path ----------------------------------------------------------------

func (b *Backend) acquire(ctx context.Context) (*conn, error) {
	b.closeMu.RLock()
	closed := b.closed
	b.closeMu.RUnlock()
	if closed {
		return nil, errClosed
	}
	select {
	case c := <-b.readers:
		return c, nil
	case <-b.shutdown:
		return nil, errClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (b *Backend) release(c *conn) { b.readers <- c }

// View runs fn in a read transaction on a reader connection: every read of
// fn observes the same committed snapshot (WAL read isolation).
func (b *Backend) View(ctx context.Context, fn func(tx store.ReadTx) error) error {
	c, err := b.acquire(ctx)
	if err != nil {
		return err
	}
	defer b.release(c)
	bg := context.Background()
	if err := c.exec(bg, "BEGIN"); err != nil {
		return fmt.Errorf("sqlite: begin read: %w", err)
	}
	tx := &readTx{c: c, ctx: ctx}
	defer func() {
		tx.done = true
		if err := c.exec(bg, "ROLLBACK"); err != nil && !isNoTx(err) {
			b.log.Error("read rollback failed", core.LogKeyErr, err)
		}
	}()
	return fn(tx)
}

// withReader runs fn on a reader connection outside an explicit transaction
// (each statement reads its own committed snapshot).
func (b *Backend) withReader(ctx context.Context, fn func(c *conn) error) error {
	c, err := b.acquire(ctx)
	if err != nil {
		return err
	}
	defer b.release(c)
	return fn(c)
}

// --- connections ----------------------------------------------------------------

// conn is one dedicated SQLite connection with its prepared statements. It is
// used by one goroutine at a time (the writer, or a reader's current holder).
type conn struct {
	c     *sql.Conn
	stmts map[string]*sql.Stmt
	// narrow holds the text of each narrow head UPDATE by its columns'
	// mask (changedColumns).
	narrow map[uint32]string
}

func newConn(c *sql.Conn) *conn { return &conn{c: c, stmts: map[string]*sql.Stmt{}} }

func (c *conn) stmt(q string) (*sql.Stmt, error) {
	if s, ok := c.stmts[q]; ok {
		return s, nil
	}
	s, err := c.c.PrepareContext(context.Background(), q)
	if err != nil {
		return nil, err
	}
	c.stmts[q] = s
	return s, nil
}

func (c *conn) exec(ctx context.Context, q string, args ...any) error {
	_, err := c.execResult(ctx, q, args...)
	return err
}

func (c *conn) execResult(ctx context.Context, q string, args ...any) (sql.Result, error) {
	s, err := c.stmt(q)
	if err != nil {
		return nil, err
	}
	return s.ExecContext(ctx, args...)
}

func (c *conn) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	s, err := c.stmt(q)
	if err != nil {
		return nil, err
	}
	return s.QueryContext(ctx, args...)
}

// queryDynamic runs a query whose text varies per call without caching it.
func (c *conn) queryDynamic(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return c.c.QueryContext(ctx, q, args...)
}

func (c *conn) close() error {
	var err error
	for _, s := range c.stmts {
		err = errors.Join(err, s.Close())
	}
	c.stmts = nil
	return errors.Join(err, c.c.Close())
}

// --- errors ---------------------------------------------------------------------

// isUniqueViolation reports whether err is a UNIQUE or PRIMARY KEY violation.
func isUniqueViolation(err error) bool {
	var se *msqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() {
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		return true
	}
	return false
}

// writeErr wraps a write failure with context, mapping uniqueness violations
// to core.ErrConflict.
func writeErr(err error, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if isUniqueViolation(err) {
		return fmt.Errorf("sqlite: %s: %w: %w", msg, core.ErrConflict, err)
	}
	return fmt.Errorf("sqlite: %s: %w", msg, err)
}
