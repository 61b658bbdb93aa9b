// Package functions is Stela's Lambda transport: handlers that adapt Lambda
// events to the project's transport-agnostic code. HTTP adapts API Gateway
// HTTP API (payload format 2.0) events to the httpapi handler; Timers runs
// the timer sweep and cancellation driver for one EventBridge-scheduled
// invocation; workerpass.Pass (package functions/workerpass, apart so that
// the other functions do not link the worker SDK) runs one pass of a worker
// (package worker) per invocation, scheduled or on demand.
//
// Handlers are methods on small structs whose constructors take the store,
// CAS and options as parameters, so tests drive them with an in-memory store
// and recorded events (functions/<name>/testdata/*.json) through
// lambda.NewHandler(h).Invoke. The Lambda mains (functions/<name>/main.go)
// only wire: functions/app reads the environment once per cold start and
// builds the AWS clients, the DynamoDB-backed store and the S3 CAS.
//
// Every function reports its metrics (package obs) as CloudWatch Embedded
// Metric Format lines on stdout, flushed by Telemetry once per invocation
// (Instrument; the timers function also every 10 s of its minute-long
// loop), and its spans when tracing is configured.
package functions
