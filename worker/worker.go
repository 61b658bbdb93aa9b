package worker

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stela-dev/stela/core"
)

// Defaults of Options.
const (
	DefaultConcurrency        = 64
	DefaultLockBatch          = 25
	DefaultLockExpiry         = 10 * time.Second
	DefaultPollWait           = 5 * time.Second
	DefaultShutdownGrace      = 10 * time.Second
	DefaultMaxCachedWorkflows = 10_000
	// DefaultMaxCachedBytes bounds the memory of the workflows kept in
	// memory (256 MiB: about 200,000 steps of workflows calling activities
	// with small parameters and results).
	DefaultMaxCachedBytes = 256 << 20
	DefaultMaxAwaiting    = 1024
	DefaultCacheTTL       = 10 * time.Minute
	// DefaultMaxRetries and DefaultRetryBackoff are an activity's retry
	// policy unless overridden with RetryPolicy (Obelisk's defaults).
	DefaultMaxRetries   = 5
	DefaultRetryBackoff = 100 * time.Millisecond
	// DefaultComponentName names the component in Locked events.
	DefaultComponentName = "worker"
)

// MaxAppendItems is the largest append a worker sends: events plus created
// children (each child counts twice: its request event and its creation),
// the limit of the HTTP worker routes (wire.MaxAppendBatch).
const MaxAppendItems = 90

// maxLockBatch is the largest batch_size the HTTP lock routes accept (wire.MaxLockBatch).
const maxLockBatch = 25

// Options configure a Worker. The zero value is usable.
type Options struct {
	// Name is the component name recorded in Locked events and in the
	// executions this worker creates. Default DefaultComponentName.
	Name string
	// DeploymentID is recorded in Locked events and in created children.
	// Default: the deployment the worker records itself as when it starts
	// (see BuildID); set, the worker records no deployment.
	DeploymentID core.DeploymentId
	// BuildID identifies this worker's code: with the component type and
	// the functions of a lock group it makes the group's component digest,
	// recorded in the worker's deployment and its Locked events. Default:
	// derived from the binary (DefaultBuildID). See docs/worker.md
	// "Deployments and upgrades".
	BuildID string
	// Pinned makes the worker lock only the executions of its own
	// component digests (lock_pending_by_component_digest): the ones
	// created for this build (submitted while its deployment is current,
	// or created by its workflows) or upgraded to it. A worker of a new
	// build then takes the new executions and leaves the old ones to the
	// old build's workers until they are upgraded. Unpinned (the default)
	// it locks every pending execution of its functions, whatever its
	// digest, and moves it to its own (today's behaviour).
	Pinned bool
	// UpgradeCheckPoll is how often an unpinned worker locks by each of
	// its digests, to find the replay checks of upgrades to its code
	// (PUT /v1/executions/{id}/upgrade, `stela execution upgrade`): one
	// extra lock request per lock group per UpgradeCheckPoll under Run
	// (made between two long polls, so a check waits at most
	// UpgradeCheckPoll + PollWait: 15 s by default, within the server's
	// 20 s), one per lock group at the start of each RunUntilIdle. A pinned
	// worker's every lock is by digest, so it needs none. Default
	// DefaultUpgradeCheckPoll; negative: never (upgrades to this worker's
	// digests then answer "new component not found" unless a pinned
	// worker of the digest runs).
	UpgradeCheckPoll time.Duration
	// Concurrency bounds the executions running at once (activities and
	// workflows together; a workflow waiting for a response does not count,
	// nor a run whose code returned while its result is written).
	// Default DefaultConcurrency.
	Concurrency int
	// LockBatch bounds the executions locked by one request (at most 25).
	// Default DefaultLockBatch.
	LockBatch int
	// LockExpiry is the lease of a lock. A running function's lease is
	// extended (a Locked event by the same run) when half of it is left, so
	// it only bounds how long a crashed worker's executions stay locked.
	// Default DefaultLockExpiry.
	LockExpiry time.Duration
	// PollWait is how long one lock request waits for work (long poll).
	// Default DefaultPollWait.
	PollWait time.Duration
	// ShutdownGrace is how long running activities may finish after Run's
	// context is done; then their contexts are cancelled and unfinished
	// ones are released (Unlocked "executor closing"). Default DefaultShutdownGrace.
	ShutdownGrace time.Duration
	// MaxCachedWorkflows bounds the workflows kept in memory between runs
	// (suspended at a join, resumed without replay). Default DefaultMaxCachedWorkflows.
	MaxCachedWorkflows int
	// MaxCachedBytes bounds the estimated memory of the workflows kept in
	// memory: their history events and responses, about 300 bytes each
	// plus their parameters, values and results. Beyond it (or beyond
	// MaxCachedWorkflows) the least recently parked ones are dropped (they
	// are safe in the store: a later lock replays them).
	// Default DefaultMaxCachedBytes.
	MaxCachedBytes int64
	// CacheTTL drops a kept workflow once it was kept this long (another
	// worker may have taken its execution over), by a timer on Clock (a
	// TimerClock's timers, else the wall clock's). Default DefaultCacheTTL.
	CacheTTL time.Duration
	// AwaitWindow is how long, under Run, a workflow waiting for a response
	// stays subscribed in memory, keeping the execution (its JoinNext
	// carries the lease's expiry, so no other worker locks it before) and
	// continuing without a new lock when the response arrives, as Obelisk's
	// "await" strategy does. When the window ends first, or when the wait
	// is a sleep longer than it, the workflow gives the execution up (any
	// worker may lock it once the response arrives) and is kept suspended
	// in the cache. A waiting workflow does not count against Concurrency.
	// Default LockExpiry/2; negative disables waiting in memory.
	// RunUntilIdle never waits in memory.
	AwaitWindow time.Duration
	// MaxAwaiting bounds the workflows waiting in memory at once (each
	// holds a response subscription: a long poll over HTTP); beyond it
	// they give the execution up at once. Default DefaultMaxAwaiting.
	MaxAwaiting int
	// Clock tells the time of every event and runs the worker's timers
	// when it is a TimerClock (the cache's CacheTTL). Default: the wall
	// clock. workertest injects a simulated one.
	Clock core.Clock
	// Entropy supplies the random bits of the executor, run and submitted
	// execution ids; it need not be safe for concurrent use. Default crypto/rand.
	Entropy io.Reader
	// Logger receives failures and, at debug level, every outcome. Default slog.Default().
	Logger *slog.Logger
	// CancelCheck is how often a running activity's execution is checked
	// for a cancellation request (one state read each time, only while an
	// activity runs longer than it), so that its ctx is cancelled with
	// ErrCancelled within about CancelCheck of the request; negative
	// leaves it to the next lease extension (up to LockExpiry/2).
	// Default DefaultCancelCheck.
	CancelCheck time.Duration
	// NoEagerDispatch turns eager dispatch off: by default, when a workflow
	// creates children whose function this worker serves and slots are
	// free, the write that creates them also locks up to that many of them
	// to this worker, and they start at once, without a lock request or a
	// poll (see docs/worker.md "Eager dispatch"); likewise an execution
	// this running worker submits of a function it serves, with a slot
	// free, is created locked to it (eager start). Off, every child and
	// submission waits in the store for a worker's lock request.
	NoEagerDispatch bool
	// NoPrefetch turns prefetching off. On (the default), while a backlog
	// lasts (a lock request came back full) each lock request also asks
	// for as many executions again as it has free slots for, up to
	// Options.Concurrency locked executions waiting for a slot in all:
	// they start as slots free, with no lock round trip in between, and
	// one that waits half its lease is released for any worker to take.
	// Off, a worker locks only what its free slots can run at once (what
	// a fleet of workers with long activities may prefer, so that an idle
	// worker is never left without work another one holds).
	NoPrefetch bool
	// NoFireAndContinue turns fire-and-continue off. On (the default), a
	// sleep awaited in memory goes on at its expiry as if its delay had
	// fired, and the run's next write fires the delay in the same commit
	// (core.DelayFireAppender): one commit and round trip fewer per sleep.
	// A delay cancelled or paused meanwhile makes that write refuse the
	// events after the sleep; the execution is then given back and
	// replayed (see docs/worker.md "Fire-and-continue"). Off, the run
	// fires the delay and waits for that commit before it goes on.
	NoFireAndContinue bool
	// OnFinished, if set, is called once the Finished event of an execution
	// this worker ran is stored (e.g. for metrics). It must not block.
	// Decode turns result into the function's typed value or error.
	OnFinished func(id core.ExecutionId, result core.ReturnValue)
}

