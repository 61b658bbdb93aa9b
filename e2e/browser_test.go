package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// The web console is tested in a real headless Chromium (Debian's
// `chromium` package; scripts/ci/install-chromium.sh installs it in CI).
// Without a browser the tests skip, unless STELA_REQUIRE_BROWSER=1 (set by
// scripts/test-all), which makes them fail instead.

// browserWait bounds every wait for the page; a failure limit, never a delay.
const browserWait = 30 * time.Second

// chromiumPath finds the browser: $STELA_CHROMIUM, else chromium on PATH.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("STELA_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("STELA_REQUIRE_BROWSER") == "1" {
		t.Fatal("STELA_REQUIRE_BROWSER=1 but no Chromium found (install it with scripts/ci/install-chromium.sh or set STELA_CHROMIUM)")
	}
	t.Skip("no Chromium on PATH: install Debian's `chromium` (scripts/ci/install-chromium.sh) to run the console's browser tests")
	return ""
}

// tab is one browser tab on a console server.
type tab struct {
	t    *testing.T
	ctx  context.Context
	base string
}

// pageInit runs in every document before the console's scripts: it records
// uncaught errors and CSP violations, so the tests can assert there were none.
const pageInit = `window.__errors = [];
window.addEventListener('error', (e) => window.__errors.push('error: ' + e.message));
window.addEventListener('unhandledrejection', (e) => window.__errors.push('rejection: ' + (e.reason && e.reason.message || e.reason)));
document.addEventListener('securitypolicyviolation', (e) => window.__errors.push('csp: ' + e.violatedDirective + ' ' + e.blockedURI));`

// newTab starts a headless Chromium with the flags that work in CI and
// returns a tab on base (the server's URL).
func newTab(t *testing.T, base string) *tab {
	t.Helper()
	path := chromiumPath(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1440, 1000),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-background-timer-throttling", true), chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.Flag("lang", "en-US"),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	tb := &tab{t: t, ctx: ctx, base: base}
	// The first Run starts the browser: no timeout on it (it would end the browser).
	if err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: pageInit})
		return err
	})); err != nil {
		t.Fatalf("start Chromium (%s): %v", path, err)
	}
	return tb
}

// run runs actions with the wait bound.
func (b *tab) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserWait)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v\npage:\n%s", what, err, b.bodyText())
	}
}

// open loads a console URL (a fresh document, as when a link is pasted).
func (b *tab) open(path string) {
	b.t.Helper()
	b.run("open "+path, chromedp.Navigate(b.base+path))
}

// eval evaluates a JavaScript expression and decodes its value into out.
func (b *tab) eval(expr string, out any) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserWait)
	defer cancel()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("eval %s: %v", expr, err)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			b.t.Fatalf("eval %s: decode %s: %v", expr, raw, err)
		}
	}
}

func (b *tab) str(expr string) string {
	b.t.Helper()
	var s string
	b.eval(expr, &s)
	return s
}

func (b *tab) num(expr string) int {
	b.t.Helper()
	var n int
	b.eval(expr, &n)
	return n
}

// bodyText returns the page's visible text, for failure messages.
func (b *tab) bodyText() string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ''`))
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	return s
}

// waitFor polls a JavaScript condition until it is true.
func (b *tab) waitFor(what, cond string) {
	b.t.Helper()
	end := time.Now().Add(browserWait)
	for {
		var ok bool
		ctx, cancel := context.WithTimeout(b.ctx, browserWait)
		raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](`!!(`+cond+`)`))
		cancel()
		if err == nil && json.Unmarshal(raw, &ok) == nil && ok {
			return
		}
		if time.Now().After(end) {
			b.t.Fatalf("timed out waiting until %s (%s; last error %v)\npage:\n%s", what, cond, err, b.bodyText())
		}
		time.Sleep(100 * time.Millisecond) // polling interval of the page, not a synchronisation delay
	}
}

// click clicks the first element matching a CSS selector (through the DOM, as a keyboard Enter would).
func (b *tab) click(sel string) {
	b.t.Helper()
	b.waitFor("an element "+sel, `document.querySelector(`+jsString(sel)+`)`)
	b.eval(`document.querySelector(`+jsString(sel)+`).click()`, nil)
}

// setValue sets a form field's value.
func (b *tab) setValue(sel, v string) {
	b.t.Helper()
	b.waitFor("a field "+sel, `document.querySelector(`+jsString(sel)+`)`)
	b.eval(`(() => { const el = document.querySelector(`+jsString(sel)+`); el.value = `+jsString(v)+`; el.dispatchEvent(new Event('input', {bubbles: true})); })()`, nil)
}

// confirmDialog presses the main button of the open dialog.
func (b *tab) confirmDialog() {
	b.t.Helper()
	b.waitFor("a dialog", `document.querySelector('dialog[open]')`)
	b.eval(`document.querySelector('dialog[open] .buttons button').click()`, nil)
	b.waitFor("the dialog to close", `!document.querySelector('dialog[open]')`)
}

// noErrors checks that the page raised no uncaught error and no CSP violation.
func (b *tab) noErrors() {
	b.t.Helper()
	var errs []string
	b.eval(`window.__errors || []`, &errs)
	if len(errs) > 0 {
		b.t.Errorf("page errors: %v", errs)
	}
}

// screenshot saves a PNG of the whole page to dir/name.
func (b *tab) screenshot(dir, name string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserWait)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	return p
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// rowsOf returns the data-id of the rows of the executions table.
func (b *tab) rowsOf() []string {
	b.t.Helper()
	var ids []string
	b.eval(`[...document.querySelectorAll('#executions tbody tr')].map((r) => r.dataset.id)`, &ids)
	return ids
}

func sameSet(a []string, b ...string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]int{}
	for _, x := range a {
		seen[x]++
	}
	for _, x := range b {
		seen[x]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}

func execPath(id fmt.Stringer) string { return "/console/executions/" + id.String() }

// screenshotDir is where screenshots go: docs/console when
// STELA_UPDATE_SCREENSHOTS=1, else a temporary directory.
func screenshotDir(t *testing.T) string {
	if os.Getenv("STELA_UPDATE_SCREENSHOTS") == "1" {
		dir, err := filepath.Abs(filepath.Join("..", "docs", "console"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	return t.TempDir()
}

// waitRows waits until the executions table shows exactly ids.
func (b *tab) waitRows(what string, ids ...string) {
	b.t.Helper()
	want, _ := json.Marshal(ids)
	b.waitFor(what, `(() => { const got = [...document.querySelectorAll('#executions tbody tr')].map((r) => r.dataset.id).sort();
		const want = `+string(want)+`.sort(); return got.length === want.length && got.every((x, i) => x === want[i]); })()`)
}

// bodyContains reports whether the page text contains s.
func (b *tab) bodyContains(s string) bool {
	return strings.Contains(b.bodyText(), s)
}
