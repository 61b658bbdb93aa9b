// Package orders is the sample application's business logic: a workflow
// that prices an order and sends its invoice, and the two activities it
// calls. It knows nothing about Lambda or AWS; cmd/worker serves it from a
// Lambda, the tests run it in memory (workertest).
package orders

import (
	"context"
	"fmt"

	"github.com/stela-dev/stela/worker"
)

// The functions' names (FFQNs: namespace:package/interface.function).
const (
	PriceFFQN    = "shop:orders/billing.price"
	InvoiceFFQN  = "shop:orders/billing.invoice"
	CheckoutFFQN = "shop:orders/workflow.checkout"
)

// Order is what the workflow gets.
type Order struct {
	ID       string `json:"id"`
	Item     string `json:"item"`
	Quantity int64  `json:"quantity"`
}

// Invoice is what it returns.
type Invoice struct {
	OrderID string `json:"order_id"`
	Total   int64  `json:"total"`
	Number  string `json:"number"`
}

// UnitPrice is the price list of the sample.
var UnitPrice = map[string]int64{"book": 12, "pen": 2}

// Price returns the order's total; an unknown item fails for good.
func Price(_ context.Context, o Order) (int64, error) {
	p, ok := UnitPrice[o.Item]
	if !ok {
		return 0, worker.Permanent(fmt.Errorf("no price for %q", o.Item))
	}
	return p * o.Quantity, nil
}

// SendInvoice issues the invoice of a priced order.
func SendInvoice(_ context.Context, inv Invoice) (string, error) {
	return "INV-" + inv.OrderID, nil
}

// Checkout prices the order, then invoices it: each call is a durable step,
// replayed from the execution log after a crash.
func Checkout(wf *worker.Context, o Order) (Invoice, error) {
	total, err := worker.Call[int64](wf, PriceFFQN, o)
	if err != nil {
		return Invoice{}, err
	}
	inv := Invoice{OrderID: o.ID, Total: total}
	if inv.Number, err = worker.Call[string](wf, InvoiceFFQN, inv); err != nil {
		return Invoice{}, err
	}
	return inv, nil
}

// Register registers the workflow and its activities on w.
func Register(w *worker.Worker) {
	worker.Activity(w, PriceFFQN, Price)
	worker.Activity(w, InvoiceFFQN, SendInvoice)
	worker.Workflow(w, CheckoutFFQN, Checkout)
}
