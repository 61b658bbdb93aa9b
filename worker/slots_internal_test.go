package worker

import (
	"context"
	"testing"
)

// TestSlotsReserve: a held reservation lowers what later reservations get
// (the bursts in flight never ask for more than the free slots), a
// sizing-only one (a long poll) does not, runs take free slots whatever is
// reserved, and claim turns a reservation into the slots its request got.
func TestSlotsReserve(t *testing.T) {
	ctx := context.Background()
	s := newSlots(8)
	if n, _ := s.reserve(ctx, nil, 4, false); n != 4 {
		t.Fatalf("sizing-only reserve of 4 got %d", n)
	}
	if n, _ := s.reserve(ctx, nil, 25, true); n != 8 {
		t.Fatalf("a long poll's sizing must not hold slots: want 8, got %d", n)
	}
	// All 8 are reserved: another reservation waits until one is given back.
	got := make(chan int, 1)
	go func() { n, _ := s.reserve(ctx, nil, 25, true); got <- n }()
	select {
	case n := <-got:
		t.Fatalf("reserved %d while every free slot was reserved", n)
	default:
	}
	// A run still takes a free slot (a workflow resuming from a wait).
	if n := s.tryAcquire(1); n != 1 {
		t.Fatalf("a run must take a reserved free slot, got %d", n)
	}
	// The request of 8 locked 3: 3 slots taken (7 were free), 5 back.
	if k := s.claim(8, 3); k != 3 {
		t.Fatalf("claim took %d, want 3", k)
	}
	if n := <-got; n != 4 {
		t.Fatalf("after the claim, want 4 free unreserved slots (8-1-3), got %d", n)
	}
	s.unreserve(4)
	s.release(4)
	if n := s.tryAcquire(25); n != 8 {
		t.Fatalf("want all 8 free at the end, got %d", n)
	}
}
