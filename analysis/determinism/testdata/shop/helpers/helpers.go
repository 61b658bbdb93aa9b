// Package helpers is a library of the module used by workflows of other
// packages: what its exported functions and variables break travels as
// facts and is reported at the workflows' calls.
package helpers

import (
	"os"
	"sync"
	"time"

	"github.com/stela-dev/stela/worker"
)

// Stamp formats the wall clock.
func Stamp() string { return format(time.Now()) } // want Stamp:`^nondeterministic\(clock time.Now at example.com/shop/helpers/helpers.go:15:42 via helpers.Stamp\)$`

func format(t time.Time) string { return t.Format(time.RFC3339) }

// Pick ranges over a map, in an unexported helper.
func Pick(m map[string]int) string { return pick(m) } // want Pick:`maprange range over map m at example.com/shop/helpers/helpers.go:\d+:\d+ via helpers.Pick → pick`

func pick(m map[string]int) string {
	for k := range m {
		return k
	}
	return ""
}

// Pure is deterministic: no fact.
func Pure(a, b int) int { return a + b }

// Counter is mutable: Inc assigns it.
var Counter int // want Counter:`^nondeterministic\(mutable at example.com/shop/helpers/helpers.go:35:14\)$`

func Inc() { Counter++ } // want Inc:`global package variable Counter`

// Currency is never assigned: no fact.
var Currency = "EUR"

// Limit is assigned by another package (flows.Configure).
var Limit = 10

// Epoch is read from the clock when the process starts.
var Epoch = time.Now() // want Epoch:`clock time.Now at .* via helpers.Epoch`

// Reviewed opts its line out: no fact.
func Reviewed() int64 {
	return time.Now().Unix() //stela:nondeterministic-ok only used in a log line
}

// Tracker counts under a lock.
type Tracker struct {
	mu sync.Mutex
	n  int
}

func (t *Tracker) Add() { // want Add:`^nondeterministic\(modifies its receiver; sync sync.Mutex.Lock at .* via helpers.Tracker.Add; sync sync.Mutex.Unlock`
	t.mu.Lock()
	t.n++
	t.mu.Unlock()
}

// Greet is workflow code itself (it takes a *worker.Context): its findings
// are reported here, at their line, and it exports no fact.
func Greet(wf *worker.Context, name string) (string, error) {
	return os.Getenv("GREETING") + name, nil // want `^os.Getenv in workflow code Greet:`
}

// Count reads the tracker without modifying it.
func (t *Tracker) Count() int { return t.n }
