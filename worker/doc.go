// Package worker is Stela's Go SDK: it turns Go functions into durable
// executions. Register activities (plain functions, retried on error) and
// workflows (deterministic orchestrations replayed from their history) on a
// Worker, then Run it against a store.
//
//	w := worker.New(conn, worker.Options{})
//	worker.Activity(w, "demo:hello/greeter.greet", func(ctx context.Context, name string) (string, error) {
//		return "Hello, " + name + "!", nil
//	})
//	worker.Workflow(w, "demo:hello/workflow.greet-twice", func(wf *worker.Context, name string) (string, error) {
//		a, err := worker.Call[string](wf, "demo:hello/greeter.greet", name)
//		if err != nil {
//			return "", err
//		}
//		if err := wf.Sleep(time.Second); err != nil {
//			return "", err
//		}
//		b, err := worker.Call[string](wf, "demo:hello/greeter.greet", a)
//		return b, err
//	})
//	err := w.Run(ctx)
//
// # Transports
//
// A Worker talks to Stela through a Conn (core.WorkerConn, the SDK's one
// executor contract): *client.Client over HTTP (`stela dev`, API Gateway)
// or *store.Service in-process (the embedded store, DynamoDB from a Lambda,
// store/mem in tests). Both implement all of it and run the same code path:
// the engine knows no transport; the client long-polls the locks and
// coalesces the writes of a busy worker into few requests.
//
// # Parameters and results
//
// An execution's params are a JSON array. A function with parameter type P
// receives the array's only element decoded into P (an empty array gives
// P's zero value); callers pass one value (sent as [v]), Args{a, b} for
// several, or nil for none. Results are stored as Obelisk return values,
// {"ok": {"type": <WIT type>, "value": <JSON>}} ({"ok": null} for Unit);
// errors as {"err": {"type": "string", "value": <message>}}.
//
// # Activities
//
// A returned error is retried (TemporarilyFailed, with the retry policy's
// exponential backoff) until retries are exhausted, then recorded as the
// execution's error; Permanent(err) is recorded at once. A panic is retried
// like an error and finally recorded as an execution failure with the panic
// message. The lock's lease is extended while the function runs; its
// context is cancelled when the execution is cancelled (the worker then
// records Finished(cancelled)), when the lease is lost, or at shutdown.
//
// # Workflows
//
// A workflow function runs on its own goroutine and talks to the world
// only through its *Context: Call (a child execution, awaited), JoinSet
// (Submit / SubmitDelay / Next for fan-out and fan-in), Sleep, Now, Random,
// Schedule. Every such call is recorded in the execution's history with
// exactly the events Obelisk's workflow worker writes (JoinSetCreate,
// JoinSetRequest, JoinNext, Persist, Schedule), so any Obelisk-compatible
// tool reads the log. When the workflow waits for a response that has not
// arrived, its events are written, the execution blocks in the store and
// the goroutine is parked in memory; when the response arrives any worker
// may lock the execution: the worker that parked it resumes the goroutine
// (reading only the new responses), any other replays the function from
// the history.
//
// Determinism rules: a workflow must make the same Context calls in the
// same order with the same arguments on every replay. It must not read the
// clock, random sources, the environment, files or the network directly,
// nor start goroutines that call the Context, nor iterate over maps to
// decide what to call; use Now, Random and activities instead. A replay
// that diverges from the history finishes the execution with an execution
// failure of kind nondeterminism_detected naming the first mismatching
// event; it never silently continues. The determinism analyzer (`stela vet`,
// cmd/stela-vet, package analysis/determinism) reports these constructs in
// workflow code before it runs.
//
// The component type of an execution a worker creates (a child, a
// scheduled or submitted execution) is the registered function's, else the
// declared one (Worker.Declare), else the one of the store's current
// deployment; an unknown function is an error (ErrUnknownFunction), never a
// guess. Once a running workflow learns that its execution is cancelled,
// the calls that would record something return an error wrapping
// ErrCancelled and nothing more is written: the store's cancellation driver
// finishes the execution.
//
// # Signals, published state, logs and schedules
//
// WaitSignal / WaitSignalTimeout receive signals a client sends by
// execution id and name (client.Signal), kept when sent before the wait
// and received in order, each once (stub children n:signal/<name>/<k>,
// core.SendSignal). SetState publishes a value under a key for clients
// (client.GetState, WaitState). Logger(ctx) and Context.Logger write
// slog records into the execution's log, a workflow's only when it is not
// replaying. RegisterSchedules and CreateSchedule run a function on a cron
// expression, each tick created once. See docs/worker.md.
//
// # Running
//
// Run long-polls for work until its context is done and then shuts down
// gracefully: a lock the store granted is always run or released (Unlocked),
// never left to expire. RunUntilIdle processes what is pending and returns:
// the unit of a serverless invocation (see package lambdaworker) and of tests
// (package workertest runs workflows against an in-memory store with a
// simulated clock, without a server and without sleeping).
package worker
