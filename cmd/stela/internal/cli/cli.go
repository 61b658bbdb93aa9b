// Package cli implements the `stela` command: the local dev server
// (`stela dev`), the commands that operate executions, delays and
// deployments through the HTTP API, the commands that move data between
// stores (`stela export`, `stela import`: package transfer) and back up
// the embedded store (`stela backup`), and `stela bench`, which registers
// the benchmarks of package bench.
//
// Every command is a node of one tree whose leaves parse their own flags
// with the standard library's flag package; flags may follow positional
// arguments. Main is the only entry point; it never calls os.Exit and takes
// its environment (I/O, variables) as parameters, so tests run it in-process.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Exit codes.
const (
	ExitOK    = 0
	ExitError = 1
	ExitUsage = 2
)

// Env is what a command may touch of the process: its output streams and
// its environment variables.
type Env struct {
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads an environment variable (os.Getenv in main).
	Getenv func(string) string
}

// command is a node of the command tree: a group (sub set) or a leaf (run set).
type command struct {
	name    string
	summary string
	// args is the positional synopsis of a leaf, e.g. "<ffqn> [params-json]".
	args string
	// doc is the longer description shown by -h.
	doc string
	sub []*command
	// flags declares the leaf's flags; run then gets the parsed positional args.
	flags func(fs *flag.FlagSet, e *Env) func(ctx context.Context, args []string) error
	// nargs bounds the positional arguments of a leaf.
	minArgs, maxArgs int
}

// usageError is a bad invocation: reported with the command's usage, exit 2.
type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// Main runs the command line args (without the program name) and returns
// the exit code. ctx is cancelled on SIGINT/SIGTERM by the caller.
func Main(ctx context.Context, args []string, e Env) int {
	if e.Getenv == nil {
		e.Getenv = func(string) string { return "" }
	}
	root := tree()
	return dispatch(ctx, root, []string{"stela"}, args, &e)
}

func dispatch(ctx context.Context, c *command, path []string, args []string, e *Env) int {
	if c.sub != nil {
		if len(args) == 0 {
			groupUsage(e.Stderr, c, path)
			return ExitUsage
		}
		switch args[0] {
		case "-h", "-help", "--help", "help":
			groupUsage(e.Stdout, c, path)
			return ExitOK
		case "-version", "--version":
			if len(path) == 1 {
				printVersion(e.Stdout)
				return ExitOK
			}
		}
		args = flagsAfterCommand(c, args)
		for _, s := range c.sub {
			if s.name == args[0] {
				return dispatch(ctx, s, append(path, s.name), args[1:], e)
			}
		}
		fmt.Fprintf(e.Stderr, "%s: unknown command %q\n\n", strings.Join(path, " "), args[0])
		groupUsage(e.Stderr, c, path)
		return ExitUsage
	}
	return runLeaf(ctx, c, path, args, e)
}

// flagsAfterCommand lets flags come before the command they belong to
// (`stela --url U execution list` as well as `stela execution list --url U`):
// when args starts with a flag, the tokens before the first one naming a
// subcommand of c are moved after it — before any "--", so they stay flags
// for the leaf, which parses flags anywhere. Without a subcommand name the
// args are returned unchanged (and reported as an unknown command).
func flagsAfterCommand(c *command, args []string) []string {
	if len(args) == 0 || !strings.HasPrefix(args[0], "-") {
		return args
	}
	for i, a := range args {
		if a == "--" {
			return args
		}
		for _, s := range c.sub {
			if s.name == a {
				rest := args[i+1:]
				out := make([]string, 0, len(args))
				out = append(out, a)
				if j := indexOf(rest, "--"); j >= 0 {
					out = append(out, rest[:j]...)
					out = append(out, args[:i]...)
					return append(out, rest[j:]...)
				}
				out = append(out, rest...)
				return append(out, args[:i]...)
			}
		}
	}
	return args
}

