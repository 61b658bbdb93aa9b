// Package determinism is a static analyzer (golang.org/x/tools/go/analysis)
// that reports what breaks the deterministic replay of Stela workflows
// before the code runs. A workflow is re-executed from its history whenever
// it resumes on a worker that did not keep it in memory; a replay that
// diverges from the history ends the execution as
// Finished(NondeterminismDetected).
//
// Run it as `stela vet ./...`, as `stela-vet ./...` (cmd/stela-vet), as
// `go vet -vettool=$(which stela-vet) ./...`, or in golangci-lint (package
// determinism/golangci). Every way exits non-zero on findings.
//
// # Workflow code
//
// Workflow code is every function registered with worker.Workflow and every
// function that takes a *worker.Context (docs/worker.md: a workflow talks to
// the world only through wf), wherever it is registered, plus everything
// they call in the same module: functions, methods, function and method
// values, function literals and the initializers of the package variables
// they read. Within a package the analyzer builds the call graph; across
// packages of the module each exported function, method and variable
// carries a fact with what it breaks (its first eight findings). Calls
// through interfaces and into other modules are not followed; the SDK's
// own packages are the deterministic API. A function registered with
// worker.Activity (or a typed handle's ActivityFunc.Register), and what only
// activities call, is not workflow code; WorkflowFunc.Register registers a
// workflow as worker.Workflow does.
//
// # Rules
//
// Each finding is reported at its line, with the chain from the workflow
// ("in workflow "ffqn" (F) via helper → format"), why it breaks replay and
// what to use instead; its category is the rule's name:
//
//	clock         time.Now, time.Since, time.Until                  → wf.Now()
//	sleep         time.Sleep                                         → wf.Sleep, wf.SleepUntil
//	timer         time.After, AfterFunc, NewTimer, NewTicker, Tick   → wf.Sleep, js.SubmitDelay in a join set
//	random        math/rand and math/rand/v2 globals, crypto/rand    → wf.Random, wf.RandomString
//	goroutine     go statements                                      → children in a join set
//	select        select statements                                  → js.Next on a join set
//	channel       sends, receives, range over a channel              → worker.Call, a join set
//	maprange      range over a map, maps.Keys/Values/All             → slices.Sorted(maps.Keys(m))
//	env           os.Getenv, os.Args, os/exec, os/user, syscall …    → an activity, or the params
//	file          os file functions and *os.File, ioutil, Glob/Walk  → an activity
//	network       net, net/http clients and servers, database/sql    → an activity
//	context       context.Background, context.TODO                   → an activity
//	global        package variables assigned after initialization    → params, an activity, a constant
//	sync          sync and sync/atomic                               → no lock; a join set
//	activity-api  worker.New, worker.Await, Worker.Submit/Run/…,     → worker.Call, js.Submit,
//	              a handle's Start/Await, the Stela client              wf.Schedule
//
// A generator made with rand.New from a fixed seed is deterministic and not
// reported. A range over a map whose body only appends the key or value to
// a slice that a later statement sorts is not reported either. A package
// variable is mutable when some code of the package (or of the package
// using it) assigns it, increments it, takes its address, calls a pointer
// method on it, or deletes from or clears it, outside init functions; a
// variable only initialized is read freely.
//
// # Opt-out
//
// A reviewed line carries the comment
//
//	//stela:nondeterministic-ok <reason>
//
// at its end, or alone on the line above. Nothing on that line is
// reported, and calls made on it are not followed. The reason is
// mandatory: the comment without one is itself reported and ignored.
package determinism
