package cli

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// TestGoInstallWorks holds what `go install github.com/stela-dev/stela/cmd/stela@<version>`
// needs of the module: its path is the one the README, the banner and the
// import paths name, and go.mod has no replace or exclude directive (go
// install pkg@version refuses a module with one). The install itself was
// checked from an empty GOPATH and module cache against a module proxy.
func TestGoInstallWorks(t *testing.T) {
	f, err := os.Open("../../../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	module := ""
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		switch fields[0] {
		case "module":
			module = fields[1]
		case "replace", "exclude":
			t.Errorf("go.mod has a %s directive, which go install …@version refuses: %s", fields[0], sc.Text())
		}
	}
	if want := "github.com/stela-dev/stela"; module != want {
		t.Errorf("module %q, want %q", module, want)
	}
	if !strings.HasPrefix(installCommand, "go install "+module+"/cmd/stela@") {
		t.Errorf("the banner installs with %q, not the module's cmd/stela", installCommand)
	}
	readme, err := os.ReadFile("../../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), installCommand) {
		t.Errorf("README.md does not show %q", installCommand)
	}
	_, banner := startDevInProcess(t)
	if !strings.Contains(banner, installCommand) {
		t.Errorf("the banner does not say how to install stela:\n%s", banner)
	}
}
