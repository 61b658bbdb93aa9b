// Package client is the Go client of Stela's HTTP API: every public route
// (submit, status, result, events, responses, logs, listings, pause, cancel,
// stub, delays, backtraces, components, deployments) and every worker route
// (/v1/worker/…), with core's types in and out.
//
//	c, err := client.New("http://127.0.0.1:8080", client.WithToken(token))
//	id, err := c.SubmitNew(ctx, client.SubmitRequest{FFQN: ffqn, Params: params})
//	rv, err := c.WaitForFinishedResult(ctx, id)
//
// # Same methods as the store
//
// The worker methods have the names and signatures of core.DbConnection's
// (LockPendingByFFQNs, LockOne, Append, AppendBatch,
// AppendBatchCreateNewExecution, AppendBatchRespondToParent, Get,
// SubscribeToNextResponses, WaitForFinishedResult, Create, …) and return the
// same errors, so code written against the in-process store (*store.Service)
// runs unchanged over HTTP. Both *Client and *store.Service implement
// core.WorkerConn, the SDK's executor contract (package worker runs on
// either): its LockPending is a long poll here (LockPendingWait), Cancel and
// CancelDelay the public cancel routes, FunctionComponent two reads of the
// deployment. The other additions are the public routes' methods.
//
// # Coalesced writes
//
// The version-guarded writes Append, AppendBatch and
// AppendBatchRespondToParent go alone, by their own route, while fewer than
// 2 of the client's write requests are on the wire; the ones that arrive
// meanwhile queue, and each request that returns takes the queue along (up
// to 8 writes) as one POST /v1/worker/append-batch/many (AppendMany); 8
// queued writes start a request of their own, up to 8 in flight. A
// busy worker thus pays one request for many executions' writes; each
// caller still gets the outcome its own route would have answered (a server
// without the many route is asked one write at a time). A write on the wire
// is not cancelled with its caller's context, whose deadline still bounds
// it: the caller stops waiting, and the write's outcome is unknown to it,
// as after a timeout.
//
// Errors: a non-2xx answer is an *Error (Status, Message) that unwraps to the
// core error the server mapped to that status — core.ErrNotFound (404),
// *core.VersionConflictError, core.ErrAlreadyFinished,
// *core.UnlockedCannotBeAppendedError, core.ErrConflict (409),
// *core.IllegalStateError (422), *core.ValidationError (400, 413, and 422 for a
// body the server could not decode), core.ErrNotImplemented (501) — so
// errors.Is / errors.As work as in-process. 401/403 unwrap to
// ErrUnauthorized, 429 and 502–504 to ErrUnavailable (504 also to
// core.ErrTimeout); IsRetryable reports the latter.
//
// Waits (SubscribeToNextResponses, WaitForFinishedResult, LockPendingWait)
// are long polls: each request asks the server to wait until shortly before
// ctx's deadline (at most the server's follow bound, and MaxWait per request)
// and the client asks again until ctx is done; then the error wraps
// core.ErrTimeout, as in-process.
//
// # Retries
//
// Every request is retried with exponential backoff and full jitter
// (RetryPolicy) when it certainly did not reach the store: the connection
// could not be made, or the answer is 429. A refused connection (a server
// restarting) is tried again for RetryPolicy.Refused (10 s by default)
// whatever MaxAttempts says. Requests that are safe to repeat
// are also retried after ambiguous failures (a network error once the request
// may have been sent, 502, 503, 504):
//
//   - every GET, PUT /v1/executions/{id} (submit with an id is idempotent),
//     stub, delay cancel/pause/unpause, cancel (a repeat reports
//     core.CancelAlreadyCancelling), backtraces (insert-if-absent), the sweep
//     (level-triggered), stub-response (idempotent on the server);
//   - the version-guarded writes (Append, AppendBatch,
//     AppendBatchCreateNewExecution, AppendBatchRespondToParent,
//     AppendBatchWithDelayResponse): if an ambiguous attempt committed, the
//     retry answers 409 (version conflict, or already finished). The client
//     then reads the events at the batch's versions back and compares them
//     with the batch (created_at and event, in core's JSON): equal means the
//     write was this one and the call succeeds with the version it would have
//     returned; otherwise the 409 is returned. Create is resolved the same way
//     (an existing id whose creation request equals the one sent).
//     AppendBatchCreateNewExecutionLocked (eager dispatch) needs no read-back:
//     the server answers the retry of a committed write with the same next
//     version and the same locks (docs/http-api.md §4.1a).
//
// Do, the raw escape hatch, retries GET and HEAD as idempotent and other
// methods only when they were certainly not processed.
//
// Not retried after an ambiguous failure, the error is returned: the lock
// routes (a lock whose answer was lost leaves those executions locked by this
// executor and run until lock_expires_at, when the timers sweep unlocks
// them), pause and unpause (a repeat would be an illegal state), logs (a
// repeat would duplicate rows) and POST routes in general.
//
// # Auth
//
// WithToken sends a bearer token (`stela dev --token`, an API Gateway JWT
// authorizer). WithSigner signs every attempt instead: package client/sigv4
// signs with AWS Signature Version 4 for an IAM-authorised API Gateway
// (service execute-api), hashing the body, with credentials from the AWS
// SDK's default chain (sigv4.WithDefaultCredentials), an aws.Config or any
// aws.CredentialsProvider; only programs that import it link the AWS SDK.
// WithFunctionURLs sends the
// worker lock and write routes to the Lambda function URLs of a deployment's
// lock and append functions instead (no API Gateway request to pay), signed
// for service lambda (docs/deploy.md).
package client
