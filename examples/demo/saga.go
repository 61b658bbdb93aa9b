package demo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stela-dev/stela/worker"
)

// Functions of the order saga.
const (
	ReserveFFQN    = "demo:saga/inventory.reserve"
	ReleaseFFQN    = "demo:saga/inventory.release"
	ChargeFFQN     = "demo:saga/payment.charge"
	ShipFFQN       = "demo:saga/shipping.ship"
	PlaceOrderFFQN = "demo:saga/workflow.place-order"
)

// Order is the saga's input.
type Order struct {
	ID     string `json:"id"`
	Item   string `json:"item"`
	Amount int64  `json:"amount"`
	// CoolingOff is how long the order waits (a durable sleep) between the
	// payment and the shipment; the customer may cancel meanwhile.
	CoolingOff time.Duration `json:"cooling_off"`
}

// Receipt is the saga's result.
type Receipt struct {
	OrderID     string `json:"order_id"`
	Reservation string `json:"reservation"`
	Payment     string `json:"payment"`
	Tracking    string `json:"tracking"`
}

// PaymentLimit is the largest amount the demo's payment activity accepts.
const PaymentLimit = 1000

// Reserve holds the item for the order and returns a reservation id.
func Reserve(_ context.Context, o Order) (string, error) {
	return "res-" + o.ID + "-" + o.Item, nil
}

// Release gives a reservation back (the compensation of Reserve).
func Release(_ context.Context, reservation string) (worker.Unit, error) {
	return worker.Unit{}, nil
}

// Charge takes the payment; amounts above PaymentLimit are declined for
// good (a permanent error, not retried).
func Charge(_ context.Context, o Order) (string, error) {
	if o.Amount > PaymentLimit {
		return "", worker.Permanent(fmt.Errorf("payment of %d declined", o.Amount))
	}
	return "pay-" + o.ID, nil
}

// Ship sends the item and returns a tracking number.
func Ship(_ context.Context, o Order) (string, error) { return "track-" + o.ID, nil }

// PlaceOrder reserves the item, charges the payment, waits out the cooling-off
// period and ships. If the payment fails, the reservation is released
// (the compensation) and the order fails with the payment's error.
func PlaceOrder(wf *worker.Context, o Order) (Receipt, error) {
	r := Receipt{OrderID: o.ID}
	var err error
	if r.Reservation, err = worker.Call[string](wf, ReserveFFQN, o); err != nil {
		return r, err
	}
	if r.Payment, err = worker.Call[string](wf, ChargeFFQN, o); err != nil {
		if _, cerr := worker.Call[worker.Unit](wf, ReleaseFFQN, r.Reservation); cerr != nil {
			return r, errors.Join(err, cerr)
		}
		return r, fmt.Errorf("order %s rolled back: %w", o.ID, err)
	}
	if err := wf.Sleep(o.CoolingOff); err != nil {
		return r, err
	}
	if r.Tracking, err = worker.Call[string](wf, ShipFFQN, o); err != nil {
		return r, err
	}
	return r, nil
}

// RegisterSaga registers the saga's activities and workflow.
func RegisterSaga(w *worker.Worker) {
	worker.Activity(w, ReserveFFQN, Reserve)
	worker.Activity(w, ReleaseFFQN, Release)
	worker.Activity(w, ChargeFFQN, Charge)
	worker.Activity(w, ShipFFQN, Ship)
	worker.Workflow(w, PlaceOrderFFQN, PlaceOrder)
}

// PlaceOrderAndWait submits place-order(o) and waits for its receipt.
func PlaceOrderAndWait(ctx context.Context, w *worker.Worker, o Order) (Receipt, error) {
	id, err := w.Submit(ctx, PlaceOrderFFQN, o)
	if err != nil {
		return Receipt{}, err
	}
	return worker.Await[Receipt](ctx, w, id)
}
