package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// versionCommand: stela version (also `stela --version`).
func versionCommand() *command {
	return &command{
		name:    "version",
		summary: "print the version of this stela binary (module version, VCS revision, Go version)",
		maxArgs: 0,
		flags: func(fs *flag.FlagSet, e *Env) func(ctx context.Context, args []string) error {
			return func(context.Context, []string) error {
				printVersion(e.Stdout)
				return nil
			}
		},
	}
}

// printVersion writes one line: the main module's version ("(devel)" for a
// build from a checkout), the VCS revision and time when the build recorded
// them (a "+dirty" suffix for uncommitted changes), the Go version and
// platform.
func printVersion(w io.Writer) {
	version, rev, at, dirty := "(unknown)", "", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		version = bi.Main.Version
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	line := "stela " + version
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if dirty {
			rev += "+dirty"
		}
		line += " " + rev
		if at != "" {
			line += " " + at
		}
	}
	fmt.Fprintf(w, "%s %s %s/%s\n", line, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
