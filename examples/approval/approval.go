package main

import (
	"context"
	"fmt"
	"time"

	"github.com/stela-dev/stela/worker"
)

// Functions of the approval example.
const (
	ReserveFFQN = "demo:approval/inventory.reserve"
	ReleaseFFQN = "demo:approval/inventory.release"
	ChargeFFQN  = "demo:approval/payment.charge"
	OrderFFQN   = "demo:approval/workflow.order"
)

// Order is the workflow's input.
type Order struct {
	ID     string `json:"id"`
	Amount int64  `json:"amount"`
	// ApprovalTimeout bounds the wait for the human's decision.
	ApprovalTimeout time.Duration `json:"approval_timeout"`
}

// Decision is the approval signal's value.
type Decision struct {
	Approved bool   `json:"approved"`
	By       string `json:"by"`
}

// Outcome is the workflow's result.
type Outcome struct {
	OrderID string `json:"order_id"`
	Status  string `json:"status"` // approved, rejected or expired
	By      string `json:"by,omitempty"`
	Payment string `json:"payment,omitempty"`
}

// Progress values the workflow publishes under the key "progress".
const (
	ProgressReserved = "reserved, awaiting approval"
	ProgressCharged  = "charged"
	ProgressReleased = "released"
)

// Register registers the example's activities and workflow on w.
func Register(w *worker.Worker) {
	worker.Activity(w, ReserveFFQN, func(ctx context.Context, o Order) (string, error) {
		worker.Logger(ctx).Info("reserving stock", "order", o.ID)
		return "res-" + o.ID, nil
	})
	worker.Activity(w, ReleaseFFQN, func(ctx context.Context, reservation string) (worker.Unit, error) {
		worker.Logger(ctx).Warn("releasing stock", "reservation", reservation)
		return worker.Unit{}, nil
	})
	worker.Activity(w, ChargeFFQN, func(ctx context.Context, o Order) (string, error) {
		worker.Logger(ctx).Info("charging", "order", o.ID, "amount", o.Amount)
		return "pay-" + o.ID, nil
	})
	worker.Workflow(w, OrderFFQN, PlaceOrder)
}

// PlaceOrder reserves the stock, publishes its progress, waits for the
// "approval" signal (at most o.ApprovalTimeout), then charges; a rejection
// or a timeout releases the reservation (the compensation).
func PlaceOrder(wf *worker.Context, o Order) (Outcome, error) {
	log := wf.Logger().With("order", o.ID)
	log.Info("order received", "amount", o.Amount)
	res, err := worker.Call[string](wf, ReserveFFQN, o)
	if err != nil {
		return Outcome{}, err
	}
	if err := wf.SetState("progress", ProgressReserved); err != nil {
		return Outcome{}, err
	}
	d, ok, err := worker.WaitSignalTimeout[Decision](wf, "approval", o.ApprovalTimeout)
	if err != nil {
		return Outcome{}, err
	}
	if !ok || !d.Approved {
		status := "rejected"
		if !ok {
			status = "expired"
		}
		log.Warn("order not approved; compensating", "status", status, "by", d.By)
		if _, err := worker.Call[worker.Unit](wf, ReleaseFFQN, res); err != nil {
			return Outcome{}, fmt.Errorf("release %s: %w", res, err)
		}
		if err := wf.SetState("progress", ProgressReleased); err != nil {
			return Outcome{}, err
		}
		return Outcome{OrderID: o.ID, Status: status, By: d.By}, nil
	}
	pay, err := worker.Call[string](wf, ChargeFFQN, o)
	if err != nil {
		return Outcome{}, err
	}
	if err := wf.SetState("progress", ProgressCharged); err != nil {
		return Outcome{}, err
	}
	log.Info("order approved", "by", d.By, "payment", pay)
	return Outcome{OrderID: o.ID, Status: "approved", By: d.By, Payment: pay}, nil
}
