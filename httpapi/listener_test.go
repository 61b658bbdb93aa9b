package httpapi

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestJSONErrorsListener sends raw requests that net/http's server rejects
// before any handler runs and checks that they answer JSON like every other
// error, while ordinary answers pass through untouched.
func TestJSONErrorsListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: New(newMemDB(t), nil, Options{Authorizer: AllowAll()}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(JSONErrorsListener(ln)) }()
	t.Cleanup(func() { _ = srv.Close() })

	send := func(t *testing.T, raw string) (*http.Response, []byte) {
		t.Helper()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c, raw); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, body
	}
	for _, tc := range []struct {
		name, raw string
		status    int
		msg       string
	}{
		{"MalformedPathEscape", "GET /v1/executions/%zz HTTP/1.1\r\nHost: x\r\n\r\n", 400,
			"malformed request: invalid request line, URL escape or header"},
		{"MalformedEscapeInADerivedID", "GET /v1/executions/E_%zz/status HTTP/1.1\r\nHost: x\r\n\r\n", 400,
			"malformed request: invalid request line, URL escape or header"},
		{"MissingHost", "GET /v1/execution-id HTTP/1.1\r\n\r\n", 400, "malformed request: missing required Host header"},
		{"BadHeaderName", "GET /v1/execution-id HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n", 400, "malformed request: invalid header name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := send(t, tc.raw)
			if resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != contentTypeJSON {
				t.Fatalf("status %d, Content-Type %q, body %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
			var b map[string]string
			if err := json.Unmarshal(body, &b); err != nil || len(b) != 1 || b["err"] != tc.msg {
				t.Fatalf("body %q (%v), want {\"err\": %q}", body, err, tc.msg)
			}
		})
	}
	t.Run("HandlerAnswersPassThrough", func(t *testing.T) {
		resp, body := send(t, "GET /v1/executions/nope HTTP/1.1\r\nHost: x\r\n\r\n")
		if resp.StatusCode != 400 || resp.Header.Get("X-Request-Id") == "" || string(body) != "{\n  \"err\": \"invalid execution id \\\"nope\\\": wrong prefix\"\n}" {
			t.Fatalf("status %d, headers %v, body %q", resp.StatusCode, resp.Header, body)
		}
		resp, body = send(t, "GET /v1/execution-id HTTP/1.1\r\nHost: x\r\n\r\n")
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != contentTypeText || !strings.HasPrefix(string(body), "E_") {
			t.Fatalf("status %d, body %q", resp.StatusCode, body)
		}
	})
}
