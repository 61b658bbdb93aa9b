package storetest

import (
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
)

// SimClock is store.SimClock, the manually advanced clock of the contract
// suite (it lives in store so that worker/workertest has it without this
// package's CAS and its S3 client).
type SimClock = store.SimClock

// NewSimClock returns a clock reading start (use core.UnixEpoch for t0).
func NewSimClock(start core.Timestamp) *SimClock { return store.NewSimClock(start) }
