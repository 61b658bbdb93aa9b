package console

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, method, path string, hdr ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, req)
	return rec
}

func TestServing(t *testing.T) {
	for _, tc := range []struct {
		method, path string
		status       int
		contentType  string
		body         string // a substring of the body
		location     string
	}{
		{"GET", "/", http.StatusFound, "", "", Prefix},
		{"GET", "/console", http.StatusMovedPermanently, "", "", Prefix},
		{"GET", "/console/", http.StatusOK, "text/html; charset=utf-8", `<script type="module" src="/console/static/app.js">`, ""},
		// Deep links: every page path answers the app, which routes in the browser.
		{"GET", "/console/executions/E_01KJ3ZC4Q5W8X7V6T5R4Q3P2N1.g:1_1", http.StatusOK, "text/html; charset=utf-8", "<title>Stela console</title>", ""},
		{"GET", "/console/executions/E_01KJ3ZC4Q5W8X7V6T5R4Q3P2N1.n:a%2Fb_1", http.StatusOK, "text/html; charset=utf-8", "<title>Stela console</title>", ""},
		{"GET", "/console/deployments/Dep_01KJ3ZC4Q5W8X7V6T5R4Q3P2N1?x=1", http.StatusOK, "text/html; charset=utf-8", "<title>Stela console</title>", ""},
		{"GET", "/console/submit", http.StatusOK, "text/html; charset=utf-8", "<title>Stela console</title>", ""},
		{"GET", "/console/static/app.js", http.StatusOK, "text/javascript; charset=utf-8", "import ", ""},
		{"GET", "/console/static/style.css", http.StatusOK, "text/css; charset=utf-8", ":root", ""},
		{"GET", "/console/static/favicon.svg", http.StatusOK, "image/svg+xml", "<svg", ""},
		{"HEAD", "/console/static/app.js", http.StatusOK, "text/javascript; charset=utf-8", "", ""},
		// A missing file is a 404, not the app (a script tag must never get HTML).
		{"GET", "/console/static/nope.js", http.StatusNotFound, "application/json", `"err": "not found"`, ""},
		{"GET", "/console/static/", http.StatusNotFound, "application/json", `"err": "not found"`, ""},
		{"GET", "/console/static/../index.html", http.StatusNotFound, "application/json", "", ""},
		{"POST", "/console/", http.StatusMethodNotAllowed, "application/json", `"err": "method not allowed"`, ""},
		{"PUT", "/console/static/app.js", http.StatusMethodNotAllowed, "application/json", "", ""},
		{"DELETE", "/", http.StatusMethodNotAllowed, "application/json", "", ""},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			rec := get(t, tc.method, tc.path)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d; body %s", rec.Code, tc.status, rec.Body)
			}
			if tc.contentType != "" && rec.Header().Get("Content-Type") != tc.contentType {
				t.Errorf("Content-Type %q, want %q", rec.Header().Get("Content-Type"), tc.contentType)
			}
			if !strings.Contains(rec.Body.String(), tc.body) {
				t.Errorf("body lacks %q:\n%s", tc.body, rec.Body)
			}
			if tc.location != "" && rec.Header().Get("Location") != tc.location {
				t.Errorf("Location %q, want %q", rec.Header().Get("Location"), tc.location)
			}
			if tc.status == http.StatusMethodNotAllowed && rec.Header().Get("Allow") != "GET, HEAD" {
				t.Errorf("Allow %q", rec.Header().Get("Allow"))
			}
			if tc.method == "HEAD" && rec.Body.Len() != 0 {
				t.Errorf("HEAD has a body")
			}
			// Every answer, errors and redirects included, carries the security headers.
			wantHeaders(t, rec.Header())
		})
	}
}

func wantHeaders(t *testing.T, h http.Header) {
	t.Helper()
	csp := h.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'self'", "script-src 'self'", "style-src 'self'", "object-src 'none'",
		"frame-ancestors 'none'", "base-uri 'none'", "require-trusted-types-for 'script'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	for _, bad := range []string{"unsafe-inline", "unsafe-eval", "*", "http:", "https:", "data: 'self'; script"} {
		if strings.Contains(csp, bad) {
			t.Errorf("CSP %q allows %q", csp, bad)
		}
	}
	if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("X-Frame-Options") != "DENY" || h.Get("Referrer-Policy") != "no-referrer" {
		t.Errorf("headers %v", h)
	}
}

