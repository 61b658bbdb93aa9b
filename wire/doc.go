// Package wire is Stela's HTTP contract: the paths of the routes, the JSON
// bodies of the worker routes and the typed answers of the public ones,
// their limits, and the conversions between those wire forms and core's
// types. The server (package httpapi) serves it and the Go client (package
// client) calls it, so both sides of the contract are written once and a
// program that only calls Stela links none of the server.
//
// It imports only core and the standard library. How a request is
// decoded and checked (strict JSON, required fields, event-time bounds)
// and which status an error answers are the server's business (httpapi);
// docs/http-api.md is the prose reference, GET /openapi.json the schema.
package wire
