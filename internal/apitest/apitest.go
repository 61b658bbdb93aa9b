// Package apitest serves a store's HTTP API to a test: the worker SDK, the
// CLI and the examples run their scenarios over HTTP against a store that
// package backendtest opened. It is apart from backendtest so that
// httpapi's own tests can open their stores with backendtest (which must
// therefore not import httpapi).
package apitest

import (
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stela-dev/stela/httpapi"
	"github.com/stela-dev/stela/store"
)

// Server serves the HTTP API of svc (no auth, short long polls) on a local
// port and returns its base URL.
func Server(t testing.TB, svc *store.Service) string {
	t.Helper()
	return ServerWith(t, svc, nil)
}

// ServerWith is Server with its options changed by tune first (nil: none).
func ServerWith(t testing.TB, svc *store.Service, tune func(*httpapi.Options)) string {
	t.Helper()
	opts := httpapi.Options{Authorizer: httpapi.AllowAll(), FollowWait: 2 * time.Second,
		Logger: slog.New(slog.DiscardHandler)}
	if tune != nil {
		tune(&opts)
	}
	h := httpapi.New(svc, nil, opts)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}
