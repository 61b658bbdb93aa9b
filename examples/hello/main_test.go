package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stela-dev/stela/internal/apitest"
	"github.com/stela-dev/stela/internal/backendtest"
)

// TestHelloGreetsTheNameItIsGiven: `go run ./examples/hello Ada` greets Ada
// (flags before or after the name), no name greets the World, and two names
// are a usage error.
func TestHelloGreetsTheNameItIsGiven(t *testing.T) {
	url := apitest.Server(t, backendtest.SQLite(t))
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--url", url, "Ada"}, 0, `"Hello, Ada!"`},
		{[]string{"Grace", "--url", url}, 0, `"Hello, Grace!"`},
		{[]string{"--url", url}, 0, `"Hello, World!"`},
		{[]string{"--url", url, "Ada", "Grace"}, 2, ""},
	} {
		var out, errb bytes.Buffer
		code := run(append([]string{"hello"}, tc.args...), &out, &errb)
		if code != tc.code || strings.TrimSpace(out.String()) != tc.want {
			t.Errorf("hello %q: exit %d, stdout %q, stderr %q; want %d, %q", tc.args, code, out.String(), errb.String(), tc.code, tc.want)
		}
		if tc.code == 2 && !strings.Contains(errb.String(), "Usage: hello [flags] [name]") {
			t.Errorf("hello %q: stderr lacks the usage: %q", tc.args, errb.String())
		}
	}
}