// Worker runs registered activities and workflows: it locks their pending
// executions, runs them and appends the outcome. Register functions with
// Activity and Workflow before calling Run (or RunUntilIdle). A Worker is
// safe for concurrent use; Run may be called once at a time.
type Worker struct {
	conn     Conn
	opts     Options
	clock    core.Clock
	log      *slog.Logger
	executor core.ExecutorId

	mu       sync.Mutex
	funcs    map[core.FunctionFqn]*function
	declared map[core.FunctionFqn]core.ComponentType
	// own is the component of each registered function and deployment the
	// worker recorded (set when it starts, see deploy.go); mu guards them.
	own        map[core.FunctionFqn]core.ComponentId
	deployment core.DeploymentId
	registered bool
	entropy    io.Reader
	// replayCheck is replayStored once a workflow is registered (the
	// upgrade check's replay).
	replayCheck func(*Worker, context.Context, core.ExecutionId) (int, *NondeterminismError, error)

	cache    *runCache
	types    storeTypes // what the store said about functions served elsewhere
	slots    *slots
	inflight atomic.Int64
	runs     [2]atomic.Int64 // runs started: activities, workflows
	// eager is the lock groups of eager dispatch while running (eager.go);
	// eagerRuns counts the runs started from eager locks.
	eager     atomic.Pointer[eagerGroups]
	eagerRuns atomic.Int64
	// startWaits counts the submissions created locked while no slot was
	// free (eager start waiting for a slot; at most Options.Concurrency).
	startWaits atomic.Int64
	// starting is closed once the Run or RunUntilIdle under way has begun
	// (its deployment recorded, eager dispatch set up) or failed to; a
	// Submit meanwhile waits for it (planEagerStart).
	starting atomic.Pointer[chan struct{}]
	// starts queues the eager starts of each lock group while its
	// create-locked requests in flight are at their bound (startbatch.go); startBatches
	// counts the requests that carried more than one.
	starts       startQueues
	startBatches atomic.Int64
	// delaysFired counts the awaited delays this worker fired itself
	// (fireOwnDelay).
	delaysFired atomic.Int64
	// inboxes maps the active workflow runs to their localInbox
	// (inbox.go); localResponses counts the responses they took from it.
	inboxes        sync.Map
	localResponses atomic.Int64
	// awaitOK is set under Run: workflows may wait for responses in memory.
	awaitOK  atomic.Bool
	awaiting atomic.Int64
	wg       sync.WaitGroup
	finished chan struct{} // signalled (non-blocking) whenever a run ends
	// onAwait, if set (tests), is called when a run starts waiting in memory.
	onAwait func(core.ExecutionId)

	// lifecycle guards running; stopping is cancelled when a run loop's
	// context is done (no new lock is requested, workflows waiting in
	// memory give their execution back at once); hardStop when its
	// shutdown grace ends: it cancels running activities and unwinds
	// running workflows.
	lifecycle sync.Mutex
	running   bool
	stopping  context.Context
	stopRun   context.CancelFunc
	hardStop  context.Context
	cancelRun context.CancelFunc
}

