package cli

import (
	"strings"
	"testing"

	"github.com/stela-dev/stela/internal/apitest"
	"github.com/stela-dev/stela/internal/backendtest"
)

// TestEmptyListsSaySo: a list command that finds nothing says so on stderr
// ("no logs", "no deployments", …) instead of printing nothing, and keeps
// stdout empty (its --json form prints []).
func TestEmptyListsSaySo(t *testing.T) {
	url := apitest.Server(t, backendtest.SQLite(t))
	check := func(t *testing.T, want string, args ...string) {
		t.Helper()
		code, out, errOut := run(append(args, "--url", url)...)
		if code != ExitOK || out != "" || strings.TrimSpace(errOut) != want {
			t.Errorf("stela %s: exit %d, stdout %q, stderr %q; want 0, nothing, %q", strings.Join(args, " "), code, out, errOut, want)
		}
	}
	check(t, "no executions", "execution", "list")
	check(t, "no deployments", "deployment", "list")
	if code, out, errOut := run("execution", "list", "--json", "--url", url); code != ExitOK || strings.TrimSpace(out) != "[]" || errOut != "" {
		t.Errorf("execution list --json: exit %d, stdout %q, stderr %q; want []", code, out, errOut)
	}

	code, out, errOut := run("execution", "submit", "demo:hello/greeter.greet", `["World"]`, "--component-type", "activity", "--url", url)
	if code != ExitOK {
		t.Fatalf("submit: exit %d, %s", code, errOut)
	}
	id := strings.TrimSpace(out)
	check(t, "no executions match the filters", "execution", "list", "--ffqn-prefix", "other:")
	check(t, "no responses", "execution", "responses", id)
	check(t, "no logs", "execution", "logs", id)
	check(t, "no events from version 5 on", "execution", "events", id, "--from", "5")
	if code, out, _ := run("execution", "events", id, "--url", url); code != ExitOK || !strings.Contains(out, "created") {
		t.Errorf("events: exit %d, stdout %q; want the Created event", code, out)
	}
}