func TestRevalidatesByETag(t *testing.T) {
	rec := get(t, "GET", "/console/static/app.js")
	etag := rec.Header().Get("ETag")
	if etag == "" || rec.Header().Get("Cache-Control") != "no-cache" {
		t.Fatalf("ETag %q, Cache-Control %q", etag, rec.Header().Get("Cache-Control"))
	}
	if rec := get(t, "GET", "/console/static/app.js", "If-None-Match", etag); rec.Code != http.StatusNotModified {
		t.Fatalf("If-None-Match: status %d, want 304", rec.Code)
	}
	if rec := get(t, "GET", "/console/executions/x", "If-None-Match", files["index.html"].etag); rec.Code != http.StatusNotModified {
		t.Fatalf("deep link revalidation: status %d, want 304", rec.Code)
	}
}

func TestOwns(t *testing.T) {
	for path, want := range map[string]bool{
		"/": true, "/console": true, "/console/": true, "/console/static/app.js": true, "/console/executions/E_x": true,
		"/consoles": false, "/v1/executions": false, "/openapi.json": false, "/v1/console/": false, "": false,
	} {
		if got := Owns(path); got != want {
			t.Errorf("Owns(%q) = %v, want %v", path, got, want)
		}
	}
}

// The app must never turn data into markup: no HTML sinks, no eval, no
// inline script or style, nothing loaded from another origin.
func TestAssetsInsertNoMarkupAndLoadNothingElsewhere(t *testing.T) {
	if len(files) < 8 {
		t.Fatalf("only %d embedded files", len(files))
	}
	sinks := regexp.MustCompile(`\.innerHTML|\.outerHTML|insertAdjacentHTML|document\.write|\beval\s*\(|new\s+Function|createContextualFragment|DOMParser|srcdoc|setTimeout\(\s*['"\x60]|setInterval\(\s*['"\x60]|javascript:`)
	remote := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	imports := regexp.MustCompile(`(?m)^import .* from '\./([a-z]+\.js)';$`)
	for name, f := range files {
		body := string(f.body)
		if loc := sinks.FindStringIndex(body); loc != nil {
			t.Errorf("%s uses an HTML/eval sink: %q", name, body[loc[0]:loc[1]])
		}
		if loc := remote.FindStringIndex(body); loc != nil && !strings.HasPrefix(body[loc[0]:], "http://www.w3.org/2000/svg") {
			t.Errorf("%s refers to another origin: %q", name, body[loc[0]:loc[1]])
		}
		for _, m := range imports.FindAllStringSubmatch(body, -1) {
			if _, ok := files[m[1]]; !ok {
				t.Errorf("%s imports %s, which is not embedded", name, m[1])
			}
		}
	}
	html := string(files["index.html"].body)
	for _, m := range regexp.MustCompile(`(?s)<script([^>]*)>(.*?)</script>`).FindAllStringSubmatch(html, -1) {
		if !strings.Contains(m[1], "src=") || strings.TrimSpace(m[2]) != "" {
			t.Errorf("index.html has an inline script: %q", m[0])
		}
	}
	for _, re := range []string{`\son[a-z]+\s*=`, `<style`, `\sstyle\s*=`} {
		if m := regexp.MustCompile(re).FindString(html); m != "" {
			t.Errorf("index.html has an inline handler or style: %q", m)
		}
	}
}

func TestEveryFileHasItsContentType(t *testing.T) {
	for name, f := range files {
		if f.contentType == "" || f.etag == "" {
			t.Errorf("%s: content type %q, etag %q", name, f.contentType, f.etag)
		}
	}
	for _, name := range []string{"index.html", "app.js", "api.js", "dom.js", "list.js", "execution.js", "style.css"} {
		if _, ok := files[name]; !ok {
			t.Errorf("%s is not embedded", name)
		}
	}
}

// TestUnsatisfiableRangeIsJSON (issue 24 item 7): a Range beyond a file
// answers 416 in the API's error shape, not http.ServeContent's text/plain;
// a satisfiable one is still served partially.
func TestUnsatisfiableRangeIsJSON(t *testing.T) {
	for _, path := range []string{"/console/", "/console/static/app.js"} {
		rec := get(t, "GET", path, "Range", "bytes=100000000-")
		if rec.Code != http.StatusRequestedRangeNotSatisfiable || rec.Header().Get("Content-Type") != "application/json" ||
			!strings.HasPrefix(rec.Body.String(), "{\n  \"err\": \"range not satisfiable: ") {
			t.Fatalf("GET %s Range beyond the file: %d %q %q", path, rec.Code, rec.Header().Get("Content-Type"), rec.Body.String())
		}
		if !strings.HasPrefix(rec.Header().Get("Content-Range"), "bytes */") {
			t.Fatalf("GET %s: Content-Range %q", path, rec.Header().Get("Content-Range"))
		}
	}
	rec := get(t, "GET", "/console/static/app.js", "Range", "bytes=0-9")
	if rec.Code != http.StatusPartialContent || rec.Body.Len() != 10 {
		t.Fatalf("GET with a satisfiable Range: %d, %d bytes", rec.Code, rec.Body.Len())
	}
}
