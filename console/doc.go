// Package console is Stela's web console: a small browser app — plain
// HTML, CSS and ES modules, no framework, no bundler, no build step —
// embedded in the binary with go:embed and served by httpapi's handler, so
// `stela dev` and the api Lambda both serve it at /console/ (GET / redirects
// there).
//
// The app reads and acts only through the public HTTP API (docs/http-api.md)
// with the browser's fetch, sending `Authorization: Bearer <token>` when the
// server asked for one (the token is kept in sessionStorage). The static
// files themselves are served without authorization: they hold no data, and
// the login prompt must load before a token is known. API routes stay
// protected by the handler's Authorizer.
//
// Security: user data (ffqns, params, results, logs, errors) is only ever
// inserted as text (textContent and DOM APIs, never innerHTML); every
// response carries a strict Content-Security-Policy (no inline script, no
// eval, Trusted Types required, no framing) and X-Content-Type-Options:
// nosniff. The console's own tests check both, and the browser tests in
// e2e/ render an XSS payload and assert it stays inert.
//
// docs/console.md describes the pages, deep links and auth.
package console