func runLeaf(ctx context.Context, c *command, path []string, args []string, e *Env) int {
	name := strings.Join(path, " ")
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	out := e.Stderr
	if wantsHelp(args) {
		out = e.Stdout
	}
	fs.SetOutput(out)
	fs.Usage = func() { leafUsage(out, c, name, fs) }
	run := c.flags(fs, e)
	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	if err != nil {
		return ExitUsage // the flag package has printed the error and the usage
	}
	if len(pos) < c.minArgs || (c.maxArgs >= 0 && len(pos) > c.maxArgs) {
		fmt.Fprintf(e.Stderr, "%s: wrong number of arguments\n\n", name)
		leafUsage(e.Stderr, c, name, fs)
		return ExitUsage
	}
	if err := run(ctx, pos); err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(e.Stderr, "%s: %s\n\n", name, ue.msg)
			leafUsage(e.Stderr, c, name, fs)
			return ExitUsage
		}
		fmt.Fprintf(e.Stderr, "%s: %s\n", name, errorText(err))
		return ExitError
	}
	return ExitOK
}

func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "-h", "-help", "--help":
			return true
		case "--":
			return false
		}
	}
	return false
}

// parseInterspersed parses flags anywhere among the positional arguments
// (everything after "--" is positional).
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		i := indexOf(args, "--")
		head, tail := args, []string(nil)
		if i >= 0 {
			head, tail = args[:i], args[i+1:]
		}
		if err := fs.Parse(head); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return append(pos, tail...), nil
		}
		pos = append(pos, rest[0])
		args = append(append([]string{}, rest[1:]...), dashTail(i >= 0, tail)...)
	}
}

func dashTail(had bool, tail []string) []string {
	if !had {
		return nil
	}
	return append([]string{"--"}, tail...)
}

func indexOf(ss []string, s string) int {
	for i, x := range ss {
		if x == s {
			return i
		}
	}
	return -1
}

func groupUsage(w io.Writer, c *command, path []string) {
	name := strings.Join(path, " ")
	if c.doc != "" {
		fmt.Fprintf(w, "%s\n\n", c.doc)
	}
	fmt.Fprintf(w, "Usage: %s <command> [arguments] [flags]\n\nCommands:\n", name)
	width := 0
	for _, s := range c.sub {
		width = max(width, len(s.name))
	}
	for _, s := range c.sub {
		fmt.Fprintf(w, "  %-*s  %s\n", width, s.name, s.summary)
	}
	fmt.Fprintf(w, "\nRun `%s <command> -h` for the command's arguments and flags.\n", name)
}

func leafUsage(w io.Writer, c *command, name string, fs *flag.FlagSet) {
	synopsis := name
	if c.args != "" {
		synopsis += " " + c.args
	}
	fmt.Fprintf(w, "Usage: %s [flags]\n\n%s\n", synopsis, c.summary)
	if c.doc != "" {
		fmt.Fprintf(w, "\n%s\n", c.doc)
	}
	first := true
	fs.VisitAll(func(f *flag.Flag) {
		if first {
			fmt.Fprintf(w, "\nFlags:\n")
			first = false
		}
		name, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if name != "" {
			line += " " + name
		}
		if def := f.DefValue; def != "" && def != "false" && def != "0" && !namesDefault(usage, def) {
			usage += fmt.Sprintf(" (default %q)", def)
		}
		fmt.Fprintf(w, "%s\n    \t%s\n", line, strings.ReplaceAll(usage, "\n", "\n    \t"))
	})
}

// namesDefault reports whether a flag's usage already says its default
// ("…, else http://127.0.0.1:8080)"), so the usage line need not repeat it.
func namesDefault(usage, def string) bool {
	return strings.Contains(usage, "else "+def) || strings.Contains(usage, "default "+def)
}

// tree is the whole command tree.
func tree() *command {
	return &command{
		name: "stela",
		doc: "stela runs Stela, a durable-execution log store (Obelisk's storage semantics on\n" +
			"DynamoDB + S3, or on an embedded SQLite file), and operates it over its HTTP API.",
		sub: []*command{
			devCommand(),
			serverStatusCommand(),
			executionCommand(),
			delayCommand(),
			scheduleCommand(),
			deploymentCommand(),
			exportCommand(),
			importCommand(),
			backupCommand(),
			benchCommand(),
			vetCommand(),
			versionCommand(),
		},
	}
}

// Leaves lists the full names of every leaf command (e.g. "execution submit").
func Leaves() []string {
	var out []string
	var walk func(c *command, prefix string)
	walk = func(c *command, prefix string) {
		for _, s := range c.sub {
			name := strings.TrimSpace(prefix + " " + s.name)
			if s.sub != nil {
				walk(s, name)
			} else {
				out = append(out, name)
			}
		}
	}
	walk(tree(), "")
	return out
}
