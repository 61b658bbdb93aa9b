package sqlite

import (
	"context"
	"database/sql"
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

// Options tunes a Backend. The zero value is the recommended configuration.
type Options struct {
	// Synchronous is SQLite's PRAGMA synchronous for the writer: "NORMAL"
	// (default) or "FULL" ("OFF" and "EXTRA" are accepted too). In WAL mode
	// NORMAL keeps every acknowledged commit across a crash of the process but
	// an operating-system crash or power loss may roll back the most recent
	// commits (the database itself stays consistent). FULL syncs the WAL on
	// every commit (once per group-commit batch) and survives both.
	Synchronous string
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
	log  *slog.Logger

	wdb, rdb, cdb *sql.DB
	writer        *conn
	readers       chan *conn

	// The checkpointer copies the WAL back into the database file on its own
	// connection, so the writer never waits for a checkpoint's fsyncs.
	ckpt        *conn
	ckptSignal  chan struct{}
	ckptStopped chan struct{}
	sinceCkpt   int // batches committed since the last signal (writer only)

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

	batches, requests atomic.Int64
	undecodable       store.Undecodable
}

// Stats are counters of the write path.
type Stats struct {
	// Batches is the number of group-commit transactions run.
	Batches int64
	// Requests is the number of writes (Update calls, log and backtrace
	// appends) they carried; Requests/Batches is the mean batch size.
	Requests int64
	// Undecodable counts corrupt rows left out of query results (each
	// logged at ERROR; see store.Undecodable).
	Undecodable int64
}

// Stats returns the write-path counters since Open.
func (b *Backend) Stats() Stats {
	return Stats{Batches: b.batches.Load(), Requests: b.requests.Load(), Undecodable: b.undecodable.Count()}
}

// request is one queued write: an Update's fn or an internal write.
type request struct {
	ctx   context.Context
	fn    func(*writeTx) error
	err   error
	panic any
	done  chan struct{}
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
	syncMode, err := normSynchronous(opts.Synchronous)
	if err != nil {
		return nil, err
	}
	opts.Synchronous = syncMode
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

func normSynchronous(s string) (string, error) {
	switch u := strings.ToUpper(s); u {
	case "":
		return "NORMAL", nil
	case "OFF", "NORMAL", "FULL", "EXTRA":
		return u, nil
	}
	return "", fmt.Errorf("sqlite: invalid Options.Synchronous %q (want NORMAL or FULL)", s)
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
		ms, b.opts.Synchronous)
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
// Options.Synchronous). fn runs exactly once and sees the writes of the fns
// committed before it. ctx is checked before fn runs (a done ctx skips it);
// once fn has run, Update waits for the outcome of the commit. fn must not
// call Update, AppendLogs or AppendBacktraces (they would wait for the writer
// that is running fn: deadlock) nor expect View to see its writes.
func (b *Backend) Update(ctx context.Context, fn func(tx store.Tx) error) error {
	return b.write(ctx, func(tx *writeTx) error { return fn(tx) })
}

// write queues a request for the writer and waits for its outcome. A panic in
// fn is re-raised in the caller's goroutine.
func (b *Backend) write(ctx context.Context, fn func(*writeTx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &request{ctx: ctx, fn: fn, done: make(chan struct{})}
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

func (b *Backend) writeLoop() {
	defer close(b.stopped)
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
		b.runBatch(batch)
	}
}

// runBatch commits batch in one SQLite transaction, each request in its own
// savepoint, and replies to every request.
func (b *Backend) runBatch(batch []*request) {
	b.batches.Add(1)
	b.requests.Add(int64(len(batch)))
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
		return
	}
	if err := b.heads.begin(bg, w); err != nil {
		b.abortBatch(batch, fmt.Errorf("sqlite: %w", err))
		return
	}
	committed := 0
	seq := &seqAlloc{}
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.err = err
			continue
		}
		if err := w.exec(bg, "SAVEPOINT u"); err != nil {
			b.abortBatch(batch, fmt.Errorf("sqlite: savepoint: %w", err))
			return
		}
		tx := &writeTx{readTx: readTx{c: w, ctx: bg}, seq: seq, cache: b.heads, createds: b.createds}
		err, pv := runFn(r.fn, tx)
		tx.done = true
		if err == nil && pv == nil && tx.writeErr != nil {
			err = tx.writeErr
		}
		if err != nil || pv != nil {
			r.err, r.panic = err, pv
			if e := w.exec(bg, "ROLLBACK TO u"); e != nil {
				b.abortBatch(batch, fmt.Errorf("sqlite: rollback to savepoint: %w", e))
				return
			}
		} else {
			committed++
			b.heads.stage(tx.staged)
			r.created = tx.created
		}
		if e := w.exec(bg, "RELEASE u"); e != nil {
			b.abortBatch(batch, fmt.Errorf("sqlite: release savepoint: %w", e))
			return
		}
	}
	if committed == 0 {
		b.heads.abort()
		if err := w.exec(bg, "ROLLBACK"); err != nil {
			b.log.Error("rollback failed", core.LogKeyErr, err)
		}
		return
	}
	if err := seq.flush(bg, w); err != nil {
		b.abortBatch(batch, fmt.Errorf("sqlite: %w", err))
		return
	}
	if err := w.exec(bg, "COMMIT"); err != nil {
		b.abortBatch(batch, fmt.Errorf("sqlite: commit: %w", err))
		return
	}
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
}

// checkpointEvery is the number of committed batches between two checkpoint
// requests (a batch appends a few to a few dozen pages to the WAL).
const checkpointEvery = 200

// checkpointLoop runs passive checkpoints when the writer asks for them.
// PASSIVE never blocks the writer or readers; frames it cannot copy yet are
// copied by a later run, and SQLite restarts the WAL from its beginning once a
// checkpoint has caught up.
func (b *Backend) checkpointLoop() {
	defer close(b.ckptStopped)
	for {
		select {
		case <-b.ckptSignal:
			if err := b.ckpt.exec(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)"); err != nil {
				b.log.Warn("checkpoint failed", core.LogKeyErr, err)
			}
		case <-b.stop:
			return
		}
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
