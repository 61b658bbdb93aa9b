// Package storetest is the one contract suite every Stela store must pass:
// the storage scenarios of Obelisk's test suites (docs/spec/scenarios.md),
// the edge cases of docs/spec/semantics.md §8, race tests with real goroutines, a
// randomized comparison with a reference model built directly on core's pure
// functions, and a durability hook.
//
// It tests the storage port beside which it sits: each backend's tests pass
// a constructor of a store.Backend, and the suite builds the store.Service
// over it (so the service's decisions run on every backend):
//
//	func TestContract(t *testing.T) {
//		storetest.Run(t, func(t *testing.T, clock core.Clock, blobs core.Cas) store.Backend {
//			return newBackend(t) // closed by the suite through the service
//		})
//	}
//
// Every subtest gets a fresh backend, a SimClock starting at the Unix epoch
// (the backend must use it for every time it reads itself) and a CAS: a
// cas.Dir in t.TempDir(), or RunOptions.NewCas (an S3 emulator, say). The
// service keeps the deployment blobs in that CAS, and a backend that
// offloads payloads should use the same one; so the deployment scenarios
// never lack a CAS and never skip. The garbage-collection scenarios align
// the SimClock with the wall clock (blob modification times come from the
// CAS's own clock); RunOptions.GCGrace is the grace period the service is
// configured with (default one hour). RunDeployments runs only the
// deployment scenarios (e.g. once more with another kind of CAS).
//
// RunWith takes RunOptions (Scale shrinks the race and model sizes for slow
// backends such as DynamoDB Local); RunRestart checks that a durable backend
// keeps every acknowledged write across close and reopen. The randomized
// model test is tuned with -storetest.seeds, -storetest.ops and
// -storetest.seed (replay one failing seed; the failure message prints it).
//
// The package imports package store (the service, the timer sweep
// store.Sweep, the cancellation driver store.DriveCancellations), so tests
// of package store itself must live in package store_test to use it.
//
// # Layout of the suite
//
//   - Scenarios/T0xx_…: one subtest per docs/spec/scenarios.md scenario (areas 1–3 and
//     5–14, plus the area 18 encodings that the store must round-trip). [LS2]
//     scenarios run once per locking strategy. Executor and watcher scenarios
//     (T012, T013, T028, T029, T040–T042) play the executor in the test: lock,
//     then append what it would (the backoff from core.CanBeRetriedAfter,
//     children finished through AppendBatchRespondToParent), with store.Sweep
//     as the watcher. The tracker scenarios T030–T034 are observed through
//     store.DriveCancellations. T010 (diff_proptest) compares random scripts
//     with the model instead of with Postgres.
//   - Scenarios/GapNN_…: the behaviour docs/spec/scenarios.md lists as untested by
//     Obelisk (stale versions, *_with_retries, delays, waits, listing and
//     filters, stubs, upgrades, auto-locking, logs).
//   - Scenarios/EA0x_…: eager dispatch (eager.go, core.EagerLock): children
//     created locked by the create-children write ([Created, Locked]), not
//     lockable by a poll, expiring like any lock, the same locks answered
//     to a retry after a lost answer, nothing written at a wrong version,
//     and only what a lock could take (pinned digest, paused, scheduled later);
//     EA06 the same for a top-level create (core.EagerCreator, eager start),
//     EA07 for a batch of them under one lock (core.EagerBatchCreator).
//   - EdgeCases/E08_NN_…: one or more checks per item 1–28 of docs/spec/semantics.md §8.
//   - Races/…: goroutines racing to lock, append, respond and create.
//   - Deployments/T1xx_…: the storage scenarios of areas 15 and 16
//     (deployments, component metadata, CAS files, gc_orphan_files), and
//     Deployments/DepNN_…: what Obelisk leaves untested there
//     (get_current_deployment, enqueue outcomes, list_deployments paging,
//     every count bucket and include_derived, counts following the current
//     deployment, insert-if-absent metadata and components, WIT lookup,
//     missing_digests order and repeats, file sizes from the CAS, source
//     mappings exact/suffix/ambiguous and replace, the gc grace period, and a
//     writer killed between the CAS put and the database write
//     (docs/spec/reliability.md S4/T5)). See deployments.go.
//   - Paging/P0x_…: list_executions walked page by page (paging.go): over
//     at least 1,000 executions created in bursts sharing one created_at,
//     with ids that do not sort like their creation times, both cursor kinds,
//     both directions and pages of 37 and 100 return every execution exactly
//     once in the order of core/listing.go; a bare created_at cursor keeps
//     its created_at-only meaning. Not scaled below 1,000 by RunOptions.Scale.
//   - Retention/R0x_…: retention of finished execution trees (retention.go),
//     each on a service with its own retention: a finished tree is kept for
//     its period after its last finish and gone for every reader from then
//     on (404, not listed, no logs or backtraces), a child outliving its
//     parent keeps the tree, a running parent keeps its finished children,
//     a scheduled top-level execution is a tree of its own, forever keeps
//     everything, overlapping passes are safe. What is physically left is
//     checked per backend with BuildTree (sqlite, dynamo).
//   - Transfer/X0x_…: moving data between stores (store.Exporter,
//     store.Service.ImportTree, package transfer; transfer.go):
//     BuildDataSet's data set — executions in every state, workflow trees
//     with children, delays, responses, logs, backtraces, 100 KB payloads,
//     deployments with blobs — goes through a stream into the in-memory
//     backend and from there into a fresh backend under test; every
//     store holds the same records (digests), answers every read alike and
//     takes the same next steps (a lock, a child finishing, a sweep).
//     Importing again changes nothing, a destination that moved on is
//     reported (not overwritten), an interrupted import resumes, retention
//     is the destination's, a live source exports consistent trees.
//     RunTransferChain runs the same checks along a chain of backends
//     (package transfer: embedded → DynamoDB Local → embedded).
//   - Model/seed=N: the randomized model test (model.go, modeltest.go).
//
// # Scenarios not ported
//
// Only scenarios that need a WASM/JS engine or a full server are skipped, plus
// the ones outside this suite's scope:
//
//   - T002 initialize_postgres_twice: Postgres provisioning; there is no
//     Postgres backend. (T001, opening twice, is RunRestart's first subtest.)
//   - T024, T025, T026 [E2E]: concurrent gRPC/HTTP cancellation during a
//     follow-submit of WASM workflows. Their storage parts (activity cancel,
//     cancel_delay, responses) are covered by T057/T058, Gap06 and E08_14.
//   - T068, T069 [E2E]: gRPC/HTTP cancel routing. Storage parts: T057–T066.
//   - T070 [E2E]: running cancellable WASM workflow. Its storage path is
//     T070_StorageCancellationDriverFinishesBlockedWorkflowAsCancelled.
//   - T080, T081 [E2E]: replay/advance of JS workflows through stubs.
//     Storage part: Gap10a–c (upsert_stub_response).
//   - T092, T093, T094, T096, T097 [E2E]: component and function listings
//     over the API. Their storage part is T113–T116 and Dep09–Dep13.
//   - T100, T101 [E2E]: logs of real activities. Storage part: T098, Gap13.
//   - T104, T105, T106 [E2E]: backtraces of real workflows and source files.
//     Storage part: T102.
//   - T125–T140 [E2E]: deployment submit validation, WASM/JS deploys and hot
//     redeploys (runtime). Their storage parts: Dep04 (all-or-nothing
//     insert), Dep18 (a repeated submit), T141/Dep11 (missing files).
//   - T143: not in docs/spec/scenarios.md. T144 [E2E] is ported as its storage part
//     (T144_GCDeletesOnlyOrphanBlobs).
//   - T145–T174 [E2E]: server smoke tests (runtime, not storage).
//   - T180 as_date_time overflow: a pure core conversion with no store
//     involvement (core.ScheduleAt.AsTimestamp, tested in package core).
//
// Numbers missing from docs/spec/scenarios.md itself (T003, T007, T011, T015, T019,
// T023, T027, T031, T035, T039, T043, T047, T051, T055, T059, T063, T067,
// T071, T075, T079, T083, T087, T091, T095, T099, T103, T107, T111, T115,
// T119, T123, T175, T179)
// have no scenario to port.
package storetest
