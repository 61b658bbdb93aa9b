// Command stela-vet reports what breaks the deterministic replay of Stela
// workflows: the determinism analyzer (package analysis/determinism) as a
// standalone checker and a `go vet` tool.
//
//	go install github.com/stela-dev/stela/cmd/stela-vet@latest
//	stela-vet ./...                               # exit status 3 on findings
//	go vet -vettool=$(which stela-vet) ./...      # exit status 1 on findings
//
// Flags: -test=false skips test files; -json prints the findings as JSON;
// -determinism.<flag> are the analyzer's own (none yet). See docs/worker.md,
// "Determinism rules", for the rules and the opt-out comment.
package main

import (
	"github.com/stela-dev/stela/analysis/determinism"
	"golang.org/x/tools/go/analysis/singlechecker"
)

func main() { singlechecker.Main(determinism.Analyzer) }
