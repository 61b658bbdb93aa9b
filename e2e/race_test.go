//go:build race

package e2e_test

// raceEnabled builds the stela binary with -race when the tests run with it.
const raceEnabled = true
