package main

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

	{"/v1/execution-id", []string{"GET"}, "api"},
	{"/v1/executions", []string{"GET", "POST"}, "api"},
	{"/v1/executions/{proxy+}", []string{"GET", "PUT"}, "api"},
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