// function is a registered activity or workflow.
type function struct {
	ffqn  core.FunctionFqn
	kind  core.ComponentType
	retry core.ComponentRetryConfig
	// startToClose bounds one run of an activity (StartToClose); 0: none.
	startToClose time.Duration
	// cancellable: register the workflow under its name plus the
	// store's "-cancellable" suffix (Cancellable).
	cancellable bool
	activity    func(ctx context.Context, params core.Params) (core.ReturnValue, error)
	workflow    func(wf *Context, params core.Params) (core.ReturnValue, error)
	// param and result are P and R, for the deployment's metadata.
	param, result reflect.Type
}

// New returns a worker over conn.
func New(conn Conn, opts Options) *Worker {
	if opts.Name == "" {
		opts.Name = DefaultComponentName
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.LockBatch <= 0 || opts.LockBatch > maxLockBatch {
		opts.LockBatch = DefaultLockBatch
	}
	if opts.LockExpiry <= 0 {
		opts.LockExpiry = DefaultLockExpiry
	}
	if opts.PollWait <= 0 {
		opts.PollWait = DefaultPollWait
	}
	if opts.ShutdownGrace <= 0 {
		opts.ShutdownGrace = DefaultShutdownGrace
	}
	if opts.MaxCachedWorkflows <= 0 {
		opts.MaxCachedWorkflows = DefaultMaxCachedWorkflows
	}
	if opts.MaxCachedBytes <= 0 {
		opts.MaxCachedBytes = DefaultMaxCachedBytes
	}
	if opts.CacheTTL <= 0 {
		opts.CacheTTL = DefaultCacheTTL
	}
	if opts.AwaitWindow == 0 {
		opts.AwaitWindow = opts.LockExpiry / 2
	}
	if opts.MaxAwaiting <= 0 {
		opts.MaxAwaiting = DefaultMaxAwaiting
	}
	if opts.UpgradeCheckPoll == 0 {
		opts.UpgradeCheckPoll = DefaultUpgradeCheckPoll
	}
	if opts.CancelCheck == 0 {
		opts.CancelCheck = DefaultCancelCheck
	}
	if opts.Clock == nil {
		opts.Clock = wallClock{}
	}
	if opts.Entropy == nil {
		opts.Entropy = rand.Reader
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.BuildID == "" {
		opts.BuildID = DefaultBuildID()
	}
	w := &Worker{conn: conn, opts: opts, clock: opts.Clock, log: opts.Logger.With("component", opts.Name),
		funcs: map[core.FunctionFqn]*function{}, declared: map[core.FunctionFqn]core.ComponentType{},
		entropy: &lockedReader{r: opts.Entropy}, finished: make(chan struct{}, 1)}
	exr, err := core.NewExecutorId(uint64(w.clock.Now().UnixMilli()), w.entropy)
	if err != nil {
		panic(fmt.Sprintf("worker: executor id: %v", err))
	}
	w.executor = exr
	w.cache = newRunCache(opts.MaxCachedWorkflows, opts.MaxCachedBytes, opts.CacheTTL)
	w.cache.now = func() time.Time { return w.clock.Now().Time }
	if tc, ok := opts.Clock.(TimerClock); ok {
		w.cache.afterFunc = tc.AfterFunc
	}
	w.slots = newSlots(opts.Concurrency)
	return w
}

// lockedReader serializes reads of an entropy source.
type lockedReader struct {
	mu sync.Mutex
	r  io.Reader
}

func (l *lockedReader) Read(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Read(p)
}

type wallClock struct{}

func (wallClock) Now() core.Timestamp { return core.TS(time.Now()) }

// TimerClock is a Clock that also runs timers: when Options.Clock is one,
// the worker's timers (the cache's CacheTTL) run on it, so a simulated
// clock (workertest's) fires them when it is advanced. Otherwise they run
// on the wall clock.
type TimerClock interface {
	core.Clock
	// AfterFunc calls f once the clock reached d from now; stop cancels
	// it and reports whether it did so before f was called.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// ExecutorID returns the executor id recorded in this worker's locks.
func (w *Worker) ExecutorID() core.ExecutorId { return w.executor }

// FuncOption tunes one registered function.
type FuncOption func(*function)

// RetryPolicy sets an activity's retries: up to maxRetries failed runs are
// retried, the n-th after backoff × 2^(n-1) (Obelisk's exponential backoff).
// Workflows are retried forever and ignore it.
func RetryPolicy(maxRetries uint32, backoff time.Duration) FuncOption {
	return func(f *function) {
		if f.kind == core.ComponentTypeWorkflow {
			return
		}
		f.retry = core.ComponentRetryConfig{MaxRetries: &maxRetries, RetryExpBackoff: core.DurationOf(backoff)}
	}
}

// Activity registers fn as the activity ffqn ("namespace:package/interface.function").
// The execution's params array is decoded into P: a one-element array is
// that element, [] is P's zero value (see Args for the caller's side). The
// result is stored as {"ok": {"type": <WIT type of R>, "value": …}} (R = Unit
// stores {"ok": null}). A returned error is retried with the retry policy
// and finishes the execution with {"err": <message>} once retries are
// exhausted, or at once if marked with Permanent. A panic is retried like an
// error and, once retries are exhausted, finishes the execution with an
// execution failure carrying the panic's message. ctx is cancelled when the
// execution is cancelled (context.Cause is ErrCancelled), when its lease is
// lost, and on shutdown after the grace period. Registration panics on an
// invalid or duplicate ffqn.
func Activity[P, R any](w *Worker, ffqn string, fn func(ctx context.Context, params P) (R, error), opts ...FuncOption) {
	w.register(ffqn, &function{kind: core.ComponentTypeActivity, retry: defaultRetry(), activity: untyped(fn),
		param: reflect.TypeFor[P](), result: reflect.TypeFor[R]()}, opts)
}

// Workflow registers fn as the workflow ffqn. fn must be deterministic: it
// may only talk to the world through wf (calls, join sets, sleeps,
// schedules, persisted random values and time), because it is replayed from
// the execution's history whenever it resumes on a worker that did not keep
// it in memory. Params and result are mapped as for Activity; a returned
// error finishes the workflow with {"err": <message>} (workflows are not
// retried on errors); a panic finishes it with an execution failure.
func Workflow[P, R any](w *Worker, ffqn string, fn func(wf *Context, params P) (R, error), opts ...FuncOption) {
	w.mu.Lock()
	w.replayCheck = replayStored // here, so a worker of activities only links no replay
	w.mu.Unlock()
	w.register(ffqn, &function{kind: core.ComponentTypeWorkflow, retry: core.ComponentRetryConfig{}, workflow: untyped(fn),
		param: reflect.TypeFor[P](), result: reflect.TypeFor[R]()}, opts)
}

// untyped adapts a typed function to the params array and return value
// of an execution: params that do not decode and results that do not
// encode are fatal (no retry can fix them).
func untyped[C, P, R any](fn func(C, P) (R, error)) func(C, core.Params) (core.ReturnValue, error) {
	codec := newResultCodec(reflect.TypeFor[R]())
	return func(c C, params core.Params) (core.ReturnValue, error) {
		p, err := decodeParams[P](params)
		if err != nil {
			return core.ReturnValue{}, &fatalError{reason: "cannot decode params", err: err}
		}
		r, err := fn(c, p)
		if err != nil {
			return core.ReturnValue{}, err
		}
		rv, err := codec.ok(r)
		if err != nil {
			return core.ReturnValue{}, &fatalError{reason: "cannot encode result", err: err}
		}
		return rv, nil
	}
}

// Declare tells the worker the component type of a function served
// elsewhere, so that the executions it creates for that function (children,
// scheduled and submitted executions) get the right type without asking
// the store. A function neither registered nor declared gets the type of
// the component of the store's current deployment that exports it; when
// there is none, the call creating the execution fails with
// ErrUnknownFunction (the type is never guessed).
func (w *Worker) Declare(ffqn string, t core.ComponentType) {
	f, err := core.ParseFunctionFqn(ffqn)
	if err != nil {
		panic(fmt.Sprintf("worker: Declare(%q): %v", ffqn, err))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.declared[f] = t
}

// ComponentType reports the component type this worker knows for ffqn:
// the registered function's, else the declared one (Declare). It does not
// ask the store.
func (w *Worker) ComponentType(ffqn string) (core.ComponentType, bool) {
	f, err := core.ParseFunctionFqn(ffqn)
	if err != nil {
		return "", false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if fn, ok := w.funcs[f]; ok {
		return fn.kind, true
	}
	t, ok := w.declared[f]
	return t, ok
}

func defaultRetry() core.ComponentRetryConfig {
	n := uint32(DefaultMaxRetries)
	return core.ComponentRetryConfig{MaxRetries: &n, RetryExpBackoff: core.DurationOf(DefaultRetryBackoff)}
}

func (w *Worker) register(ffqn string, f *function, opts []FuncOption) {
	parsed, err := core.ParseFunctionFqn(ffqn)
	if err != nil {
		panic(fmt.Sprintf("worker: register %q: %v", ffqn, err))
	}
	f.ffqn = parsed
	for _, o := range opts {
		o(f)
	}
	if f.cancellable {
		parsed, err = cancellableName(parsed, f.kind)
		if err != nil {
			panic(fmt.Sprintf("worker: register %q: %v", ffqn, err))
		}
		f.ffqn = parsed
		ffqn = parsed.String()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, dup := w.funcs[parsed]; dup {
		panic(fmt.Sprintf("worker: %s registered twice", ffqn))
	}
	w.funcs[parsed] = f
}

// --- lock groups --------------------------------------------------------------------

// lockGroup is the functions one lock request covers: same component type
// and retry policy (both recorded in the Locked event).
type lockGroup struct {
	component core.ComponentId
	retry     core.ComponentRetryConfig
	// startToClose caps the lease of the group's locks (StartToClose).
	startToClose time.Duration
	ffqns        []core.FunctionFqn
}

// groups partitions the registered functions into lock groups.
func (w *Worker) groups() []*lockGroup {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []*lockGroup
	// Sorted by name as strings: a slices.SortFunc over FunctionFqn would
	// link a sort instantiation of its own (≈10 kB) into every worker.
	byName := make(map[string]core.FunctionFqn, len(w.funcs))
	names := make([]string, 0, len(w.funcs))
	for f := range w.funcs {
		byName[f.String()] = f
		names = append(names, f.String())
	}
	slices.Sort(names)
	for _, name := range names {
		ff := byName[name]
		f := w.funcs[ff]
		var g *lockGroup
		for _, c := range out {
			if c.component.ComponentType == f.kind && sameRetry(c.retry, f.retry) && c.startToClose == f.startToClose {
				g = c
				break
			}
		}
		if g == nil {
			g = &lockGroup{component: core.ComponentId{ComponentType: f.kind, Name: w.opts.Name}, retry: f.retry, startToClose: f.startToClose}
			out = append(out, g)
		}
		g.ffqns = append(g.ffqns, ff)
	}
	for _, g := range out {
		// The digest identifies the group's code: a hash of the build and
		// of what it serves.
		h := sha256.New()
		h.Write([]byte(w.opts.BuildID))
		h.Write([]byte{0})
		h.Write([]byte(g.component.ComponentType))
		if g.startToClose > 0 { // two groups differing only by it need two digests
			h.Write([]byte(g.startToClose.String()))
		}
		for _, f := range g.ffqns {
			h.Write([]byte{0})
			h.Write([]byte(f.String()))
		}
		copy(g.component.ComponentDigest.Digest[:], h.Sum(nil))
	}
	return out
}

func sameRetry(a, b core.ComponentRetryConfig) bool {
	if (a.MaxRetries == nil) != (b.MaxRetries == nil) {
		return false
	}
	if a.MaxRetries != nil && *a.MaxRetries != *b.MaxRetries {
		return false
	}
	return a.RetryExpBackoff == b.RetryExpBackoff
}

// request builds a lock request for n executions of g, stamped now: the
// locks leave the history out (activities never read it, workflows read
// only what they lack: ReadHistory).
func (w *Worker) request(g *lockGroup, n int) core.LockRequest {
	run, err := core.NewRunId(uint64(w.clock.Now().UnixMilli()), w.entropy)
	if err != nil {
		panic(fmt.Sprintf("worker: run id: %v", err))
	}
	now := w.clock.Now()
	return core.LockRequest{BatchSize: uint32(n), PendingAtOrSooner: now, CreatedAt: now,
		ComponentID: g.component, DeploymentID: w.deploymentID(), ExecutorID: w.executor, RunID: run,
		LockExpiresAt: now.Add(g.lease(w.opts.LockExpiry)), RetryConfig: g.retry, SkipHistory: true,
		ByComponentDigest: w.opts.Pinned}
}

// --- slots --------------------------------------------------------------------------

// slots is a counting semaphore of the concurrency limit (a buffered
// channel: a freed slot goes to one waiting run, first come first served),
// with reservations: a burst lock request in flight reserves the free slots
// it asks executions for, so that the requests in flight at once never ask
// for more executions than there are free slots. A reservation only counts
// when sizing a request (reserve): runs take free slots whatever is
// reserved (acquire), as a workflow resuming from a wait in memory must.
type slots struct {
	ch       chan struct{} // one token per free slot
	mu       sync.Mutex
	reserved int           // free slots promised to lock requests in flight
	waiters  int           // reserve calls waiting for changed
	changed  chan struct{} // closed (and replaced) when a slot frees or a reservation ends, if waited for
}

func newSlots(n int) *slots {
	s := &slots{ch: make(chan struct{}, n), changed: make(chan struct{})}
	for range n {
		s.ch <- struct{}{}
	}
	return s
}

// signal wakes the reserve calls waiting; mu is held.
func (s *slots) signal() {
	if s.waiters > 0 {
		close(s.changed)
		s.changed = make(chan struct{})
	}
}

// acquire takes between 1 and limit slots, waiting for the first.
func (s *slots) acquire(ctx context.Context, limit int) (int, error) {
	select {
	case <-s.ch:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	return 1 + s.tryAcquire(limit-1), nil
}

// reserve waits until at least atLeast() free slots (1 when atLeast is
// nil; re-evaluated whenever a slot frees or a reservation ends) are not
// reserved and returns how many are (at most limit); with hold it
// reserves them (unreserve or claim gives them back), else it only sizes a
// request by them, as a long poll does: it may wait for seconds, and
// holding its slots meanwhile would starve the other lock groups' requests.
func (s *slots) reserve(ctx context.Context, atLeast func() int, limit int, hold bool) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		want := 1 // evaluated under mu: a change of atLeast() is followed by a signal
		if atLeast != nil {
			want = max(1, min(atLeast(), limit))
		}
		if avail := len(s.ch) - s.reserved; avail >= want {
			n := min(avail, limit)
			if hold {
				s.reserved += n
			}
			return n, nil
		}
		ch := s.changed
		s.waiters++
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
		}
		s.mu.Lock()
		s.waiters--
		if err := ctx.Err(); err != nil {
			return 0, err
		}
	}
}

func (s *slots) unreserve(n int) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	s.reserved -= n
	s.signal()
	s.mu.Unlock()
}

// claim ends a reservation of n slots and takes up to k free slots for the
// executions its request locked, returning how many it took: the caller
// acquires the others (runs may have taken them meanwhile).
func (s *slots) claim(n, k int) int {
	got := s.tryAcquire(k)
	s.unreserve(n)
	return got
}

// available returns how many slots (at most limit) are free and not
// reserved, taking none.
func (s *slots) available(limit int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return max(0, min(len(s.ch)-s.reserved, limit))
}

// tryAcquire takes up to limit free slots without waiting.
func (s *slots) tryAcquire(limit int) int {
	n := 0
	for n < limit {
		select {
		case <-s.ch:
			n++
		default:
			return n
		}
	}
	return n
}

func (s *slots) release(n int) {
	for range n {
		s.ch <- struct{}{}
	}
	s.mu.Lock()
	s.signal()
	s.mu.Unlock()
}

// --- running ------------------------------------------------------------------------

// ErrRunning is returned when Run or RunUntilIdle is called while another is running.
var ErrRunning = errors.New("worker: already running")

// beginning records that a Run or RunUntilIdle is beginning and returns
// the function that tells it has (or failed to).
func (w *Worker) beginning() func() {
	ch := make(chan struct{})
	w.starting.Store(&ch)
	return func() { close(ch) }
}

// begin marks the worker running and returns the lock groups.
func (w *Worker) begin() ([]*lockGroup, error) {
	w.lifecycle.Lock()
	defer w.lifecycle.Unlock()
	if w.running {
		return nil, ErrRunning
	}
	gs := w.groups()
	if len(gs) == 0 {
		return nil, errors.New("worker: no function registered")
	}
	w.deploy(gs)
	w.running = true
	w.stopping, w.stopRun = context.WithCancel(context.Background())
	w.hardStop, w.cancelRun = context.WithCancel(context.Background())
	w.setEagerGroups(gs)
	return gs, nil
}

// stop begins a shutdown: no workflow starts waiting in memory any more,
// and the ones waiting give their execution back at once.
func (w *Worker) stop() {
	w.awaitOK.Store(false)
	w.stopRun()
}

func (w *Worker) end() {
	w.lifecycle.Lock()
	defer w.lifecycle.Unlock()
	w.running = false
	w.setEagerGroups(nil)
}

// share is how many slots one lock group may reserve for a request.
func (w *Worker) share(groups int) int {
	return max(1, min(w.opts.LockBatch, w.opts.Concurrency/groups))
}

// Run locks and runs executions of the registered functions until ctx is
// done, then shuts down gracefully: no new lock is requested; the lock
// requests in flight are let return (a long poll over HTTP, at most
// PollWait) and what they locked is released at once (Unlocked "executor
// closing"); workflows waiting for a response in memory release their
// execution at once; running activities get ShutdownGrace to finish (then
// their contexts are cancelled and the unfinished ones released); running
// workflows park at their next wait (or are released after the grace);
// workflows kept in memory are dropped (they are safe in the store). A
// lock the store granted is thus always run or released, never left to
// expire. It returns nil after a graceful shutdown.
func (w *Worker) Run(ctx context.Context) error {
	begun := w.beginning()
	groups, err := w.begin()
	begun()
	if err != nil {
		return err
	}
	defer w.end()
	share := w.share(len(groups))
	w.awaitOK.Store(w.opts.AwaitWindow > 0)
	defer context.AfterFunc(ctx, w.stop)()
	var loops sync.WaitGroup
	for _, g := range groups {
		loops.Go(func() { w.lockLoop(ctx, g, share) })
	}
	loops.Wait()
	w.stop()
	w.shutdown()
	return nil
}

// maxBurstLocks bounds the lock requests one lock group keeps in flight
// while a backlog lasts (see lockLoop).
const maxBurstLocks = 4

// lockState is what a lock group's requests share.
type lockState struct {
	burst    atomic.Bool  // the last answer was full: a backlog is likely
	inflight atomic.Int32 // burst requests in flight
}

// lockLoop locks executions of g while slots are free. It holds no slot
// while a request is in flight (a workflow resuming from a wait in memory,
// or a run of another group, may need one): it reserves free slots for the
// request's size, then takes one slot per execution it locked. Idle, it
// keeps one long poll in flight (at most share executions, PollWait).
// When a request comes back full — more is likely pending, as under a
// burst of submissions — it bursts: it asks again at once, without
// waiting (wait 0), for every free slot not reserved (at most LockBatch),
// and keeps up to maxBurstLocks such requests in flight; a request that
// comes back short ends the burst. A burst request is sent as soon as a
// slot is free when none is in flight, else once a share of slots is
// (smaller ones would multiply lock requests, each a commit and a round
// trip, for little gain), so that the lock rate follows the slots rather
// than one round trip at a time. Once ctx is done it asks for nothing
// more; the requests in flight are let return and what they locked is
// released.
func (w *Worker) lockLoop(ctx context.Context, g *lockGroup, share int) {
	st := &lockState{}
	var inflight sync.WaitGroup
	defer inflight.Wait()
	tokens := make(chan struct{}, maxBurstLocks)
	atLeast := func() int {
		if st.inflight.Load() == 0 {
			return 1
		}
		return share
	}
	backoff := 50 * time.Millisecond
	checked := time.Now() // the first lock is the usual one: checks wait UpgradeCheckPoll
	for ctx.Err() == nil {
		if st.burst.Load() {
			select {
			case tokens <- struct{}{}:
			case <-ctx.Done():
				return
			}
			n, err := w.slots.reserve(ctx, atLeast, w.opts.LockBatch, true)
			if err != nil {
				<-tokens
				return
			}
			// Prefetch: as many more as the request reserved slots
			// for, if places to wait for a slot are left.
			waits := 0
			if !w.opts.NoPrefetch {
				waits = w.takeWaits(min(n, w.opts.LockBatch-n))
			}
			st.inflight.Add(1)
			inflight.Go(func() {
				defer func() { <-tokens }()
				if err := w.lockOnce(ctx, g, n+waits, n, waits, 0, st, nil); err != nil {
					w.log.Warn("lock failed", "ffqns", len(g.ffqns), "err", err)
				}
			})
			continue
		}
		n, err := w.slots.reserve(ctx, nil, share, false)
		if err != nil {
			return
		}
		if err := w.lockOnce(ctx, g, n, 0, 0, w.opts.PollWait, st, &checked); err != nil {
			w.log.Warn("lock failed", "ffqns", len(g.ffqns), "err", err)
			sleepCtx(ctx, backoff)
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = 50 * time.Millisecond
	}
}

// lockOnce sends one lock request for n executions, of which reserved
// slots are reserved (see slots.reserve; a reserved request is a burst
// request, counted in st.inflight), waiting up to wait; it starts what it
// locked (releasing it instead once ctx is done) and records in st.burst
// whether the request came back full. With checked (the idle poll only,
// never the burst's concurrent requests) it first looks for upgrade checks
// of g's digest when they are due (lockUpgradeChecks).
func (w *Worker) lockOnce(ctx context.Context, g *lockGroup, n, reserved, waits int, wait time.Duration, st *lockState, checked *time.Time) error {
	var locked []core.LockedExecution
	var err error
	if checked != nil {
		locked = w.lockUpgradeChecks(ctx, g, n, checked)
	}
	if len(locked) == 0 {
		locked, err = w.conn.LockPending(ctx, w.request(g, n), g.ffqns, wait)
	}
	if reserved > 0 {
		st.inflight.Add(-1) // before the slots' signal below wakes a waiting burst
	}
	if ctx.Err() != nil {
		// Stopping: another worker takes these at once.
		w.slots.unreserve(reserved)
		w.giveWaits(waits)
		for _, le := range locked {
			w.release(le.ExecutionID, le.NextVersion, reasonExecutorClose)
		}
		return nil
	}
	if err != nil {
		st.burst.Store(false)
		w.slots.unreserve(reserved)
		w.giveWaits(waits)
		return err
	}
	st.burst.Store(len(locked) >= n)
	// The executions beyond the slots the request was sized by wait for
	// one (prefetched, at most waits of them).
	direct := min(len(locked), n-waits)
	prefetched := locked[direct:]
	w.giveWaits(waits - len(prefetched))
	got := w.slots.claim(reserved, direct)
	for i, le := range locked[:direct] {
		if i >= got {
			_, _ = w.slots.acquire(context.Background(), 1)
		}
		w.start(le)
	}
	lease := g.lease(w.opts.LockExpiry)
	for _, le := range prefetched {
		w.startWaiting(le, lease, true, false)
	}
	return nil
}

// RunUntilIdle runs passes over the registered functions until nothing is
// pending and nothing is running (workflows waiting for a response are
// kept in memory, ready to resume on a later pass), or until ctx is done,
// in which case it shuts down as Run does. It is the unit of work of a
// serverless invocation and of workertest.
func (w *Worker) RunUntilIdle(ctx context.Context) error {
	begun := w.beginning()
	groups, err := w.begin()
	begun()
	if err != nil {
		return err
	}
	defer w.end()
	share := w.share(len(groups))
	defer context.AfterFunc(ctx, w.stop)()
	defer w.stopAfterGrace(ctx)
	checked := make([]time.Time, len(groups))
	for ctx.Err() == nil {
		// Only a round that started with nothing running and locked
		// nothing proves that nothing is pending: a run ending during the
		// round (a child whose response unblocks its parent) may make
		// work pending after the round's lock for it, and then the
		// signal it leaves in finished must be waited for, not dropped.
		quiet := w.inflight.Load() == 0
		progress := false
		for i, g := range groups {
			// The request is sized by the free slots but does not hold
			// them, as Run's idle poll: a workflow creating children
			// meanwhile finds every free slot for its eager locks. What
			// it locked takes the slots free then and waits for the rest.
			n := w.slots.available(share)
			if n == 0 {
				break
			}
			locked := w.lockUpgradeChecks(ctx, g, n, &checked[i])
			var err error
			if len(locked) == 0 {
				locked, err = w.conn.LockPending(ctx, w.request(g, n), g.ffqns, 0)
			}
			if err != nil {
				if ctx.Err() != nil {
					break
				}
				w.waitAll()
				return fmt.Errorf("worker: lock: %w", err)
			}
			got := w.slots.tryAcquire(len(locked))
			for j, le := range locked {
				if j >= got {
					_, _ = w.slots.acquire(context.Background(), 1)
				}
				w.start(le)
			}
			progress = progress || len(locked) > 0
		}
		if progress {
			continue
		}
		if quiet {
			return nil
		}
		select {
		case <-w.finished:
		case <-ctx.Done():
		}
	}
	return nil
}

// stopAfterGrace ends a RunUntilIdle: if ctx is done, running work gets the
// grace period; either way every run has ended when it returns. Kept
// workflows stay cached unless ctx is done.
func (w *Worker) stopAfterGrace(ctx context.Context) {
	if ctx.Err() != nil {
		w.shutdown()
		return
	}
	w.waitAll()
}

// shutdown waits ShutdownGrace for running executions, then cancels them
// (they release their locks), waits for them and drops the cache.
func (w *Worker) shutdown() {
	done := make(chan struct{})
	go func() { w.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(w.opts.ShutdownGrace):
		w.cancelRun()
		<-done
	}
	w.stopRun()
	w.cancelRun()
	w.cache.dropAll()
}

func (w *Worker) waitAll() { w.wg.Wait() }

// slot is the concurrency slot of one run: released once when the run
// ends, or earlier while a workflow waits in memory (and taken again).
type slot struct {
	s    *slots
	held bool
}

func (t *slot) release() {
	if t.held {
		t.held = false
		t.s.release(1)
	}
}

func (t *slot) reacquire() {
	if !t.held {
		_, _ = t.s.acquire(context.Background(), 1)
		t.held = true
	}
}

// start runs one locked execution on its own goroutine; its slot is
// already taken and is released when it ends.
func (w *Worker) start(le core.LockedExecution) {
	w.mu.Lock()
	f := w.funcs[le.FFQN]
	w.mu.Unlock()
	check := f == nil && core.IsUpgradeCheck(le.FFQN)
	w.inflight.Add(1)
	w.wg.Add(1)
	sl := &slot{s: w.slots, held: true}
	w.adopt(le)
	go func() {
		defer func() {
			w.disown(le.Parent, le.ExecutionID)
			sl.release()
			w.inflight.Add(-1)
			w.wg.Done()
			select {
			case w.finished <- struct{}{}:
			default:
			}
		}()
		switch {
		case check:
			w.runUpgradeCheck(le)
		case f == nil:
			w.release(le.ExecutionID, le.NextVersion, "function not registered")
		case !w.checkType(le, f):
		case f.kind == core.ComponentTypeWorkflow:
			w.runs[1].Add(1)
			w.runWorkflow(le, f, sl)
		default:
			w.runs[0].Add(1)
			w.runActivity(le, f, sl)
		}
	}()
}

// ioContext bounds one store call made on behalf of a run: it survives
// Run's context (so that results and releases are still written during
// shutdown) but not a hard stop after the grace period for the slow ones.
func (w *Worker) ioContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), w.opts.LockExpiry)
}

// release appends Unlocked at version so that any worker may lock the
// execution again at once; Unlocked rejected by the state counts as done.
func (w *Worker) release(id core.ExecutionId, version core.Version, reason string) {
	ctx, cancel := w.ioContext()
	defer cancel()
	now := w.clock.Now()
	_, err := w.conn.Append(ctx, id, version, core.AppendRequest{CreatedAt: now,
		Event: &core.Unlocked{UnlockedAt: now, Reason: reason}})
	if err != nil && !errors.Is(err, core.ErrUnlockedCannotBeAppended) {
		w.log.Debug("release failed", "execution_id", id.String(), "err", err)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// fatalError is a failure no retry can fix (params that do not decode, a
// result that does not encode): the execution finishes with an execution
// failure of kind uncategorized.
type fatalError struct {
	reason string
	err    error
}

func (e *fatalError) Error() string { return e.reason + ": " + e.err.Error() }
func (e *fatalError) Unwrap() error { return e.err }

// Close unwinds the workflows kept in memory between runs (they stay safe
// in the store). Call it when a worker that ran RunUntilIdle is discarded.
func (w *Worker) Close() { w.cache.dropAll() }

// Stats counts what a worker did since it was created.
type Stats struct {
	// Activities and Workflows count the runs started (a workflow resumed
	// after a wait counts again).
	Activities int64 `json:"activities"`
	Workflows  int64 `json:"workflows"`
	// Eager counts the runs started from eager locks (children and
	// submissions locked to this worker by the write that created them,
	// see NoEagerDispatch).
	Eager int64 `json:"eager"`
	// DelaysFired counts the sleeps awaited in memory whose delay this
	// worker fired itself at the expiry (core.DelayFirer) rather than the
	// store's timers sweep.
	DelaysFired int64 `json:"delays_fired"`
	// ResponsesInMemory counts the responses a workflow run was handed in
	// memory by this worker (a child it ran, a delay it fired) instead of
	// reading them from the store (docs/worker.md "Responses in memory").
	ResponsesInMemory int64 `json:"responses_in_memory"`
	// StartBatches counts the create-locked requests that carried several
	// submissions (eager starts queued while the requests of their lock
	// group in flight were at their bound, 4).
	StartBatches int64 `json:"start_batches"`
	// Cached is the number of suspended workflows kept in memory, and
	// CachedBytes their estimated memory (see Options.MaxCachedBytes).
	Cached      int   `json:"cached"`
	CachedBytes int64 `json:"cached_bytes"`
}

// Stats returns the worker's counters.
func (w *Worker) Stats() Stats {
	return Stats{Activities: w.runs[0].Load(), Workflows: w.runs[1].Load(), Eager: w.eagerRuns.Load(),
		DelaysFired: w.delaysFired.Load(), ResponsesInMemory: w.localResponses.Load(), StartBatches: w.startBatches.Load(),
		Cached: w.cache.len(), CachedBytes: w.cache.size()}
}
