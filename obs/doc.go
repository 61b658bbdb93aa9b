// Package obs is Stela's instrumentation layer: one metrics vocabulary
// (Metrics, on a small registry of its own) with two exporters —
// Prometheus text at /metrics (`stela dev`, Metrics.Handler) and CloudWatch
// Embedded Metric Format lines on stdout (the Lambda functions,
// Metrics.WriteEMF, flushed once per invocation) — and OpenTelemetry
// tracing (Tracing, off unless the standard OTEL_* variables configure an
// exporter).
//
// The store (store.Options.Observer), the HTTP handler
// (httpapi.Options.Observer) and the timers loop (timers.Options.Observer)
// report to an Observer; they know nothing of exporters, and neither do
// core or the storage adapters, whose own counters (sqlite and dynamo
// Stats) are read through Metrics.ObserveBackend. DynamoDB throttles and
// failed attempts are counted by an AWS SDK middleware
// (Metrics.DynamoDBMiddleware).
//
// # Vocabulary
//
// Prometheus name (labels) → EMF name [EMF dimensions]:
//
//	stela_executions_created_total               → ExecutionsCreated
//	stela_executions_finished_total (outcome)    → ExecutionsFinished [], [Outcome]
//	stela_lock_grants_total                      → LockGrants
//	stela_lock_batch_size (histogram)            → LockBatchSize
//	stela_store_commit_duration_seconds (op)     → StoreCommitLatency (ms) [Op]
//	stela_store_commits_total (op, result)       → StoreCommits [Result]
//	stela_store_backend_commits_total            → BackendCommits
//	stela_store_retries_total                    → StoreRetries
//	stela_store_resends_total                    → StoreResends
//	stela_store_write_transactions_total         → WriteTransactions
//	stela_dynamodb_throttles_total               → DynamoDBThrottles
//	stela_dynamodb_errors_total (operation, code)→ DynamoDBErrors [Code]
//	stela_timers_passes_total (result)           → SweepPasses [Result]
//	stela_timers_pass_duration_seconds           → SweepPassLatency (ms)
//	stela_timers_delays_fired_total              → DelaysFired
//	stela_timers_locks_expired_total             → LocksExpired
//	stela_timers_skipped_total                   → SweepSkipped
//	stela_timers_cancellations_finished_total    → CancellationsFinished
//	stela_timers_sweep_lag_seconds (gauge)       → SweepLag (s)
//	stela_retention_passes_total (result)        → RetentionPasses [Result]
//	stela_retention_trees_expired_total          → RetentionTreesExpired
//	stela_retention_items_total                  → RetentionItems
//	stela_http_requests_total (route, code)      → HTTPRequests [], [StatusClass]
//	stela_http_request_duration_seconds (route)  → HTTPLatency (ms)
//
// Routes are ServeMux patterns ("GET /v1/executions/{execution_id}"),
// never raw paths, so the label set stays bounded. EMF dimensions are few
// on purpose (each combination of values is a billed CloudWatch metric);
// the other labels are written as properties of the log line, searchable
// with CloudWatch Logs Insights. docs/operations.md explains each metric
// and what to do when its alarm fires.
//
// # Metrics, and why the registry is Stela's own
//
// The registry (registry.go) has what the vocabulary uses and no more:
// counters and histograms with labels, updated with atomics and without
// allocating once a series is resolved, counters and gauges read at
// collection, and a writer of the Prometheus text exposition format 0.0.4
// (TestRegistryWritesPrometheusText reads it back with the Prometheus
// parser). It replaced the Prometheus Go client, whose data model is
// protobuf: linking it put the protobuf runtime in every Lambda function
// for metrics that leave them as EMF lines — 1.9 MB of the `api`
// function (16,056,482 → 14,155,938 bytes, linux/arm64, -s -w). `stela
// dev` still serves the Go runtime and process metrics of that client
// after Stela's (cmd/stela links it; the functions do not), and /metrics
// no longer offers OpenMetrics: Prometheus reads the text format.
//
// # Sweep lag
//
// The sweep lag is now minus the deadline of the oldest due timer (a
// delay, an expired lock) that no sweep has handled. `stela dev` measures
// it whenever /metrics is read (Metrics.SetLagProbe with store.TimerLag),
// so a stopped sweep shows as a rising lag; the Lambda timers function
// reports the largest lag its passes saw (from the timers each pass read,
// no extra query) and nothing when it does not run, which the CloudWatch
// alarm treats as breaching.
//
// # Tracing
//
// With tracing on, each HTTP request is a server span joined to its W3C
// `traceparent`, each store transaction made for it a child span, and an
// execution created by a request stores the request span's context in its
// metadata under Obelisk's "tracing:" keys (package obs/tracemeta), so a
// worker that sends it back continues the execution's trace. With tracing
// off the hooks do not allocate (TestHooksDoNotAllocateWithTracingOff,
// BenchmarkRequestHooks).
//
// # The tracer and the exporter, and why they are Stela's own
//
// Tracing is in every build (every Lambda function) and turned on by the
// environment alone. Spans are made by tracer.go, an implementation of the
// OpenTelemetry trace API (go.opentelemetry.io/otel/trace: the interfaces
// Stela's code and obs/tracemeta use) with head sampling
// (OTEL_TRACES_SAMPLER: always_on, always_off, traceidratio and their
// parentbased_ forms, deciding as the SDK does), span limits, a batch
// processor (OTEL_BSP_*) and the resource (OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES); they are exported by otlp.go: OTLP/HTTP with
// protobuf bodies, the protobuf written by hand after opentelemetry-proto
// (otlp_proto.go) and sent with net/http. NewTracing still takes any
// trace.TracerProvider (the tests pass the OpenTelemetry SDK's).
//
// Measured on the `api` function (scripts/build-lambdas.sh, linux/arm64,
// -s -w), step by step:
//
//	official SDK and exporter (otlptracehttp)     26,542,242 bytes (25.3 MiB)
//	SDK and this exporter                         16,056,482 bytes (15.3 MiB)
//	  then the metrics and the AWS configuration slimmed (below; functions/app):
//	SDK and this exporter                         12,583,074 bytes (12.0 MiB)
//	this tracer and this exporter                 12,058,786 bytes (11.5 MiB)
//	no tracing at all, for comparison             11,796,642 bytes (11.2 MiB)
//
// The official exporter links gRPC and the protobuf runtime (66 gRPC
// packages, through opentelemetry-proto's generated service code) and,
// through them, makes the linker keep every exported method of the types
// it reaches — 3,123 functions of the S3 client instead of 263 — which is
// most of its 10 MB. Then the SDK with this exporter cost 0.79 MB of a
// 12 MiB budget, for generality Stela does not use (pluggable processors,
// samplers and ID generators, global error handling, the
// auto-instrumentation hooks); this tracer with the same exporter costs
// 0.26 MB.
//
// The alternatives were: the exporter only in the functions that need it
// (every function serves traced requests or runs traced commits, so that is
// all of them); and the AWS-native path, Lambda's active tracing and the
// ADOT collector layer — active tracing records Lambda's own segments
// (init, invocation) but none of Stela's request and commit spans or the
// W3C trace an execution carries, and the ADOT layer is a collector
// extension that still needs an in-process OTLP exporter to receive
// Stela's spans (at http://localhost:4318): with this exporter both work
// (docs/operations.md, "On AWS").
//
// What keeps them honest: the exporter's output decoded with
// opentelemetry-proto's generated types must equal, field for field, what
// the official exporter sends for the same spans
// (TestOTLPEncodingMatchesTheOfficialExporter); the ratio sampler must
// decide as the SDK's for the same trace ids (TestSamplerDecidesAsTheSDK);
// TestTracingFromEnvExportsToTheCollector runs the whole path from the
// environment to a collector. The SDK and the official exporter are test
// dependencies only. The exporter sends http/protobuf only; gRPC and
// OTLP/JSON are refused at start.
package obs
