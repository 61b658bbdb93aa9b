package httpapi

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// JSONErrorsListener wraps l so that the answers net/http's server writes by
// itself, before any handler runs, carry a JSON error body like every other
// answer of the API: a request line whose target does not parse (a malformed
// percent escape such as `/v1/executions/%zz`), a malformed header, a missing
// Host, a header block too large. net/http writes each of those as one raw
// write of a fixed form — a status line, exactly
// "Content-Type: text/plain; charset=utf-8" and "Connection: close", then the
// text — and closes the connection; the wrapper recognises exactly that form
// (a handler's answer always carries a Date header, so it never matches) and
// rewrites it. Serve the handler of New on the returned listener.
func JSONErrorsListener(l net.Listener) net.Listener { return jsonErrorsListener{l} }

type jsonErrorsListener struct{ net.Listener }

func (l jsonErrorsListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return jsonErrorsConn{c}, nil
}

type jsonErrorsConn struct{ net.Conn }

// rawErrorHeaders is what net/http's server writes between the status line
// and the text of the errors it answers without a handler.
const rawErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

func (c jsonErrorsConn) Write(p []byte) (int, error) {
	if out, ok := rewriteRawError(p); ok {
		if _, err := c.Conn.Write(out); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// rewriteRawError turns net/http's own plain-text error answer p into the
// same status with a JSON body; ok is false for anything else.
func rewriteRawError(p []byte) ([]byte, bool) {
	line, _, found := bytes.Cut(p, []byte(rawErrorHeaders))
	if !found || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) || bytes.Contains(line, []byte("\r\n")) {
		return nil, false
	}
	status := string(line[len("HTTP/1.1 "):]) // "400 Bad Request[: detail]"
	codeText, _, _ := strings.Cut(status, " ")
	code, err := strconv.Atoi(codeText)
	if err != nil || code < 400 || code > 599 {
		return nil, false
	}
	_, detail, hasDetail := strings.Cut(status, ": ")
	msg := malformedRequestMessage(code, detail, hasDetail)
	body := ErrorBody(msg)
	out := fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nConnection: close\r\nContent-Length: %d\r\n\r\n",
		code, http.StatusText(code), contentTypeJSON, len(body))
	return append(out, body...), true
}

// malformedRequestMessage is the public message of an answer net/http gave
// before routing.
func malformedRequestMessage(code int, detail string, hasDetail bool) string {
	switch {
	case hasDetail && detail != "":
		return "malformed request: " + detail
	case code == http.StatusBadRequest:
		return "malformed request: invalid request line, URL escape or header"
	case code == http.StatusRequestHeaderFieldsTooLarge:
		return "request header fields too large"
	}
	return "malformed request: " + strings.ToLower(http.StatusText(code))
}
