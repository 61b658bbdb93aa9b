package determinism

import (
	"fmt"
	"strings"
)

// maxFactFindings bounds the findings a fact carries to other packages.
const maxFactFindings = 8

// summary is the fact exported for an exported function, method or
// package variable of the module that breaks replay when workflow code of
// another package uses it: what it does, transitively, and whether the
// variable is mutable. Workflow code itself (functions that take a
// *worker.Context) exports no summary: its findings are reported in its own
// package, at their lines.
type summary struct {
	// Mutable is, for a variable, where it is assigned after
	// initialization ("example.com/shop/state/state.go:12:2"), "" if never.
	Mutable string
	// ModifiesReceiver is, for a pointer method, whether it modifies its
	// receiver (so calling it on a package variable makes it mutable).
	ModifiesReceiver bool
	// Findings are what the object does that breaks replay (at most
	// maxFactFindings).
	Findings []remote
}

// remote is a finding in another package, as a fact carries it.
type remote struct {
	Rule string   // the rule's name
	What string   // the construct, e.g. "time.Now"
	At   string   // its position, "pkg/path/file.go:line:col"
	Via  []string // the chain from the object the fact is about to the construct's function, that object first
}

// AFact marks summary as an analysis fact.
func (*summary) AFact() {}

func (s *summary) String() string {
	var parts []string
	if s.Mutable != "" {
		parts = append(parts, "mutable at "+s.Mutable)
	}
	if s.ModifiesReceiver {
		parts = append(parts, "modifies its receiver")
	}
	for _, f := range s.Findings {
		parts = append(parts, fmt.Sprintf("%s %s at %s via %s", f.Rule, f.What, f.At, strings.Join(f.Via, " → ")))
	}
	return "nondeterministic(" + strings.Join(parts, "; ") + ")"
}
