package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

// Paths of the console.
const (
	// Prefix is where the console's pages live; every path under it that is
	// not a static file answers the app (index.html), so deep links work.
	Prefix = "/console/"
	// StaticPrefix is where the embedded files are served.
	StaticPrefix = Prefix + "static/"
)

// ContentSecurityPolicy is sent with every console response: scripts,
// styles and fetches only from this origin, no inline script or style, no
// eval, no plugins, no framing, and Trusted Types so that no string can
// reach an HTML sink (the app builds every element with DOM APIs).
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; " +
	"require-trusted-types-for 'script'; trusted-types 'none'"

//go:embed static
var embedded embed.FS

// file is one embedded file, ready to serve.
type file struct {
	body        []byte
	contentType string
	etag        string
}

// files maps a name under static/ ("app.js") to its file; index is the app.
var (
	files = map[string]file{}
	index file
)

var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
}

func init() {
	err := fs.WalkDir(embedded, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		ct, ok := contentTypes[path.Ext(p)]
		if !ok {
			panic("console: no content type for " + p) // caught by the tests
		}
		body, err := embedded.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		files[strings.TrimPrefix(p, "static/")] = file{body: body, contentType: ct, etag: `"` + hex.EncodeToString(sum[:16]) + `"`}
		return nil
	})
	if err != nil {
		panic("console: read embedded files: " + err.Error())
	}
	index = files["index.html"]
}

// Owns reports whether the console serves urlPath: "/", "/console" and
// everything under "/console/". Requests for these paths carry no data and
// need no authorization (the app asks for the API token itself).
func Owns(urlPath string) bool {
	return urlPath == "/" || urlPath == "/console" || strings.HasPrefix(urlPath, Prefix)
}

// Handler returns the handler of the console's paths (see Owns):
//
//   - GET / redirects to /console/ (302), GET /console to /console/ (301);
//   - GET /console/static/<name> serves an embedded file (404 if none);
//   - any other GET under /console/ serves the app (index.html), which
//     routes on the path in the browser: deep links can be opened directly.
//
// HEAD works like GET, other methods answer 405. Every answer carries the
// ContentSecurityPolicy, X-Content-Type-Options: nosniff and
// X-Frame-Options: DENY; files are revalidated by ETag (Cache-Control: no-cache).
func Handler() http.Handler { return http.HandlerFunc(serve) }

func serve(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		writeErr(w, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	switch p := r.URL.Path; {
	case p == "/":
		http.Redirect(w, r, Prefix, http.StatusFound)
	case p == "/console":
		http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
	case strings.HasPrefix(p, StaticPrefix):
		f, ok := files[strings.TrimPrefix(p, StaticPrefix)]
		if !ok {
			writeErr(w, http.StatusNotFound, "not found")
			return
		}
		serveFile(w, r, f)
	default:
		serveFile(w, r, index)
	}
}

func serveFile(w http.ResponseWriter, r *http.Request, f file) {
	h := w.Header()
	h.Set("Content-Type", f.contentType)
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", f.etag)
	rw := &rangeErrors{ResponseWriter: w}
	http.ServeContent(rw, r, "", time.Time{}, bytes.NewReader(f.body))
	if rw.unsatisfiable {
		// http.ServeContent answers an unsatisfiable Range in text/plain.
		writeErr(w, http.StatusRequestedRangeNotSatisfiable, "range not satisfiable: "+strings.TrimSpace(rw.msg.String()))
	}
}

// rangeErrors holds back the text/plain 416 of http.ServeContent, so that
// serveFile can answer it in the API's JSON shape; any other answer goes
// through.
type rangeErrors struct {
	http.ResponseWriter
	unsatisfiable bool
	msg           bytes.Buffer
}

func (w *rangeErrors) WriteHeader(status int) {
	if status == http.StatusRequestedRangeNotSatisfiable {
		w.unsatisfiable = true
		return
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *rangeErrors) Write(b []byte) (int, error) {
	if w.unsatisfiable {
		return w.msg.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

// writeErr answers like the API: {"err": msg}, pretty-printed.
func writeErr(w http.ResponseWriter, status int, msg string) {
	quoted, _ := json.Marshal(msg)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte("{\n  \"err\": " + string(quoted) + "\n}"))
}
