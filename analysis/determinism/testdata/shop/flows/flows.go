// Package flows holds workflows that use the module's helpers of other
// packages: the findings are reported at the call, naming where the
// construct is.
package flows

import (
	"example.com/shop/helpers"
	"example.com/shop/helpers/deep"
	"github.com/stela-dev/stela/worker"
)

const CheckoutFFQN = "shop:flows/workflow.checkout"

func Register(w *worker.Worker) {
	worker.Workflow(w, CheckoutFFQN, Checkout)
}

// Configure assigns a variable of helpers, which makes it mutable here.
func Configure(limit int) { helpers.Limit = limit } // want Configure:`global package variable helpers.Limit`

func Checkout(wf *worker.Context, cart map[string]int) (string, error) {
	s := helpers.Stamp()    // want `^time.Now \(at example.com/shop/helpers/helpers.go:15:42\) in workflow "shop:flows/workflow.checkout" \(Checkout\) via helpers.Stamp: the wall clock reads differently on a replay; use wf.Now\(\), which is recorded in the history$`
	s += helpers.Pick(cart) // want `^range over map m \(at example.com/shop/helpers/helpers.go:\d+:\d+\) in workflow "shop:flows/workflow.checkout" \(Checkout\) via helpers.Pick → pick: Go randomizes`
	n := helpers.Pure(1, 2)
	n += helpers.Counter // want `^package variable helpers.Counter \(modified at example.com/shop/helpers/helpers.go:35:14\) in workflow "shop:flows/workflow.checkout" \(Checkout\): a mutable package variable`
	n += helpers.Limit   // want `^package variable helpers.Limit \(modified at example.com/shop/flows/flows.go:19:29\) in workflow`
	s += helpers.Currency
	s += helpers.Epoch.String() // want `^time.Now \(at example.com/shop/helpers/helpers.go:\d+:\d+\) in workflow "shop:flows/workflow.checkout" \(Checkout\) via helpers.Epoch:`
	n += int(helpers.Reviewed())
	var t helpers.Tracker
	t.Add()                          // want `^sync.Mutex.Lock \(at example.com/shop/helpers/helpers.go:\d+:\d+\) in workflow .* via helpers.Tracker.Add:` `^sync.Mutex.Unlock \(at`
	g, err := helpers.Greet(wf, "x") // reported in helpers
	s += deep.Deep()                 // the clock, reached through deep.Deep: already reported via helpers.Stamp
	return s + g + string(rune(n)), err
}

// Again reaches helpers.Stamp through deep: the clock, reported once above.
func Again(wf *worker.Context, _ worker.Unit) (string, error) {
	return deep.Deep(), nil
}

// tracker is modified by Track, through a method of helpers (known by its fact).
var tracker helpers.Tracker

func Track() { tracker.Add() } // want Track:`global package variable tracker`

func Tally(wf *worker.Context, _ worker.Unit) (int, error) {
	return tracker.Count(), nil // want `^package variable tracker \(modified at flows.go:45\) in workflow code Tally:`
}
