// Package bench holds the benchmarks of `stela bench`: activity round
// trips, fan-out and delays over the HTTP worker routes, the round trip
// in-process on the embedded store, the web console's list requests, and
// the SDK workloads W1–W3 (package worker, over HTTP or in-process). Each
// prints its figures and the target it is measured against; none is a
// test. The stela command registers Commands as its `bench` group; the SDK
// benchmarks start `stela dev` from the running executable, so they run
// inside that command only.
//
// The other benchmarks stand beside this package: bench/cost (DynamoDB
// units and dollars per workload) and bench/peers (Stela beside DBOS,
// River and go-workflows, modules of their own).
package bench

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/stela-dev/stela/client"
)

// Summary and Doc describe the `stela bench` group.
const (
	Summary = "benchmark a running server, or the embedded store in-process"
	Doc     = "stela bench: throughput and latency benchmarks. roundtrip, fanout and delays drive a running\n" +
		"server (start one with `stela dev`) through its HTTP worker routes; embedded runs the\n" +
		"round trip in-process on store.Service + SQLite, without HTTP. Each prints its figures and\n" +
		"the target it is measured against."
)

// Env is what a benchmark may touch of the process.
type Env struct {
	Stdout io.Writer
	Stderr io.Writer
	// ServerFlags declares the flags that name the server (--url and
	// --token, as every stela command calling the API has them) on fs; the
	// function it returns reads them once fs is parsed.
	ServerFlags func(fs *flag.FlagSet) func() Server
}

// Server is the server a benchmark drives over HTTP.
type Server struct {
	URL, Token string
	// Given is set when the user named the server (by flag or
	// environment); otherwise the SDK benchmarks start their own
	// `stela dev`.
	Given bool
}

// client returns a client of s.
func (s Server) client() (*client.Client, error) {
	c, err := client.New(s.URL, client.WithToken(s.Token))
	if err != nil {
		return nil, usagef("invalid --url: %v", err)
	}
	return c, nil
}

// Command is one benchmark: a leaf of `stela bench` without positional
// arguments.
type Command struct {
	Name    string
	Summary string
	// Doc is the longer description shown by -h.
	Doc string
	// Flags declares the benchmark's flags on fs and returns its run.
	Flags func(fs *flag.FlagSet, e *Env) func(ctx context.Context) error
}

// UsageError is a bad invocation: the command prints its usage and exits 2.
type UsageError struct{ Msg string }

func (u UsageError) Error() string { return u.Msg }

func usagef(format string, args ...any) error { return UsageError{fmt.Sprintf(format, args...)} }

// Commands lists the benchmarks in the order `stela bench -h` shows them.
func Commands() []Command {
	return append([]Command{
		benchLeaf("roundtrip", "activity round trips (lock in batches → append Finished) over HTTP",
			"8 workers lock pending executions in batches and finish each one (no-op work); the\n"+
				"latency of a round trip runs from the start of its lock request to the ack of its\n"+
				"Finished append.", benchRoundTrip),
		benchLeaf("fanout", "one workflow fanning out to N child activities and joining them, over HTTP",
			"Each iteration submits a parent workflow, which creates --children child activities in one\n"+
				"join set; worker goroutines finish the children (respond-to-parent) and the parent joins\n"+
				"every response and finishes. The latency runs from the parent's submission to its Finished.",
			benchFanOut),
		benchLeaf("delays", "N concurrent delays, measuring how late each is answered, over HTTP",
			"--delays workflows each request one --delay timer and block on it; the server's timers fire\n"+
				"them. The latency of a delay runs from its request to the client seeing its response.",
			benchDelays),
		benchLeaf("all", "roundtrip, fanout and delays against one server", "", benchAll),
		benchEmbedded(),
		benchFloor(),
		benchConsole(),
	}, sdkBenchCommands()...)
}
