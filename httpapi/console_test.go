package httpapi

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stela-dev/stela/console"
)

// The console's files are served without the token (the login prompt must
// load first); every API route stays behind the Authorizer.
func TestConsoleIsServedWithoutTheTokenAndTheAPIIsNot(t *testing.T) {
	buf := &syncBuffer{}
	e := newEnv(t, newMemDB(t), func(o *Options) {
		o.Authorizer = BearerToken("s3cret")
		o.Logger = slog.New(slog.NewJSONHandler(buf, nil))
	})
	for _, tc := range []struct {
		path   string
		status int
		ct     string
	}{
		{"/", http.StatusFound, ""},
		{"/console/", http.StatusOK, "text/html; charset=utf-8"},
		{"/console/executions/E_01KJ3ZC4Q5W8X7V6T5R4Q3P2N1", http.StatusOK, "text/html; charset=utf-8"},
		{"/console/static/app.js", http.StatusOK, "text/javascript; charset=utf-8"},
		{"/console/static/style.css", http.StatusOK, "text/css; charset=utf-8"},
		// Dot segments stay inside the console: the app, never the API.
		{"/console/../v1/executions", http.StatusOK, "text/html; charset=utf-8"},
	} {
		r := e.do("GET", tc.path, nil)
		if r.Code != tc.status || (tc.ct != "" && r.Header().Get("Content-Type") != tc.ct) {
			t.Errorf("GET %s without a token: %d %q, want %d %q", tc.path, r.Code, r.Header().Get("Content-Type"), tc.status, tc.ct)
		}
		if !strings.Contains(r.Header().Get("Content-Security-Policy"), "frame-ancestors 'none'") || r.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: security headers missing: %v", tc.path, r.Header())
		}
		if strings.Contains(r.Body.String(), "E_01") {
			t.Errorf("GET %s: console answer holds data: %s", tc.path, r.Body)
		}
	}
	for _, path := range []string{"/v1/executions", "/v1/execution-counts", "/openapi.json", "/v1/deployments", "/consoles", "/favicon.ico"} {
		if r := e.do("GET", path, nil); r.Code != http.StatusUnauthorized {
			t.Errorf("GET %s without a token: %d, want 401", path, r.Code)
		}
	}
	if r := e.do("GET", "/v1/executions", nil, "Authorization", "Bearer s3cret"); r.Code != http.StatusOK {
		t.Errorf("GET /v1/executions with the token: %d", r.Code)
	}
	t.Run("AccessLogNamesTheConsoleRoute", func(t *testing.T) {
		found := false
		for _, l := range logLines(t, buf) {
			if l["path"] == "/console/static/app.js" {
				found = l["route"] == "console" && l["status"] == float64(200) && l["request_id"] != ""
			}
		}
		if !found {
			t.Errorf("no access log line with route console:\n%s", buf)
		}
	})
}

// The console is the same handler on every deployment: a nil Authorizer
// (fail closed) still serves it, and still refuses the API.
func TestConsoleWithTheFailClosedAuthorizer(t *testing.T) {
	h := New(newMemDB(t), nil, Options{})
	for path, want := range map[string]int{"/console/": http.StatusOK, "/v1/executions": http.StatusUnauthorized} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != want {
			t.Errorf("GET %s: %d, want %d", path, rec.Code, want)
		}
	}
	if !console.Owns("/") {
		t.Fatal("the console no longer owns /")
	}
}
