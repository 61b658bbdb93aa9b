package storetest

import (
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
)

// sweep runs the expired-timers watcher (store.Sweep) at `at` and returns how
// many expired locks and delays it handled.
func (h *harness) sweep(at core.Timestamp) (locks, delays int) {
	h.t.Helper()
	res, err := store.Sweep(h.ctx, h.db, at)
	if err != nil {
		h.t.Fatalf("sweep at %s: %v", at, err)
	}
	return sweepCounts(res)
}

// sweepCounts extracts (expired locks, expired delays) from a SweepResult.
func sweepCounts(res store.SweepResult) (locks, delays int) {
	return res.ExpiredLocks, res.ExpiredDelays
}

// drive runs the cancellation driver (store.DriveCancellations) once at now.
func (h *harness) drive(now core.Timestamp) int {
	h.t.Helper()
	n, err := store.DriveCancellations(h.ctx, h.db, now, 100)
	if err != nil {
		h.t.Fatalf("drive cancellations at %s: %v", now, err)
	}
	return n
}

// driveUntilFinished runs the driver until id is finished (at most 10 rounds).
func (h *harness) driveUntilFinished(id core.ExecutionId) {
	h.t.Helper()
	for i := 0; i < 10; i++ {
		h.drive(h.now())
		if h.pendingState(id).State == core.StateFinished {
			return
		}
	}
	h.t.Fatalf("%s not finished after 10 cancellation-driver rounds: %s (tail %v)", id,
		jsonOrErr(h.pendingState(id)), variantsOf(h.get(id).Events))
}
