// Package dynamo implements store.Backend (the storage port of package store)
// on one DynamoDB table through aws-sdk-go-v2. The service layer
// (store.Service) makes every decision; this package reads strongly
// consistently, buffers writes and commits each Update atomically.
//
// # Table
//
// One table, string keys pk (partition) and sk (sort), on-demand billing.
// Schema (exported as Schema, created by CreateTable and by infra/):
//
//	index           kind  partition key  sort key  projection   present on
//	(table)         -     pk             sk        -            every item
//	ordinals        LSI   pk             l1        ALL          responses
//	pending-ffqn    GSI   pf             ps        INCLUDE [ic] heads: pending_at ∧ active
//	pending-digest  GSI   pd             ps        KEYS_ONLY    heads: pending_at ∧ active
//	timers          GSI   tp             ts        KEYS_ONLY    heads: locked, unleased; lock
//	                                                            leases; timer rows: unpaused
//	cancelling      GSI   cp             cs        KEYS_ONLY    heads: lifecycle = cancelling
//	list            GSI   lp             ls        KEYS_ONLY    every head
//	list-id         GSI   lp             pk        KEYS_ONLY    every head
//	retention       GSI   rp             rs        KEYS_ONLY    top-level heads: finished
//	                                                            (retention not forever, see
//	                                                            Retention)
//
// The table's time-to-live is on attribute ttl (CreateTable and infra/
// enable it): see Retention.
//
// Every GSI but the two list indexes is sparse: its key attributes are
// written only while the item belongs to the index, so a finished activity
// costs no index storage except its two list entries. list-id has no key
// attribute of its own (lp and the head's pk), so adding it to an existing
// table (a stack update) backfills it from the heads already there; until
// DynamoDB reports it ACTIVE, execution-id pages of list_executions fail. Index keys whose natural partition would be hot are
// sharded: "<value>#<s>" with s = fnv32a(execution id) mod Options.Shards
// (default 8); queries read all shards in parallel and merge by sort key.
// Timestamps inside index keys use core's sortable form
// (core.Timestamp.SortableText, "2006-01-02T15:04:05.000000000Z") so they
// sort as strings; other stored timestamps use the shorter AutoSi form of
// JSON (core.Timestamp.String; items written before carry RFC 3339 with
// trimmed digits, which core.ParseTimestamp reads too).
//
// # Items
//
// Head — pk "E#<execution id>", sk "H". The execution state (docs/spec/semantics.md §3.1) in
// short attributes: f ffqn, ca created_at, fs first_scheduled_at, ct component
// type, cd digest, dp deployment, ic incompatible digest, v version, s state,
// lc lifecycle, at pending/lock/finished time, le/lr last lock holder, lv last
// lock version, mr/rb retry config, js/jc join set and closing, rk result kind
// JSON, ie intermittent count, mc max response cursor. Plus:
//
//	rv  revision, +1 on every commit that writes the head (the optimistic guard)
//	rq  request id of the last commit that wrote it; cq of the one that created it
//	z   the events kept in the head (binary, see below): the Created event
//	    (version 0) when its JSON is at most 2×HeadBudget, and the inline
//	    events ib..v
//	ib  first inline version (events below it, except an inline Created, are in pages)
//	ob  request id of a pending fan-out outbox (see Fan-out)
//	nc  the number of derived executions created by its own commits (on
//	    heads created since retention exists; see Retention)
//	ttl the tree's expiry, epoch seconds, once the tree is marked (Retention)
//	fi  the execution has requested a child (its children may defer responses, see Fan-in)
//	el  on a child: its response is applied to its parent's head directly (a fence, see Fan-in)
//	pr  on a finished child: the created_at of the response its Finished defers (see Fan-in)
//	pq  with pr: the sequence number of that response's registration (its order)
//	lk  on a locked head: the lock lease that indexes its lock expiry (no tp/ts
//	    of its own then; see Lock leases)
//	pf/pd/ps, tp/ts, cp/cs, lp/ls, rp/rs  index keys:
//	    pf = "<ffqn>#<s>", pd = "<digest>#<s>", ps = "<at>#<created_at>#<id>"
//	    tp = "L#<s>", ts = "<lock expiry>" (locked heads without lk)
//	    cp = "C#<s>", cs = "<created_at>#<id>"
//	    lp = "LT#<s>" (top-level) or "LD#<s>" (derived), ls = "<created_at>#<id>"
//	    rp = "RT#<s>", rs = "<finish time>#<id>" (set when it finished; rp on
//	    top-level heads only; rf keeps the finish time once a pass moved rs
//	    forward, see Retention)
//
// New events are appended to z, so a typical step (create, lock, finish, a
// history event) rewrites a single item with one conditional PutItem. When a
// head would exceed HeadBudget (default 1 KiB, one write unit) its inline
// events move, in the same commit, to event pages; a finished head is left
// alone up to 16 KiB (it is rarely written again).
//
// z is a format byte (1) followed by a DEFLATE stream primed with a fixed
// dictionary of the common event skeletons (zblob.go), holding one JSON
// record per event: {"v":version,"q":request id,"j":join set,"o":ordinal,
// "e":event JSON} ("r":"@sha256:…" instead of "e" for an offloaded event;
// j/o only on JoinNext). An activity's Created + Locked + Finished shrink
// from ~1.3 KB to ~0.3 KB, so its head stays under 1 KB for its whole life.
//
// Event page — pk "E#<id>", sk "V#<last version, 10 digits>": lo (first
// version) and z (same format as the head's). Pages hold consecutive events
// up to 64 KiB of payload, never overlap and are never rewritten. A Created
// event too large for the head is the page "V#0000000000".
//
// JoinNext counter — pk "E#<id>", sk "J#<join set>": n = the ordinal of the
// last JoinNext of that join set that moved to a page. Written (unconditional
// put, guarded by the head revision) only by commits that move JoinNexts.
//
// Response — pk "E#<recipient>", sk "R#<cursor, 10 digits>": e the
// JoinSetResponseEventOuter JSON, l1 = "R#<join set>#<ordinal, 10 digits>"
// (its rank within the join set, for the ordinals LSI), rq.
//
// Response guard — pk "G#C#<child id>" or "G#D#<delay id>", sk "G": to
// (recipient), c (cursor), ok (delay outcome), rq. Created with
// attribute_not_exists: a child id or delay id has at most one response across
// all executions.
//
// Timer row — pk "E#<owner>", sk "D#<join set>#<delay id>": x expires_at,
// p paused, rq, and while unpaused tp = "D#<s>", ts = expiry.
//
// Lock lease — pk "K#<lease id>", sk "K": m the ids of the executions it
// may cover (space-separated), c once its lock call returned (m is then
// what it locked), tp = "L#<s>" (s of the lease id), ts = the lock expiry of
// every lock taken under it. See Lock leases.
//
// Inbox — pk "E#<parent>", sk "S": ks (string set) the keys of children
// whose response registered and is not known applied, o#<js> the number of
// registrations of join set js, n of all registrations, c#<js> the key that
// claimed js since the parent last blocked on it, wj the join set it last
// blocked on. A child's
// key is its id relative to the parent, "<join set>_<index>". See Fan-in.
//
// Outbox — pk "E#<parent>", sk "O#<request id>": e the deferred child items
// (JSON, or a CAS reference above 300 KiB). See Fan-out.
//
// Backtrace — pk "E#<id>", sk "B#<min, 10 digits>#<max, 10 digits>": ci
// component id JSON, bt backtrace JSON. Insert-if-absent.
//
// Log — pk "LG#<top-level id>", sk "<cursor, 19 digits>": x execution id, r
// run id, t created_at, lv/m (log) or st/pl (stream). Log counter — pk
// "SEQ#LOG", sk "C", n: the last allocated cursor.
//
// Retention cursor — pk "SEQ#RETENTION", sk "C", c: the retention index key
// up to which every entry was handled (see Retention).
//
// Every item of an execution tree gets the tree's ttl once the tree is
// finished (see Retention).
//
// Payloads (event, response and backtrace JSON) larger than InlineThreshold
// (default 64 KiB) are written to the CAS first and stored as
// "@sha256:<hex>"; reads resolve them transparently. Their blob reference
// is owned by the execution's tree (REF#<digest>/P#<root id>, see
// Deployments, "Garbage collection").
//
// # Access patterns (docs/spec/semantics.md §7)
//
//	head by id                        GetItem E#id/H, ConsistentRead
//	event by version / range          head (c0, ev) + Query V# pages from V#<from>, consistent
//	last event, next version          head (v)
//	responses by cursor range         Query E#id, sk BETWEEN R#from AND R#to, consistent
//	                                  (bounded by the head's mc: a view never sees
//	                                  responses newer than its head)
//	n-th response of a join set       Query LSI ordinals l1 = "R#<js>#<n>", consistent
//	                                  (projection ALL: no fetch from the table)
//	JoinNext count of a join set      newest inline JoinNext of js, else GetItem J#<js>
//	response count of a join set      Query LSI ordinals begins_with "R#<js>#", desc, Limit 1
//	delay outcome by delay id         GetItem G#D#<delay>/G, consistent
//	timer row                         GetItem E#owner/D#js#delay, consistent
//	pending by ffqn (lock, wait)      Query pending-ffqn pf = ffqn#s, ps < "<at>$", all shards,
//	                                  merged by ps; auto-upgrade filter on ic
//	pending by digest                 Query pending-digest pd = digest#s, likewise
//	expired locks                     Query timers tp = L#s, ts <= at; BatchGetItem heads
//	                                  (entries of heads) and leases with their members'
//	                                  heads (entries of leases, consistent; Lock leases)
//	expired delays                    Query timers tp = D#s, ts <= at (keys only)
//	cancelling by created_at          Query cancelling cp = C#s, merged by cs
//	list_executions by created_at     Query list lp = LT#s (+ LD#s with show_derived),
//	                                  merged by ls = "<created_at>#<id>" (the order
//	                                  (created_at, execution_id) of core/listing.go); the
//	                                  cursor is a key condition on ls: a bare instant T
//	                                  bounds ls at "<T>" or "<T>$", the tie-broken
//	                                  position (T, id) at "<T>#<id>"
//	list_executions by execution id   Query list-id lp = LT#s (+ LD#s), merged by pk =
//	                                  "E#<id>", cursor a key condition on pk
//	                                  (both: heads by BatchGetItem, filters applied after,
//	                                  paging on until the page is full; newest first)
//	logs of an execution (+prefix)    Query LG#<top>, sk range by cursor, filter after
//	backtraces                        Query E#id begins_with/BETWEEN B#
//	retention candidates              Query retention rp = RT#s, rs BETWEEN cursor and
//	                                  "<now - RetentionLag>#~", all shards, merged by rs
//	a tree's derived executions       Query list-id lp = LD#s, begins_with(pk, "E#<root>."),
//	                                  all shards; heads by BatchGetItem, consistent
//
// No Scan is used anywhere. Index reads are eventually consistent; the
// service re-reads every candidate inside Update before acting on it, and a
// lock or timer action is a conditional write on the base head item, so a
// stale index entry is skipped, never granted.
//
// # Update: optimistic transactions
//
// Update(fn) runs fn against a fresh transaction. Reads are strongly
// consistent and cached; reading anything of an execution (events,
// responses, ordinals, timer rows) reads its head first, recording its rv.
// Writes are buffered. On return the buffer becomes one commit:
//
//   - every head fn wrote (PutHead, or any item of its execution changed) is a
//     Put of the whole head with rv+1, condition rv = :read (CreateHead:
//     attribute_not_exists(pk));
//   - every head fn read but did not write is a ConditionCheck rv = :read
//     (attribute_not_exists(pk) if it was absent);
//   - event pages, responses, response guards, new timer rows and the outbox
//     are Puts with attribute_not_exists(pk); changed timer rows are Puts,
//     removed ones Deletes; JoinNext counters are Puts;
//   - a response guard read as absent but not written is a ConditionCheck
//     attribute_not_exists(pk).
//
// A commit of one item is a conditional PutItem; anything else is one
// TransactWriteItems. A failed condition on a head (or on a page/response,
// which implies one) means a concurrent commit: fn runs again after a
// jittered backoff (at most Options.MaxAttempts times). A failed condition
// on a response guard, a new timer row or a created head is a uniqueness
// violation: Update returns an error wrapping core.ErrConflict and does not
// retry. Cancellations for TransactionConflict or throttling re-run fn (see
// TransactionConflict).
//
// Because every item of an execution changes only together with its head
// (the backend writes the head whenever one of its items changes), guarding
// heads serialises every pair of transactions touching a common execution.
// The one exception is a child's deferred response, which reaches its
// parent without its head; Fan-in below closes the JoinNext ↔ response
// race (docs/spec/semantics.md §8.3) for it with the parent's inbox.
//
// # The atomic units of docs/spec/semantics.md §7.3
//
//	create                     Put head (c0, inline Paused) attribute_not_exists —
//	                           a single PutItem; plus a V#0 page if Created is large
//	append / append_batch      Put head rv = :r (+ pages if it spills) + Put timer rows
//	                           attribute_not_exists (DelayRequest)
//	lock                       Put head rv = :r (Locked inline) — a single PutItem;
//	                           a lock call of ≥ 3 candidates puts its lease before
//	                           and closes it after (Lock leases)
//	append_batch_create_new_   Put parent head rv = :r + Put each child head
//	  execution                attribute_not_exists (+ outbox beyond the limits)
//	append_batch_respond_to_   deferred (Fan-in): UpdateItem parent inbox (register),
//	  parent                   then Put child head rv = :r with pr — a single PutItem;
//	                           applied (elected, fenced, no fan-in): Put child head
//	                           rv = :r + Put parent head rv = :r + Put response
//	                           attribute_not_exists + Put guard G#C#child
//	                           attribute_not_exists
//	applying deferred          Put parent head rv = :r + per response: Put response +
//	  responses (drain)        Put guard G#C#child, attribute_not_exists; then
//	                           UpdateItem inbox DELETE ks (the keys applied)
//	a JoinNext that blocks     Put head rv = :r + Update inbox SET wj REMOVE c#js,
//	  (with fan-in)            condition o#js as read + Put head el of each child of js
//	                           registered and unfinished, rv = :read
//	append_delay_response,     Put head rv = :r + Put response + Put guard G#D#delay
//	  cancel_delay             attribute_not_exists + Delete timer row
//	append_batch_with_delay_   Put head rv = :r + Put response + Put guard; the timer
//	  response                 row is created and removed in the commit (net: none;
//	                           its prior absence is read under the head's guard)
//	upsert_stub_response       as respond_to_parent
//	pause_execution (locked)   Put head rv = :r (Unlocked + Paused inline)
//	pause_delay/unpause_delay  Put timer row + Put head rv = :r
//
// # Ambiguous outcomes
//
// Every commit carries a random request id (rq) written on every item it
// creates and on the heads it writes (and q on each event it appends).
// TransactWriteItems carries ClientRequestToken = a digest of the request id
// and the write set's keys, so the SDK retryer (explicitly configured:
// Options.SDKMaxAttempts attempts, 25 ms base, 1 s cap, no retry quota) and
// this package's own re-sends are idempotent for 10 minutes. A commit whose
// outcome is unknown (timeout, network error, 5xx, TransactionInProgress) is
// re-sent unchanged; if a re-send then fails a condition, the item returned
// with ReturnValuesOnConditionCheckFailure=ALL_OLD (or a consistent read of
// an item the commit created) tells whether it carries our request id: then
// the earlier attempt committed and Update reports success. A single-item
// PutItem retried by the SDK after an unseen success is recognised the same
// way. fn is never re-run while an outcome is unknown.
//
// # TransactionConflict
//
// DynamoDB refuses a single-item write (PutItem, UpdateItem, DeleteItem)
// of an item an ongoing transaction includes with
// TransactionConflictException, and cancels a TransactWriteItems that
// includes an item another request is writing (reason TransactionConflict
// at that action); either changes nothing. The SDK's standard retryer
// re-sends neither by default, so the backend's retryer adds the
// exception's code: a refused single-item write is re-sent with the same
// jittered backoff as throttling (Options.SDKMaxAttempts). Every write
// path, and what a conflict costs it (TestConflictModel… in
// conflict_test.go model the meetings; DynamoDB Local never raises them):
//
//	write                                  meets a transaction on       on conflict
//	commit, one item (PutItem, rv guard)   a head                       re-sent; then fn re-runs (classify)
//	commit, TransactWriteItems             any of its items             cancelled: fn re-runs after backoff
//	registration (UpdateItem of the inbox) the blocking JoinNext's      re-sent; then fn re-runs (store.Again)
//	drain clean-up (inbox DELETE ks)       the blocking JoinNext's      re-sent; then logged: the keys stay,
//	                                                                    the next drain classifies them again
//	outbox: children (PutItem)             a commit checking a child    re-sent; then logged, and the next
//	outbox: the parent's ob (UpdateItem)   the parent's head            reader of the parent or a child
//	outbox: delete                         (none: its own commit only)  completes the fan-out
//	retention: heads, rearm (UpdateItem)   a head                       re-sent; then the pass stops there,
//	retention: ttl of the other items      responses, guards, timers    the cursor stays, the next pass
//	                                                                    repeats (marking is idempotent)
//	retention cursor, lock leases, log     (none)                       -
//	counter and rows, backtraces, blob
//	references
//
// Re-sending is safe: a refused write changed nothing, and these writes
// are idempotent anyway (conditional on what they replace, a set DELETE,
// SET of a fixed value, insert-if-absent recognising its own request id).
// Before the retryer re-sent them, the first refusal ended each: the drain
// left its applied keys in the inbox, the outbox completion was left to a
// later reader although Update had returned (and that reader's Update
// failed on the same refusal), and a retention pass failed until the next
// minute (TestConflictModelSingleWritesOutsideCommitsAreRetried: two
// refusals each, every write lands). A registration's refusal, which
// re-ran the child's whole fn, is now a re-send: in
// TestConflictModelFanInKeepsTheInvariants (one run each, the figures vary
// with the interleaving) fn re-runs went from 5 to 2 for 40 child
// finishes.
//
// # Fan-out beyond the transaction limits
//
// TransactWriteItems takes 100 actions and 4 MB. When a commit is larger,
// creations of new executions (children of append_batch_create_new_execution)
// are moved, last first, into an outbox item written in the same transaction
// beside the first updated head (the parent), which also gets ob = request
// id. Before committing, the deferred ids are checked absent with a strongly
// consistent BatchGetItem (an existing one fails the whole commit with
// core.ErrConflict). After the commit the children are created right away
// (PutItem attribute_not_exists each; an existing child created by this same
// commit, cq = rq, is fine), then ob is removed from the parent (rv+1) and
// the outbox deleted, before Update returns.
//
// Guarantee: when Update returns, the fan-out is complete. If the process
// dies in between, any later read of the parent's head (every Update or View
// touching the parent) or of a missing derived child (whose parent is
// derived from its id) completes the outbox first, so no reader observes the
// parent's events without its children. Not covered: list/pending index
// queries may miss the children until then (they are eventually consistent
// anyway), and a top-level execution scheduled in such an oversized batch is
// only found through its scheduler. A foreign create of a deferred id in the
// window between the pre-check and the materialisation is logged, not
// prevented (derived ids can only be created by their parent's commits).
//
// # Retention (retention.go)
//
// A tree — a top-level execution (its root) and every execution derived
// from it — expires store.Options.Retention after the last of its
// executions finished (core.DecideRetention; the finish times are the
// service's clock at each finishing commit). Expiry uses the table's
// time-to-live: every item of a finished tree gets ttl = its expiry (epoch
// seconds, rounded up) — heads, event pages, JoinNext counters, responses
// and their guards (G#C#…, G#D#…), timer rows, outboxes, backtraces, the
// log partition LG#<root>, and the blob references REF#<digest>/P#<root>
// of its offloaded payloads — and DynamoDB deletes them, with their index
// entries, without charge some time after (typically within two days).
// Readers do not wait for that: a head, log row, backtrace or blob
// reference whose ttl has passed is treated as absent (GetItem of a head,
// the heads of every listing, ListLogs, backtraces, gc's reference check),
// as AWS recommends. So from the expiry on the tree answers
// core.ErrNotFound (HTTP 404), lists no longer show it, and
// gc_orphan_files may collect the blobs only it used. Until DynamoDB
// deleted the items, the per-deployment counts (Select=COUNT on a
// KEYS_ONLY index) still count them, and a create of an expired id fails
// as a conflict. DynamoDB Local keeps expired items forever; the tests
// check the ttl of every item and then delete the expired ones themselves,
// as the time-to-live would (retention_test.go).
//
// When the ttl is written:
//
//   - In the finishing commit itself, for a tree of one: a top-level
//     execution that never created a derived one (nc = 0; every activity)
//     gets its ttl with its Finished event, at no extra write.
//   - Otherwise by the retention pass (store.Service.ApplyRetention, run
//     by the timers loop every minute). Its trigger is the retention index:
//     the commit that finishes any execution writes rs = "<finish
//     time>#<id>" on its head (RecordFinished) — an index entry on a
//     top-level head only (rp): a tree is decided from its root, so a
//     derived execution's finish costs no index write — and the pass reads
//     the entries after its cursor and at least Options.RetentionLag (15
//     minutes) old — older than any commit planned before can land, and
//     than index propagation — in rs order. For each it reads the tree of
//     the entry's root and lets core decide: unfinished root → nothing (the
//     root's own finish writes its entry later); finished root, tree still
//     live → nothing, and the pass moves the root's entry to now (rearm:
//     UpdateItem SET rs, rf = the finish time, rv+1, conditional on both as
//     read), so the tree is decided again one lag later — repeated until
//     the derived executions finished (storetest R03); finished → mark; finished but not
//     provably complete (below) → stop there and retry on the next pass
//     (for at most an hour, then it is logged and left alone). The cursor
//     (one item, moved only forward, conditionally) then records the
//     position up to which every entry was handled; a pass that dies
//     leaves it where it was, so the next one repairs what it missed. The
//     entries are never removed (that would rewrite every head); they go
//     with their heads.
//
// Reading a tree: its root's head (strongly consistent), then — unless the
// root is unfinished or counted no child — the derived executions the
// list-id index knows (begins_with(pk, "E#<root>.")) and their heads
// (BatchGetItem, consistent). The index lags, so completeness is proved
// with nc: the commit that creates a child increments its parent's nc
// atomically with the creation (the parent's head is in that commit); a
// tree is complete when every member has at least nc children among the
// members read. Finished executions create no children, so a tree read
// complete and finished stays so. (Heads written before nc existed count
// as nc = 0; a derived execution created directly, not by its parent's
// commit, is not counted.)
//
// Marking (ExpireTree): per execution, the head first — UpdateItem SET
// ttl, rv = rv+1, condition s = finished; the revision moves so that a
// commit that read the head unmarked fails its condition and runs again —
// then a strongly consistent Query of its partition and an UpdateItem SET
// ttl (condition attribute_exists) on every item lacking the value, plus
// the guards of its responses (found from the responses' payloads); the
// descendants first, the root last, then the log partition, then the blob
// references of every offloaded payload met. Items already carrying the
// value are skipped, so a pass repeated after a crash writes only what is
// missing. What is written into a marked tree afterwards is marked by its
// writer: a commit stamps every item it puts into a marked execution's
// partition (and the guards it creates) with the head's ttl (a delay
// firing or cancelled after the finish), and a payload reference is
// written with it; log rows and backtraces are written outside commits, so
// their writer reads the head (the root's, for logs) after writing and
// marks them if it finds a ttl — either it sees the mark, or its write
// preceded the marker's read of the partition, which then saw it. A log or
// backtrace written after DynamoDB deleted its execution's items is kept
// (there is no head left to tell).
//
// Retention forever writes nothing (no rs, no ttl). Executions finished
// before retention existed have no rs and are never expired. What it costs
// is measured in Cost.
//
// # Lock leases (lease.go)
//
// A locked execution must be found by the sweep once its lock expires
// (store.Sweep, ExpiredLocks). A head carrying its own timers-index entry
// (tp/ts) while locked pays that entry in (1 WRU) when locked and out (1)
// when it leaves Locked, and a lock call locks up to a batch of executions
// with one expiry. So a lock call (store.Service.lockCandidates, the
// store.LockLeaser capability) indexes that expiry once for its chunk of
// candidates, in a lease item:
//
//  1. Open — before locking any, one PutItem of K#<random id> with m = the
//     candidates it will try (as many as it has slots left, at least 3:
//     below that a lease costs more than it saves; and, after a lease that
//     locked fewer than 3 — contended lockers —, only one chunk in 8 until
//     a lease pays again) and the timers entry ts = the request's lock
//     expiry.
//  2. Lock — each candidate's lock Update runs under the lease
//     (store.WithLockLease); a commit that appends a Locked event whose
//     expiry is the lease's to a member writes lk = the lease id on the
//     head and no tp/ts (lockExpiryAttrs in head.go). The head, its state's
//     At and its Locked event still carry that execution's own
//     lock_expires_at, exactly as before.
//  3. Close — once every lock Update of the chunk returned, one UpdateItem
//     SET c, m = the ones it locked (condition attribute_exists), or a
//     DeleteItem when it locked none. An Update that returned an error may
//     still land later: then the call stops and leaves the lease open.
//
// A create-children write that creates children already Locked (eager
// dispatch, store.Service.openEagerLease) leases them the same way: before
// its transaction, one lease for the children its locks take whose expiry
// is the first lock's (at least 3; no pause heuristic — one commit creates
// them all or none, so nothing races for them), the transaction under it
// (planCreate writes lk instead of tp/ts for a member created Locked with
// the lease's expiry), then the close with the members it locked; a write
// that failed leaves the lease open. A top-level create-locked (eager
// start) creates one execution and takes no lease.
//
// While a head stays Locked without a new Locked event it keeps lk. Any
// other Locked event — an extension by its holder, a lock without a lease
// (LockOne, a lock call of fewer than 3), a child created already Locked
// outside an eager lease) — drops lk and writes the head's own tp/ts;
// leaving Locked drops both. So a head locked under lease L (lk = L) is
// covered by L's entry, and any other locked head by its own.
//
// The sweep (ExpiredLocks) splits the due timers entries: heads as before;
// for leases, it reads each lease and its members' heads strongly
// consistently and reports each member still Locked with lk = L whose
// expiry is due (its state At — not the lease's time), once even when it
// also met the head through another entry. A member is live when Locked
// with lk = L. A lease with no live member is spent, and ExpiredLocks
// deletes it (DeleteItem), when it is closed, or, open, once LeaseLag (15
// minutes, as RetentionLag) passed since its expiry: longer than any lock
// commit of its call can take to land. Why no lock is left that nothing
// expires:
//
//   - a head gets lk = L only from a lock commit under L, or the commit
//     that creates it Locked under L (eager dispatch), which runs after L
//     was put (the lease exists first; a crash between the lease and the
//     locks leaves a lease whose members are not locked under it, deleted
//     after its lag);
//   - no later commit can make a member live again: lk survives only on a
//     head that stays Locked with no new Locked event, so once the sweep
//     read a member not live, only a lock commit of L's own call could make
//     it live — and a closed lease's call returned (every Update done),
//     while an open lease is kept its lag;
//   - an extended member has its own entry, found at its new expiry; the
//     extension of one member changes nothing for the others, which the
//     lease still covers;
//   - a live member keeps the lease; the sweep resolves its lock (Unlocked,
//     a retry or the finish of store.Sweep, a conditional commit on its
//     head: idempotent), and the next pass finds the lease spent. A lock
//     found twice (two sweepers, a late worker) is resolved once, the other
//     attempt is Skipped, as before.
//
// Costs: the lease's put, close and delete and its index entry in and out,
// 5 WRU per lock call chunk, for 2 WRU saved per leased execution (its
// entry in and out); the sweep reads each lease once after its expiry (1
// RRU, consistent) and its members' heads (1 RRU each). None of these writes
// is in a transaction, and each lease item is written only by its own lock
// call and the sweep, so leases add no TransactionConflict (see Cost).
//
// # Fan-in: responses that bypass the parent's head
//
// Before, every child's response rewrote its parent's head (the response's
// cursor came from the head's mc, and the head may unblock), so siblings
// finishing together all raced on one item: 1.45 cancelled transactions
// per child finish measured (49% of the workflow's transactions with 8
// clients). Now a child's response (append_batch_respond_to_parent, a
// stub, the sweep finishing a timed-out child) normally writes only the
// child: siblings share no item inside any transaction, and the one item
// they share, the parent's inbox, they write only with single-item
// UpdateItems, which DynamoDB serialises without cancelling any. The
// service still decides everything (store.Inbox: cursors and the unblock
// rule stay core.ApplyResponse in store.Service); this package decides
// where a response is stored and when it must be applied at once.
//
// A response. In the child's transaction, store.Service offers the response
// (store.Inbox.DeferResponse). The backend defers it when the transaction
// appends the child's Finished with exactly that result and version, the
// child is not fenced (el), and the parent has fan-in (fi, set by the commit
// that first requests a child; read unguarded, it never goes back). It then
// registers the response in the parent's inbox — UpdateItem ADD o#js 1,
// ADD n 1, ADD ks {key}, SET c#js = if_not_exists(c#js, key), ReturnValues
// ALL_NEW —
// before the commit (repeating it is harmless: a counter and a set). The
// returned image elects the response when wj = js and c#js = key: the
// parent last blocked on js and this is the first registration of js
// since. An elected (or fenced, or unregistrable) response is applied as
// before, the parent's head written in the child's transaction. A deferred
// one is committed as the child's head alone (a single PutItem) carrying
// pr and pq: the response is the child's Finished (result, version) plus pr
// (created_at), so it exists exactly when the child's Finished does
// (docs/spec/semantics.md §8.15).
//
// Applying deferred responses (store.Inbox.DeferredResponses, the drain).
// The service applies them — cursor mc+1…, unblock rule, response item and
// guard, in a commit that writes the parent's head as before — first thing
// in every transaction that reads the parent's responses: a JoinNext
// (before its lookup), a lock (its history), and before every read of
// responses outside a transaction (get, subscribe, read_history,
// list_responses, list_execution_events_responses: store.Service.settle,
// which asks HasDeferredResponses, then drains at most 32 per commit). The
// drain reads the inbox, then the heads of its registered children and
// their guards (BatchGetItem, consistent): a child finished with pr and no
// guard is a deferred response; one not finished is in flight; anything
// else (guard present: applied; no pr: it carried no response) is stale.
// Deferred responses are applied in registration order (pq on the child:
// the inbox's counter n returned by its registration), and a response
// applied to the head at once (elected, a delay's, …) drains the deferred
// ones first, so a response that completed before another began is never
// numbered after it. After the commit the applied and stale keys leave ks
// (DELETE, idempotent).
//
// A JoinNext that blocks (a commit of a head with fan-in going to
// BlockedByJoinSet js from any other state) read the inbox before it looked
// for the response (NthResponse reads it first). It adds to its
// transaction: Update inbox SET wj = js, REMOVE c#js, condition o#js = the
// count it read (attribute_not_exists if none); and a fence on every child
// of js registered but not finished when it read them — the child's head
// rewritten with el, condition its rv as read (more than 24 such children:
// the JoinNext waits for them and runs again).
//
// Why the JoinNext ↔ response race stays closed (§8.3). Let J be a
// transaction whose JoinNext finds the n-th response of js absent and
// blocks, and R a response of js that is deferred. R registers before it
// commits. (a) R registered after J read the inbox: o#js moved, J's
// condition fails, J runs again and drains R (or fences it). (b) R
// registered before J read the inbox: its key is in ks. If R's child was
// finished when J read it, R is a deferred response J applied before
// looking: J does not block on it. If not, J fences the child: if R commits
// first, the fence's condition fails and J runs again (and now drains R);
// if J commits first, R's commit fails on the child's rv, R runs again,
// sees el and is applied to the parent's head, serialised with J by the
// head's rv. (c) R registered after J committed: J removed c#js, so the
// first such registration claims it and is elected: it unblocks the parent
// in its own transaction (serialised with J by the head). A response that
// is not deferred writes the parent's head, which J guards, as before. So
// no interleaving leaves the parent blocked with its response stored, and
// exactly one response per block writes the parent's head: later siblings
// of js see c#js claimed by another and are deferred.
//
// Stored once, cursors gapless and in order (§8.4, §8.13). Cursors are
// still allocated only by commits that write the parent's head (rv-guarded)
// together with the responses they number, and reads are bounded by the
// head's mc: a deferred response simply has no cursor until applied, and a
// reader never sees n+1 before n. A response is applied by a commit that
// puts its guard G#C#<child> attribute_not_exists, and the drain skips
// keys whose guard exists, so a registration landing twice (an ambiguous
// retry, a late duplicate) or a clean-up lost with the process only leaves
// a stale key.
//
// Crashes. A deferred response whose commit landed is in the child's head
// and registered, so whichever reader comes next applies it. A registration
// whose transaction never commits (fn failed, process died) is a key whose
// child is not finished: harmless, fenced if the parent blocks. The elected
// response is the one that can be lost: if its process dies after
// registering, the parent stays blocked although its siblings' responses
// are deferred. Its child is still locked, so: the sweep that resolves its
// expired lock also settles the parent (store.Sweep, SettleResponses) and
// the deferred responses unblock it; the child's retry registers the same
// key, still holding the claim, and is applied once (its guard). A response
// whose transaction fails for another reason (version conflict, fenced
// worker) settles the parent right away (store.Service, best effort).
//
// What it costs and saves (bench/cost -fanout 100, see Cost): a
// deferred child finish is a PutItem of the child (1 WRU) and a registration
// (1 WRU per KB of the inbox, which holds at most the keys of responses not
// yet applied), plus 1 RRU to read the parent's fi; applying it later costs
// what a response cost before minus the parent head per response (the head
// is written once per drain of up to 32). On AWS a registration that meets
// a blocking JoinNext's transaction on the inbox is refused with
// TransactionConflict and retried (a run of fn again); DynamoDB Local never
// raises TransactionConflict, so the tests model it (conflict_test.go:
// TestConflictModelFanInKeepsTheInvariants, and both fault-injection
// tests). The inbox is one item: a parent takes about
// 1,000 registrations per second (the per-item write limit); beyond, the
// SDK's throttling retries spread them.
//
// # Limits
//
// Options.Shards must never decrease for a table. One execution's items
// (the partition E#id) may not exceed 10 GB because of the LSI. An append
// batch's events are written as pages, so batches are bounded by 4 MB per
// commit, not by 100 actions. Log cursors come from one counter item, so
// log batches are limited to ~1,000 per second table-wide (one write unit
// each). Siblings finishing at the same moment no longer contend on their
// parent (see Fan-in); they share its inbox item, which takes about 1,000
// registrations per second per parent.
//
// # Cost (bench/cost on DynamoDB Local 3.3.1)
//
// Write units are billed by the capacity meter (package dynamo/dynamometer)
// from the image of each item before and after each write, by AWS's
// published rules — not taken from DynamoDB
// Local's ConsumedCapacity, which counts a transaction's index updates once
// per index instead of once per entry (a 10-child submit changes 50 index
// entries in 5 indexes; the emulator reports one write per index) and reports nothing for a cancelled
// transaction. The assumption behind each figure, with the AWS DynamoDB
// Developer Guide page it comes from:
//
//   - table, single-item write: 1 WRU per started KB of the larger of the old
//     and new item; a delete, of the deleted item ("DynamoDB read and write
//     operations", read-write-operations.html);
//   - table, committed TransactWriteItems: 2 WRU per KB per action,
//     ConditionCheck included, of the larger image ("Amazon DynamoDB
//     Transactions: How it works", capacity management: two underlying
//     writes, prepare and commit; transaction-apis.html);
//   - index: per entry, 1 WRU per KB of the projected entry when it appears
//     or goes, 2 when its index key changes (delete + put), 1 when only
//     projected attributes change, nothing when it has none before and
//     after ("Using Global Secondary Indexes", writes, GSI.html#GSI.Writes;
//     the same rules for the ordinals LSI). Not doubled inside a
//     transaction: an assumption, from index updates propagating after the
//     transaction completes (transaction-apis.html);
//   - single-item write whose condition fails: 1 WRU per KB of the existing
//     item, at least 1 (read-write-operations.html); none occur in the bench;
//   - cancelled TransactWriteItems: billed as if committed (2 WRU per KB per
//     action, no index write) — an upper bound, as AWS does not document what
//     a cancelled transaction consumes — and reported separately;
//   - reads: as DynamoDB Local reports them (1 RRU per 4 KB strongly
//     consistent, ½ eventually consistent: read-write-operations.html).
//
// List prices: $0.625/M WRU, $0.125/M RRU; a request through the HTTP API
// costs $1.00/M plus the Lambda request $0.20/M, one through a Lambda
// function URL (the worker lock and write routes, docs/deploy.md) or a
// scheduled sweep invocation only the $0.20/M; Lambda duration at 128 MB
// arm64 is $0.0017 per million requests per ms. The bench prints these
// assumptions, prices the public create through API Gateway and the worker
// routes through function URLs (-worker-door apigw for API Gateway), and
// counts a transition per execution created or locked, event appended and
// response recorded (an activity: 3). Locks are taken in batches of 10. WRU
// and index entries are deterministic for a layout; RRU nearly so (index
// queries read a varying number of shards); the cancelled share depends on
// how concurrent clients interleave, and handler times are wall time on a
// shared, loaded 2-core machine (its duration share is indicative; it is
// under 2% of every price below).
//
// Before → after this change (issue 12), 8 clients unless said otherwise;
// "before" is the previous code measured by the same bench (run from a
// copy of it), priced the same way (function URLs for the worker routes;
// the "API Gateway" column puts every request through the HTTP API, as the
// previous deployment did):
//
//	                              before                          after
//	activity, default layout      16 WRU, 2.7 RRU                 14 WRU, 2.7 RRU
//	  $/M activities (API GW)     $11.98 ($13.08)                 $10.68 ($11.78)
//	  $/M transitions             $3.99 ($4.36)                   $3.56 ($3.93)
//	activity, lean layout         9 WRU: $7.84, $2.61/M trans.    unchanged: $7.47, $2.49/M trans.
//	workflow, default             420 WRU, 49% of transactions    276 WRU, none cancelled
//	  (10 children + delay)       cancelled: $282.62 ($297.92)    $189.89 ($205.19); 1 client: 276 WRU,
//	                              1 client: 320 WRU               $189.01
//	workflow, lean                330 WRU, 50% cancelled:         211 WRU, none cancelled:
//	                              $231.00 ($246.30)               $150.08 ($165.38)
//	fan-out of 100 children       7.76 cancelled transactions     0 per child finish (0 re-runs)
//	  finishing at once, default  per child finish (2,327 in 300)
//	  lean                        8.18 per child finish           0
//
// What each lever did (measured with the bench):
//
//   - Fan-in (deferred responses, above): the cancelled share of the workflow
//     from 49% to 0 and of the 100-child fan-out from 7.76 per child finish
//     to 0; under contention that is 100 WRU per workflow (the cancelled
//     transactions, billed as committed) and their re-runs. Uncontended it
//     is about neutral: a child's finish is 6.1 WRU (default; 4.3 lean)
//     instead of 12.4 (10.4), and applying its response later (in the
//     parent's next lock or read) costs 5 (response and guard in a
//     transaction, the ordinals entry), the parent's head being written once
//     per drain instead of once per response; lean uncontended ≈ 221 → 211.
//   - Deployment counts moving only when an execution finishes (one live
//     bucket A): 5 → 3 WRU per activity (16 → 14 default), about 33 of a
//     workflow's WRU remain (3 per execution); counts now read the live
//     heads of the deployment.
//   - Function URLs for the worker routes: −$1.00 per million worker
//     requests: −$1.10 per million activities, −$15.30 per million
//     workflows (the public create still pays API Gateway).
//   - The batch route (POST /v1/worker/append-batch/many, -batch 10): −$0.18
//     per million activities and −$1.98 per million workflows (finishes
//     share requests; the DynamoDB work is the same).
//   - 128 MB instead of 256 MB: halves the duration share, ≈ $0.1–1 per
//     million workflows.
//   - Single-item writes instead of transactions: a deferred child finish is
//     one PutItem (1 WRU + its index changes) instead of a 4-item
//     transaction; the other transactions (creating children, a delay
//     request with its timer row, firing a delay, the drain) still carry two
//     or more items that must change together.
//
// Where the rest goes (default, per workflow, 276 WRU): submitting the 10
// children 72 (11 heads in one transaction 22, 5 index entries per child
// 50), the children's locks 40 (head, pending-ffqn and pending-digest out,
// timers in), their finishes 61 (head, timers out, deployments A → O,
// registration, and the one elected response's transaction), applying the
// 10 responses 50, awaiting the first child 12 (head, timer row, inbox in
// one transaction), firing the delay 18, the workflow's own create, locks
// and finish 23.
//
// Targets not reached, and the floor. An activity at $1.50 per million
// transitions is $4.50 per million activities: the front door alone takes
// $1.24 (the create through API Gateway, $1.20, a tenth of a lock request,
// the finish through a function URL), leaving ≈ $3.2 for DynamoDB, about 5
// WRU with the reads. An activity here is 3 head writes (3 WRU) plus the
// index entries that make it findable: pending-ffqn in and out (2), the two
// list indexes (2), the lock-expiry timer in and out (2) — 9 WRU, the lean
// layout, $7.47 all-in ($2.49 per transition); the default layout adds the
// digest index (2) and the deployment counts (3). Reaching 5 WRU would mean
// dropping indexed queues, listings or lock expiry (or batching lock leases
// per lock batch, ≈ −1.6 WRU, not done). The 10-child workflow at $100 per
// million would need ≤ ≈ 140 WRU: the lean 211 less the remaining levers
// not taken — the drain's response and guard outside the transaction (≈ −20),
// children created with single-item writes behind an outbox (≈ −10), lock
// leases per lock batch (≈ −20) — still ≈ 160 WRU, ≈ $110. So both targets
// are out of reach with one item write per index entry; today's prices are
// $10.68 / $7.47 per million activities (default / lean) and $190 / $150
// per million workflows.
//
// Retention. The figures above were measured without retention
// (STELA_RETENTION=forever). With the default 30 days (bench/cost,
// default layout, 8 clients, after fan-in): every finish writes one more
// index entry (the retention index), +1 WRU per execution — an activity's
// finish 5 instead of 4 WRU, 15 instead of 14 per activity ($11.20 all-in
// per million, $3.73 per million transitions), 287 instead of 276 WRU per
// 10-child workflow (11 executions; $197 all-in per million). The timers
// function's marking then costs, per tree: an activity (its head marked
// in the finishing commit) 0 items, 2.1 RRU (root head, its partition and
// log partition read) → $0.27 per million; the 10-child workflow 38 items
// (11 heads, a page, 10 responses, 11 response guards, the fired delay's
// response, a JoinNext counter, the inbox, …) for 49.1 WRU (38 table + 11
// index: the responses' entries in the ordinals LSI, projection ALL,
// change with them) and 77 RRU → $40.3 per million trees. All told, per
// million: an activity $11.5 all-in, the workflow $237 (DynamoDB $231.3:
// the marking is about one write unit per item the tree owns). DynamoDB's
// own deletions are free; the alternative, Stela deleting the items itself
// when due, costs the same write per item plus one per index entry.
//
// Issue 26 (cheaper than a Lambda durable step). Both figures and the
// table below come from one command per code version (DynamoDB Local on a
// shared 2-core machine, load average 6–8: the Lambda-duration share,
// wall time, is the only part that depends on it; WRU and index entries are
// deterministic for a layout, RRU nearly so):
//
//	go run ./bench/cost -layouts default,lean -activities 200 -workflows 30
//
// The bench reports every figure under both transaction-index
// assumptions: "once" (as above: an index update inside a transaction
// billed like a single write's) and "twice" (doubled like the
// transaction's table writes — AWS documents neither), and counts the
// item writes over 1 KB; each workload ends with a sweep pass after every
// lock it took expired, so what lock expiry costs the sweep is in the
// figures. $ per million all-in (DynamoDB + requests + duration); "+ret."
// adds the timers function's retention marking per tree (default
// retention 30 days). Before is main 8c04c2d run with this bench (the
// previous session measured 277.4 WRU per workflow there, 277.1 here):
//
//	                      before (main 8c04c2d)                       after (lock leases)
//	activity   default    15.0 WRU 2.4 RRU $11.18 (+ret. $11.45)      13.5 WRU 3.5 RRU $10.38 (+ret. $10.65)
//	           twice      15.0 WRU (no transaction)                   13.5 WRU (no transaction)
//	           lean       10.0 WRU 2.4 RRU $8.09 (+ret. $8.36)        8.5 WRU 3.5 RRU $7.33 (+ret. $7.59)
//	workflow   default    277.1 WRU 90.5 RRU $191.68 (+ret. $227.10)  257.7 WRU 103.0 RRU $181.12 (+ret. $216.54)
//	           twice      352.1 WRU $238.56 (+ret. $273.98)           328.7 WRU $225.49 (+ret. $260.92)
//	           lean       212.1 WRU 90.2 RRU $151.12 (+ret. $185.29)  193.0 WRU 102.8 RRU $141.19 (+ret. $175.37)
//	           lean twice 262.1 WRU $182.37 (+ret. $216.54)           239.0 WRU $169.94 (+ret. $204.12)
//	marking per workflow tree: 49.0 WRU, 38.2 RRU ($35.4/M), unchanged
//
// With eager dispatch too (main 342c70a: leases and eager dispatch, the
// command above plus -eager, every child locked by the commit that
// creates it as the SDK's worker does while it has free slots; one run,
// load ≈ 2): workflow default 222.6 WRU 76.6 RRU $155.42 (+ret. $190.84),
// twice 284.6 WRU $194.17 (+ret. $229.59), lean 177.7 WRU $127.34 (+ret.
// $161.51), lean twice 224.7 WRU $156.72 (+ret. $190.89); activities as
// in the table (a top-level submit is not eager); no transaction
// cancelled.
//
// With eager start (bench/cost -eager-start: the activities run again as
// the SDK's worker submits executions of functions it serves, created
// locked to it by store.Service.CreateLocked — POST
// /v1/worker/create-locked, a worker route priced at the function URL, lock
// as worker.Worker sends it: batch 1, its own run id, the default 10 s
// lease — then finished; the command above plus -eager -eager-start, three
// runs, load 2.9–4.0, every WRU and RRU figure identical across them):
//
//	                      create, lock (batch of 10), finish     eager start: create-locked, finish
//	activity   default    13.5 WRU 3.5 RRU $10.35–10.37          10.0 WRU 1.0 RRU $6.82–6.83
//	                      (+ret. $10.62–10.63), $3.45/M trans.   (+ret. $7.08–7.09), $2.27/M trans.
//	           lean       8.5 WRU 3.5 RRU $7.22–7.24             7.0 WRU 1.0 RRU $4.94–4.95
//	                      (+ret. $7.49–7.50), $2.41/M trans.     (+ret. $5.20–5.21), $1.65/M trans.
//	           twice      the same (no transaction)              the same (no transaction)
//	requests   per activity $1.42/M: create through API Gateway  $0.40/M: create-locked and finish
//	                      $1.20, a tenth of a lock, finish $0.20 through function URLs
//
// Per step (default, lean): a create-locked is one PutItem, 5 WRU (head 1,
// list and list-id 2, deployments A 1, the head's own lock-expiry entry in
// 1; lean 4) where the create was 6 (4) and the lock's share 3.3 (2.3:
// head, pending entries out, a tenth of the lease); the finish 5 (3)
// instead of 4 (2): it takes that lock-expiry entry out; the sweep after
// the expiry 0 WRU, 0 RRU as reported (its 16 timers-index queries find
// nothing due) instead
// of 0.2 WRU and 1.1 RRU per activity (its lease's delete and entry out,
// the lease and its members read). 2 steps and 2 requests per activity
// instead of 2.1; the transitions are still 3 (created, locked, finished).
// Target (≤ $6.50 default, ≤ $5.90 lean all-in): lean met ($4.94, +ret.
// $5.21), default not ($6.83, +ret. $7.09: 0.5 WRU over) with one
// create-locked per execution.
//
// Batched eager start (store.Service.CreateLockedMany, core.EagerBatchCreator;
// create-locked's `requests`): a worker's Submits that arrive while its
// previous create-locked of the same lock group is in flight go together in
// the next request (no timer: a lone Submit is sent at once), each created
// in its own PutItem — not a transaction, which would double the write
// units — under one lock and, from minLeaseMembers (3) on, one lock lease
// (Lock leases): the lease's put, entry and close instead of each head's
// own lock-expiry entry in and out. bench/cost -start-batch 8 (the default;
// -start-batch 1 is the single request above), the command above plus
// -eager -eager-start, same code both sides, load 1.4–3.4, WRU and RRU
// identical across two runs of batches of 8:
//
//	                      one per request (-start-batch 1)       8 per request (-start-batch 8)
//	activity   default    10.0 WRU 1.0 RRU $6.82 (+ret. $7.09)   8.6 WRU 2.1 RRU $5.93 (+ret. $6.20)
//	           lean       7.0 WRU 1.0 RRU $4.94 (+ret. $5.21)    5.6 WRU 2.1 RRU $4.05–4.06 (+ret. $4.32)
//	           twice      the same (no transaction)              the same (no transaction)
//	per transition        $2.275 / $1.648                        $1.977 / $1.350
//
// Per 8 activities (default): the create-locked request 35 WRU (8 heads
// with list, list-id and deployments entries, 32; the lease's put and its
// entry 2, its close 1) instead of 8 × 5; each finish 4 instead of 5 (no
// entry of its own to take out); the sweep after the expiry 2 WRU per lease
// (its delete and entry out) and ≈ 9 RRU (the lease and its members read),
// 0.25 WRU and 1.1 RRU per activity. 1.1 requests per activity instead of
// 2. Target met in both layouts: $5.93 default (≤ $6.50; +ret. $6.20),
// $4.05 lean (≤ $5.90). A batch of 2 takes no lease (own entries, as one
// per request); the figure holds when submissions come in bursts of ≥ 3
// per request in flight.
//
// The one write that does create several executions locked is eager
// dispatch's create-children: its children now share a lease (Lock
// leases). Same command, three runs each side, load 2.6–3.5 (before: this
// branch without it):
//
//	                      eager children, own entries    eager children under one lease
//	workflow   default    222.6–222.8 WRU 76.2–76.6 RRU  207.7–207.8 WRU 87.5–87.7 RRU
//	                      $154.39–154.61 (+ret. ≈ $190)  $146.08–146.54 (+ret. $181.50–181.96)
//	           twice      284.6–284.8 WRU $193.1–193.4   258.7–258.8 WRU $178.0–178.4
//	           lean       177.7–177.8 WRU $126.2–126.6   162.6–162.8 WRU $118.1–118.5 (+ret. ≈ $152.5)
//	           lean twice 224.7–224.8 WRU $155.6–156.0   198.6–198.8 WRU $140.6–141.0
//
// Per workflow (default, once): the submit 62 → 55 (the 10 children's
// lock-expiry entries leave the transaction, the lease's put, entry and
// close come in; twice 102 → 85), the children's finishes 62.2 → 51.9 (no
// entry out), the sweep after the expiry +2 (the lease's delete and entry
// out) and +11 RRU (the lease and its 10 members read, +$1.40 per million):
// −15 WRU (−26 twice), −$8.3 per million; no transaction cancelled.
//
// Per step kind (default, once → twice; before → after where it moved): a
// lock call of 10 40 → 33 (heads 10, pending-ffqn and pending-digest out
// 20, timers in 10 → the lease's put, close and entry 3); an activity's
// finish 5 → 4 and a child's 6.1 → 5.2 (no timers entry out); the
// sweep past the expiry 0 → 2 per lease (its delete and entry out); the
// workflow: create 6, submit 10 children 72 → 122 (22 table in one
// transaction, 50 index entries: five per child), await the first child
// 12 → 11 (→ 12 twice), the children's finishes 61.6 → 51.6, the relock
// that drains the 10 deferred responses 50.5 → 49.0 (→ 59.7; response
// and guard in the transaction, 2 + 2 WRU, and the ordinals entry, per
// response), await the rest 5 → 4, the delay fired 18 → 22, finish 5 → 4,
// its locks 4 → 3.3 each, the sweep 2.6 (its 1.3 leases' deletes).
//
// Levers, measured or estimated from the per-step figures (WRU per
// 10-child workflow, default layout, once):
//
//   - Derived executions without a retention index entry (done, previous
//     session): a tree is decided from its root (rearm, see Retention): −1
//     per child finish, 287.6 → 277.4 (lean 222.4 → 212.2), activity
//     unchanged; it removes a
//     write from a child's finish and adds none elsewhere, so no new item
//     meets another request (no added conflict); the rearm is one
//     UpdateItem per lag (15 minutes) and per tree whose root finished
//     before a descendant, none in the bench.
//   - Items under 1 KB: 0 of 2,471 item writes of the workflow (0 of 600 of
//     the activities) are over 1 KB — the compressed head already keeps
//     every item in one write unit; nothing is left to remove.
//   - Listing children from the parent's tree instead of list/list-id (not
//     done): both indexes are keyed by lp, so a derived head can leave
//     list only (no ls), and list_executions with show_derived by
//     created_at — one order across every tree — would then have no index
//     to page from (≤ −1 per child, −2 twice). Deployment counts once per
//     tree (not done): counts report derived executions per deployment and
//     per live bucket; without their A entries nothing finds the live ones
//     of a deployment (≤ −3 per child).
//   - The drain's response and guard outside the transaction (not done,
//     ≈ −20, −30 twice): the order argument does not allow it as such. The
//     guard G#C#<child> is what tells a later drain the response was
//     applied; put after the parent's commit, a crash in between leaves a
//     numbered response without its guard and the next drain numbers it
//     again (two responses for one child, §8.15); put before, responses
//     numbered above mc by a commit that then fails collide with the
//     winner's. It needs another proof of "applied" (the applied keys in
//     the parent's head, pruned with the inbox) — a design change, left
//     out this session (the lease lever and the TransactionConflict audit
//     came first). Its two halves: the guard alone after the commit
//     (−1 per response, −10 per workflow once and twice) needs the
//     drain's commit to record the applied keys on the parent's head (ap,
//     guarded by its rv), classify to treat a key in ap as applied, and a
//     later commit of the parent to prune ap once it read the guards —
//     the guard still being the only uniqueness proof for other response
//     paths in the window between commit and guard; the response item
//     after the commit too (−1 more, −2 twice with its ordinals entry)
//     means the head's mc may cover a response not yet written, so every
//     reader of responses (cursor ranges, the ordinals LSI of NthResponse,
//     which a JoinNext trusts) would first have to rebuild the missing
//     ones from the children's heads (deferredOf) — the larger change.
//   - Lock leases per lock call (done, see Lock leases): −1.5 WRU per
//     execution locked in a call of 10 (its timers entry in and out, 2,
//     less a tenth of the lease's 5), measured activity 15.0 → 13.5 (lean
//     10.0 → 8.5), workflow 277.1 → 257.7 (lean 212.1 → 193.0; twice
//     352.1 → 328.7, lean 262.1 → 239.0); the sweep reads each lease and
//     its members once after the expiry: +1.1 RRU per activity, +12.5 per
//     workflow (+$0.14 and +$1.56 per million). A lock call of fewer than
//     3 candidates (a workflow's single relock, LockOne) takes no lease.
//     Under contention (-contended-locks: 8 lockers racing for the same
//     oldest candidates) a lease locks few of them and costs more than it
//     saves; after a lease that locked fewer than 3, lock chunks take none
//     but one in 8 until a lease pays again (store.leaseYield). Measured
//     contended, before → after: activity 17.1 → 17.6 WRU default (12.3 →
//     12.6 lean), workflow 314.0 → 327.1 (255.4 → 268.0; those runs also
//     differ in how many relock transactions the race cancels) — the
//     lever's cost where lockers collide, before the heuristic stops it
//     (with a lease on every chunk the activity was 18.0).
//   - Children created by single-item writes behind the outbox (not done):
//     once ≈ −3 to −6 (11 transactional heads, 22 WRU, become the parent
//     and an outbox in the transaction plus 10 PutItems, an outbox delete
//     and the parent's ob cleared; the outbox holds every child item, so
//     its own write and delete take most of the saving), twice ≈ −50 (the
//     children's 50 index entries leave the transaction).
//   - Eager dispatch (done, core.EagerLock; bench/cost -eager): a child
//     locked in the commit that creates it never enters and leaves
//     pending-ffqn and pending-digest and costs no separate lock write or
//     lock request. Measured (same command plus -eager, one run each on
//     this branch, load 5–11): default 277.5 → 227.3 WRU per workflow
//     (−50.2, ≈ −5 per child: the children's locks, 40, go; the submit is
//     62 instead of 72, a locked head's lock-expiry entry instead of its
//     two pending entries), $192.58 → $160.15 all-in (+ret. $228.00 →
//     $195.57); twice 352.5 → 292.3 WRU, $239.45 → $200.77; lean 212.5 →
//     182.4 WRU (−30), $153.35 → $133.27 (+ret. $187.52 → $167.44), lean
//     twice 262.5 → 232.4 WRU, $184.60 → $164.52; RRU 90.4 → 74.8; 17.3 →
//     16.3 steps per workflow, no transaction cancelled either way. The
//     SDK's worker takes it for every child of a function it serves while
//     it has free slots (docs/worker.md "Eager dispatch"); the bench's
//     figure is the case where every child is eager. A top-level submit is
//     not eager dispatch; a worker's own submit is eager start (next).
//   - Eager start (done, core.EagerCreator; bench/cost -eager-start): an
//     execution a worker submits for a function it serves is created locked
//     to it through its create-locked route: no pending entries in and out,
//     no lock request, its create priced as a worker request (function URL)
//     instead of the public create through API Gateway. Measured above:
//     activity 13.5 → 10.0 WRU, $10.36 → $6.83 default; 8.5 → 7.0 WRU,
//     $7.23 → $4.94 lean; concurrent Submits batched 8 per create-locked
//     request under one lease: 8.6 WRU, $5.93 default; 5.6 WRU, $4.05
//     lean. A client.Submit from another process (the public create)
//     still pays the first figures.
//
// Targets and floor (the workflow figures here predate the eager
// children's lease above: $146 / $118 with it). Activity: $10.38 default,
// $7.33 lean all-in, +$0.27 marking (targets $6.50 and $5.90) — not met
// through the public create; submitted by a worker that serves it (eager
// start, above) $6.83 default (not met, +ret. $7.09) and $4.94 lean (met,
// +ret. $5.21: 7 WRU, the floor below); submitted in bursts (batched eager
// start, above) $5.93 default (met, +ret. $6.20) and $4.05 lean — 8.6 and
// 5.6 WRU, below that floor by sharing the lock-expiry entry in a lease.
// An activity is 3 head writes plus the index entries that make it findable: pending in/out (2;
// +2 with the digest index), lock expiry (0.5: its share of a lease of 10),
// list and list-id (2), retention (1), and deployment counts (3, default):
// 13.5 and 8.5 WRU. $5.90 lean means ≈ 7 WRU, the issue's own floor with a
// lock-expiry index but without listing or retention; what is left above
// it is listing and retention (3 WRU), which the issue keeps. Workflow:
// $155.42 default, $127.34 lean with eager dispatch ($181.12 / $141.19
// without), +$35 marking (targets $100 and $80 with marking) — not met.
// Summing the levers not done (the drain redesign, children behind the
// outbox) leaves ≈ 198 WRU default (≈ $140) plus the marking, whose
// floor is one write per item the tree owns (38 items, 49 WRU): a tree's
// items are written once more so that DynamoDB's time-to-live deletes
// them for free. $100 with marking would leave ≈ 100 WRU for 11
// executions, 10 responses and a delay — below the 7-unit-per-execution
// floor plus each response's item and guard. So on this single-table
// design, with every lever above, a 10-child workflow stays ≈ $140 per
// million plus ≈ $35 of retention marking, not $100.
//
// Comparison: a Stela activity (3 transitions) is $3.46 per million
// transitions default, $2.44 lean — 7.2× / 10.2× cheaper than Step
// Functions Standard ($25 per million state transitions); per unit of work
// it is 1.30× (default) and 0.92× (lean) the $8.00 per million durable
// operations of Lambda durable functions — the lean activity is now below
// a durable step. Submitted with eager start ($6.83 / $4.94 per million,
// $2.27 / $1.65 per million transitions) it is 11× / 15× cheaper than Step
// Functions Standard and 0.85× / 0.62× a durable operation, below it in
// both layouts (0.89× / 0.65× with the marking); a child step of the 10-child workflow ($15.54 /
// $12.73 per million children with eager dispatch, marking excluded;
// $18.11 / $14.12 without) 1.9× / 1.6×; with the eager children's lease
// $14.6 / $11.8, 1.8× / 1.5×.
//
// Under TransactionConflict (conflict_test.go; DynamoDB Local never raises
// it): a registration meeting the blocking JoinNext's transaction on the
// inbox cancels that transaction (2–4 of 8 in
// TestConflictModelFanInKeepsTheInvariants, 8–18 WRU of ≈ 470 billed as
// cancelled), which re-runs; invariants hold and no finish fails. The
// retention lever writes nothing new, so it adds no meeting; the lease
// lever adds only single-item writes of lease items, which no transaction
// touches (each is written by its own lock call and the sweep), and the
// lock commits stay single PutItems, so it adds none either
// (TestConflictModelLeasesAddNoCancelledWork: no refusal at a lease). The
// single-item writes outside commits that do meet transactions (drain
// clean-up, outbox completion, retention marking) are now re-sent by the
// retryer instead of failing at the first refusal (see TransactionConflict).
//
// # Why attribute values and expressions are built by hand
//
// The package writes types.AttributeValue maps and expression strings
// itself (codec.go: avS, avN, getS, …; "#rv = :rv" literals) instead of
// the SDK's feature/dynamodb/attributevalue and expression packages. The
// decision, and what would make it worth revisiting:
//
//   - Byte-exact item layout. Write units are billed per KB and a head must
//     stay under HeadBudget (1 KiB) for a typical step to cost one WRU, so
//     every attribute name is one or two letters, optional attributes are
//     absent rather than null, and the events are one binary attribute z
//     holding a DEFLATE stream with a preset dictionary (zblob.go).
//     attributevalue marshals Go structs field by field (tags could shorten
//     names, but z, the sparse index keys built from several fields, e.g.
//     ps = "<at>#<created_at>#<id>", and the size check before every put
//     need the map anyway), so it would be a second layer over the same
//     hand-written encoding.
//   - Sparse indexes. An index key attribute must be present exactly while
//     the item belongs to the index and absent otherwise; the encoder
//     decides per state (head.go, deployments_index.go), which is plain
//     map code.
//   - Conditions composed per commit. Each action of a TransactWriteItems
//     carries its own condition (rv = :read, attribute_not_exists(pk), the
//     digest a source mapping replaces), and the op list also feeds the
//     ClientRequestToken digest and the ALL_OLD own-commit check
//     (commit.go). expression.Builder generates placeholder names (#0, :0)
//     per build and returns them in maps it allocates on every call; the
//     fixed literals here are constant strings, compared and logged as
//     they are sent.
//   - Allocation. A commit's ops are built once per fn run; the builder's
//     reflection and per-call maps would run on the hottest path (every
//     lock and append) for no gain in safety, since the few expression
//     shapes are fixed strings covered by the contract suite on DynamoDB
//     Local.
//
// Revisit if the layout stops being hand-tuned (e.g. items become plain
// structs without compression or sparse keys).
//
// # Deployments (deployments*.go)
//
// Deployment rows (store.DeploymentReadTx and store.DeploymentTx: the
// service makes every decision, docs/spec/semantics.md §6.5–6.7) live beside the executions
// in the same table and go through the same Update and commit:
//
//	deployment      pk "DEP", sk "<deployment id>": ca, la, st (status), tm
//	                (TOML: "=" + text, or "@sha256:…" above InlineThreshold),
//	                ov, cb, de, dg, fj (files JSON, by path), cj (components
//	                JSON with their files and roles), rv revision, cq the
//	                request id of the insert, rq of the last commit that
//	                wrote it (items written before cq existed carry the
//	                insert's in rq). One partition, so list_deployments and
//	                list_deployment_states are one strongly consistent Query
//	                by id (cursor in the key condition, newest first).
//	pointer         pk "DEPPTR", sk "P": ac (active id), eq (enqueued id),
//	                rv, rq.
//	metadata        pk "CM#<component digest>", sk "M": im, ex (JSON), wt
//	                (WIT, inline or offloaded), wo, rq; written with
//	                attribute_not_exists (first write wins).
//	source mapping  pk "SRC#<component digest>", sk "E#<key>" (exact) or
//	                "S#<key>" (suffix): dg, rq.
//	blob reference  pk "REF#<content digest>", sk "D#<deployment>#<insert
//	                request id>", "S#<component>#<E|S>#<key>" or "P"
//	                (offloaded payload): at (when written).
//
// Reads inside a transaction are strongly consistent and cached; the plan
// adds the buffered deployment writes to the commit of the same Update:
//
//   - a new deployment is a Put attribute_not_exists(pk) (a failure is a
//     uniqueness violation, core.ErrConflict; ALL_OLD with our request id
//     tells an earlier attempt of the same commit);
//   - a changed deployment (status, components) is a Put of the item as
//     read with the changes, condition rv = :read; an offloaded TOML is
//     kept as it is;
//   - any status change moves the pointer: a Put conditional on the
//     revision read (attribute_not_exists when there was none). Every
//     switch therefore reads the pointer and commits the demotions, the
//     promotion and the pointer in one TransactWriteItems: a single active
//     and a single enqueued deployment, whatever the races (a lost race
//     re-runs fn, which re-reads). get_active/current_deployment read the
//     pointer, then the deployment; the service re-reads if a concurrent
//     switch made them disagree (a View is not a snapshot here);
//   - metadata read as absent is a Put attribute_not_exists(pk): a
//     concurrent insert of the same digest makes fn run again and read it.
//     Metadata beyond the transaction's 100 actions is written before the
//     commit, insert-if-absent (immutable, invisible until a deployment
//     binds it);
//   - a source mapping is a Put conditional on the digest read (or on its
//     absence) plus the Put of the new blob reference and the Delete of the
//     replaced one, in the same transaction.
//
// Files, components and component files are inside the deployment item, so
// a deployment of any number of files is one transaction; the item limit
// (400 KB) bounds it and is reported as core.ErrValidation.
//
// Counts: list_deployment_states reads a sparse GSI on the heads,
//
//	deployments     GSI  dk = "<current deployment>#<T|D>#<bucket>#<shard>"
//	                     ds = "<id>"
//	                     KEYS_ONLY, every head (not with DisableDeploymentCounts)
//
// where the bucket is A while the execution is live and its finished bucket
// of §4.8.1 once it finished (O/E/X: ok / error / execution failure), and
// T/D tells top-level from derived executions. Finished counts are
// Select=COUNT queries, one per bucket, kind and shard; live executions are
// counted from their heads (the A entries, then a BatchGetItem of the
// heads, both eventually consistent), each in its live bucket at `now` (L
// locked, P pending or scheduled, B blocked, Z paused, C cancelling). So a
// count reads in proportion to the deployment's live executions (plus one
// COUNT query per finished bucket, kind and shard), and no Scan is needed.
// The entry moves with the head's current deployment (set by every non-auto
// lock and upgrade), which is exactly docs/spec/semantics.md §8 item 21,
// and when the execution finishes — not on a lock, block, unblock, pause or
// cancellation: +3 WRU per activity (create 1, finish 2: 14 instead of 11
// WRU; it was +5, one entry per bucket moving on every bucket change, before
// the A bucket; see Cost). Entries written before then carry their live
// bucket letter (L, P with ds "<pending time>#<id>", B, Z, C) until the
// head's next write and are still counted with Select=COUNT.
// Options.DisableDeploymentCounts removes the index (counts then fail with
// core.ErrNotImplemented). Like every index read, counts are eventually
// consistent.
//
// Garbage collection (gc_orphan_files: store.Service runs the CAS's
// CollectOrphans with store.Options.GCGrace and asks BlobReferences): a
// blob is deleted only if it was last written more than the grace period
// ago (default one hour) and, checked right before deleting it, no live
// blob reference names it (one strongly consistent Query of REF#<digest>;
// a reference whose ttl has passed is not live).
// The references: deployment files (one PutItem per distinct digest just
// before the insert's transaction, 8 at a time; one that belongs to an
// insert that did not commit — no deployment created by that request id —
// and is older than the grace period is ignored and deleted), source mappings (written and replaced in
// the upsert's transaction, conditional on the digest it replaces) and
// offloaded payloads ("P#<root id>" for an execution tree's, "P" for a
// deployment's TOML or WIT; written by putPayload right after the blob and
// before the commit that refers to it; a tree's reference expires with the
// tree (Retention), a deployment's is never removed, so the payload of a
// commit that then fails is kept until then). Every reference is
// therefore written no later than the item that uses the blob: a writer
// killed between the CAS put and the database write leaves no reference to
// a missing blob.
package dynamo
