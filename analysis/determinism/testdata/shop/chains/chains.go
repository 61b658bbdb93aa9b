// Package chains checks that the analyzer follows the calls of workflow
// code within its package (functions, methods, function and method values,
// closures, recursion, generics, variable initializers) and names the chain.
package chains

import (
	"math/rand"
	"os"
	"sort"
	"time"

	"github.com/stela-dev/stela/worker"
)

func Register(w *worker.Worker) {
	worker.Workflow(w, "shop:chains/workflow.order", Order)
	worker.Workflow(w, "shop:chains/workflow.audit", Audit)
}

func Order(wf *worker.Context, id string) (string, error) {
	s := stamp(id)
	p := &pricer{}
	n := p.price(id)
	describeIt := describe // a function value
	s += describeIt(id)
	discount := p.discount // a method value
	n += discount(1)
	n += countdown(3)
	s += first([]string{"a"})
	s += now().String()
	s += started.String()
	var c clock = realClock{}
	s += c.Read() // dynamic: not followed
	xs := []int{3, 1, 2}
	sort.Slice(xs, func(i, j int) bool {
		return rand.Intn(2) == 0 // want `^math/rand.Intn in workflow "shop:chains/workflow.order" \(Order\) via func literal \(chains.go:35\)`
	})
	f := &flow{wf: wf}
	if err := f.step(); err != nil {
		return "", err
	}
	f.stepBadly()
	return s, nil
}

// Audit reaches stamp too: its finding was reported once, via Order.
func Audit(wf *worker.Context, id string) (string, error) {
	return stamp(id), nil
}

func stamp(id string) string { return id + format() }

func format() string {
	return time.Now().Format(time.RFC3339) // want `^time.Now in workflow "shop:chains/workflow.order" \(Order\) via stamp → format: the wall clock`
}

type pricer struct{}

func (p *pricer) price(id string) int {
	return len(id) + rand.Intn(10) // want `^math/rand.Intn in workflow "shop:chains/workflow.order" \(Order\) via pricer.price:`
}

func (p *pricer) discount(n int) int {
	h, _ := os.Hostname() // want `^os.Hostname in workflow "shop:chains/workflow.order" \(Order\) via pricer.discount:`
	return n + len(h)
}

func describe(s string) string {
	return s + os.Getenv("SUFFIX") // want `^os.Getenv in workflow "shop:chains/workflow.order" \(Order\) via describe:`
}

func countdown(n int) int {
	if n == 0 {
		return time.Now().Second() // want `^time.Now in workflow "shop:chains/workflow.order" \(Order\) via countdown:`
	}
	return countdown(n - 1)
}

func first[T any](xs []T) T {
	time.Sleep(time.Millisecond) // want `^time.Sleep in workflow "shop:chains/workflow.order" \(Order\) via first:`
	return xs[0]
}

var now = time.Now // want `^time.Now in workflow "shop:chains/workflow.order" \(Order\) via var now:`

var started = time.Now() // want `^time.Now in workflow "shop:chains/workflow.order" \(Order\) via var started:`

type clock interface{ Read() string }

type realClock struct{}

// Read is only called through the clock interface: not followed.
func (realClock) Read() string { return time.Now().String() } // want Read:`clock time.Now at .* via chains.realClock.Read`

// flow is a helper type holding the workflow's context.
type flow struct{ wf *worker.Context }

func (f *flow) step() error { return f.wf.Sleep(time.Second) }

func (f *flow) stepBadly() {
	time.Sleep(time.Second) // want `^time.Sleep in workflow "shop:chains/workflow.order" \(Order\) via flow.stepBadly:`
}
