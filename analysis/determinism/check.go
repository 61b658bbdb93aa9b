package determinism

import (
	"cmp"
	"errors"
	"fmt"
	"go/token"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/checker"
	"golang.org/x/tools/go/packages"
)

// Finding is one report of the analyzer.
type Finding struct {
	// Pos is where the construct is: file (relative to the directory the
	// packages were loaded from, when under it), line and column.
	Pos token.Position
	// Rule is the rule's name (the diagnostic's category), e.g. "clock".
	Rule string
	// Message says what, in which workflow and through which calls, why it
	// breaks replay, and what to use instead.
	Message string
}

// String renders f as the go vet tools do: file:line:col: message.
func (f Finding) String() string {
	return fmt.Sprintf("%s:%d:%d: %s", f.Pos.Filename, f.Pos.Line, f.Pos.Column, f.Message)
}

// Check loads the packages that match patterns (go list patterns, e.g.
// "./..."), from dir ("" is the current directory), with their test files
// if tests, runs the analyzer on them and returns its findings, sorted by
// position. It needs the go command, as go vet does. A package that does
// not load or type-check is an error.
func Check(dir string, patterns []string, tests bool) ([]Finding, error) {
	cfg := &packages.Config{Mode: packages.LoadAllSyntax | packages.NeedModule, Dir: dir, Tests: tests}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return nil, err
	}
	var errs []error
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		for _, e := range p.Errors {
			errs = append(errs, e)
		}
	})
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("no packages match %s", strings.Join(patterns, " "))
	}
	graph, err := checker.Analyze([]*analysis.Analyzer{Analyzer}, pkgs, nil)
	if err != nil {
		return nil, err
	}
	base, _ := filepath.Abs(dir)
	seen := map[Finding]bool{}
	var out []Finding
	for _, act := range graph.Roots {
		if act.Err != nil {
			return nil, fmt.Errorf("%s: %w", act.Package.PkgPath, act.Err)
		}
		for _, d := range act.Diagnostics {
			p := act.Package.Fset.Position(d.Pos)
			if rel, err := filepath.Rel(base, p.Filename); err == nil && !strings.HasPrefix(rel, "..") {
				p.Filename = rel
			}
			f := Finding{Pos: p, Rule: d.Category, Message: d.Message}
			if !seen[f] { // a package and its test variant report the same
				seen[f] = true
				out = append(out, f)
			}
		}
	}
	slices.SortFunc(out, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(a.Pos.Filename, b.Pos.Filename), cmp.Compare(a.Pos.Line, b.Pos.Line),
			cmp.Compare(a.Pos.Column, b.Pos.Column), cmp.Compare(a.Message, b.Message))
	})
	return out, nil
}
