// Package httpapi is Stela's whole HTTP API as one http.Handler: the
// storage routes of Obelisk's web API v1 (same paths, parameters, JSON
// shapes, content negotiation and status codes, with the deliberate
// differences below), Stela's worker routes under /v1/worker/ that expose
// the executor side of the store to out-of-process workers, and
// GET /openapi.json, plus the web console (package console) at /console/
// (GET / redirects there). The local dev server serves it directly; the
// Lambda behind API Gateway (HTTP API) serves it through
// aws-lambda-go-api-proxy.
//
// The console's static files are served before authorization (they hold no
// data; the app asks for the token and sends it on its API calls); every
// other path goes through Options.Authorizer. Besides Obelisk's routes, the
// console uses two read-only Stela extensions: the `state` filter of
// GET /v1/executions and GET /v1/execution-counts (counts per state of the
// newest matching executions, one bounded read).
//
// One route table (routes.go) registers every handler on a net/http
// ServeMux and generates the OpenAPI 3.1 document, so the two cannot drift;
// docs/http-api.md at the repository root is the prose reference.
//
// # Representations
//
// JSON bodies of the public routes are pretty-printed with
// core.MarshalJSONIndent (serde's to_string_pretty, as Obelisk's API); the
// worker routes answer compact JSON (core.MarshalJSON), which only programs
// read. Routes negotiate Accept between application/json and
// text/plain; a missing Accept or */* gives the route's default (text for
// /v1/execution-id, /v1/deployment-id and …/backtrace/source, JSON
// elsewhere); an Accept naming neither gives 406. The retval, stub and
// worker routes are JSON only, the WIT route text only, /v1/files raw bytes.
// Errors are {"err": "<message>"} (or the bare message as text), success
// messages {"ok": "<message>"}. Unknown paths answer 404 {"err":"not found"}
// and wrong methods 405 {"err":"method not allowed"} with Allow — JSON even
// where axum answered with plain text. Only the 401 keeps Obelisk's plain
// text body `missing or invalid API token` (with WWW-Authenticate: Bearer).
//
// # Error mapping
//
// Core errors are mapped once, at the edge (errorStatus in respond.go):
//
//	condition                                           status  message
//	core.ErrNotFound                                    404     not found (some routes name the thing: "deployment not found", …)
//	*core.ValidationError, core.ErrValidation           400     the reason, verbatim          (Obelisk: 422)
//	*core.IllegalStateError                             422     the reason, verbatim          (as Obelisk)
//	*core.VersionConflictError                          409     version conflict: expected: N, got: M   (Obelisk: 500)
//	*core.UnlockedCannotBeAppendedError                 409     illegal state: `Unlocked` cannot be appended in state S (Obelisk: 500)
//	core.ErrAlreadyFinished                             409     already finished              (Obelisk: 500)
//	core.ErrConflict, core.ErrStubConflict              409     conflict (submit: execution already exists with the same id and different parameters)
//	core.ErrNotImplemented                              501     not implemented
//	core.ErrTimeout, context.DeadlineExceeded           504     timed out
//	core.ErrClosed                                      503     database error
//	core.ErrUnavailable (store.Retry gave up)           503     temporarily unavailable, retry later (with Retry-After: 1)
//	request body over Options.MaxBodyBytes              413     request body too large
//	body Content-Type is not application/json           415     expected request with `Content-Type: application/json`
//	malformed, empty, trailing or too deep (>64) JSON,
//	  not UTF-8, lone surrogate escape, duplicate key    400     invalid JSON: … / missing request body
//	body of the wrong shape, unknown top-level field,
//	  missing required field                            422     invalid request body: …
//	bad path identifier                                 400     invalid execution id "<input>": <reason> (delay id, deployment id, digest alike)
//	bad query parameter                                 400     invalid query parameter `<name>`: …
//	malformed request line (%zz in the path), bad
//	  header — rejected by net/http before routing      400     malformed request: … (JSONErrorsListener)
//	anything else                                       500     internal server error (logged at ERROR)
//
// # Deliberate differences from Obelisk
//
//   - Pausing or unpausing a finished execution, version conflicts and
//     `Unlocked` rejections are 409 (Obelisk: 500 "database error");
//     ErrValidation is 400 (Obelisk: 422).
//   - Bodies are strict: invalid UTF-8, lone surrogate escapes and duplicate
//     keys at any depth, params and results included, are 400 — nothing a
//     serde_json client could fail to read is ever stored.
//   - The lock-pending routes answer 400 "invalid expiry date" for a
//     lock_expires_at not after created_at even when nothing is pending
//     (Obelisk: [] then).
//   - follow=true is a bounded long poll (Options.FollowWait, default 20 s,
//     at most 29 s for API Gateway), not a stream. Submit with follow
//     returns the RetVal with 201/200 when the execution finishes in time,
//     else 202 {"ok":"<id>"} with Location: /v1/executions/<id> and
//     Retry-After: 0 (poll GET Location?follow=true). The retval route
//     returns 425 {"err":"not finished yet"} with Retry-After when the bound
//     elapses.
//   - Submit resolves the ffqn among the submittable exports of the current
//     deployment in storage (GetCurrentDeployment); unknown → 404 "ffqn not
//     found". With no deployment in storage (ErrNotFound, or a backend
//     answering ErrNotImplemented) it runs in unmanaged mode: component
//     {type: body.component_type or "activity", name "", digest sha256:0…0},
//     deployment Dep_00000000000000000000000000. Params are not type-checked
//     against WIT (there is no engine); the -schedule extension's schedule-at
//     parameter is interpreted. The submit body is strict (unknown fields 422).
//   - The stub body is the storage return value (core.ReturnValue JSON:
//     {"ok":{"type":…,"value":…}|null}, {"err":…} or {"execution_failure":…}),
//     not Obelisk's untyped value (without WIT no type is known); the target
//     must be a derived id of an activity_stub execution, else 404
//     "function not found".
//   - Routes that need the engine (replay, advance, backtrace/persist,
//     functions, functions/wit, POST deployments, deployments/switch) answer
//     501. Upgrade without skip_determinism_check is checked by an SDK
//     worker of the new digest (the built-in core.UpgradeCheckFFQN, waited
//     for up to Options.UpgradeCheckWait).
//   - `length` is clamped to 100 on every listing (Obelisk: u16, logs 200).
//   - Text renderings of events and responses show the compact JSON of the
//     payload instead of Obelisk's Display output.
//
// Platform limit: ids whose join set names contain '/' (allowed by the id
// grammar) must be sent percent-encoded (%2F) in paths. The dev server
// routes them, but API Gateway HTTP APIs decode rawPath before the Lambda
// sees it, so such ids are unreachable there (404).
//
// # Worker routes
//
// The /v1/worker/ bodies mirror the store methods' parameters in snake_case
// using core's JSON (wire.LockPendingBody, wire.AppendBatchBody, … in worker.go are the
// contract). Server-owned times (created_at, current_time) default to the
// handler clock. Batches are capped (wire.MaxLockBatch, wire.MaxAppendBatch, …), and
// wait_ms long polls are clamped to FollowWait. A lock with skip_history
// answers without the history and responses, which the history route
// (ReadHistory) returns from a version and after a cursor; the create and
// result routes serve core's Create and WaitForFinishedResult. Package client
// is the Go client of all of it, with core.DbConnection's method names. The
// OpenAPI document types every body and answer (openapi_types.go).
//
// # Logs
//
// Every request gets a request id (a sane X-Request-Id header, else a
// generated one, echoed in the response) and one structured access-log line
// with request_id, route, status, duration and — when the request names an
// execution — execution_id. Server errors are logged once, at the edge.
package httpapi
