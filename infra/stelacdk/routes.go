package stelacdk

// apiRoute sends the requests matching Path (API Gateway syntax: {name} is one
// segment, {proxy+} is the rest of the path) and one of Methods to Function.
// API Gateway picks the most specific route, so /v1/worker/lock/{proxy+}
// wins over /v1/worker/{proxy+}. Every route gets the stack's authorizer.
type apiRoute struct {
	Path     string
	Methods  []string
	Function string
}

// apiRoutes covers every route of httpapi's route table (the test
// TestEveryHTTPAPIRouteIsDeployed checks this against its OpenAPI document).
// Prefix routes keep the list short and stable as httpapi grows; the
// handler itself answers 404/405 for anything it does not serve.
var apiRoutes = []apiRoute{
	{"/openapi.json", []string{"GET"}, "api"},
	// Health probes (httpapi.HealthzPath, ReadyzPath): behind the stack's
	// authorizer like every route; the handler itself needs no token.
	{"/healthz", []string{"GET"}, "api"},
	{"/readyz", []string{"GET"}, "api"},

	{"/v1/execution-id", []string{"GET"}, "api"},
	{"/v1/execution-counts", []string{"GET"}, "api"},
	{"/v1/executions", []string{"GET", "POST"}, "api"},
	{"/v1/executions/{proxy+}", []string{"GET", "PUT", "POST"}, "api"}, // POST: signals (docs/http-api.md §3.3a)
	{"/v1/delays/{proxy+}", []string{"PUT"}, "api"},

	{"/v1/deployment-id", []string{"GET"}, "api"},
	{"/v1/deployments", []string{"GET", "POST"}, "api"},
	{"/v1/deployments/{proxy+}", []string{"GET", "PUT"}, "api"},
	{"/v1/components", []string{"GET"}, "api"},
	{"/v1/components/{proxy+}", []string{"GET"}, "api"},
	{"/v1/functions", []string{"GET"}, "api"},
	{"/v1/functions/{proxy+}", []string{"GET"}, "api"},
	{"/v1/files/{digest}", []string{"GET"}, "api"},

	// Worker routes: lock and the writes (functions.LockRoutes and
	// functions.AppendRoutes) have their own functions; the worker reads,
	// expired-timers, cancelling and sweep are served by api.
	{"/v1/worker/lock/{proxy+}", []string{"POST"}, "lock"},
	{"/v1/worker/append", []string{"POST"}, "append"},
	{"/v1/worker/append-batch", []string{"POST"}, "append"},
	{"/v1/worker/append-batch/{proxy+}", []string{"POST"}, "append"},
	{"/v1/worker/stub-response", []string{"POST"}, "append"},
	{"/v1/worker/logs", []string{"POST"}, "append"},
	{"/v1/worker/backtraces", []string{"POST"}, "append"},
	{"/v1/worker/{proxy+}", []string{"GET", "POST"}, "api"},
}

// consoleRoutes serve the web console's static files (package console: the
// app at /console/…, a redirect at /) from the api function. They carry no
// data; the console reads everything through apiRoutes.
//
// With the IAM authorizer they get it too, like every route: a browser
// cannot sign requests with SigV4, so the console is then usable only
// through a signing proxy (or locally with `stela dev`). With a JWT
// authorizer they are public (no authorizer): a browser navigation cannot
// carry a bearer token, so the page must load first; it then asks for the
// JWT and sends it as `Authorization: Bearer` on every API call, which the
// JWT authorizer checks (docs/console.md).
var consoleRoutes = []apiRoute{
	{"/", []string{"GET"}, "api"},
	{"/console", []string{"GET"}, "api"},
	{"/console/{proxy+}", []string{"GET"}, "api"},
}
